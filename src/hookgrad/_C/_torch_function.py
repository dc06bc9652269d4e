"""The ``__torch_function__`` protocol: its per-thread switches, the function-mode stack, and the
dispatch that every public hookgrad function, Tensor method and Tensor property runs through.

Who is asked, as in torch: the mode on top of the current thread's stack first (popped while its
``__torch_function__`` runs, so calls it makes go to the next mode), then the ``__torch_function__``
of each overloading argument, subclasses before their bases, until one returns something other
than ``NotImplemented``. ``DisableTorchFunctionSubclass`` turns the arguments' overrides off for a
``with`` block, ``DisableTorchFunction`` turns modes off too, ``_EnableTorchFunction`` turns both on.

Cost when nothing overrides anything: each public entry point reads ``LIVE[0]``, the number of
overloading Tensor subclasses defined so far plus the modes pushed (in any thread), and goes on
to its own code when it is 0. Non-Tensor tensor-likes (any object whose class has a
``__torch_function__``) are noticed where a tensor argument is checked (``_argcheck``).
"""
from __future__ import annotations

import enum
import functools
import threading

ENABLED, SUBCLASSES_DISABLED, ALL_DISABLED = "enabled", "subclasses disabled", "all disabled"

# overloading Tensor subclasses defined so far + modes on any thread's stack
LIVE = [0]
_TENSOR = [None]  # hookgrad.Tensor, set on first use (this module loads before it)
NO_DISPATCH = object()  # dispatch(...)'s answer when no override applies: the caller runs its own code


class _ThreadState(threading.local):
    def __init__(self):
        self.state = ENABLED
        self.modes = []
        # while a backward pass's own code runs (with overrides off): the state backward() was called
        # under, for the user code the pass calls (see ``call_as_caller``); None at any other time
        self.backward_caller = None
        self.skip = False  # redispatch_function: the next call consults no override


_local = _ThreadState()


def state() -> str:
    return _local.state


class StateSwitch:
    """Sets the torch-function state for a ``with`` block and restores the previous one after."""

    target = ENABLED

    def __enter__(self):
        self._previous = _local.state
        # disabling only subclasses leaves an "all disabled" state as it is, as in torch
        if not (self.target == SUBCLASSES_DISABLED and self._previous == ALL_DISABLED):
            _local.state = self.target
        return self

    def __exit__(self, *exc_info):
        _local.state = self._previous
        return False


class _EnableTorchFunction(StateSwitch):
    """``with torch._C._EnableTorchFunction():`` overrides count again inside the block."""

    target = ENABLED


class _DisableSubclasses(StateSwitch):
    target = SUBCLASSES_DISABLED


class _DisableAll(StateSwitch):
    target = ALL_DISABLED


class _BackwardPass(StateSwitch):
    """The backward pass's own formulas run with overrides off (torch's are C++ kernels); the state of
    the caller is kept for the Python code the pass calls back (see ``call_as_caller``)."""
    target = ALL_DISABLED

    def __enter__(self):
        self._previous_caller = _local.backward_caller
        _local.backward_caller = _local.state
        return super().__enter__()

    def __exit__(self, *exc_info):
        _local.backward_caller = self._previous_caller
        return super().__exit__(*exc_info)


# ``call_as_caller(fn, *args)``: ``fn(*args)``, and when the backward pass's own code calls it, under the
# torch-function state backward() was called under, as torch's engine runs hooks, custom Function
# backwards and saved-tensor hooks (modes and subclasses see their ops). Its frame is skipped by
# warnings' ``stacklevel`` as the entry points are (see ``_ENTRY_FILE`` below).
_CALL_AS_CALLER_SOURCE = """
def call_as_caller(fn, *args):
    local = _local
    caller = local.backward_caller
    if caller is None:
        return fn(*args)
    previous = local.state
    local.state = caller
    local.backward_caller = None
    try:
        return fn(*args)
    finally:
        local.state = previous
        local.backward_caller = caller
"""


def _is_torch_function_enabled() -> bool:
    return _local.state == ENABLED


def _is_torch_function_all_disabled() -> bool:
    return _local.state == ALL_DISABLED


