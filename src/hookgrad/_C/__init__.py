"""The few private ``torch._C`` entry points that PyTorch's hook tests and hook-aware libraries call,
with torch's behaviour; every other ``torch._C`` name is missing (and says so under ``hookgrad run``).

* ``_will_engine_execute_node(grad_fn)``: inside a backward pass, whether the pass runs that node.
* ``_current_autograd_node()``: the node whose backward (or whose saved-tensor unpacking) is
  running now; None outside the engine.
* ``_WeakTensorRef(tensor).expired()``: whether the tensor has been freed.
* ``_is_view_replay_enabled()`` / ``_set_view_replay_enabled(mode)``: hookgrad regenerates a view's
  history after an in-place change with one as_strided node (torch's CPU default); turning view
  replay on raises NotImplementedError rather than being ignored.
* ``_autograd._saved_tensors_hooks_is_enabled()``.
* ``_DisableTorchDispatch()``: a context in which dispatch modes (and the flop counter) see nothing.
* ``_current_graph_task_id()``: the running backward pass's number (-1 outside one);
  ``_current_graph_task_execution_order()``: the nodes the running pass will execute, in order.
* ``_is_fwd_grad_enabled()`` / ``_set_fwd_grad_enabled(mode)``: whether forward AD pushes tangents.
* ``_functions.DelayedError`` / ``_functions.UndefinedGrad`` (see ``_functions``).
"""
from __future__ import annotations

import weakref

from . import _autograd, _functions  # noqa: F401
from . import _profiler  # noqa: F401,E402 - ProfilerConfig's _ExperimentalConfig


def _is_fwd_grad_enabled() -> bool:
    from ..autograd import _dual
    return _dual.FWD_GRAD_ENABLED[0]


def _set_fwd_grad_enabled(enabled: bool) -> None:
    from ..autograd import _dual
    _dual.FWD_GRAD_ENABLED[0] = bool(enabled)


def _will_engine_execute_node(node) -> bool:
    from ..autograd.engine import current_task
    from ..autograd.graph import Node as GraphNode
    if not isinstance(node, GraphNode):
        raise RuntimeError(f"_will_engine_execute_node expects an grad_fn, but got {type(node).__name__}")
    task = current_task()
    if task is None:
        raise RuntimeError("_get_should_execute_nodes should only be called during the backward pass")
    return task.will_execute_node(node)


def _current_autograd_node():
    from ..autograd.engine import current_task
    task = current_task()
    return None if task is None else task.current_node


def _current_graph_task_id() -> int:
    from ..autograd.engine import current_task
    task = current_task()
    return -1 if task is None else task.id


def _current_graph_task_execution_order() -> list:
    """The nodes of the running pass in the order its engine will run them, starting from its
    roots (computed from the pass's remaining dependency counts, as torch does)."""
    from ..autograd import is_multithreading_enabled
    from ..autograd.engine import current_task
    task = current_task()
    if task is None:
        raise RuntimeError("_current_graph_task_execution_order should only be called during the backward pass")
    if is_multithreading_enabled():
        raise RuntimeError("_current_graph_task_execution_order expects the current backward to be executed with "
                           "multithreading disabled, e.g. by running:\n\n>>> with torch.autograd."
                           "set_multithreading_enabled(False):\n...     torch.autograd.grad(...)\n")
    return task.execution_order()


class _WeakTensorRef:
    """A weak reference to a tensor that only answers whether it is gone."""

    def __init__(self, tensor):
        self._ref = weakref.ref(tensor)

    def expired(self) -> bool:
        return self._ref() is None


def _is_view_replay_enabled() -> bool:
    from ..autograd._view_tracking import is_view_replay_enabled
    return is_view_replay_enabled()


def _set_view_replay_enabled(mode: bool) -> None:
    from ..autograd._view_tracking import set_view_replay_enabled
    set_view_replay_enabled(mode)


