"""The parameters of torch's ATen operators, and the arguments a dispatch mode receives for them.

torch's dispatcher hands a ``__torch_dispatch__`` the operator's arguments laid out by its schema:
every argument positional up to the last one that differs from its default (the trailing defaults are
left out), the keyword-only ones as keywords when they differ from their default, an ``int[2]``
given as one int spread into a list (``kernel_size=2`` -> ``[2, 2]``), an ``int[]`` a list.

``SIGNATURES`` describes the operators a mode sees as ``name.overload: params``; a param is
``name[:kind][=default]``, a ``*`` starts the keyword-only ones. Kinds: ``T`` a tensor, ``T?`` a
tensor or None, ``S`` a number (not a tensor), ``I`` an int list, ``I<n>`` an int list of n that
takes one int for all, ``L`` a list of tensors; a param without a kind takes any value. The
overloads of a name are tried in the order listed; the first whose params take the values wins.
"""
from __future__ import annotations

import ast

from .._tensor import Tensor

SIGNATURES = """
_adaptive_avg_pool2d.default: self:T, output_size:I2
_adaptive_avg_pool3d.default: self:T, output_size:I3
abs.default: self:T
acos.default: self:T
acosh.default: self:T
add.Tensor: self:T, other, *, alpha=1
addmm.default: self:T, mat1:T, mat2:T, *, beta=1, alpha=1
alias.default: self:T
amax.default: self:T, dim:I1=[], keepdim=False
amin.default: self:T, dim:I1=[], keepdim=False
angle.default: self:T
as_strided.default: self:T, size:I, stride:I, storage_offset=None
asin.default: self:T
asinh.default: self:T
atan.default: self:T
atan2.default: self:T, other:T
atanh.default: self:T
avg_pool1d.default: self:T, kernel_size:I1, stride:I1=[], padding:I1=0, ceil_mode=False, count_include_pad=True
avg_pool2d.default: self:T, kernel_size:I2, stride:I2=[], padding:I2=0, ceil_mode=False, count_include_pad=True, divisor_override=None
avg_pool3d.default: self:T, kernel_size:I3, stride:I3=[], padding:I3=0, ceil_mode=False, count_include_pad=True, divisor_override=None
binary_cross_entropy.default: self:T, target:T, weight:T?=None, reduction=1
binary_cross_entropy_with_logits.default: self:T, target:T, weight:T?=None, pos_weight:T?=None, reduction=1
bitwise_not.default: self:T
bmm.default: self:T, mat2:T
cat.default: tensors:L, dim=0
ceil.default: self:T
celu.default: self:T, alpha=1.0
clamp.default: self:T, min:S=None, max:S=None
clamp.Tensor: self:T, min:T?=None, max:T?=None
clamp_min.default: self:T, min:S
clamp_min.Tensor: self:T, min:T
clamp_max.default: self:T, max:S
clone.default: self:T, *, memory_format=None
constant_pad_nd.default: self:T, pad:I, value=0
convolution.default: input:T, weight:T, bias:T?, stride:I, padding:I, dilation:I, transposed, output_padding:I, groups
copysign.Scalar: self:T, other:S
copysign.Tensor: self:T, other:T
cos.default: self:T
cosh.default: self:T
cummax.default: self:T, dim
cummin.default: self:T, dim
cumprod.default: self:T, dim, *, dtype=None
cumsum.default: self:T, dim, *, dtype=None
deg2rad.default: self:T
detach.default: self:T
diagonal.default: self:T, offset=0, dim1=0, dim2=1
digamma.default: self:T
div.Tensor: self:T, other
dot.default: self:T, tensor:T
elu.default: self:T, alpha=1, scale=1, input_scale=1
embedding.default: weight:T, indices:T, padding_idx=-1, scale_grad_by_freq=False, sparse=False
eq.Scalar: self:T, other:S
eq.Tensor: self:T, other:T
erf.default: self:T
erfc.default: self:T
erfinv.default: self:T
exp.default: self:T
exp2.default: self:T
expand.default: self:T, size:I, *, implicit=False
expm1.default: self:T
flip.default: self:T, dims:I
floor.default: self:T
fmod.Scalar: self:T, other:S
fmod.Tensor: self:T, other:T
frac.default: self:T
gather.default: self:T, dim, index:T, *, sparse_grad=False
ge.Scalar: self:T, other:S
ge.Tensor: self:T, other:T
gelu.default: self:T, *, approximate='none'
gt.Scalar: self:T, other:S
gt.Tensor: self:T, other:T
hardsigmoid.default: self:T
hardswish.default: self:T
hardtanh.default: self:T, min_val=-1, max_val=1
huber_loss.default: self:T, target:T, reduction=1, delta=1.0
i0.default: self:T
index_select.default: self:T, dim, index:T
kthvalue.default: self:T, k, dim=-1, keepdim=False
le.Scalar: self:T, other:S
le.Tensor: self:T, other:T
leaky_relu.default: self:T, negative_slope=0.01
lerp.Scalar: self:T, end:T, weight:S
lerp.Tensor: self:T, end:T, weight:T
lgamma.default: self:T
linalg_vector_norm.default: self:T, ord=2, dim:I1=None, keepdim=False, *, dtype=None
log.default: self:T
log10.default: self:T
log1p.default: self:T
log2.default: self:T
log_sigmoid_forward.default: self:T
logcumsumexp.default: self:T, dim
logit.default: self:T, eps=None
logsumexp.default: self:T, dim:I1, keepdim=False
lt.Scalar: self:T, other:S
lt.Tensor: self:T, other:T
masked_fill.Scalar: self:T, mask:T, value:S
masked_fill.Tensor: self:T, mask:T, value:T
masked_select.default: self:T, mask:T
max.default: self:T
max.dim: self:T, dim, keepdim=False
max_pool1d.default: self:T, kernel_size:I1, stride:I1=[], padding:I1=0, dilation:I1=1, ceil_mode=False
max_pool2d_with_indices.default: self:T, kernel_size:I2, stride:I2=[], padding:I2=0, dilation:I2=1, ceil_mode=False
max_pool3d_with_indices.default: self:T, kernel_size:I3, stride:I3=[], padding:I3=0, dilation:I3=1, ceil_mode=False
maximum.default: self:T, other:T
mean.default: self:T, *, dtype=None
mean.dim: self:T, dim:I1, keepdim=False, *, dtype=None
median.default: self:T
median.dim: self:T, dim, keepdim=False
min.default: self:T
min.dim: self:T, dim, keepdim=False
minimum.default: self:T, other:T
mish.default: self:T
mm.default: self:T, mat2:T
mode.default: self:T, dim=-1, keepdim=False
mse_loss.default: self:T, target:T, reduction=1
mul.Tensor: self:T, other
mv.default: self:T, vec:T
nan_to_num.default: self:T, nan=None, posinf=None, neginf=None
nanmedian.default: self:T
nanmedian.dim: self:T, dim, keepdim=False
ne.Scalar: self:T, other:S
ne.Tensor: self:T, other:T
neg.default: self:T
permute.default: self:T, dims:I
pow.Tensor_Tensor: self:T, exponent:T
pow.Tensor_Scalar: self:T, exponent:S
pow.Scalar: self:S, exponent:T
prod.default: self:T, *, dtype=None
prod.dim_int: self:T, dim, keepdim=False, *, dtype=None
rad2deg.default: self:T
reciprocal.default: self:T
relu.default: self:T
remainder.Scalar: self:T, other:S
remainder.Tensor: self:T, other:T
repeat.default: self:T, repeats:I
roll.default: self:T, shifts:I1, dims:I1=[]
round.decimals: self:T, *, decimals
round.default: self:T
rsqrt.default: self:T
rsub.Scalar: self:T, other:S, alpha=1
scatter.value: self:T, dim, index:T, value:S
scatter.src: self:T, dim, index:T, src:T
scatter_add.default: self:T, dim, index:T, src:T
scatter_reduce.two: self:T, dim, index:T, src:T, reduce, *, include_self=True
select.int: self:T, dim, index
selu.default: self:T
sgn.default: self:T
sigmoid.default: self:T
sign.default: self:T
silu.default: self:T
sin.default: self:T
sinc.default: self:T
sinh.default: self:T
slice.Tensor: self:T, dim=0, start=None, end=None, step=1
smooth_l1_loss.default: self:T, target:T, reduction=1, beta=1.0
softplus.default: self:T, beta=1, threshold=20
sort.default: self:T, dim=-1, descending=False
split.Tensor: self:T, split_size, dim=0
split_with_sizes.default: self:T, split_sizes:I, dim=0
sqrt.default: self:T
squeeze.default: self:T
squeeze.dim: self:T, dim
squeeze.dims: self:T, dim:I
stack.default: tensors:L, dim=0
sub.Tensor: self:T, other, *, alpha=1
sum.default: self:T, *, dtype=None
sum.dim_IntList: self:T, dim:I1, keepdim=False, *, dtype=None
t.default: self:T
tan.default: self:T
tanh.default: self:T
topk.default: self:T, k, dim=-1, largest=True, sorted=True
transpose.int: self:T, dim0, dim1
tril.default: self:T, diagonal=0
triu.default: self:T, diagonal=0
trunc.default: self:T
unbind.int: self:T, dim=0
unfold.default: self:T, dimension, size, step
unsqueeze.default: self:T, dim
view.default: self:T, size:I
where.self: condition:T, self:T, other:T
xlogy.Tensor: self:T, other:T
xlogy.Scalar_Self: self:S, other:T
xlogy.Scalar_Other: self:T, other:S
"""


