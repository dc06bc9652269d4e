"""``torch.optim.swap_in_optimizer_params_and_state``: run an optimizer, for the length of a
``with`` block, on other parameter tensors and another state (given as ``state_dict()`` does)."""
from __future__ import annotations

import contextlib
from collections import defaultdict

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


def _checked_state(state) -> dict:
    from .._tensor import Tensor
    if not isinstance(state, dict):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping packed parameter ids "
                           f"to per-param state dicts, got {type(state).__name__}.")
    if any(isinstance(key, Tensor) for key in state):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style state keyed by packed parameter ids.")
    if any(isinstance(key, int) and not isinstance(value, dict) for key, value in state.items()):
        raise RuntimeError(f"{_NAME} requires per-parameter optimizer state entries to be dictionaries.")
    return state


def _checked_group(index: int, live: dict, given) -> list:
    if not isinstance(given, dict):
        raise RuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary.")
    ids = given.get("params")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style param_groups[*]['params'] entries keyed "
                           "by packed parameter ids.")
    if len(live["params"]) != len(ids):
        raise RuntimeError(f"swapin_optim_state param group {index} has a different number of params than the live "
                           "optimizer param group.")
    only_given = [k for k in given if k not in live]
    only_live = [k for k in live if k not in given]
    if only_given or only_live:
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style param group keys to exactly match the live "
                           f"optimizer group keys for group {index}. Keys only in swap-in: {only_given}. Keys only "
                           f"in live: {only_live}.")
    return ids


def _plan(optimizer, swapin_parameters: dict, swapin_optim_state: dict):
    """The state by packed id and, per group, (live group, given group, its tensors)."""
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state = _checked_state(swapin_optim_state.get("state"))
    groups = swapin_optim_state.get("param_groups")
    if not isinstance(groups, list):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['param_groups'] to be a list of param-group dicts, "
                           f"got {type(groups).__name__}.")
    if len(groups) != len(optimizer.param_groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups than the live optimizer.")
    tensors = list(swapin_parameters.values())
    taken, seen, plan = 0, set(), []
    for index, (live, given) in enumerate(zip(optimizer.param_groups, groups)):
        ids = _checked_group(index, live, given)
        seen.update(ids)
        if taken + len(ids) > len(tensors):
            raise RuntimeError(f"{_NAME} requires the explicit parameter state to match optimizer.param_groups "
                               "ordering.")
        plan.append((live, given, tensors[taken:taken + len(ids)]))
        taken += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be keyed only by packed parameter ids "
                           f"from param_groups[*]['params']; got extra keys {extra!r}.")
    return state, plan


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters, swapin_optim_state):
    """Inside the block the optimizer's groups hold ``swapin_parameters`` (in the order of its own
    parameters) and the hyperparameters of ``swapin_optim_state["param_groups"]``, and its state is
    ``swapin_optim_state["state"]`` re-keyed by those tensors; in-place changes to the state tensors
    reach the given state dict. On exit the optimizer is as it was."""
    state, plan = _plan(optimizer, swapin_parameters, swapin_optim_state)
    live_state = optimizer.state
    snapshots = [dict(group) for group in optimizer.param_groups]
    try:
        swapped = defaultdict(dict)
        for live, given, params in plan:
            live["params"] = params
            for key, value in given.items():
                if key != "params":
                    live[key] = value
            for param, packed_id in zip(params, given["params"]):
                swapped[param] = dict(state.get(packed_id, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer.state = live_state
