"""Why a hook did not fire: ``with hookgrad.hooks.explain() as report:``.

While a block runs, every module call that sets up backward hooks, every backward pass (through
the engine's start and end hooks) and every module hook dispatched is watched; nothing of this
runs when no ``explain()`` (or :class:`~hookgrad.tools.HookTrace`) is active.

- Module backward hooks: a call whose outputs hold no tensor, or none that requires grad, can
  fire none (reported at once). The others are due in the first backward pass that reaches the
  call's outputs: a hook that then does not fire was removed (live hooks), or the pass did not
  reach the module's inputs (``inputs=``, ``autograd.grad``); one registered after the call's
  forward is reported as too late for it. A call no pass reaches is reported when the block ends.
- Tensor, post-accumulate-grad and node hooks of the graph a pass walks are wrapped for the pass
  (and put back at its end) to see which fire: one that does not was removed during the pass, or
  its node was not run (``inputs=``, ``autograd.grad``). Such hooks registered in the block (or
  on the parameters of the models given to ``explain``) whose tensor no pass reached are
  reported when the block ends (an unused branch). A hook that ran with a None gradient is
  listed among the fired ones with that reason.
"""
from __future__ import annotations

import functools
import weakref
from typing import Any, Optional

from ..autograd import engine as _engine
from ..autograd.graph import AccumulateGrad, Node
from ..nn.modules import module as _module
from ..nn.modules._live_backward_hook import LiveBackwardHook, live_hook_ids
from ..utils import hooks as _handles
from ..utils.hooks import registration_of
from ._records import HookRecord

__all__ = ["explain", "ExplainReport", "REASONS"]

NO_OUTPUT_REQUIRED_GRAD = "no output of the module's call required grad"
OUTPUT_NOT_TENSOR = "the module's output was not a tensor (or a tuple holding one)"
NOT_REACHED = "its tensor was not reached by the pass"
MODULE_NOT_REACHED = "the module was not reached by the pass"
GRADIENT_NONE = "its gradient was None"
REMOVED = "it was removed before it could fire"
TOO_LATE = "it was registered too late for this call (after the module's forward)"
LIVE_MODULE_SKIPPED = "the pass skipped the live hook's module"
PASS_RAISED = "the pass raised before reaching it"
REASONS = (NO_OUTPUT_REQUIRED_GRAD, OUTPUT_NOT_TENSOR, NOT_REACHED, MODULE_NOT_REACHED, GRADIENT_NONE, REMOVED,
           TOO_LATE, LIVE_MODULE_SKIPPED, PASS_RAISED)

_MODULE_FORWARD_KINDS = frozenset({"forward_pre_hook", "forward_hook"})
_MODULE_BACKWARD_KINDS = frozenset({"full_backward_pre_hook", "full_backward_hook", "backward_hook"})


def _hook_name(fn) -> str:
    target = getattr(fn, "__wrapped__", fn)
    return getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or type(target).__name__


class ExplainReport:
    """What ``explain()`` saw: ``fired`` and ``skipped`` are lists of :class:`HookRecord` (the
    skipped ones with their ``reason``); ``rows`` pairs each with its phase (``forward``,
    ``backward N``) and ``fired`` / ``skipped``; ``str(report)`` is a table of them."""

    def __init__(self) -> None:
        self.rows: list = []   # (phase, "fired" | "skipped", record, times)
        self._index: dict = {}

    @property
    def fired(self) -> list:
        return [record for _, status, record, _ in self.rows if status == "fired"]

    @property
    def skipped(self) -> list:
        return [record for _, status, record, _ in self.rows if status == "skipped"]

    def _add(self, phase, status, record) -> None:
        # one row per hook, phase and outcome; a hook that fires for several calls counts them
        key = (phase, status, record.kind, record.owner, id(record.fn), record.handle_id, record.reason)
        i = self._index.get(key)
        if i is None:
            self._index[key] = len(self.rows)
            self.rows.append((phase, status, record, 1))
        else:
            p, s, r, n = self.rows[i]
            self.rows[i] = (p, s, r, n + 1)

    def __str__(self) -> str:
        from ..tools._common import format_table
        rows = []
        for phase, status, r, times in self.rows:
            rows.append([phase, status + (f" x{times}" if times > 1 else ""), r.kind, r.owner or "(global)",
                         _hook_name(r.fn), r.reason or "", r.registered_at or ""])
        if not rows:
            return "explain(): no hook was due in the passes of the block"
        return format_table(["phase", "result", "kind", "owner", "hook", "reason", "registered at"], rows)

    __repr__ = __str__