def _is_torch_function_mode_enabled() -> bool:
    return bool(_local.modes) and _local.state != ALL_DISABLED


# ---- the mode stack ------------------------------------------------------------------------------------
def _push_on_torch_function_stack(mode) -> None:
    if _TENSOR[0] is None:
        from .._tensor import Tensor
        _TENSOR[0] = Tensor
        _PLAIN_KINDS.add(Tensor)
    if not _tensor_entry_points_installed:
        install_tensor_entry_points()
    _local.modes.append(mode)
    LIVE[0] += 1


def _pop_torch_function_stack():
    modes = _local.modes
    if not modes:
        raise RuntimeError("Trying to pop from an empty mode stack")
    LIVE[0] -= 1
    return modes.pop()


def _len_torch_function_stack() -> int:
    return len(_local.modes)


def _get_function_stack_at(index):
    modes = _local.modes
    if not -len(modes) <= index < len(modes):
        raise RuntimeError("Tried to get stack at idx that's too big")
    return modes[index]


# ---- which classes overload ---------------------------------------------------------------------------
def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """Use as a Tensor subclass's ``__torch_function__`` to opt out of the protocol: ``func`` runs on the
    arguments as given, and results are plain tensors."""
    with _DisableSubclasses():
        return func(*args, **(kwargs or {}))


def note_subclass(cls) -> None:
    """Called for every new Tensor subclass: one whose ``__torch_function__`` is not the opt-out turns
    the dispatch checks on for good."""
    if _TENSOR[0] is None:
        from .._tensor import Tensor
        _TENSOR[0] = Tensor
        _PLAIN_KINDS.add(Tensor)
    if getattr(cls, "__torch_function__", None) is _disabled_torch_function_impl:
        _PLAIN_KINDS.add(cls)
    else:
        if not _tensor_entry_points_installed:
            install_tensor_entry_points()
        LIVE[0] += 1


def _overloads(kind, tensor_cls, include_plain: bool) -> bool:
    if kind is tensor_cls:
        return include_plain
    handler = getattr(kind, "__torch_function__", None)
    return handler is not None and handler is not _disabled_torch_function_impl


def overloaded_args(values, include_plain: bool = False) -> list:
    """The arguments among ``values`` (and inside lists and tuples among them) whose types overload,
    one per type, subclasses placed before their bases (torch's order). ``include_plain``: plain
    Tensors count too (torch's functions written in Python, and the methods that hand ``self`` over)."""
    from .._tensor import Tensor
    found: list = []
    kinds: list = []
    for value in values:
        if value.__class__ in (list, tuple):
            items = value
        else:
            items = (value,)
        for item in items:
            kind = type(item)
            if kind in kinds or not _overloads(kind, Tensor, include_plain):
                continue
            insert_before_bases(found, kinds, item, kind)
    return found


def insert_before_bases(found: list, kinds: list, item, kind: type) -> None:
    """Put ``item`` (of type ``kind``) into the calling order: before the first argument of a base class
    of ``kind``, otherwise last (torch's rule: subclasses before their bases, else left to right)."""
    position = len(found)
    for i, seen in enumerate(kinds):
        if issubclass(kind, seen):
            position = i
            break
    found.insert(position, item)
    kinds.insert(position, kind)


# functions torch writes in Python (or whose C++ entry hands ``self`` over): plain tensors among their
# arguments are in ``types`` when a mode is active. Filled in by the install functions below.
SELF_LEVEL: set = set()
# the C++ methods and property accessors that hand ``self`` over whatever its class (a Parameter too)
PASSES_SELF: set = set()
# {function torch writes in Python: the parameters its override call leaves out}: they count among the
# types, but neither trigger the call nor reach the override (see LEFT_OUT_PARAMETERS in the tables)
LEFT_OUT: dict = {}
# {function torch writes in Python: its signature}: torch hands their required parameters over by position
# and the others by keyword, defaults included (``handle_torch_function(relu, (input,), input, inplace=inplace)``)
KEYWORD_FORM: dict = {}


