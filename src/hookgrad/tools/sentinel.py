"""NonFiniteSentinel: name the first module whose forward output or backward gradient holds NaN or
Inf, from forward hooks, full backward hooks and post-accumulate-grad hooks."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from ._common import HookTool, _own_warning_done, check_choice, describe, iter_tensors, label, nonfinite_counts, select_modules

__all__ = ["NonFiniteSentinel", "NonFiniteError", "NonFiniteEvent"]


@dataclass(frozen=True)
class NonFiniteEvent:
    """Where non-finite values first appeared.

    ``module``: qualified name (``""`` for the model itself); ``module_type``: its class name;
    ``phase``: ``"forward"`` or ``"backward"``; ``tensor``: which tensor and what it held, e.g.
    ``"output float32[32, 10]: 320 NaN, 0 Inf of 320"``; ``step``: steps completed before it.
    """

    module: str
    module_type: str
    phase: str
    tensor: str
    step: int

    def message(self) -> str:
        where = {"forward": "forward output", "backward": "backward gradient"}[self.phase]
        return (f"non-finite values in the {where} of module {label(self.module)!r} ({self.module_type}) "
                f"at step {self.step}: {self.tensor}")


class NonFiniteError(RuntimeError):
    """Raised by ``NonFiniteSentinel(action="raise")``; carries ``module``, ``module_type``,
    ``phase``, ``tensor`` and ``step`` of the ``NonFiniteEvent`` in ``event``."""

    def __init__(self, event: NonFiniteEvent) -> None:
        super().__init__(event.message())
        self.event = event
        self.module = event.module
        self.module_type = event.module_type
        self.phase = event.phase
        self.tensor = event.tensor
        self.step = event.step


class NonFiniteSentinel(HookTool):
    """Find the first module whose forward output or backward gradient turns non-finite.

    A module is blamed when what it produced is non-finite while what it received was finite:
    in the forward pass its output against its positional inputs, in the backward pass its
    ``grad_input`` against its ``grad_output`` (a full backward pre-hook reads ``grad_output`` before
    the module's backward runs), and a parameter's accumulated ``.grad`` (blamed on the module owning
    the parameter, when that module received a finite ``grad_output``). A module that only passes on values that were non-finite
    already is not blamed; so when a NaN comes from plain code in a parent's ``forward`` (not from
    a child module), the parent is named. Non-finite model inputs are blamed on the model itself
    (tensor ``input[...]``), a non-finite gradient arriving from the loss on the model itself
    (tensor ``grad_output[...]``).

    Args:
        model: the module to watch; hooks go on every module (``names`` narrows this with fnmatch
            globs over qualified names; keep the model itself, name ``""``, for the rules above).
        check: ``"both"``, ``"forward"`` or ``"backward"``.
        action: ``"raise"`` raises ``NonFiniteError`` from the hook (out of the forward call or
            out of ``backward()``); ``"record"`` appends a ``NonFiniteEvent`` to ``events``, the
            first per phase and step, and lets training go on.
        optimizer: if given, every ``optimizer.step()`` ends a step; otherwise call ``step()``.

    The backward checks use full backward hooks, which make each watched module's outputs views:
    code that then modifies such an output in place raises while the sentinel is active (use
    ``check="forward"`` or narrow ``names`` for such models).
    """

    _tool_name = "NonFiniteSentinel"

    def __init__(self, model: Any, check: str = "both", action: str = "raise", *,
                 names: str | Iterable[str] | None = "*", optimizer: Any = None) -> None:
        check_choice(check, ("both", "forward", "backward"), "check", self._tool_name)
        check_choice(action, ("raise", "record"), "action", self._tool_name)
        self.modules = select_modules(model, names, self._tool_name)
        super().__init__(optimizer)
        self.check, self.action = check, action
        self.events: list[NonFiniteEvent] = []
        self._root = model
        self._seen: set[tuple[int, str]] = set()
        self._tainted: set[str] = set()   # modules that received a non-finite gradient this pass
        try:
            for name, module in self.modules:
                if check in ("both", "forward"):
                    self._register(module.register_forward_hook, self._forward_hook(name))
                if check in ("both", "backward"):
                    self._register(module.register_full_backward_pre_hook, self._backward_pre_hook(name))
                    self._register(module.register_full_backward_hook, self._backward_hook(name))
                    self._quiet_own_backward_warning(module)
                    for pname, p in module.named_parameters(recurse=False):
                        register = getattr(p, "register_post_accumulate_grad_hook", None)
                        if p.requires_grad and register is not None:
                            self._register(register, self._param_hook(name, pname))
        except BaseException:
            self.close()
            raise

    def step(self) -> None:
        """Mark the end of a training step."""
        self._tainted.clear()
        super().step()

    @property
    def first(self) -> NonFiniteEvent | None:
        """The first event found (recorded or raised), or None."""
        return self.events[0] if self.events else None

    @property
    def tripped(self) -> bool:
        return bool(self.events)

    # ---- hooks -------------------------------------------------------------------------------
    def _forward_hook(self, name: str):
        def hook(module, args, output):
            if not self.enabled:
                return
            bad = _first_nonfinite(output, "output")
            if bad is None:
                return
            bad_input = _first_nonfinite(args, "input")
            if bad_input is None:
                self._found(name, module, "forward", bad)
            elif module is self._root:
                self._found(name, module, "forward", bad_input + " (the model's input)")
        return hook

    def _backward_pre_hook(self, name: str):
        def hook(module, grad_output):
            if not self.enabled:
                return
            if module is self._root:
                self._tainted.clear()           # the model's pre-hook is the first of a backward pass
            bad = _first_nonfinite(grad_output, "grad_output")
            if bad is None:
                return
            if module is self._root:
                self._found(name, module, "backward", bad + " (the gradient arriving from the loss)")
            self._tainted.add(name)              # its parameters' gradients will be non-finite too
        return hook

    def _backward_hook(self, name: str):
        def hook(module, grad_input, grad_output):
            _own_warning_done()
            if not self.enabled or _first_nonfinite(grad_output, "grad_output") is not None:
                return
            bad = _first_nonfinite(grad_input, "grad_input")
            if bad is not None:
                self._found(name, module, "backward", bad)
        return hook

    def _param_hook(self, name: str, pname: str):
        owner = dict(self.modules)[name]

        def hook(param):
            if not self.enabled or name in self._tainted:
                return
            bad = _first_nonfinite(param.grad, f"{pname}.grad")
            if bad is not None:
                self._found(name, owner, "backward", bad)
        return hook

    def _found(self, name: str, module: Any, phase: str, tensor: str) -> None:
        event = NonFiniteEvent(name, type(module).__name__, phase, tensor, self.steps)
        if self.action == "raise":  # the raise ends the pass: no later module can be blamed too
            self.events.append(event)
            raise NonFiniteError(event)
        key = (self.steps, phase)
        if key not in self._seen:  # a container around the culprit would be blamed a second time
            self._seen.add(key)
            self.events.append(event)


def _first_nonfinite(obj: Any, prefix: str) -> str | None:
    """Description of the first tensor in ``obj`` holding NaN or Inf, or None if all are finite."""
    for path, t in iter_tensors(obj, prefix):
        nan, inf, size = nonfinite_counts(t)
        if nan or inf:
            return f"{path} {describe(t)}: {nan} NaN, {inf} Inf of {size} values"
    return None
