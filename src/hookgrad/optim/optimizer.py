"""The Optimizer base class: parameter groups, per-parameter state, state dicts and hooks.

Update rules live in the subclasses and work directly on the NumPy arrays behind parameters
(``p._ndarray``) and their gradients, in place, in the parameter's own dtype. Everything a user
can observe (``param_groups``, ``state``, ``state_dict()``, hook order and return-value rules)
follows PyTorch 2.13.

Step hooks
    Pre-hooks run global first, then the optimizer's own; post-hooks run the optimizer's own
    first, then the global ones. A pre-hook may return ``(new_args, new_kwargs)`` to replace the
    arguments of ``step``; any other non-None return value is an error.

The wrapper that runs the step hooks is installed on the concrete class the first time an
instance is created (as PyTorch does), so a subclass that defines its own ``step`` gets it too.
"""
from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from copy import deepcopy
from itertools import chain
from typing import Callable

import numpy as np

from .._ops._base import FP_IGNORE, fp_quiet, fp_restore
from ..autograd import _hook_context, grad_mode
from ..autograd.grad_mode import enable_grad, no_grad
from ..utils.hooks import RemovableHandle, note_registration
from ._cpu_flags import check_not_capturable

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook",
           "required"]

# Hooks shared by every optimizer instance, keyed by handle id.
_global_optimizer_pre_hooks: "OrderedDict[int, Callable]" = OrderedDict()
_global_optimizer_post_hooks: "OrderedDict[int, Callable]" = OrderedDict()


class _RequiredParameter:
    """Marks a default that every parameter group must supply itself."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def _tensor_cls():
    from .._tensor import Tensor
    return Tensor


def _wrap(array):
    from .._tensor import wrap
    return wrap(array)


def _typename(obj) -> str:
    if isinstance(obj, _tensor_cls()):
        return obj.type()  # torch.typename names a tensor by its legacy type: torch.FloatTensor
    cls = type(obj)
    module = cls.__module__
    return cls.__qualname__ if module in (None, "builtins") else f"{module}.{cls.__qualname__}"


def _scalar_np_dtype():
    """dtype of the ``step`` counters: float64 when that is the default dtype, else float32."""
    try:
        from .._dtype import get_default_dtype
        if get_default_dtype().np == np.float64:
            return np.float64
    except Exception:  # noqa: BLE001 - the default dtype is a nicety here, not a requirement
        pass
    return np.float32


def _new_step_counter():
    """A 0-d tensor holding 0.0, as PyTorch keeps ``state['step']``."""
    return _wrap(np.zeros((), dtype=_scalar_np_dtype()))


def _zeros_like_params(state: dict, p, *names: str) -> None:
    """``state[name]`` for each of ``names``: a tensor of zeros shaped like ``p`` (a running average)."""
    for name in names:
        state[name] = _wrap(np.zeros_like(p._ndarray))


def _scalar_state(value: float):
    """A 0-d tensor in the step counters' dtype holding ``value`` (NAdam's ``mu_product``,
    ASGD's ``eta`` and ``mu``)."""
    counter = _new_step_counter()
    counter._ndarray[...] = value
    return counter


def _as_float(x) -> float:
    """A hyper-parameter as a Python float (a 1-element tensor is accepted, as in PyTorch)."""
    data = getattr(x, "_ndarray", None)
    if data is not None:
        return float(np.asarray(data).reshape(()))
    return float(x)


def _bump(t) -> None:
    bump = getattr(t, "_bump_version", None)
    if bump is not None:
        bump()


def _no_grad():
    return no_grad()


def _enable_grad():
    return enable_grad()


def _no_grad_step(step_fn):
    """Decorator for ``step(self, closure=None)`` implementations: the closure runs first, with
    grad mode on; then the update runs with grad mode off and NumPy's floating-point warnings
    silenced (PyTorch stays silent on inf/nan arithmetic too). Returns the closure's loss; the
    update itself is called with ``closure=None`` and its return value is not used."""

    @functools.wraps(step_fn)
    def wrapper(self, closure=None):
        loss = _call_closure(closure)
        # no_grad() and np.errstate(all="ignore") without their context-manager objects: those
        # cost 3-4 us a step, as much as the update of a small model's parameters
        state = grad_mode.STATE
        prev = state.enabled
        state.enabled = False
        token = fp_quiet(FP_IGNORE)
        try:
            step_fn(self, None)
        finally:
            fp_restore(token)
            state.enabled = prev
        return loss

    return wrapper


