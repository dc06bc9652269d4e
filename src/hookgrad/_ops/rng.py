"""torch's CPU random streams: an mt19937 generator and the kernels that turn its words into samples.

A :class:`Generator` reproduces torch's CPU generator word for word (mt19937 seeded with the low 32
bits of the seed, 64-bit draws made of two words, high word first, and the cached second Box-Muller
sample), and its 5056-byte state has torch's layout, so states move between the two frameworks.

Each kernel function below draws what the matching torch CPU kernel draws, in the same order, and
applies the same arithmetic (fused multiply-adds where torch's compiled kernel fuses them).  The words
come from NumPy's MT19937 in bulk and are transformed with vectorised NumPy.  Two exceptions: float64
log/log1p/exp/tan go through :mod:`math` element by element (the C library's results, which NumPy's
SIMD loops do not always reproduce to the last bit), and the samplers that draw a data-dependent
number of uniforms per element (Poisson, gamma, binomial) and randperm's swaps run a Python loop.
"""
from __future__ import annotations

import math
import os

import numpy as np

__all__: list = []  # internal: the public names are declared in creation.py

DEFAULT_SEED = 67280421310721
STATE_BYTES = 5056
_LEGACY_STATE_BYTES = 5048
_MT_N = 624

_U64 = np.uint64
_MASK24 = _U64((1 << 24) - 1)
_MASK53 = _U64((1 << 53) - 1)


def _mt_key(seed32: int) -> np.ndarray:
    """mt19937's ``init_genrand``: the 624-word state for a 32-bit seed."""
    key = np.empty(_MT_N, dtype=np.uint32)
    word = seed32
    key[0] = word
    for i in range(1, _MT_N):
        word = (1812433253 * (word ^ (word >> 30)) + i) & 0xFFFFFFFF
        key[i] = word
    return key


def _as_seed(seed) -> int:
    """torch's seed rule: an integer that fits 64 bits, negative ones taken modulo 2**64."""
    if isinstance(seed, np.integer):
        raise TypeError("an integer is required")  # torch's words for NumPy integers here
    if not isinstance(seed, int):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    if seed < -(1 << 63) or seed >= (1 << 64):
        raise ValueError("Overflow when unpacking long long")
    return seed & 0xFFFFFFFFFFFFFFFF


