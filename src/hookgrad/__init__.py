"""hookgrad: PyTorch's API on NumPy, with PyTorch 2.13's hook system, exactly.

``import hookgrad as torch`` runs ordinary PyTorch code on the CPU. See README.md.
"""
import builtins as _builtins
import importlib as _importlib

from . import _heap

_heap.apply_default()  # reuse freed activation buffers instead of re-faulting them each step

from . import _dtype  # noqa: E402 - after the malloc setting, so that it covers every allocation
from ._device import device
from ._dtype import (Size, bool, complex64, complex128, double, dtype, finfo, float, float16, float32, float64,
                     get_default_dtype, half, iinfo, int, int8, int16, int32, int64, long, promote_types,
                     set_default_dtype, short, uint8)
from ._dtype import bfloat16  # noqa: E402 - computes through the optional ml_dtypes package
from ._dtype import cdouble, cfloat, chalf, complex32  # noqa: E402
from ._dtype import uint16, uint32, uint64  # noqa: E402
from ._dtype import (float4_e2m1fn_x2, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2,  # noqa: E402 - ml_dtypes
                     float8_e5m2fnuz, float8_e8m0fnu)
from ._format import set_printoptions
from ._tensor import Tensor
from . import _ops
from ._ops import *  # noqa: F401,F403 - the torch.* function namespace
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .autograd.grad_mode import is_inference_mode_enabled
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled
from .autograd._warn_once import is_warn_always_enabled, set_warn_always
from . import autograd, return_types, utils
from . import random  # noqa: E402 - torch.random (fork_rng, the default generator's state)
from . import __future__  # noqa: E402 - torch.__future__ (module conversion switches)
from .random import thread_safe_generator  # noqa: E402
from .utils.dlpack import from_dlpack, frombuffer
from ._runtime import *  # noqa: F401,F403 - deterministic mode and thread counts
from .amp.autocast_mode import autocast, is_autocast_enabled  # noqa: E402
from .amp.autocast_mode import (autocast_decrement_nesting, autocast_increment_nesting,  # noqa: E402
                                clear_autocast_cache, get_autocast_cpu_dtype, get_autocast_dtype,
                                get_autocast_gpu_dtype, is_autocast_cache_enabled, is_autocast_cpu_enabled,
                                set_autocast_cache_enabled, set_autocast_cpu_dtype, set_autocast_cpu_enabled,
                                set_autocast_dtype, set_autocast_enabled, set_autocast_gpu_dtype)

linalg = _importlib.import_module(".linalg", __name__)

from .version import __version__  # noqa: E402 - "2.13.0+hookgrad.0.1.0": torch API level, then ours
from ._legacy import (BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor, IntTensor,
                      LongTensor, ShortTensor, TypedStorage, UntypedStorage, is_storage, set_default_tensor_type)
contiguous_format = preserve_format = "torch.contiguous_format"
from ._torch_extras import *  # noqa: F401,F403,E402 - settings, layouts, sym_*, streams, cond
from ._foreach import *  # noqa: F401,F403,E402 - torch._foreach_* (an op across a list of tensors)
from ._storage_types import *  # noqa: F401,F403,E402 - FloatStorage & co., Tensor.storage_type
from ._function_schema import Tag  # noqa: F401,E402 - torch.Tag (operator properties on OpOverload.tags)


def is_tensor(obj) -> _builtins.bool:
    return isinstance(obj, Tensor)


def is_floating_point(t) -> _builtins.bool:
    return t.is_floating_point()


def is_complex(t) -> _builtins.bool:
    return t.is_complex()


def numel(t) -> _builtins.int:
    return t.numel()


def can_cast(from_, to) -> _builtins.bool:
    return _dtype.can_cast(from_, to)


def result_type(a, b):
    return _dtype.result_type(a, b)


def broadcast_shapes(*shapes):
    """The shape tensors of ``shapes`` broadcast to, with torch's RuntimeError when they do not."""
    shapes = [tuple(s) if not isinstance(s, _builtins.int) else (s,) for s in shapes]
    result = [1] * _builtins.max([len(s) for s in shapes] + [0])
    for index, shape in enumerate(shapes):
        for i in _builtins.range(1, len(shape) + 1):
            size = shape[-i]
            if size < 0:
                raise ValueError("Attempting to broadcast a dimension with negative length!")
            if result[-i] == 1 or (size != 1 and result[-i] == size):
                result[-i] = size
            elif size != 1:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {size} at -{i}! Mismatching "
                                   f"argument at index {index} had {shape}; but expected shape should be "
                                   f"broadcastable to {result}")
    return Size(result)


def broadcast_tensors(*tensors):
    from ._ops.pointwise import broadcast_mismatch
    try:
        shape = broadcast_shapes(*[t.shape for t in tensors])
    except RuntimeError:
        raise RuntimeError(broadcast_mismatch(*[t.shape for t in tensors])) from None
    return tuple(t.expand(shape) for t in tensors)


