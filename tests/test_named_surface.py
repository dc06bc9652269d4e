"""Names of torch's public surface that no other test ran against torch: each is exercised here on
torch and on hookgrad, and what it does must agree (not merely that it exists): the
nn.functional and autograd helpers of __torch_function__, the TorchScript-compatible type hints,
the profiler's enums, config and legacy raw events, enforce_grad_layout_policy, the in-place
baddbmm_, record_stream and reinforce errors, ScriptModule/ScriptFunction, the RNN base classes,
UninitializedBuffer, and utils.data's DataChunk, DFIterDataPipe and _DatasetKind."""
from __future__ import annotations

import numpy as np

from difftest import catch, differential


class _Interposer:
    """An object with a __torch_function__ that records what it is asked to run."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return ("interposed", func.__name__, len(args), sorted(kwargs or {}))


@differential
def test_torch_function_helpers(T):
    F = T.nn.functional
    m = _Interposer()
    return [F.handle_torch_function(F.relu, (m,), m), F.handle_torch_function(F.softmax, (m,), m, dim=1),
            T.autograd.handle_torch_function(F.relu, (m,), m), T.autograd.is_tensor_like(m),
            T.autograd.is_tensor_like(T.ones(1)), T.autograd.is_tensor_like(3), T.autograd.is_tensor_like([T.ones(1)]),
            F.handle_torch_function is T.autograd.handle_torch_function]


def _pooled(x, kernel_size: "BroadcastingList") -> tuple:  # noqa: F821 - a name only torch.jit reads
    return tuple(kernel_size)


@differential
def test_broadcasting_lists_are_subscriptable_hints(T):
    F = T.nn.functional
    return [F.BroadcastingList1[int] is None or F.BroadcastingList1[int] == F.BroadcastingList1[int],
            F.BroadcastingList3[float] is None or F.BroadcastingList3[float] == F.BroadcastingList3[float],
            type(F.BroadcastingList1) is type(F.BroadcastingList3), type(F.BroadcastingList1).__name__,
            F.max_pool3d(T.arange(64.0).reshape(1, 1, 4, 4, 4), 2).shape]


@differential
def test_profiler_enums_and_config(T):
    kinds = []
    for enum in (T.autograd.DeviceType, T.autograd.ProfilerActivity, T.autograd.ProfilerState):
        kinds.append([(name, int(member)) for name, member in enum.__members__.items()])
    config = T.autograd.ProfilerConfig(T.autograd.ProfilerState.CPU, True, False, False, False, False,
                                       T._C._profiler._ExperimentalConfig())
    # kineto_available: torch's profiler is Kineto (True), hookgrad's is its own (False); both answer a bool
    return kinds + [str(T.autograd.DeviceType.CPU), T.autograd.ProfilerActivity.CPU.name,
                    int(T.autograd.ProfilerState.KINETO), type(config).__name__,
                    isinstance(T.autograd.kineto_available(), bool), T.autograd.is_multithreading_enabled()]


def _legacy_events(T, shapes):
    config = T.autograd.ProfilerConfig(T.autograd.ProfilerState.CPU, shapes, False, False, False, False,
                                       T._C._profiler._ExperimentalConfig())
    x = T.ones(2, 3)
    T.autograd._enable_profiler_legacy(config)
    with T.autograd.profiler.record_function("block"):
        pass
    x.neg()
    return T.autograd._disable_profiler_legacy()


@differential
def test_legacy_profiler_events(T):
    threads = _legacy_events(T, False)
    events = threads[0]
    first, push, pop = events[0], events[1], events[2]
    return [len(threads), [(e.kind(), e.name(), e.handle()) for e in events], type(first).__name__,
            isinstance(first, T.autograd.ProfilerEvent), push.cpu_elapsed_us(pop) >= 0,
            [(e.device(), e.node_id(), e.is_remote(), e.is_async(), e.has_cuda(), e.cpu_memory_usage(),
              e.cuda_memory_usage(), e.fwd_thread_id(), e.flops(), e.stack()) for e in events],
            catch(first.cuda_elapsed_us, push), catch(T.autograd.ProfilerEvent),
            len({e.thread_id() for e in events})]


@differential
def test_enforce_grad_layout_policy(T):
    """The context that keeps .grad's layout: gradients accumulate the same inside it."""
    w = T.ones(2, 3, requires_grad=True)
    with T.autograd.enforce_grad_layout_policy():
        (w * T.arange(6.0).reshape(2, 3)).sum().backward()
    return [w.grad, w.grad.is_contiguous(), w.grad.stride()]