def _torch_form(signature, args, kwargs):
    """``args``/``kwargs`` as torch's Python functions hand them to overrides; as given when they do not
    bind to ``signature`` (torch's keyword names where hookgrad's differ)."""
    try:
        bound = signature.bind(*args, **(kwargs or {}))
    except TypeError:
        return args, kwargs
    bound.apply_defaults()
    positional, keywords = [], {}
    for name, value in bound.arguments.items():
        param = signature.parameters[name]
        if param.kind == param.VAR_POSITIONAL:
            positional.extend(value)
        elif param.kind == param.VAR_KEYWORD:
            keywords.update(value)
        elif param.default is param.empty and param.kind != param.KEYWORD_ONLY:
            positional.append(value)
        else:
            keywords[name] = value
    return tuple(positional), keywords


# argument classes that never overload, skipped without a look at their class: the common arguments,
# plain tensors and the Tensor subclasses that opted out (Parameter)
_PLAIN_KINDS = {int, float, bool, complex, str, type(None), slice, type(Ellipsis)}


def overrides_may_see(values) -> bool:
    """Whether public calls on the tensors among ``values`` may reach an override: a mode is active, or
    one of them is of an overloading Tensor subclass. Callers check ``LIVE[0]`` first (and keep their
    own faster code for the plain case)."""
    local = _local
    if local.state == ALL_DISABLED:
        return False
    if local.modes:
        return True
    plain, tensor = _PLAIN_KINDS, _TENSOR[0]
    for value in values:
        if value.__class__ not in plain and isinstance(value, tensor):
            return True
    return False


def dispatch(func, args, kwargs):
    """The override's result for ``func(*args, **kwargs)``, or ``NO_DISPATCH`` when none applies
    (no mode active and no overloading argument)."""
    local = _local
    current = local.state
    if current == ENABLED:
        if not local.modes and not local.skip:
            # the common case once some subclass exists: plain tensors, Parameters and numbers only
            plain = _PLAIN_KINDS
            for value in args:
                if value.__class__ not in plain:
                    break
            else:
                if not kwargs or all(v.__class__ in plain for v in kwargs.values()):
                    return NO_DISPATCH
    elif current == ALL_DISABLED:
        return NO_DISPATCH
    return _dispatch(func, args, kwargs)


def _dispatch(func, args, kwargs):
    local = _local
    current = local.state
    if current == ALL_DISABLED:
        return NO_DISPATCH
    if local.skip:
        local.skip = False
        return NO_DISPATCH
    modes = local.modes
    values = args if not kwargs else (*args, *kwargs.values())
    if current == ENABLED:
        try:
            self_level = func in SELF_LEVEL
        except TypeError:  # an unhashable callable
            self_level = False
        found = overloaded_args(values, self_level)
    else:
        found, self_level = [], False
    from .._tensor import Tensor
    if not modes:
        triggers = found
        if self_level and func in LEFT_OUT:  # arguments that count among the types but trigger nothing
            left_out = _arguments_named(func, args, kwargs, LEFT_OUT[func])
            triggers = [a for a in found if all(a is not v for v in left_out)]
        if not triggers or not any(_overloads(type(a), Tensor, False) for a in triggers):
            return NO_DISPATCH  # plain tensors and Parameters alone do not trigger dispatch
    elif self_level and args and func in PASSES_SELF and isinstance(args[0], Tensor) \
            and all(type(a) is not type(args[0]) for a in found):
        found.insert(0, args[0])
    if self_level:
        signature = KEYWORD_FORM.get(func)
        if signature is not None:
            args, kwargs = _torch_form(signature, args, kwargs)
            if func in LEFT_OUT:
                kwargs = {name: value for name, value in kwargs.items() if name not in LEFT_OUT[func]}
    if not kwargs and not (self_level and func not in PASSES_SELF):
        kwargs = None  # torch's C++ functions and accessors hand over None when called without keywords
    return handle(func, found, args, kwargs)


