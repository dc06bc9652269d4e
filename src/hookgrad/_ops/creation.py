"""Tensor factories and random numbers (a seeded NumPy generator behind torch's API)."""
from __future__ import annotations

import builtins
import math

import numpy as np

from .. import _dtype
from .._tensor import Tensor, _to_array, wrap
from ._declare import module_all, op


def _resolve_dtype(dtype, default=None):
    if dtype is None:
        return default if default is not None else _dtype.get_default_dtype()
    return _dtype.to_dtype(dtype)


def _finish(data, requires_grad=False, device=None):
    if device is not None:
        from .._device import require_cpu
        require_cpu(device)
    t = wrap(data)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _infer_dtype(data):
    """torch's rule for ``tensor(data)``: bools -> bool, ints -> int64, floats -> the default dtype."""
    arr = np.asarray(data)
    kind = arr.dtype.kind
    if kind == "b":
        return _dtype.bool
    if kind in "iu":
        return _dtype.int64 if not isinstance(data, np.ndarray) else _dtype.from_numpy_dtype(arr.dtype)
    if kind == "f":
        return _dtype.get_default_dtype() if not isinstance(data, np.ndarray) else _dtype.from_numpy_dtype(arr.dtype)
    if kind == "c":
        if isinstance(data, np.ndarray):
            return _dtype.from_numpy_dtype(arr.dtype)
        return _dtype.get_default_dtype().to_complex()
    raise TypeError(f"can't convert {type(data).__name__} of dtype {arr.dtype} to a tensor: only numbers, "
                    "booleans, (nested) sequences of them and NumPy arrays are supported")


@op(method=False)
def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    if isinstance(data, Tensor):
        import warnings
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
        arr = data._data
        dt = _dtype.to_dtype(dtype) if dtype is not None else data.dtype
    else:
        if isinstance(data, (list, tuple)) and data and builtins.any(isinstance(x, Tensor) for x in data):
            arr = np.array([_to_array(x) for x in data])
            dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.from_numpy_dtype(arr.dtype)
        else:
            dt = _dtype.to_dtype(dtype) if dtype is not None else _infer_dtype(data)
            arr = data
    try:
        out = np.array(arr, dtype=dt.np, copy=True)
    except (ValueError, TypeError) as e:
        raise ValueError(f"could not build a tensor from {type(data).__name__}: {e}") from None
    return _finish(out, requires_grad, device)


@op(method=False, aliases=("asarray",))
def as_tensor(data, dtype=None, device=None) -> Tensor:
    if isinstance(data, Tensor):
        return data if dtype is None else data.to(dtype)
    if isinstance(data, np.ndarray):
        t = from_numpy(data)
        return t if dtype is None else t.to(dtype)
    return tensor(data, dtype=dtype, device=device)


asarray = as_tensor


@op(method=False)
def from_numpy(array: np.ndarray) -> Tensor:
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    _dtype.from_numpy_dtype(array.dtype)  # raises for unsupported dtypes
    return wrap(array)


