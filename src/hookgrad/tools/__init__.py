"""Hook tooling built on the public hook API only, so each tool works on hookgrad and torch modules.

- ``GradientFlow``: per-layer gradient norms per step (full backward and post-accumulate-grad hooks).
- ``NonFiniteSentinel``: the first module whose output or gradient turns NaN/Inf (``NonFiniteError``).
- ``ActivationCapture``: module outputs or their statistics per call (forward hooks).
- ``HookTrace``: every hook that fires, timed, as a Chrome/Perfetto trace.
- ``PerSampleGradients``: ``p.grad_sample``, each sample's own gradient (forward and tensor hooks).

Each is a context manager with ``close()``; leaving it removes every hook the tool registered.
"""
from .capture import Activation, ActivationCapture
from .gradient_flow import GradientFlow
from .sentinel import NonFiniteError, NonFiniteEvent, NonFiniteSentinel
from .trace import HookTrace
from .per_sample import PerSampleGradients

__all__ = ["GradientFlow", "NonFiniteSentinel", "NonFiniteError", "NonFiniteEvent", "ActivationCapture",
           "Activation", "HookTrace"]
__all__ += ["PerSampleGradients"]
