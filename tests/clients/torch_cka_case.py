"""torch-cka: centred kernel alignment between the layers of two float64 models, gathered by forward hooks
on every named layer (or chosen ones), over a DataLoader."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch_cka import CKA

from _common import data, emit, fill

torch.set_default_dtype(torch.float64)  # the HSIC accumulators are made in the default dtype


def mlp(seed, hidden):
    return fill(nn.Sequential(nn.Linear(5, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.Tanh(),
                              nn.Linear(hidden, 3)), seed=seed)


loader = DataLoader(TensorDataset(data(24, 5), torch.zeros(24)), batch_size=8)
other = DataLoader(TensorDataset(data(24, 5, seed=4), torch.zeros(24)), batch_size=8)
results = {}
cka = CKA(mlp(0, 6), mlp(1, 7), model1_name="first", model2_name="second",
          model1_layers=["0", "1", "2", "3", "4"], model2_layers=["0", "2", "4"])
cka.compare(loader)
def exported(cka):
    found = cka.export()
    for key in ("dataset1_name", "dataset2_name"):   # the datasets' reprs: keep the class, not the address
        found[key] = found[key].split(" object at ")[0]
    return found


results["chosen_layers"] = exported(cka)
cka = CKA(mlp(2, 6), mlp(2, 6), model1_name="a", model2_name="b")
cka.compare(loader, other)
results["all_layers"] = exported(cka)
results["hooks"] = [len(m._forward_hooks) for m in cka.model1.modules()]
emit(results)
