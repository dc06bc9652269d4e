"""HookTrace: record every hook that fires (kind, owner, order, duration) and write a Chrome trace.

How hooks are seen, per framework:

* A framework whose module file offers ``_set_hook_observer(callback)`` (hookgrad) reports every
  module hook it dispatches, including hooks registered before the trace started.
* Everything else (all of torch, and hookgrad's tensor, autograd-node and optimizer hooks) is seen
  by wrapping: while a trace is active, the public ``register_*`` methods and functions are
  replaced by versions that register a timing wrapper around the given hook. Hooks registered
  before the trace started are therefore invisible on torch, which has no public way to list the
  hooks in place. Hooks registered during a trace keep their wrapper after it ends; it then only
  forwards the call. Hooks that the framework's own code registers (its machinery, not the
  user's) are left unwrapped. torch's autograd nodes (``grad_fn.register_hook``) are C++ objects whose
  methods cannot be wrapped, so node hooks are seen on hookgrad only.

The frameworks come from the objects given (a model, an optimizer, or a framework package
itself); with none given, every framework already imported (``hookgrad``, ``torch``) is watched.
Nothing is imported that the program had not imported.
"""
from __future__ import annotations

import functools
import importlib
import inspect
import json
import os
import sys
import threading
import time
import types
import weakref
from typing import Any, Callable, Container, NamedTuple

from ._common import describe, format_table, is_tensor, iter_tensors, label

__all__ = ["HookTrace", "SkippedHook"]

# Registration entry points and the kind of hook each one registers. Module kinds use the names
# hookgrad's hook observer reports, so both ways of seeing hooks give the same kinds.
MODULE_METHODS = {
    "register_forward_pre_hook": "forward_pre_hook",
    "register_forward_hook": "forward_hook",
    "register_full_backward_pre_hook": "full_backward_pre_hook",
    "register_full_backward_hook": "full_backward_hook",
    "register_backward_hook": "backward_hook",
    "register_state_dict_pre_hook": "state_dict_pre_hook",
    "register_state_dict_post_hook": "state_dict_hook",
    "register_load_state_dict_pre_hook": "load_state_dict_pre_hook",
    "register_load_state_dict_post_hook": "load_state_dict_post_hook",
}
MODULE_FUNCTIONS = {
    "register_module_forward_pre_hook": "forward_pre_hook",
    "register_module_forward_hook": "forward_hook",
    "register_module_full_backward_pre_hook": "full_backward_pre_hook",
    "register_module_full_backward_hook": "full_backward_hook",
    "register_module_backward_hook": "backward_hook",
    "register_module_buffer_registration_hook": "buffer_registration_hook",
    "register_module_module_registration_hook": "module_registration_hook",
    "register_module_parameter_registration_hook": "parameter_registration_hook",
}
TENSOR_METHODS = {
    "register_hook": "tensor_hook",
    "register_post_accumulate_grad_hook": "post_accumulate_grad_hook",
}
NODE_METHODS = {"register_hook": "node_hook", "register_prehook": "node_pre_hook"}
OPTIMIZER_METHODS = {
    "register_step_pre_hook": "optimizer_step_pre_hook",
    "register_step_post_hook": "optimizer_step_post_hook",
    "register_state_dict_pre_hook": "optimizer_state_dict_pre_hook",
    "register_state_dict_post_hook": "optimizer_state_dict_post_hook",
    "register_load_state_dict_pre_hook": "optimizer_load_state_dict_pre_hook",
    "register_load_state_dict_post_hook": "optimizer_load_state_dict_post_hook",
}
OPTIMIZER_FUNCTIONS = {
    "register_optimizer_step_pre_hook": "optimizer_step_pre_hook",
    "register_optimizer_step_post_hook": "optimizer_step_post_hook",
}
KNOWN_FRAMEWORKS = ("hookgrad", "torch")
_TOOLS = __name__.rsplit(".", 1)[0]       # this package: its hooks are traced like the user's

