"""End-to-end training against torch: an MLP, a CNN (with BatchNorm), an LSTM and a Transformer
encoder, trained for 50 steps with every optimizer from one shared set of NumPy-made weights on
NumPy-made data fed by a DataLoader, must track torch's losses, learning rates, evaluation losses,
optimizer state and final parameters and buffers.

Each case runs twice: in float64, where the two frameworks agree to near machine precision over all
50 steps, and in float32 with float32 tolerances (rounding differences grow slowly over training).
Some optimizer configurations also drive an lr scheduler, clip the gradient norm, or zero the
gradients with ``set_to_none=False``.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

from difftest import assert_same, run_both

import torch

# the models are tiny: torch's thread pool only adds contention on a busy machine
torch.set_num_threads(1)

STEPS = 50
N_SAMPLES, BATCH = 64, 16  # four batches an epoch; 50 steps run 12 full epochs and half of one
EVAL_EVERY = 10

MODELS = ["mlp", "cnn", "lstm", "transformer"]

# name -> optimizer class, its arguments, and what else the training loop does with it. The learning
# rates keep training out of the chaotic regime where centered RMSprop and Adagrad (whose first steps
# are about lr * sign(grad)) turn float32 rounding differences into visibly different trajectories.
OPTIMIZERS = {
    "sgd": dict(cls="SGD", kwargs=dict(lr=0.1), clip=1.0, set_to_none=False,
                scheduler=("StepLR", dict(step_size=10, gamma=0.5))),
    "sgd_nesterov": dict(cls="SGD", kwargs=dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3),
                         scheduler=("CosineAnnealingLR", dict(T_max=STEPS, eta_min=1e-3))),
    "adam": dict(cls="Adam", kwargs=dict(lr=1e-2),
                 scheduler=("OneCycleLR", dict(max_lr=2e-2, total_steps=STEPS))),
    "adamw_amsgrad": dict(cls="AdamW", kwargs=dict(lr=1e-2, weight_decay=1e-2, amsgrad=True)),
    "rmsprop": dict(cls="RMSprop", kwargs=dict(lr=5e-4, alpha=0.9, momentum=0.9, centered=True),
                    scheduler=("ReduceLROnPlateau", dict(factor=0.5, patience=1, threshold=0.05))),
    "adagrad": dict(cls="Adagrad", kwargs=dict(lr=2e-2), set_to_none=False),
}

# (rtol, atol) for: losses, lrs, betas, gradient norms and evaluation losses; optimizer state;
# final parameters and buffers. Optimizer states such as RMSprop's momentum buffer hold gradients
# divided by their running spread, values of order 1 whose smallest entries carry that scale's
# rounding, hence the larger absolute tolerance.
TOLERANCES = {
    "float64": dict(loss=(1e-9, 1e-12), state=(1e-8, 1e-10), params=(1e-8, 1e-11)),
    "float32": dict(loss=(1e-4, 1e-6), state=(1e-3, 1e-3), params=(1e-3, 1e-5)),
}


# --------------------------------------------------------------------------------------------------
# models, weights and data


def build_model(T, name):
    """The model ``name`` in framework ``T``, its loss function, and whether targets are class labels."""
    nn = T.nn
    if name == "mlp":
        model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Dropout(p=0.0), nn.Linear(32, 5))
        return model, nn.CrossEntropyLoss(), True
    if name == "cnn":  # no conv biases: BatchNorm cancels them, so their gradients are rounding noise
        model = nn.Sequential(
            nn.Conv2d(1, 4, kernel_size=3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(4, 6, kernel_size=3, bias=False), nn.BatchNorm2d(6), nn.Tanh(),
            nn.Flatten(), nn.Linear(6 * 2 * 2, 5))
        return model, nn.CrossEntropyLoss(), True
    if name == "lstm":
        class LSTMRegressor(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTM(6, 8, batch_first=True)
                self.head = nn.Linear(8, 3)

            def forward(self, x):
                out, (h, c) = self.lstm(x)
                return self.head(out[:, -1] + h[-1] * c[-1].tanh())

        return LSTMRegressor(), nn.MSELoss(), False
    if name == "transformer":
        class TinyTransformer(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(10, 16)
                self.pos = nn.Parameter(T.zeros(6, 16))
                layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
                self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
                self.head = nn.Linear(16, 3)
                # the key projection's bias shifts every score of a query by the same amount, which the
                # softmax ignores: its gradient is rounding noise that Adagrad and RMSprop would blow
                # up to full-size steps, so a hook zeroes it
                keep = T.ones(3 * 16)
                keep[16:32] = 0.0
                for enc_layer in self.encoder.layers:
                    enc_layer.self_attn.in_proj_bias.register_hook(lambda g: g * keep.to(g.dtype))

            def forward(self, tokens):
                h = self.encoder(self.embed(tokens) + self.pos)
                return self.head(h.mean(dim=1))

        return TinyTransformer(), nn.CrossEntropyLoss(), True
    raise ValueError(name)


@functools.lru_cache(maxsize=None)
def shared_weights(name):
    """One NumPy-made set of weights, from the shapes of torch's state dict of the model."""
    rng = np.random.default_rng(sum(map(ord, name)))
    model, _, _ = build_model(torch, name)
    weights = {}
    for key, value in model.state_dict().items():
        shape = tuple(value.shape)
        if key.endswith("num_batches_tracked"):
            weights[key] = np.array(0, dtype=np.int64)
        elif key.endswith("running_var"):
            weights[key] = rng.uniform(0.5, 1.5, shape)
        elif key.endswith("running_mean"):
            weights[key] = rng.uniform(-0.2, 0.2, shape)
        elif len(shape) == 1 and key.endswith("weight"):  # BatchNorm / LayerNorm scales
            weights[key] = rng.uniform(0.8, 1.2, shape)
        elif len(shape) == 1:  # biases
            weights[key] = rng.uniform(-0.1, 0.1, shape)
        else:
            fan_in = int(np.prod(shape[1:]))
            weights[key] = rng.uniform(-1.0, 1.0, shape) / np.sqrt(fan_in)
    return weights