def _arguments_named(func, args, kwargs, names) -> list:
    """The values ``func(*args, **kwargs)`` binds to ``names`` (none when the call does not bind)."""
    try:
        bound = KEYWORD_FORM[func].bind(*args, **(kwargs or {}))
    except (KeyError, TypeError):
        return []
    return [bound.arguments[name] for name in names if name in bound.arguments]


def handle(func, found, args, kwargs):
    """Ask the current mode, then each of ``found``'s ``__torch_function__``; torch's TypeError when all
    return NotImplemented."""
    types = tuple(type(a) for a in found)
    mode = None
    if _is_torch_function_mode_enabled():
        mode = _pop_torch_function_stack()
        try:
            result = mode.__torch_function__(func, types, args, kwargs)
        finally:
            _push_on_torch_function_stack(mode)
        if result is not NotImplemented:
            return result
    for arg in found:
        result = arg.__torch_function__(func, types, args, kwargs)
        if result is not NotImplemented:
            return result
    lines = [f"  - mode object {mode!r}"] if mode is not None else []
    lines += [f"  - tensor subclass {t!r}" for t in types]
    raise TypeError(f"Multiple dispatch failed for '{public_name(func)}'; all __torch_function__ handlers "
                    "returned NotImplemented:\n\n" + "\n".join(lines) +
                    "\n\nFor more information, try re-running with TORCH_LOGS=not_implemented")


def public_name(func) -> str:
    from ..overrides import resolve_name
    name = resolve_name(func)
    if name is None:
        name = f"{getattr(func, '__module__', '')}.{getattr(func, '__name__', func)}"
    return name


# ---- what Tensor.__torch_function__ does by default ----------------------------------------------------
_NOWRAP: set = set()  # filled by install: the getters whose results stay as they are (Tensor.grad)


def _convert(result, cls):
    """``result`` with its tensors (also inside lists and tuples) turned into ``cls`` instances."""
    from .._tensor import Tensor
    if cls is Tensor:
        return result
    if isinstance(result, Tensor) and not isinstance(result, cls):
        result = result.as_subclass(cls)
    if isinstance(result, (tuple, list)):
        converted = [_convert(r, cls) for r in result]
        maker = getattr(type(result), "_make", None)  # a named tuple (torch.return_types)
        result = maker(converted) if maker is not None else type(result)(converted)
    return result


def subclass_preserving(cls, func, types, args=(), kwargs=None):
    """``Tensor.__torch_function__``: ``func`` with subclass overrides off, its tensor results turned
    into ``cls`` instances (not the results of field reads such as ``.grad``)."""
    if kwargs is None:
        kwargs = {}
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    with _DisableSubclasses():
        result = func(*args, **kwargs)
        if func in _NOWRAP:
            return result
        return _convert(result, cls)


# ---- the dispatching entry points ---------------------------------------------------------------------
# The entry points below are one frame between the caller and the function they wrap. Their code gets a
# file name containing "importlib" and "_bootstrap", which is what CPython's warnings module skips when
# it counts ``stacklevel`` frames: a ``warnings.warn(..., stacklevel=2)`` inside the wrapped function
# still names the caller's line, as it did before the function had an entry point.
_ENTRY_FILE = __file__.rsplit("/", 1)[0] + "/<torch_function entry point, skipped by warnings as importlib._bootstrap>"

_namespace = {"__name__": __name__, "_local": _local}
exec(compile(_CALL_AS_CALLER_SOURCE, _ENTRY_FILE, "exec"), _namespace)
call_as_caller = _namespace["call_as_caller"]
del _namespace

_ENTRY_SOURCE = """
def entry(*args, **kwargs):
    if LIVE[0]:
        result = dispatch(FUNC, args, kwargs)
        if result is not NO_DISPATCH:
            return result
    return fn(*args, **kwargs)
"""


def _entry(fn, func_expression: str, names: dict):
    namespace = {"__name__": __name__, "LIVE": LIVE, "dispatch": dispatch, "NO_DISPATCH": NO_DISPATCH, "fn": fn,
                 **names}
    exec(compile(_ENTRY_SOURCE.replace("FUNC", func_expression), _ENTRY_FILE, "exec"), namespace)
    return namespace["entry"]


