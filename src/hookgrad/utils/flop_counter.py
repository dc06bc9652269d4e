"""``torch.utils.flop_counter``: count the FLOPs a program runs, per module and per ATen operator.

torch counts in a dispatch mode, at the ATen operators its ops decompose into (``aten.mm``,
``aten.addmm``, ``aten.bmm``, ``aten.baddbmm``, ``aten.convolution``, ``aten.convolution_backward``,
the attention kernels), with one formula per operator. hookgrad runs no ATen dispatcher, so
``FlopCounterMode`` watches hookgrad's ops instead, through op hooks:

* forward: each op the program calls (``linear``, ``matmul``, ``conv2d``,
  ``scaled_dot_product_attention``, ``multi_head_attention_forward``, ``einsum``, ...) is translated
  into the ATen calls torch's decomposition of that call would make, shapes, strides and
  ``requires_grad`` included (``linear`` on a contiguous 3-D input with a bias is one ``addmm`` on
  the flattened input; ``matmul`` folds into ``mm`` or broadcasts into ``bmm`` by torch's rule; an
  attention call that torch's CPU backend selection sends to its flash kernel counts nothing);
* backward: each graph node the engine runs (``MmBackward0``, ``AddmmBackward0``, ``BmmBackward0``,
  ``ConvolutionBackward0``, ...) is translated into the ATen calls torch's formula for that node
  makes, one per gradient the pass computes (an input that needs no grad costs nothing).

The formulas are torch's (``mm_flop``, ``conv_flop``, ``sdpa_flop``, ...), looked up by operator in
``flop_registry`` (``custom_mapping`` and ``register_flop_formula`` add to it), and the counts are
attributed to the modules running at the time by ``ModuleTracker``, in forward and in backward.
"""
from __future__ import annotations

import math
import warnings
import weakref
from collections import defaultdict
from functools import wraps
from math import prod

from .. import ops as _ops
from .._C import _DisableTorchDispatch
from .._ops.decompositions import _chain_order
from ..autograd import _hook_context
from ..autograd import engine as _engine
from .._tensor import Tensor
from ..nn._functional import attention as _attention
from ._pytree import tree_map, tree_map_
from .module_tracker import ModuleTracker

__all__ = ["FlopCounterMode", "register_flop_formula"]

aten = _ops.aten


def _not_runnable(name: str):
    def run(*args, **kwargs):
        raise NotImplementedError(f"torch.ops.aten.{name}: hookgrad does not run this ATen operator directly; "
                                  "it exists as a key of the flop counter's formulas")
    run.__name__ = name
    return run


def _aten_op(name: str, impl=None):
    """The ``torch.ops.aten.<name>`` packet, made here (and cached in ``torch.ops.aten``) for the
    operators hookgrad's op table has no entry for."""
    try:
        return getattr(aten, name)
    except AttributeError:
        packet = _ops.OpOverloadPacket("aten", name, impl or _not_runnable(name), overloads=("default",))
        aten.__dict__[name] = packet
        return packet


_MM = _aten_op("mm")
_ADDMM = _aten_op("addmm")
_BMM = _aten_op("bmm")
_BADDBMM = _aten_op("baddbmm")
_CONVOLUTION = _aten_op("convolution", _ops._convolution)
_CONVOLUTION_BACKWARD = _aten_op("convolution_backward")


def get_shape(i):
    return i.shape if isinstance(i, Tensor) else i


flop_registry: dict = {}


def shape_wrapper(f):
    """``f`` called with the shapes of its tensor arguments (and of the op's output as ``out_shape``)."""
    @wraps(f)
    def nf(*args, out_val=None, **kwargs):
        args, kwargs, out_shape = tree_map(get_shape, (args, kwargs, out_val))
        return f(*args, out_shape=out_shape, **kwargs)
    return nf


def register_flop_formula(targets, get_raw=False):
    """Decorator: ``formula`` counts the FLOPs of the operator(s) ``targets`` (``torch.ops.aten.X``
    packets). Unless ``get_raw``, the formula receives shapes instead of tensors."""
    def register_fun(flop_formula):
        if not get_raw:
            flop_formula = shape_wrapper(flop_formula)

        def register(target) -> None:
            if not isinstance(target, _ops.OpOverloadPacket):
                raise ValueError(
                    f"register_flop_formula(targets): expected each target to be OpOverloadPacket (i.e. "
                    f"torch.ops.mylib.foo), JitFunction, or HigherOrderOperator, got {target} which is of type "
                    f"{type(target)}")
            if target in flop_registry:
                raise RuntimeError(f"duplicate registrations for {target}")
            flop_registry[target] = flop_formula

        tree_map_(register, targets)
        return flop_formula
    return register_fun


