"""``torch.testing._internal.common_mkldnn`` for a build whose CPU float32 arithmetic has no reduced
precision modes (no oneDNN bf32/tf32): the decorators run a test once, as torch's do there."""
from __future__ import annotations

__all__ = ["reduced_f32_on_and_off", "bf32_is_not_fp32", "tf32_is_not_fp32"]


def bf32_is_not_fp32() -> bool:
    return False


def tf32_is_not_fp32() -> bool:
    return False


def reduced_f32_on_and_off(bf32_precision=1e-2, tf32_precision=1e-5):
    """torch reruns the test with bf32 and tf32 matmuls where the CPU has them; here it runs once."""
    def wrapper(fn):
        return fn
    return wrapper
