"""``torch.utils.data.datapipes``: composable data pipelines (iterable- and map-style DataPipes),
the decorators that register and check them, and the common built-in pipes."""
from . import datapipe, iter, map  # noqa: F401  (importing the built-ins registers their functional names)
from ._decorator import (argument_validation, functional_datapipe, guaranteed_datapipes_determinism,
                         non_deterministic, runtime_validation, runtime_validation_disabled)
from .datapipe import DataChunk, DFIterDataPipe, IterDataPipe, MapDataPipe

__all__ = ["DataChunk", "DFIterDataPipe", "IterDataPipe", "MapDataPipe", "argument_validation", "datapipe",
           "functional_datapipe", "guaranteed_datapipes_determinism", "iter", "map", "non_deterministic",
           "runtime_validation", "runtime_validation_disabled"]