@register_flop_formula(_MM)
def mm_flop(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    """FLOPs of a matrix product: two per multiply-add."""
    m, k = a_shape
    k2, n = b_shape
    if k != k2:
        raise AssertionError(f"matmul: inner dimensions must match (k == k2), got {k} and {k2}")
    return m * n * 2 * k


@register_flop_formula(_ADDMM)
def addmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """FLOPs of addmm: its matrix product's (the addition is not counted)."""
    return mm_flop(a_shape, b_shape)


@register_flop_formula(_BMM)
def bmm_flop(a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """FLOPs of a batched matrix product."""
    b, m, k = a_shape
    b2, k2, n = b_shape
    if b != b2:
        raise AssertionError(f"bmm: batch dimensions must match (b == b2), got {b} and {b2}")
    if k != k2:
        raise AssertionError(f"bmm: inner dimensions must match (k == k2), got {k} and {k2}")
    return b * m * n * 2 * k


@register_flop_formula(_BADDBMM)
def baddbmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """FLOPs of baddbmm: its batched product's."""
    return bmm_flop(a_shape, b_shape)


def _scaled_mm_flop(a_shape, b_shape, scale_a_shape, scale_b_shape, bias_shape=None, scale_result_shape=None,
                    out_dtype=None, use_fast_accum=False, out_shape=None, **kwargs) -> int:
    """FLOPs of ``_scaled_mm``: its matrix product's."""
    return mm_flop(a_shape, b_shape)


def conv_flop_count(x_shape, w_shape, out_shape, transposed: bool = False) -> int:
    """FLOPs of a convolution (multiplications and additions of the products; the bias is not
    counted): every point of the output (of the input, for a transposed convolution) meets the
    whole filter, for each batch element and pair of channels the weight connects."""
    batch_size = x_shape[0]
    conv_shape = (x_shape if transposed else out_shape)[2:]
    c_out, c_in, *filter_size = w_shape
    return prod(conv_shape) * prod(filter_size) * batch_size * c_out * c_in * 2


@register_flop_formula(_CONVOLUTION)
def conv_flop(x_shape, w_shape, _bias, _stride, _padding, _dilation, transposed, *args, out_shape=None,
              **kwargs) -> int:
    """FLOPs of ``aten.convolution``."""
    return conv_flop_count(x_shape, w_shape, out_shape, transposed=transposed)


@register_flop_formula(_CONVOLUTION_BACKWARD)
def conv_backward_flop(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding, _dilation, transposed,
                       _output_padding, _groups, output_mask, out_shape, **kwargs) -> int:
    """FLOPs of ``aten.convolution_backward``: the input's gradient is a transposed convolution of
    the output's gradient with the weight (a plain one for a transposed convolution); the weight's
    is a convolution of the input with the output's gradient, batch and channels swapped."""
    def channels_first(shape):
        return [shape[1], shape[0]] + list(shape[2:])

    count = 0
    if output_mask[0]:
        count += conv_flop_count(grad_out_shape, w_shape, get_shape(out_shape[0]), not transposed)
    if output_mask[1]:
        grad_weight_shape = get_shape(out_shape[1])
        if transposed:
            count += conv_flop_count(channels_first(grad_out_shape), channels_first(x_shape),
                                     channels_first(grad_weight_shape), transposed=False)
        else:
            count += conv_flop_count(channels_first(x_shape), channels_first(grad_out_shape),
                                     channels_first(grad_weight_shape), transposed=False)
    return count


def sdpa_flop_count(query_shape, key_shape, value_shape) -> int:
    """FLOPs of attention: the scores (query times keys) and the output (scores times values), with
    key/value heads broadcast over groups of query heads."""
    b, h_q, s_q, d_q = query_shape
    _b2, h_kv, s_k, _d2 = key_shape
    _b3, _h3, _s3, d_v = value_shape
    if not (b == _b2 == _b3 and h_kv == _h3 and d_q == _d2 and s_k == _s3):
        raise AssertionError(f"sdpa_flop_count: query/key/value shapes are incompatible: q={query_shape}, "
                             f"k={key_shape}, v={value_shape}")
    if h_q < h_kv or h_q % h_kv != 0:
        raise AssertionError(f"sdpa_flop_count: query heads ({h_q}) must be a multiple of key/value heads ({h_kv})")
    return bmm_flop((b * h_q, s_q, d_q), (b * h_q, d_q, s_k)) + bmm_flop((b * h_q, s_q, s_k), (b * h_q, s_k, d_v))


def sdpa_flop(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    """FLOPs of a fused attention kernel (causal masking not discounted)."""
    return sdpa_flop_count(query_shape, key_shape, value_shape)


def sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape) -> int:
    """FLOPs of a fused attention kernel's backward: the scores again, then the gradients of the
    scores, the values, the queries and the keys (five batched products)."""
    b, h_q, s_q, d_q = query_shape
    _b2, h_kv, s_k, _d2 = key_shape
    _b3, _h3, _s3, d_v = value_shape
    _b4, _h4, _s4, _d4 = grad_out_shape
    if not (b == _b2 == _b3 == _b4 and h_kv == _h3 and h_q == _h4):
        raise AssertionError("sdpa_backward_flop_count: batch/heads mismatch among tensors")
    if h_q < h_kv or h_q % h_kv != 0:
        raise AssertionError(f"sdpa_backward_flop_count: query heads ({h_q}) must be a multiple of key/value "
                             f"heads ({h_kv})")
    if not (d_q == _d2 and d_v == _d4 and s_k == _s3 and s_q == _s4):
        raise AssertionError("sdpa_backward_flop_count: grad_out/value/key/query shapes are incompatible")
    bh = b * h_q
    return (bmm_flop((bh, s_q, d_q), (bh, d_q, s_k)) + bmm_flop((bh, s_q, d_v), (bh, d_v, s_k))
            + bmm_flop((bh, s_k, s_q), (bh, s_q, d_v)) + bmm_flop((bh, s_q, s_k), (bh, s_k, d_q))
            + bmm_flop((bh, d_q, s_q), (bh, s_q, s_k)))


def sdpa_backward_flop(grad_out_shape, query_shape, key_shape, value_shape, *args, out_shape=None,
                       **kwargs) -> int:
    """FLOPs of a fused attention kernel's backward."""
    return sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)


_scaled_mm_flop = register_flop_formula(_aten_op("_scaled_mm"))(_scaled_mm_flop)
sdpa_flop = register_flop_formula([_aten_op(n) for n in (
    "_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_cudnn_attention")])(sdpa_flop)
sdpa_backward_flop = register_flop_formula([_aten_op(n) for n in (
    "_scaled_dot_product_efficient_attention_backward", "_scaled_dot_product_flash_attention_backward",
    "_scaled_dot_product_cudnn_attention_backward")])(sdpa_backward_flop)
for _name in ("_convolution", "cudnn_convolution", "_slow_conv2d_forward", "convolution_overrideable"):
    flop_registry[_aten_op(_name)] = conv_flop


def normalize_tuple(x):
    return x if isinstance(x, tuple) else (x,)


# ---- the table ------------------------------------------------------------------------------------
suffixes = ["", "K", "M", "B", "T"]


def get_suffix_str(number) -> str:
    """The unit suffix for ``number``: one step up per three digits beyond the first four (so
    1.01B reads 1010.000M, not 1.010B)."""
    index = max(0, min(len(suffixes) - 1, (len(str(number)) - 2) // 3))
    return suffixes[index]


def convert_num_with_suffix(number, suffix: str) -> str:
    index = suffixes.index(suffix)
    return f"{number / 1000 ** index:.3f}" + suffixes[index]


def convert_to_percent_str(num, denom) -> str:
    if denom == 0:
        return "0%"
    return f"{num / denom:.2%}"


def _number_kind(text: str):
    """``int``, ``float`` or ``str``: how a table cell reads (a cell that parses as a number is
    printed as one)."""
    try:
        int(text)
        return int
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return str
    if math.isinf(value) or math.isnan(value):
        return str if text.strip().lower() not in ("inf", "-inf", "+inf", "nan", "infinity") else float
    return float


def _plain_table(rows, header, align) -> str:
    """The table torch prints, as the ``tabulate`` package (0.10) lays it out: columns two spaces
    apart, the header underlined with dashes, a column at least two wider than its header, a
    column whose cells all read as numbers printed as numbers (``"64.000"`` as ``64``), and cells
    stripped of surrounding spaces (tabulate 0.10 no longer reads the ``PRESERVE_WHITESPACE``
    switch torch sets)."""
    columns = [[c.strip() for c in col] for col in zip(*rows)] if rows else [() for _ in header]
    printed = []
    for cells in columns:
        kinds = {_number_kind(c) for c in cells}
        if str in kinds or not kinds:
            printed.append([str(c) for c in cells])
        elif float in kinds:
            printed.append([format(float(c), "g") for c in cells])
        else:
            printed.append([str(int(c)) for c in cells])
    widths = [max([len(h) + 2] + [len(c) for c in cells]) for h, cells in zip(header, printed)]

    def line(cells):
        return "  ".join(c.ljust(w) if a == "left" else c.rjust(w) for c, w, a in zip(cells, widths, align))

    lines = [line(header), "  ".join("-" * w for w in widths)]
    lines += [line(row) for row in zip(*printed)] if rows else []
    return "\n".join(lines)


# ---- what torch's decomposition of an op would run ---------------------------------------------------
class _Operand:
    """What torch's matmul and linear look at in an operand: its shape, strides and requires_grad."""

    __slots__ = ("shape", "strides", "requires_grad")

    def __init__(self, shape, strides, requires_grad):
        self.shape, self.strides, self.requires_grad = tuple(shape), tuple(strides), requires_grad

    @classmethod
    def of(cls, tensor, requires_grad=None):
        return cls(tensor.shape, tensor.stride(), tensor.requires_grad if requires_grad is None else requires_grad)

    @classmethod
    def contiguous(cls, shape, requires_grad=False):
        strides, step = [], 1
        for size in reversed(shape):
            strides.append(step)
            step *= max(size, 1)
        return cls(shape, tuple(reversed(strides)), requires_grad)

    @property
    def mT(self):
        if len(self.shape) < 2:
            return self
        return _Operand(self.shape[:-2] + self.shape[:-3:-1], self.strides[:-2] + self.strides[:-3:-1],
                        self.requires_grad)

    def is_contiguous(self) -> bool:
        step = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides)):
            if size == 0:
                return True
            if size != 1 and stride != step:
                return False
            step *= size
        return True


def _should_fold(a: _Operand, b: _Operand) -> bool:
    """torch's matmul rule: fold the batch dimensions of the larger operand into a matrix (one mm)
    rather than broadcasting into a bmm, when that costs no copy or saves a large gradient."""
    a_larger = len(a.shape) >= len(b.shape)
    t1 = a if a_larger else b.mT
    dim_t2 = len(b.shape) if a_larger else len(a.shape)
    if not (len(t1.shape) >= 3 and dim_t2 <= 2):
        return False
    if (b if a_larger else a).requires_grad:
        return True
    if len(a.shape) == 2:
        return False
    if prod(t1.shape) == 0:
        return True
    for i in range(len(t1.shape) - 2):
        if t1.strides[i] != t1.strides[i + 1] * t1.shape[i + 1]:
            return False
    return True


def _broadcast(s1, s2) -> tuple:
    n = max(len(s1), len(s2))
    s1, s2 = (1,) * (n - len(s1)) + tuple(s1), (1,) * (n - len(s2)) + tuple(s2)
    return tuple(x if y == 1 else y for x, y in zip(s1, s2))


def _matmul_calls(a: _Operand, b: _Operand) -> list:
    """The counted ATen calls of ``torch.matmul(a, b)``: ``(operator, argument shapes)``, with a third
    item ``"swapped"`` where torch computes the product as ``(b.mT @ a.mT).mT``."""
    d1, d2 = len(a.shape), len(b.shape)
    if d2 == 1 and d1 <= 2:                       # dot, mv
        return []
    if d1 == 1 and d2 == 2:
        return [(_MM, ((1, a.shape[0]), b.shape))]
    if d1 == 2 and d2 == 2:
        return [(_MM, (a.shape, b.shape))]
    if _should_fold(a, b):
        if d1 >= d2:
            if d2 == 1:
                return []                         # mv on the folded matrix
            return [(_MM, ((prod(a.shape[:-1]), a.shape[-1]), b.shape))]
        if d1 == 1:
            return []
        t1 = b.mT                                 # (a @ b) computed as (b.mT @ a.mT).mT
        return [(_MM, ((prod(t1.shape[:-1]), t1.shape[-1]), a.mT.shape), "swapped")]
    n = a.shape[-2] if d1 > 1 else 1
    k = a.shape[-1]
    p = b.shape[-1] if d2 > 1 else 1
    k2 = b.shape[-2] if d2 > 1 else b.shape[0]
    batch = prod(_broadcast(a.shape[:-2] if d1 > 1 else (), b.shape[:-2] if d2 > 1 else ()))
    return [(_BMM, ((batch, n, k), (batch, k2, p)))]


def _linear_calls(x: _Operand, w_shape, w_needs_grad: bool, bias_shape) -> list:
    """The counted ATen calls of ``F.linear``: one addmm where torch fuses the bias (a 2-D input, or
    a contiguous one with a 1-D bias), else matmul with the transposed weight."""
    wt = _Operand((w_shape[1], w_shape[0]), (1, w_shape[1]), w_needs_grad)
    if bias_shape is not None and (len(x.shape) == 2 or (x.is_contiguous() and len(bias_shape) == 1)):
        return [(_ADDMM, (bias_shape, (prod(x.shape[:-1]), x.shape[-1]), wt.shape))]
    return _matmul_calls(x, wt)


def _chain_products(shapes: list) -> list:
    """The matrix products of torch's multi_dot, in the order it runs them: the cheapest
    parenthesization (the classic dynamic programme over the chain)."""
    n = len(shapes)
    dims = [shapes[0][0]] + [s[1] for s in shapes]
    split = _chain_order(dims)
    products = []

    def order(i, j):
        if i == j:
            return (dims[i], dims[i + 1])
        k = split[i][j]
        left, right = order(i, k), order(k + 1, j)
        products.append((left, right))
        return (left[0], right[1])

    order(0, n - 1)
    return products


def _flash_eligible(q, k, v, attn_mask, dropout_p, enable_gqa) -> bool:
    """Whether torch's CPU backend selection sends this attention to its flash kernel (whose FLOPs
    torch's counter does not count) rather than to the math path (two matmuls): the choice
    ``scaled_dot_product_attention`` itself made (its mask, grouped heads and sdpa_kernel included)."""
    mask = _attention._additive_mask(attn_mask, q._ndarray.dtype)
    return _attention._use_flash(q, k, v, mask, dropout_p, enable_gqa)


def _arg(op, index, name, default=None):
    args, kwargs = op.args, op.kwargs
    if index < len(args):
        return args[index]
    return kwargs.get(name, default)


def _conv_calls(op, inputs, outputs, transposed):
    x, w = inputs[0], inputs[1]
    bias = _arg(op, 2, "bias")
    out = outputs[0]
    n = w.dim() - 2
    x_shape, out_shape = tuple(x.shape), tuple(out.shape)
    if len(x_shape) == n + 1:                     # unbatched: torch adds the batch dimension first
        x_shape, out_shape = (1,) + x_shape, (1,) + out_shape
    return [(_CONVOLUTION, (x_shape, tuple(w.shape), bias, None, None, None, transposed, None, None), out_shape)]


def _sdpa_calls(q, k, v, dropout_p, enable_gqa, flash):
    if flash or any(0 in t.shape for t in (q, k, v)):
        return []
    rg = q.requires_grad or k.requires_grad
    if enable_gqa and q.dim() >= 3 and k.shape[-3] != q.shape[-3]:
        groups = q.shape[-3] // k.shape[-3]
        k_shape = k.shape[:-3] + (k.shape[-3] * groups,) + k.shape[-2:]
        v_shape = v.shape[:-3] + (v.shape[-3] * groups,) + v.shape[-2:]
    else:
        k_shape, v_shape = tuple(k.shape), tuple(v.shape)
    scores = _matmul_calls(_Operand.contiguous(q.shape, rg), _Operand.contiguous(k_shape, rg).mT)
    score_shape = _broadcast(q.shape[:-2], k_shape[:-2]) + (q.shape[-2], k_shape[-2])
    values = _matmul_calls(_Operand.contiguous(score_shape, rg), _Operand.contiguous(v_shape, v.requires_grad))
    return [(p, shapes, None) for p, shapes in scores + values]


def _einsum_path(equation: str, shapes: list):
    """The labels of each operand and output, and the order torch contracts the operands in (pairs
    of positions in the shrinking operand list, as opt_einsum reports them)."""
    lhs, _, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        return None
    ell_len = max((len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes) if "..." in t), default=0)
    ell = "".join(chr(0x100 + i) for i in range(ell_len))
    labels = []
    for t, s in zip(terms, shapes):
        if "..." in t:
            extra = len(s) - len(t.replace("...", ""))
            t = t.replace("...", ell[ell_len - extra:] if extra else "")
        labels.append(t)
    if "->" in equation:
        out = rhs.replace("...", ell)
    else:
        counts = defaultdict(int)
        for t in labels:
            for c in t:
                counts[c] += 1
        out = ell + "".join(sorted(c for c in counts if counts[c] == 1 and c not in ell))
    path = [(0, 1)] * (len(shapes) - 1)
    if len(shapes) > 2:
        try:
            import opt_einsum
        except ImportError:
            opt_einsum = None
        if opt_einsum is not None:
            try:
                path = opt_einsum.contract_path(equation, *[tuple(s) for s in shapes], shapes=True,
                                                optimize="auto")[0]
            except Exception:  # noqa: BLE001 - an equation opt_einsum refuses: torch then contracts left to right
                path = [(0, 1)] * (len(shapes) - 1)
    return labels, out, path


