"""``torch.storage``: the storage classes behind tensors (``UntypedStorage``, ``TypedStorage``)."""
from ._legacy import TypedStorage, UntypedStorage

_StorageBase = UntypedStorage

__all__ = ["TypedStorage", "UntypedStorage"]
