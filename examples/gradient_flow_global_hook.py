"""Gradient flow through every layer, watched with one global full backward hook.

For each module the hook sees the gradient arriving from downstream (grad_output) and the one it
sends upstream (grad_input); their norms show where a signal grows or vanishes.

Run: python examples/gradient_flow_global_hook.py   (the same file runs on torch: swap the import)
"""
import hookgrad as torch
import hookgrad.nn as nn


def deterministic_init(model):
    """Fill every parameter with a fixed pattern so the printed numbers are reproducible."""
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            values = torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape)
            p.copy_(values * (1.0 + 0.1 * i))


model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1))
deterministic_init(model)

gradients = {}


def hook(module, grad_input, grad_output):
    g_in = grad_input[0].norm().item() if grad_input[0] is not None else 0.0
    g_out = grad_output[0].norm().item() if grad_output[0] is not None else 0.0
    gradients.setdefault(type(module).__name__, []).append((g_in, g_out))
    print(f"{type(module).__name__:<10} in={g_in:.4f} out={g_out:.4f}")


handle = torch.nn.modules.module.register_module_full_backward_hook(hook)
x = torch.linspace(-1.0, 1.0, 12).reshape(3, 4)
x.requires_grad_(True)
model(x).sum().backward()
handle.remove()

print("Gradient analysis:")
for name, pairs in gradients.items():
    print(f"  {name}: " + ", ".join(f"in={i:.4f}/out={o:.4f}" for i, o in pairs))