class _Call:
    """One module call that set up backward hooks."""

    __slots__ = ("module", "hooks", "out_refs", "live", "captured", "passes", "order")

    def __init__(self, module, hooks, out_nodes, live, order):
        self.module, self.hooks, self.live, self.order = module, hooks, live, order
        # weakly: an explained call must not keep its graph alive
        self.out_refs = [weakref.ref(node) for node in out_nodes]
        self.captured = {hook_id for _, hook_id, _, _ in hooks}
        self.passes = 0

    def reached_by(self, reachable) -> bool:
        return any(ref() in reachable for ref in self.out_refs)

    def graph_freed(self) -> bool:
        return all(ref() is None for ref in self.out_refs)


class _Pass:
    __slots__ = ("id", "task", "wrapped", "fired", "calls", "module_fired")

    def __init__(self, pass_id, task):
        self.id, self.task = pass_id, task
        self.wrapped: list = []          # (registry, hook id, original, wrapper, kind, owner, node)
        self.fired: dict = {}            # wrapper -> True when every gradient it got was None
        self.calls: list = []
        self.module_fired: set = set()   # (id(module), kind, id(hook))


class _Watcher:
    """The machinery shared by every active explain() and HookTrace: installed for the first,
    removed with the last; what it finds goes to each of them."""

    def __init__(self) -> None:
        self.sinks: list = []
        self.handles: list = []
        self.calls: list = []
        self.passes: dict = {}
        self.registrations: list = []    # (order, registry ref, hook id, holder ref)
        self.seen: dict = {}             # (id(registry), hook id) wrapped in some pass -> registry ref
        self.names: dict = {}            # id(module or tensor) -> qualified name
        self.order = 0                   # counts calls and registrations, to tell sessions apart
        self.opened_at: dict = {}        # sink -> self.order when it joined

    # -- set-up ---------------------------------------------------------------------------------
    def start(self) -> None:
        from ..tools import trace
        self.handles = [_engine_handle(_engine._backward_start_hooks, self.backward_starts),
                        _engine_handle(_engine._backward_end_hooks, self.backward_ends)]
        _module._backward_hook_call_observers.append(self.module_call)
        _handles._registration_watchers.append(self.registered)
        trace.listen_to_module_hooks(self)

    def stop(self) -> None:
        from ..tools import trace
        for registry, key in self.handles:
            registry.pop(key, None)
        self.handles = []
        _module._backward_hook_call_observers.remove(self.module_call)
        _handles._registration_watchers.remove(self.registered)
        trace.stop_listening(self)

    def emit(self, phase, status, record) -> None:
        for sink in tuple(self.sinks):
            sink(phase, status, record)

    # -- naming and records ----------------------------------------------------------------------
    def name_of(self, obj, default=None):
        name = self.names.get(id(obj))
        if name is not None:
            return name
        return default if default is not None else type(obj).__name__

    def module_record(self, kind, module, fn, hook_id=None, reason=None):
        scope, registry = "module", None
        if hook_id is None:
            hook_id, registry, scope = _find_module_hook(module, kind, fn)
        else:
            registry, scope = _module_registry_of(module, kind, hook_id)
        site, prepend = registration_of(registry, hook_id) if registry is not None else (None, False)
        flags = set()
        if prepend:
            flags.add("prepend")
        if hook_id is not None and hook_id in live_hook_ids:
            flags.add("live")
        return HookRecord(kind=kind, scope=scope, owner=None if scope == "global" else self.name_of(module),
                          fn=fn, handle_id=hook_id, flags=frozenset(flags), registered_at=site, reason=reason,
                          registry=registry, holder=module)

    def tensor_record(self, kind, scope, owner, registry, hook_id, fn, holder, reason=None):
        site, _ = registration_of(registry, hook_id)
        return HookRecord(kind=kind, scope=scope, owner=owner, fn=fn, handle_id=hook_id, registered_at=site,
                          reason=reason, registry=registry, holder=holder)

    # -- forward: module calls and dispatched hooks ------------------------------------------------
    def module_call(self, module, bw_hook, result) -> None:
        if isinstance(bw_hook, LiveBackwardHook):
            pre, full = bw_hook.snapshot
            hooks = [("full_backward_pre_hook", i, fn, live) for i, fn, live in pre] + \
                    [("full_backward_hook", i, fn, live) for i, fn, live in full]
            live = True
        else:
            hooks = [("full_backward_pre_hook", _find_module_hook(module, "full_backward_pre_hook", fn)[0], fn, False)
                     for fn in bw_hook.user_pre_hooks]
            hooks += [("full_backward_hook", _find_module_hook(module, "full_backward_hook", fn)[0], fn, False)
                      for fn in bw_hook.user_hooks]
            live = False
        outputs = result if isinstance(result, tuple) else (result,)
        tensors = [t for t in outputs if isinstance(t, _module.Tensor)]
        if bw_hook.output_tensors_index is None or not any(t.requires_grad for t in tensors):
            reason = NO_OUTPUT_REQUIRED_GRAD if tensors else OUTPUT_NOT_TENSOR
            for kind, hook_id, fn, _ in hooks:
                self.emit("forward", "skipped", self.module_record(kind, module, fn, hook_id, reason))
            return
        out_nodes = {t.grad_fn for t in tensors if t.requires_grad and t.grad_fn is not None}
        self.order += 1
        self.calls.append(_Call(module, hooks, out_nodes, live, self.order))

    def _record(self, kind, owner, hook, args, start, end) -> None:
        """A module hook was dispatched (the shared observer of ``hookgrad.tools.trace``)."""
        if getattr(hook, "_hooktrace_own", False) or getattr(hook, "_explain_own", False):
            return
        task = _engine.current_task()
        if kind in _MODULE_BACKWARD_KINDS and task is not None:
            current = self.passes.get(task.id)
            if current is not None:
                current.module_fired.add((id(owner), kind, id(hook)))
            self.emit(f"backward {task.id}", "fired", self.module_record(kind, owner, hook))
        elif kind in _MODULE_FORWARD_KINDS:
            self.emit("forward", "fired", self.module_record(kind, owner, hook))

    def registered(self, registry, hook_id, holder) -> None:
        if holder is None:
            return
        try:
            holder_ref = weakref.ref(holder)
        except TypeError:
            holder_ref = lambda holder=holder: holder  # noqa: E731
        self.order += 1
        self.registrations.append((self.order, weakref.ref(registry), hook_id, holder_ref))

    # -- backward passes -------------------------------------------------------------------------
    def backward_starts(self, info) -> None:
        task = _engine.current_task()
        current = self.passes[info.id] = _Pass(info.id, task)
        reachable = _reachable(info.roots)
        for node in reachable:
            self._wrap_node(current, node)
        for call in self.calls:
            if not call.passes and call.reached_by(reachable):
                current.calls.append(call)
                call.passes += 1

    def _wrap_node(self, current, node) -> None:
        name = node.name()
        if isinstance(node, AccumulateGrad):
            var = node.variable
            owner = self.name_of(var, f"leaf tensor {tuple(var.shape)}")
            self._wrap(current, var._backward_hooks, "tensor_hook", "tensor", owner, node, var)
            self._wrap(current, var._post_accumulate_grad_hooks, "post_accumulate_grad_hook", "tensor", owner,
                       node, var)
        for nr, hooks in node._tensor_pre_hooks or ():
            self._wrap(current, hooks, "tensor_hook", "tensor", f"output {nr} of {name}", node, node)
        self._wrap(current, node._pre_hooks, "node_pre_hook", "node", name, node, node)
        self._wrap(current, node._post_hooks, "node_hook", "node", name, node, node)

    def _wrap(self, current, registry, kind, scope, owner, node, holder) -> None:
        if not registry:
            return
        fired = current.fired
        for hook_id, fn in list(registry.items()):
            if isinstance(fn, _module._LegacyBackwardHook) or getattr(fn, "_explain_own", False) \
                    or getattr(fn, "_hooktrace_own", False):
                continue  # module hooks are seen where they are dispatched
            key = (id(registry), hook_id)

            def wrapper(*args, _fn=fn, _key=key, _kind=kind):
                fired[_key] = _only_none(_kind, args)
                return _fn(*args)
            functools.update_wrapper(wrapper, fn)
            wrapper._explain_own = True
            registry[hook_id] = wrapper
            self.seen[key] = weakref.ref(registry)
            current.wrapped.append((registry, hook_id, fn, wrapper, kind, scope, owner, node, holder))

    def backward_ends(self, info) -> None:
        current = self.passes.pop(info.id, None)
        if current is None:
            return
        phase = f"backward {info.id}"
        task = current.task
        for registry, hook_id, fn, wrapper, kind, scope, owner, node, holder in current.wrapped:
            present = registry.get(hook_id)
            if present is wrapper:
                registry[hook_id] = fn
            if (id(registry), hook_id) in current.fired:
                reason = GRADIENT_NONE if current.fired[(id(registry), hook_id)] else None
                self.emit(phase, "fired", self.tensor_record(kind, scope, owner, registry, hook_id, fn, holder, reason))
                continue
            if present is None:
                reason = REMOVED
            elif info.error is not None:
                reason = PASS_RAISED
            else:
                reason = _not_run_reason(task, node)
            self.emit(phase, "skipped", self.tensor_record(kind, scope, owner, registry, hook_id, fn, holder, reason))
        for call in current.calls:
            self._explain_call(phase, current, call, info)
        self._forget_done()

    def _forget_done(self) -> None:
        """Drop what is explained, so that a long watch (a HookTrace over training) stays small:
        calls a pass has reached, calls whose graph is gone without a pass (reported now),
        registrations seen in a pass or gone."""
        keep = []
        for call in self.calls:
            if call.passes:
                continue
            if call.graph_freed():
                self._unreached_call("end", call)
                continue
            keep.append(call)
        self.calls = keep
        self.registrations = [r for r in self.registrations
                              if r[1]() is not None and r[3]() is not None and (id(r[1]()), r[2]) not in self.seen]
        self.seen = {key: ref for key, ref in self.seen.items() if ref() is not None}

    def _unreached_call(self, phase, call) -> None:
        for kind, hook_id, fn, live in call.hooks:
            reason = LIVE_MODULE_SKIPPED if live else MODULE_NOT_REACHED + " (no backward pass reached its outputs)"
            self.emit(phase, "skipped", self.module_record(kind, call.module, fn, hook_id, reason))

    def _explain_call(self, phase, current, call, info) -> None:
        module = call.module
        for kind, hook_id, fn, live in call.hooks:
            if (id(module), kind, id(fn)) in current.module_fired:
                continue  # reported when it fired
            registry, _ = _module_registry_of(module, kind, hook_id)
            if live and (registry is None or hook_id not in registry):
                reason = REMOVED
            elif info.error is not None:
                reason = PASS_RAISED
            elif live:
                reason = LIVE_MODULE_SKIPPED
            else:
                reason = MODULE_NOT_REACHED + " (its inputs: backward(inputs=...) or autograd.grad)"
            self.emit(phase, "skipped", self.module_record(kind, module, fn, hook_id, reason))
        for kind, hook_id, fn in _current_backward_hooks(module):
            if hook_id in call.captured or (call.live and hook_id in live_hook_ids):
                continue
            self.emit(phase, "skipped", self.module_record(kind, module, fn, hook_id, TOO_LATE))

    # -- the end of the block --------------------------------------------------------------------
    def block_ends(self, report_roots, since) -> None:
        """Report what no pass reached since order ``since``: calls, and tensor/node hooks
        registered then or on the given models' parameters."""
        for call in self.calls:
            if not call.passes and call.order > since:
                self._unreached_call("end", call)
        candidates = []
        for order, registry_ref, hook_id, holder_ref in self.registrations:
            registry, holder = registry_ref(), holder_ref()
            if order > since and registry is not None and holder is not None:
                candidates.append((registry, hook_id, holder))
        for root in report_roots:
            if hasattr(root, "named_parameters"):
                for _, p in root.named_parameters():
                    for registry in (p._backward_hooks, p._post_accumulate_grad_hooks):
                        for hook_id in registry or ():
                            candidates.append((registry, hook_id, p))
        done = set()
        for registry, hook_id, holder in candidates:
            key = (id(registry), hook_id)
            if key in self.seen or key in done or hook_id not in registry:
                continue
            done.add(key)
            fn = registry[hook_id]
            if getattr(fn, "_hooktrace_own", False) or isinstance(fn, _module._LegacyBackwardHook):
                continue
            kind, scope, owner = _kind_of(registry, holder, self)
            self.emit("end", "skipped", self.tensor_record(kind, scope, owner, registry, hook_id, fn, holder,
                                                           NOT_REACHED + " (an unused branch)"))


