"""DataLoader worker processes against torch's: which worker loads which batch, worker_info and
seeding inside workers, batch order (in order and ``in_order=False``), iterable-style datasets
replicated per worker, persistent workers, errors raised in workers, timeouts, start methods, and
that no worker process outlives its iterator.

The two frameworks draw different random numbers, so seeds are compared through relations that
torch guarantees (a worker's seed is ``base_seed + worker_id``, ``initial_seed()`` in a worker is
its seed, NumPy and ``random`` are seeded from it) rather than by value.
"""
import gc
import importlib
import multiprocessing
import os
import random
import time
import warnings

import numpy as np
import pytest
from torch.utils.data._utils.worker import _generate_state as torch_numpy_seed_state

from _worker_datasets import Tagged
from difftest import catch, differential


def data_mod(T):
    return importlib.import_module(T.__name__ + ".utils.data")


def framework(name):
    return importlib.import_module(name)


def no_workers_left(timeout=10.0):
    """True once this process has no live child processes (workers are gone)."""
    gc.collect()  # an exception's traceback can keep an iterator (and its workers) alive until collected
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not multiprocessing.active_children():
            return True
        time.sleep(0.02)
    return False


class WhoLoads:
    """Sample i is (i, worker id, num_workers, seed - initial_seed(), seed - worker id) as seen in
    the worker that loads it."""

    def __init__(self, fw, n=10):
        self.fw, self.n = fw, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        T = framework(self.fw)
        info = data_mod(T).get_worker_info()
        return T.tensor([i, info.id, info.num_workers, info.seed - T.initial_seed(), info.dataset is self])


@pytest.mark.parametrize("batch_size,num_workers,prefetch", [(3, 2, None), (1, 2, 1), (4, 1, 3), (None, 2, 2)])
@differential
def test_workers_load_round_robin(T, batch_size, num_workers, prefetch):
    D = data_mod(T)
    loader = D.DataLoader(WhoLoads(T.__name__), batch_size=batch_size, num_workers=num_workers,
                          prefetch_factor=prefetch)
    got = list(loader)
    return got, len(loader), loader.prefetch_factor, no_workers_left()


class Seeds:
    """What a worker's random sources were seeded with, checked against torch's rules."""

    def __init__(self, fw):
        self.fw = fw

    def __len__(self):
        return 4

    def __getitem__(self, i):
        T = framework(self.fw)
        info = data_mod(T).get_worker_info()
        base = info.seed - info.id
        return {"initial_seed_is_seed": T.initial_seed() == info.seed,
                "numpy": np.random.get_state()[1][:8].tolist()
                == np.random.RandomState(torch_numpy_seed_state(base, info.id)).get_state()[1][:8].tolist(),
                "random": random.getstate() == random.Random(info.seed).getstate(),
                "base": base, "id": info.id}


def _seed_records(T, generator_seed):
    D = data_mod(T)
    gen = T.Generator()
    gen.manual_seed(generator_seed)
    loader = D.DataLoader(Seeds(T.__name__), batch_size=None, num_workers=2, generator=gen)
    return [list(loader), list(loader)]


@differential
def test_worker_seeds_follow_torchs_rules(T):
    first, second = _seed_records(T, 7)
    again, _ = _seed_records(T, 7)
    other, _ = _seed_records(T, 8)
    checks = [(r["initial_seed_is_seed"], r["numpy"], r["random"], r["id"]) for r in first + second]
    bases = {r["base"] for r in first}
    return (checks, len(bases),                                    # one base seed for all workers
            [r["base"] for r in first] == [r["base"] for r in again],  # reproducible from the generator
            first[0]["base"] != second[0]["base"],                 # a new base seed per epoch
            first[0]["base"] != other[0]["base"], 0 <= first[0]["base"] < 2 ** 63)


