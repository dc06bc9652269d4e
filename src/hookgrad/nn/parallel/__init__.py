"""``torch.nn.parallel``: scatter/gather helpers and the data-parallel wrappers, for one CPU device."""
from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel
from .scatter_gather import gather, scatter, scatter_kwargs

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel", "gather", "scatter", "scatter_kwargs"]