def dispatching(fn, name=None):
    """``fn`` behind the dispatch check: the returned function is the one handed to overrides."""
    public = _entry(fn, "entry", {})
    functools.update_wrapper(public, fn)
    if name is not None:
        public.__name__ = public.__qualname__ = name
    public.__hookgrad_dispatches__ = True
    return public


def dispatching_as(fn, target_name: str, cls):
    """An operator of ``cls`` (``__add__``) that torch hands to overrides as the method ``target_name``
    (``Tensor.add``), with the arguments as the operator got them."""
    operator = _entry(fn, f"methods[{target_name!r}]", {"methods": cls.__dict__})
    functools.update_wrapper(operator, fn)
    operator.__hookgrad_dispatches__ = True
    return operator


_KEYWORD_ENTRY_SOURCE = """
def entry(*args, **kwargs):
    if LIVE[0]:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        first = next(iter(bound.arguments.values()))
        if has_torch_function((first,)):
            return handle_torch_function(entry, (first,), **bound.arguments)
    return fn(*args, **kwargs)
"""


def dispatching_by_keyword(fn):
    """``fn`` consulting the overrides of its first argument as torch's functions written in Python do:
    every argument handed over by keyword (``handle_torch_function(uniform_, (tensor,), tensor=tensor, a=a, ...)``)."""
    import inspect
    from ..overrides import handle_torch_function, has_torch_function
    namespace = {"__name__": __name__, "LIVE": LIVE, "fn": fn, "signature": inspect.signature(fn),
                 "has_torch_function": has_torch_function, "handle_torch_function": handle_torch_function}
    exec(compile(_KEYWORD_ENTRY_SOURCE, _ENTRY_FILE, "exec"), namespace)
    entry = functools.update_wrapper(namespace["entry"], fn)
    entry.__hookgrad_dispatches__ = True
    return entry


_PROPERTY_SOURCE = """
def get(self):
    if LIVE[0]:
        result = dispatch(get_as[0].__get__, (self,), None)
        if result is not NO_DISPATCH:
            return result
    return fget(self)


def set_(self, value):
    if LIVE[0]:
        result = dispatch(set_as[0].__set__, (self, value), None)
        if result is not NO_DISPATCH:
            return
    fset(self, value)
"""


def dispatching_property(prop: property, get_as: list | None = None, set_as: list | None = None) -> property:
    """``prop`` with its getter and setter handed to overrides as ``Tensor.<name>.__get__`` /
    ``.__set__``, or as the accessors of the entry property in ``get_as``/``set_as`` (a one-item list;
    torch hands ``t._grad`` over as ``Tensor.grad.__get__``)."""
    holder: list = []
    namespace = {"__name__": __name__, "LIVE": LIVE, "dispatch": dispatch, "NO_DISPATCH": NO_DISPATCH,
                 "fget": prop.fget, "fset": prop.fset, "get_as": get_as or holder, "set_as": set_as or holder}
    exec(compile(_PROPERTY_SOURCE, _ENTRY_FILE, "exec"), namespace)
    setter = prop.fset
    if setter is not None and not getattr(setter, "__hookgrad_refuses__", False):
        setter = namespace["set_"]  # (a read-only attribute's refusal is no call torch hands over)
    new = property(namespace["get"], setter, prop.fdel, prop.__doc__)
    holder.append(new)
    for accessor in (new.__get__, new.__set__):
        SELF_LEVEL.add(accessor)
        PASSES_SELF.add(accessor)
    return new


class _TorchFunctionState(enum.IntEnum):
    """``torch._C._TorchFunctionState``: the three states the switches set."""

    ENABLED = 0
    SUBCLASSES_DISABLED = 1
    ALL_DISABLED = 2


_STATE_BY_NAME = {ENABLED: _TorchFunctionState.ENABLED, SUBCLASSES_DISABLED: _TorchFunctionState.SUBCLASSES_DISABLED,
                  ALL_DISABLED: _TorchFunctionState.ALL_DISABLED}


def _get_torch_function_state() -> _TorchFunctionState:
    return _STATE_BY_NAME[_local.state]


