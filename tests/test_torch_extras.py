"""torch.* settings, type markers, sym_* helpers, streams, fork/wait and eager cond/while_loop,
against torch."""
import math

import numpy as np
import pytest

import hookgrad
from difftest import catch, differential, warns

import torch


@differential
def test_float32_matmul_precision_round_trip_and_bad_value(T):
    before = T.get_float32_matmul_precision()
    try:
        T.set_float32_matmul_precision("high")
        high = T.get_float32_matmul_precision()
        bad = warns(T.set_float32_matmul_precision, "fastest")
        return before, high, bad, T.get_float32_matmul_precision()
    finally:
        T.set_float32_matmul_precision(before)


@differential
def test_interop_thread_count_argument_errors(T):
    return [catch(T.set_num_interop_threads, v) for v in (0, -2, "a", 2.0)]


def test_interop_threads_set_once():
    from hookgrad import _torch_extras
    saved = dict(_torch_extras._settings)
    try:
        _torch_extras._settings["interop_threads"] = None
        hookgrad.set_num_interop_threads(3)
        assert hookgrad.get_num_interop_threads() == 3
        with pytest.raises(RuntimeError, match="cannot set number of interop threads"):
            hookgrad.set_num_interop_threads(2)
    finally:
        _torch_extras._settings.update(saved)


@differential
def test_anomaly_enabled_switch(T):
    seen = []
    try:
        for args in ((True,), (True, False), (False,)):
            T.set_anomaly_enabled(*args)
            seen.append((T.is_anomaly_enabled(), T.is_anomaly_check_nan_enabled()))
    finally:
        T.set_anomaly_enabled(False)
    return seen


@differential
def test_init_threads_and_cxx_abi(T):
    return T.init_num_threads(), T.compiled_with_cxx11_abi(), T.has_lapack, isinstance(T.set_flush_denormal(False),
                                                                                          bool)


def test_flags_answer_for_hookgrad():
    # torch's flags describe its build; hookgrad's describe what it computes with
    assert hookgrad.has_lapack is True
    assert hookgrad.has_mkl is hookgrad.backends.mkl.is_available()
    assert hookgrad.has_openmp is hookgrad.backends.openmp.is_available()
    assert hookgrad.has_spectral is False  # no torch.fft yet
    assert hookgrad.set_flush_denormal(True) is False
    with pytest.raises(TypeError):
        hookgrad.set_flush_denormal(1)


@differential
def test_get_device_module(T):
    return ([T.get_device_module(d).__name__.split(".")[-1] for d in (None, "cpu", T.device("cpu"))],
            catch(T.get_device_module, "nodevice"))


@differential
def test_layouts_and_memory_formats(T):
    x = T.ones(2, 3)
    return (repr(T.strided), isinstance(T.strided, T.layout), x.layout == T.strided,
            [repr(f) for f in (T.contiguous_format, T.legacy_contiguous_format, T.channels_last_3d)],
            isinstance(T.channels_last_3d, T.memory_format), isinstance(T.contiguous_format, T.memory_format),
            x.contiguous(memory_format=T.contiguous_format).tolist(),
            x.clone(memory_format=T.legacy_contiguous_format).tolist())


@differential
def test_a_tensors_layout_is_the_strided_object(T):
    # (torchlens refuses a tensor whose layout ``is not torch.strided`` as sparse)
    x = T.ones(2, 3, requires_grad=True)
    tensors = [x, x * 2, x[0], x.t(), T.nn.Parameter(T.zeros(2)), T.empty_like(x), T.zeros(2, layout=T.strided),
               T.tensor([1, 2]), x.detach()]
    return ([t.layout is T.strided for t in tensors], [t.layout is T.sparse_coo for t in tensors],
            type(x.layout) is T.layout, str(x.layout), T.strided is not T.sparse_csr)


