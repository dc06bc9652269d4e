"""How many threads NumPy's BLAS may use, chosen per product by the size of the work.

OpenBLAS splits a large product over all its threads and afterwards keeps them busy-waiting for
the next call. On a machine with few cores and other work running, a split product waits for its
slowest part, whose thread shares a core with another process, and the spinning threads take CPU
from the Python thread that drives the model. On the 2-core machine this was measured on, with
other processes running, the demo trained 5-9x slower with OpenBLAS's default of 2 threads than
with 1. So products smaller than ``SMALL_WORK`` multiply-adds run on one thread, larger ones on
the thread count OpenBLAS started with (``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS`` or the
number of cores), which ``hookgrad.set_num_threads`` can lower, and never on more threads than
there are cores left free by other processes (measured every half second from the machine's CPU
counters, Linux only).

A change of thread count is one C call (about 0.4 us), made only when the wanted count differs
from the last one set: the count is cached here. The library is found with threadpoolctl when
it is installed (any BLAS it knows); without it, on Linux, NumPy's own OpenBLAS is found among
the loaded libraries. Where neither works, BLAS keeps its own default and nothing here costs
more than a comparison.
"""
from __future__ import annotations

import ctypes
import os
import time

import numpy as np

__all__ = ["matmul", "use_threads_for", "set_max_threads", "max_threads", "forget_current", "current_threads",
           "SMALL_WORK", "include_loaded_libraries"]

# Products with fewer multiply-adds than this run on one BLAS thread. Measured with
# ``python -m hookgrad._threads`` (median of 9 interleaved samples, float32 square products n^3,
# 2-vCPU AMD EPYC, OpenBLAS 0.3.31, other work keeping the load average near 4):
#   n=128 (2.1M): 1 thread 0.21 ms, 2 threads 1.0 ms;  n=256 (16.8M): 1.84 ms vs 1.79 ms;
#   n=1024 (1.07G): 103 ms vs 76 ms; best of 7 at n=192 (7.1M): 0.43 ms vs 0.10 ms.
# With one more process spinning on a core, 2 threads lost at every size (n=128: 0.22 ms vs
# 28 ms, n=1024: 158 ms vs 176 ms): that is what _allowed below takes care of.
SMALL_WORK = 4_000_000

_UNKNOWN = object()
_set_fn = _UNKNOWN        # a callable taking a thread count, or None when BLAS cannot be controlled
_max = 1                  # thread count for large products
_current = -1             # last count set (-1: not yet known)

# Cores that other processes leave free, re-measured at most every _CHECK_S seconds from the
# machine's CPU counters minus this process's own CPU time (Linux; elsewhere every core counts as
# free). With 2 cores and one competing process, products of every size ran 1.1-100x slower
# (median) on 2 threads than on 1 (see the table above), so large products too go to 1 thread then.
_CHECK_S = 0.5
_allowed = 1              # thread count for large products right now: min(_max, free cores)
_next_check = 0.0
_last_sample = None       # (monotonic time, machine busy seconds, this process's CPU seconds)
_ncpu = os.cpu_count() or 1
try:
    _ticks = os.sysconf("SC_CLK_TCK")
except (AttributeError, ValueError, OSError):
    _ticks = 100


def _machine_busy_seconds():
    """CPU seconds spent busy by the whole machine since boot, or None where unknown."""
    try:
        with open("/proc/stat", "rb") as f:
            fields = f.readline().split()
    except OSError:
        return None
    # cpu user nice system idle iowait irq softirq steal ...: everything but idle and iowait
    values = [int(v) for v in fields[1:9]]
    return (sum(values) - values[3] - values[4]) / _ticks


def _refresh_allowed(now):
    global _allowed, _next_check, _last_sample
    _next_check = now + _CHECK_S
    busy = _machine_busy_seconds()
    sample = (now, busy, time.process_time())
    previous, _last_sample = _last_sample, sample
    if busy is None or previous is None or now - previous[0] > 10 * _CHECK_S:
        _allowed = _max  # no counters, or a first (or stale) look: judge at the next check
        return
    wall = now - previous[0]
    others = ((busy - previous[1]) - (sample[2] - previous[2])) / wall  # cores used by others
    _allowed = max(1, min(_max, int(_ncpu - others + 0.5)))


def _openblas_from_maps():
    """NumPy's OpenBLAS from the loaded libraries (Linux), as a ctypes setter, or None."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower() and ".so" in line}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in ("scipy_", ""):
            for suffix in ("64_", "", "_64"):
                setter = getattr(lib, f"{prefix}openblas_set_num_threads{suffix}", None)
                getter = getattr(lib, f"{prefix}openblas_get_num_threads{suffix}", None)
                if setter is not None and getter is not None:
                    setter.argtypes = [ctypes.c_int]
                    return setter, int(getter())
    return None


def _threadpoolctl_setter():
    """(setter, current count) for NumPy's BLAS through threadpoolctl, or None."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    try:
        libs = ThreadpoolController().select(user_api="blas").lib_controllers
    except Exception:  # noqa: BLE001 - an unusual install: fall back to the default
        return None
    numpy_dir = os.path.dirname(os.path.dirname(np.__file__))
    # NumPy's own BLAS first (SciPy may bring another copy; both get the same count)
    libs = sorted(libs, key=lambda c: not str(c.filepath).startswith(numpy_dir))
    if not libs:
        return None
    setters = []
    for ctl in libs:
        raw = None
        get_symbol = getattr(ctl, "_get_symbol", None)
        if ctl.internal_api == "openblas" and getattr(ctl, "threading_layer", None) != "openmp" \
                and get_symbol is not None:
            raw = get_symbol("openblas_set_num_threads")  # the C function itself: ~1 us a call
        if raw is not None:
            raw.argtypes = [ctypes.c_int]
        setters.append(raw if raw is not None else ctl.set_num_threads)
    count = libs[0].num_threads or 1

    def set_all(n):
        for s in setters:
            s(n)

    return (setters[0] if len(setters) == 1 else set_all), int(count)


