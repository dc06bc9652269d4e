"""torch-intermediate-layer-getter: IntermediateLayerGetter's forward hooks on nested submodules (a
module called twice yields a list of its outputs), with and without the model's output, gradients
through the captured tensors, the hooks removed after each call; unfoldNd's convolution unfolding and
folding in one, two and three dimensions (as convolutions with one-hot kernels), transposed unfolding,
with gradients."""
import torch
import unfoldNd
from torch import nn
from torch_intermediate_layer_getter import IntermediateLayerGetter

from _common import data, emit, fill

torch.set_default_dtype(torch.float64)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(4, 5), nn.Tanh())
        self.shared = nn.Linear(5, 5)
        self.head = nn.Linear(5, 2)

    def forward(self, x):
        h = self.shared(self.shared(self.encoder(x)))
        return self.head(torch.relu(h))


model = fill(Net(), scale=0.5)
x = data(3, 4).requires_grad_()
getter = IntermediateLayerGetter(model, return_layers={"encoder.1": "encoded", "shared": "shared", "head": "out"})
mids, out = getter(x)
(mids["encoded"].sum() + mids["shared"][1].pow(2).sum() + out.sum()).backward()
results = {"mids": {k: v for k, v in mids.items()}, "out": out, "x_grad": x.grad,
           "hooks": [len(m._forward_hooks) for m in model.modules()]}
mids, out = IntermediateLayerGetter(model, {"shared": "s"}, keep_output=False)(x)
results["no_output"] = [len(mids["s"]), out]

for dims, shape in ((1, (2, 3, 9)), (2, (2, 3, 6, 5)), (3, (1, 2, 4, 4, 3))):
    inputs = data(*shape, seed=dims).requires_grad_()
    kernel = (3,) * dims
    unfold = unfoldNd.UnfoldNd(kernel, dilation=1, padding=1, stride=2)
    patches = unfold(inputs)
    patches.pow(2).sum().backward()
    fold = unfoldNd.FoldNd(shape[2:], kernel, padding=1, stride=2)
    folded = fold(patches.detach())
    results[f"unfold{dims}d"] = [patches, inputs.grad, folded]
transposed_in = data(1, 3, 4, 4, seed=8)
results["unfold_transpose"] = unfoldNd.UnfoldTransposeNd(kernel_size=2, stride=2)(transposed_in)
results["unfold_matches_torch"] = [(unfoldNd.unfoldNd(transposed_in, 2, stride=1) -
                                    nn.functional.unfold(transposed_in, 2)).abs().max().item()]
emit(results)
