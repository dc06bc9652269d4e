"""``torch.fx.experimental.proxy_tensor``: torch's ``make_fx`` traces through a proxy dispatch mode;
hookgrad has no such tracer (``torch.fx.symbolic_trace`` is its way to a graph), so no proxy mode is
ever active."""
from __future__ import annotations


def get_proxy_mode():
    """The active proxy-tensor tracing mode: None, hookgrad never traces with one."""
    return None


def make_fx(f, *args, **kwargs):
    raise RuntimeError("hookgrad has no make_fx (proxy-tensor tracing); use torch.fx.symbolic_trace")
