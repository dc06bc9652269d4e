"""Learning-rate-free and schedule-free optimizers training a small float64 model a few steps each:
schedulefree's AdamW/SGD/RAdam (train/eval swaps of the averaged point, foreach ops, closure forms, the
wrapper around a torch optimizer), dadaptation's D-Adapt Adam/SGD/AdaGrad/Adan/Lion and prodigyopt's
Prodigy (their D estimates kept in the param groups), with state dicts reloaded into fresh optimizers."""
import torch
from torch import nn
import dadaptation
import prodigyopt
import schedulefree

from _common import data, emit, fill, state_summary

torch.set_default_dtype(torch.float64)
x, y = data(8, 4), data(8, 2, seed=2)


def make_model():
    return fill(nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 2)))


def loss_of(model):
    return nn.functional.mse_loss(model(x), y)


def train(optimizer, model, steps=5, closure=False):
    losses = []
    for _ in range(steps):
        if closure:
            def closure_step():
                optimizer.zero_grad()
                loss = loss_of(model)
                loss.backward()
                return loss
            losses.append(optimizer.step(closure_step).item())
        else:
            optimizer.zero_grad()
            loss = loss_of(model)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


SCHEDULE_FREE = {
    "AdamWScheduleFree": {"lr": 0.05, "warmup_steps": 2, "weight_decay": 0.01},
    "AdamWScheduleFreeReference": {"lr": 0.05, "warmup_steps": 2, "weight_decay": 0.01},
    "AdamWScheduleFreePaper": {"lr": 0.05, "warmup_steps": 2, "weight_decay": 0.01},
    "SGDScheduleFree": {"lr": 0.1, "warmup_steps": 2, "weight_decay": 0.01},
    "SGDScheduleFreeReference": {"lr": 0.1, "warmup_steps": 2},
    "RAdamScheduleFree": {"lr": 0.05, "weight_decay": 0.01},
}
CLOSURE_FORMS = {"AdamWScheduleFreeClosure": {"lr": 0.05, "warmup_steps": 2},
                 "SGDScheduleFreeClosure": {"lr": 0.1, "warmup_steps": 2},
                 "RAdamScheduleFreeClosure": {"lr": 0.05}}
D_ADAPTED = {
    (dadaptation, "DAdaptAdam"): {"decouple": True, "weight_decay": 0.01},
    (dadaptation, "DAdaptSGD"): {"momentum": 0.9},
    (dadaptation, "DAdaptAdaGrad"): {"momentum": 0.5},
    (dadaptation, "DAdaptAdan"): {"weight_decay": 0.02},
    (dadaptation, "DAdaptLion"): {},
    (prodigyopt, "Prodigy"): {"weight_decay": 0.01, "safeguard_warmup": True, "use_bias_correction": True},
    (prodigyopt, "Prodigy", "sliced"): {"slice_p": 3, "d_coef": 2.0, "growth_rate": 1.5},
}


def train_eval_record(optimizer, model, **kwargs):
    if hasattr(optimizer, "train"):
        optimizer.train()
    losses = train(optimizer, model, **kwargs)
    record = {"losses": losses, "train_params": [p.clone() for p in model.parameters()]}
    if hasattr(optimizer, "eval"):
        optimizer.eval()   # the averaged point x, where the model is evaluated
        record["eval_params"] = list(model.parameters())
        record["eval_loss"] = loss_of(model).item()
    record["state"] = state_summary(optimizer)
    return record


results = {}
for name, settings in {**SCHEDULE_FREE, **CLOSURE_FORMS}.items():
    model = make_model()
    optimizer = getattr(schedulefree, name)(model.parameters(), **settings)
    results[name] = train_eval_record(optimizer, model, closure=name in CLOSURE_FORMS)
    reloaded = getattr(schedulefree, name)(make_model().parameters(), **settings)
    reloaded.load_state_dict(optimizer.state_dict())
    results[name]["reloaded"] = state_summary(reloaded)

# (the wrapper keeps its z in the base optimizer's state before the base's first step: torch's Adam and
# RMSprop then find a non-empty state without their buffers and fail, so SGD is the base here)
for base, settings in ((torch.optim.SGD, {"lr": 0.1}), (torch.optim.SGD, {"lr": 0.05, "momentum": 0.5,
                                                                           "nesterov": True})):
    for wrapper in (schedulefree.ScheduleFreeWrapper, schedulefree.ScheduleFreeWrapperReference):
        model = make_model()
        optimizer = wrapper(base(model.parameters(), **settings), momentum=0.9, weight_decay_at_y=0.01)
        results[f"{wrapper.__name__}({base.__name__}, {settings})"] = train_eval_record(optimizer, model)

for key, settings in D_ADAPTED.items():
    module, name = key[:2]
    model = make_model()
    optimizer = getattr(module, name)(model.parameters(), **settings)
    record = train_eval_record(optimizer, model, steps=6)
    record["d"] = [group["d"] for group in optimizer.param_groups]
    copy = make_model()
    copy.load_state_dict(model.state_dict())
    reloaded = getattr(module, name)(copy.parameters(), **settings)
    reloaded.load_state_dict(optimizer.state_dict())
    record["continued"] = train(reloaded, copy, steps=2)
    results["/".join(key[1:])] = record

# two parameter groups, one with its own learning rate, in a schedule-free and a D-adapted optimizer
model = make_model()
groups = [{"params": model[0].parameters()}, {"params": model[2].parameters(), "lr": 0.02}]
optimizer = schedulefree.AdamWScheduleFree(groups, lr=0.05, warmup_steps=1)
results["groups_schedule_free"] = train_eval_record(optimizer, model)
model = make_model()
# (a frozen group: Prodigy accepts no other per-group learning rate)
groups = [{"params": model[0].parameters()}, {"params": model[2].parameters(), "lr": 0.0}]
optimizer = prodigyopt.Prodigy(groups, lr=1.0)
results["groups_prodigy"] = train_eval_record(optimizer, model)
emit(results)
