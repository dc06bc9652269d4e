"""``torch.multiprocessing``: Python's ``multiprocessing`` (hookgrad tensors are NumPy arrays, which
pickle between processes; there is no shared-memory CUDA or file-descriptor strategy to choose)."""
from multiprocessing import *  # noqa: F401,F403
from multiprocessing import get_context, get_start_method, set_start_method  # noqa: F401

_STRATEGIES = {"file_system"}
_strategy = "file_system"


def get_all_sharing_strategies() -> set:
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    return _strategy


def set_sharing_strategy(new_strategy: str) -> None:
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise AssertionError(f"unknown sharing strategy {new_strategy!r}")
    _strategy = new_strategy


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start ``nprocs`` processes running ``fn(i, *args)``; wait for them when ``join``."""
    context = get_context(start_method)
    processes = [context.Process(target=fn, args=(i, *args), daemon=daemon) for i in range(nprocs)]
    for process in processes:
        process.start()
    if not join:
        return processes
    for process in processes:
        process.join()
        if process.exitcode != 0:
            raise RuntimeError(f"process {process.pid} terminated with exit code {process.exitcode}")
    return None
