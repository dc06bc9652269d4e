"""torch-lr-finder: learning-rate range tests (exponential and linear schedules, a validation loader,
gradient accumulation, states cached in memory and on disk, a torch.amp GradScaler run), the suggested
learning rate from its plot, and the model and optimizer restored by reset()."""
import tempfile

import matplotlib

matplotlib.use("Agg")

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch_lr_finder import LRFinder, TrainDataLoaderIter

from _common import data, emit, fill

torch.set_default_dtype(torch.float64)


def model_and_optimizer(seed, kind="adam"):
    model = fill(nn.Sequential(nn.Linear(5, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.0), nn.Linear(8, 3)),
                 seed=seed)
    if kind == "adam":
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-5, weight_decay=1e-2)
    else:
        optimizer = torch.optim.SGD([{"params": model[0].parameters()}, {"params": model[4].parameters(), "lr": 1e-3}],
                                    lr=1e-4, momentum=0.9)
    return model, optimizer


def loader(count, seed, batch=8, shuffle=False):
    labels = torch.tensor(np.random.default_rng(seed).integers(0, 3, count))
    generator = torch.Generator().manual_seed(seed)
    return DataLoader(TensorDataset(data(count, 5, seed=seed), labels), batch_size=batch, shuffle=shuffle,
                      generator=generator)


class DictBatches(TrainDataLoaderIter):
    """A loader of dict batches, unpacked the way the README shows."""

    def inputs_labels_from_batch(self, batch_data):
        return batch_data["x"], batch_data["y"]


def finder_state(finder, model, optimizer):
    return {"lr": finder.history["lr"], "loss": finder.history["loss"], "best_loss": finder.best_loss,
            "weights": [p.tolist() for p in model.parameters()],
            "optimizer_lrs": [group["lr"] for group in optimizer.param_groups],
            "optimizer_state": len(optimizer.state)}


results = {}
model, optimizer = model_and_optimizer(0)
before = [p.tolist() for p in model.parameters()]
finder = LRFinder(model, optimizer, nn.CrossEntropyLoss())
finder.range_test(loader(64, 1, shuffle=True), end_lr=100, num_iter=30)
_, suggested = finder.plot(skip_start=2, skip_end=2)
results["exp"] = finder_state(finder, model, optimizer)
results["exp_suggested"] = suggested
finder.reset()
results["reset"] = {"restored": [p.tolist() for p in model.parameters()] == before,
                    "optimizer_lrs": [group["lr"] for group in optimizer.param_groups],
                    "optimizer_state": len(optimizer.state)}

model, optimizer = model_and_optimizer(2, kind="sgd")
with tempfile.TemporaryDirectory() as cache:
    finder = LRFinder(model, optimizer, nn.CrossEntropyLoss(), memory_cache=False, cache_dir=cache)
    finder.range_test(loader(48, 3), val_loader=loader(16, 4), start_lr=[1e-4, 1e-3], end_lr=2.0,
                      num_iter=12, step_mode="linear", smooth_f=0.1, diverge_th=3, accumulation_steps=2)
    results["linear_val"] = finder_state(finder, model, optimizer)
    finder.reset()
    results["linear_reset"] = [p.tolist() for p in model.parameters()]
_, suggested = finder.plot(log_lr=False, skip_start=0, skip_end=0)
results["linear_suggested"] = suggested


class Pairs(torch.utils.data.Dataset):
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {"x": self.x[i], "y": self.y[i]}


model, optimizer = model_and_optimizer(5)
pairs = Pairs(data(40, 5, seed=6), torch.tensor(np.random.default_rng(7).integers(0, 3, 40)))
finder = LRFinder(model, optimizer, nn.CrossEntropyLoss(), amp_backend="torch",
                  amp_config={"device_type": "cpu", "enabled": False},
                  grad_scaler=torch.amp.GradScaler("cpu", init_scale=256.0))
finder.range_test(DictBatches(DataLoader(pairs, batch_size=10)), end_lr=10, num_iter=9, diverge_th=100)
results["dict_amp"] = finder_state(finder, model, optimizer)
results["scale"] = finder.grad_scaler.get_scale()

# autocast to bfloat16 with a float32 model: the layers' gradients reach the float32 parameters through
# bfloat16 batch sums (torch sums those in float32 and rounds once); the float32 cross-entropy under
# autocast differs from torch's in its last bits (exp and sums in another order), so losses are rounded
model = fill(nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3)).float(), seed=1)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
labels = torch.tensor(np.random.default_rng(2).integers(0, 3, 40))
finder = LRFinder(model, optimizer, nn.CrossEntropyLoss(), amp_backend="torch",
                  amp_config={"device_type": "cpu", "dtype": torch.bfloat16},
                  grad_scaler=torch.amp.GradScaler("cpu", init_scale=2.0 ** 10))
finder.range_test(DataLoader(TensorDataset(data(40, 5, seed=3).float(), labels), batch_size=8), end_lr=10,
                  num_iter=6, diverge_th=100)
results["autocast_bfloat16"] = {"loss": [float(f"{loss:.5g}") for loss in finder.history["loss"]],
                                "lr": finder.history["lr"], "weights": [p.tolist() for p in model.parameters()],
                                "scale": finder.grad_scaler.get_scale()}
emit(results)