# ---- process-wide state: the active traces and the patches they share -----------------------
_lock = threading.RLock()
_active: list["HookTrace"] = []
_patches: dict[tuple[int, str], list] = {}      # (id(target), attr) -> [target, original, users]
_observers: dict[int, list] = {}                # id(setter) -> [setter, previous observer, users]


# What the tensors among a hook's arguments are, by kind (None: an argument that holds none).
ARG_NAMES = {
    "forward_pre_hook": (None, "input"),
    "forward_hook": (None, "input", "output"),
    "full_backward_pre_hook": (None, "grad_output"),
    "full_backward_hook": (None, "grad_input", "grad_output"),
    "backward_hook": (None, "grad_input", "grad_output"),
    "tensor_hook": ("grad",),
    "post_accumulate_grad_hook": ("param",),
    "node_hook": ("grad_inputs", "grad_outputs"),
    "node_pre_hook": ("grad_outputs",),
}
BACKWARD_KINDS = frozenset({"full_backward_pre_hook", "full_backward_hook", "backward_hook", "tensor_hook",
                            "post_accumulate_grad_hook", "node_hook", "node_pre_hook"})


def _report(kind: str, owner: Any, hook: Callable, args: tuple, start: float, end: float) -> None:
    if getattr(hook, "_hooktrace_own", False):   # a trace's own phase markers
        return
    for trace in tuple(_active):
        trace._record(kind, owner, hook, args, start, end)


def _own(hook: Callable) -> Callable:
    """``hook`` as a function marked as a trace's own: never wrapped, never recorded."""
    def own(*args):
        return hook(*args)
    own._hooktrace_own = True
    return own


def _traced(hook: Callable, kind: str, owner: Any) -> Callable:
    """``hook`` wrapped so that each call is timed and reported to the active traces."""
    if not callable(hook) or getattr(hook, "_hooktrace_kind", None) is not None \
            or getattr(hook, "_hooktrace_own", False):
        return hook
    try:
        owner_ref: Callable[[], Any] = weakref.ref(owner) if owner is not None else (lambda: None)
    except TypeError:  # an owner that takes no weak references is kept by the wrapper
        owner_ref = lambda owner=owner: owner  # noqa: E731

    @functools.wraps(hook)
    def traced(*args, **kwargs):
        if not _active:
            return hook(*args, **kwargs)
        start = time.perf_counter()
        try:
            return hook(*args, **kwargs)
        finally:
            who = owner_ref()
            if who is None and args:  # global module and optimizer hooks: the object they fire for
                who = args[0]
            _report(kind, who, hook, args, start, time.perf_counter())

    traced._hooktrace_kind = kind
    return traced


def _from_framework(framework: str) -> bool:
    """True when the code calling a registration function (two frames up) belongs to the framework
    itself: hooks a framework installs for its own machinery are not traced (on torch most of them
    live in C++ out of reach anyway). The tools package counts as user code."""
    caller = sys._getframe(2).f_globals.get("__name__", "")
    return (caller == framework or caller.startswith(framework + ".")) and not caller.startswith(_TOOLS)


def _patched_method(original: Callable, kind: str, framework: str) -> Callable:
    @functools.wraps(original)
    def register(self, *args, **kwargs):
        if _from_framework(framework):
            return original(self, *args, **kwargs)
        if args:
            args = (_traced(args[0], kind, self),) + args[1:]
        elif "hook" in kwargs:
            kwargs["hook"] = _traced(kwargs["hook"], kind, self)
        return original(self, *args, **kwargs)
    return register


def _patched_function(original: Callable, kind: str, framework: str) -> Callable:
    @functools.wraps(original)
    def register(*args, **kwargs):
        if _from_framework(framework):
            return original(*args, **kwargs)
        if args:
            args = (_traced(args[0], kind, None),) + args[1:]
        elif "hook" in kwargs:
            kwargs["hook"] = _traced(kwargs["hook"], kind, None)
        return original(*args, **kwargs)
    return register


