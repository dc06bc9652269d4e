"""The hooks blog example: tensor hooks inside forward and on parameters.

- gradients flowing back out of the conv layer are clamped to be non-negative, by a hook on the
  conv activation, and a second hook reports whether any negative gradient is left;
- the gradients of the linear layer's bias are zeroed by a hook on that parameter.

Run: python examples/blog_network.py   (the same file runs on torch: swap the import)
"""
import hookgrad as torch
import hookgrad.nn as nn


class myNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 10, 2, stride=2)
        self.relu = nn.ReLU()
        self.flatten = lambda x: x.view(-1)
        self.fc1 = nn.Linear(160, 5)

    def forward(self, x):
        x = self.relu(self.conv(x))
        x.register_hook(lambda grad: torch.clamp(grad, min=0))  # no gradient below 0 leaves the conv
        # print whether there is any negative grad
        x.register_hook(lambda grad: print("Gradients less than zero:", bool((grad < 0).any())))
        return self.fc1(self.flatten(x))


net = myNet()

for name, param in net.named_parameters():
    # if the param is from a linear and is a bias
    if "fc" in name and "bias" in name:
        param.register_hook(lambda grad: torch.zeros(grad.shape))

out = net(torch.randn(1, 3, 8, 8))

(1 - out).mean().backward()

print("The biases are", net.fc1.bias.grad)  # bias grads are zero
