"""Hook managers: TorchHook's HookManager (forward hooks by layer name or module, custom hooks and output
transforms, bounded feature lists, removal, summary) and hookandlook's model watcher (forward hooks
composed with range checks and legacy register_backward_hook hooks on every child, statistics of inputs
and outputs gathered over training and evaluation steps, the warnings torch gives on the way)."""
import warnings

import torch
from torch import nn

from _common import data, emit, fill

torch.set_default_dtype(torch.float64)
results = {}


def net():
    return fill(nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3), nn.Softmax(dim=-1)), scale=0.5)


from torchhook import HookManager  # noqa: E402

model = net()
manager = HookManager(model, max_size=2)
manager.register_forward_hook("0")
manager.register_forward_hook(layer=model[2], output_transform=lambda out: out.detach() * 2)
manager.register_forward_hook("3", custom_hook=lambda module, inputs, output: output.sum(dim=-1))
for i in range(3):
    model(data(2, 4, seed=10 + i))
results["torchhook_keys"] = manager.get_keys()
results["torchhook_features"] = {key: manager.get(key) for key in manager.get_keys()}
results["torchhook_summary"] = str(manager)
manager.remove("0")
results["torchhook_after_remove"] = [manager.get_keys(), [len(m._forward_hooks) for m in model.modules()]]
manager.clear_hooks()
results["torchhook_cleared"] = [len(m._forward_hooks) for m in model.modules()]

try:
    from hookandlook.hooks import backward_hook_check_if_train_mode, forward_hook_check_value_in_range
    from hookandlook.watch import Wrapper
except ImportError:  # hookandlook needs pandas
    results["hookandlook"] = None
else:
    model = net()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wrapped = Wrapper.wrap_model(model, wrap_children=True,
                                     forward_hooks=[forward_hook_check_value_in_range(-50.0, 50.0)],
                                     backward_hooks=[backward_hook_check_if_train_mode()])
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(3):
            optimizer.zero_grad()
            out = wrapped(data(4, 4, seed=step))
            out[:, 0].sum().backward()
            optimizer.step()
        wrapped.eval()
        with torch.no_grad():
            wrapped(data(4, 4, seed=9))
    watcher = wrapped.watcher
    stats = []
    for inputs in (True, False):
        for label, batch_ids, values in watcher.iterate_over_stats(inputs=inputs):
            stats.append([label, [int(b) for b in batch_ids], [float(v) for v in values]])
    results["hookandlook_stats"] = sorted(stats)
    results["hookandlook_warnings"] = sorted({(w.category.__name__, str(w.message)[:60]) for w in caught})
    bad = net()
    Wrapper.wrap_model(bad, forward_hooks=[forward_hook_check_value_in_range(0.0, 0.1)])
    try:
        bad(data(2, 4))
        results["range_check"] = None
    except ValueError as exc:
        results["range_check"] = str(exc).split(" of module")[0]
emit(results)
