"""pytorch-influence-functions: influence of each training point on test points of a float64 classifier,
from s_test (LiSSA inverse-Hessian-vector recursions: Hessian-vector products by a double backward with
create_graph) and per-example gradients; s_test vectors saved with torch.save and read back; the implicit
log_softmax dimension warning it triggers."""
import tempfile
import warnings
from pathlib import Path

import numpy as np
import torch
from pytorch_influence_functions import calc_influence_function as calc
from pytorch_influence_functions import influence_function as influence
from torch import nn
from torch.utils.data import DataLoader, Dataset

from _common import data, emit, fill


class Points(Dataset):
    def __init__(self, count, seed):
        self.x = data(count, 4, seed=seed)
        self.targets = [int(t) for t in np.random.default_rng(seed + 100).integers(0, 3, count)]

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        return self.x[i], self.targets[i]


def listed(tensors):
    return [t.tolist() for t in tensors]


model = fill(nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3)).double(), seed=2)
train = Points(10, 3)
test = Points(6, 4)
train_loader = DataLoader(train, batch_size=2, shuffle=True, generator=torch.Generator().manual_seed(0))
test_loader = DataLoader(test, batch_size=1)
results = {}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    x, t = test_loader.collate_fn([test[0]])
    results["grad_z"] = listed(influence.grad_z(x, t, model))
    loss = influence.calc_loss(model(x), t)
    params = list(model.parameters())
    results["hvp"] = listed(influence.hvp(loss, params, [torch.ones_like(p) for p in params]))
    try:
        influence.hvp(loss, params, [torch.ones_like(params[0])])
    except ValueError as error:
        results["hvp_error"] = str(error)
    results["s_test"] = listed(influence.s_test(x, t, model, train_loader, damp=0.02, scale=10.0,
                                                recursion_depth=4))
    infl, harmful, helpful, test_id = calc.calc_influence_single(model, train_loader, test_loader, test_id_num=2,
                                                                 gpu=-1, recursion_depth=3, r=2)
    results["single"] = [[float(v) for v in infl], harmful, helpful, test_id]
    with tempfile.TemporaryDirectory() as folder:
        s_tests, saved = calc.calc_s_test(model, test_loader, train_loader, save=folder, recursion_depth=2, r=1,
                                          start=4)
        results["saved"] = sorted(p.name for p in Path(folder).iterdir())
        vectors = torch.load(Path(folder) / "5_recdep2_r1.s_test")
        results["reloaded"] = listed(vectors)
    influences, _, _, _ = calc.calc_influence_single(model, train_loader, test_loader, 5, -1, 2, 1,
                                                     s_test_vec=vectors)
    results["with_saved"] = [float(v) for v in influences]
    results["samples_per_class"] = list(calc.get_dataset_sample_ids(1, test_loader, num_classes=3, start_index=0))
results["warnings"] = sorted({(w.category.__name__, str(w.message)) for w in caught})
emit(results)
