"""What torch does on CPU with the flags that only matter on accelerators.

``capturable=True`` asks for CUDA-graph-safe state on the parameter's device; torch refuses it
for CPU parameters at the first ``step`` with an AssertionError, and so do we (accepting it
silently would pretend to a guarantee nobody checks). ``foreach`` and ``fused`` select other
kernels for the same arithmetic and are accepted as flags.
"""
from __future__ import annotations

_SUPPORTED = "['cuda', 'xpu', 'hpu', 'privateuseone', 'xla']"


def check_not_capturable(group: dict, state_names: str = "params and state_steps") -> None:
    """Raise torch's AssertionError when a parameter group asks for ``capturable`` on CPU."""
    if group.get("capturable", False):
        raise AssertionError(f"If capturable=True, {state_names} must be on supported devices: "
                             f"{_SUPPORTED}.")


def check_fused_and_foreach(fused, foreach) -> None:
    if fused and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
