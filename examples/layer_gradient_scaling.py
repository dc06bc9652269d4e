"""Layer-specific gradient scaling with a global full backward hook.

The hook halves the gradient that every Linear layer passes upstream and leaves the other layers
alone, by returning a new grad_input.

Run: python examples/layer_gradient_scaling.py   (the same file runs on torch: swap the import)
"""
import hookgrad as torch
import hookgrad.nn as nn


def build():
    model = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2))
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(torch.linspace(-1.0, 1.0, p.numel()).reshape(p.shape) * (0.5 + 0.25 * i))
    return model


def scale_linear(module, grad_input, grad_output):
    scale = 0.5 if isinstance(module, nn.Linear) else 1.0
    return tuple(g * scale if g is not None else g for g in grad_input)


x = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], requires_grad=True)

plain = build()
plain(x).sum().backward()
plain_grad = x.grad.clone()
x.grad = None

scaled = build()
handle = torch.nn.modules.module.register_module_full_backward_hook(scale_linear)
scaled(x).sum().backward()
handle.remove()

print("input grad without hook:", [round(v, 4) for v in plain_grad.flatten().tolist()])
print("input grad with hook:   ", [round(v, 4) for v in x.grad.flatten().tolist()])
print("ratio:", [round(a / b, 4) for a, b in zip(x.grad.flatten().tolist(), plain_grad.flatten().tolist()) if b != 0])
for (name, p_plain), p_scaled in zip(plain.named_parameters(), scaled.parameters()):
    print(f"{name}: grad unchanged = {bool(torch.allclose(p_plain.grad, p_scaled.grad))}")
