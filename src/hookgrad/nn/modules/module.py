"""``Module``, the base class of every layer, and the global module hook registries.

Every hook kind has exactly one registry (an ordered dict keyed by the handle id), one
``register_*`` function or method that returns a :class:`~hookgrad.utils.hooks.RemovableHandle`,
and one dispatch point:

=======================================  ==============================  ==================================
kind                                     registry (global / local)       dispatched in
=======================================  ==============================  ==================================
forward pre-hook                         ``_global_forward_pre_hooks``   ``Module._run_forward_pre_hooks``
                                         ``Module._forward_pre_hooks``
forward hook                             ``_global_forward_hooks``       ``Module._run_forward_hooks``
                                         ``Module._forward_hooks``       (on error:
                                                                         ``Module._run_always_called_hooks``)
full backward pre-hook                   ``_global_backward_pre_hooks``  ``_backward_hook.BackwardHook``
                                         ``Module._backward_pre_hooks``
full backward hook / legacy backward     ``_global_backward_hooks``      ``_backward_hook.BackwardHook``
hook                                     ``Module._backward_hooks``      / the output's ``grad_fn``
live full backward (pre-) hook           the two rows above; ids in      ``_live_backward_hook.
(``live=True``)                          ``live_hook_ids``               LiveBackwardHook``
state_dict pre / post hook               ``Module._state_dict_pre_hooks``  ``Module.state_dict``
                                         ``Module._state_dict_hooks``
load_state_dict pre / post hook          ``Module._load_state_dict_pre_hooks``  ``load_state_dict``
                                         ``Module._load_state_dict_post_hooks``
parameter / buffer / module registration ``_global_*_registration_hooks``  ``register_*``
=======================================  ==============================  ==================================

Every module call with some hook takes one path, ``Module._call_with_hooks``: forward pre-hooks,
the backward-hook set-up on the inputs, ``forward``, forward hooks, the backward-hook set-up on
the outputs, and on an error the always_call forward hooks. With no hook anywhere, ``__call__``
is ``forward`` behind one test.

While ``hookgrad.hooks`` is loaded (``autograd._hook_context.ON``), ``_dispatch`` runs each hook
with its ``hookgrad.hooks.context()`` pushed, and ``_call_with_hooks`` counts the call (its
``call_index``) first; the backward hooks of a counted call learn its index through the dispatch
they are given. Nothing of this runs before.

The semantics (order, argument and return-value rules, warnings and errors) are PyTorch 2.13's.
"""
from __future__ import annotations

import functools
import inspect
import itertools
import os
import sys
import time
import warnings
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Mapping
from typing import Any, Callable, Iterator, Optional

import hookgrad
from hookgrad._meta import is_meta_device
from hookgrad._tensor import Tensor
from hookgrad.utils.hooks import RemovableHandle, note_registration

from ...autograd import _hook_context
from ..parameter import Buffer, Parameter
from ._backward_hook import BackwardHook
from ._live_backward_hook import LiveBackwardHook, check_live_registration, live_hook_ids, live_snapshot

__all__ = [
    "register_module_forward_pre_hook",
    "register_module_forward_hook",
    "register_module_full_backward_pre_hook",
    "register_module_backward_hook",
    "register_module_full_backward_hook",
    "register_module_buffer_registration_hook",
    "register_module_module_registration_hook",
    "register_module_parameter_registration_hook",
    "Module",
]


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys it could not match, in both directions."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(text: str, num_spaces: int) -> str:
    """Indent every line but the first by ``num_spaces``; blank lines stay empty."""
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    pad = " " * num_spaces
    rest = [pad + line if line.strip() else "" for line in lines[1:]]
    return lines[0] + "\n" + "\n".join(rest)


def _typename(obj: Any) -> str:
    """The type name PyTorch puts into error messages (``torch.typename``)."""
    if isinstance(obj, Tensor):
        type_fn = getattr(obj, "type", None)
        try:
            return type_fn() if type_fn is not None else "hookgrad.Tensor"
        except Exception:  # noqa: BLE001 - a name for an error message, never fatal
            return "hookgrad.Tensor"
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"


# ---------------------------------------------------------------------------------------------
# Global registries. They are module-level ordered dicts so that a handle (which keeps a weak
# reference to its dict) can remove a hook from them, exactly as for a module's own dicts.
# ---------------------------------------------------------------------------------------------
_global_buffer_registration_hooks: dict = OrderedDict()
_global_module_registration_hooks: dict = OrderedDict()
_global_parameter_registration_hooks: dict = OrderedDict()

_global_backward_pre_hooks: dict = OrderedDict()
_global_backward_hooks: dict = OrderedDict()
# None: no global backward hook registered yet; True: full hooks; False: legacy hooks.
_global_is_full_backward_hook: Optional[bool] = None
_global_forward_pre_hooks: dict = OrderedDict()
_global_forward_hooks: dict = OrderedDict()
_global_forward_hooks_always_called: dict = OrderedDict()
_global_forward_hooks_with_kwargs: dict = OrderedDict()

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


def _has_any_global_hook():
    return (_global_backward_pre_hooks or _global_backward_hooks or _global_forward_pre_hooks
            or _global_forward_hooks or _global_forward_hooks_always_called
            or _global_forward_hooks_with_kwargs)


# ---------------------------------------------------------------------------------------------
# The hook observer seam: tooling can watch every module hook dispatch. When unset (the usual
# case) the cost is one global load and a comparison per hook call.
# ---------------------------------------------------------------------------------------------
_hook_observer: Optional[Callable] = None


def _set_hook_observer(callback: Optional[Callable]) -> Optional[Callable]:
    """Report each module hook dispatch to ``callback(kind, module, hook, start, end)``.

    ``kind`` is the name of the hook kind (``"forward_pre_hook"``, ``"forward_hook"``,
    ``"full_backward_pre_hook"``, ``"full_backward_hook"``, ``"backward_hook"`` (legacy),
    ``"state_dict_pre_hook"``, ``"state_dict_hook"``, ``"load_state_dict_pre_hook"``,
    ``"load_state_dict_post_hook"``, ``"parameter_registration_hook"``,
    ``"buffer_registration_hook"``, ``"module_registration_hook"``); ``start`` and ``end`` are
    ``time.perf_counter()`` readings taken around the call (``end`` is taken even when the hook
    raises). Pass ``None`` to stop observing. Returns the previous observer.
    """
    global _hook_observer
    previous = _hook_observer
    _hook_observer = callback
    return previous


# explain() (hookgrad.hooks) is told of each call that set up backward hooks: (module, the
# BackwardHook or LiveBackwardHook, result). Empty, the usual case, it costs one test per such call.
_backward_hook_call_observers: list = []


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def _stacklevel_outside_hookgrad() -> int:
    """The ``stacklevel`` that makes a warning raised by this function's caller point at the first
    frame outside hookgrad (how many hookgrad frames lie between varies: hookgrad.hooks counts
    module calls through extra ones)."""
    level, frame = 2, sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        name = frame.f_code.co_filename
        if not ("importlib" in name and "_bootstrap" in name):   # frames the warnings skip themselves
            level += 1
        frame = frame.f_back
    return level


_new_object = object.__new__
# the backward pre-hooks of a call that has none (shared: BackwardHook only reads them)
_NO_PRE_HOOKS = ()