class _DisableTorchDispatch:
    """``torch._C._DisableTorchDispatch()``: while entered (in this thread), dispatch modes and the
    flop counter see none of the ops that run."""

    _state = __import__("threading").local()

    def __enter__(self):
        _DisableTorchDispatch._state.depth = getattr(_DisableTorchDispatch._state, "depth", 0) + 1
        return self

    def __exit__(self, *exc_info):
        _DisableTorchDispatch._state.depth -= 1
        return False

    @staticmethod
    def active() -> bool:
        return getattr(_DisableTorchDispatch._state, "depth", 0) > 0


# ---- classes torch defines in torch._C -------------------------------------------------------------
# classes of other hookgrad modules, looked up on first use (hookgrad's own modules import this package)
_ELSEWHERE = {
    "Generator": ("hookgrad._ops.rng", "Generator"),
    "TensorBase": ("hookgrad._tensor", "Tensor"),  # hookgrad's one tensor class is the base of them all
    "_TensorBase": ("hookgrad._tensor", "Tensor"),  # torch's older name, kept by torch as an alias
    "DisableTorchFunction": ("hookgrad._torch_extras", "DisableTorchFunction"),
    "DisableTorchFunctionSubclass": ("hookgrad._torch_extras", "DisableTorchFunctionSubclass"),
    "ScriptFunction": ("hookgrad.jit", "ScriptFunction"),  # torch.jit.ScriptFunction is torch._C's class
    # this package's own larger tables, built on first use rather than at ``import hookgrad``
    "DispatchKey": ("hookgrad._C._dispatch_keys", "DispatchKey"),
    "DispatchKeySet": ("hookgrad._C._dispatch_keys", "DispatchKeySet"),
    "_ExcludeDispatchKeyGuard": ("hookgrad._C._dispatch_keys", "_ExcludeDispatchKeyGuard"),
    "_VariableFunctions": ("hookgrad._C._variable_functions", "_VariableFunctions"),
    "_VariableFunctionsClass": ("hookgrad._C._variable_functions", "_VariableFunctionsClass"),
}
_SUBMODULES = ("_nn", "_fft", "_linalg", "_special")


def __getattr__(name):
    built_with = globals().get("_BUILT_WITH", {})  # defined further down; asked for while this module loads
    if name in built_with:
        return built_with[name]()
    import importlib
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    home = _ELSEWHERE.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home[0]), home[1])


def __dir__():
    return sorted(set(globals()) | set(_ELSEWHERE) | set(_BUILT_WITH) | set(_SUBMODULES))


from ._torch_function import (_disabled_torch_function_impl, _EnableTorchFunction,  # noqa: E402,F401
                              _has_torch_function, _has_torch_function_unary, _has_torch_function_variadic,
                              _is_torch_function_all_disabled, _is_torch_function_enabled,
                              _is_torch_function_mode_enabled, _len_torch_function_stack, _get_function_stack_at)
from ._torch_function import dispatching  # noqa: E402
from ._torch_function import (_get_torch_function_state, _peek_should_skip_torch_function,  # noqa: E402,F401
                              _pop_torch_function_stack, _push_on_torch_function_stack, _set_skip_next_torch_function,
                              _set_torch_function_state, _skip_one_hop_torch_function, _TorchFunctionState)
from ._torchscript import (Block, CompilationUnit, FunctionSchema, Graph, Node, ScriptClass,  # noqa: E402,F401
                           ScriptMethod, ScriptModule, ScriptObject, TracingState, Value)


# ---- flags and queries -----------------------------------------------------------------------------
def _set_grad_enabled(enabled) -> None:
    if not isinstance(enabled, bool):
        raise TypeError(f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, "
                        f"not {type(enabled).__name__}")
    from ..autograd import grad_mode
    grad_mode.set_mode(enabled)


_set_grad_enabled = dispatching(_set_grad_enabled)  # what the grad-mode switches call (modes see it)


def _are_functorch_transforms_active() -> bool:
    """Whether a torch.func transform (vmap, grad, vjp, jacrev, jvp, ...) is running its function."""
    from .. import func
    return func.TRANSFORMS_ACTIVE[0] > 0