def _iterable_class(T):
    D = data_mod(T)

    class Sharded(D.IterableDataset):
        """Range(start, end) split between the workers as in torch's IterableDataset docs."""

        def __init__(self, start, end, shard=True):
            self.start, self.end, self.shard = start, end, shard

        def __iter__(self):
            info = D.get_worker_info()
            if info is None or not self.shard:
                return iter(range(self.start, self.end))
            per_worker = -(-(self.end - self.start) // info.num_workers)
            lo = self.start + info.id * per_worker
            return iter(range(lo, min(lo + per_worker, self.end)))

        def __len__(self):
            return self.end - self.start

    return Sharded


@pytest.mark.parametrize("batch_size,drop_last,shard", [(2, False, True), (2, True, True), (None, False, True),
                                                         (3, False, False), (4, False, True)])
@differential
def test_iterable_dataset_replicated_per_worker(T, batch_size, drop_last, shard):
    Sharded = _iterable_class(T)
    loader = data_mod(T).DataLoader(Sharded(3, 10, shard), batch_size=batch_size, drop_last=drop_last,
                                    num_workers=2)
    return list(loader), no_workers_left()


@differential
def test_iterable_dataset_longer_than_len_warns(T):
    Sharded = _iterable_class(T)
    loader = data_mod(T).DataLoader(Sharded(0, 4, shard=False), batch_size=2, num_workers=2)
    n = len(loader)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batches = list(loader)
    return n, batches, sorted({str(w.message).split("(")[0] for w in caught})


class Offsets:
    """worker_init_fn configures each worker's copy of the dataset through get_worker_info()."""

    def __init__(self, fw):
        self.fw, self.offset = fw, None

    def __len__(self):
        return 6

    def __getitem__(self, i):
        return i + self.offset


def set_offset(worker_id, fw):
    info = data_mod(framework(fw)).get_worker_info()
    assert info.id == worker_id
    info.dataset.offset = 100 * (worker_id + 1)


@differential
def test_worker_init_fn_sees_worker_info(T):
    import functools
    D = data_mod(T)
    loader = D.DataLoader(Offsets(T.__name__), batch_size=2, num_workers=2,
                          worker_init_fn=functools.partial(set_offset, fw=T.__name__))
    return list(loader), D.get_worker_info(), loader.dataset.offset


class WaitsForMain:
    """Index 0 blocks until the main process has received a later batch (a marker file)."""

    def __init__(self, fw, marker):
        self.fw, self.marker = fw, marker

    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 0:
            deadline = time.time() + 20
            while not os.path.exists(self.marker) and time.time() < deadline:
                time.sleep(0.01)
        return i


@differential
def test_out_of_order_delivery(T, tmp_path):
    marker = str(tmp_path / f"{T.__name__}.ready")
    loader = data_mod(T).DataLoader(WaitsForMain(T.__name__, marker), batch_size=2, num_workers=2,
                                    in_order=False)
    it = iter(loader)
    first = next(it)  # worker 1's batch: worker 0 is stuck on index 0
    open(marker, "w").close()
    rest = list(it)
    return first, sorted(b.tolist() for b in [first] + rest), no_workers_left()


class CountsCalls:
    """Each worker's copy counts the samples it loaded; persistent workers keep counting."""

    def __init__(self, fw):
        self.fw, self.calls = fw, 0

    def __len__(self):
        return 4

    def __getitem__(self, i):
        self.calls += 1
        return [i, self.calls, os.getpid()]


@pytest.mark.parametrize("persistent", [True, False])
@differential
def test_persistent_workers(T, persistent):
    loader = data_mod(T).DataLoader(CountsCalls(T.__name__), batch_size=None, num_workers=2,
                                    persistent_workers=persistent)
    epochs = [list(loader) for _ in range(3)]
    pids = [{int(sample[2]) for sample in epoch} for epoch in epochs]
    record = ([[(int(s[0]), int(s[1])) for s in epoch] for epoch in epochs], len(pids[0]),
              pids[0] == pids[1] == pids[2], iter(loader) is iter(loader))
    del loader
    return record, no_workers_left()


class Fails:
    def __init__(self, fw, error, at=3, exit_code=None):
        self.fw, self.error, self.at, self.exit_code = fw, error, at, exit_code

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == self.at:
            if self.exit_code is not None:
                os._exit(self.exit_code)
            raise self.error
        return i


class TwoArgError(Exception):
    def __init__(self, a, b):
        super().__init__(a, b)


def first_line(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001
        return type(exc).__name__, str(exc).splitlines()[0]
    return None


def next_outcomes(it):
    """Each next(it) until the end: the batch, or (class, first line) of what it raised; torch lets
    iteration go on after a worker's error."""
    outcomes = []
    while True:
        try:
            outcomes.append(next(it))
        except StopIteration:
            return outcomes
        except Exception as exc:  # noqa: BLE001
            outcomes.append((type(exc).__name__, str(exc).splitlines()[0]))


@pytest.mark.parametrize("error", [ValueError("bad sample"), KeyError("missing"), TwoArgError(1, 2),
                                   StopIteration()])
@differential
def test_worker_error_reraised_in_main(T, error):
    loader = data_mod(T).DataLoader(Fails(T.__name__, error), batch_size=2, num_workers=2)
    it = iter(loader)
    outcomes = next_outcomes(it)
    if isinstance(error, StopIteration):
        it._shutdown_workers()  # a StopIteration ends the loop early: the iterator is not exhausted
    return outcomes, no_workers_left()


def raise_in_init(worker_id):
    if worker_id == 1:
        raise RuntimeError("init failed")


@differential
def test_worker_init_fn_error(T):
    loader = data_mod(T).DataLoader(list(range(8)), batch_size=2, num_workers=2, worker_init_fn=raise_in_init)
    return next_outcomes(iter(loader)), no_workers_left()


@differential
def test_worker_exits_unexpectedly(T):
    loader = data_mod(T).DataLoader(Fails(T.__name__, None, at=0, exit_code=3), batch_size=2, num_workers=2,
                                    timeout=0)
    cls, message = first_line(lambda: list(loader))
    return cls, message.split("(pid")[0], "exited unexpectedly" in message, no_workers_left()


def test_worker_collected_after_error():
    """An iterator dropped after an error (kept alive by the traceback's reference cycle until
    collected) leaves no worker behind once collected, although the collection may finalize its
    queues before the iterator (the workers then see the done event)."""
    import hookgrad
    loader = hookgrad.utils.data.DataLoader(Fails("hookgrad", ValueError("x")), batch_size=2, num_workers=2)
    assert first_line(lambda: list(loader)) == ("ValueError", "Caught ValueError in DataLoader worker process 1.")
    gc.collect()
    assert not multiprocessing.active_children()


class Slow:
    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(1 if i == 0 else 0)
        return i


@differential
def test_timeout(T):
    loader = data_mod(T).DataLoader(Slow(), batch_size=2, num_workers=1, timeout=0.3)
    return first_line(lambda: list(loader)), no_workers_left()


@differential
def test_iterator_deleted_early_leaves_no_workers(T):
    loader = data_mod(T).DataLoader(list(range(40)), batch_size=2, num_workers=2)
    it = iter(loader)
    first = next(it)
    alive = len(multiprocessing.active_children())
    del it
    return first, alive, no_workers_left()


@differential
def test_worker_info_is_frozen_and_none_in_main(T):
    D = data_mod(T)

    def in_worker(_):
        info = D.get_worker_info()
        try:
            info.id = 5
        except Exception as exc:  # noqa: BLE001
            return type(exc).__name__, sorted(f for f in type(info).__slots__)
        return None

    loader = D.DataLoader([0], batch_size=None, num_workers=1, collate_fn=in_worker)
    return list(loader), D.get_worker_info()


def test_spawn_and_forkserver_workers():
    """Workers started by spawn and forkserver (the dataset travels by pickle) give torch's
    batches; torch's side runs once, with spawn (starting workers that import torch is slow)."""
    import hookgrad
    import torch
    from difftest import assert_same, normalize

    def run(T, context):
        loader = data_mod(T).DataLoader(Tagged(T.__name__), batch_size=2, num_workers=2,
                                        multiprocessing_context=context)
        return normalize((list(loader), no_workers_left()))

    want = run(torch, "spawn")
    for context in ("spawn", "forkserver"):
        assert_same(run(hookgrad, context), want, path=context)


@differential
def test_context_object_and_pin_memory(T):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loader = data_mod(T).DataLoader(list(range(5)), batch_size=2, num_workers=1, pin_memory=True,
                                        multiprocessing_context=multiprocessing.get_context("fork"))
        batches = list(loader)
    return batches, sorted({w.category.__name__ for w in caught})


@differential
def test_worker_argument_errors(T):
    D = data_mod(T)
    ds = list(range(4))
    return [catch(D.DataLoader, ds, num_workers=2, multiprocessing_context="thread"),
            catch(D.DataLoader, ds, num_workers=0, multiprocessing_context="fork"),
            catch(D.DataLoader, ds, num_workers=2, multiprocessing_context=3),
            catch(D.DataLoader, ds, num_workers=2, prefetch_factor=-1),
            catch(D.DataLoader, ds, num_workers=0, prefetch_factor=2),
            catch(D.DataLoader, ds, num_workers=-1),
            catch(D.DataLoader, ds, num_workers=1, timeout=-1),
            catch(D.DataLoader, ds, persistent_workers=True),
            D.DataLoader(ds, num_workers=2).prefetch_factor, D.DataLoader(ds).prefetch_factor]


@differential
def test_loader_draws_one_base_seed_per_iterator(T):
    """Every iterator draws its base seed from the loader's generator, with or without workers."""
    D = data_mod(T)
    drawn = []
    for workers in (0, 1):
        gen, fresh = T.Generator(), T.Generator()
        gen.manual_seed(3)
        fresh.manual_seed(3)
        it = iter(D.DataLoader(list(range(3)), num_workers=workers, generator=gen))
        after_iter = bool((gen.get_state() != fresh.get_state()).any())
        batches = list(it)
        drawn.append((after_iter, batches))
    return drawn


class Batched:
    """A dataset with __getitems__ (returns `rows` items whatever it is asked for)."""

    def __init__(self, rows=None):
        self.rows = rows

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return i * 10

    def __getitems__(self, indices):
        out = [i * 10 + 1 for i in indices]
        return out if self.rows is None else out[:self.rows]


@differential
def test_stack_dataset(T):
    D = data_mod(T)
    xs, ys = T.arange(4.0), T.arange(4) * 2
    tup, named = D.StackDataset(xs, ys), D.StackDataset(x=xs, b=Batched())
    return [tup[1], named[2], len(tup), tup.__getitems__([0, 3]), named.__getitems__([1, 2]),
            list(D.DataLoader(named, batch_size=3)), list(D.DataLoader(tup, batch_size=2, num_workers=1)),
            catch(D.StackDataset, xs, y=ys), catch(D.StackDataset), catch(D.StackDataset, xs, T.arange(3)),
            catch(D.StackDataset(a=xs, b=Batched(1)).__getitems__, [0, 1]),
            catch(D.StackDataset(xs, Batched(1)).__getitems__, [0, 1])]


SPAWN_SCRIPT = """
import sys
import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info


class Numbers(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.tensor([i, get_worker_info().id])


if __name__ == "__main__":
    loader = DataLoader(Numbers(), batch_size=2, num_workers=2, multiprocessing_context=sys.argv[1])
    import hookgrad
    batch = next(iter(loader))
    print([batch.tolist() for batch in loader], type(batch).__module__, type(batch) is hookgrad.Tensor)
"""


def test_spawned_workers_under_hookgrad_run(tmp_path):
    """A script run by `hookgrad run` whose workers are spawned: they re-import the script with
    torch meaning hookgrad too."""
    import subprocess
    import sys
    script = tmp_path / "spawn_loader.py"
    script.write_text(SPAWN_SCRIPT)
    done = subprocess.run([sys.executable, "-m", "hookgrad", "run", str(script), "spawn"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # hookgrad's tensors, named as torch's under `hookgrad run`
    assert done.stdout.strip() == "[[[0, 0], [1, 0]], [[2, 1], [3, 1]]] torch True"
