"""einops on tensors: rearrange, reduce, repeat, einsum, pack/unpack, parse_shape, and the
einops.layers.torch modules (Rearrange, Reduce, EinMix) inside a small model with hooks, with a
backward through all of it."""
import einops
import torch
from einops import einsum, pack, parse_shape, rearrange, reduce, repeat, unpack
from einops.layers.torch import EinMix, Rearrange, Reduce
from torch import nn

from _common import data, emit, fill

x = data(2, 3, 4, 6).requires_grad_()
results = {"backend": type(einops._backends.get_backend(x)).__name__}

pieces = {
    "rearrange": rearrange(x, "b c (h p) w -> b (h w) (p c)", p=2),
    "reduce_max": reduce(x, "b c (h h2) (w w2) -> b c h w", "max", h2=2, w2=3),
    "reduce_mean": reduce(x, "b c h w -> c", "mean"),
    "reduce_prod": reduce(x, "b c h w -> b h", "prod"),
    "repeat": repeat(x[:, 0], "b h w -> b h w r", r=2),
    "einsum": einsum(x, x[0], "b c h w, c h v -> b w v"),
    "ellipsis": rearrange(x, "b ... w -> (b w) ..."),
    "list_input": rearrange([x[0], x[1]], "n c h w -> c (n h) w"),
}
packed, packed_shapes = pack([x[:, 0], x[:, :2].sum(1, keepdim=True)], "b * w")
first, second = unpack(packed * 2, packed_shapes, "b * w")
pieces["pack"], pieces["unpacked_first"], pieces["unpacked_second"] = packed, first, second
results["pack_shapes"] = [list(s) for s in packed_shapes]
results["parse_shape"] = parse_shape(x, "b c _ w")

total = sum((piece.double() ** 2).sum() * (i + 1) for i, piece in enumerate(pieces.values()))
total.backward()
results["pieces"] = {name: piece.detach() for name, piece in pieces.items()}
results["x_grad"] = x.grad

try:  # einops' own error for a pattern that does not fit
    rearrange(x, "b c h -> b h c")
except einops.EinopsError as error:
    results["error"] = [type(error).__name__, str(error).splitlines()[0]]


class Mixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.patches = Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=2, p2=2)
        self.mix = EinMix("b t c -> b t d", weight_shape="c d", bias_shape="d", c=12, d=5)
        self.token_mix = EinMix("b t d -> b s d", weight_shape="t s", t=6, s=3)
        self.pool = Reduce("b s d -> b d", "max")
        self.out = nn.Linear(5, 2)

    def forward(self, images):
        return self.out(self.pool(torch.tanh(self.token_mix(self.mix(self.patches(images))))))


model = fill(Mixer().double(), seed=3)
seen = []
for name, module in model.named_children():
    module.register_forward_hook(lambda m, args, out, name=name: seen.append([name, list(out.shape)]))
    module.register_full_backward_hook(
        lambda m, gin, gout, name=name: seen.append([name, [None if g is None else list(g.shape) for g in gin]]))
images = data(2, 3, 4, 6, seed=4).requires_grad_()
out = model(images)
out.pow(2).sum().backward()
results.update(model_out=out, repr=repr(model), hooks=seen, images_grad=images.grad,
               param_grads={name: p.grad for name, p in model.named_parameters()},
               params=[name for name, _ in model.named_parameters()])
emit(results)