def _get_tracing_state():
    """No TorchScript tracer runs in hookgrad, so there is never a tracing state."""
    return None


def _log_api_usage_once(event) -> None:
    """torch reports the event to its usage telemetry; hookgrad keeps none, so only the argument is checked."""
    if not isinstance(event, str):
        raise TypeError("bad argument type for built-in operation")


def _add_docstr(obj, docstr):
    """torch's rule: a Python function (which every hookgrad function is) is refused with a TypeError; a
    builtin function or descriptor that has a docstring refuses with a RuntimeError. (torch fills in the
    docstring of one of its own C functions that has none; Python cannot write a C object's docstring, so
    that case refuses loudly here too.)"""
    kind = type(obj).__name__
    if kind not in ("builtin_function_or_method", "method_descriptor", "getset_descriptor", "member_descriptor"):
        raise TypeError(f"don't know how to add docstring to type '{kind}'")
    noun = "function" if kind == "builtin_function_or_method" else "method" if kind == "method_descriptor" \
        else "attribute"
    if obj.__doc__:
        raise RuntimeError(f"{noun} '{obj.__name__}' already has a docstring")
    raise RuntimeError(f"hookgrad cannot set the docstring of the C {noun} '{obj.__name__}'")


def _to_dlpack(tensor):
    from ..utils.dlpack import to_dlpack
    return to_dlpack(tensor)


def _get_default_device() -> str:
    from .. import get_default_device
    return str(get_default_device())


def _get_float32_matmul_precision() -> str:
    from .. import get_float32_matmul_precision
    return get_float32_matmul_precision()


def _set_float32_matmul_precision(precision) -> None:
    from .. import set_float32_matmul_precision
    set_float32_matmul_precision(precision)


def _is_any_autocast_enabled() -> bool:
    from .. import _autocast
    return bool(_autocast.STATE.enabled)  # the CPU is hookgrad's only autocast device


def _get_cpu_capability() -> str:
    from ..backends.cpu import get_cpu_capability
    return get_cpu_capability()


def _get_privateuse1_backend_name() -> str:
    return "privateuseone"  # torch's name while no back end has been renamed; hookgrad registers none


def _get_accelerator(check=None):
    """The current accelerator; hookgrad has none, so (as torch without one) the CPU, or an error when
    ``check`` asks for a real one."""
    from .._device import device
    if check:
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return device("cpu")


def _backend_flag(module_name: str, flag: str) -> tuple:
    """torch._C's getter and setter of one torch.backends flag. hookgrad keeps the flags on those
    modules, whose setters check the type with torch's message; like torch's bindings, the setter
    takes its value by position only."""
    import importlib

    def read() -> bool:
        return getattr(importlib.import_module(module_name), flag)

    def write(value, /) -> None:
        setattr(importlib.import_module(module_name), flag, value)

    backend = module_name.rsplit(".", 1)[1]
    read.__name__ = read.__qualname__ = f"_get_{backend}_{flag}"
    write.__name__ = write.__qualname__ = f"_set_{backend}_{flag}"
    return read, write


_get_cudnn_enabled, _set_cudnn_enabled = _backend_flag("hookgrad.backends.cudnn", "enabled")
_get_mkldnn_enabled, _set_mkldnn_enabled = _backend_flag("hookgrad.backends.mkldnn", "enabled")
_get_cudnn_benchmark, _set_cudnn_benchmark = _backend_flag("hookgrad.backends.cudnn", "benchmark")
_get_cudnn_deterministic, _set_cudnn_deterministic = _backend_flag("hookgrad.backends.cudnn", "deterministic")
_get_cudnn_allow_tf32, _set_cudnn_allow_tf32 = _backend_flag("hookgrad.backends.cudnn", "allow_tf32")
_get_mkldnn_deterministic, _set_mkldnn_deterministic = _backend_flag("hookgrad.backends.mkldnn", "deterministic")


