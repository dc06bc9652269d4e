"""Opacus per-sample gradients over more layer kinds (convolutions with stride/dilation/groups, norms,
embeddings, DP attention and recurrent layers), ghost clipping, and a
PrivacyEngine training loop with Poisson sampling, seeded noise and the privacy accountant."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from opacus import GradSampleModule, PrivacyEngine
from opacus.grad_sample import GradSampleModuleFastGradientClipping
from opacus.layers import DPGRU, DPLSTM, DPMultiheadAttention
from opacus.optimizers import DPOptimizerFastGradientClipping
from opacus.utils.fast_gradient_clipping_utils import DPLossFastGradientClipping

from _common import data, emit, fill


def per_sample(model, inputs, loss_of_output, seed=0, **options):
    gsm = GradSampleModule(fill(model.double(), seed=seed), **options)
    loss_of_output(gsm(*inputs)).backward()
    return {name: p.grad_sample for name, p in gsm.named_parameters() if p.requires_grad}


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = DPMultiheadAttention(6, 2, bias=True, add_bias_kv=True)
        self.out = nn.Linear(6, 2)

    def forward(self, x):
        y, weights = self.attn(x, x, x)
        return self.out(y).sum(0), weights


class Recurrent(nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(3, 4, num_layers=2, batch_first=True, bidirectional=cell is DPLSTM)
        self.out = nn.Linear(8 if cell is DPLSTM else 4, 2)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.out(y[:, -1])


def square_sum(out):
    return (out ** 2).sum()


results = {
    "conv1d": per_sample(nn.Sequential(nn.Conv1d(2, 4, 3, stride=2, dilation=1, padding=1), nn.Tanh(), nn.Flatten(),
                                       nn.Linear(16, 2)), [data(3, 2, 8)], square_sum),
    "conv2d_groups": per_sample(nn.Sequential(nn.Conv2d(4, 4, 3, padding=2, dilation=2, groups=2, stride=2),
                                              nn.ReLU(), nn.Conv2d(4, 2, 1, bias=False)),
                                [data(3, 4, 5, 5)], square_sum, seed=1),
    "conv3d": per_sample(nn.Sequential(nn.Conv3d(1, 2, 2), nn.Flatten(), nn.Linear(2 * 27, 1)),
                         [data(2, 1, 4, 4, 4)], square_sum, seed=2),
    "norms": per_sample(nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.Unflatten(1, (4, 2)), nn.GroupNorm(2, 4),
                                      nn.InstanceNorm1d(4, affine=True), nn.Flatten(), nn.RMSNorm(8), nn.Linear(8, 2)),
                        [data(5, 6)], square_sum, seed=3),
    "embedding": per_sample(nn.Sequential(nn.Embedding(7, 3), nn.Flatten(), nn.Linear(12, 2)),
                            [torch.tensor([[1, 2, 3, 1], [0, 6, 6, 2], [5, 4, 1, 1]])], square_sum, seed=4),
    "dp_attention": per_sample(Attention(), [data(4, 3, 6)],
                               lambda out: (out[0] ** 2).sum() + out[1].sum(), seed=7, batch_first=False),
    "dp_lstm": per_sample(Recurrent(DPLSTM), [data(3, 5, 3)], square_sum, seed=8),
    "dp_gru": per_sample(Recurrent(DPGRU), [data(3, 4, 3)], square_sum, seed=9),
}

# ghost clipping: per-sample norms without per-sample gradients, then a clipped step
ghost = GradSampleModuleFastGradientClipping(fill(nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 2)).double(),
                                                  seed=10), max_grad_norm=0.4, use_ghost_clipping=True)
ghost_optimizer = DPOptimizerFastGradientClipping(torch.optim.SGD(ghost.parameters(), lr=0.3), noise_multiplier=0.0,
                                                  max_grad_norm=0.4, expected_batch_size=6)
criterion = DPLossFastGradientClipping(ghost, ghost_optimizer, nn.CrossEntropyLoss(reduction="mean"))
ghost_optimizer.zero_grad()
criterion(ghost(data(6, 5, seed=11)), torch.tensor([0, 1, 1, 0, 1, 0])).backward()
ghost_optimizer.step()
results["ghost_step"] = {name: p for name, p in ghost.named_parameters()}

# PrivacyEngine: Poisson sampling and Gaussian noise from a seeded generator, RDP accountant
model = fill(nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(2 * 16, 3)).double(), seed=13)
dataset = TensorDataset(data(16, 1, 6, 6, seed=14), torch.tensor([0, 1, 2, 1] * 4))
engine = PrivacyEngine(accountant="rdp")
generator = torch.Generator().manual_seed(15)
model, optimizer, loader = engine.make_private(module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.2),
                                               data_loader=DataLoader(dataset, batch_size=4), noise_multiplier=1.1,
                                               max_grad_norm=0.8, noise_generator=generator)
losses, batch_sizes = [], []
torch.manual_seed(16)
for epoch in range(2):
    for inputs, labels in loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        batch_sizes.append(len(labels))
results["engine"] = {"losses": losses, "batch_sizes": batch_sizes, "epsilon": engine.get_epsilon(1e-5),
                     "params": {name: p for name, p in model.named_parameters()},
                     "noise_multiplier": optimizer.noise_multiplier, "steps": len(engine.accountant)}
emit(results)
