"""The one idiom by which a module reaches a layer above it.

hookgrad is built in layers (docs/INTERNALS.md, "Layers"): a module never imports, at import
time, a module of a higher layer. A few lower modules still need a name from above at run time -
the autograd graph needs the Tensor type and the engine's accumulation, a custom Function needs the
op helpers. Such a module declares those names once, at its top, with where each comes from::

    _above = LateNames(wrap="hookgrad._tensor", accumulate_into_grad="hookgrad.autograd.engine")

and uses them as ``_above.wrap(...)``. The first read of a name imports its module (by then the
package has loaded) and stores the value on the instance, so every later read is one attribute
lookup - cheap enough for per-op and per-node code. ``"module:attribute"`` binds a name that
differs from the local one. The layer test (tests/test_layers_order.py) checks that every
declared name resolves and comes from a higher layer than the module that declares it.

This file imports nothing of hookgrad.
"""
from __future__ import annotations

import importlib

__all__ = ["LateNames"]


class LateNames:
    """Names from higher layers, each bound on first read: ``LateNames(local_name="module[:attr]")``."""

    def __init__(self, **sources: str) -> None:
        self.__dict__["_sources"] = dict(sources)

    def __getattr__(self, name: str):
        # only reached while ``name`` is not bound yet
        try:
            source = self._sources[name]
        except KeyError:
            raise AttributeError(f"{name!r} is not declared in this LateNames") from None
        module_name, _, attribute = source.partition(":")
        value = getattr(importlib.import_module(module_name), attribute or name)
        self.__dict__[name] = value
        return value

    def sources(self) -> dict:
        """``{local name: "module[:attribute]"}`` as declared."""
        return dict(self._sources)

    def __repr__(self) -> str:
        return f"LateNames({', '.join(f'{k}={v!r}' for k, v in self._sources.items())})"
