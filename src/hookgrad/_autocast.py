"""CPU autocast's per-op casting, as torch's dispatcher applies it on the CPU.

Inside an enabled ``torch.autocast("cpu", dtype=...)`` block, the functions torch lists as
"lower precision" (matrix products, linear layers, convolutions, attention) cast their
floating-point tensor arguments to the block's dtype (bfloat16 by default; float64 tensors are
left alone, as in torch); the functions listed as "float32" (losses, most linear algebra,
some pooling and padding) cast low-precision arguments up to float32; and the "promote" ones
(cat, stack, index_copy) cast every floating argument to the widest floating type among them.
Everything else runs in whatever dtype its inputs have.

A cast is an ordinary recorded ``to()`` (a ToCopyBackward0 node); like torch, the cast of a leaf
that requires grad (a weight) is made once per outermost block and reused, so the weight's
gradient flows through one node however often the block uses it.

The casting is done by the public function wrappers (``_argcheck``) of the listed names, in
front of the op; with autocast off it costs them one attribute test.
"""
from __future__ import annotations

from . import _dtype
from ._tensor import Tensor

__all__ = ["STATE", "LOWER_PRECISION", "FLOAT32", "PROMOTE", "policy_of", "cast_arguments"]

# torch 2.13's CPU autocast lists (aten names; functional aliases map onto them below)
LOWER_PRECISION = frozenset({
    "conv1d", "conv2d", "conv3d", "bmm", "mm", "linalg_vecdot", "baddbmm", "addmm", "addbmm", "linear",
    "matmul", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu",
    "scaled_dot_product_attention", "vecdot", "chain_matmul", "multi_dot"})
FLOAT32 = frozenset({
    "avg_pool3d", "binary_cross_entropy", "grid_sample", "polar", "prod", "quantile", "nanquantile", "stft",
    "cdist", "trace", "view_as_complex", "cholesky", "cholesky_inverse", "cholesky_solve", "inverse", "lu_solve",
    "orgqr", "ormqr", "pinverse", "max_pool3d", "max_unpool2d", "max_unpool3d", "adaptive_avg_pool3d",
    "reflection_pad1d", "reflection_pad2d", "replication_pad1d", "replication_pad2d", "replication_pad3d",
    "mse_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d", "hinge_embedding_loss", "poisson_nll_loss",
    "smooth_l1_loss", "cross_entropy", "l1_loss", "huber_loss", "margin_ranking_loss", "soft_margin_loss",
    "triplet_margin_loss", "multi_margin_loss", "ctc_loss", "kl_div", "multilabel_margin_loss",
    "binary_cross_entropy_with_logits", "geqrf", "qr", "svd", "triangular_solve", "fractional_max_pool2d",
    "fractional_max_pool3d", "adaptive_max_pool3d", "cross_entropy_loss"})
PROMOTE = frozenset({"stack", "cat", "concat", "concatenate", "index_copy"})


class _State:
    __slots__ = ("enabled", "dtype", "cache", "depth", "cache_enabled")

    def __init__(self):
        self.enabled = False        # an enabled CPU autocast block is active
        self.dtype = _dtype.bfloat16
        self.cache = {}             # id(leaf) -> (leaf, its cast), for the outermost enabled block
        self.depth = 0              # nesting of autocast blocks (enabled or not) on the CPU
        self.cache_enabled = True


STATE = _State()


def policy_of(name: str):
    """"lower", "fp32", "promote" or None for a function named ``name`` (torch's or an alias)."""
    if name in LOWER_PRECISION:
        return "lower"
    if name in FLOAT32:
        return "fp32"
    if name in PROMOTE:
        return "promote"
    return None


def _cast(t: Tensor, dtype) -> Tensor:
    if STATE.cache_enabled and t._grad_fn_value is None and t._requires_grad:
        hit = STATE.cache.get(id(t))
        if hit is not None and hit[0] is t and hit[1].dtype == dtype:
            return hit[1]
        cast = t.to(dtype)
        STATE.cache[id(t)] = (t, cast)
        return cast
    return t.to(dtype)


def _lower(value):
    if isinstance(value, Tensor):
        dt = value.dtype
        if dt.is_floating_point and dt is not STATE.dtype and dt is not _dtype.float64:
            return _cast(value, STATE.dtype)
    return value


def _to_float32(value):
    if isinstance(value, Tensor):
        dt = value.dtype
        if dt.is_floating_point and dt.itemsize < 4:
            return value.to(_dtype.float32)
    return value


def _widest(values):
    widest = None
    for v in values:
        items = v if isinstance(v, (list, tuple)) else (v,)
        for t in items:
            if isinstance(t, Tensor) and t.dtype.is_floating_point:
                if widest is None or t.dtype.itemsize > widest.itemsize:
                    widest = t.dtype
    return widest


def cast_arguments(policy: str, args: tuple, kwargs: dict):
    """``args``/``kwargs`` with the tensors cast as ``policy`` asks (only while enabled)."""
    if policy == "lower":
        convert = _lower
    elif policy == "fp32":
        convert = _to_float32
    else:
        widest = _widest((*args, *kwargs.values()))
        if widest is None:
            return args, kwargs

        def convert(v):
            return v.to(widest) if isinstance(v, Tensor) and v.dtype.is_floating_point and v.dtype != widest else v

    def each(v):
        if isinstance(v, (list, tuple)) and v and isinstance(v[0], Tensor):
            return type(v)(convert(t) for t in v)
        return convert(v)

    return tuple(each(a) for a in args), {k: each(v) for k, v in kwargs.items()}