class Generator:
    """A CPU random generator with torch's stream: same seed, same calls -> same numbers as torch."""

    def __init__(self, device="cpu"):
        from .._device import require_cpu
        require_cpu(device)
        self.device = _cpu_device()
        self.manual_seed(DEFAULT_SEED)

    # ---- seeding and state ----------------------------------------------------------------------
    def manual_seed(self, seed) -> "Generator":
        seed = _as_seed(seed)
        self._seed = seed
        self._mt = np.random.MT19937(0)
        self._mt.state = {"bit_generator": "MT19937", "state": {"key": _mt_key(seed & 0xFFFFFFFF), "pos": _MT_N}}
        self._untouched = True  # seeded and not drawn from yet: torch's state then says next=0
        self._double_normal = None  # the second Box-Muller sample torch keeps for the next draw
        self._float_normal = None
        return self

    def seed(self) -> int:
        seed = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self):
        from .._tensor import wrap
        return wrap(np.frombuffer(self._state_bytes(), dtype=np.uint8).copy())

    def set_state(self, new_state) -> "Generator":
        from .._tensor import Tensor
        if not isinstance(new_state, Tensor) or new_state._ndarray.dtype != np.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        self._load_state_bytes(np.ascontiguousarray(new_state._ndarray).reshape(-1).tobytes())
        return self

    def clone_state(self) -> "Generator":
        twin = Generator.__new__(Generator)
        twin.device = self.device
        twin._seed = self._seed
        twin._mt = np.random.MT19937(0)
        twin._mt.state = self._mt.state
        twin._untouched = self._untouched
        twin._double_normal, twin._float_normal = self._double_normal, self._float_normal
        return twin

    def __deepcopy__(self, memo):
        return self.clone_state()

    def __getstate__(self):
        return {"device": "cpu", "state": self._state_bytes()}

    def __setstate__(self, saved):
        self.device = _cpu_device()
        self.manual_seed(DEFAULT_SEED)
        self._load_state_bytes(saved["state"])

    def __repr__(self):
        return f"<hookgrad._C.Generator object at {hex(id(self))}>"

    def _state_bytes(self) -> bytes:
        state = self._mt.state["state"]
        pos = int(state["pos"])
        buf = bytearray(STATE_BYTES)
        left, nxt = (1, 0) if self._untouched else (_MT_N + 1 - pos, pos)
        np.frombuffer(buf, dtype="<u8", count=1, offset=0)[:] = self._seed
        np.frombuffer(buf, dtype="<i4", count=2, offset=8)[:] = (left, 1)
        np.frombuffer(buf, dtype="<u8", count=1, offset=16)[:] = nxt
        np.frombuffer(buf, dtype="<u8", count=_MT_N, offset=24)[:] = state["key"].astype(np.uint64)
        if self._double_normal is not None:
            np.frombuffer(buf, dtype="<f8", count=1, offset=5024)[:] = self._double_normal
            np.frombuffer(buf, dtype="<i4", count=1, offset=5040)[:] = 1
        if self._float_normal is not None:
            np.frombuffer(buf, dtype="<f4", count=1, offset=5048)[:] = self._float_normal
            buf[5052] = 1
        return bytes(buf)

    def _load_state_bytes(self, raw: bytes) -> None:
        if len(raw) not in (STATE_BYTES, _LEGACY_STATE_BYTES):
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {STATE_BYTES} but found the input RNG "
                               f"state size to be {len(raw)}")
        seed = int(np.frombuffer(raw, dtype="<u8", count=1, offset=0)[0])
        left, seeded = (int(v) for v in np.frombuffer(raw, dtype="<i4", count=2, offset=8))
        nxt = int(np.frombuffer(raw, dtype="<u8", count=1, offset=16)[0])
        key = np.frombuffer(raw, dtype="<u8", count=_MT_N, offset=24)
        if not 1 <= left <= _MT_N or nxt > _MT_N or not seeded:
            raise RuntimeError("The input RNG state is invalid: it does not come from a seeded mt19937 generator")
        self._seed = seed
        self._mt = np.random.MT19937(0)
        self._mt.state = {"bit_generator": "MT19937",
                          "state": {"key": (key & _U64(0xFFFFFFFF)).astype(np.uint32), "pos": _MT_N + 1 - left}}
        self._untouched = left == 1 and nxt == 0
        valid = int(np.frombuffer(raw, dtype="<i4", count=1, offset=5040)[0])
        self._double_normal = float(np.frombuffer(raw, dtype="<f8", count=1, offset=5024)[0]) if valid else None
        self._float_normal = None
        if len(raw) == STATE_BYTES and raw[5052]:
            self._float_normal = float(np.frombuffer(raw, dtype="<f4", count=1, offset=5048)[0])

    # ---- raw words ------------------------------------------------------------------------------
    def _words(self, n: int) -> np.ndarray:
        """``n`` 32-bit draws (torch's ``random()``), as uint64."""
        if n <= 0:
            return np.empty(0, dtype=np.uint64)
        self._untouched = False
        return self._mt.random_raw(n)

    def _words64(self, n: int) -> np.ndarray:
        """``n`` 64-bit draws (torch's ``random64()``): two words each, the first one high."""
        w = self._words(2 * n)
        return (w[0::2] << _U64(32)) | w[1::2]


def _cpu_device():
    from .._device import device
    return device("cpu")


# ---- exact float arithmetic helpers -----------------------------------------------------------------
_c_log = np.frompyfunc(math.log, 1, 1)
_c_log1p = np.frompyfunc(math.log1p, 1, 1)
_c_exp = np.frompyfunc(math.exp, 1, 1)
_c_tan = np.frompyfunc(math.tan, 1, 1)