def _set_torch_function_state(value) -> None:
    value = _TorchFunctionState(value)
    _local.state = {v: k for k, v in _STATE_BY_NAME.items()}[value]


def _set_skip_next_torch_function(skip: bool) -> None:
    _local.skip = bool(skip)


def _peek_should_skip_torch_function() -> bool:
    return _local.skip


def _skip_one_hop_torch_function(func, types, args, kwargs):
    """Call ``func`` without consulting the overrides for this one call (``redispatch_function``)."""
    skip_one_hop()
    try:
        return func(*args, **(kwargs or {}))
    finally:
        take_skip()


def skip_one_hop() -> None:
    _local.skip = True


def take_skip() -> bool:
    """Whether the next call was to skip the overrides (and that skip is now used up)."""
    skip, _local.skip = _local.skip, False
    return skip


def has_dispatch(fn) -> bool:
    return getattr(fn, "__hookgrad_dispatches__", False)


def _has_torch_function(args) -> bool:
    from ..overrides import has_torch_function
    return has_torch_function(args)


def _has_torch_function_unary(arg) -> bool:
    from ..overrides import has_torch_function
    return has_torch_function((arg,))


def _has_torch_function_variadic(*args) -> bool:
    from ..overrides import has_torch_function
    return has_torch_function(args)


# ---- putting the entry points in place (once, at import) ---------------------------------------------
def _is_op_function(fn) -> bool:
    """Whether ``fn`` is one of hookgrad's op functions (not a helper or class a namespace re-exports)."""
    import inspect
    if not inspect.isfunction(fn):
        return False
    module = fn.__module__ or ""
    return module == "hookgrad" or module.startswith(("hookgrad._ops", "hookgrad.nn", "hookgrad.fft",
                                                      "hookgrad.linalg", "hookgrad.special", "hookgrad._argcheck",
                                                      "hookgrad.functional", "hookgrad._legacy"))


def _note_keyword_form(fn) -> None:
    import inspect
    try:
        KEYWORD_FORM[fn] = inspect.signature(fn)
    except (TypeError, ValueError):
        pass


def install_namespace(namespace: dict, names, self_level=frozenset(), never=frozenset(), left_out=None) -> None:
    """Make each op function ``namespace[name]`` consult overrides (the checked ones already do);
    ``left_out``: {name: the parameters torch's override call leaves out} for functions of ``self_level``."""
    for name in names:
        fn = namespace.get(name)
        if fn is None:
            continue
        if name in never:
            if has_dispatch(fn) and hasattr(fn, "__wrapped__"):
                # torch's function consults no overrides (F.sigmoid calls the method, which does)
                namespace[name] = fn.__wrapped__
            continue
        if not has_dispatch(fn):
            if not _is_op_function(fn):
                continue
            fn = namespace[name] = dispatching(fn)
        if name in self_level:
            SELF_LEVEL.add(fn)
            _note_keyword_form(fn)
            if left_out and name in left_out:
                LEFT_OUT[fn] = left_out[name]


_tensor_entry_points_installed = False
_SWAPS: list = []  # (name, Tensor's own attribute, its entry point): built once, so entry points keep their identity


def install_tensor_entry_points() -> None:
    """Make Tensor's public methods, operators and properties consult overrides, each handed over as
    torch hands it (``a + b`` as ``Tensor.add``, ``a.shape`` as ``Tensor.shape.__get__``).

    Done when the protocol is needed: when the first overloading Tensor subclass is defined, a mode is
    pushed, a tensor-like reaches a function, or the overridable functions are listed; undone by
    ``release_tensor_entry_points`` when the last mode exits and no overloading subclass exists. In
    between, the methods are the ops themselves (an entry point is one more Python frame on every
    method call, operator and property read). The methods whose argument checks run in front of them
    (``Tensor.add``) consult overrides always."""
    global _tensor_entry_points_installed
    if _tensor_entry_points_installed:
        return
    from .._tensor import Tensor
    if not _SWAPS:
        _build_tensor_entry_points(Tensor)
    for name, _, entry in _SWAPS:
        setattr(Tensor, name, entry)
    _tensor_entry_points_installed = True