def _einsum_contractions(equation: str, shapes: list, needs_grad: list):
    """The batched products of torch's einsum: ``(bmm shapes, left needs grad, right needs grad)`` per
    contraction of two operands that sums over at least one label (one without a summed label is a
    multiplication, and counts nothing)."""
    found = _einsum_path(equation, shapes)
    if found is None:
        return []
    labels, out, path = found
    sizes = {}
    for t, s in zip(labels, shapes):
        for c, n in zip(t, s):
            sizes[c] = max(sizes.get(c, 1), n)
    operands = [(set(t), g) for t, g in zip(labels, needs_grad)]
    products = []
    for pair in path:
        i, j = sorted(pair)[:2] if len(pair) == 2 else (pair[0], None)
        if j is None:
            continue
        (a, ga), (b, gb) = operands[i], operands[j]
        rest = [o for n, o in enumerate(operands) if n not in (i, j)]
        keep = set(out).union(*[o[0] for o in rest]) if rest else set(out)
        a = {c for c in a if c in b or c in keep}
        b = {c for c in b if c in a or c in keep}
        summed = (a & b) - keep
        if summed:
            def size(group):
                return prod(sizes[c] for c in group)
            batch, left, right = size((a & b) - summed), size(a - b), size(b - a)
            products.append((((batch, left, size(summed)), (batch, size(summed), right)), ga, gb))
        operands = rest + [((a | b) - summed, ga or gb)]
    return products