def _observer(kind: str, module: Any, hook: Callable, start: float, end: float) -> None:
    # The observer is called by hookgrad's module-hook dispatcher, whose ``args`` are the hook's
    # arguments; read them from its frame for the tensor shapes (none when that changes).
    caller = sys._getframe(1)
    args = caller.f_locals.get("args", ()) if caller.f_code.co_name == "_dispatch" else ()
    _report(kind, module, hook, args if isinstance(args, tuple) else (), start, end)


def _hook_label(hook: Callable) -> str:
    """``GradientFlow._module_hook.hook`` or ``poison_output (demo.py:142)``: what a reader can find."""
    target = getattr(hook, "__wrapped__", hook)
    target = getattr(target, "__func__", target)
    name = getattr(target, "__qualname__", None) or type(target).__name__
    name = name.replace(".<locals>", "")
    code = getattr(target, "__code__", None)
    if code is not None and getattr(hook, "_hook_tool", None) is None:
        name += f" ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"
    return name


def _shapes(kind: str, args: tuple) -> dict[str, Any]:
    """dtype and shape of the tensors among a hook's arguments, named by what they are."""
    names = ARG_NAMES.get(kind)
    if not names or len(args) < len(names):
        return {}
    out: dict[str, Any] = {}
    for name, value in zip(names, args):
        if name is None:
            continue
        found = [describe(t) for _, t in iter_tensors(value, name)]
        if found:
            out[name] = found[0] if len(found) == 1 and is_tensor(value) else found
    return out


def _hold_observer(setter: Callable) -> int:
    """Install the shared observer with ``setter`` (once, however many hold it); returns the key."""
    key = id(setter)
    entry = _observers.get(key)
    if entry is None:
        entry = _observers[key] = [setter, None, 0]
        entry[1] = setter(_observer)
    entry[2] += 1
    return key


def _drop_observer(key: int) -> None:
    entry = _observers[key]
    entry[2] -= 1
    if entry[2] == 0:
        del _observers[key]
        entry[0](entry[1])


def listen_to_module_hooks(listener: Any) -> None:
    """Have ``listener._record(kind, owner, hook, args, start, end)`` called for every hookgrad
    module hook dispatched (and every hook a trace wrapped), sharing the observer with the
    traces. ``hookgrad.hooks.explain`` listens this way."""
    from ..nn.modules import module as home
    with _lock:
        _hold_observer(home._set_hook_observer)
        _active.append(listener)


def stop_listening(listener: Any) -> None:
    from ..nn.modules import module as home
    with _lock:
        _active.remove(listener)
        _drop_observer(id(home._set_hook_observer))


# ---- finding what to patch ----------------------------------------------------------------------
def _submodule(package: types.ModuleType, name: str) -> Any:
    try:
        return importlib.import_module(f"{package.__name__}.{name}")
    except Exception:  # noqa: BLE001 - a part the framework lacks (or cannot import) is not traced
        return None


def _defining_class(cls: Any, attr: str) -> Any:
    for klass in getattr(cls, "__mro__", ()):
        if attr in vars(klass):
            return klass
    return None


def _framework_of(obj: Any) -> types.ModuleType | None:
    """The top-level package of the framework an object belongs to: the package of the first class
    in its MRO that defines a hook registration method (the framework's Module, Optimizer or
    Tensor), or the package itself when given one."""
    if isinstance(obj, types.ModuleType):
        return sys.modules.get(obj.__name__.split(".")[0])
    for klass in type(obj).__mro__:
        if any(attr in vars(klass) for attr in ("register_forward_hook", "register_step_pre_hook", "register_hook")):
            return sys.modules.get(klass.__module__.split(".")[0])
    return None


