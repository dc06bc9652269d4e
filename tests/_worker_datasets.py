"""Datasets for DataLoader tests with spawned workers: this module imports no framework, so that a
spawned worker that unpickles one imports only the framework the dataset names."""
import importlib


class Tagged:
    """Sample i: a tensor, the id of the worker that loaded it, and whether the framework's
    initial seed in that worker is the worker's seed."""

    def __init__(self, framework_name):
        self.framework_name = framework_name

    def __len__(self):
        return 5

    def __getitem__(self, i):
        T = importlib.import_module(self.framework_name)
        info = importlib.import_module(self.framework_name + ".utils.data").get_worker_info()
        return {"x": T.full((2,), float(i)), "worker": info.id, "seed_ok": T.initial_seed() == info.seed}
