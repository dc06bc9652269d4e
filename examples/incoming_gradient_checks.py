"""Validating and scaling incoming gradients with global full backward pre-hooks.

A backward pre-hook sees grad_output, the gradient arriving at a module, before the module's
backward uses it: one hook checks it for NaN/Inf, one monitors its norm, and one scales it.

Run: python examples/incoming_gradient_checks.py   (the same file runs on torch: swap the import)
"""
import hookgrad as torch
import hookgrad.nn as nn
from hookgrad.nn.modules.module import register_module_full_backward_pre_hook

model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.linspace(-1.0, 1.0, p.numel()).reshape(p.shape) + 0.1 * i)


def validate(module, grad_output):
    for i, g in enumerate(grad_output):
        if g is not None and (torch.isnan(g).any().item() or torch.isinf(g).any().item()):
            print(f"Invalid gradients at {type(module).__name__} output {i}")


def monitor(module, grad_output):
    norm = grad_output[0].norm().item() if grad_output[0] is not None else 0.0
    print(f"{type(module).__name__} incoming grad norm: {norm:.4f}")


def scale(module, grad_output):
    return tuple(g * 0.1 if g is not None else g for g in grad_output)


x = torch.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True)
handles = [register_module_full_backward_pre_hook(validate), register_module_full_backward_pre_hook(monitor)]
model(x).sum().backward()
print("input grad:", [round(v, 4) for v in x.grad.flatten().tolist()])

x.grad = None
handles.append(register_module_full_backward_pre_hook(scale))
model(x).sum().backward()
print("input grad with scaling:", [round(v, 4) for v in x.grad.flatten().tolist()])

x.grad = None
print("a loss that turns NaN:")
(model(x) * torch.tensor(float("nan"))).sum().backward()
for h in handles:
    h.remove()