def compile(model=None, **kwargs):
    """No compiler here: returns the model (or a decorator that does) unchanged."""
    if model is None:
        return lambda m: m
    return model


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    num = (x1 * x2).sum(dim)
    den = (x1.norm(dim=dim).clamp(min=eps) * x2.norm(dim=dim).clamp(min=eps))
    return num / den


from . import _argcheck  # noqa: E402

# torch's TypeError for a non-tensor where a function takes a tensor (see _argcheck)
_argcheck.guard_namespace(globals(), [_name for _name in list(globals()) if not _name.startswith("_")])
_argcheck.accept_keyword_forms(Tensor)
Tensor.__matmul__ = _argcheck.matmul_operator(_ops.linalg.matmul)
Tensor.__rmatmul__ = _argcheck.matmul_operator(_ops.linalg.matmul, reflected=True)
from ._tensor import refuse_writes_to_read_only_attributes as _refuse_writes  # noqa: E402
_refuse_writes(Tensor)  # (after the ops have added their properties)

from ._C import _torch_function, _torch_function_tables  # noqa: E402

# every op function consults __torch_function__ overrides and function modes (Tensor's methods do
# from the first use of the protocol on: _torch_function.install_tensor_entry_points)
_torch_function.install_namespace(globals(), [_name for _name in list(globals()) if not _name.startswith("_")],
                                  _torch_function_tables.TORCH_PYTHON_LEVEL, _torch_function_tables.TORCH_NEVER)

_LAZY = {"nn", "optim", "tools", "serialization", "cuda"}
_LAZY |= {"futures", "jit", "distributed", "fx", "func", "overrides", "distributions", "multiprocessing",
          "torch_version", "version"}  # torch namespaces
_LAZY |= {"testing", "backends", "amp", "cpu"}
_LAZY |= {"special"}
_LAZY |= {"fft"}
_LAZY |= {"hooks"}  # hookgrad's own hook powers
_LAZY |= {"library", "ops", "random", "types", "compiler", "_dynamo", "accelerator", "mps", "xpu", "signal",
          "storage", "functional", "hub", "_utils"}  # torch submodules libraries reach for
_LAZY |= {"_C", "_VF"}  # the few private torch._C entry points hook tests call; the operator forms (torch._VF)
_LAZY |= {"_tensor_str"}  # torch._tensor_str.PRINT_OPTS and printoptions
_LAZY |= {"profiler"}  # torch.profiler (test files read torch.profiler.itt.is_available() at import)
_LAZY |= {"__config__"}  # torch.__config__.show(): build settings libraries search for switches
_LAZY |= {"onnx"}  # torch.onnx.is_in_onnx_export(): always False (no exporter)
# torch.* names that are objects of a lazily loaded namespace (torch.vmap is torch.func.vmap)
_FROM_NAMESPACE = {"vmap": "func", "GradScaler": "amp.grad_scaler", "Future": "futures", "to_dlpack": "utils.dlpack",
                   "ScriptModule": "jit", "ScriptFunction": "jit"}
_FROM_NAMESPACE["PyTorchFileReader"] = "_zip_archive"


def __dir__():
    # the lazily loaded namespaces and functions are there for dir(torch) too
    from ._nn_torch_names import NN_TORCH_NAMES
    return sorted(set(globals()) | _LAZY | set(_FROM_NAMESPACE) | set(NN_TORCH_NAMES) | {"save", "load"})


def __getattr__(name):
    # nn, optim and friends load on first use: ``import hookgrad`` stays light
    if name in _LAZY:
        return _importlib.import_module(f".{name}", __name__)
    if name in _FROM_NAMESPACE:
        return getattr(_importlib.import_module(f".{_FROM_NAMESPACE[name]}", __name__), name)
    if name in ("save", "load"):
        return getattr(_importlib.import_module(".serialization", __name__), name)
    from ._nn_torch_names import NN_TORCH_NAMES
    if name in NN_TORCH_NAMES:  # torch.conv2d, torch.batch_norm, ...: functions of the nn kernels
        _importlib.import_module(".nn.functional", __name__)
        value = globals()[name] = getattr(_importlib.import_module(".nn._functional.torch_level", __name__), name)
        return value
    if name in ("save_safetensors", "load_safetensors"):
        return getattr(_importlib.import_module("._safetensors", __name__), name.replace("_safetensors", "_file"))
    from ._run import missing_message
    raise AttributeError(f"module 'hookgrad' has no attribute '{name}' ({missing_message(f'torch.{name}')})")
# torch.torch is torch itself (kornia writes torch.torch.Tensor and torch.torch.deg2rad)
torch = _importlib.import_module(__name__)