@functools.lru_cache(maxsize=None)
def shared_data(name):
    """(inputs, targets) as NumPy arrays: N_SAMPLES samples for the model ``name``."""
    rng = np.random.default_rng(1000 + sum(map(ord, name)))
    if name == "mlp":
        return rng.standard_normal((N_SAMPLES, 20)), rng.integers(0, 5, N_SAMPLES)
    if name == "cnn":
        return rng.standard_normal((N_SAMPLES, 1, 8, 8)), rng.integers(0, 5, N_SAMPLES)
    if name == "lstm":
        return rng.standard_normal((N_SAMPLES, 5, 6)), rng.standard_normal((N_SAMPLES, 3))
    if name == "transformer":
        return rng.integers(0, 10, (N_SAMPLES, 6)), rng.integers(0, 3, N_SAMPLES)
    raise ValueError(name)


# --------------------------------------------------------------------------------------------------
# the training loop


def run_training(T, model_name, opt_name, dtype):
    """Train ``model_name`` with ``opt_name`` for STEPS steps in framework ``T``; return the record."""
    config = OPTIMIZERS[opt_name]
    T_dtype = getattr(T, dtype)
    model, loss_fn, classes = build_model(T, model_name)
    model.to(T_dtype)
    model.load_state_dict({k: T.tensor(v) for k, v in shared_weights(model_name).items()})

    inputs, targets = shared_data(model_name)
    x_all = T.tensor(inputs) if inputs.dtype.kind == "i" else T.tensor(inputs, dtype=T_dtype)
    y_all = T.tensor(targets) if classes else T.tensor(targets, dtype=T_dtype)
    loader = T.utils.data.DataLoader(T.utils.data.TensorDataset(x_all, y_all), batch_size=BATCH, shuffle=False)

    opt = getattr(T.optim, config["cls"])(model.parameters(), **config["kwargs"])
    scheduler = None
    if "scheduler" in config:
        sched_name, sched_kwargs = config["scheduler"]
        scheduler = getattr(T.optim.lr_scheduler, sched_name)(opt, **sched_kwargs)
    plateau = type(scheduler).__name__ == "ReduceLROnPlateau"
    set_to_none = config.get("set_to_none", True)

    record = {"losses": [], "lrs": [], "betas": [], "grad_norms": [], "eval_losses": [], "modes": [],
              "zeroed_grads": None}
    model.train()
    step = 0
    while step < STEPS:
        epoch_losses = []
        for xb, yb in loader:
            opt.zero_grad(set_to_none=set_to_none)
            if step == 1:  # what zero_grad left behind after a real step
                record["zeroed_grads"] = [None if p.grad is None else p.grad.clone() for p in model.parameters()]
            loss = loss_fn(model(xb), yb)
            loss.backward()
            if config.get("clip"):
                record["grad_norms"].append(T.nn.utils.clip_grad_norm_(model.parameters(), config["clip"]))
            opt.step()
            if scheduler is not None and not plateau:
                scheduler.step()
            record["losses"].append(loss.item())
            record["lrs"].append(opt.param_groups[0]["lr"])
            if "betas" in opt.param_groups[0]:
                record["betas"].append(tuple(opt.param_groups[0]["betas"]))
            epoch_losses.append(loss.item())
            step += 1
            if step % EVAL_EVERY == 0:  # evaluate the whole data set, then back to training
                model.eval()
                with T.no_grad():
                    record["eval_losses"].append(loss_fn(model(x_all), y_all).item())
                record["modes"].append([m.training for m in model.modules()])
                model.train()
                record["modes"].append([m.training for m in model.modules()])
            if step == STEPS:
                break
        if plateau:
            scheduler.step(sum(epoch_losses) / len(epoch_losses))

    record["opt_state"] = {i: dict(s) for i, s in opt.state_dict()["state"].items()}  # "step" included
    record["final"] = dict(model.state_dict())
    return record


# --------------------------------------------------------------------------------------------------
# the tests


def check(model_name, opt_name, dtype):
    got, want = run_both(run_training, model_name, opt_name, dtype)
    tol = TOLERANCES[dtype]
    for key in ("losses", "lrs", "betas", "grad_norms", "eval_losses"):
        assert_same(got[key], want[key], *tol["loss"], path=key)
    for key in ("modes", "zeroed_grads"):
        assert_same(got[key], want[key], path=key)
    assert_same(got["opt_state"], want["opt_state"], *tol["state"], path="opt_state")
    assert_same(got["final"], want["final"], *tol["params"], path="final")


@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
@pytest.mark.parametrize("model_name", MODELS)
def test_training_float64(model_name, opt_name):
    check(model_name, opt_name, "float64")


@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
@pytest.mark.parametrize("model_name", MODELS)
def test_training_float32(model_name, opt_name):
    check(model_name, opt_name, "float32")