def _dispatch(kind: str, module: Any, hook: Callable, *args: Any) -> Any:
    """Call ``hook(*args)``, reporting the call to the hook observer when one is set (which reads
    ``args`` from this frame), and, while hookgrad.hooks is loaded, with the hook's context."""
    if _hook_observer is None and not _hook_context.ON[0]:  # the usual case: nobody watches
        return hook(*args)
    pushed = _hook_context.ON[0] and _push_hook_context(kind, module)
    observer = _hook_observer
    try:
        if observer is None:
            return hook(*args)
        start = time.perf_counter()
        try:
            return hook(*args)
        finally:
            observer(kind, module, hook, start, time.perf_counter())
    finally:
        if pushed:
            _hook_context.ACTIVE.pop()


# hookgrad.hooks.context(): the phase of each module hook kind
_HOOK_PHASES = {"forward_pre_hook": "forward", "forward_hook": "forward", "full_backward_pre_hook": "backward",
                "full_backward_hook": "backward", "backward_hook": "backward", "state_dict_pre_hook": "state_dict",
                "state_dict_hook": "state_dict", "load_state_dict_pre_hook": "state_dict",
                "load_state_dict_post_hook": "state_dict"}
# the call index the next _dispatch reports (set by the backward hooks of a counted call)
_next_call_index: list = [None]


def _push_hook_context(kind, module) -> bool:
    """Push the context of a module hook about to run: forward hooks learn their call's index from
    the call being counted, backward hooks from the call that set them up."""
    call_index = _next_call_index[0]
    _next_call_index[0] = None
    if call_index is None and _hook_context.CALLS:
        running, index = _hook_context.CALLS[-1]
        if running is module:
            call_index = index
    _hook_context.ACTIVE.append(_hook_context.HookContext(
        _HOOK_PHASES.get(kind, "registration"), _hook_context.current_pass_id(), module, call_index,
        _hook_context.RECOMPUTING[0] > 0, kind))
    return True


def _dispatch_for_call(call_index, kind, module, hook, *args):
    """``_dispatch`` for the backward hooks of call ``call_index`` of a module."""
    _next_call_index[0] = call_index
    return _dispatch(kind, module, hook, *args)


def _dispatch_for_this_call():
    """A ``_dispatch`` for the backward hooks of the module call being counted now."""
    return functools.partial(_dispatch_for_call, _hook_context.CALLS[-1][1])


# ---------------------------------------------------------------------------------------------
# Global registration functions
# ---------------------------------------------------------------------------------------------
def register_module_buffer_registration_hook(hook: Callable[..., None]) -> RemovableHandle:
    """Register ``hook(module, name, buffer) -> None or new buffer``, run by every
    ``register_buffer`` (and buffer assignment) on every module; a non-None return replaces
    the buffer that gets registered."""
    handle = RemovableHandle(_global_buffer_registration_hooks)
    _global_buffer_registration_hooks[handle.id] = hook
    note_registration(_global_buffer_registration_hooks, handle.id)
    return handle


def register_module_module_registration_hook(hook: Callable[..., None]) -> RemovableHandle:
    """Register ``hook(module, name, submodule) -> None or new submodule``, run whenever a child
    module is registered (``add_module``/``register_module`` or attribute assignment)."""
    handle = RemovableHandle(_global_module_registration_hooks)
    _global_module_registration_hooks[handle.id] = hook
    note_registration(_global_module_registration_hooks, handle.id)
    return handle


def register_module_parameter_registration_hook(hook: Callable[..., None]) -> RemovableHandle:
    """Register ``hook(module, name, param) -> None or new parameter``, run by every
    ``register_parameter`` (and parameter assignment) on every module."""
    handle = RemovableHandle(_global_parameter_registration_hooks)
    _global_parameter_registration_hooks[handle.id] = hook
    note_registration(_global_parameter_registration_hooks, handle.id)
    return handle


def register_module_forward_pre_hook(hook: Callable[..., None]) -> RemovableHandle:
    """Register ``hook(module, args) -> None or new args`` to run before every module's forward.

    Global forward pre-hooks run before each module's own. A non-tuple return value is wrapped
    into a one-element tuple. Keyword arguments are never passed to global pre-hooks.
    """
    handle = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = hook
    note_registration(_global_forward_pre_hooks, handle.id)
    return handle


