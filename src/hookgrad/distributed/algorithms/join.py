"""``torch.distributed.algorithms.join``: the generic context manager for ranks with uneven inputs.

Protocol: while inside ``Join``, every rank that still has inputs contributes a one to an all-reduce
(``Join.notify_join_context``, called by the first joinable before its own collectives); a rank that
has run out keeps answering those all-reduces with zeros and runs its joinables' main hooks (which
shadow the collectives the others still make) until the sum comes back zero, then runs the post-hooks.
"""
from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from typing import Any, NamedTuple

__all__ = ["JoinHook", "Joinable", "Join"]


class JoinHook:
    """The two entry points a joinable gives the join context manager; both do nothing by default."""

    def main_hook(self) -> None:
        """Runs once per iteration the other ranks still make, after this rank has joined."""

    def post_hook(self, is_last_joiner: bool) -> None:
        """Runs once every rank has joined; ``is_last_joiner`` says this rank was among the last."""


class _JoinConfig(NamedTuple):
    enable: bool
    throw_on_early_termination: bool
    is_first_joinable: bool

    @staticmethod
    def construct_disabled_join_config():
        return _JoinConfig(enable=False, throw_on_early_termination=False, is_first_joinable=False)


class Joinable(ABC):
    """A class taking part in ``Join``: gives a join hook, a device and a process group."""

    @abstractmethod
    def __init__(self) -> None:
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    @abstractmethod
    def join_hook(self, **kwargs) -> JoinHook:
        ...

    @property
    @abstractmethod
    def join_device(self):
        ...

    @property
    @abstractmethod
    def join_process_group(self) -> Any:
        ...


_SKEW_WARNING_AFTER = 1000  # iterations a joined rank shadows before it warns of a large input skew


class Join:
    """Context manager: after the block, shadow the other ranks' iterations until every rank has joined."""

    def __init__(self, joinables: list, enable: bool = True, throw_on_early_termination: bool = False, **kwargs):
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        self._joinables = joinables
        self._join_hooks = [joinable.join_hook(**kwargs) for joinable in joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        for index, joinable in enumerate(joinables):
            joinable._join_config = _JoinConfig(enable=enable, throw_on_early_termination=throw_on_early_termination,
                                                is_first_joinable=index == 0)
        groups = [joinable.join_process_group for joinable in joinables]
        if any(group != groups[0] for group in groups[1:]):
            raise ValueError("Using join context manager with multiple process groups")
        from .. import get_rank
        self._process_group = groups[0]
        self._rank = get_rank(self._process_group)
        self._device = joinables[0].join_device

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc_value, traceback):
        if not self._enable or exc_type is not None:
            return  # an exception passes through unchanged
        is_last_joiner = True
        shadowed = 0
        while self._count_nonjoined() != 0:
            if shadowed > _SKEW_WARNING_AFTER:
                warnings.warn(f"Detected uneven input skew of greater than {_SKEW_WARNING_AFTER}. This means that "
                              f"rank {self._rank} has at least {_SKEW_WARNING_AFTER} fewer inputs than other "
                              "currently-active ranks. This level of skew could lead to performance degradation "
                              "during training.", stacklevel=2)
            if self._throw_on_early_termination:
                self._tell_others_to_stop()
            for hook in self._join_hooks:
                hook.main_hook()
            is_last_joiner = False
            shadowed += 1
        for hook in self._join_hooks:
            hook.post_hook(is_last_joiner)

    def _all_reduce_one(self, value: float, async_op: bool = False):
        import hookgrad
        from .. import all_reduce
        flag = hookgrad.full((1,), value, device=self._device)
        work = all_reduce(flag, group=self._process_group, async_op=async_op)
        return flag, work

    def _count_nonjoined(self) -> float:
        flag, _ = self._all_reduce_one(0.0)
        return flag.item()

    def _tell_others_to_stop(self):
        self._all_reduce_one(1.0)
        raise RuntimeError(f"Rank {self._rank} exhausted all inputs.")

    @staticmethod
    def notify_join_context(joinable: Joinable):
        """Counts the calling rank as not yet joined (only the first joinable communicates); with
        ``throw_on_early_termination``, raises once some rank has run out of inputs."""
        if not hasattr(joinable, "_join_config"):
            raise AssertionError(f"Check that the {type(joinable)} constructor calls the ``Joinable`` constructor")
        config = joinable._join_config
        if not config.is_first_joinable or not config.enable:
            return None
        import hookgrad
        from .. import all_reduce
        work = all_reduce(hookgrad.ones(1, device=joinable.join_device), group=joinable.join_process_group,
                          async_op=True)
        if config.throw_on_early_termination:
            stopped = hookgrad.zeros(1, device=joinable.join_device)
            all_reduce(stopped, group=joinable.join_process_group)
            if stopped.item():
                raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing across all ranks.")
        return work
