"""Data loading with PyTorch's API: datasets, samplers, DataLoader and the default collation."""
_spawn_main_key = "HOOKGRAD_DATALOADER_MAIN"  # where hookgrad._worker_main finds the script a spawned worker re-runs
from ._collate import collate, default_collate, default_collate_fn_map, default_convert
from .dataloader import DataLoader, _DatasetKind, get_worker_info
from .distributed import DistributedSampler
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
                      random_split)
from .datapipes import (DataChunk, DFIterDataPipe, IterDataPipe, MapDataPipe, argument_validation,
                        functional_datapipe, guaranteed_datapipes_determinism, non_deterministic, runtime_validation,
                        runtime_validation_disabled)
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                      WeightedRandomSampler)

__all__ = ["BatchSampler", "ChainDataset", "DFIterDataPipe", "DataChunk", "IterDataPipe", "MapDataPipe",
           "argument_validation", "functional_datapipe", "guaranteed_datapipes_determinism", "non_deterministic",
           "runtime_validation", "runtime_validation_disabled", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler", "IterableDataset",
           "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler", "TensorDataset",
           "WeightedRandomSampler", "_DatasetKind", "collate", "default_collate", "default_collate_fn_map", "default_convert",
           "get_worker_info", "random_split"]
