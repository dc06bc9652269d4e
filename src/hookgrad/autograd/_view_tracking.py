"""``torch.autograd._force_original_view_tracking``: choose between view replay and one as_strided
node for a view's history after an in-place change. hookgrad has only the latter (torch's CPU
default), so ``mode=False`` is honoured and ``mode=True`` raises NotImplementedError."""
from __future__ import annotations

import functools

from .. import _C


class _force_original_view_tracking:
    """Usable as a call (sets the mode now), a context manager (sets it inside the block) or a
    decorator (sets it around each call); the previous mode comes back after a block or call."""

    def __init__(self, mode: bool) -> None:
        self.prev = _C._is_view_replay_enabled()
        self.mode = mode
        _C._set_view_replay_enabled(mode)

    def __enter__(self) -> None:
        _C._set_view_replay_enabled(self.mode)

    def __exit__(self, *exc) -> None:
        _C._set_view_replay_enabled(self.prev)

    def __call__(self, fn):
        _C._set_view_replay_enabled(self.prev)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return self.__class__(self.mode)