# ops hookgrad reports whose ATen decomposition torch counts, but which this counter does not
# translate: counting nothing for them would be silently wrong, so they warn
_UNTRANSLATED = frozenset((
    "cdist", "inner", "linalg_matrix_power", "matrix_power", "conv_tbc", "embedding_bag",
    "transformer_encoder_layer_fwd",
))

# backward nodes whose torch formula runs matrix products that this counter does not translate
_UNTRANSLATED_NODES = ("LinalgInvExBackward0", "LinalgSolveExBackward0", "LinalgCholeskyExBackward0",
                       "LinalgPinvBackward0", "LinalgEighBackward0", "LinalgSvdBackward0", "LinalgQrBackward0",
                       "LinalgLuFactorExBackward0", "LinalgLuBackward0", "LinalgLuSolveBackward0",
                       "LinalgLstsqBackward0", "LinalgMatrixExpBackward0", "LinalgEigBackward0",
                       "TriangularSolveBackward0", "LinalgSolveTriangularBackward0", "CholeskySolveBackward0",
                       "CholeskyInverseBackward0", "LinalgHouseholderProductBackward0", "InverseBackward0",
                       "PinverseBackward0", "MatrixExpBackward0")


_OP_NAMES: set = set()


def _op_names() -> set:
    """The names hookgrad's op hooks report ops under (a custom Function reports its class name)."""
    if not _OP_NAMES:
        from ..hooks._ops import _all_op_functions
        _OP_NAMES.update(entry.name for entry in _all_op_functions())
        _OP_NAMES.update(("rnn_tanh", "rnn_relu", "lstm", "gru", "rnn_tanh_cell", "rnn_relu_cell"))
    return _OP_NAMES


def _is_custom_function(op) -> bool:
    """``op`` is a custom ``autograd.Function``'s apply (reported with its class as first argument)."""
    from ..autograd.function import Function
    cls = op.args[0] if op.args else None
    return isinstance(cls, type) and issubclass(cls, Function)