_AUTOGRAD_FALLBACK_MODES = ("nothing", "warn", "error")
_autograd_fallback = ["warn"]


def _set_autograd_fallback_mode(mode) -> None:
    """torch's fallback decides what an operator without an autograd kernel does to gradients; every
    hookgrad op has its derivative or raises, but the setting is kept and reported as torch does."""
    if mode not in _AUTOGRAD_FALLBACK_MODES:
        raise RuntimeError(f"Unsupported AutogradFallbackMode: {mode}")
    _autograd_fallback[0] = mode


def _get_autograd_fallback_mode() -> str:
    return _autograd_fallback[0]


def _bool_argument(function: str, value) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{function}(): argument 'enabled' (position 1) must be bool, not {type(value).__name__}")


def _is_multithreading_enabled() -> bool:
    from ..autograd._extra_modes import is_multithreading_enabled
    return is_multithreading_enabled()


def _set_multithreading_enabled(enabled) -> None:
    _bool_argument("set_multithreading_enabled", enabled)
    from ..autograd._extra_modes import _set
    _set("multithreading", enabled)


def _is_grad_layout_enforcement_enabled() -> bool:
    from ..autograd._extra_modes import is_grad_layout_enforcement_enabled
    return is_grad_layout_enforcement_enabled()


def _set_grad_layout_enforcement_enabled(enabled) -> None:
    _bool_argument("set_grad_layout_enforcement_enabled", enabled)
    from ..autograd._extra_modes import _set
    _set("grad_layout", enabled)


def _increment_version(tensors) -> None:
    """Bump the version counter of each tensor of an iterable, as an in-place change does. As in torch, a
    tensor given alone is iterated too: each of its rows (a view sharing its counter) bumps it once."""
    from .._tensor import Tensor
    try:
        tensors = list(tensors)
    except TypeError:
        raise RuntimeError("increment_version expect a Iterable[Tensor] as input") from None
    if not all(isinstance(t, Tensor) for t in tensors):
        raise RuntimeError("increment_version expect a Iterable[Tensor] as input")
    for t in tensors:
        t._bump_version()