def _libm(fn, x: np.ndarray) -> np.ndarray:
    """Apply the C library's double function elementwise (bit-identical to torch's scalar kernels)."""
    if x.size == 0:
        return x.astype(np.float64)
    return fn(x).astype(np.float64)


def _split(a):
    c = a * 134217729.0  # 2**27 + 1: Veltkamp splitting into two 26-bit halves
    hi = c - (c - a)
    return hi, a - hi


def fma64(a, b, c):
    """``a * b + c`` rounded once (as the compiled kernels' fused multiply-add), for float64 arrays."""
    a, b, c = np.asanyarray(a, np.float64), np.asanyarray(b, np.float64), np.asanyarray(c, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        p = a * b
        ah, al = _split(a)
        bh, bl = _split(b)
        err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
        s = p + c
        bb = s - p
        tail = (p - (s - bb)) + (c - bb)
        out = s + (tail + err)
    bad = ~np.isfinite(out)
    if np.any(bad):
        out = np.where(bad, p + c, out)
    return out


def fma32(a, b, c):
    """float32 fused multiply-add: the product is exact in float64, so one rounding of the sum remains."""
    return (np.asanyarray(a, np.float64) * np.float64(b) + np.float64(c)).astype(np.float32)


# ---- uniform words -> floats --------------------------------------------------------------------------
def _unit_f32(words):
    return (words & _MASK24).astype(np.float32) * np.float32(2.0 ** -24)


def _unit_f64(words64):
    return (words64 & _MASK53).astype(np.float64) * 2.0 ** -53


def unit_doubles(gen: Generator, n: int) -> np.ndarray:
    """``n`` draws of torch's ``uniform_real_distribution<double>(0, 1)``."""
    return _unit_f64(gen._words64(n))


def unit_floats(gen: Generator, n: int) -> np.ndarray:
    """``n`` draws of torch's ``uniform_real_distribution<float>(0, 1)``."""
    return _unit_f32(gen._words(n))


def _is_double(dtype) -> bool:
    return np.dtype(dtype) == np.float64


# ---- the element order of torch's serial kernels ---------------------------------------------------------
def fill_in_memory_order(target: np.ndarray, values: np.ndarray) -> np.ndarray:
    """An array shaped like ``target`` whose elements, visited in ``target``'s memory order (as torch's
    TensorIterator visits an output), are ``values`` in order."""
    shape = target.shape
    if target.ndim <= 1 or target.flags.c_contiguous:
        return values.reshape(shape)
    strides = [abs(s) if n > 1 else 0 for s, n in zip(target.strides, shape)]
    order = sorted(range(target.ndim), key=lambda d: -strides[d])  # outermost first; ties keep dim order
    out = np.empty(shape, dtype=values.dtype)
    out.transpose(order)[...] = values.reshape([shape[d] for d in order])
    # a negative stride walks memory backwards: torch visits such a dim from its last index
    flips = tuple(d for d, s in enumerate(target.strides) if s < 0 and shape[d] > 1)
    return np.flip(out, flips) if flips else out


def is_dense(array: np.ndarray) -> bool:
    """Whether ``array`` fills its memory without gaps in some order of its dims (torch's
    ``empty_like`` then copies that layout)."""
    if array.flags.c_contiguous or array.flags.f_contiguous:
        return True
    dims = sorted((abs(s), n) for s, n in zip(array.strides, array.shape) if n > 1)
    expected = array.itemsize
    for stride, n in dims:
        if stride != expected:
            return False
        expected *= n
    return True


# ---- kernels ----------------------------------------------------------------------------------------------
def uniform(gen: Generator, n: int, low: float, high: float, dtype) -> np.ndarray:
    """``uniform_(low, high)``: one word per float32 element, two per float64 one."""
    if _is_double(dtype):
        x = unit_doubles(gen, n)
        out = fma64(x, high - low, low)
        return np.where(out == high, low, out)
    lo, hi = np.float32(low), np.float32(high)
    out = fma32(unit_floats(gen, n), np.float32(hi - lo), lo).astype(dtype, copy=False)
    # half types: drawn in float32, and the value that rounds to ``high`` in the output dtype becomes ``low``
    top, bottom = np.asanyarray(high).astype(dtype), np.asanyarray(low).astype(dtype)
    return np.where(out == top, bottom, out).astype(dtype, copy=False)


def uniform_unbounded(gen: Generator, n: int, low: float, high: float) -> np.ndarray:
    """``uniform_real_distribution<double>(low, high)`` called from torch's generic (not per-CPU) code, as
    rrelu does: compiled without fused multiply-add there."""
    return unit_doubles(gen, n) * (high - low) + low


def _box_muller_pairs(gen: Generator, count: int) -> np.ndarray:
    """``count`` standard normals from torch's scalar ``normal_distribution<double>`` (cos, sin, cos, ...)."""
    u = unit_doubles(gen, count + (count & 1))
    u1, u2 = u[0::2], u[1::2]
    radius = np.sqrt(-2.0 * _libm(_c_log1p, -u2))
    theta = (2.0 * math.pi) * u1
    z = np.empty(u.size)
    z[0::2] = radius * np.cos(theta)
    z[1::2] = radius * np.sin(theta)
    return z


def standard_normal_doubles(gen: Generator, n: int) -> np.ndarray:
    """``n`` draws of torch's scalar normal sampler, using and refilling the generator's cached sample."""
    out = np.empty(n)
    start = 0
    if n and gen._double_normal is not None:
        out[0] = gen._double_normal
        gen._double_normal = None
        start = 1
    rest = n - start
    if rest:
        z = _box_muller_pairs(gen, rest)
        out[start:] = z[:rest]
        if rest & 1:
            gen._double_normal = float(z[-1])
    return out


def _normal16_double(blocks: np.ndarray, mean: float, std: float) -> np.ndarray:
    u1 = 1.0 - blocks[:, :8]
    u2 = blocks[:, 8:]
    radius = np.sqrt(-2.0 * _libm(_c_log, u1))
    theta = (2.0 * math.pi) * u2
    return np.concatenate([fma64(radius * np.cos(theta), std, mean), fma64(radius * np.sin(theta), std, mean)], axis=1)


def _normal16_float(blocks: np.ndarray, mean: float, std: float) -> np.ndarray:
    from ._avx_math import cos_sin_f32, log_f32
    u1 = np.float32(1.0) - blocks[:, :8]
    u2 = blocks[:, 8:]
    radius = np.sqrt(np.float32(-2.0) * log_f32(u1))
    theta = np.float32(2.0 * math.pi) * u2
    cos, sin = cos_sin_f32(theta)
    return np.concatenate([fma32(radius * cos, np.float32(std), np.float32(mean)),
                           fma32(radius * sin, np.float32(std), np.float32(mean))], axis=1)


def normal(gen: Generator, target: np.ndarray, mean: float, std: float) -> np.ndarray:
    """``normal_(mean, std)`` into an array shaped like ``target``: torch's block Box-Muller for
    contiguous outputs of 16 or more elements, its scalar sampler otherwise."""
    n = target.size
    dtype = target.dtype
    if n >= 16 and target.flags.c_contiguous:
        double = _is_double(dtype)
        draw, transform = (unit_doubles, _normal16_double) if double else (unit_floats, _normal16_float)
        full = n // 16 * 16
        # float32/float64 draw a uniform for every element first; half types draw whole blocks only
        data = draw(gen, n if double or dtype == np.float32 else full)
        out = np.empty(n, dtype=np.float64 if double else np.float32)
        if full:
            out[:full] = transform(data[:full].reshape(-1, 16), mean, std).reshape(-1)
        if n % 16:
            # torch redraws 16 uniforms and recomputes the last 16 elements
            out[n - 16:] = transform(draw(gen, 16).reshape(1, 16), mean, std).reshape(-1)
        return out.astype(dtype, copy=False).reshape(target.shape)
    z = standard_normal_doubles(gen, n)
    return fill_in_memory_order(target, fma64(z, std, mean).astype(dtype, copy=False))


def random_from_to(gen: Generator, n: int, low: int, span: int) -> np.ndarray:
    """``random_(low, low + span)``: int64 values ``low + word % span`` (64-bit words once span >= 2**28)."""
    words = gen._words64(n) if span >= (1 << 28) else gen._words(n)
    if span >= (1 << 64):
        return words.astype(np.int64)
    # unsigned arithmetic wrapping modulo 2**64, as torch's (word % span) + base
    return ((words % _U64(span)) + _U64(low & 0xFFFFFFFFFFFFFFFF)).astype(np.int64)


_RANDOM_SPANS = {  # random_() without bounds: (64-bit draws?, modulus) per dtype
    "float64": (True, (1 << 53) + 1), "float32": (False, (1 << 24) + 1), "float16": (False, (1 << 11) + 1),
    "bfloat16": (False, (1 << 8) + 1), "int64": (True, 1 << 63), "int32": (False, 1 << 31),
    "int16": (False, 1 << 15), "int8": (False, 1 << 7), "uint8": (False, 1 << 8),
}


def random_full(gen: Generator, n: int, dtype) -> np.ndarray:
    """``random_()``: values in [0, 2**mantissa] for floats and [0, max] for integers."""
    name = np.dtype(dtype).name
    if name == "bool":
        return (gen._words(n) & _U64(1)).astype(np.bool_)
    wide, span = _RANDOM_SPANS.get(name, (False, 1 << 31))
    words = gen._words64(n) if wide else gen._words(n)
    return (words % _U64(span)).astype(np.int64)


def bernoulli_tensor(gen: Generator, probs: np.ndarray) -> np.ndarray:
    """``bernoulli_(p_tensor)``: one uniform per element, double when ``p`` is float64, float otherwise."""
    flat = probs.reshape(-1)
    if _is_double(flat.dtype):
        return unit_doubles(gen, flat.size) < flat
    return unit_floats(gen, flat.size) < flat.astype(np.float32)


def bernoulli_scalar(gen: Generator, n: int, p: float) -> np.ndarray:
    """``bernoulli_(p)`` (dropout's sampler): one double uniform per element."""
    return unit_doubles(gen, n) < p


def exponential(gen: Generator, n: int, lambd: float) -> np.ndarray:
    return (-1.0 / lambd) * _libm(_c_log1p, -unit_doubles(gen, n))


def geometric(gen: Generator, n: int, p: float) -> np.ndarray:
    return np.ceil(_libm(_c_log, unit_doubles(gen, n)) / math.log1p(-p))


def cauchy(gen: Generator, n: int, median: float, sigma: float) -> np.ndarray:
    return median + sigma * _libm(_c_tan, math.pi * (unit_doubles(gen, n) - 0.5))


def log_normal(gen: Generator, n: int, mean: float, std: float) -> np.ndarray:
    return _libm(_c_exp, fma64(standard_normal_doubles(gen, n), std, mean))


def randperm(gen: Generator, n: int) -> np.ndarray:
    """torch's CPU shuffle: for i < n-1 swap element i with element i + word % (n - i)."""
    perm = np.arange(n, dtype=np.int64)
    if n < 2:
        return perm
    if n >= 0xFFFFFFFF // 20:
        raise RuntimeError(f"randperm of n={n} elements is not supported on this CPU backend")
    offsets = (gen._words(n - 1) % np.arange(n, 1, -1, dtype=np.uint64)).tolist()
    items = perm.tolist()
    for i, z in enumerate(offsets):
        if z:
            j = i + z
            items[i], items[j] = items[j], items[i]
    return np.asanyarray(items, dtype=np.int64)


class _ScalarStream:
    """Double uniforms and normals for kernels that draw a data-dependent number of them one at a time
    (Poisson, gamma): words are read ahead in blocks, normals use and refill the generator's cached
    Box-Muller sample as torch's scalar sampler does, and :meth:`close` leaves the generator exactly
    as far on as the draws used."""

    def __init__(self, gen: Generator, block: int = 256):
        self._gen = gen
        self._start = gen._mt.state
        self._untouched = gen._untouched
        self._block = block
        self._values = []
        self._used = 0
        self._cached_normal = gen._double_normal

    def uniform(self) -> float:
        if self._used == len(self._values):
            self._values.extend(_unit_f64(self._gen._words64(self._block)).tolist())
        value = self._values[self._used]
        self._used += 1
        return value

    def normal(self) -> float:
        if self._cached_normal is not None:
            value, self._cached_normal = self._cached_normal, None
            return value
        u1 = self.uniform()
        u2 = self.uniform()
        radius = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        self._cached_normal = radius * math.sin(theta)
        return radius * math.cos(theta)

    def close(self) -> None:
        self._gen._mt.state = self._start
        self._gen._untouched = self._untouched
        self._gen._words(2 * self._used)
        self._gen._double_normal = self._cached_normal

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def poisson(gen: Generator, rates: np.ndarray) -> np.ndarray:
    """torch's CPU Poisson sampler, element by element in memory order: multiplication of uniforms
    below rate 10, Hormann's transformed rejection (PTRS) from 10 on."""
    flat = np.ascontiguousarray(rates).reshape(-1).astype(np.float64).tolist()
    with _ScalarStream(gen) as stream:
        out = [_poisson_one(lam, stream) for lam in flat]
    return np.asanyarray(out, dtype=np.float64).reshape(np.shape(rates))


def _poisson_one(lam: float, cursor: _ScalarStream) -> int:
    if lam >= 10:
        slam = math.sqrt(lam)
        loglam = math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            u = cursor.uniform() - 0.5
            v = cursor.uniform()
            us = 0.5 - abs(u)
            k = math.floor((2 * a / us + b) * u + lam + 0.43)
            if us >= 0.07 and v <= vr:
                return k
            if k < 0 or (us < 0.013 and v > us):
                continue
            if (math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b)) <= \
                    (-lam + k * loglam - math.lgamma(k + 1.0)):
                return k
    if lam == 0:
        return 0
    enlam = math.exp(-lam)
    count, prod = 0, 1.0
    while True:
        prod *= cursor.uniform()
        if prod > enlam:
            count += 1
        else:
            return count