def _only_none(kind, args) -> bool:
    """Whether a tensor or node hook got no gradient at all (only None)."""
    if kind == "post_accumulate_grad_hook":
        return bool(args) and getattr(args[0], "grad", None) is None
    grads = []
    for a in args:
        grads.extend(a if isinstance(a, tuple) else (a,))
    return all(g is None for g in grads)


def _engine_handle(registry, fn):
    fn = functools.partial(fn)
    fn._explain_own = True
    handle = _handles.RemovableHandle(registry)
    registry[handle.id] = fn
    return registry, handle.id


def _reachable(roots) -> set:
    stack = []
    for t in roots:
        if not isinstance(t, _module.Tensor) or not t.requires_grad:
            continue
        fn = t.grad_fn
        stack.append(fn if fn is not None else t._grad_accumulator())
    seen = set(stack)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def _not_run_reason(task, node) -> str:
    exec_info = task.exec_info if task is not None else None
    if exec_info is not None and node not in exec_info:
        where = "autograd.grad" if task.captures is not None else "backward(inputs=...)"
        return f"{NOT_REACHED} ({where}: only what leads to the wanted gradients runs)"
    return f"{NOT_REACHED} (its node did not run)"


def _kind_of(registry, holder, watcher):
    if isinstance(holder, Node):
        kind = "node_pre_hook" if registry is holder._pre_hooks else "node_hook"
        return kind, "node", holder.name()
    kind = "post_accumulate_grad_hook" if registry is holder._post_accumulate_grad_hooks else "tensor_hook"
    return kind, "tensor", watcher.name_of(holder, f"tensor {tuple(holder.shape)}")