def _size(size, size_keyword=None):
    """A shape from ``*size`` positional ints or one sequence, or from the ``size=`` keyword."""
    if size_keyword is not None:
        if size:
            raise TypeError("got multiple values for argument 'size'")
        size = (size_keyword,)
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = s.item()
        if not isinstance(s, (int, np.integer)):
            raise TypeError(f"expected a sequence of integers as size, got {type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
        out.append(int(s))
    return tuple(out)


@op(method=False)
def zeros(*shape, size=None, dtype=None, device=None, requires_grad=False, out=None, layout=None) -> Tensor:
    return _finish(np.zeros(_size(shape, size), dtype=_resolve_dtype(dtype).np), requires_grad, device)


@op(method=False)
def ones(*shape, size=None, dtype=None, device=None, requires_grad=False, out=None, layout=None) -> Tensor:
    return _finish(np.ones(_size(shape, size), dtype=_resolve_dtype(dtype).np), requires_grad, device)


@op(method=False)
def empty(*shape, size=None, dtype=None, device=None, requires_grad=False, memory_format=None, out=None, layout=None) -> Tensor:
    return _finish(np.empty(_size(shape, size), dtype=_resolve_dtype(dtype).np), requires_grad, device)


@op(method=False)
def full(size, fill_value, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    if dtype is None:
        dtype = _dtype.scalar_dtype(fill_value) if not isinstance(fill_value, Tensor) else fill_value.dtype
    return _finish(np.full(_size((size,)), fill_value, dtype=_resolve_dtype(dtype).np), requires_grad, device)


def _like_dtype(t, dtype):
    return _resolve_dtype(dtype, t.dtype)


@op(method=False)
def zeros_like(t, *, dtype=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    return _finish(np.zeros(t._data.shape, dtype=_like_dtype(t, dtype).np), requires_grad, device)


@op(method=False)
def ones_like(t, *, dtype=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    return _finish(np.ones(t._data.shape, dtype=_like_dtype(t, dtype).np), requires_grad, device)


@op(method=False)
def empty_like(t, *, dtype=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    return _finish(np.empty(t._data.shape, dtype=_like_dtype(t, dtype).np), requires_grad, device)


@op(method=False)
def full_like(t, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    return _finish(np.full(t._data.shape, fill_value, dtype=_like_dtype(t, dtype).np), requires_grad, device)


@op(method=False)
def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if dtype is None:
        dtype = _dtype.int64 if builtins.all(isinstance(v, (int, np.integer)) for v in vals) else _dtype.get_default_dtype()
    dt = _dtype.to_dtype(dtype)
    if dt.is_complex:
        raise NotImplementedError(f'"arange_cpu" not implemented for \'{_dtype.scalar_type_name(dt.np)}\'')
    n = builtins.max(int(math.ceil((vals[1] - vals[0]) / vals[2])), 0)
    data = (vals[0] + np.arange(n, dtype=np.float64 if dt.np.kind == "f" else np.int64) * vals[2]).astype(dt.np)
    return _finish(data, requires_grad, device)


@op("range", method=False)
def range_(start, end, step=1, *, dtype=None, device=None, requires_grad=False):
    return arange(start, end + step / 2 if step > 0 else end - abs(step) / 2, step,
                  dtype=dtype or _dtype.get_default_dtype(), requires_grad=requires_grad)


@op(method=False)
def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    ends = [v.item() if isinstance(v, Tensor) else v for v in (start, end)]
    if dtype is None and builtins.any(isinstance(v, complex) for v in ends):
        dt = _dtype.get_default_dtype().to_complex()  # complex ends give a complex range, as torch
    else:
        dt = _resolve_dtype(dtype)
    if dt.is_complex:
        return _finish(np.linspace(complex(ends[0]), complex(ends[1]), int(steps)).astype(dt.np), requires_grad,
                       device)
    return _finish(np.linspace(start, end, int(steps)).astype(dt.np), requires_grad, device)


@op(method=False)
def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    dt = _resolve_dtype(dtype)
    return _finish(np.logspace(start, end, int(steps), base=base).astype(dt.np), requires_grad, device)


@op(method=False)
def eye(n, m=None, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _finish(np.eye(n, m if m is not None else n, dtype=_resolve_dtype(dtype).np), requires_grad, device)


@op(method=False)
def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    return wrap(np.stack(np.tril_indices(row, offset, col)).astype(np.int64))


@op(method=False)
def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    return wrap(np.stack(np.triu_indices(row, offset, col)).astype(np.int64))


@op(method=False)
def meshgrid(*tensors, indexing="ij"):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = [t.numel() for t in tensors]
    outs = []
    for i, t in enumerate(tensors):
        view_shape = [1] * len(tensors)
        view_shape[i] = shape[i]
        outs.append(t.reshape(view_shape).expand(shape))
    if indexing == "xy" and len(tensors) >= 2:
        outs = [o.transpose(0, 1) for o in outs]
    return tuple(outs)


@op()
def diag(x, diagonal=0):
    if x.ndim == 1:
        n = x.shape[0] + builtins.abs(diagonal)
        out = zeros(n, n, dtype=x.dtype)
        idx = np.arange(x.shape[0])
        rows, cols = (idx, idx + diagonal) if diagonal >= 0 else (idx - diagonal, idx)
        from .indexing import _index_put
        return _index_put(out, (rows, cols), x)
    return x.diagonal(diagonal).clone()


@op()
def diag_embed(x, offset=0, dim1=-2, dim2=-1):
    n = x.shape[-1] + builtins.abs(offset)
    out = zeros(*x.shape[:-1], n, n, dtype=x.dtype)
    idx = np.arange(x.shape[-1])
    from .indexing import _index_put
    from .._tensor import _wrap_dim
    nd = x.ndim + 1
    d1, d2 = _wrap_dim(dim1, nd), _wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    out = _index_put(out, (Ellipsis, idx, idx + offset) if offset >= 0 else (Ellipsis, idx - offset, idx), x)
    # built with the diagonal in the last two dims; torch puts them at dim1 and dim2
    return out if (d1, d2) == (nd - 2, nd - 1) else out.movedim((nd - 2, nd - 1), (d1, d2))


# ---- random numbers -------------------------------------------------------------------------
class Generator:
    """A seeded source of random numbers (``manual_seed``, ``seed``, ``initial_seed``, state)."""

    def __init__(self, device="cpu"):
        self._seed = 67280421310721
        self._rng = np.random.default_rng(self._seed)
        self.device = device

    def manual_seed(self, seed) -> "Generator":
        seed = int(seed)
        self._seed = seed
        self._rng = np.random.default_rng(seed & 0xFFFFFFFFFFFFFFFF)
        return self

    def seed(self) -> int:
        seed = int(np.random.SeedSequence().entropy) & 0xFFFFFFFFFFFFFFFF
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self):
        import pickle
        return wrap(np.frombuffer(pickle.dumps(self._rng.bit_generator.state), dtype=np.uint8).copy())

    def set_state(self, state) -> None:
        import pickle
        self._rng.bit_generator.state = pickle.loads(state._data.tobytes())


default_generator = Generator()


@op(method=False)
def manual_seed(seed) -> Generator:
    return default_generator.manual_seed(seed)


@op(method=False)
def seed() -> int:
    return default_generator.seed()


@op(method=False)
def initial_seed() -> int:
    return default_generator.initial_seed()


@op(method=False)
def get_rng_state():
    return default_generator.get_state()


@op(method=False)
def set_rng_state(state):
    default_generator.set_state(state)


def _rng(generator):
    return (generator or default_generator)._rng


@op(method=False)
def rand(*shape, size=None, generator=None, dtype=None, device=None, requires_grad=False, out=None) -> Tensor:
    dt = _resolve_dtype(dtype)
    shape = _size(shape, size)
    if dt.is_complex:  # both parts uniform on [0, 1), as torch
        pair = _rng(generator).random(shape + (2,), dtype=np.float64)
        return _finish((pair[..., 0] + 1j * pair[..., 1]).astype(dt.np), requires_grad, device)
    return _finish(_rng(generator).random(shape, dtype=np.float64).astype(dt.np), requires_grad, device)


@op(method=False)
def randn(*shape, size=None, generator=None, dtype=None, device=None, requires_grad=False, out=None) -> Tensor:
    dt = _resolve_dtype(dtype)
    shape = _size(shape, size)
    if dt.is_complex:  # torch's complex normal: each part has variance 1/2 (E|z|^2 = 1)
        pair = _rng(generator).standard_normal(shape + (2,)) * np.sqrt(0.5)
        return _finish((pair[..., 0] + 1j * pair[..., 1]).astype(dt.np), requires_grad, device)
    return _finish(_rng(generator).standard_normal(shape).astype(dt.np), requires_grad, device)


@op(method=False)
def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    if size is None:
        # randint(high, size)
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    dt = _resolve_dtype(dtype, _dtype.int64)
    return _finish(_rng(generator).integers(low, high, size=_size((size,))).astype(dt.np), requires_grad, device)


@op(method=False)
def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    dt = _resolve_dtype(dtype, _dtype.int64)
    return _finish(_rng(generator).permutation(int(n)).astype(dt.np), requires_grad, device)


@op(method=False)
def rand_like(t, *, dtype=None, generator=None, requires_grad=False) -> Tensor:
    return rand(t._data.shape, dtype=_like_dtype(t, dtype), generator=generator, requires_grad=requires_grad)


@op(method=False)
def randn_like(t, *, dtype=None, generator=None, requires_grad=False) -> Tensor:
    return randn(t._data.shape, dtype=_like_dtype(t, dtype), generator=generator, requires_grad=requires_grad)


@op(method=False)
def randint_like(t, low, high=None, *, dtype=None, generator=None) -> Tensor:
    if high is None:
        low, high = 0, low
    return randint(low, high, t._data.shape, dtype=_like_dtype(t, dtype), generator=generator)


@op(method=False)
def normal(mean=0.0, std=1.0, size=None, *, generator=None):
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        m = mean._data if isinstance(mean, Tensor) else mean
        s = std._data if isinstance(std, Tensor) else std
        shape = np.broadcast_shapes(np.shape(m), np.shape(s))
        dt = (mean if isinstance(mean, Tensor) else std)._data.dtype
        return wrap((_rng(generator).standard_normal(shape) * s + m).astype(dt))
    return wrap((_rng(generator).standard_normal(_size((size,))) * std + mean).astype(_dtype.get_default_dtype().np))


@op(method=False)
def bernoulli(p, *, generator=None):
    probs = p._data
    return wrap((_rng(generator).random(probs.shape) < probs).astype(probs.dtype))


@op()
def multinomial(probs, num_samples, replacement=False, *, generator=None):
    p = probs._data.astype(np.float64)
    rng = _rng(generator)
    rows = p.reshape(-1, p.shape[-1])
    out = []
    for row in rows:
        row = row / row.sum()
        out.append(rng.choice(len(row), size=num_samples, replace=replacement, p=row))
    res = np.asarray(out, dtype=np.int64)
    return wrap(res.reshape(p.shape[:-1] + (num_samples,)))


# ---- Tensor.new_*: factories with self's dtype --------------------------------------------------
@op(function=False)
def new_zeros(self, *shape, size=None, dtype=None, device=None, requires_grad=False, **kwargs):
    return zeros(*shape, size=size, dtype=dtype if dtype is not None else self.dtype, requires_grad=requires_grad)


@op(function=False)
def new_ones(self, *shape, size=None, dtype=None, device=None, requires_grad=False, **kwargs):
    return ones(*shape, size=size, dtype=dtype if dtype is not None else self.dtype, requires_grad=requires_grad)


@op(function=False)
def new_empty(self, *shape, size=None, dtype=None, device=None, requires_grad=False, **kwargs):
    return empty(*shape, size=size, dtype=dtype if dtype is not None else self.dtype, requires_grad=requires_grad)


@op(function=False)
def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    return full(size, fill_value, dtype=dtype if dtype is not None else self.dtype, requires_grad=requires_grad)


@op(function=False)
def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    return tensor(data, dtype=dtype if dtype is not None else self.dtype, requires_grad=requires_grad)


__all__ = module_all(globals()) + ["Generator", "default_generator"]
