"""``torch.distributed.checkpoint.hf_storage``: readers and writers of DCP in safetensors layout."""
from . import _no_dcp


class HuggingFaceStorageReader:
    def __init__(self, *args, **kwargs):
        _no_dcp()


class HuggingFaceStorageWriter:
    def __init__(self, *args, **kwargs):
        _no_dcp()