_THIRD_F32 = float(np.float32(1.0) / np.float32(3.0))


def _gamma_one(alpha: float, stream: _ScalarStream, single: bool) -> float:
    """Marsaglia and Tsang's method as torch's CPU kernel runs it; ``single``: ``alpha`` is a float32
    and the few steps torch does in float32 (boosting alpha below 1, ``d``) round to float32."""
    f32 = (lambda v: float(np.float32(v))) if single else (lambda v: v)
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        scale *= (1.0 - stream.uniform()) ** f32(1.0 / alpha)
        alpha = f32(alpha + 1.0)
    d = f32(alpha - _THIRD_F32)  # torch writes 1.0f / 3.0f: a float constant even for double alpha
    c = 1.0 / math.sqrt(float(np.float32(9.0)) * d)
    squeeze = float(np.float32(0.0331))
    while True:
        while True:
            x = stream.normal()
            y = 1.0 + c * x
            if y > 0:
                break
        v = y * y * y
        u = 1.0 - stream.uniform()
        xx = x * x
        if u < 1.0 - squeeze * xx * xx:
            return scale * d * v
        if math.log(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
            return scale * d * v


def standard_gamma(gen: Generator, alpha: np.ndarray) -> np.ndarray:
    """``torch._standard_gamma``: one Gamma(alpha, 1) draw per element in order, at least the dtype's
    smallest normal number."""
    single = alpha.dtype == np.float32
    flat = np.ascontiguousarray(alpha).reshape(-1).astype(np.float64).tolist()
    with _ScalarStream(gen) as stream:
        draws = [_gamma_one(a, stream, single) for a in flat]
    out = np.asanyarray(draws, dtype=np.float64).astype(alpha.dtype)
    return np.maximum(out, np.finfo(alpha.dtype).tiny).reshape(alpha.shape)


def dirichlet(gen: Generator, concentration: np.ndarray, with_gammas: bool = False):
    """``torch._sample_dirichlet``: float64 gamma draws normalised over the last dim, then cast and
    kept within [smallest normal, largest value below 1]."""
    flat = np.ascontiguousarray(concentration).reshape(-1).astype(np.float64).tolist()
    with _ScalarStream(gen) as stream:
        draws = [max(_gamma_one(a, stream, False), np.finfo(np.float64).tiny) for a in flat]
    gammas = np.asanyarray(draws, dtype=np.float64).reshape(concentration.shape)
    ratio = (gammas / gammas.sum(-1, keepdims=True)).astype(concentration.dtype)
    below_one = np.nextafter(concentration.dtype.type(1), concentration.dtype.type(0))
    sample = np.minimum(below_one, np.maximum(np.finfo(concentration.dtype).tiny, ratio))
    return (gammas, sample) if with_gammas else sample


_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                  0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
                  0.00925546218271273, 0.00833056343336287)