class _Translator:
    """Turns hookgrad's ops and graph nodes into the ATen calls torch's would make."""

    def __init__(self, counter: "FlopCounterMode"):
        self.counter = counter
        self.uncounted_nodes: weakref.WeakSet = weakref.WeakSet()
        self.node_info: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.warned: set = set()
        self.packets: dict = {}    # op name -> torch.ops.aten packet of that name, None where there is none
        # product node -> torch's forward call it stands for (its backward is counted from that)
        self.overrides: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        # a convolution hookgrad computed without a ConvolutionBackward0: its output node -> the
        # convolution_backward call torch's graph would make there
        self.conv_overrides: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        # an output node of an op whose whole backward is counted when the first of them runs
        self.bulk: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    # -- forward ----------------------------------------------------------------------------------
    def forward(self, op, inputs, outputs):
        if _DisableTorchDispatch.active():
            return
        if _engine.current_task() is not None and not _hook_context.RECOMPUTING[0] \
                and not _hook_context.FUNCTION_BACKWARD[0]:
            # a backward formula's ops, reported because they build a graph (create_graph=True):
            # the node that runs them is counted as torch's formula already
            return
        name = str(op)
        handler = getattr(self, "_fw_" + name, None)
        if handler is not None:
            for packet, args, out in handler(op, inputs, outputs):
                self.counter._count_flops(packet, out, args, {})
            return
        if op.node is not None:
            # products hookgrad's implementation of this op recorded are no ATen call of torch's
            self._mark_inner_products(op.node, inputs, _INNER_KINDS)
        if _is_custom_function(op):
            return       # the ops its forward and backward call are counted, as torch counts them
        if name in _UNTRANSLATED or name not in _op_names():
            self._warn(name)
            return
        packet = self.packets.get(name, False)
        if packet is False:
            try:
                packet = getattr(aten, name)
            except AttributeError:
                packet = None
            self.packets[name] = packet
        if packet is not None and packet in self.counter.flop_registry:
            out = outputs[0] if len(outputs) == 1 else outputs
            self.counter._count_flops(packet, out, tuple(op.args), dict(op.kwargs))

    def _warn(self, name):
        if name not in self.warned:
            self.warned.add(name)
            warnings.warn(f"FlopCounterMode: hookgrad does not translate '{name}' into the ATen operators torch "
                          "counts, so its FLOPs are not counted", UserWarning, stacklevel=6)

    def _fw_mm(self, op, inputs, outputs):
        return [(_MM, (inputs[0], inputs[1]), outputs[0])]

    def _fw_bmm(self, op, inputs, outputs):
        return [(_BMM, (inputs[0], inputs[1]), outputs[0])]

    def _fw_addmm(self, op, inputs, outputs):
        return [(_ADDMM, tuple(inputs[:3]), outputs[0])] if len(inputs) >= 3 else []

    def _fw_baddbmm(self, op, inputs, outputs):
        return [(_BADDBMM, tuple(inputs[:3]), outputs[0])] if len(inputs) >= 3 else []

    def _fw_matmul(self, op, inputs, outputs):
        a, b = (_arg(op, 0, "input"), _arg(op, 1, "other"))
        if not isinstance(a, Tensor) or not isinstance(b, Tensor):
            a, b = inputs[0], inputs[1]
        return self._products(op, inputs, _matmul_calls(_Operand.of(a), _Operand.of(b)))

    def _fw_linear(self, op, inputs, outputs):
        x, w = _arg(op, 0, "input"), _arg(op, 1, "weight")
        bias = _arg(op, 2, "bias")
        w_grad = w.requires_grad   # weight.t() is a view: it requires grad under no_grad too
        return self._products(op, inputs, _linear_calls(_Operand.of(x), w.shape, w_grad,
                                                        None if bias is None else tuple(bias.shape)))

    def _conv(self, op, inputs, outputs, transposed):
        calls = _conv_calls(op, inputs, outputs, transposed)
        node = op.node
        if node is not None:
            (x_shape, w_shape, *_), out_shape = calls[0][1], calls[0][2]
            convs = self._mark_inner_products(node, inputs, ("ConvolutionBackward0",))
            if convs:
                for conv in convs:
                    self.uncounted_nodes.discard(conv)
                    self.node_info[conv] = (x_shape, w_shape, transposed)
            else:
                # hookgrad computed it from other ops: count torch's one backward call at the
                # output's node, for the operands that need grad
                self._mark_inner_products(node, inputs)
                bias = _arg(op, 2, "bias")
                mask = [inputs[0].requires_grad, inputs[1].requires_grad, bias is not None and bias.requires_grad]
                outs = (x_shape if mask[0] else None, w_shape if mask[1] else None,
                        tuple(bias.shape) if mask[2] else None)
                self.conv_overrides[node] = ((out_shape, x_shape, w_shape, None, None, None, None, transposed, None,
                                              None, mask), outs)
        return calls

    def _fw_conv1d(self, op, inputs, outputs):
        return self._conv(op, inputs, outputs, False)

    _fw_conv2d = _fw_conv3d = _fw_conv1d

    def _fw_conv_transpose1d(self, op, inputs, outputs):
        return self._conv(op, inputs, outputs, True)

    _fw_conv_transpose2d = _fw_conv_transpose3d = _fw_conv_transpose1d

    def _fw_convolution(self, op, inputs, outputs):
        return self._conv(op, inputs, outputs, bool(_arg(op, 6, "transposed", False)))

    def _fw_lstm_cell(self, op, inputs, outputs):
        """A recurrent cell: torch's runs two linears, the input's and the state's projection."""
        cell, x = op.args[0], _arg(op, 1, "input")
        rows = x.shape[0] if x.dim() == 2 else 1
        calls = []
        for w, b, width in ((cell.weight_ih, cell.bias_ih, cell.input_size), (cell.weight_hh, cell.bias_hh,
                                                                               cell.hidden_size)):
            wt = (width, w.shape[0])
            calls.append((_ADDMM, (tuple(b.shape), (rows, width), wt)) if b is not None else
                         (_MM, ((rows, width), wt)))
        return [(c[0], c[1], None) for c in calls]

    _fw_gru_cell = _fw_rnn_tanh_cell = _fw_rnn_relu_cell = _fw_lstm_cell

    def _fw_gru(self, op, inputs, outputs):
        """A recurrent layer stack as torch's CPU kernels compose it: per layer and direction, the
        input projection of all steps at once, then per step the state's projection (and an LSTM's
        output projection, with ``proj_size``), on the rows still running for packed input. A
        float32 LSTM that oneDNN's fused layer runs counts nothing (torch has no formula for it)."""
        from ..nn._functional.recurrent import _uses_onednn
        rnn, x = op.args[0], op.args[1]
        batch_sizes = op.args[3] if len(op.args) > 3 else None
        if not isinstance(x, Tensor) or x.dim() != (3 if batch_sizes is None else 2):
            self._warn(str(op))
            return []
        if rnn.mode == "LSTM" and batch_sizes is None and not rnn.proj_size and _uses_onednn(x):
            return []
        gates = {"LSTM": 4, "GRU": 3}.get(rnn.mode, 1)
        hidden, directions = rnn.hidden_size, 2 if rnn.bidirectional else 1
        width_out = rnn.proj_size or hidden
        if batch_sizes is None:
            steps, batch = (x.shape[1], x.shape[0]) if rnn.batch_first else (x.shape[0], x.shape[1])
            step_rows = [batch] * steps
            # the layer's input, time-major as torch's kernel sees it (batch_first: a transposed view)
            layer_input = _Operand.of(x.transpose(0, 1) if rnn.batch_first else x)
            later_shape = (steps, batch, width_out * directions)
        else:
            step_rows = [int(b) for b in batch_sizes.tolist()]
            layer_input = _Operand.of(x)
            later_shape = (x.shape[0], width_out * directions)
        calls = []
        for layer in range(rnn.num_layers):
            if layer:
                layer_input = _Operand.contiguous(later_shape)
            width = layer_input.shape[-1]
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                w_ih = getattr(rnn, "weight_ih" + suffix)
                bias = (gates * hidden,) if rnn.bias else None
                calls.extend(_linear_calls(layer_input, (gates * hidden, width), w_ih.requires_grad, bias))
                for rows in step_rows:
                    calls.append((_ADDMM, (bias, (rows, width_out), (width_out, gates * hidden))) if rnn.bias
                                 else (_MM, ((rows, width_out), (width_out, gates * hidden))))
                    if rnn.proj_size:
                        calls.append((_MM, ((rows, hidden), (hidden, rnn.proj_size))))
        # the layers' graph is torch's own composition (addmm, mm and their nodes), so the backward's
        # products are counted as its nodes run
        return [(c[0], c[1], None) for c in calls]

    _fw_rnn_tanh = _fw_rnn_relu = _fw_lstm = _fw_gru

    def _fw_addbmm(self, op, inputs, outputs):
        # torch's addbmm kernel is not counted, but its backward's batched products are
        if len(inputs) >= 3:
            self._products(op, inputs, [(_BMM, (tuple(inputs[1].shape), tuple(inputs[2].shape)))])
        return []

    def _fw_tensordot(self, op, inputs, outputs):
        a, b = inputs[0], inputs[1]
        dims = _arg(op, 2, "dims", 2)
        if isinstance(dims, int):
            dims_a, dims_b = list(range(a.dim() - dims, a.dim())), list(range(dims))
        else:
            dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
        dims_a = [d % max(a.dim(), 1) for d in dims_a]
        dims_b = [d % max(b.dim(), 1) for d in dims_b]
        inner = prod(a.shape[d] for d in dims_a)
        free_a = prod(s for i, s in enumerate(a.shape) if i not in dims_a)
        free_b = prod(s for i, s in enumerate(b.shape) if i not in dims_b)
        return self._products(op, inputs, [(_MM, ((free_a, inner), (inner, free_b)))])

    def _fw_linalg_multi_dot(self, op, inputs, outputs):
        shapes = [tuple(t.shape) for t in inputs]
        if len(shapes) < 2:
            return []
        if len(shapes[0]) == 1:
            shapes[0] = (1,) + shapes[0]
        if len(shapes[-1]) == 1:
            shapes[-1] = shapes[-1] + (1,)
        if len(shapes) == 2:
            return [(_MM, tuple(shapes), None)]
        return [(_MM, pair, None) for pair in _chain_products(shapes)]

    _fw_chain_matmul = _fw_linalg_multi_dot

    def _fw_einsum(self, op, inputs, outputs):
        equation = _arg(op, 0, "equation")
        if not isinstance(equation, str):
            return []
        products = _einsum_contractions(equation, [tuple(t.shape) for t in inputs],
                                        [t.requires_grad for t in inputs])
        if op.node is not None:
            self.node_info[op.node] = products
        return [(_BMM, shapes, None) for shapes, _, _ in products]

    def _fw_scaled_dot_product_attention(self, op, inputs, outputs):
        q, k, v = _arg(op, 0, "query"), _arg(op, 1, "key"), _arg(op, 2, "value")
        dropout_p = _arg(op, 4, "dropout_p", 0.0)
        enable_gqa = op.kwargs.get("enable_gqa", _arg(op, 7, "enable_gqa", False))
        flash = _flash_eligible(q, k, v, _arg(op, 3, "attn_mask"), dropout_p, enable_gqa)
        if flash and op.node is not None:
            self._mark_inner_products(op.node, inputs, _ATTENTION_PRODUCTS)
        return _sdpa_calls(q, k, v, dropout_p, enable_gqa, flash)

    def _fw_multi_head_attention_forward(self, op, inputs, outputs):
        p = _MhaArgs(op)
        if _mha_fast_path(p, op.node is not None):
            return []
        calls = []
        query, key, value = p.query, p.key, p.value
        batched = query.dim() == 3
        if not batched:
            query, key, value = (_Operand(t.shape[:1] + (1,) + t.shape[1:], t.stride()[:1] + (0,) + t.stride()[1:],
                                          t.requires_grad) for t in (query, key, value))
            same_qk, same_kv = p.query is p.key, p.key is p.value
        else:
            same_qk, same_kv = p.query is p.key, p.key is p.value
            query, key, value = (_Operand.of(t) for t in (query, key, value))
        embed = p.embed_dim

        def bias_of(out_features):
            return None if p.in_proj_bias is None else (out_features,)

        if not p.use_separate_proj_weight:
            w_grad = p.in_proj_weight.requires_grad   # its slices are views: they require grad as it does
            if same_qk and same_kv:
                calls += _linear_calls(query, (3 * embed, embed), w_grad, bias_of(3 * embed))
            else:
                calls += _linear_calls(query, (embed, embed), w_grad, bias_of(embed))
                if same_kv:
                    calls += _linear_calls(key, (2 * embed, embed), w_grad, bias_of(2 * embed))
                else:
                    calls += _linear_calls(key, (embed, embed), w_grad, bias_of(embed))
                    calls += _linear_calls(value, (embed, embed), w_grad, bias_of(embed))
        else:
            for x, w in ((query, p.q_proj_weight), (key, p.k_proj_weight), (value, p.v_proj_weight)):
                calls += _linear_calls(x, tuple(w.shape), w.requires_grad, bias_of(w.shape[0]))
        tgt, bsz = query.shape[0], query.shape[1]
        src = key.shape[0] if p.static_k is None else p.static_k.shape[1]
        if p.bias_k is not None and p.static_k is None:
            src += 1
        if p.add_zero_attn:
            src += 1
        head_dim = embed // p.num_heads
        bh = bsz * p.num_heads
        dropout_p = p.dropout_p if p.training else 0.0
        scores = ((bh, tgt, head_dim), (bh, head_dim, src))
        context = ((bh, tgt, src), (bh, src, head_dim))
        if p.need_weights:   # explicit products, the mask added by baddbmm
            calls.append((_BADDBMM, (None,) + scores) if p.masked else (_BMM, scores))
            calls.append((_BMM, context))
        elif dropout_p > 0.0:
            # sdpa on (N, H, L, E) views; with dropout it takes the math path (two matmuls)
            calls += [(_BMM, scores), (_BMM, context)]
        elif op.node is not None:
            self._mark_inner_products(op.node, inputs, _ATTENTION_PRODUCTS)
        calls += _linear_calls(_Operand.contiguous((tgt * bsz, embed)), tuple(p.out_proj_weight.shape),
                               p.out_proj_weight.requires_grad,
                               None if p.out_proj_bias is None else tuple(p.out_proj_bias.shape))
        return [(c[0], c[1], None) for c in calls]

    def _products(self, op, inputs, calls):
        """Forward calls of a matrix product op; its backward is counted as torch's (one product per
        operand that gets a gradient) at the product node hookgrad recorded, whatever its kind."""
        if op.node is not None:
            found = self._mark_inner_products(op.node, inputs)
            if len(calls) == 1:
                # no product node: hookgrad computed it as one node of its own (tensordot's
                # EinsumBackward0), whose first two gradients are the operands'
                self.overrides[found[0] if found else op.node] = calls[0]
        return [(c[0], c[1], None) for c in calls]

    def _mark_inner_products(self, node, inputs, kinds=None):
        """The batched products an attention op recorded are torch's flash kernel there: their
        backward counts nothing."""
        stop = {t.grad_fn for t in inputs if t.grad_fn is not None}
        seen, todo, found = set(), [node], []
        while todo:
            n = todo.pop()
            if n is None or n in seen or n in stop:
                continue
            seen.add(n)
            kind = type(n).__name__
            if kind in (kinds or _PRODUCT_NODES):
                self.uncounted_nodes.add(n)
                found.append(n)
            todo.extend(f for f, _ in n.next_functions)
        return found

    # -- backward ---------------------------------------------------------------------------------
    def backward(self, node, grad_inputs, grad_outputs):
        if _DisableTorchDispatch.active():
            return
        record = self.bulk.get(node)
        if record is not None:
            calls, passes = record
            task = _engine.current_task()
            if task is not None and task.id not in passes:
                passes.add(task.id)
                for packet, args, out in calls:
                    self.counter._count_flops(packet, out, args, {})
            return
        grad = grad_outputs[0] if grad_outputs else None
        if grad is None:
            return
        if node in self.conv_overrides:
            args, outs = self.conv_overrides[node]
            self.counter._count_flops(_CONVOLUTION_BACKWARD, outs, args, {})
            return
        call = self.overrides.get(node)
        if call is not None:
            calls = self._product_grads(node, grad_inputs, call)
        else:
            handler = getattr(self, "_bw_" + type(node).__name__, None)
            if handler is None and type(node).__name__ in _UNTRANSLATED_NODES:
                self._warn(type(node).__name__)
            if handler is None or node in self.uncounted_nodes:
                return
            calls = handler(node, grad_inputs, grad)
        for packet, args, out in calls:
            self.counter._count_flops(packet, out, args, {})

    @staticmethod
    def _product_grads(node, grad_inputs, call):
        """torch's backward of the forward product ``call``: ``grad @ right^T`` for the left operand
        and ``left^T @ grad`` for the right, each where that operand gets a gradient."""
        packet, shapes = call[0], call[1]
        left, right = shapes[-2], shapes[-1]
        packet = _MM if packet in (_MM, _ADDMM) else _BMM
        i, j = _PRODUCT_NODES.get(type(node).__name__, (0, 1))
        wants = [grad_inputs[i] is not None, grad_inputs[j] is not None]
        if len(call) > 2:       # torch's left operand is hookgrad's right one
            wants.reverse()
        batch = tuple(left[:-2])
        m, k, n = left[-2], left[-1], right[-1]
        calls = []
        if wants[0]:
            calls.append((packet, (batch + (m, n), batch + (n, k)), None))
        if wants[1]:
            calls.append((packet, (batch + (k, m), batch + (m, n)), None))
        return calls

    @staticmethod
    def _mm_grads(grad, grad_a, grad_b, packet):
        calls = []
        if grad_a is not None:   # grad @ b^T
            calls.append((packet, (tuple(grad.shape), tuple(grad_a.shape[:-2]) + (grad.shape[-1], grad_a.shape[-1])),
                          grad_a))
        if grad_b is not None:   # a^T @ grad
            calls.append((packet, (tuple(grad_b.shape[:-2]) + (grad_b.shape[-2], grad.shape[-2]), tuple(grad.shape)),
                          grad_b))
        return calls

    def _bw_MmBackward0(self, node, gi, grad):
        return self._mm_grads(grad, gi[0], gi[1], _MM)

    def _bw_AddmmBackward0(self, node, gi, grad):
        return self._mm_grads(grad, gi[1], gi[2], _MM)

    def _bw_BmmBackward0(self, node, gi, grad):
        return self._mm_grads(grad, gi[0], gi[1], _BMM)

    def _bw_BaddbmmBackward0(self, node, gi, grad):
        return self._mm_grads(grad, gi[1], gi[2], _BMM)

    def _bw_ConvolutionBackward0(self, node, gi, grad):
        mask = [g is not None for g in (list(gi) + [None] * 3)[:3]]
        if not any(mask):
            return []
        info = self.node_info.get(node)
        if info is None:        # recorded before the counter was entered: what the node saved
            try:
                info = (tuple(node._saved_input.shape), tuple(node._saved_weight.shape), bool(node._saved_transposed))
            except (RuntimeError, AttributeError):
                return []
        x_shape, w_shape, transposed = info
        g_shape = tuple(grad.shape)
        if len(g_shape) == len(w_shape) - 1:     # unbatched
            g_shape = (1,) + g_shape
        outs = (x_shape if mask[0] else None, w_shape if mask[1] else None,
                tuple(gi[2].shape) if mask[2] else None)
        return [(_CONVOLUTION_BACKWARD, (g_shape, x_shape, w_shape, None, None, None, None, transposed, None, None,
                                         mask), outs)]

    def _bw_EinsumBackward0(self, node, gi, grad):
        products = self.node_info.get(node)
        if products is None:
            return []
        calls = []
        for (a, b), left, right in products:   # grad @ b^T and a^T @ grad: each the forward's product
            if left:
                calls.append((_BMM, ((a[0], a[1], b[2]), (b[0], b[2], b[1])), None))
            if right:
                calls.append((_BMM, ((a[0], a[2], a[1]), (a[0], a[1], b[2])), None))
        return calls