def register_module_forward_hook(hook: Callable[..., None], *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """Register ``hook(module, args, output)`` (or ``hook(module, args, kwargs, output)`` with
    ``with_kwargs``) to run after every module's forward; a non-None return replaces the output.

    With ``always_call`` the hook also runs when forward raises (then always as
    ``hook(module, args, result)``). As in PyTorch, the handle only tracks the ``always_call``
    flag, so the ``with_kwargs`` mark of a removed hook stays in
    ``_global_forward_hooks_with_kwargs``.
    """
    handle = RemovableHandle(_global_forward_hooks, extra_dict=_global_forward_hooks_always_called)
    _global_forward_hooks[handle.id] = hook
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    note_registration(_global_forward_hooks, handle.id)
    return handle


_MIXED_GLOBAL_BACKWARD = ("Cannot use both regular backward hooks and full backward hooks as a "
                          "global Module hook. Please use only one of them.")


def register_module_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Register a legacy (non-full) backward hook on every module. Deprecated in favour of
    :func:`register_module_full_backward_hook`; it cannot be mixed with global full hooks."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is True:
        raise RuntimeError(_MIXED_GLOBAL_BACKWARD)
    if live_hook_ids:
        check_live_registration(None, hook, "register_module_backward_hook", legacy=True)
    _global_is_full_backward_hook = False
    handle = RemovableHandle(_global_backward_hooks)
    _global_backward_hooks[handle.id] = hook
    note_registration(_global_backward_hooks, handle.id)
    return handle


def register_module_full_backward_pre_hook(hook: Callable[..., Any], live: bool = False) -> RemovableHandle:
    """Register ``hook(module, grad_output) -> None or new grad_output`` for every module; these
    run before the hooks registered with ``Module.register_full_backward_pre_hook``. ``live``:
    see :meth:`Module.register_full_backward_hook`."""
    if live:
        check_live_registration(None, hook, "register_module_full_backward_pre_hook")
    handle = RemovableHandle(_global_backward_pre_hooks, extra_dict=live_hook_ids if live else None)
    _global_backward_pre_hooks[handle.id] = hook
    if live:
        live_hook_ids[handle.id] = True
    note_registration(_global_backward_pre_hooks, handle.id)
    return handle


def register_module_full_backward_hook(hook: Callable[..., Any], live: bool = False) -> RemovableHandle:
    """Register ``hook(module, grad_input, grad_output) -> None or new grad_input`` for every
    module; these run before the hooks registered with ``Module.register_full_backward_hook``.
    ``live``: see :meth:`Module.register_full_backward_hook`."""
    global _global_is_full_backward_hook
    if live:
        check_live_registration(None, hook, "register_module_full_backward_hook")
    if _global_is_full_backward_hook is False:
        raise RuntimeError(_MIXED_GLOBAL_BACKWARD)
    _global_is_full_backward_hook = True
    handle = RemovableHandle(_global_backward_hooks, extra_dict=live_hook_ids if live else None)
    _global_backward_hooks[handle.id] = hook
    if live:
        live_hook_ids[handle.id] = True
    note_registration(_global_backward_hooks, handle.id)
    return handle


class _WrappedHook:
    """A hook that is called with a module (held weakly) prepended to its arguments."""

    def __init__(self, hook: Callable, module: Optional["Module"] = None) -> None:
        self.hook = hook
        functools.update_wrapper(self, hook)
        self.with_module = False
        if module is not None:
            self.module = weakref.ref(module)
            self.with_module = True

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.with_module:
            module = self.module()
            if module is None:
                raise RuntimeError("You are trying to call the hook of a dead Module!")
            return self.hook(module, *args, **kwargs)
        return self.hook(*args, **kwargs)

    def __getstate__(self) -> dict:
        state = {"hook": self.hook, "with_module": self.with_module}
        if self.with_module:
            state["module"] = self.module()
        return state

    def __setstate__(self, state: dict) -> None:
        self.hook = state["hook"]
        self.with_module = state["with_module"]
        if self.with_module:
            if state["module"] is None:
                raise RuntimeError("You are trying to revive the hook of a dead Module!")
            self.module = weakref.ref(state["module"])


def _forward_unimplemented(self, *input: Any) -> None:
    """Define the computation performed at every call; every subclass overrides it.

    Call the module instance rather than ``forward`` itself: only the call runs the hooks.
    """
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


def _parse_to(*args, **kwargs):
    """Split ``Module.to``'s arguments into (device, dtype, non_blocking, memory_format)."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    non_blocking = kwargs.pop("non_blocking", False)
    memory_format = kwargs.pop("memory_format", None)
    kwargs.pop("copy", None)
    if kwargs:
        raise TypeError(f"to() received an invalid combination of arguments - got unexpected "
                        f"keyword argument(s) {sorted(kwargs)}")
    rest = list(args)
    if rest:
        first = rest.pop(0)
        if isinstance(first, Tensor):
            device, dtype = first.device, first.dtype
        elif isinstance(first, hookgrad.dtype):
            dtype = first
        elif first is not None:
            device = first
    if rest and isinstance(rest[0], hookgrad.dtype):
        dtype = rest.pop(0)
    if rest and isinstance(rest[0], bool):
        non_blocking = rest.pop(0)
    if rest:
        raise TypeError("to() received an invalid combination of arguments")
    if device is not None and not isinstance(device, str) and hasattr(hookgrad, "device"):
        device = hookgrad.device(device) if not isinstance(device, hookgrad.device) else device
    elif isinstance(device, str) and hasattr(hookgrad, "device"):
        device = hookgrad.device(device)
    return device, dtype, non_blocking, memory_format


def _swap_in_loaded(param: Tensor, input_param: Tensor, assign: bool) -> None:
    """``load_state_dict``'s swapping path: ``param`` (keeping its identity) takes the contents of
    ``param.module_load(input_param)``, a Parameter again if ``param`` is one."""
    loaded = param.module_load(input_param, assign=assign)
    if loaded is input_param or loaded is param:
        raise RuntimeError("module_load returned one of self or other, please .detach() "
                           "the result if returning one of the inputs in module_load")
    if isinstance(param, Parameter):
        if not isinstance(loaded, Parameter):
            loaded = Parameter(loaded, requires_grad=param.requires_grad)
        else:
            loaded.requires_grad_(param.requires_grad)
    hookgrad.utils.swap_tensors(param, loaded)


def _takes_device(init) -> bool:
    code = getattr(init, "__code__", None)
    return code is not None and "device" in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]


def _built_on_device_argument(init):
    """A layer's ``__init__`` that makes its parameters and buffers on the meta device when given
    ``device="meta"`` (as torch's factory keyword arguments do): it runs under that device's context."""
    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        device = kwargs.get("device")
        if device is None or not is_meta_device(device):
            return init(self, *args, **kwargs)
        with hookgrad.device("meta"):
            return init(self, *args, **kwargs)
    return __init__


def _set_tensor_data(tensor: Tensor, new: Tensor) -> None:
    """Make ``tensor`` hold ``new``'s values (dtype included) without changing its identity."""
    tensor.data = new


class Module:
    """Base class for all neural network modules; subclass it and define ``forward``.

    Submodules, :class:`~hookgrad.nn.Parameter` s and buffers assigned as attributes are
    registered, so that ``parameters()``, ``state_dict()``, ``to()`` and friends find them::

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(hookgrad.randn(3, 2))

            def forward(self, x):
                return (x @ self.w).relu()
    """

    dump_patches: bool = False
    # Saved into the state dict's ``_metadata`` so that ``_load_from_state_dict`` of a module
    # whose layout changed can recognise (and convert) old checkpoints.
    _version: int = 1
    training: bool
    call_super_init: bool = False
    _compiled_call_impl: Optional[Callable] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if self.call_super_init is False and bool(kwargs):
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if self.call_super_init is False and bool(args):
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        # object.__setattr__ skips Module.__setattr__'s registration logic for internal state.
        setter = super().__setattr__
        setter("training", True)
        setter("_parameters", {})
        setter("_buffers", {})
        setter("_non_persistent_buffers_set", set())
        setter("_backward_pre_hooks", OrderedDict())
        setter("_backward_hooks", OrderedDict())
        setter("_is_full_backward_hook", None)
        setter("_forward_hooks", OrderedDict())
        # The next three are used as sets of hook ids (dicts keyed by id with value True).
        setter("_forward_hooks_with_kwargs", OrderedDict())
        setter("_forward_hooks_always_called", OrderedDict())
        setter("_forward_pre_hooks", OrderedDict())
        setter("_forward_pre_hooks_with_kwargs", OrderedDict())
        setter("_state_dict_hooks", OrderedDict())
        setter("_state_dict_pre_hooks", OrderedDict())
        setter("_load_state_dict_pre_hooks", OrderedDict())
        setter("_load_state_dict_post_hooks", OrderedDict())
        setter("_modules", {})
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    forward: Callable[..., Any] = _forward_unimplemented

    # ----------------------------------------------------------------------------------------
    # Registration of parameters, buffers and submodules
    # ----------------------------------------------------------------------------------------
    def _check_new_name(self, kind: str, registry: str, name) -> None:
        """torch's checks, in its order, on the ``name`` of a buffer or parameter being registered
        in ``self.<registry>`` (``kind`` words the errors)."""
        if registry not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in self.__dict__[registry]:
            raise KeyError(f"attribute '{name}' already exists")

    def register_buffer(self, name: str, tensor: Optional[Tensor], persistent: bool = True) -> None:
        """Add a buffer: module state that is not a parameter (e.g. running statistics).

        Persistent buffers are part of ``state_dict``; non-persistent ones are not. A ``None``
        buffer is kept as a name only and skipped by ``to()``, ``state_dict()`` and so on.
        """
        self._check_new_name("buffer", "_buffers", name)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        for hook in _global_buffer_registration_hooks.values():
            output = _dispatch("buffer_registration_hook", self, hook, self, name, tensor)
            if output is not None:
                tensor = output
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Optional[Parameter]) -> None:
        """Add a parameter (a :class:`Parameter` or ``None``) under ``name``."""
        self._check_new_name("parameter", "_parameters", name)
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters "
                             f"must be created explicitly. To express '{name}' as a function of "
                             "another Tensor, compute the value in the forward() method.")
        for hook in _global_parameter_registration_hooks.values():
            output = _dispatch("parameter_registration_hook", self, hook, self, name, param)
            if output is not None:
                param = output
        self._parameters[name] = param

    def add_module(self, name: str, module: Optional["Module"]) -> None:
        """Add a child module under ``name`` (reachable as an attribute)."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        module = self._run_module_registration_hooks(name, module)
        self._modules[name] = module

    def register_module(self, name: str, module: Optional["Module"]) -> None:
        """Alias for :meth:`add_module`."""
        self.add_module(name, module)

    def _run_module_registration_hooks(self, name, module):
        for hook in _global_module_registration_hooks.values():
            output = _dispatch("module_registration_hook", self, hook, self, name, module)
            if output is not None:
                module = output
        return module

    def get_submodule(self, target: str) -> "Module":
        """Return the submodule at the dotted path ``target`` (``""`` is ``self``)."""
        if target == "":
            return self
        mod: Module = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Put ``module`` at the dotted path ``target``; with ``strict`` it must already exist."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError("`module` is not an nn.Module, found " + str(type(module)))
        parent = self if len(atoms) == 1 else self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(parent._get_name() + " has no attribute `" + atoms[-1] + "`")
        if hasattr(parent, atoms[-1]):
            if not isinstance(getattr(parent, atoms[-1]), Module):
                raise AttributeError("`" + atoms[-1] + "` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def get_parameter(self, target: str) -> Parameter:
        """Return the parameter at the dotted path ``target``."""
        module_path, _, param_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, param_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + param_name + "`")
        param = getattr(mod, param_name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + param_name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """Return the buffer at the dotted path ``target``."""
        module_path, _, buffer_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, buffer_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + buffer_name + "`")
        buffer = getattr(mod, buffer_name)
        if buffer_name not in mod._buffers:
            raise AttributeError("`" + buffer_name + "` is not a buffer")
        return buffer

    def get_extra_state(self) -> Any:
        """Override (with :meth:`set_extra_state`) to put extra picklable state in the state dict."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state: Any) -> None:
        """Override (with :meth:`get_extra_state`) to restore the extra state from a state dict."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    # ----------------------------------------------------------------------------------------
    # Conversions
    # ----------------------------------------------------------------------------------------
    def _apply(self, fn, recurse=True):
        """Apply ``fn`` to every parameter, gradient and buffer (recursively by default).

        Parameters keep their identity (their data is replaced), as PyTorch does for dense CPU
        tensors; buffers are replaced by ``fn``'s result.
        """
        if recurse:
            for module in self.children():
                module._apply(fn)
        overwrite = hookgrad.__future__.get_overwrite_module_params_on_conversion()
        use_swap_tensors = hookgrad.__future__.get_swap_module_params_on_conversion()
        for key, param in self._parameters.items():
            if param is None:
                continue
            with hookgrad.no_grad():
                param_applied = fn(param)
            if use_swap_tensors:
                self._swap_in_converted(key, param, param_applied, fn)
                continue
            param_grad = param.grad
            replaced = overwrite and param_applied is not param
            if replaced:
                # a new Parameter object takes the old one's place, with a new converted gradient
                self._parameters[key] = param = Parameter(param_applied, param.requires_grad)
            elif param_applied is not param:
                _set_tensor_data(param, param_applied)
            if param_grad is not None:
                with hookgrad.no_grad():
                    grad_applied = fn(param_grad)
                if replaced:
                    param.grad = grad_applied.requires_grad_(param_grad.requires_grad)
                elif grad_applied is not param_grad:
                    _set_tensor_data(param.grad, grad_applied)
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def _swap_in_converted(self, key: str, param: Parameter, param_applied: Tensor, fn) -> None:
        """``_apply`` under ``set_swap_module_params_on_conversion(True)``: the parameter object (and
        its gradient's) stays, and takes the converted tensor's contents by ``swap_tensors``."""
        param_grad = param.grad
        try:
            param.grad = None  # the gradient is swapped on its own below
            hookgrad.utils.swap_tensors(param, Parameter(param_applied, requires_grad=param.requires_grad))
        except Exception as e:
            if param_grad is not None:
                param.grad = param_grad
            raise RuntimeError(f"_apply(): Couldn't swap {self._get_name()}.{key}") from e
        if param_grad is None:
            return
        with hookgrad.no_grad():
            grad_applied = fn(param_grad)
        grad_applied.requires_grad_(param_grad.requires_grad)
        try:
            hookgrad.utils.swap_tensors(param_grad, grad_applied)
        except Exception as e:
            raise RuntimeError(f"_apply(): Couldn't swap {self._get_name()}.{key}.grad") from e
        param.grad = param_grad

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        """Call ``fn`` on every submodule (children first, recursively), then on ``self``."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def cpu(self) -> "Module":
        """Move parameters and buffers to the CPU (where they already are)."""
        return self._apply(lambda t: t.cpu())

    def cuda(self, device: Any = None) -> "Module":
        """hookgrad runs on the CPU only: moving to CUDA goes through ``Tensor.cuda``."""
        return self._apply(lambda t: t.cuda(device))

    def type(self, dst_type: Any) -> "Module":
        """Cast all parameters and buffers to ``dst_type``."""
        return self._apply(lambda t: t.type(dst_type))

    def float(self) -> "Module":
        """Cast floating point parameters and buffers to float32."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self) -> "Module":
        """Cast floating point parameters and buffers to float64."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self) -> "Module":
        """Cast floating point parameters and buffers to float16."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self) -> "Module":
        """Cast floating point parameters and buffers to bfloat16 (where the core has it)."""
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def to_empty(self, *, device: Any, recurse: bool = True) -> "Module":
        """Replace parameters and buffers with uninitialized tensors of the same shape."""
        return self._apply(lambda t: hookgrad.empty_like(t, device=device), recurse=recurse)

    def to(self, *args, **kwargs) -> "Module":
        """Move and/or cast parameters and buffers: ``to(device)``, ``to(dtype)``,
        ``to(device, dtype)``, ``to(tensor)``; only floating point (and complex) tensors change
        dtype."""
        device, dtype, non_blocking, memory_format = _parse_to(*args, **kwargs)
        if dtype is not None:
            if not (dtype.is_floating_point or dtype.is_complex):
                raise TypeError("nn.Module.to only accepts floating point or complex dtypes, "
                                f"but got desired dtype={dtype}")
            if dtype.is_complex:
                warnings.warn("Complex modules are a new feature under active development whose design "
                              "may change, and some modules might not work as expected when using "
                              "complex tensors as parameters or buffers.", stacklevel=2)

        def convert(t):
            if dtype is not None and (t.is_floating_point() or t.is_complex()):
                t = t.to(dtype)
            if device is not None:
                t = t.to(device)
            if memory_format is not None and t.dim() in (4, 5):   # torch relays out only these
                t = t.to(memory_format=memory_format)
            return t

        return self._apply(convert)

    # ----------------------------------------------------------------------------------------
    # Hook registration
    # ----------------------------------------------------------------------------------------
    def register_full_backward_pre_hook(self, hook: Callable[..., Any],
                                        prepend: bool = False, live: bool = False) -> RemovableHandle:
        """Register ``hook(module, grad_output) -> None or new grad_output``.

        It runs each time the gradients w.r.t. the module's outputs arrive, before they flow
        into the module; a returned tuple (same length) replaces ``grad_output``. Global pre-hooks
        (``register_module_full_backward_pre_hook``) run first. While such hooks exist the
        forward sees views of the inputs and the caller gets views of the outputs, so modifying
        them in place raises. ``live``: see :meth:`register_full_backward_hook`.
        """
        if live:
            check_live_registration(self, hook, "register_full_backward_pre_hook")
        handle = RemovableHandle(self._backward_pre_hooks, extra_dict=live_hook_ids if live else None)
        self._backward_pre_hooks[handle.id] = hook
        if live:
            live_hook_ids[handle.id] = True
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        note_registration(self._backward_pre_hooks, handle.id, prepend)
        return handle

    def register_backward_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Deprecated: register a legacy backward hook on the ``grad_fn`` of the first output.

        Use :meth:`register_full_backward_hook`, whose ``grad_input`` really is the gradient
        w.r.t. the module's inputs. Legacy and full hooks cannot be mixed on one module.
        """
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a "
                               "single Module. Please use only one of them.")
        if live_hook_ids:
            check_live_registration(self, hook, "register_backward_hook", legacy=True)
        self._is_full_backward_hook = False
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        note_registration(self._backward_hooks, handle.id)
        return handle

    def register_full_backward_hook(self, hook: Callable[..., Any],
                                    prepend: bool = False, live: bool = False) -> RemovableHandle:
        """Register ``hook(module, grad_input, grad_output) -> None or new grad_input``.

        Firing rules: (1) when the gradients w.r.t. the module's inputs are computed; (2) if no
        input requires grad, when the gradients w.r.t. its outputs are computed (with a
        UserWarning); (3) never if no output requires grad. ``grad_input`` has one entry per
        positional argument (None for non-tensors; zeros, as in PyTorch, for a tensor that does not
        require grad while another input does); ``grad_output`` one per output. A returned tuple (same length) replaces ``grad_input``. Global hooks
        (``register_module_full_backward_hook``) run first. While such hooks exist the forward
        sees views of the inputs and the caller gets views of the outputs.

        With ``live=True`` (hookgrad only) the hook is looked up when backward reaches the module:
        removing its handle between forward and backward stops it. And the inputs and outputs
        are not replaced by views, so in-place changes to them are allowed (see
        ``_live_backward_hook``). ``grad_input`` and ``grad_output`` are the default hooks'.
        """
        if live:
            check_live_registration(self, hook, "register_full_backward_hook")
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a "
                               "single Module. Please use only one of them.")
        self._is_full_backward_hook = True
        handle = RemovableHandle(self._backward_hooks, extra_dict=live_hook_ids if live else None)
        self._backward_hooks[handle.id] = hook
        if live:
            live_hook_ids[handle.id] = True
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        note_registration(self._backward_hooks, handle.id, prepend)
        return handle

    def _get_backward_hooks(self):
        """(full hooks, legacy hooks) that apply to this module: global ones first."""
        if _global_is_full_backward_hook is not False and self._is_full_backward_hook is not False:
            return [*_global_backward_hooks.values(), *self._backward_hooks.values()], []  # the usual case
        full_backward_hooks: list = []
        non_full_backward_hooks: list = []
        if _global_is_full_backward_hook is True:
            full_backward_hooks += _global_backward_hooks.values()
        elif _global_is_full_backward_hook is False:
            non_full_backward_hooks += _global_backward_hooks.values()
        if self._is_full_backward_hook is True:
            full_backward_hooks += self._backward_hooks.values()
        elif self._is_full_backward_hook is False:
            non_full_backward_hooks += self._backward_hooks.values()
        return full_backward_hooks, non_full_backward_hooks

    def _get_backward_pre_hooks(self):
        """The full backward pre-hooks that apply to this module: global ones first."""
        return [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]

    def _maybe_warn_non_full_backward_hook(self, inputs, result, grad_fn) -> None:
        """Warn (FutureWarning) where a legacy backward hook cannot see the whole gradient."""
        if not isinstance(result, Tensor):
            if not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
                warnings.warn("Using non-full backward hooks on a Module that does not return a single "
                              "Tensor or a tuple of Tensors is deprecated and will be removed in future "
                              "versions. This hook will be missing some of the grad_output. Please use "
                              "register_full_backward_hook to get the documented behavior.",
                              FutureWarning, stacklevel=2)
                return
        else:
            result = (result,)
        if not isinstance(inputs, Tensor):
            if not (isinstance(inputs, tuple) and all(isinstance(i, Tensor) for i in inputs)):
                warnings.warn("Using non-full backward hooks on a Module that does not take as input a "
                              "single Tensor or a tuple of Tensors is deprecated and will be removed in "
                              "future versions. This hook will be missing some of the grad_input. Please "
                              "use register_full_backward_hook to get the documented behavior.",
                              FutureWarning, stacklevel=2)
                return
        else:
            inputs = (inputs,)
        out_grad_fn = {r.grad_fn for r in result if r.grad_fn is not None}
        if len(out_grad_fn) == 0 or (len(out_grad_fn) == 1 and grad_fn not in out_grad_fn):
            warnings.warn("Using a non-full backward hook when outputs are nested in python data "
                          "structure is deprecated and will be removed in future versions. This hook "
                          "will be missing some grad_output.", FutureWarning, stacklevel=2)
        elif len(out_grad_fn) > 1:
            warnings.warn("Using a non-full backward hook when outputs are generated by different "
                          "autograd Nodes is deprecated and will be removed in future versions. This "
                          "hook will be missing some grad_output. Please use "
                          "register_full_backward_hook to get the documented behavior.",
                          FutureWarning, stacklevel=2)
        else:
            inputs_grad_fn = {i.grad_fn for i in inputs if i.grad_fn is not None}
            next_functions = {n[0] for n in grad_fn.next_functions}
            if inputs_grad_fn != next_functions:
                warnings.warn("Using a non-full backward hook when the forward contains multiple "
                              "autograd Nodes is deprecated and will be removed in future versions. "
                              "This hook will be missing some grad_input. Please use "
                              "register_full_backward_hook to get the documented behavior.",
                              FutureWarning, stacklevel=2)

    def register_forward_pre_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Register ``hook(module, args) -> None or new args`` to run before ``forward``.

        A non-tuple return is wrapped into a 1-tuple. With ``with_kwargs`` the hook is
        ``hook(module, args, kwargs) -> None or (new_args, new_kwargs)``. ``prepend`` puts it
        before this module's other pre-hooks (global ones still run first).
        """
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        note_registration(self._forward_pre_hooks, handle.id, prepend)
        return handle

    def register_forward_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                              with_kwargs: bool = False, always_call: bool = False) -> RemovableHandle:
        """Register ``hook(module, args, output) -> None or new output`` to run after ``forward``.

        With ``with_kwargs`` it is ``hook(module, args, kwargs, output)``. With ``always_call`` it
        also runs when forward (or an earlier hook) raises; its own exception then becomes a
        warning and the original one propagates.
        """
        handle = RemovableHandle(self._forward_hooks,
                                 extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        note_registration(self._forward_hooks, handle.id, prepend)
        return handle

    # ----------------------------------------------------------------------------------------
    # Calling
    # ----------------------------------------------------------------------------------------
    def _wrapped_call_impl(self, *args, **kwargs):
        # Fast path: nothing is hooked anywhere, so the call is just forward. (The same test as at
        # the top of _call_impl, written out because a method call would double the cost here.)
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks or _global_forward_pre_hooks or _global_forward_hooks
                or _global_backward_hooks or _global_backward_pre_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(self.forward, args, kwargs)

    def _call_impl(self, *args, **kwargs):
        forward_call = self.forward
        if not (self._backward_hooks or self._backward_pre_hooks or self._forward_hooks
                or self._forward_pre_hooks or _global_backward_pre_hooks or _global_backward_hooks
                or _global_forward_hooks or _global_forward_pre_hooks):
            return forward_call(*args, **kwargs)
        return self._call_with_hooks(forward_call, args, kwargs)

    def _call_with_hooks(self, forward_call, args, kwargs, _counted=False):
        """The one call path when some hook exists: forward pre-hooks, the backward-hook set-up
        on the inputs, ``forward``, forward hooks, the backward-hook set-up on the outputs; on an
        error, the ``always_call`` forward hooks that have not run yet. Every registry is read
        when its step comes, so a hook registered by an earlier step (or by ``forward``) runs."""
        if _hook_context.ON[0] and not _counted:  # hookgrad.hooks.context() needs the call's index
            return _hook_context.counted_call(self, self._call_with_hooks, forward_call, args, kwargs)
        if self._is_full_backward_hook is True and not (
                self._forward_pre_hooks or self._forward_hooks or self._backward_pre_hooks or _counted
                or _global_forward_pre_hooks or _global_forward_hooks or _global_backward_pre_hooks
                or live_hook_ids or _global_is_full_backward_hook is False):
            # the usual debugging set-up, only full backward hooks: the steps below, less the tests
            # for the kinds that are absent (forward hooks that ``forward`` registers still run)
            # BackwardHook(self, hooks, _NO_PRE_HOOKS, _dispatch), its __init__ written out (this
            # runs on every hooked call; test_backward_hook_made_inline_matches_init keeps them in step)
            bw_hook = _new_object(BackwardHook)
            bw_hook.user_hooks = ([*_global_backward_hooks.values(), *self._backward_hooks.values()]
                                  if _global_backward_hooks else [*self._backward_hooks.values()])
            bw_hook.user_pre_hooks = _NO_PRE_HOOKS
            bw_hook.module = self
            bw_hook.dispatch = _dispatch
            result = latest = None
            called_always_called_hooks = ()
            try:
                args = bw_hook.setup_input_hook(args)
                result = forward_call(*args, **kwargs)
                if _global_forward_hooks or self._forward_hooks:
                    called_always_called_hooks = set()
                    latest = [result]
                    result = self._run_forward_hooks(args, kwargs, result, called_always_called_hooks, latest)
                if result.__class__ is Tensor and not _backward_hook_call_observers:
                    return bw_hook.setup_output_hook(result)  # _backward_hooked_output's usual case
                return self._backward_hooked_output(bw_hook, result)
            except Exception:
                if latest is not None:
                    result = latest[0]
                self._run_always_called_hooks(args, kwargs, result, called_always_called_hooks)
                raise
        if not (self._backward_hooks or self._forward_pre_hooks or self._backward_pre_hooks or _counted
                or _global_backward_hooks or _global_forward_pre_hooks or _global_backward_pre_hooks):
            # the other usual set-up, only forward hooks: the steps below without the backward set-up
            result = None
            called_always_called_hooks = ()
            latest = None
            try:
                result = forward_call(*args, **kwargs)
                if _global_forward_hooks or self._forward_hooks_with_kwargs or self._forward_hooks_always_called:
                    called_always_called_hooks = set()
                    latest = [result]
                    result = self._run_forward_hooks(args, kwargs, result, called_always_called_hooks, latest)
                elif self._forward_hooks:
                    # this module's own plain hooks: _run_forward_hooks written out (none is always_call,
                    # so the error path sees ``result`` as they left it)
                    for hook in tuple(self._forward_hooks.values()):
                        if _hook_observer is None and not _hook_context.ON[0]:
                            new = hook(self, args, result)
                        else:
                            new = _dispatch("forward_hook", self, hook, self, args, result)
                        if new is not None:
                            result = new
                return result
            except Exception:
                if latest is not None:
                    result = latest[0]
                self._run_always_called_hooks(args, kwargs, result, called_always_called_hooks)
                raise
        result = None
        called_always_called_hooks = ()  # becomes a set when forward hooks run
        latest = None  # [the result as the forward hooks have left it], while _run_forward_hooks runs
        pre_hook_progress = None  # while pre-hooks run: the args/kwargs as they have left them so far
        try:
            # The backward hook lists are taken before any forward hook runs.
            full_backward_hooks = non_full_backward_hooks = backward_pre_hooks = None
            if self._backward_pre_hooks or _global_backward_pre_hooks:
                backward_pre_hooks = self._get_backward_pre_hooks()
            if self._backward_hooks or _global_backward_hooks:
                if _global_is_full_backward_hook is not False and self._is_full_backward_hook is not False:
                    # _get_backward_hooks' usual case, written out (this runs on every hooked call)
                    full_backward_hooks = [*_global_backward_hooks.values(), *self._backward_hooks.values()]
                else:
                    full_backward_hooks, non_full_backward_hooks = self._get_backward_hooks()
            live = None
            if live_hook_ids and (full_backward_hooks or backward_pre_hooks):
                live = live_snapshot(self)

            if _global_forward_pre_hooks or self._forward_pre_hooks:
                pre_hook_progress = [args, kwargs]
                args, kwargs = self._run_forward_pre_hooks(args, kwargs, pre_hook_progress)
                pre_hook_progress = None

            bw_hook = None
            if live is not None:
                bw_hook = LiveBackwardHook(self, live, _dispatch)
                args = bw_hook.setup_input_hook(args)
            elif full_backward_hooks or backward_pre_hooks:
                bw_hook = BackwardHook(self, full_backward_hooks or [], backward_pre_hooks or [],
                                       dispatch=_dispatch if not _counted else _dispatch_for_this_call())
                args = bw_hook.setup_input_hook(args)

            result = forward_call(*args, **kwargs)

            if _global_forward_hooks or self._forward_hooks:
                called_always_called_hooks = set()
                latest = [result]  # what the error path passes on if a forward hook raises
                result = self._run_forward_hooks(args, kwargs, result, called_always_called_hooks, latest)

            if bw_hook is not None:
                result = self._backward_hooked_output(bw_hook, result)

            if non_full_backward_hooks:
                self._install_legacy_backward_hooks(non_full_backward_hooks, args, result)
            return result
        except Exception:
            if pre_hook_progress is not None:
                args, kwargs = pre_hook_progress  # as torch's: the args as the earlier pre-hooks left them
            if latest is not None:
                result = latest[0]  # as torch's: the result as the forward hooks before the error left it
            self._run_always_called_hooks(args, kwargs, result, called_always_called_hooks)
            raise

    def _run_forward_pre_hooks(self, args, kwargs, progress=None):
        """Global, then local forward pre-hooks; each may replace the args (and kwargs), which are
        kept in ``progress`` as they go, for the error path."""
        with_kwargs_ids = self._forward_pre_hooks_with_kwargs
        for hook_id, hook in (*_global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()):
            if hook_id in with_kwargs_ids:
                new = _dispatch("forward_pre_hook", self, hook, self, args, kwargs)
                if new is not None:
                    if isinstance(new, tuple) and len(new) == 2:
                        args, kwargs = new
                    else:
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {new}.")
            else:
                new = _dispatch("forward_pre_hook", self, hook, self, args)
                if new is not None:
                    args = new if isinstance(new, tuple) else (new,)
            if progress is not None:
                progress[0], progress[1] = args, kwargs
        return args, kwargs

    def _backward_hooked_output(self, bw_hook, result):
        """``result`` passed through the full backward hooks' output identity (torch's warning when it
        is no Tensor or tuple), shown to the call observers."""
        if result.__class__ is not Tensor and not isinstance(result, (Tensor, tuple)):
            warnings.warn("For backward hooks to be called, module output should be a Tensor or "
                          f"a tuple of Tensors but received {type(result)}",
                          stacklevel=_stacklevel_outside_hookgrad())
        result = bw_hook.setup_output_hook(result)
        if _backward_hook_call_observers:
            for observer in tuple(_backward_hook_call_observers):
                observer(self, bw_hook, result)
        return result

    def _run_forward_hooks(self, args, kwargs, result, called_always_called_hooks, latest=None):
        """Global, then local forward hooks; each may replace the result (kept in ``latest[0]`` as
        it goes, for the error path). The ids of always_call hooks are noted so that the error path
        does not run them a second time."""
        local_kw = self._forward_hooks_with_kwargs
        local_always = self._forward_hooks_always_called
        for hook_id, hook in (*_global_forward_hooks.items(), *self._forward_hooks.items()):
            if hook_id in local_always or hook_id in _global_forward_hooks_always_called:
                called_always_called_hooks.add(hook_id)
            if hook_id in local_kw or hook_id in _global_forward_hooks_with_kwargs:
                new = _dispatch("forward_hook", self, hook, self, args, kwargs, result)
            else:
                new = _dispatch("forward_hook", self, hook, self, args, result)
            if new is not None:
                result = new
                if latest is not None:
                    latest[0] = result
        return result

    def _run_always_called_hooks(self, args, kwargs, result, called_always_called_hooks):
        """The error path: forward hooks registered with always_call that have not run yet run
        once (global ones first, never with kwargs); their own errors become warnings, and the
        original error propagates."""
        for registry, with_kwargs, always, scope in (
                (_global_forward_hooks, (), _global_forward_hooks_always_called, "global module"),
                (self._forward_hooks, self._forward_hooks_with_kwargs, self._forward_hooks_always_called,
                 "module")):
            for hook_id, hook in registry.items():
                if hook_id not in always or hook_id in called_always_called_hooks:
                    continue
                try:
                    if hook_id in with_kwargs:
                        new = _dispatch("forward_hook", self, hook, self, args, kwargs, result)
                    else:
                        new = _dispatch("forward_hook", self, hook, self, args, result)
                    if new is not None:
                        result = new
                except Exception as e:  # noqa: BLE001 - the original error wins
                    warnings.warn(f"{scope} forward hook with ``always_call=True`` raised an exception "
                                  f"that was silenced as another error was raised in forward: {str(e)}",
                                  stacklevel=4)

    def _install_legacy_backward_hooks(self, hooks, args, result):
        """Legacy backward hooks go on the ``grad_fn`` of the first output tensor."""
        var = result
        while not isinstance(var, Tensor):
            if isinstance(var, dict):
                var = next(v for v in var.values() if isinstance(v, Tensor))
            else:
                var = var[0]
        grad_fn = var.grad_fn
        if grad_fn is not None:
            for hook in hooks:
                grad_fn._add_post_hook(_LegacyBackwardHook(hook, self))
            self._maybe_warn_non_full_backward_hook(args, result, grad_fn)

    __call__: Callable[..., Any] = _wrapped_call_impl

    def _call_through_call_impl(self, *args, **kwargs):
        return self._call_impl(*args, **kwargs)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # __call__'s fast path skips _call_impl; a subclass that overrides _call_impl gets every
        # call routed through it, as in PyTorch.
        if "_call_impl" in cls.__dict__ and "__call__" not in cls.__dict__:
            cls.__call__ = Module._call_through_call_impl
        init = cls.__dict__.get("__init__")
        if init is not None and cls.__module__.startswith("hookgrad.") and _takes_device(init):
            cls.__init__ = _built_on_device_argument(init)

    # ----------------------------------------------------------------------------------------
    # Pickling and attribute access
    # ----------------------------------------------------------------------------------------
    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_compiled_call_impl", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        # Modules pickled by older versions may lack some of the registries.
        for name in ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs",
                     "_forward_hooks_always_called", "_state_dict_hooks", "_state_dict_pre_hooks",
                     "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks", "_backward_pre_hooks"):
            if name not in self.__dict__:
                object.__setattr__(self, name, OrderedDict())
        if "_non_persistent_buffers_set" not in self.__dict__:
            object.__setattr__(self, "_non_persistent_buffers_set", set())
        if "_is_full_backward_hook" not in self.__dict__:
            object.__setattr__(self, "_is_full_backward_hook", None)

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails: parameters, buffers and submodules live in
        # their own dicts, not in __dict__.
        d = self.__dict__
        if "_parameters" in d:
            params = d["_parameters"]
            if name in params:
                return params[name]
        if "_buffers" in d:
            buffers = d["_buffers"]
            if name in buffers:
                return buffers[name]
        if "_modules" in d:
            modules = d["_modules"]
            if name in modules:
                return modules[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        def remove_from(*dicts_or_sets) -> None:
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers, self._non_persistent_buffers_set)
                modules[name] = self._run_module_registration_hooks(name, value)
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                    "(torch.nn.Module or None expected)")
                modules[name] = self._run_module_registration_hooks(name, value)
            else:
                buffers = self.__dict__.get("_buffers")
                if isinstance(value, Buffer) or (buffers is not None and name in buffers):
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                        "(torch.nn.Buffer, torch.Tensor or None expected)")
                    if isinstance(value, Buffer):
                        persistent = value.persistent
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    if getattr(self.register_buffer, "__func__", None) is Module.register_buffer:
                        self.register_buffer(name, value, persistent)
                    elif "persistent" in inspect.signature(self.register_buffer).parameters:
                        self.register_buffer(name, value, persistent)
                    else:
                        if not persistent:
                            raise RuntimeError("Registering a non-persistent buffer on a Module subclass "
                                               "that implements register_buffer() without the persistent "
                                               "argument is not allowed.")
                        self.register_buffer(name, value)
                else:
                    super().__setattr__(name, value)

    def __delattr__(self, name) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            super().__delattr__(name)

    # ----------------------------------------------------------------------------------------
    # state_dict
    # ----------------------------------------------------------------------------------------
    def _register_state_dict_hook(self, hook):
        """Private post-hook ``hook(module, state_dict, prefix, local_metadata)``; a non-None
        return replaces the state dict (which only matters for the root module's call)."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook that was "
                               "previously registered via register_state_dict_post_hook")
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook):
        """Register ``hook(module, state_dict, prefix, local_metadata) -> None``, run after this
        module's ``state_dict``; it may edit ``state_dict`` in place and must return None."""
        hook._from_public_api = True
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        note_registration(self._state_dict_hooks, handle.id)
        return handle

    def register_state_dict_pre_hook(self, hook):
        """Register ``hook(module, prefix, keep_vars) -> None``, run before ``state_dict``."""
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        note_registration(self._state_dict_pre_hooks, handle.id)
        return handle

    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        """Put this module's own parameters and persistent buffers (not its children's) into
        ``destination``; detached unless ``keep_vars``."""
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if getattr(self.__class__, "get_extra_state", Module.get_extra_state) is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An ordered dict of every parameter and persistent buffer, keyed by dotted name, with
        a ``_metadata`` attribute holding each module's ``version``."""
        if len(args) > 0:
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.state_dict for details.", FutureWarning, stacklevel=2)
            if destination is None:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            _dispatch("state_dict_pre_hook", self, hook, self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            hook_result = _dispatch("state_dict_hook", self, hook, self, destination, prefix, local_metadata)
            if not getattr(hook, "_from_public_api", False):
                if hook_result is not None:
                    destination = hook_result
            elif hook_result is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return destination

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """Private pre-hook ``hook([module,] state_dict, prefix, local_metadata, strict,
        missing_keys, unexpected_keys, error_msgs)``; ``with_module`` prepends the module."""
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = _WrappedHook(hook, self if with_module else None)
        return handle

    def register_load_state_dict_pre_hook(self, hook):
        """Register ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs) -> None``, run before this module loads its state."""
        handle = self._register_load_state_dict_pre_hook(hook, with_module=True)
        note_registration(self._load_state_dict_pre_hooks, handle.id)
        return handle

    def register_load_state_dict_post_hook(self, hook):
        """Register ``hook(module, incompatible_keys) -> None``, run after this module (and its
        children) loaded; editing ``incompatible_keys`` in place changes what ``strict`` sees."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        note_registration(self._load_state_dict_post_hooks, handle.id)
        return handle

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs) -> None:
        """Copy this module's own parameters and persistent buffers from ``state_dict``,
        recording problems in ``missing_keys``, ``unexpected_keys`` and ``error_msgs``."""
        for hook in self._load_state_dict_pre_hooks.values():
            _dispatch("load_state_dict_pre_hook", self, hook, state_dict, prefix, local_metadata, strict,
                      missing_keys, unexpected_keys, error_msgs)

        persistent_buffers = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(), persistent_buffers.items())
                       if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        use_swap_tensors = hookgrad.__future__.get_swap_module_params_on_conversion()

        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or '
                                  f"Tensor-like object from checkpoint but received {type(input_param)}")
                continue
            # A 1-element 1-d tensor loads into a 0-d parameter (old checkpoints stored those).
            if len(param.shape) == 0 and len(input_param.shape) == 1 and input_param.shape[0] == 1:
                input_param = input_param[0]
            if tuple(input_param.shape) != tuple(param.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {input_param.shape} "
                                  f"from checkpoint, the shape in current model is {param.shape}.")
                continue
            if param.is_meta and not input_param.is_meta and not assign:
                warnings.warn(f"for {key}: copying from a non-meta parameter in the checkpoint to a meta "
                              "parameter in the current model, which is a no-op. (Did you mean to "
                              "pass `assign=True` to assign items in the state dictionary to their "
                              "corresponding key in the module instead of copying them in place?)", stacklevel=2)
            try:
                with hookgrad.no_grad():
                    if use_swap_tensors:
                        _swap_in_loaded(param, input_param, assign)
                    elif assign:
                        if isinstance(param, Parameter):
                            if not isinstance(input_param, Parameter):
                                input_param = Parameter(input_param, requires_grad=param.requires_grad)
                            else:
                                input_param.requires_grad_(param.requires_grad)
                        setattr(self, name, input_param)
                    else:
                        param.copy_(input_param)
            except Exception as ex:  # noqa: BLE001 - reported like PyTorch, as an error message
                action = "swapping" if use_swap_tensors else "copying"
                error_msgs.append(f'While {action} the parameter named "{key}", whose dimensions in the model '
                                  f"are {param.size()} and whose dimensions in the checkpoint are "
                                  f"{input_param.size()}, an exception occurred : {ex.args}.")

        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if getattr(self.__class__, "set_extra_state", Module.set_extra_state) is not Module.set_extra_state:
            if extra_state_key in state_dict:
                self.set_extra_state(state_dict[extra_state_key])
            elif strict:
                missing_keys.append(extra_state_key)
        elif strict and extra_state_key in state_dict:
            unexpected_keys.append(extra_state_key)

        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_state_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict: Mapping, strict: bool = True, assign: bool = False):
        """Copy parameters and buffers from ``state_dict`` into this module and its children.

        Returns ``_IncompatibleKeys(missing_keys, unexpected_keys)``; with ``strict`` any such key
        (and any size mismatch, always) raises ``RuntimeError('Error(s) in loading state_dict
        for <Class>: ...')``. With ``assign`` the module takes the given tensors instead of
        copying into its own.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys: list = []
        unexpected_keys: list = []
        error_msgs: list = []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, missing_keys,
                                         unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state_dict = {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)}
                    load(child, child_state_dict, child_prefix)
            incompatible_keys = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                out = _dispatch("load_state_dict_post_hook", module, hook, module, incompatible_keys)
                if out is not None:
                    raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if incompatible_keys need to be "
                                         "modified, it should be done inplace.")

        load(self, state_dict)
        del load

        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # ----------------------------------------------------------------------------------------
    # Traversal
    # ----------------------------------------------------------------------------------------
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate: bool = True):
        seen: set = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or id(v) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(v))
                yield module_prefix + ("." if module_prefix else "") + k, v

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Yield the parameters of this module (and, with ``recurse``, of all submodules)."""
        for _name, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """Yield ``(dotted name, parameter)``; shared parameters once unless ``remove_duplicate``
        is False."""
        yield from self._named_members(lambda module: module._parameters.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Yield the buffers of this module (and, with ``recurse``, of all submodules)."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """Yield ``(dotted name, buffer)`` pairs."""
        yield from self._named_members(lambda module: module._buffers.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def children(self) -> Iterator["Module"]:
        """Yield the immediate child modules."""
        for _name, module in self.named_children():
            yield module

    def named_children(self):
        """Yield ``(name, child)`` for each distinct immediate child module."""
        memo: set = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def modules(self, remove_duplicate: bool = True) -> Iterator["Module"]:
        """Yield every module in the tree, ``self`` first (depth first, each module once)."""
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_modules(self, memo: Optional[set] = None, prefix: str = "", remove_duplicate: bool = True):
        """Yield ``(dotted name, module)`` for every module in the tree, ``self`` first."""
        if memo is None:
            memo = set()
        if self not in memo:
            if remove_duplicate:
                memo.add(self)
            yield prefix, self
            for name, module in self._modules.items():
                if module is None:
                    continue
                submodule_prefix = prefix + ("." if prefix else "") + name
                yield from module.named_modules(memo, submodule_prefix, remove_duplicate)

    def train(self, mode: bool = True) -> "Module":
        """Set training mode (``mode=True``) or evaluation mode on this module and its children."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> "Module":
        """Set evaluation mode: ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Set ``requires_grad`` on every parameter."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to None (default) or to zeros."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    def share_memory(self) -> "Module":
        """No-op on hookgrad (NumPy memory is process-local); kept for API compatibility."""
        return self

    # ----------------------------------------------------------------------------------------
    # Representation
    # ----------------------------------------------------------------------------------------
    def _get_name(self):
        return self.__class__.__name__

    def extra_repr(self) -> str:
        """The module-specific part of ``repr``; override it to show a layer's settings."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = []
        for key, module in self._modules.items():
            child_lines.append("(" + key + "): " + _addindent(repr(module), 2))
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        return main_str + ")"

    def __dir__(self):
        keys = (dir(self.__class__) + list(self.__dict__.keys()) + list(self._parameters.keys())
                + list(self._modules.keys()) + list(self._buffers.keys()))
        return sorted(key for key in keys if not key[0].isdigit())


class _LegacyBackwardHook(_WrappedHook):
    """A legacy module backward hook installed on an output's ``grad_fn`` (observed as
    ``"backward_hook"``)."""

    def __call__(self, *args: Any) -> Any:
        module = self.module()
        if module is None:
            raise RuntimeError("You are trying to call the hook of a dead Module!")
        return _dispatch("backward_hook", module, self.hook, module, *args)
