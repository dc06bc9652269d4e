"""``torch.distributed._tensor.experimental``."""
import contextlib


@contextlib.contextmanager
def implicit_replication():
    """Nothing is sharded in one process: the block runs as it is."""
    yield


__all__ = ["implicit_replication"]
