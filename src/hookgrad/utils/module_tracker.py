"""``torch.utils.module_tracker``: which modules are running, in forward and in backward.

``ModuleTracker`` is a context manager; while it is entered, ``tracker.parents`` is the set of the
qualified names of the modules whose forward (or whose backward) is running, always with
``"Global"``. A module is named by where it was first met: a module called at the top level is
named by its class (``"Sequential"``), its children by the attribute path below it
(``"Sequential.0"``, ``"Sequential.block.conv"``).

Backward follows the graph, as torch's tracker does: a module is entered in backward when the
gradients of all its outputs that need grad have arrived, and left when those of its inputs that
need grad have been computed. A module whose inputs need no grad (the first layer of a network) is
therefore left only when the backward pass ends, which empties ``parents`` back to ``{"Global"}``.
"""
from __future__ import annotations

import logging
import weakref

__all__ = ["ModuleTracker"]

logger = logging.getLogger(__name__)


def _grad_tensors(value) -> list:
    """The tensors in ``value`` (nested tuples, lists and dicts) that need grad."""
    from .._tensor import Tensor
    from ._pytree import tree_flatten

    leaves, _ = tree_flatten(value)
    return [leaf for leaf in leaves if isinstance(leaf, Tensor) and leaf.requires_grad]


class ModuleTracker:
    """Tracks the module hierarchy while forward and backward run (see the module docstring)."""

    parents: set

    def __init__(self) -> None:
        self.parents = {"Global"}
        self._known_modules: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._seen_modules: weakref.WeakSet = weakref.WeakSet()
        self._has_callback = False
        self._hooks: list = []

    @property
    def is_bw(self) -> bool:
        """Whether a backward pass is running now."""
        from ..autograd import engine
        return engine.current_task() is not None

    def _maybe_set_engine_callback(self) -> None:
        # one reset per backward pass, queued by the first module entered in it
        if self._has_callback:
            return
        from ..autograd import Variable

        def reset() -> None:
            self.parents = {"Global"}
            self._has_callback = False

        Variable._execution_engine.queue_callback(reset)
        self._has_callback = True

    def _get_mod_name(self, mod) -> str:
        if mod not in self._known_modules:
            self._known_modules[mod] = type(mod).__name__
        name = self._known_modules[mod]
        if mod not in self._seen_modules:
            for child_name, child in mod.named_children():
                self._known_modules[child] = f"{name}.{child_name}"
                self._get_mod_name(child)
            self._seen_modules.add(mod)
        return name

    def _enter_fn(self, name: str, is_bw: bool):
        def enter(*args) -> None:
            if is_bw:
                self._maybe_set_engine_callback()
            if name in self.parents:
                logger.info("The module hierarchy tracking seems to be broken as this Module was already "
                            "entered. %s during %s", name, "backward" if is_bw else "forward")
            self.parents.add(name)
        return enter

    def _leave_fn(self, name: str, is_bw: bool):
        def leave(*args) -> None:
            if name in self.parents:
                self.parents.remove(name)
            else:
                logger.info("The Module hierarchy tracking is confused as we're exiting a Module that was "
                            "never entered. %s during %s", name, "backward" if is_bw else "forward")
        return leave

    def _fw_pre_hook(self, mod, args) -> None:
        from ..autograd.graph import register_multi_grad_hook

        name = self._get_mod_name(mod)
        self._enter_fn(name, False)()
        tensors = _grad_tensors(args)
        if tensors:
            self._hooks.append(register_multi_grad_hook(tensors, self._leave_fn(name, True)))

    def _fw_post_hook(self, mod, args, output) -> None:
        from ..autograd.graph import register_multi_grad_hook

        name = self._get_mod_name(mod)
        self._leave_fn(name, False)()
        tensors = _grad_tensors(output)
        if tensors:
            self._hooks.append(register_multi_grad_hook(tensors, self._enter_fn(name, True)))

    def __enter__(self):
        from ..nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

        self._fw_pre_handle = register_module_forward_pre_hook(self._fw_pre_hook)
        self._fw_post_handle = register_module_forward_hook(self._fw_post_hook)
        return self

    def __exit__(self, *exc_info):
        self._fw_pre_handle.remove()
        self._fw_post_handle.remove()
        for handle in self._hooks:
            handle.remove()
        self._hooks.clear()
