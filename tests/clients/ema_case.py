"""Weight averaging libraries on a float64 model trained a few SGD steps: torch-ema's
ExponentialMovingAverage (update, store/copy_to/restore, average_parameters, state dicts) and
ema-pytorch's EMA (warm-up schedule, update_every, buffers, an optimizer step post-hook, forward with
the averaged model, state dicts), KarrasEMA and PostHocEMA (snapshots saved and synthesised)."""
import os
import tempfile

import torch
from torch import nn
from torch_ema import ExponentialMovingAverage
from ema_pytorch import EMA, KarrasEMA, PostHocEMA

from _common import data, emit, fill

torch.set_default_dtype(torch.float64)  # ema-pytorch keeps its step counters as default-dtype tensors
x, y = data(6, 4), data(6, 2, seed=2)


def make_model():
    # (no bias before the batch norm: its gradient is rounding noise, which Adam's first step scales to lr)
    return fill(nn.Sequential(nn.Linear(4, 5, bias=False), nn.BatchNorm1d(5), nn.Tanh(), nn.Linear(5, 2)))


def train_step(model, optimizer):
    optimizer.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()


results = {}

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
ema = ExponentialMovingAverage(model.parameters(), decay=0.9)
for _ in range(5):
    train_step(model, optimizer)
    ema.update()
with ema.average_parameters():
    results["torch_ema_averaged_output"] = model.eval()(x)
model.train()
results["torch_ema_live"] = list(model.parameters())
ema.store()
ema.copy_to()
results["torch_ema_copied"] = list(model.parameters())
ema.restore()
results["torch_ema_restored"] = list(model.parameters())
# (its state_dict holds references; store()'s clones of the parameters are not leaves, which deepcopy refuses)
state = dict(ema.state_dict(), collected_params=None)
results["torch_ema_state"] = {"decay": state["decay"], "num_updates": state["num_updates"],
                              "shadow": state["shadow_params"]}
reloaded = ExponentialMovingAverage(make_model().parameters(), decay=0.5, use_num_updates=True)
reloaded.load_state_dict(state)
results["torch_ema_reloaded"] = reloaded.shadow_params

model = make_model()
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
ema = EMA(model, beta=0.95, update_after_step=2, update_every=2, power=3 / 4, inv_gamma=1.0)
decays = []
for _ in range(8):
    train_step(model, optimizer)
    ema.update()
    decays.append(ema.get_current_decay())
results["ema_pytorch"] = {"decays": decays, "step": ema.step, "ema_params": list(ema.ema_model.parameters()),
                          "ema_buffers": list(ema.ema_model.buffers()), "output": ema(x),
                          "state_keys": sorted(ema.state_dict())}

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
hooked = EMA(model, beta=0.9, update_after_step=0, update_every=1, use_foreach=True)  # torch._foreach_lerp_
hooked.add_to_optimizer_post_step_hook(optimizer)
for _ in range(4):
    train_step(model, optimizer)
results["ema_post_step_hook"] = list(hooked.ema_model.parameters())

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
karras = KarrasEMA(model, sigma_rel=0.1, update_every=1)
for _ in range(5):
    train_step(model, optimizer)
    karras.update()
results["karras"] = {"beta": karras.beta, "params": list(karras.ema_model.parameters())}

with tempfile.TemporaryDirectory() as folder:
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    post_hoc = PostHocEMA(model, sigma_rels=(0.05, 0.28), update_every=1, checkpoint_every_num_steps=3,
                          checkpoint_folder=os.path.join(folder, "snapshots"))
    for _ in range(9):
        train_step(model, optimizer)
        post_hoc.update()
    synthesized = post_hoc.synthesize_ema_model(sigma_rel=0.15)
    results["post_hoc"] = {"snapshots": sorted(os.listdir(os.path.join(folder, "snapshots"))),
                           "params": list(synthesized.ema_model.parameters()), "output": synthesized(x)}
emit(results)