def _plan(framework: types.ModuleType) -> tuple[list[tuple[Any, str, Callable]], Callable | None]:
    """The patches (target, attribute, replacement maker) and the observer setter for one framework."""
    patches: list[tuple[Any, str, Callable]] = []
    setter = None

    def methods(cls: Any, table: dict[str, str]) -> None:
        for attr, kind in table.items():
            owner = _defining_class(cls, attr)
            if owner is not None and inspect.isfunction(vars(owner)[attr]):
                patches.append((owner, attr, functools.partial(_patched_method, kind=kind, framework=framework.__name__)))

    def functions(module: Any, table: dict[str, str]) -> None:
        for attr, kind in table.items():
            original = vars(module).get(attr)
            if original is None:
                continue
            prefix = framework.__name__ + "."
            for name, mod in list(sys.modules.items()):  # every namespace that re-exports it
                if mod is not None and (name == framework.__name__ or name.startswith(prefix)) \
                        and vars(mod).get(attr) is original:
                    patches.append((mod, attr, functools.partial(_patched_function, kind=kind, framework=framework.__name__)))

    nn = _submodule(framework, "nn")
    module_cls = getattr(nn, "Module", None)
    if module_cls is not None:
        home = sys.modules.get(module_cls.__module__)
        setter = getattr(home, "_set_hook_observer", None)
        if setter is None:
            methods(module_cls, MODULE_METHODS)
            functions(home, MODULE_FUNCTIONS)
    tensor_cls = getattr(framework, "Tensor", None)
    if tensor_cls is not None:
        methods(tensor_cls, TENSOR_METHODS)
    graph = _submodule(framework, "autograd.graph")
    node_cls = getattr(graph, "Node", None)
    if node_cls is not None:
        methods(node_cls, NODE_METHODS)
    optim = _submodule(framework, "optim")
    optimizer_cls = getattr(optim, "Optimizer", None)
    if optimizer_cls is not None:
        methods(optimizer_cls, OPTIMIZER_METHODS)
        functions(sys.modules.get(optimizer_cls.__module__), OPTIMIZER_FUNCTIONS)
    return patches, setter


class TraceEvent(NamedTuple):
    """One recorded hook call. ``start``/``end``: ``time.perf_counter()`` readings; ``step``: steps
    completed before it; ``hook``: the hook's name; ``tool``: the hookgrad tool that registered it
    (None for the user's hooks); ``shapes``: dtype and shape of the tensors among its arguments."""

    order: int
    kind: str
    owner: str
    start: float
    end: float
    tid: int
    step: int
    hook: str
    tool: str | None
    shapes: dict


class SkippedHook(NamedTuple):
    """A hook that was due and did not fire (hookgrad only; see ``hookgrad.hooks.explain``):
    ``at``: ``time.perf_counter()`` when this was found; ``phase``: ``forward``, ``backward N`` or
    ``end`` (the trace's close); ``reason``: why."""

    at: float
    step: int
    phase: str
    kind: str
    owner: str
    hook: str
    reason: str


