"""torch.backends for a NumPy library: what each back end answers here, and the flags torch
lets code set.

hookgrad computes with NumPy (and SciPy) on the CPU, so:

- ``cpu.get_cpu_capability()`` names the widest SIMD level NumPy's own kernels dispatch to on
  this machine ("AVX512", "AVX2" or "DEFAULT"), the question torch's function answers for its
  own kernels.
- ``mps``, ``cuda`` and ``cudnn`` are not built: ``is_available()``/``is_built()`` are False
  and ``cudnn.version()`` is None. Their flags (``cudnn.enabled``, ``benchmark``,
  ``deterministic``, ``allow_tf32``; ``cuda.matmul.allow_tf32`` ...) can still be read and set,
  with torch's type checks and ``cudnn.flags(...)`` context manager, because scripts set them
  unconditionally; they change nothing here.
- ``mkldnn.is_available()`` is False: hookgrad does not use oneDNN. ``mkl.is_available()`` is
  True only when the BLAS that NumPy was built against is Intel MKL; ``openmp.is_available()``
  only when that BLAS was built with OpenMP. hookgrad itself starts no threads.
"""
from __future__ import annotations

import contextlib
import sys
import types

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp"]


def _flag_module(module_name: str, flags: dict) -> None:
    """Give module ``module_name`` read/write attributes for ``flags`` ({name: (default,
    setter name for torch's error text)}); a non-bool value raises torch's RuntimeError."""
    module = sys.modules[module_name]

    class FlagModule(types.ModuleType):
        pass

    values = {name: default for name, (default, _) in flags.items()}

    def make(name, setter):
        def get(self):
            return values[name]

        def put(self, value):
            if not isinstance(value, bool):
                raise RuntimeError(f"{setter} expects a bool, but got {type(value).__name__}")
            values[name] = value
        return property(get, put)

    for name, (_, setter) in flags.items():
        setattr(FlagModule, name, make(name, setter))
    module.__class__ = FlagModule


@contextlib.contextmanager
def _temporarily(module, **settings):
    """Set flags of ``module`` for the duration of a ``with`` block (None leaves one alone)."""
    saved = {name: getattr(module, name) for name, value in settings.items() if value is not None}
    try:
        for name, value in settings.items():
            if value is not None:
                setattr(module, name, value)
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)


# after the helpers above, which the submodules use
from . import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp  # noqa: E402