# graph nodes whose backward runs matrix products: where the operands' gradients are in grad_inputs
_PRODUCT_NODES = {"MmBackward0": (0, 1), "BmmBackward0": (0, 1), "AddmmBackward0": (1, 2),
                  "BaddbmmBackward0": (1, 2)}
_ATTENTION_PRODUCTS = ("BmmBackward0", "BaddbmmBackward0")
_INNER_KINDS = tuple(_PRODUCT_NODES) + ("ConvolutionBackward0",)


def _mha_fast_path(p: "_MhaArgs", grad_enabled: bool) -> bool:
    """Whether torch's ``nn.MultiheadAttention`` would have run its fused kernel (which its counter
    does not count) instead of ``F.multi_head_attention_forward``: torch's conditions, read off the
    module making this call."""
    from ..hooks import context
    from ..nn import MultiheadAttention

    module = context().module
    if not isinstance(module, MultiheadAttention):
        return False
    mask, padding = p.attn_mask, p.key_padding_mask
    if (mask is not None and mask.is_floating_point()) or (padding is not None and padding.is_floating_point()):
        return False
    fastpath = getattr(getattr(__import__("hookgrad").backends, "mha", None), "get_fastpath_enabled", None)
    if fastpath is not None and not fastpath():
        return False
    query = p.query
    if query.dim() != 3 or not (query is p.key and p.key is p.value):
        return False
    if module.in_proj_weight is None or module.in_proj_bias is None or module.training or module.num_heads % 2:
        return False
    if not module.batch_first or module.bias_k is not None or module.bias_v is not None or module.add_zero_attn:
        return False
    if not module._qkv_same_embed_dim:
        return False
    tensors = (query, module.in_proj_weight, module.in_proj_bias, module.out_proj.weight, module.out_proj.bias)
    # grad_enabled is whether the call recorded a graph: with grad mode on, any of these needing
    # grad records one
    return not (grad_enabled and any(t is not None and t.requires_grad for t in tensors))