def _module_registry_of(module, kind, hook_id):
    """(registry, scope) holding ``hook_id`` for a module hook of ``kind``."""
    if kind in ("forward_pre_hook",):
        pairs = ((module._forward_pre_hooks, "module"), (_module._global_forward_pre_hooks, "global"))
    elif kind == "forward_hook":
        pairs = ((module._forward_hooks, "module"), (_module._global_forward_hooks, "global"))
    elif kind == "full_backward_pre_hook":
        pairs = ((module._backward_pre_hooks, "module"), (_module._global_backward_pre_hooks, "global"))
    else:
        pairs = ((module._backward_hooks, "module"), (_module._global_backward_hooks, "global"))
    for registry, scope in pairs:
        if hook_id in registry:
            return registry, scope
    return pairs[0][0], "module"


def _find_module_hook(module, kind, fn):
    """(hook id, registry, scope) of the module hook ``fn`` (None id when it is gone)."""
    candidates = {
        "forward_pre_hook": ((module._forward_pre_hooks, "module"), (_module._global_forward_pre_hooks, "global")),
        "forward_hook": ((module._forward_hooks, "module"), (_module._global_forward_hooks, "global")),
        "full_backward_pre_hook": ((module._backward_pre_hooks, "module"),
                                   (_module._global_backward_pre_hooks, "global")),
    }.get(kind, ((module._backward_hooks, "module"), (_module._global_backward_hooks, "global")))
    for registry, scope in candidates:
        for hook_id, hook in registry.items():
            if hook is fn:
                return hook_id, registry, scope
    return None, None, "module"


