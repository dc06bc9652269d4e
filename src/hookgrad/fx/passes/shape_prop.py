"""``ShapeProp``: run a GraphModule on example inputs and record each node's tensor metadata."""
from __future__ import annotations

from typing import NamedTuple

from ..._tensor import Tensor
from ..interpreter import Interpreter
from ..node import map_aggregate

__all__ = ["ShapeProp", "TensorMetadata"]


class TensorMetadata(NamedTuple):
    shape: object
    dtype: object
    requires_grad: bool
    stride: tuple
    memory_format: object
    is_quantized: bool
    qparams: dict


def _extract(t: Tensor) -> TensorMetadata:
    return TensorMetadata(t.shape, t.dtype, t.requires_grad, t.stride(), None, False, {})


class ShapeProp(Interpreter):
    def run_node(self, n):
        result = super().run_node(n)
        found = []

        def meta(obj):
            if isinstance(obj, Tensor):
                found.append(True)
                return _extract(obj)
            return obj

        tensor_meta = map_aggregate(result, meta)
        if found:
            n.meta["tensor_meta"] = tensor_meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        return super().run(*args)
