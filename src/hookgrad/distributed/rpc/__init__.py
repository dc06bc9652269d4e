"""``torch.distributed.rpc``: hookgrad has no remote procedure calls. As in a torch built without RPC,
the module holds ``is_available()``, which answers False, and nothing else."""


def is_available() -> bool:
    return False
