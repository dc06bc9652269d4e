"""pytorch-warmup: linear, exponential, untuned and RAdam warmup schedules dampening the learning rate
of every parameter group, chained with torch.optim.lr_scheduler schedules (cosine annealing, step,
lambda) through warmup.dampening(); state dicts saved and restored mid-run."""
import pytorch_warmup as warmup
import torch
from torch import nn

from _common import data, emit, fill

torch.set_default_dtype(torch.float64)
x, y = data(16, 4), data(16, 2, seed=2)
results = {}


def run(name, make_warmup, make_scheduler, steps=12):
    model = fill(nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2)), scale=0.4)
    optimizer = torch.optim.AdamW([{"params": model[0].parameters()},
                                   {"params": model[2].parameters(), "lr": 0.02}], lr=0.01, betas=(0.9, 0.99))
    scheduler = make_scheduler(optimizer)
    warmer = make_warmup(optimizer)
    lrs, losses, saved = [], [], None
    for step in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        with warmer.dampening():
            if scheduler is not None:
                scheduler.step()
        lrs.append([group["lr"] for group in optimizer.param_groups])
        losses.append(loss.item())
        if step == 5:
            saved = warmer.state_dict()
    restored = make_warmup(optimizer)
    restored.load_state_dict(saved)
    results[name] = {"lrs": lrs, "losses": losses, "state": {k: v for k, v in sorted(saved.items())},
                     "restored_step": restored.last_step, "params": [p.detach() for p in model.parameters()]}


cosine = lambda opt: torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=12)  # noqa: E731
run("linear_cosine", lambda opt: warmup.LinearWarmup(opt, warmup_period=5), cosine)
run("exponential_step", lambda opt: warmup.ExponentialWarmup(opt, warmup_period=4),
    lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5))
run("untuned_linear", lambda opt: warmup.UntunedLinearWarmup(opt), cosine)
run("untuned_exponential", lambda opt: warmup.UntunedExponentialWarmup(opt),
    lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0 / (1 + step)))
run("radam", lambda opt: warmup.RAdamWarmup(opt), lambda opt: None)
run("per_group", lambda opt: warmup.LinearWarmup(opt, warmup_period=[3, 6]), cosine)
emit(results)