class Param:
    __slots__ = ("name", "kind", "default", "keyword_only", "required")

    def __init__(self, text: str, keyword_only: bool):
        name, _, default = text.partition("=")
        name, _, kind = name.partition(":")
        self.name, self.kind, self.keyword_only = name.strip(), kind.strip(), keyword_only
        self.required = not default
        self.default = ast.literal_eval(default.strip()) if default else None

    def takes(self, value) -> bool:
        kind = self.kind
        if not kind:
            return True
        if value is None:
            return kind == "T?" or not self.required
        if kind in ("T", "T?"):
            return isinstance(value, Tensor)
        if kind == "S":
            return not isinstance(value, Tensor)
        if kind.startswith("I"):
            return isinstance(value, (int, list, tuple)) and not isinstance(value, bool)
        if kind == "L":
            return isinstance(value, (list, tuple))
        return True

    def laid_out(self, value):
        """The value as torch's dispatcher passes it."""
        kind = self.kind
        if kind.startswith("I") and value is not None:
            if isinstance(value, int):
                count = int(kind[1:]) if len(kind) > 1 else 1
                return [value] * count
            return [int(v) for v in value]
        if kind == "L" and isinstance(value, tuple):
            return list(value)
        return value

    def is_default(self, value) -> bool:
        if self.required:
            return False
        default = self.laid_out(self.default)
        if isinstance(default, list) and isinstance(value, list) and len(default) == 1 and len(self.kind) > 1:
            return all(v == default[0] for v in value)   # int[2] padding=0 is [0, 0]
        return type(value) is type(default) and value == default if default is not None else value is None


