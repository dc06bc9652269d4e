"""DataPipes against torch: the base classes and their functional forms, the built-in pipes
(map, filter, batch, unbatch, collate, shuffle with a seed, sharding_filter, concat, zip; the
map-style ones), DataChunk, the decorators (functional_datapipe, non_deterministic under
guaranteed_datapipes_determinism, runtime_validation and argument_validation as torch 2.13 has
them), and pipes in a DataLoader with worker processes."""
import importlib

import pytest

from difftest import catch, differential


def D(T):
    return importlib.import_module(T.__name__ + ".utils.data")


def pipes(T):
    return (importlib.import_module(T.__name__ + ".utils.data.datapipes.iter"),
            importlib.import_module(T.__name__ + ".utils.data.datapipes.map"))


def double(x):
    return 2 * x


def is_even(x):
    return x % 2 == 0


def add(a, b):
    return a + b


@differential
def test_iter_pipes(T):
    it, _ = pipes(T)
    dp = it.IterableWrapper(range(10))
    pairs = it.IterableWrapper([(i, 10 * i) for i in range(4)])
    batches = list(dp.batch(3))
    return [list(dp.map(double).filter(is_even)), batches, [type(b).__name__ for b in batches],
            list(dp.batch(3, drop_last=True)), len(dp.batch(3)), len(dp.batch(3, drop_last=True)),
            list(dp.batch(2).batch(2).unbatch()), list(dp.batch(2).batch(2).unbatch(unbatch_level=2)),
            list(dp.batch(2).batch(2).unbatch(unbatch_level=-1)),
            list(pairs.map(double, input_col=0)), list(pairs.map(add, input_col=(0, 1), output_col=-1)),
            list(pairs.map(double, input_col=1, output_col=0)), list(pairs.filter(is_even, input_col=1)),
            list(dp.batch(4).collate()), list(it.IterableWrapper(range(3)).concat(it.IterableWrapper("ab"))),
            list(dp.zip(it.IterableWrapper("abc"))), len(dp.map(double)), len(dp.zip(it.IterableWrapper("abc"))),
            catch(dp.batch, 0), catch(lambda: list(dp.filter(double))), catch(dp.concat, [1]),
            catch(dp.map, double, None, 1), str(dp), repr(dp.map(double))]


@pytest.mark.parametrize("seed", [0, 7])
@differential
def test_shuffle_with_seed(T, seed):
    it, mp = pipes(T)
    dp = it.IterableWrapper(range(20))
    return [list(dp.shuffle().set_seed(seed)), list(dp.shuffle(buffer_size=4).set_seed(seed)),
            list(dp.shuffle().set_shuffle(False)), sorted(dp.shuffle()), len(dp.shuffle()),
            list(dp.batch(5).shuffle(unbatch_level=1).set_seed(seed)), catch(dp.shuffle, buffer_size=0)]


@differential
def test_sharding_filter(T):
    it, _ = pipes(T)
    shards = []
    for instance in range(3):
        dp = it.IterableWrapper(range(10)).sharding_filter()
        dp.apply_sharding(3, instance)
        shards.append((list(dp), len(dp)))
    bad = it.IterableWrapper(range(3)).sharding_filter()
    return shards, list(it.IterableWrapper(range(4)).sharding_filter()), catch(bad.apply_sharding, 2, 2)


@differential
def test_map_pipes(T):
    _, mp = pipes(T)
    dp = mp.SequenceWrapper(list(range(7)))
    batched = dp.batch(3)
    return [dp[2], len(dp), [dp.map(double)[i] for i in range(7)], [batched[i] for i in range(3)], len(batched),
            len(dp.batch(3, drop_last=True)), catch(lambda: batched[3]), catch(lambda: dp.batch(3, drop_last=True)[2]),
            dp.concat(mp.SequenceWrapper("xy"))[8], len(dp.concat(mp.SequenceWrapper("xy"))),
            dp.zip(mp.SequenceWrapper("abc"))[1], len(dp.zip(mp.SequenceWrapper("abc"))),
            list(dp.shuffle().set_seed(3)), list(dp.shuffle().set_shuffle(False)), sorted(dp.shuffle()),
            catch(dp.concat, [1]), catch(mp.Concater), sorted(T.utils.data.MapDataPipe.functions)]


@differential
def test_data_chunk(T):
    chunk = D(T).DataChunk([1, 2, 3])
    return (chunk, chunk.as_str("  "), list(chunk.raw_iterator()), isinstance(chunk, list), chunk.items,
            list(iter(chunk)))


def _pipe_classes(T):
    data = D(T)

    class Source(data.IterDataPipe):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            yield from range(self.n)

    class Repeat(data.IterDataPipe):
        def __init__(self, source, times):
            self.source, self.times = source, times

        def __iter__(self):
            for item in self.source:
                for _ in range(self.times):
                    yield item

    return data, Source, Repeat


@differential
def test_functional_datapipe_and_determinism(T):
    data, Source, Repeat = _pipe_classes(T)
    name = f"repeat_{T.__name__}"
    registered = data.functional_datapipe(name)(Repeat)
    result = list(getattr(Source(3), name)(2))
    taken = catch(data.functional_datapipe(name), Repeat)
    missing = catch(lambda: Source(1).no_such_function)
    undecorated = catch(data.non_deterministic, int)

    class Random(data.IterDataPipe):
        def __init__(self, source):
            self.source = source

        def __iter__(self):
            yield from self.source

    always = data.non_deterministic(Random)
    sometimes = data.non_deterministic(lambda source, flag: flag)(Random)
    outside = list(always(Source(2)))
    with data.guaranteed_datapipes_determinism():
        inside = [catch(always, Source(2)), catch(lambda: list(sometimes(Source(2), False))),
                  catch(sometimes, Source(2), True)]
    after = list(always(Source(1)))
    bad_fn = data.non_deterministic(lambda source: 1)(Random)
    del data.IterDataPipe.functions[name]
    return (registered is Repeat, result, taken, missing, undecorated, outside, inside, after,
            catch(bad_fn, Source(1)), name in dir(Source(1)))


@differential
def test_runtime_and_argument_validation(T):
    data, Source, _ = _pipe_classes(T)

    class Checked(data.IterDataPipe[int]):
        @data.runtime_validation
        def __iter__(self):
            yield from (1, "a")

    class Takes(data.IterDataPipe):
        @data.argument_validation
        def __init__(self, source: data.IterDataPipe, n: int):
            self.source = source

        def __iter__(self):
            yield from self.source

    with data.runtime_validation_disabled():
        unchecked = list(Checked())
    return (catch(lambda: list(Checked())), unchecked, catch(Takes, [1], 2), catch(Takes, Source(2), 2),
            catch(data.runtime_validation, double), catch(lambda: list(Checked())))


@differential
def test_pipes_in_a_dataloader_with_workers(T):
    it, _ = pipes(T)
    data = D(T)
    sharded = it.IterableWrapper(range(12)).sharding_filter().map(double)
    shuffled = it.IterableWrapper(range(12)).shuffle().sharding_filter()
    one = list(data.DataLoader(sharded, batch_size=2, num_workers=2))
    two = [b.tolist() for b in data.DataLoader(shuffled, batch_size=3, num_workers=2)]
    flat = sorted(x for batch in two for x in batch)
    return one, flat, len(two), [len(b) for b in two], list(data.DataLoader(sharded, batch_size=4))
