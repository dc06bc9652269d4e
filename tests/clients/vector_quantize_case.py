"""vector-quantize-pytorch's quantizers on float64 features: VectorQuantize with EMA codebook updates
over training steps (Euclidean and cosine codebooks, k-means initialisation, dead-code expiry, rotation
trick, heads, masks, image feature maps), ResidualVQ, FSQ, LFQ and SimVQ:
quantized values, codes, losses, input gradients and the codebooks after the steps."""
import torch
from vector_quantize_pytorch import FSQ, LFQ, ResidualVQ, SimVQ, VectorQuantize

from _common import data, emit

# the codebooks compute in float32 whatever the input's dtype: values agree bit for bit except through a
# float32 softmax (the Gumbel straight-through estimator, LFQ's entropy loss), where torch's vectorized
# exp is not correctly rounded (hookgrad's is); those are left out
torch.set_default_dtype(torch.float64)
x = data(2, 6, 4)


def steps(quantizer, inputs, n=3, **call):
    """A few training-mode calls (EMA updates happen in forward); each one's outputs and input gradient."""
    quantizer.train()
    found = []
    for i in range(n):
        point = (inputs * (1 + 0.1 * i)).detach().requires_grad_()
        out = quantizer(point, **call)
        quantized, codes, loss = out[0], out[1], out[2] if len(out) > 2 else None
        total = quantized.pow(2).sum()
        if loss is not None:
            total = total + loss.sum()
        total.backward()
        found.append({"quantized": quantized, "codes": codes, "loss": loss, "grad": point.grad})
    return found


results = {}
CONFIGS = {
    "euclidean": dict(dim=4, codebook_size=8, decay=0.8, commitment_weight=0.5),
    "cosine": dict(dim=4, codebook_size=8, use_cosine_sim=True, decay=0.9),
    "kmeans": dict(dim=4, codebook_size=6, kmeans_init=True, kmeans_iters=4, threshold_ema_dead_code=1),
    "rotation": dict(dim=4, codebook_size=8, rotation_trick=True),
    "heads": dict(dim=4, codebook_size=8, heads=2, separate_codebook_per_head=True, codebook_dim=3),
    "orthogonal": dict(dim=4, codebook_size=8, orthogonal_reg_weight=0.1, learnable_codebook=True,
                       ema_update=False),
}
for name, config in CONFIGS.items():
    torch.manual_seed(0)
    vq = VectorQuantize(**config)
    results[name] = {"steps": steps(vq, x), "codebook": vq.codebook}

torch.manual_seed(0)
vq = VectorQuantize(dim=4, codebook_size=8)
mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
results["masked"] = steps(vq, x, n=2, mask=mask)
torch.manual_seed(0)
vq = VectorQuantize(dim=3, codebook_size=5, accept_image_fmap=True)
results["image"] = steps(vq, data(2, 3, 2, 2, seed=4), n=2)

torch.manual_seed(0)
residual = ResidualVQ(dim=4, num_quantizers=3, codebook_size=8, decay=0.8)
results["residual"] = {"steps": steps(residual, x), "codes": residual.codebooks}
torch.manual_seed(0)
results["fsq"] = steps(FSQ(levels=[3, 5, 4], dim=4), x, n=1)
torch.manual_seed(0)
results["lfq"] = steps(LFQ(dim=4, codebook_size=16, entropy_loss_weight=0.0), x, n=2)
torch.manual_seed(0)
results["sim_vq"] = steps(SimVQ(dim=4, codebook_size=8), x, n=2)
emit(results)
