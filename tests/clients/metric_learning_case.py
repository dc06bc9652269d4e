"""pytorch-metric-learning: pair and triplet losses (contrastive, triplet margin, multi-similarity,
NT-Xent, SupCon, circle, margin), proxy and classification losses with their own parameters (ArcFace,
CosFace, ProxyAnchor, SoftTriple), miners (batch-hard, multi-similarity, triplet margin, pair margin),
distances and reducers, a cross-batch memory, and a training step through embedder and loss."""
import warnings

import torch
from pytorch_metric_learning import distances, losses, miners, reducers
from torch import nn

from _common import data, emit, fill

warnings.simplefilter("ignore")
torch.set_default_dtype(torch.float64)
embeddings = data(16, 5)
labels = torch.tensor([i % 4 for i in range(16)])
results = {}

pair_losses = {
    "contrastive": losses.ContrastiveLoss(pos_margin=0.1, neg_margin=0.8),
    "triplet": losses.TripletMarginLoss(margin=0.2),
    "triplet_cosine": losses.TripletMarginLoss(margin=0.1, distance=distances.CosineSimilarity(),
                                               reducer=reducers.ThresholdReducer(low=0.0)),
    "multi_similarity": losses.MultiSimilarityLoss(alpha=2, beta=50, base=0.5),
    "ntxent": losses.NTXentLoss(temperature=0.1),
    "supcon": losses.SupConLoss(temperature=0.2),
    "circle": losses.CircleLoss(m=0.4, gamma=80),
    "margin": losses.MarginLoss(margin=0.2, nu=0.1, beta=1.2),
    "lifted": losses.GeneralizedLiftedStructureLoss(neg_margin=1, pos_margin=0),
    "snr": losses.SignalToNoiseRatioContrastiveLoss(pos_margin=0, neg_margin=1),
}
for name, loss_fn in pair_losses.items():
    x = embeddings.clone().requires_grad_()
    loss = loss_fn(x, labels)
    loss.backward()
    results[name] = [loss.item(), x.grad]

mine_with = {
    "batch_hard": miners.BatchHardMiner(),
    "multi_similarity": miners.MultiSimilarityMiner(epsilon=0.1),
    "triplet_semihard": miners.TripletMarginMiner(margin=0.3, type_of_triplets="semihard"),
    "pair_margin": miners.PairMarginMiner(pos_margin=0.2, neg_margin=0.8),
}
triplet = losses.TripletMarginLoss(margin=0.2)
for name, miner in mine_with.items():
    mined = miner(embeddings, labels)
    results[f"miner_{name}"] = [[t.tolist() for t in mined], miner.num_pos_pairs if hasattr(miner, "num_pos_pairs")
                                else None]
    if len(mined) == 3:
        results[f"mined_loss_{name}"] = triplet(embeddings, labels, mined).item()

for name, make in [("arcface", lambda: losses.ArcFaceLoss(num_classes=4, embedding_size=5, margin=28.6, scale=64)),
                   ("cosface", lambda: losses.CosFaceLoss(num_classes=4, embedding_size=5)),
                   ("proxy_anchor", lambda: losses.ProxyAnchorLoss(num_classes=4, embedding_size=5)),
                   ("soft_triple", lambda: losses.SoftTripleLoss(num_classes=4, embedding_size=5, centers_per_class=2)),
                   ("normalized_softmax", lambda: losses.NormalizedSoftmaxLoss(num_classes=4, embedding_size=5))]:
    torch.manual_seed(0)
    loss_fn = make()
    x = embeddings.clone().requires_grad_()
    loss = loss_fn(x, labels)
    loss.backward()
    results[name] = [loss.item(), x.grad, [p.grad for p in loss_fn.parameters()]]

for name, distance in [("lp", distances.LpDistance(normalize_embeddings=False, p=2, power=2)),
                       ("cosine", distances.CosineSimilarity()), ("dot", distances.DotProductSimilarity()),
                       ("snr", distances.SNRDistance())]:
    results[f"distance_{name}"] = distance(embeddings[:4], embeddings[4:9])

# a training step: embedder, a miner, a loss and a cross-batch memory
embedder = fill(nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 5)), scale=0.4)
optimizer = torch.optim.SGD(embedder.parameters(), lr=0.1)
memory = losses.CrossBatchMemory(losses.ContrastiveLoss(), embedding_size=5, memory_size=32)
miner = miners.MultiSimilarityMiner()
inputs = data(16, 6, seed=4)
history = []
for step in range(3):
    optimizer.zero_grad()
    out = embedder(inputs + 0.1 * step)
    loss = losses.TripletMarginLoss()(out, labels, miner(out, labels)) + memory(out, labels)
    loss.backward()
    optimizer.step()
    history.append(loss.item())
results["training"] = [history, [p.detach() for p in embedder.parameters()], memory.queue_idx]
emit(results)