class Signature:
    __slots__ = ("name", "overload", "params")

    def __init__(self, name: str, overload: str, params: list):
        self.name, self.overload, self.params = name, overload, params

    def fits(self, values: dict) -> bool:
        names = {p.name for p in self.params}
        if any(v is not None for k, v in values.items() if k not in names):
            return False
        for p in self.params:
            value = values.get(p.name)
            if value is None and p.required and p.kind != "T?" and p.kind:
                return False
            if p.name in values and not p.takes(value):
                return False
        return True

    def lay_out(self, values: dict):
        """``(args, kwargs)`` as torch's dispatcher gives them."""
        positional, keywords = [], {}
        for p in self.params:
            value = p.laid_out(values[p.name]) if p.name in values else p.laid_out(p.default)
            if p.keyword_only:
                if not p.is_default(value):
                    keywords[p.name] = value
            else:
                positional.append((p, value))
        while positional and positional[-1][0].is_default(positional[-1][1]):
            positional.pop()
        return tuple(value for _, value in positional), keywords


def _parse(text: str) -> dict:
    table: dict = {}
    for line in text.strip().splitlines():
        head, _, body = line.partition(":")
        name, _, overload = head.strip().partition(".")
        params, keyword_only = [], False
        for part in body.split(","):
            part = part.strip()
            if not part:
                continue
            if part == "*":
                keyword_only = True
                continue
            params.append(Param(part, keyword_only))
        table.setdefault(name, []).append(Signature(name, overload, params))
    return table


TABLE = _parse(SIGNATURES)


def lay_out(name: str, values: dict):
    """``(overload, args, kwargs)`` for ATen's ``name`` called with ``values`` (param name ->
    value); None when no overload of ``name`` described here takes them. An in-place variant
    (``relu_``) takes its operator's parameters."""
    signatures = TABLE.get(name)
    if signatures is None and name.endswith("_"):
        signatures = TABLE.get(name[:-1])
    for signature in signatures or ():
        if signature.fits(values):
            args, kwargs = signature.lay_out(values)
            return signature.overload, args, kwargs
    return None


def first_param(name: str):
    signatures = TABLE.get(name)
    return signatures[0].params[0].name if signatures and signatures[0].params else None
