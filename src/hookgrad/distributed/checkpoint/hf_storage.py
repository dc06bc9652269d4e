"""``torch.distributed.checkpoint.hf_storage``: readers and writers of DCP in safetensors layout."""
from . import _NoDCP


class HuggingFaceStorageReader(_NoDCP):
    pass


class HuggingFaceStorageWriter(_NoDCP):
    pass