class HookTrace:
    """Record every hook that fires: its kind, its owner's qualified name, the hook and the tool
    that registered it, the step, the tensor shapes, the order and the duration.

    ``HookTrace(*roots)``: ``roots`` are models (their modules and parameters are named by
    qualified name), optimizers, or framework packages; they also choose the frameworks watched
    (with no roots: every framework already imported). Active from construction until
    ``close()`` (or the end of a ``with`` block, exception or not), which restores every method it
    replaced. ``order`` numbers hook calls in the order they return (a hook that itself runs a
    hooked module returns after the inner hooks).

    Phases: for a model among the roots the trace marks each of its forward calls and the backward
    pass that follows (from the gradient reaching the model's output to the last backward hook);
    for an optimizer, each ``step()``. Steps are counted by the optimizer's ``step()`` (or call
    ``step()``). Phase spans are kept for every step.

    Size: ``every=N`` keeps the hook events of every N-th step only (steps 0, N, 2N, ...), ``steps``
    (a range or set of step numbers) only those steps, ``max_events`` at most that many events;
    ``counts``, ``summary()`` and ``table()`` still count every hook call, and ``dropped`` says how
    many events the file lacks.

    On hookgrad every module hook is seen, also those registered before the trace started (the
    framework reports each dispatch). On torch only hooks registered while a trace is active are
    seen: torch has no public way to list the hooks already in place, so the trace wraps hooks as
    they are registered; autograd-node hooks are out of its reach there.

    ``save(path)`` writes a Chrome trace (JSON, ``traceEvents`` of ``"ph": "X"`` complete events,
    ``ts``/``dur`` in microseconds) that Perfetto (ui.perfetto.dev) and chrome://tracing open: one
    track with the steps, one with the phases, one per thread with the hook calls (their ``args``:
    step, order, owner, hook, tool, tensor shapes). ``table()`` sums it up per hook.
    ``mark(name)`` adds an instant event (an epoch start, say).

    On hookgrad the trace also lists the hooks that were due and did not fire, with the reason
    (what ``hookgrad.hooks.explain`` reports, also inside such a block): ``skipped`` holds them
    as :class:`SkippedHook` s, and the Chrome trace shows each as an instant event.
    """

    def __init__(self, *roots: Any, max_events: int | None = None, every: int = 1,
                 steps: Container[int] | None = None) -> None:
        if max_events is not None and (not isinstance(max_events, int) or max_events < 0):
            raise ValueError(f"HookTrace: max_events must be a non-negative int or None, got {max_events!r}")
        if not isinstance(every, int) or isinstance(every, bool) or every < 1:
            raise ValueError(f"HookTrace: every must be a positive int, got {every!r}")
        if steps is not None and not hasattr(steps, "__contains__"):
            raise TypeError(f"HookTrace: steps must be a range or a set of step numbers, got {steps!r}")
        frameworks = []
        for root in roots:
            framework = _framework_of(root)
            if framework is None:
                raise TypeError(f"HookTrace: cannot tell the framework of {type(root).__name__}; pass a "
                                "model, an optimizer or a framework package")
            if framework not in frameworks:
                frameworks.append(framework)
        if not roots:
            frameworks = [sys.modules[n] for n in KNOWN_FRAMEWORKS if n in sys.modules]
        self.frameworks = [f.__name__ for f in frameworks]
        self.roots = roots
        self.max_events = max_events
        self.every, self.steps_kept = every, steps
        self.events: list[TraceEvent] = []
        self.dropped = 0
        self.counts: dict[tuple[str, str], list] = {}    # (kind, owner) -> [first order, count, total s, max s]
        self.steps = 0
        self._step_ended = False     # optimizer.step() returned; the count moves on at the next phase
        self.phases: list[tuple[str, float, float, int]] = []    # (phase, start, end, step)
        self._open: dict[str, float] = {}                        # phase -> start, while it runs
        self._forward_depth = 0
        self._last_backward_end: float | None = None
        self._awaiting_backward = False      # a forward ended; its backward has not begun
        self._marks: list[tuple[str, float]] = []
        self._order = 0
        self._names: dict[int, str] = {}
        self._outside: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # modules of no root
        self._threads: dict[int, int] = {}
        self._name_roots()
        self._held: list[tuple[Any, ...]] = []
        self._own_handles: list[Any] = []
        self._closed = False
        self.skipped: list[SkippedHook] = []
        self._explaining: tuple | None = None
        self.t0 = time.perf_counter()
        with _lock:
            try:
                for framework in frameworks:
                    self._acquire(framework)
                self._watch_phases()
                if "hookgrad" in self.frameworks:
                    self._start_explaining()
            except BaseException:
                self._remove_own_hooks()
                self._release()
                raise
            _active.append(self)

    # ---- hooks that did not fire (hookgrad): hookgrad.hooks.explain's watch ----------------------
    def _start_explaining(self) -> None:
        from ..hooks import _explain
        models = tuple(r for r in self.roots if isinstance(r, _explain._module.Module))
        _explain.open_session(self._hook_skipped, models)
        self._explaining = (_explain, models)

    def _stop_explaining(self) -> None:
        if self._explaining is not None:
            explain_module, models = self._explaining
            self._explaining = None
            explain_module.close_session(self._hook_skipped, models)

    def _hook_skipped(self, phase: str, status: str, record: Any) -> None:
        if status != "skipped":
            return
        owner = record.owner if record.owner is not None else "(global)"
        self.skipped.append(SkippedHook(time.perf_counter(), self.steps, phase, record.kind, owner,
                                        _hook_label(record.fn), record.reason or ""))

    # ---- phases: the trace's own hooks on the roots -------------------------------------------
    def _watch_phases(self) -> None:
        for root in self.roots:
            if hasattr(root, "named_modules") and hasattr(root, "register_forward_pre_hook"):
                self._own_handles.append(root.register_forward_pre_hook(_own(self._forward_starts), prepend=True))
                self._own_handles.append(root.register_forward_hook(_own(self._forward_ends), always_call=True))
            elif hasattr(root, "register_step_pre_hook"):
                self._own_handles.append(root.register_step_pre_hook(_own(self._optimizer_starts)))
                self._own_handles.append(root.register_step_post_hook(_own(self._optimizer_ends)))

    def _remove_own_hooks(self) -> None:
        handles, self._own_handles = self._own_handles, []
        for handle in handles:
            handle.remove()

    def _close_phase(self, phase: str, end: float | None = None) -> None:
        start = self._open.pop(phase, None)
        if start is not None:
            self.phases.append((phase, start, max(start, end if end is not None else time.perf_counter()), self.steps))

    def _close_backward(self) -> None:
        if "backward" in self._open:
            self._close_phase("backward", self._last_backward_end or self._open["backward"])

    def _next_step_if_ended(self) -> None:
        # hooks that run after ours in the same optimizer.step() still belong to the step it ended
        if self._step_ended:
            self._step_ended = False
            self.step()

    def _forward_starts(self, module, args):
        self._forward_depth += 1
        if self._forward_depth == 1 and not self._closed:
            self._next_step_if_ended()
            self._close_backward()
            self._awaiting_backward = False
            self._open["forward"] = time.perf_counter()

    def _forward_ends(self, module, args, output):
        self._forward_depth = max(0, self._forward_depth - 1)
        if self._forward_depth or self._closed:
            return
        self._close_phase("forward")
        wanted = [t for _, t in iter_tensors(output, "output") if getattr(t, "requires_grad", False)]
        self._awaiting_backward = bool(wanted)
        if wanted and "backward" not in self._open:
            fired = []

            def backward_starts(grad):
                if not fired and not self._closed:
                    fired.append(True)
                    if self._awaiting_backward:
                        self._backward_starts(time.perf_counter())
            for t in wanted:
                t.register_hook(_own(backward_starts))

    def _backward_starts(self, at: float) -> None:
        self._awaiting_backward = False
        self._next_step_if_ended()
        self._close_backward()
        self._open["backward"] = at
        self._last_backward_end = None

    def _optimizer_starts(self, optimizer, args, kwargs):
        if not self._closed:
            self._next_step_if_ended()
            self._close_backward()
            self._awaiting_backward = False
            self._open["optimizer.step"] = time.perf_counter()

    def _optimizer_ends(self, optimizer, args, kwargs):
        if not self._closed:
            self._close_phase("optimizer.step")
            self._step_ended = True

    def step(self) -> None:
        """End the current step (done for you after ``optimizer.step()`` when the optimizer is a root)."""
        self._step_ended = False
        self._close_backward()
        self.steps += 1

    def _keeps(self, step: int) -> bool:
        return step % self.every == 0 and (self.steps_kept is None or step in self.steps_kept)

    # ---- patches and observers, shared between traces ---------------------------------------
    def _acquire(self, framework: types.ModuleType) -> None:
        patches, setter = _plan(framework)
        for target, attr, make in patches:
            key = (id(target), attr)
            entry = _patches.get(key)
            if entry is None:
                original = vars(target)[attr]
                entry = _patches[key] = [target, original, 0]
                setattr(target, attr, make(original))
            entry[2] += 1
            self._held.append(("patch", key))
        if setter is not None:
            self._held.append(("observer", _hold_observer(setter)))

    def _release(self) -> None:
        held, self._held = self._held, []
        for what, key in reversed(held):
            if what == "observer":
                _drop_observer(key)
                continue
            entry = _patches[key]
            entry[2] -= 1
            if entry[2] == 0:
                del _patches[key]
                setattr(entry[0], key[1], entry[1])

    def close(self) -> None:
        """Stop recording and put back everything replaced. Calling it again does nothing."""
        if self._closed:
            return
        self._stop_explaining()
        with _lock:
            if self in _active:
                _active.remove(self)
            self._remove_own_hooks()
            self._release()
        self._close_backward()
        for phase in list(self._open):
            self._close_phase(phase)
        self._next_step_if_ended()
        self._closed = True

    def __enter__(self) -> "HookTrace":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # ---- recording ---------------------------------------------------------------------------
    def _name_roots(self) -> None:
        for root in self.roots:
            if hasattr(root, "named_modules"):
                for name, module in root.named_modules():
                    self._names.setdefault(id(module), label(name))
                for name, p in root.named_parameters():
                    self._names.setdefault(id(p), name)
            elif hasattr(root, "param_groups"):
                self._names.setdefault(id(root), f"optimizer ({type(root).__name__})")

    def _name_of(self, owner: Any) -> str:
        name = self._names.get(id(owner))
        if name is not None:
            return name
        if owner is None:
            return "?"
        if hasattr(owner, "named_modules"):
            name = self._outside.get(owner)
            if name is None:
                self._name_roots()           # a module added to a root after the trace started?
                name = self._names.get(id(owner), type(owner).__name__)
                if id(owner) not in self._names:
                    self._outside[owner] = name
            return name
        if hasattr(owner, "param_groups"):
            return type(owner).__name__
        if is_tensor(owner):
            return f"tensor {describe(owner)}"
        if callable(getattr(owner, "name", None)):  # an autograd node
            return owner.name()
        return type(owner).__name__

    def _record(self, kind: str, owner: Any, hook: Callable, args: tuple, start: float, end: float) -> None:
        order = self._order
        self._order += 1
        name = self._name_of(owner)
        entry = self.counts.get((kind, name))
        if entry is None:
            entry = self.counts[(kind, name)] = [order, 0, 0.0, 0.0]
        entry[1] += 1
        entry[2] += end - start
        entry[3] = max(entry[3], end - start)
        if kind in BACKWARD_KINDS and self._awaiting_backward:
            # a hook on the model's own output gradient (a full backward hook on the model) fires
            # before the trace's hook on the output tensor: the backward began with it
            self._backward_starts(start)
        if kind in BACKWARD_KINDS and "backward" in self._open:
            self._last_backward_end = end
        elif kind == "optimizer_step_post_hook" and self._step_ended and self.phases[-1][0] == "optimizer.step":
            phase, begin, _, step = self.phases[-1]     # post-hooks that run after the trace's own
            self.phases[-1] = (phase, begin, end, step)
        if not self._keeps(self.steps) or (self.max_events is not None and len(self.events) >= self.max_events):
            self.dropped += 1
            return
        thread = threading.get_ident()
        tid = self._threads.setdefault(thread, len(self._threads) + 1)
        self.events.append(TraceEvent(order, kind, name, start, end, tid, self.steps, _hook_label(hook),
                                      getattr(hook, "_hook_tool", None), _shapes(kind, args)))

    def mark(self, name: str) -> None:
        """Add an instant event named ``name`` at the current time."""
        self._marks.append((str(name), time.perf_counter()))

    def __len__(self) -> int:
        return self._order

    # ---- output ------------------------------------------------------------------------------
    def chrome_trace(self) -> dict[str, Any]:
        """The trace as a Chrome trace-event dictionary (what ``save`` writes)."""
        pid = os.getpid()
        us = 1e6

        def ts(t: float) -> float:
            return round((t - self.t0) * us, 1)

        steps_tid, phases_tid = 10_000, 10_001     # tracks of their own, listed above the hooks
        out: list[dict[str, Any]] = [
            {"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
             "args": {"name": "hooks (" + ", ".join(self.frameworks) + ")"}},
            {"name": "thread_name", "ph": "M", "pid": pid, "tid": steps_tid, "args": {"name": "steps"}},
            {"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": steps_tid, "args": {"sort_index": -2}},
            {"name": "thread_name", "ph": "M", "pid": pid, "tid": phases_tid,
             "args": {"name": "phases (forward, backward, optimizer.step)"}},
            {"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": phases_tid, "args": {"sort_index": -1}}]
        for thread, tid in self._threads.items():
            out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                        "args": {"name": "hook calls" + ("" if thread == threading.main_thread().ident else f" (thread {tid})")}})
        phases = list(self.phases) + [(p, t, time.perf_counter(), self.steps) for p, t in self._open.items()]
        bounds: dict[int, list[float]] = {}
        for phase, start, end, step in sorted(phases, key=lambda p: p[1]):
            out.append({"name": phase, "cat": "phase", "ph": "X", "pid": pid, "tid": phases_tid, "ts": ts(start),
                        "dur": round((end - start) * us, 1), "args": {"step": step}})
            span = bounds.setdefault(step, [start, end])
            span[0], span[1] = min(span[0], start), max(span[1], end)
        for step, (start, end) in sorted(bounds.items()):
            out.append({"name": f"step {step}", "cat": "step", "ph": "X", "pid": pid, "tid": steps_tid,
                        "ts": ts(start), "dur": round((end - start) * us, 1),
                        "args": {"step": step, "hook events kept": self._keeps(step)}})
        for e in self.events:
            args = {"step": e.step, "order": e.order, "owner": e.owner, "hook": e.hook}
            if e.tool:
                args["tool"] = e.tool
            args.update(e.shapes)
            out.append({"name": f"{e.kind} {e.owner} · {e.tool or e.hook.split(' (')[0]}", "cat": e.kind, "ph": "X",
                        "pid": pid, "tid": e.tid, "ts": ts(e.start), "dur": round((e.end - e.start) * us, 1),
                        "args": args})
        for sk in self.skipped:
            out.append({"name": f"skipped {sk.kind} {sk.owner}", "cat": "skipped", "ph": "i", "s": "t", "pid": pid,
                        "tid": 1, "ts": ts(sk.at), "args": {"step": sk.step, "phase": sk.phase, "owner": sk.owner,
                                                            "hook": sk.hook, "reason": sk.reason}})
        for name, at in self._marks:
            out.append({"name": name, "cat": "mark", "ph": "i", "s": "g", "pid": pid, "tid": 1, "ts": ts(at)})
        return {"traceEvents": out, "displayTimeUnit": "ms",
                "otherData": {"producer": "hookgrad.tools.HookTrace", "hooks_fired": self._order,
                              "events_dropped": self.dropped, "steps": self.steps,
                              "kept": f"hook events of the steps that are multiples of {self.every}" if self.every > 1
                              else "hook events of every step",
                              "step_window": None if self.steps_kept is None else repr(self.steps_kept)}}

    def save(self, path: str) -> str:
        """Write the Chrome trace JSON to ``path`` (compact, no spaces); returns ``path``."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.chrome_trace(), f, separators=(",", ":"), ensure_ascii=False)
        return path

    def summary(self) -> list[dict[str, Any]]:
        """One row per (kind, owner), in the order each first fired: count and time spent."""
        rows = []
        for (kind, name), (first, count, total, longest) in sorted(self.counts.items(), key=lambda kv: kv[1][0]):
            rows.append({"kind": kind, "owner": name, "first": first, "count": count,
                         "total_ms": total * 1e3, "mean_us": total / count * 1e6, "max_us": longest * 1e6})
        return rows

    def table(self) -> str:
        """A text table of ``summary()`` with a total line."""
        rows = [[str(r["first"]), r["kind"], r["owner"], str(r["count"]), f"{r['total_ms']:.3f}",
                 f"{r['mean_us']:.1f}", f"{r['max_us']:.1f}"] for r in self.summary()]
        total = sum(r["total_ms"] for r in self.summary())
        rows.append(["", "all", "", str(self._order), f"{total:.3f}", "", ""])
        return format_table(["first", "kind", "owner", "count", "total ms", "mean us", "max us"], rows)
