"""``hookgrad.cuda``: there is no GPU backend. Every name answers as torch's CPU-only build
answers: queries that need no device report "none" (``is_available()`` False, memory counters 0,
seeding is a no-op), and calls that need a device raise the exception class that build raises,
with its wording."""
from __future__ import annotations

import contextlib
import warnings
from collections import OrderedDict

from ._absent_device import (device_count, empty_cache, is_available, is_bf16_supported, is_initialized,  # noqa: F401
                             is_tf32_supported, manual_seed, manual_seed_all, max_memory_allocated,
                             max_memory_reserved, memory_allocated, memory_reserved, seed, seed_all)

_NOT_COMPILED = "Torch not compiled with CUDA enabled"


def _needs_cuda(*args, **kwargs):
    raise AssertionError(_NOT_COMPILED)


def _is_compiled() -> bool:
    return False


def get_arch_list() -> list:
    return []


def get_gencode_flags() -> str:
    return ""


has_half = True
has_magma = False
default_generators: tuple = ()

# need a device: AssertionError, as in torch's CPU build
init = current_device = get_device_name = get_device_capability = get_device_properties = _needs_cuda
synchronize = current_stream = default_stream = mem_get_info = ipc_collect = _needs_cuda
get_rng_state = initial_seed = get_sync_debug_mode = get_per_process_memory_fraction = _needs_cuda
set_per_process_memory_fraction = cudart = current_blas_handle = current_solver_handle = _needs_cuda


def set_device(device) -> None:
    from ._device import device as _device_type
    dev = device if isinstance(device, _device_type) else None
    if isinstance(device, str):
        dev = _device_type(device)
    if dev is not None and dev.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {dev}")
    # torch's CPU build fails on its missing binding here (AttributeError); same class, plain words
    raise AttributeError("torch.cuda.set_device needs a CUDA build; hookgrad computes on the CPU only")


def reset_peak_memory_stats(device=None) -> None:
    raise AttributeError("torch.cuda.reset_peak_memory_stats needs a CUDA build; hookgrad computes on the CPU only")


def reset_max_memory_allocated(device=None) -> None:
    warnings.warn("torch.cuda.reset_max_memory_allocated now calls torch.cuda.reset_peak_memory_stats, which resets "
                  "/all/ peak memory stats.", FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device=None) -> None:
    raise AttributeError("torch.cuda.reset_accumulated_memory_stats needs a CUDA build; hookgrad computes on the CPU "
                         "only")


def set_rng_state(new_state, device="cuda") -> None:
    """No device generator to restore."""


def get_rng_state_all() -> list:
    return []


def set_rng_state_all(new_states) -> None:
    """No device generators to restore."""


def memory_cached(device=None) -> int:
    warnings.warn("`torch.cuda.memory_cached` has been renamed to `torch.cuda.memory_reserved`", FutureWarning,
                  stacklevel=2)
    return 0


def max_memory_cached(device=None) -> int:
    warnings.warn("`torch.cuda.max_memory_cached` has been renamed to `torch.cuda.max_memory_reserved`",
                  FutureWarning, stacklevel=2)
    return 0


def memory_stats(device=None) -> OrderedDict:
    return OrderedDict()


def memory_stats_as_nested_dict(device=None) -> dict:
    return {}


def host_memory_stats() -> OrderedDict:
    return OrderedDict()


def list_gpu_processes(device=None) -> str:
    return "pynvml module not found, please install nvidia-ml-py"


class device:
    """``with torch.cuda.device(i)``: a CPU-only build cannot switch devices (RuntimeError on entry)."""

    def __init__(self, device):
        self.idx = device

    def __enter__(self):
        raise RuntimeError("PyTorch was compiled without CUDA support")

    def __exit__(self, *exc):
        return False


class device_of(device):
    """The device of a tensor: a CPU tensor switches nothing."""

    def __init__(self, obj):
        self.idx = -1

    def __enter__(self):
        return None


@contextlib.contextmanager
def stream(stream):
    """Selecting the stream ``None`` is a no-op; there are no other streams."""
    if stream is not None:
        raise RuntimeError("torch.cuda.Stream requires CUDA support")
    yield


class Stream:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("torch.cuda.Stream requires CUDA support")


class Event:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("Tried to instantiate dummy base class Event")


class StreamContext:
    """Selects a stream for a block; with ``None`` (the only stream a build without CUDA has) it does nothing."""

    def __init__(self, stream):
        if stream is not None:
            raise RuntimeError("torch.cuda.Stream requires CUDA support")
        self.stream = stream

    def __enter__(self):
        return None

    def __exit__(self, *exc_info):
        return None


class CUDAGraph:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("Tried to instantiate dummy base class CUDAGraph")


class graph:
    """Capture of a CUDA graph: needs a CUDAGraph, which a build without CUDA cannot make."""

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        raise RuntimeError("Tried to instantiate dummy base class CUDAGraph")


def graph_pool_handle():
    raise RuntimeError("Tried to instantiate dummy base class _graph_pool_handle")


class CudaError(RuntimeError):
    pass


def _legacy_type(name: str) -> type:
    # torch.cuda.FloatTensor and friends exist (isinstance is False) but cannot be built
    def __new__(cls, *args, **kwargs):
        raise TypeError(f"type torch.cuda.{name} not available. {_NOT_COMPILED}.")

    class _Meta(type):
        def __instancecheck__(cls, obj):
            return False
    return _Meta(name, (), {"__new__": __new__, "__module__": "torch.cuda"})


_LEGACY_NAMES = [f"{kind}{suffix}" for kind in ("BFloat16", "Bool", "Byte", "Char", "Double", "Float", "Half", "Int",
                                                "Long", "Short") for suffix in ("Tensor", "Storage")]
globals().update({_name: _legacy_type(_name) for _name in _LEGACY_NAMES + ["ComplexDoubleStorage",
                                                                         "ComplexFloatStorage"]})


class nvtx:
    """``torch.cuda.nvtx``: NVTX ranges need a CUDA build (RuntimeError, as torch's CPU build)."""

    @staticmethod
    def _missing(*args, **kwargs):
        raise RuntimeError("NVTX functions not installed. Are you sure you have a CUDA build?")

    range_push = range_pop = mark = _missing

    @staticmethod
    def range_start(msg):
        raise AttributeError("'_NVTXStub' object has no attribute 'rangeStartA'")

    @staticmethod
    def range_end(range_id):
        raise AttributeError("'_NVTXStub' object has no attribute 'rangeEnd'")

    @staticmethod
    @contextlib.contextmanager
    def range(msg, *args, **kwargs):
        # made without error (libraries decorate functions with it at import); entered, it fails as the push does
        nvtx.range_push(msg.format(*args, **kwargs))
        try:
            yield
        finally:
            nvtx.range_pop()


from .amp import _cuda_amp as amp  # noqa: E402 - torch.cuda.amp's deprecated autocast and GradScaler

__path__: list = []  # a package to the import system, so that ``import hookgrad.cuda.amp`` resolves