def _stirling_tail(k: float) -> float:
    """log(k!) minus its Stirling approximation (tabulated below 10)."""
    if k <= 9:
        return _STIRLING_TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _binomial_inversion(count: float, prob: float, stream: _ScalarStream) -> float:
    geom_sum, num_geom = 0.0, 0.0
    logprob = math.log1p(-prob)
    while True:
        geom_sum += math.ceil(math.log(stream.uniform()) / logprob)
        if geom_sum > count:
            return num_geom
        num_geom += 1


def _binomial_btrs(count: float, prob: float, stream: _ScalarStream) -> float:
    """Hormann's transformed rejection with squeeze (BTRS), as torch evaluates it."""
    stddev = math.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = math.floor((count + 1) * prob)
    while True:
        u = stream.uniform() - 0.5
        v = stream.uniform()
        us = 0.5 - abs(u)
        k = float(math.floor((2 * a / us + b) * u + c))
        if k < 0 or k > count:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = math.log(v * alpha / (a / (us * us) + b))
        upper = ((m + 0.5) * math.log((m + 1) / (r * (count - m + 1)))
                 + (count + 1) * math.log((count - m + 1) / (count - k + 1))
                 + (k + 0.5) * math.log(r * (count - k + 1) / (k + 1))
                 + _stirling_tail(m) + _stirling_tail(count - m) - _stirling_tail(k) - _stirling_tail(count - k))
        if v <= upper:
            return k