@differential
def test_tensor_baddbmm_record_stream_reinforce(T):
    rng = np.random.default_rng(0)
    m = T.tensor(rng.standard_normal((2, 3, 5)).astype(np.float32))
    a = T.tensor(rng.standard_normal((2, 3, 4)).astype(np.float32))
    b = T.tensor(rng.standard_normal((2, 4, 5)).astype(np.float32))
    out = m.clone()
    same = out.baddbmm_(a, b, beta=0.5, alpha=2.0)
    ones = T.ones(2)
    return [out, same is out, m.clone().baddbmm_(a, b), catch(m.baddbmm_, a, b[:, :3]),
            catch(lambda: ones.record_stream(None)), catch(lambda: ones.reinforce(1))]


def _doubled(x):
    return x * 2


class _AddOne:
    pass


@differential
def test_script_module_and_function(T):
    class AddOne(T.nn.Module):
        def forward(self, x):
            return x + 1

    scripted = T.jit.script(AddOne())
    function = T.jit.script(_doubled)
    # (what script returns is a compiled ScriptModule/ScriptFunction in torch and the module or function
    # itself in hookgrad, which runs everything eagerly: only what both answer alike is compared)
    return [isinstance(scripted, T.nn.Module), isinstance(AddOne(), T.ScriptModule), isinstance(_doubled, T.ScriptFunction),
            function(T.ones(2)), scripted(T.ones(2)), catch(T.ScriptFunction), catch(T.ScriptModule),
            T.ScriptModule.__name__, T.ScriptFunction.__name__]


@differential
def test_rnn_base_classes(T):
    nn = T.nn
    T.manual_seed(0)
    base = nn.RNNBase("LSTM", 3, 4)
    cell = nn.RNNCellBase(3, 4, bias=True, num_chunks=4)
    return [issubclass(nn.LSTM, nn.RNNBase), issubclass(nn.GRU, nn.RNNBase), issubclass(nn.LSTMCell, nn.RNNCellBase),
            issubclass(nn.RNNCell, nn.RNNCellBase), [(n, tuple(p.shape)) for n, p in base.named_parameters()],
            [(n, tuple(p.shape)) for n, p in cell.named_parameters()], catch(nn.RNNBase, "FOO", 3, 4),
            base.mode, base.hidden_size, cell.extra_repr()]


@differential
def test_uninitialized_buffer(T):
    nn = T.nn
    buf = nn.UninitializedBuffer()
    module = nn.Module()
    module.register_buffer("stats", nn.UninitializedBuffer())
    shape_error = catch(lambda: buf.shape)
    buf.materialize((2, 3))
    return [type(buf).__name__, buf.shape, buf.requires_grad, isinstance(buf, T.Tensor), shape_error,
            type(module.stats).__name__, catch(lambda: module.stats.shape), catch(module.stats.share_memory_),
            type(T.nn.UninitializedBuffer(requires_grad=True)).__name__]


@differential
def test_data_chunk_dataframe_pipes_and_dataset_kind(T):
    data = T.utils.data
    chunk = data.DataChunk([1, 2, 3])
    kind = data._DatasetKind
    fetcher = kind.create_fetcher(kind.Map, [10, 20, 30], True, lambda batch: sum(batch), False)
    single = kind.create_fetcher(kind.Map, [10, 20, 30], False, lambda item: item * 2, False)
    return [isinstance(chunk, list), list(chunk.raw_iterator()), str(chunk), len(chunk), chunk[1],
            issubclass(data.DFIterDataPipe, data.IterDataPipe), data.DFIterDataPipe.__name__,
            kind.Map, kind.Iterable, fetcher.fetch([0, 2]), single.fetch(1)]


@differential(rtol=1e-5, atol=1e-6)
def test_exponential_family_entropy_from_the_log_normalizer(T):
    """ExponentialFamily's generic entropy (Bregman divergence of the log normalizer) equals the
    distributions' own closed forms."""
    EF = T.distributions.ExponentialFamily
    normal = T.distributions.Normal(T.tensor([0.5, -1.0]), T.tensor([2.0, 0.3]))
    exponential = T.distributions.Exponential(T.tensor([1.5]))
    return [issubclass(T.distributions.Normal, EF), EF.entropy(normal), normal.entropy(),
            EF.entropy(exponential), exponential.entropy(), type(catch(EF, validate_args=False)).__name__]