def _check_not_differentiable(differentiable) -> None:
    """The built-in optimizers update NumPy arrays in place, which autograd cannot see."""
    if differentiable:
        raise NotImplementedError("differentiable=True is not supported: hookgrad's optimizers update "
                                  "parameters in place on their NumPy arrays, outside autograd")


def _builtin_defaults(**options) -> dict:
    """A built-in optimizer's ``defaults`` (its options, in torch's order), once ``differentiable`` is refused."""
    _check_not_differentiable(options["differentiable"])
    return options


def _check_lr(lr) -> None:
    """torch's checks on ``lr``: a tensor holds one element, and the value is not negative."""
    if isinstance(lr, _tensor_cls()) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


_LABELS = {"eps": "epsilon"}


def _check_non_negative(**values) -> None:
    """torch's ``ValueError`` for the first of ``name=value`` (checked in the order given) that is
    negative or NaN, worded ``Invalid <name> value: <value>`` (``eps`` reads "epsilon")."""
    for name, value in values.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {_LABELS.get(name, name)} value: {value}")


def _call_closure(closure):
    if closure is None:
        return None
    with _enable_grad():
        return closure()


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Register ``hook(optimizer, args, kwargs) -> None | (new_args, new_kwargs)`` to run before
    every optimizer's ``step``, ahead of that optimizer's own pre-hooks."""
    handle = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    note_registration(_global_optimizer_pre_hooks, handle.id)
    return handle


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Register ``hook(optimizer, args, kwargs) -> None`` to run after every optimizer's
    ``step``, after that optimizer's own post-hooks."""
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    note_registration(_global_optimizer_post_hooks, handle.id)
    return handle