@differential
def test_sym_helpers_on_numbers(T):
    values = [T.sym_int(3.7), T.sym_int(-3.7), T.sym_int(5), T.sym_float(3), T.sym_max(2, 5), T.sym_max(2, 5.0),
              T.sym_min(2.0, 5), T.sym_min(7, 5), T.sym_not(True), T.sym_not(0), T.sym_ite(True, 1, 2),
              T.sym_ite(False, "a", "b"), T.sym_sqrt(4), T.sym_sum([1, 2, 3]), T.sym_sum(1.5, 2),
              T.sym_max(np.int64(3), 2)]
    types = [type(v).__name__ for v in values]
    errors = [catch(T.sym_ite, 1, 1, 2), catch(T.sym_ite, True, 1, 2.0), catch(T.sym_max, "a", 1)]
    return values, types, errors, [isinstance(3, T.SymInt), isinstance(3.0, T.SymFloat),
                                   isinstance(True, T.SymBool)]


def test_concrete_sym_numbers_behave_as_their_value():
    n, f, b = hookgrad.SymInt(4), hookgrad.SymFloat(2.5), hookgrad.SymBool(False)
    assert n + 1 == 5 and n * f == 10.0 and list(range(n)) == [0, 1, 2, 3]
    assert hookgrad.sym_int(f) == 2 and hookgrad.sym_int(n) is n and hookgrad.sym_float(f) is f
    assert hookgrad.sym_max(n, 7) == 7 and hookgrad.sym_min(f, 1) == 1.0
    assert hookgrad.sym_not(b) is True and hookgrad.sym_ite(b, "t", "f") == "f"
    assert hookgrad.sym_sqrt(hookgrad.SymInt(9)) == 3.0 and math.isclose(float(f), 2.5)


@differential
def test_cpu_stream_and_event(T):
    s = T.Stream()
    e = T.Event()
    timed = T.Event(enable_timing=True)
    return (repr(s), s.query(), s.synchronize(), s.device.type, s.stream_id, s == T.Stream(), e.query(), e.wait(),
            e.synchronize(), s.wait_event(e), [catch(f) for f in (e.record, s.record_event)],
            catch(s.wait_stream, T.Stream()), catch(e.elapsed_time, T.Event()),
            catch(timed.elapsed_time, T.Event(enable_timing=True)), catch(T.Stream, "cuda"))


@differential
def test_fork_and_wait(T):
    fut = T.fork(lambda a, b=1: a * 2 + b, 5, b=3)
    return T.wait(fut), fut.wait(), fut.done(), catch(T.fork, lambda: 1 // 0)


@differential
def test_cond_with_tensor_and_bool_predicates(T):
    x = T.tensor([0.5, -1.0, 2.0], requires_grad=True)
    r1 = T.cond(x.sum() > 0, lambda a: a.sin() * a, lambda a: a.cos(), (x,))
    r1.sum().backward()
    g1 = x.grad.clone()
    x.grad = None
    r2 = T.cond(T.tensor(False), lambda a, b: (a * b, a * 1), lambda a, b: (a + b, b * 3), (x, x.detach() * 2))
    (r2[0].sum() + r2[1].sum()).backward()
    r3 = T.cond(True, lambda a: a + 1, lambda a: a, (x,))
    errors = [catch(T.cond, T.tensor([True, False]), lambda a: a, lambda a: a, (x,)),
              catch(T.cond, "yes", lambda a: a, lambda a: a, (x,)),
              catch(T.cond, T.tensor(True), 1, lambda a: a, (x,)),
              catch(T.cond, T.tensor(True), lambda a: a, lambda a: a, (x, 3))]
    return (r1, type(r1.grad_fn).__name__, g1, r2, x.grad, r3, type(r3.grad_fn).__name__, errors)


@differential
def test_while_loop_eager(T):
    x = T.ones(2, requires_grad=True)
    i, y = T.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2), (T.tensor(0), x))
    y.sum().backward()
    counted = T.while_loop(lambda n: n < 5, lambda n: (n + 2,), (T.tensor(0),))
    return i, y.detach(), x.grad, counted