def _init() -> None:
    global _set_fn, _max, _current
    found = _threadpoolctl_setter() or _openblas_from_maps()
    if found is None:
        _set_fn, _max, _current = None, 1, 1
        return
    _set_fn, _max = found
    _max = max(1, _max)
    _current = _allowed = _max


def _set(n: int) -> None:
    global _current
    if _set_fn is _UNKNOWN:
        _init()
    if _set_fn is not None and n != _current:
        _set_fn(n)
        _current = n


def use_threads_for(work: int) -> None:
    """Let BLAS use the thread count suited to a product of ``work`` multiply-adds."""
    if _set_fn is _UNKNOWN:
        _init()
    if work < SMALL_WORK:
        n = 1
    else:
        now = time.monotonic()
        if now >= _next_check:
            _refresh_allowed(now)
        n = _allowed
    if n != _current and _set_fn is not None:
        _set(n)


def _outer(a: np.ndarray, b: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """``a @ b`` for a (n, 1) @ (1, m) product: each element is one product, as in BLAS.

    NumPy's matmul runs this shape 4-12x slower than writing the result (float32 4096x784: 3.6 ms
    against 0.5-0.9 ms), and it is every linear layer's weight gradient at batch 1. A broadcast
    multiply loops over rows, so short rows go through einsum's outer-product loop instead.
    """
    if b.shape[1] < 2048 and out is None and a.dtype == b.dtype and a.dtype.kind in "fc":
        return np.einsum("ij,jk->ik", a, b)
    return np.multiply(a, b) if out is None else np.multiply(a, b, out=out)


def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``np.matmul(a, b)`` on a thread count chosen by the size of the product."""
    if a.ndim == 2 and a.shape[1] == 1 and b.ndim == 2 and a.shape[0] > 1 and b.shape[1] > 1:
        return _outer(a, b, out)
    if _max == 1 and _current == 1:  # one thread allowed and set: nothing to choose
        return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)
    if a.ndim and b.ndim:
        # m*k*n summed over the broadcast batch: the larger of the two operands' counts
        work = max(a.size * (b.shape[-1] if b.ndim > 1 else 1),
                   b.size * (a.shape[-2] if a.ndim > 1 else 1))
    else:
        work = 0
    if work >= SMALL_WORK or _current != 1:
        use_threads_for(work)
    return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)


def set_max_threads(n: int) -> None:
    """The most threads BLAS may use (for large products)."""
    global _max
    if _set_fn is _UNKNOWN:
        _init()
    if _set_fn is None:
        return
    _max = _allowed = max(1, int(n))
    if _current > _max:
        _set(_max)


def include_loaded_libraries() -> None:
    """Control BLAS libraries loaded after the first product too (SciPy's own OpenBLAS, loaded on
    first use), so that their calls follow the same thread choice; the counts chosen so far stay."""
    global _set_fn, _current
    if _set_fn is _UNKNOWN or _set_fn is None:
        return  # the first product finds every library loaded by then; None: BLAS not controllable
    found = _threadpoolctl_setter() or _openblas_from_maps()
    if found is not None:
        _set_fn = found[0]
        _current = -1  # the newcomer's count is unknown: the next choice sets it


def forget_current() -> None:
    """Something else set BLAS's thread count: the next product sets it again."""
    global _current
    _current = -1


def max_threads() -> int:
    if _set_fn is _UNKNOWN:
        _init()
    return _max


def current_threads() -> int:
    if _set_fn is _UNKNOWN:
        _init()
    return _current


def _measure(sizes=(32, 64, 128, 192, 256, 384, 512, 1024), dtype=np.float32) -> str:
    """Median times of square products on 1 thread and on the maximum, interleaved: the crossover."""
    import time
    if _set_fn is _UNKNOWN:
        _init()
    rows = [f"{'n':>5} {'multiply-adds':>14} {'1 thread':>10} {f'{_max} threads':>10}"]
    rng = np.random.default_rng(0)
    for n in sizes:
        a, b = rng.standard_normal((n, n)).astype(dtype), rng.standard_normal((n, n)).astype(dtype)
        number = max(1, int(2e8 // (n ** 3)))
        samples = {1: [], _max: []}
        for _ in range(9):
            for threads in (1, _max):
                _set(threads)
                np.matmul(a, b)
                t0 = time.perf_counter()
                for _ in range(number):
                    np.matmul(a, b)
                samples[threads].append((time.perf_counter() - t0) / number)
        med = {k: sorted(v)[len(v) // 2] for k, v in samples.items()}
        rows.append(f"{n:>5} {n ** 3:>14,} {med[1] * 1e3:>8.3f}ms {med[_max] * 1e3:>8.3f}ms")
    return "\n".join(rows)


if __name__ == "__main__":
    print(f"load average {os.getloadavg()}; BLAS threads at start {max_threads()}")
    print(_measure())