def _binomial_one(count: float, prob: float, stream: _ScalarStream) -> float:
    if count <= 0.0 or prob <= 0.0:
        return 0.0
    if prob >= 1.0:
        return count
    if prob <= 0.5:
        sampler = _binomial_btrs if count * prob >= 10.0 else _binomial_inversion
        return sampler(count, prob, stream)
    if prob > 0.5:
        q = 1.0 - prob
        sampler = _binomial_btrs if count * q >= 10.0 else _binomial_inversion
        return count - sampler(count, q, stream)
    return math.nan


def binomial(gen: Generator, count: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """torch's CPU binomial sampler (inversion below a mean of 10, BTRS above), element by element."""
    count, prob = np.broadcast_arrays(count, prob)
    dtype = count.dtype
    single = dtype == np.float32
    as_scalar = (lambda v: float(np.float32(v))) if single else float
    counts = np.ascontiguousarray(count).reshape(-1).tolist()
    probs = np.ascontiguousarray(prob).reshape(-1).astype(dtype).tolist()
    with _ScalarStream(gen) as stream:
        draws = [_binomial_one(as_scalar(n), as_scalar(p), stream) for n, p in zip(counts, probs)]
    return np.asanyarray(draws, dtype=np.float64).astype(dtype).reshape(count.shape)