STORAGE_CLASSES = ("FloatStorage", "DoubleStorage", "HalfStorage", "BFloat16Storage", "LongStorage", "IntStorage",
                   "ShortStorage", "CharStorage", "ByteStorage", "BoolStorage")


@differential
def test_typed_storage_classes(T):
    made = []
    for name in STORAGE_CLASSES:
        cls = getattr(T, name)
        s = cls([1, 0, 2])
        made.append((name, s.dtype, len(s), s.tolist(), s.type(), isinstance(s, cls), isinstance(s, T.TypedStorage),
                     len(cls(4)), len(cls()), isinstance(s, T.FloatStorage) == (name == "FloatStorage")))
    x = T.tensor([1.0, 2.0])
    return (made, T.Storage is T.FloatStorage, isinstance(x.storage(), T.FloatStorage),
            isinstance(x.storage(), T.LongStorage), isinstance(x.untyped_storage(), T.StorageBase),
            x.storage_type().__name__, T.tensor([1, 2]).storage_type().__name__,
            T.FloatStorage.from_buffer(b"\x00\x00\x80\x3f\x00\x00\x00\x40", "little").tolist(),
            T.ShortStorage.from_buffer(b"\x00\x01", "big").tolist(),
            T.tensor(T.FloatStorage([1.5, 2])), T.BFloat16Tensor([1.5]).dtype,
            [catch(T.FloatStorage, v) for v in (3.5, "x", -1)])


@pytest.mark.parametrize("name", ["uint16", "uint32", "uint64"])
@differential
def test_wide_unsigned_dtypes(T, name):
    dt = getattr(T, name)
    x = T.tensor([1, 2, 3], dtype=dt)
    info = T.iinfo(dt)
    promotions = [catch(T.promote_types, dt, other) for other in (T.int64, T.uint8, T.bool, T.float32, T.float16, dt)]
    mixed = [catch(lambda o=o: x * T.tensor([2], dtype=o)) for o in (T.int64, T.uint8)]
    return (x, x.dtype, dt.is_signed, dt.itemsize, info.max, info.min, info.bits, T.tensor([-1]).to(dt),
            T.tensor([2.7]).to(dt), x.float(), x * x, x == x, x.sum(), T.cat([x, x]), x[1:], x.tolist(),
            T.zeros(2, dtype=dt), T.full((2,), 7, dtype=dt), promotions, mixed, x / x, x.clone(), x.sort().values)


@differential
def test_tensor_module_load_record_stream_reinforce(T):
    target = T.zeros(2, requires_grad=False)
    loaded = target.module_load(T.ones(2))
    param = T.nn.Parameter(T.zeros(2))
    assigned = param.module_load(T.full((2,), 3.0), assign=True)
    return (loaded, target, assigned, assigned.requires_grad, catch(T.ones(2).record_stream, T.Stream()),
            catch(T.ones(2).reinforce, 1.0))


@differential
def test_sym_constraints_and_error_classes(T):
    return ([T.sym_constrain_range(5, min=0, max=10), catch(T.sym_constrain_range, 5, min=6),
             catch(T.sym_constrain_range, 5, max=4), T.sym_constrain_range_for_size(3, min=2, max=4),
             catch(T.sym_constrain_range_for_size, -1), T.sym_fresh_size(3)],
            [issubclass(c, RuntimeError) for c in (T.OutOfMemoryError, T.AcceleratorError)],
            isinstance(T.fork(lambda: 1), T.Future), issubclass(T.futures.Future, T.Future))


def test_disable_torch_function_blocks_run_ops_unchanged():
    x = hookgrad.ones(2)
    with hookgrad.DisableTorchFunction(), hookgrad.DisableTorchFunctionSubclass():
        assert (x + 1).tolist() == [2.0, 2.0]


@differential
def test_torch_functional_all_names_its_functions(T):
    # (torchlens crawls torch.functional.__all__ and fetches every name)
    names = T.functional.__all__
    return sorted(names), all(callable(getattr(T.functional, name)) for name in names)