def _current_backward_hooks(module):
    """(kind, hook id, fn) of the full backward hooks that apply to ``module`` now."""
    out = [("full_backward_pre_hook", i, fn) for registry in (_module._global_backward_pre_hooks,
                                                              module._backward_pre_hooks)
           for i, fn in registry.items()]
    if _module._global_is_full_backward_hook is True:
        out += [("full_backward_hook", i, fn) for i, fn in _module._global_backward_hooks.items()]
    if module._is_full_backward_hook is True:
        out += [("full_backward_hook", i, fn) for i, fn in module._backward_hooks.items()]
    return out


_watcher: Optional[_Watcher] = None


def open_session(sink, roots=()) -> _Watcher:
    """Start watching (or join the watch) with ``sink(phase, status, record)``; the ``roots``
    (models) name modules and parameters."""
    global _watcher
    if _watcher is None:
        _watcher = _Watcher()
        _watcher.start()
    for root in roots:
        if hasattr(root, "named_modules"):
            for name, mod in root.named_modules():
                _watcher.names.setdefault(id(mod), name or type(mod).__name__)
            for name, p in root.named_parameters():
                _watcher.names.setdefault(id(p), name)
    _watcher.sinks.append(sink)
    _watcher.opened_at[sink] = _watcher.order
    return _watcher


