"""``torch._C._profiler``: what a profile's configuration is built from (``ProfilerConfig`` takes an
``_ExperimentalConfig`` as its seventh argument; torch's legacy profiler passes an empty one)."""
from __future__ import annotations

from ..autograd.profiler import ProfilerActivity, ProfilerConfig, ProfilerState  # noqa: F401


class _ExperimentalConfig:
    """Kineto's experimental options; hookgrad's profiler reads none of them and keeps them as given."""

    def __init__(self, profiler_metrics=None, profiler_measure_per_kernel=False, verbose=False,
                 performance_events=None, enable_cuda_sync_events=False, *args, **kwargs):
        self.profiler_metrics = list(profiler_metrics or [])
        self.profiler_measure_per_kernel = profiler_measure_per_kernel
        self.verbose = verbose
        self.performance_events = list(performance_events or [])
        self.enable_cuda_sync_events = enable_cuda_sync_events
        self.custom_profiler_config = kwargs.get("custom_profiler_config", "")
        self.trace_only = kwargs.get("trace_only", False)