def release_tensor_entry_points() -> None:
    """Put Tensor's own methods back once nothing can override them (no mode, no overloading subclass)."""
    global _tensor_entry_points_installed
    if not _tensor_entry_points_installed or LIVE[0]:
        return
    from .._tensor import Tensor
    for name, own, _ in _SWAPS:
        setattr(Tensor, name, own)
    _tensor_entry_points_installed = False


# Tensor's flags that are class constants here and properties in torch (overrides see their getters)
_CONSTANT_PROPERTIES = ("is_cuda", "is_sparse", "is_quantized", "is_meta", "is_cpu", "is_mps", "is_xpu", "is_xla",
                        "is_ipu", "is_mtia", "is_maia", "is_vulkan", "is_mkldnn", "is_nested", "is_sparse_csr",
                        "layout")


# the underscore attributes whose accessors torch hands to overrides: None, as themselves
# (``Tensor._base.__get__``); else the public properties whose getter and setter it hands over instead
# (``t._grad`` as ``Tensor.grad.__get__``; ``t._grad_fn = None`` as ``Tensor._grad_fn.__set__``, its own)
_UNDERSCORE_PROPERTIES = {"_base": None, "_version": None, "_backward_hooks": None,
                          "_post_accumulate_grad_hooks": None, "_grad": ("grad", "grad"), "_grad_fn": ("grad_fn", None)}


def _constant_property(value) -> property:
    return property(lambda self: value)


def _build_tensor_entry_points(cls) -> None:
    import inspect
    from ._torch_function_tables import (OPERATOR_AS, OPERATORS_AS_THEMSELVES, TENSOR_NEVER, TENSOR_PYTHON_LEVEL,
                                         TENSOR_SELF_LEVEL)
    functions_elsewhere = _namespace_functions()
    entries = {}
    for name, value in list(vars(cls).items()):
        if name in TENSOR_NEVER:
            continue
        if name in _CONSTANT_PROPERTIES and not isinstance(value, property):
            entries[name] = (value, dispatching_property(_constant_property(value)))
            continue
        if isinstance(value, property):
            if not name.startswith("_") or _UNDERSCORE_PROPERTIES.get(name, ()) is None:
                entries[name] = (value, dispatching_property(value))
            continue
        if not inspect.isfunction(value):
            continue
        if name.startswith("_"):
            if name in OPERATORS_AS_THEMSELVES:
                entries[name] = (value, dispatching(value, name))
            elif name in OPERATOR_AS:
                entries[name] = (value, dispatching_as(value, OPERATOR_AS[name], cls))
            else:
                continue
        elif id(value) in functions_elsewhere:
            # the same object as a torch.* function: the method gets its own entry point (overrides get
            # ``Tensor.<name>``, not ``torch.<name>``)
            entries[name] = (value, dispatching(getattr(value, "__wrapped__", value), name))
        elif not has_dispatch(value):
            entries[name] = (value, dispatching(value, name))
        method = entries[name][1] if name in entries else value
        if name in TENSOR_SELF_LEVEL or OPERATOR_AS.get(name) in TENSOR_SELF_LEVEL:
            SELF_LEVEL.add(method)
            if name not in TENSOR_PYTHON_LEVEL:
                PASSES_SELF.add(method)
            elif not name.startswith("__") or name == "__repr__":  # operators take their operands by position
                _note_keyword_form(method)
    for name, handed_as in _UNDERSCORE_PROPERTIES.items():
        if handed_as is not None:
            getter_as, setter_as = ([entries[n][1]] if n is not None else None for n in handed_as)
            entries[name] = (vars(cls)[name], dispatching_property(vars(cls)[name], getter_as, setter_as))
    _SWAPS.extend((name, own, entry) for name, (own, entry) in entries.items())
    _NOWRAP.add(entries["grad"][1].__get__)


def _namespace_functions() -> set:
    import hookgrad
    # a snapshot: reading an attribute of a lazily loaded submodule can add names to the namespace
    return {id(v) for v in list(vars(hookgrad).values()) if has_dispatch(v)}
