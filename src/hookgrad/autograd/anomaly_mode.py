"""Anomaly detection: record each node's forward stack, and fail fast on NaN gradients."""
from __future__ import annotations

import sys
import warnings

from .graph import _anomaly_state


def is_anomaly_enabled() -> bool:
    return _anomaly_state.enabled


def is_anomaly_check_nan_enabled() -> bool:
    return _anomaly_state.check_nan


class detect_anomaly:
    """Inside, a backward node that returns NaN raises RuntimeError naming it, and a warning shows
    the forward stack trace of the op that created it. A context manager only: as in torch, an
    instance is not callable (no decorator form)."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self):
        self._prev = (_anomaly_state.enabled, _anomaly_state.check_nan)
        _anomaly_state.enabled = True
        _anomaly_state.check_nan = self.check_nan

    def __exit__(self, *exc):
        _anomaly_state.enabled, _anomaly_state.check_nan = self._prev
        return False


class set_detect_anomaly:
    """Switch anomaly detection on or off (immediately, or for a ``with`` block)."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self._prev = (_anomaly_state.enabled, _anomaly_state.check_nan)
        _anomaly_state.enabled = bool(mode)
        _anomaly_state.check_nan = check_nan

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _anomaly_state.enabled, _anomaly_state.check_nan = self._prev
        return False


def _warn_or_print(message: str) -> None:
    """A UserWarning; where the warning filters turn it into an error, written to stderr instead
    (the error being reported must stay the one raised)."""
    try:
        warnings.warn(message, UserWarning, stacklevel=2)
    except Exception:  # noqa: BLE001 - any error a warning filter raises
        sys.stderr.write(f"UserWarning: {message}\n")


def report_backward_error(node) -> None:
    """What torch's engine warns when ``node`` failed in a pass run under anomaly mode: the forward
    stack that created it (kept in ``node.metadata["traceback_"]``), then that of each node whose
    backward created the one before (``metadata["parent_"]``)."""
    stack = node.metadata.get("traceback_")
    if stack is None:
        _warn_or_print(f"Error detected in {node.name()}. No forward pass information available. Enable detect "
                       "anomaly during forward pass for more information.")
        return
    _warn_or_print(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n{stack}")
    parent = node.metadata.get("parent_")
    while parent is not None:
        stack = parent.metadata.get("traceback_")
        if stack is None:
            _warn_or_print(f"Error detected in {parent.name()}. No forward pass information available. Enable "
                           "detect anomaly during forward pass for more information.")
        else:
            _warn_or_print(f"\n\nPrevious calculation was induced by {parent.name()}. Traceback of forward call "
                           f"that induced the previous calculation:\n{stack}")
        parent = parent.metadata.get("parent_")
