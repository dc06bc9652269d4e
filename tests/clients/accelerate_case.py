"""accelerate on CPU: ModelHook subclasses attached by add_hook_to_module (pre_forward rewriting arguments,
post_forward rewriting outputs, SequentialHook, removal restoring forward), AlignDevicesHook weights offloaded
to a CPU map and put back for each call (cpu_offload, disk-free offload), init_empty_weights on the meta
device with set_module_tensor_to_device, module sizes, tied parameters, device maps, and an Accelerator
training loop with gradient accumulation, clipping and a saved/reloaded state."""
import os
import tempfile

import torch
from accelerate import Accelerator, cpu_offload, init_empty_weights
from accelerate.hooks import (ModelHook, SequentialHook, add_hook_to_module, remove_hook_from_module,
                              remove_hook_from_submodules)
from accelerate.utils import (compute_module_sizes, find_tied_parameters, infer_auto_device_map,
                              set_module_tensor_to_device)
from torch import nn

from _common import data, emit, fill

torch.set_default_dtype(torch.float64)
events = []


class Scale(ModelHook):
    """Doubles the first argument before the call and records what it sees."""

    def init_hook(self, module):
        events.append(("init", type(module).__name__))
        return module

    def pre_forward(self, module, *args, **kwargs):
        events.append(("pre", type(module).__name__, [tuple(a.shape) for a in args], sorted(kwargs)))
        return (args[0] * 2,) + args[1:], kwargs

    def post_forward(self, module, output):
        events.append(("post", type(module).__name__, tuple(output.shape)))
        return output + 1

    def detach_hook(self, module):
        events.append(("detach", type(module).__name__))
        return module


def mlp():
    return fill(nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3)))


x = data(5, 4)
results = {}

# a hook on one layer, then on the whole model alongside forward hooks of torch's own
model = mlp()
plain_out = model(x)
add_hook_to_module(model[0], Scale())
recorded = []
handle = model[2].register_forward_hook(lambda m, i, o: recorded.append(o.detach().clone()))
hooked = model(x)
hooked.sum().backward()
results["one_layer"] = {"out": hooked, "plain": plain_out, "recorded": recorded,
                        "grads": [p.grad for p in model.parameters()],
                        "has_hf_hook": hasattr(model[0], "_hf_hook")}
add_hook_to_module(model[0], Scale(), append=True)   # (a SequentialHook of the two)
results["appended"] = {"out": model(x), "kind": type(model[0]._hf_hook).__name__}
remove_hook_from_module(model[0])
handle.remove()
results["removed"] = {"out": model(x), "has_hf_hook": hasattr(model[0], "_hf_hook"),
                      "same_as_plain": bool(torch.equal(model(x), plain_out))}
add_hook_to_module(model, SequentialHook(Scale(), Scale()))
results["sequential"] = model(x)
remove_hook_from_submodules(model)
remove_hook_from_module(model)
results["sequential_removed"] = model(x)

# cpu_offload: the weights move to a state-dict map (the module keeps meta tensors) and come back per call
model = mlp()
reference = model(x)
cpu_offload(model, execution_device=torch.device("cpu"), offload_buffers=True)
offloaded = model(x)
offloaded.pow(2).sum().backward()
results["cpu_offload"] = {"out": offloaded, "ref": reference,
                          "weight_devices": [str(p.device) for p in model.parameters()],
                          "hooked": sorted(name for name, m in model.named_modules() if hasattr(m, "_hf_hook"))}
remove_hook_from_submodules(model)

# meta-device construction, filled layer by layer
with init_empty_weights():
    empty = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
results["empty_devices"] = [str(p.device) for p in empty.parameters()]
for name, value in mlp().state_dict().items():
    set_module_tensor_to_device(empty, name, "cpu", value=value)
results["filled"] = {"devices": [str(p.device) for p in empty.parameters()], "out": empty(x)}

# sizes, tied parameters and a device map under memory limits
tied = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 10, bias=False))
tied[1].weight = tied[0].weight
results["sizes"] = {k: int(v) for k, v in sorted(compute_module_sizes(mlp()).items())}
results["tied"] = find_tied_parameters(tied)
results["device_map"] = {k: str(v) for k, v in infer_auto_device_map(
    mlp(), max_memory={"cpu": 400, "disk": 10 ** 6}).items()}

# an Accelerator training loop on CPU
accelerator = Accelerator(cpu=True, gradient_accumulation_steps=2)
model = mlp()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
dataset = torch.utils.data.TensorDataset(data(8, 4, seed=3), data(8, 3, seed=4))
loader = torch.utils.data.DataLoader(dataset, batch_size=2)
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
losses, norms, syncs = [], [], []
for inputs, targets in loader:
    with accelerator.accumulate(model):
        loss = nn.functional.mse_loss(model(inputs), targets)
        accelerator.backward(loss)
        syncs.append(accelerator.sync_gradients)
        if accelerator.sync_gradients:
            norms.append(accelerator.clip_grad_norm_(model.parameters(), 0.5))
        optimizer.step()
        optimizer.zero_grad()
    losses.append(loss.item())
results["accelerator"] = {"losses": losses, "norms": norms, "syncs": syncs,
                          "gathered": accelerator.gather(model(data(2, 4, seed=5))),
                          "weights": [p.detach() for p in accelerator.unwrap_model(model).parameters()]}
with tempfile.TemporaryDirectory() as folder:
    accelerator.save_state(folder)
    saved = [p.detach().clone() for p in model.parameters()]
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    accelerator.load_state(folder)
    results["reloaded"] = [bool(torch.equal(a, b)) for a, b in zip(saved, model.parameters())]
    results["state_files"] = sorted(os.listdir(folder))
results["events"] = events
emit(results)
