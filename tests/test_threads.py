"""BLAS thread control: products give NumPy's results on any thread count; the count follows the
size of the work and the cores other processes leave free; set/get_num_threads as in torch."""
import numpy as np
import pytest

import hookgrad
from hookgrad import _threads
from difftest import catch, differential

SHAPES = [((3,), (3,)), ((4, 3), (3,)), ((3,), (3, 5)), ((4, 3), (3, 5)), ((2, 4, 3), (3, 5)),
          ((4, 3), (2, 3, 5)), ((2, 1, 4, 3), (3, 3, 5)), ((0, 3), (3, 2)), ((300, 200), (200, 150))]


@pytest.mark.parametrize("sa,sb", SHAPES)
def test_matmul_is_numpys(sa, sb):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.float32)
    want = np.matmul(a, b)
    got = _threads.matmul(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    if want.ndim:
        out = np.empty_like(want)
        assert _threads.matmul(a, b, out=out) is out
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_thread_count_follows_the_work(monkeypatch):
    if _threads.max_threads() < 2 or _threads._set_fn is None:
        pytest.skip("BLAS has one thread here, or cannot be controlled")
    monkeypatch.setattr(_threads, "_refresh_allowed", lambda now: None)
    monkeypatch.setattr(_threads, "_allowed", _threads.max_threads())
    big = np.ones((256, 256), np.float32)
    small = np.ones((8, 8), np.float32)
    try:
        _threads.matmul(big, big)
        assert _threads.current_threads() == _threads.max_threads()
        _threads.matmul(small, small)
        assert _threads.current_threads() == 1
        monkeypatch.setattr(_threads, "_allowed", 1)  # others keep the cores busy
        _threads.matmul(big, big)
        assert _threads.current_threads() == 1
    finally:
        _threads._set(1)


def test_free_cores_from_counters(monkeypatch):
    """Cores used by others = machine busy time minus this process's CPU time, over the wall time."""
    monkeypatch.setattr(_threads, "_max", 2)
    monkeypatch.setattr(_threads, "_ncpu", 2)
    monkeypatch.setattr(_threads, "_allowed", 2)
    busy, mine = [100.0], [10.0]
    monkeypatch.setattr(_threads, "_machine_busy_seconds", lambda: busy[0])
    monkeypatch.setattr(_threads.time, "process_time", lambda: mine[0])
    monkeypatch.setattr(_threads, "_last_sample", None)
    _threads._refresh_allowed(0.0)
    assert _threads._allowed == 2                 # first look: no judgement yet
    busy[0] += 0.5 + 0.5; mine[0] += 0.5          # 0.5 s: we used one core, others one core
    _threads._refresh_allowed(0.5)
    assert _threads._allowed == 1
    busy[0] += 1.0 + 0.05; mine[0] += 1.0         # we used both cores, others almost nothing
    _threads._refresh_allowed(1.0)
    assert _threads._allowed == 2
    busy[0] += 0.1; mine[0] += 0.0
    _threads._refresh_allowed(100.0)              # a stale previous look is not trusted
    assert _threads._allowed == 2


def test_set_num_threads_bounds_large_products():
    before = hookgrad.get_num_threads()
    try:
        hookgrad.set_num_threads(1)
        assert hookgrad.get_num_threads() == 1
        big = np.ones((256, 256), np.float32)
        _threads.matmul(big, big)
        assert _threads.current_threads() == 1
    finally:
        hookgrad.set_num_threads(before)
    assert hookgrad.get_num_threads() == before


@differential
def test_set_num_threads_bad_input(T):
    before = T.get_num_threads()
    out = [catch(T.set_num_threads, v) for v in (0, -1, 2.5, "2", True)]
    return out + [T.get_num_threads() == before]


def test_products_through_the_ops_agree_with_torch():
    import torch
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((300, 200)), rng.standard_normal((200, 150))
    for T in (hookgrad, torch):
        ta, tb = T.tensor(a, requires_grad=True), T.tensor(b, requires_grad=True)
        (ta @ tb).square().sum().backward()
        if T is hookgrad:
            got = [ta.grad.numpy(), tb.grad.numpy()]
        else:
            want = [ta.grad.numpy(), tb.grad.numpy()]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10)


def test_recurrent_time_loop_runs_on_one_thread_and_matches_torch(monkeypatch):
    import torch
    monkeypatch.setattr(_threads, "_refresh_allowed", lambda now: None)
    monkeypatch.setattr(_threads, "_allowed", _threads.max_threads())
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 3, 8)).astype(np.float32)
    out = {}
    for T in (hookgrad, torch):
        T.manual_seed(0)
        lstm = T.nn.LSTM(8, 16)
        lstm.load_state_dict({k: T.tensor(rng_v) for k, rng_v in
                              ((k, np.random.default_rng(len(k)).standard_normal(tuple(v.shape))
                                .astype(np.float32) * 0.3) for k, v in lstm.state_dict().items())})
        xt = T.tensor(x, requires_grad=True)
        y, _ = lstm(xt)
        if T is hookgrad:
            big = np.ones((256, 256), np.float32)
            _threads.matmul(big, big)   # leaves BLAS on its large-product count
        y.square().sum().backward()
        if T is hookgrad and _threads._set_fn is not None and _threads.max_threads() > 1:
            assert _threads.current_threads() == 1  # the backward time loop set it back
        out[T.__name__] = (y.detach().numpy(), xt.grad.numpy())
    for g, w in zip(out["hookgrad"], out["torch"]):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
