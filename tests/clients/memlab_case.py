"""pytorch_memlab's MemReporter: every tensor the garbage collector tracks, named after the model's
parameters, their gradients and the optimizer's state, with element counts and storage sizes (rounded
to torch's 512-byte allocations); storage sharing through untyped_storage().data_ptr(). Only the named
tensors are compared (each framework keeps its own unnamed ones)."""
import torch
from pytorch_memlab import MemReporter
from torch import nn

from _common import data, emit, fill

torch.set_default_dtype(torch.float64)
model = fill(nn.Sequential(nn.Linear(7, 33), nn.BatchNorm1d(33), nn.ReLU(), nn.Linear(33, 3, bias=False)))
model[3].weight_view = model[3].weight.view(-1)  # a view: shares its parameter's storage
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
loss = model(data(5, 7)).pow(2).sum()
loss.backward()
optimizer.step()
results = {}

for label, with_optimizer in (("model", False), ("model_and_optimizer", True)):
    reporter = MemReporter(model)
    if with_optimizer:
        reporter.add_optimizer(optimizer)
    reporter.collect_tensor()
    reporter.get_stats()
    stats = reporter.device_tensor_stat[torch.device("cpu")]
    # the order in which the collector lists tensors is each process's own, and with it which of two
    # sharing a storage is counted and which points to the other ("name(->other)"): a gradient is met both
    # as its parameter's .grad and on its own, so its memory is left out
    named = {}
    for name, size, numel, memory in stats:
        base = name.split("(->")[0]
        if not base.startswith("Tensor"):
            counted = None if base.endswith(".grad") else max(memory, named.get(base, [None, None, 0])[2])
            named[base] = [list(size), numel, counted]
    results[label] = sorted([name, *row] for name, row in named.items())
results["storage"] = [model[0].weight.untyped_storage().size(), model[0].weight.element_size(),
                      model[3].weight_view.untyped_storage().data_ptr() == model[3].weight.untyped_storage().data_ptr(),
                      model[0].weight.untyped_storage().data_ptr() == model[0].bias.untyped_storage().data_ptr()]
emit(results)