def _log_api_usage_metadata(event, metadata) -> None:
    """torch sends the event to its usage telemetry; hookgrad keeps none, so only the arguments are checked."""
    from collections.abc import Mapping
    if not (isinstance(event, str) and isinstance(metadata, Mapping)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise TypeError("_log_api_usage_metadata(): incompatible function arguments. The following argument types "
                        "are supported:\n    1. (arg0: str, arg1: collections.abc.Mapping[str, str]) -> None")


def _mps_is_available() -> bool:
    return False


# what torch was built with, answered for what hookgrad computes with (see hookgrad.backends)
_BUILT_WITH = {
    "has_mkl": lambda: __import__("hookgrad.backends.mkl", fromlist=["_"]).is_available(),
    "has_openmp": lambda: __import__("hookgrad.backends.openmp", fromlist=["_"]).is_available(),
    "has_lapack": lambda: True,  # NumPy and SciPy always carry LAPACK
    "_has_mkldnn": lambda: False,
    "_has_mps": lambda: False,
}


# ---- DataLoader worker bookkeeping ----------------------------------------------------------------
# torch's C++ side installs SIGCHLD/SIGBUS/SIGSEGV handlers in workers and checks, from the main
# process, the recorded worker pids for one that died; hookgrad's DataLoader watches its own worker
# processes, so these keep torch's arguments and errors for the bookkeeping and do nothing more.
_worker_pids: dict = {}


def _set_worker_signal_handlers() -> None:
    return None


def _set_worker_pids(key, child_pids) -> None:
    if not isinstance(child_pids, tuple):
        raise TypeError(f"_set_worker_pids expects a tuple for child_pids, but got {type(child_pids).__name__}")
    if key in _worker_pids:
        raise ValueError("_set_worker_pids should be called only once for each _BaseDataLoaderIter.")
    _worker_pids[key] = child_pids


def _remove_worker_pids(key) -> None:
    if _worker_pids.pop(key, None) is None:
        raise ValueError(f"Cannot find worker information for _BaseDataLoaderIter with id {key}")


def _error_if_any_worker_fails() -> None:
    return None


# names of torch._C that hookgrad leaves out on purpose, with why (docs/api-coverage.md lists them)
LEFT_OUT = {
    "_cxx_flags": "the flags torch's C++ library was compiled with; hookgrad has no compiled library",
    "_show_config": "describes torch's C++ build (compiler, MKL, oneDNN, CUDA); hookgrad has no compiled library",
    "_parallel_info": "reports ATen's intra-/inter-op thread pools and its OpenMP/MKL build in torch's format; "
                      "hookgrad's only threads are its BLAS's (torch.get_num_threads answers for those)",
    "_GLIBCXX_USE_CXX11_ABI": "the C++ ABI for building extensions against torch; hookgrad takes no C++ extensions",
    "_dispatch_has_kernel_for_dispatch_key": "asks torch's C++ dispatcher about kernels registered per key; "
                                             "hookgrad's ops have no per-key kernels",
    "_functorch": "functorch's C++ interpreter stack (levels, wrapped tensors); hookgrad.func transforms work "
                  "without wrapper tensors",
    "_sparse": "sparse tensor kernels; hookgrad has only dense tensors",
    "_nested": "nested (jagged) tensors; hookgrad has only dense tensors",
}


# ---- the tensor metaclass and the torch.save archive reader -----------------------------------------
class _TensorMetaType(type):
    def __instancecheck__(cls, obj) -> bool:
        from .._tensor import Tensor
        return isinstance(obj, type) and issubclass(obj, Tensor)


class _TensorMeta(type, metaclass=_TensorMetaType):
    """``torch._C._TensorMeta``, the metaclass of torch's tensor classes: hookgrad's tensor classes
    are ordinary classes, so it answers isinstance for them (``isinstance(torch.Tensor,
    torch._C._TensorMeta)``) without being their ``type``."""


from .._zip_archive import PyTorchFileReader  # noqa: E402,F401  (torch.PyTorchFileReader is torch._C's)


def _check_swappable_impl(t1, t2) -> None:
    """Raise as torch's ``_swap_tensor_impl`` does for a tensor whose autograd state is weakly
    referenced from elsewhere: ``retain_grad()`` keeps such a reference in torch."""
    for tensor, name in ((t1, "t1"), (t2, "t2")):
        if tensor._retains_grad:
            raise RuntimeError(f"Expected no weakrefs to {name}'s Tensor object but got  1")


def _swap_tensor_impl(t1, t2) -> None:
    """Exchange the TensorImpl state (every slot of ``Tensor``) of ``t1`` and ``t2``; the leaf
    accumulator each takes along now accumulates into its new owner, and each version counter
    moves one step (see below)."""
    from .._tensor import _STATE_FIELDS
    _check_swappable_impl(t1, t2)
    for field in _STATE_FIELDS:
        value = getattr(t1, field)
        setattr(t1, field, getattr(t2, field))
        setattr(t2, field, value)
    for tensor in (t1, t2):
        node = None if tensor._accumulator is None else tensor._accumulator()
        if node is not None:
            node.variable = tensor
        # torch refuses to swap a tensor a graph saved (its TensorImpl's use count); hookgrad cannot
        # count those holders, so it makes them fail loudly instead: anything that saved either
        # tensor before the swap now sees a newer version and raises when backward unpacks it
        # (a view made before shares the counter and is seen as modified too)
        counter = tensor._version_counter
        if counter.__class__ is list:  # (inference tensors track no version and cannot be saved)
            counter[0] += 1


def is_grad_enabled() -> bool:
    """``torch._C.is_grad_enabled()``: the same switch as ``torch.is_grad_enabled()``."""
    from ..autograd.grad_mode import is_grad_enabled as enabled
    return enabled()