def _with_step_hooks(step_fn):
    """Wrap a class's ``step`` so that it runs the global and per-instance step hooks."""

    @functools.wraps(step_fn)
    def step(*args, **kwargs):
        self = args[0]
        # live views, as torch iterates: a hook that adds or removes a step hook during step()
        # makes the next iteration raise RuntimeError ("OrderedDict mutated during iteration")
        for pre_hook in chain(_global_optimizer_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            if _hook_context.ON[0]:  # hookgrad.hooks.context() inside the hook
                result = _hook_context.run_hook("optimizer_step", "optimizer_step_pre_hook", None, None, pre_hook,
                                                self, args, kwargs)
            else:
                result = pre_hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(f"{step_fn} must return None or a tuple of "
                                       f"(new_args, new_kwargs), but got {result}.")
        out = step_fn(*args, **kwargs)
        for post_hook in chain(self._optimizer_step_post_hooks.values(), _global_optimizer_post_hooks.values()):
            if _hook_context.ON[0]:
                _hook_context.run_hook("optimizer_step", "optimizer_step_post_hook", None, None, post_hook,
                                       self, args, kwargs)
            else:
                post_hook(self, args, kwargs)
        return out

    step.hooked = True
    return step


class Optimizer:
    """Base class of all optimizers.

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts that each
    define a parameter group (a ``"params"`` entry plus options overriding ``defaults``).
    Use ordered collections: the order of parameters is what a state dict records.
    """

    # Group options added after some pickles were written: loading one gives every group these
    # values (``_setdefault_in_groups``); and the state entries an older pickle holds as plain
    # numbers, turned into 0-d tensors on load.
    _group_options_added_later: dict = {}
    _scalar_state_keys: tuple = ()
    # The running averages a built-in update rule keeps per parameter besides ``state["step"]``
    # (zeros on first sight), for the rules whose ``_init_state`` is the default one below.
    _zero_state_keys: tuple = ()

    def __init__(self, params, defaults: dict) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict = OrderedDict()
        self._patch_step_function()

        if isinstance(params, _tensor_cls()):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))

        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []

        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    # -- pickling ------------------------------------------------------------------------------
    def __getstate__(self) -> dict:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks", "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self._patch_step_function()
        self.defaults.setdefault("differentiable", False)
        self._setdefault_in_groups(**self._group_options_added_later)
        if self._scalar_state_keys:
            self._tensorize_scalar_state(*self._scalar_state_keys)

    def _init_state(self, state: dict, p, group: dict) -> None:
        """A parameter's state on first sight: the step counter and ``_zero_state_keys``."""
        state["step"] = _new_step_counter()
        _zeros_like_params(state, p, *self._zero_state_keys)

    def _setdefault_in_groups(self, **options) -> None:
        """Give every group the options that a state pickled before they existed lacks."""
        for group in self.param_groups:
            for key, value in options.items():
                group.setdefault(key, value)

    def _tensorize_scalar_state(self, *keys: str) -> None:
        """Turn the plain numbers an older pickle holds under ``keys`` into 0-d state tensors."""
        for group in self.param_groups:
            for p in group["params"]:
                p_state = self.state.get(p, {})
                for key in keys:
                    if key in p_state and not isinstance(p_state[key], _tensor_cls()):
                        p_state[key] = _scalar_state(float(p_state[key]))

    def _grads_to_apply(self, group: dict, weight_decay=0, *, decoupled: bool = False, lr: float = 0.0,
                        capturable_names: str | None = "params and state_steps"):
        """Yield ``(p, state, grad)`` for each parameter of ``group`` that has a gradient, after the
        preamble that the built-in update rules share, in torch's order: the CPU ``capturable``
        check (skipped when ``capturable_names`` is None), the state made by
        ``self._init_state(state, p, group)`` on first sight, ``state["step"]`` advanced by one,
        the gradient negated under ``maximize``, and weight decay: ``p *= 1 - lr * weight_decay``
        when ``decoupled``, else ``grad + weight_decay * p``. ``grad`` is a NumPy array that the
        caller must not change in place (it may be ``p.grad``'s own); one generator serves a whole
        group, so the per-parameter cost stays that of the loop it replaces."""
        maximize = group["maximize"]
        states = self.state
        for p in group["params"]:
            grad_tensor = p.grad
            if grad_tensor is None:
                continue
            if grad_tensor._ndarray.dtype.kind == "c":
                # torch updates view_as_real(param) with these rules; squaring a complex gradient here
                # would be silently wrong, so refuse (before any state changes) until that is in place
                raise NotImplementedError(
                    f"{type(self).__name__}: complex parameters are not supported by hookgrad's "
                    f"{type(self).__name__} yet (torch updates torch.view_as_real(param)); SGD supports them")
            if capturable_names is not None:
                check_not_capturable(group, capturable_names)
            state = states[p]
            if len(state) == 0:
                self._init_state(state, p, group)
            step_t = state["step"]
            step_t._ndarray += 1
            _bump(step_t)
            grad = grad_tensor._ndarray
            if maximize:
                grad = -grad
            if weight_decay != 0:
                if decoupled:
                    p._ndarray *= 1 - lr * weight_decay
                else:
                    grad = grad + weight_decay * p._ndarray
            yield p, state, grad

    def __repr__(self) -> str:
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # -- step and its hooks ----------------------------------------------------------------------
    def _patch_step_function(self) -> None:
        cls = self.__class__
        if not getattr(cls.step, "hooked", False):
            cls.step = _with_step_hooks(cls.step)

    def step(self, closure=None):
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        raise NotImplementedError

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(optimizer, args, kwargs) -> None | (new_args, new_kwargs)``, called
        before ``step`` (after the global pre-hooks)."""
        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        note_registration(self._optimizer_step_pre_hooks, handle.id)
        return handle

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Register ``hook(optimizer, args, kwargs) -> None``, called after ``step`` (before the
        global post-hooks)."""
        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        note_registration(self._optimizer_step_post_hooks, handle.id)
        return handle

    # -- state dict hooks ------------------------------------------------------------------------
    @staticmethod
    def _add_hook(registry: OrderedDict, hook: Callable, prepend: bool) -> RemovableHandle:
        handle = RemovableHandle(registry)
        registry[handle.id] = hook
        if prepend:
            registry.move_to_end(handle.id, last=False)
        note_registration(registry, handle.id, prepend)
        return handle

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Register ``hook(optimizer) -> None``, called at the start of ``state_dict()``.
        ``prepend=True`` puts it ahead of the hooks already registered."""
        return self._add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Register ``hook(optimizer, state_dict) -> state_dict | None``, called at the end of
        ``state_dict()``; a returned dict replaces the one being built."""
        return self._add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Register ``hook(optimizer, state_dict) -> state_dict | None``, called at the start of
        ``load_state_dict`` with a shallow copy of the given dict; a returned dict is loaded instead."""
        return self._add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Register ``hook(optimizer) -> None``, called at the end of ``load_state_dict``."""
        return self._add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # -- state dicts -----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The optimizer's state as ``{'state': {index: {...}}, 'param_groups': [...]}``.

        Parameters are replaced by their running index over all groups; the state tensors are
        the optimizer's own (not copies), as in PyTorch.
        """
        for pre_hook in tuple(self._optimizer_state_dict_pre_hooks.values()):
            pre_hook(self)

        index_of: dict[int, int] = {}
        start = 0

        def pack_group(group: dict) -> dict:
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                index_of.setdefault(id(p), i)
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        tensor_cls = _tensor_cls()
        packed_state = {(index_of[id(k)] if isinstance(k, tensor_cls) else k): v
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}

        for post_hook in tuple(self._optimizer_state_dict_post_hooks.values()):
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _process_value_according_to_param_policy(param, value, param_id, param_groups, key=None):
        """Cast a loaded state tensor like PyTorch: floating state follows the parameter's dtype,
        except ``step`` (kept as saved unless the group is fused or capturable)."""
        fused = capturable = False
        for pg in param_groups:
            if param_id in pg["params"]:
                fused = pg.get("fused", False)
                capturable = pg.get("capturable", False)
                break
        data = value._ndarray
        if key == "step":
            if (capturable or fused) and data.dtype != np.float32:
                return _wrap(data.astype(np.float32))
            return value
        target = param._ndarray.dtype
        if (target.kind in "fc" or target.name == "bfloat16") and data.dtype != target:
            return _wrap(data.astype(target))
        return value

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a state dict made by ``state_dict()`` (of this class, here or in PyTorch with its
        tensors converted). Saved parameters are matched to ours by position."""
        state_dict = state_dict.copy()
        for pre_hook in tuple(self._optimizer_load_state_dict_pre_hooks.values()):
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result

        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")

        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        tensor_cls = _tensor_cls()
        saved_param_groups = state_dict["param_groups"]

        def cast(param, value, param_id=None, key=None):
            if isinstance(value, tensor_cls):
                return Optimizer._process_value_according_to_param_policy(
                    param, value, param_id, saved_param_groups, key)
            if isinstance(value, dict):
                return {k: cast(param, v, param_id, k) for k, v in value.items()}
            if isinstance(value, (str, bytes)):
                return value
            if isinstance(value, Iterable):
                return type(value)(cast(param, v, param_id) for v in value)
            return value

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = cast(param, v, param_id=k)
            else:
                state[k] = v

        def update_group(group: dict, new_group: dict) -> dict:
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})

        for post_hook in tuple(self._optimizer_load_state_dict_post_hooks.values()):
            post_hook(self)

    # -- gradients and groups --------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors: to None (default) or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if grad.grad_fn is not None:
                        grad.detach_()
                    else:
                        grad.requires_grad_(False)
                    grad._ndarray[...] = 0
                    _bump(grad)

    def add_param_group(self, param_group: dict) -> None:
        """Add a parameter group (a dict with ``"params"`` and optional per-group options)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        tensor_cls = _tensor_cls()

        params = param_group["params"]
        if isinstance(params, tensor_cls):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but "
                            "the ordering of tensors in sets will change between runs. Please use a "
                            "list instead.")
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            param_group["param_names"] = names

        for param in param_group["params"]:
            if not isinstance(param, tensor_cls):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(param))
            if not self.defaults.get("differentiable", None) and not (
                    param.is_leaf or getattr(param, "retains_grad", False)):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required optimization "
                                 f"parameter {name}")
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; "
                          "in future, this will cause an error; see github.com/pytorch/pytorch/issues/40967 for more "
                          "information", stacklevel=3)

        seen: set[int] = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")

        self.param_groups.append(param_group)