def close_session(sink, roots=()) -> None:
    global _watcher
    watcher = _watcher
    if watcher is None or sink not in watcher.sinks:
        return
    # the block's end is reported to this sink only
    others, watcher.sinks = watcher.sinks, [sink]
    try:
        watcher.block_ends(roots, watcher.opened_at.pop(sink, 0))
    finally:
        watcher.sinks = [s for s in others if s != sink]
        if not watcher.sinks:
            watcher.stop()
            _watcher = None


class explain:
    """``with hookgrad.hooks.explain(*models) as report:`` records which hooks fired in the
    forward and backward passes of the block and which did not, and why (see the module's
    docstring); ``models`` (optional) give modules and parameters their qualified names, and
    their parameters' hooks are accounted for. ``report`` is an :class:`ExplainReport`."""

    def __init__(self, *roots: Any) -> None:
        for root in roots:
            if not hasattr(root, "named_modules"):
                raise TypeError(f"hookgrad.hooks.explain() takes models (modules) to name what it reports, "
                                f"but got {type(root).__name__}")
        self.roots = roots
        self.report = ExplainReport()
        self._sink = self.report._add

    def __enter__(self) -> ExplainReport:
        open_session(self._sink, self.roots)
        return self.report

    def __exit__(self, *exc_info) -> None:
        close_session(self._sink, self.roots)
