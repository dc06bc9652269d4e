"""``make_tensor``: a tensor of a given shape and dtype filled with uniform random values from
``[low, high)``, with torch.testing's defaults per dtype (bool [0, 2), unsigned integers [0, 10),
signed integers [-9, 10), floating and complex [-9, 9)) and its argument checks. Values come
from hookgrad's global generator, so ``manual_seed`` makes them repeatable (they are not the
values torch would draw)."""
from __future__ import annotations

import collections.abc
import functools
import math
import warnings

__all__ = ["make_tensor"]


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False, memory_format=None):
    """A random tensor for tests; see the module docstring for the ranges and torch.testing
    for the arguments."""
    import hookgrad as hg

    is_bool = dtype == hg.bool
    is_integral = not is_bool and not dtype.is_floating_point and not dtype.is_complex
    is_floating = dtype.is_floating_point or dtype.is_complex

    def bounds(default_low, default_high, lowest, highest):
        lo = low if low is not None else default_low
        hi = high if high is not None else default_high
        if any(isinstance(v, float) and math.isnan(v) for v in (lo, hi)):
            raise ValueError(f"`low` and `high` cannot be NaN, but got low={lo} and high={hi}")
        if lo == hi and is_floating:
            warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex types is "
                          "deprecated since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.",
                          FutureWarning, stacklevel=3)
        elif lo >= hi:
            raise ValueError(f"`low` must be less than `high`, but got {lo} >= {hi}")
        elif hi < lowest or lo >= highest:
            raise ValueError(f"The value interval specified by `low` and `high` is [{lo}, {hi}), but {dtype} only "
                             f"supports [{lowest}, {highest})")
        lo, hi = min(max(lo, lowest), highest), min(max(hi, lowest), highest)
        if not is_floating:
            # integers: the low end rounds up to stay inside; randint's high is exclusive
            return math.ceil(lo), math.ceil(hi)
        return lo, hi

    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
                         f"noncontiguous={noncontiguous} and memory_format={memory_format}")
    if requires_grad and (is_bool or is_integral):
        raise ValueError("`requires_grad=True` is not supported for boolean and integral dtypes, but got "
                         f"dtype={dtype}")
    noncontiguous = noncontiguous and functools.reduce(lambda x, y: x * y, shape, 1) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])  # every other column of a wider tensor

    if is_bool:
        lo, hi = bounds(0, 2, 0, 2)
        result = hg.randint(lo, hi, shape, dtype=hg.int64).to(hg.bool)
    elif is_integral:
        info = hg.iinfo(dtype)
        lo, hi = bounds(-9, 10, info.min, info.max + (1 if dtype != hg.int64 else 0))
        result = hg.randint(lo, hi, shape, dtype=dtype)
    elif is_floating:
        info = hg.finfo(dtype)
        lo, hi = bounds(-9, 9, info.min, info.max)
        result = hg.empty(shape, dtype=dtype)
        if hi - lo >= info.max:  # the width itself would overflow: draw half-width, then double
            result.uniform_(lo / 2, hi / 2).mul_(2)
        else:
            result.uniform_(lo, hi)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by torch.testing.make_tensor(). To "
                        "request support, file an issue at: https://github.com/pytorch/pytorch/issues")

    if noncontiguous:
        result = result[..., ::2]
    if exclude_zero:
        replacement = hg.finfo(dtype).tiny if is_floating else 1
        result = hg.where(result == 0, hg.full((), replacement, dtype=result.dtype), result)
    if is_floating:
        result.requires_grad_(requires_grad)
    return result
