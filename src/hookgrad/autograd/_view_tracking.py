"""``torch.autograd._force_original_view_tracking``: choose between view replay and one as_strided
node for a view's history after an in-place change. hookgrad has only the latter (torch's CPU
default), so ``mode=False`` is honoured and ``mode=True`` raises NotImplementedError. The flag
itself is what ``torch._C._is_view_replay_enabled`` / ``_set_view_replay_enabled`` read and set."""
from __future__ import annotations

from .grad_mode import run_inside

_view_replay_enabled = [False]


def is_view_replay_enabled() -> bool:
    return _view_replay_enabled[0]


def set_view_replay_enabled(mode: bool) -> None:
    if mode:
        raise NotImplementedError("hookgrad has no view replay: a view's history after an in-place change is "
                                  "always one AsStridedBackward0 node (torch's default on CPU)")
    _view_replay_enabled[0] = False


class _force_original_view_tracking:
    """Usable as a call (sets the mode now), a context manager (sets it inside the block) or a
    decorator (sets it around each call); the previous mode comes back after a block or call."""

    def __init__(self, mode: bool) -> None:
        self.prev = is_view_replay_enabled()
        self.mode = mode
        set_view_replay_enabled(mode)

    def __enter__(self) -> None:
        set_view_replay_enabled(self.mode)

    def __exit__(self, *exc) -> None:
        set_view_replay_enabled(self.prev)

    def __call__(self, fn):
        set_view_replay_enabled(self.prev)
        return run_inside(fn, self.clone)

    def clone(self):
        return self.__class__(self.mode)