class _MhaArgs:
    """The arguments of ``F.multi_head_attention_forward``, by name."""

    _NAMES = ("query", "key", "value", "embed_dim_to_check", "num_heads", "in_proj_weight", "in_proj_bias",
              "bias_k", "bias_v", "add_zero_attn", "dropout_p", "out_proj_weight", "out_proj_bias", "training",
              "key_padding_mask", "need_weights", "attn_mask", "use_separate_proj_weight", "q_proj_weight",
              "k_proj_weight", "v_proj_weight", "static_k", "static_v", "average_attn_weights", "is_causal")
    _DEFAULTS = {"training": True, "key_padding_mask": None, "need_weights": True, "attn_mask": None,
                 "use_separate_proj_weight": False, "q_proj_weight": None, "k_proj_weight": None,
                 "v_proj_weight": None, "static_k": None, "static_v": None, "average_attn_weights": True,
                 "is_causal": False}

    def __init__(self, op):
        values = dict(self._DEFAULTS)
        values.update(zip(self._NAMES, op.args))
        values.update(op.kwargs)
        self.__dict__.update(values)
        self.embed_dim = self.query.shape[-1]
        self.masked = self.attn_mask is not None or self.key_padding_mask is not None


class FlopCounterMode:
    """Counts the FLOPs run inside it, per ATen operator and per module (forward and backward).

    ``with FlopCounterMode(display=False) as counter: model(x).sum().backward()``, then
    ``counter.get_total_flops()``, ``counter.get_flop_counts()`` (``{"Global": {aten.mm: n, ...},
    "Sequential.0": {...}}``) and ``counter.get_table(depth)``. ``display=True`` prints the table on
    exit. ``custom_mapping`` maps operators to extra formulas (shapes in, FLOPs out).
    """

    def __init__(self, mods=None, depth: int = 2, display: bool = True, custom_mapping=None) -> None:
        self.flop_counts = defaultdict(lambda: defaultdict(int))
        self.depth = depth
        self.display = display
        self.mode = None
        if custom_mapping is None:
            custom_mapping = {}
        if mods is not None:
            warnings.warn("mods argument is not needed anymore, you can stop passing it", stacklevel=2)
        self.flop_registry = {
            **flop_registry,
            **{k: v if getattr(v, "_get_raw", False) else shape_wrapper(v) for k, v in custom_mapping.items()},
        }
        self.mod_tracker = ModuleTracker()

    def get_total_flops(self) -> int:
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self) -> dict:
        """``{module name: {operator: FLOPs}}``, with ``"Global"`` for everything."""
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_table(self, depth=None) -> str:
        """The counts as a text table, modules up to ``depth`` levels deep (default: the
        constructor's), each followed by its operators."""
        if depth is None:
            depth = self.depth
        if depth is None:
            depth = 999999
        header = ["Module", "FLOP", "% Total"]
        global_flops = self.get_total_flops()
        global_suffix = get_suffix_str(global_flops)
        is_global_subsumed = False

        def process_mod(mod_name, depth):
            nonlocal is_global_subsumed
            total_flops = sum(self.flop_counts[mod_name].values())
            is_global_subsumed |= total_flops >= global_flops
            padding = " " * depth
            rows = [[padding + mod_name, convert_num_with_suffix(total_flops, global_suffix),
                     convert_to_percent_str(total_flops, global_flops)]]
            for k, v in self.flop_counts[mod_name].items():
                rows.append([padding + " - " + str(k), convert_num_with_suffix(v, global_suffix),
                             convert_to_percent_str(v, global_flops)])
            return rows

        values = []
        for mod in sorted(self.flop_counts.keys()):
            if mod == "Global":
                continue
            mod_depth = mod.count(".") + 1
            if mod_depth > depth:
                continue
            values.extend(process_mod(mod, mod_depth - 1))
        # the Global row only when some FLOPs ran outside every module shown
        if "Global" in self.flop_counts and not is_global_subsumed:
            for value in values:
                value[0] = " " + value[0]
            values = process_mod("Global", 0) + values
        if len(values) == 0:
            values = [["Global", "0", "0%"]]
        try:
            import tabulate
        except ImportError:
            return _plain_table(values, header, ("left", "right", "right"))
        tabulate.PRESERVE_WHITESPACE = True
        return tabulate.tabulate(values, headers=header, colalign=("left", "right", "right"))

    # not reentrant, as torch's
    def __enter__(self):
        self.flop_counts.clear()
        self.mod_tracker.__enter__()
        self.mode = _FlopCounterMode(self)
        self.mode.__enter__()
        return self

    def __exit__(self, *args):
        if self.mode is None:
            raise AssertionError("Internal error: FlopCounter.__exit__ called but mode is None")
        self.mode.__exit__(*args)
        self.mode = None
        self.mod_tracker.__exit__()
        if self.display:
            print(self.get_table(self.depth))
        return False

    def _count_flops(self, func_packet, out, args, kwargs):
        formula = self.flop_registry.get(func_packet)
        if formula is not None:
            flop_count = formula(*args, **kwargs, out_val=out)
            for par in set(self.mod_tracker.parents):
                self.flop_counts[par][func_packet] += flop_count
        return out


class _FlopCounterMode:
    """The op hooks that feed a ``FlopCounterMode``."""

    def __init__(self, counter: FlopCounterMode) -> None:
        self.counter = counter
        self.translator = _Translator(counter)
        self.handle = None

    def __enter__(self):
        from ..hooks import register_op_hook
        self.handle = register_op_hook(forward=self.translator.forward, backward=self.translator.backward,
                                       inside_functions=True)
        return self

    def __exit__(self, *args):
        if self.handle is not None:
            self.handle.remove()
            self.handle = None
        return False
