"""Warnings that appear once per process, unless ``set_warn_always(True)`` asks for every one."""
from __future__ import annotations

import os
import sys
import warnings

_always = [False]
_already_warned: set = set()


def set_warn_always(b, /) -> None:
    """False (the default): some warnings appear only once per process; True: every time."""
    if type(b) is not bool:
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    _always[0] = b


def is_warn_always_enabled() -> bool:
    return _always[0]


def warn_once(key: str, message: str, category=UserWarning, stacklevel: int = 2) -> None:
    """Warn ``message`` the first time ``key`` comes up in this process (every time under warn-always)."""
    if _always[0]:
        # as in torch: warnings given under warn-always do not use up the once-per-process one
        warnings.warn(message, category, stacklevel=stacklevel + 1)
    elif key not in _already_warned:
        _already_warned.add(key)
        warnings.warn(message, category, stacklevel=stacklevel + 1)


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def warn_once_at_user_frame(key: str, message: str, category=UserWarning) -> None:
    """``warn_once`` pointing where ``warn_at_user_frame`` points (torch's TORCH_WARN_ONCE in a kernel)."""
    if _always[0] or key not in _already_warned:
        _already_warned.add(key)
        warn_at_user_frame(message, category)


def warn_at_user_frame(message: str, category=UserWarning) -> None:
    """Warn as torch's kernels do: from the first frame outside hookgrad, however many hookgrad frames
    (method wrappers, argument checks, composite ops) lie between it and the caller."""
    level, frame = 2, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        if not _skipped_by_warnings(frame):
            level += 1
        frame = frame.f_back
    warnings.warn(message, category, stacklevel=level)


def _skipped_by_warnings(frame) -> bool:
    """Whether CPython's warnings leave ``frame`` out when they count ``stacklevel`` (the argument-check
    and entry-point frames are named so that they do)."""
    name = frame.f_code.co_filename
    return "importlib" in name and "_bootstrap" in name
