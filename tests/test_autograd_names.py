"""The smaller torch.autograd names against torch: SavedTensor (the class of grad_fn._raw_saved_*),
the multithreading, view-replay and gradient-layout switches, and the __torch_function__ helpers
torch.autograd re-exports from torch.overrides."""
import threading

from difftest import catch, differential


@differential
def test_saved_tensor_class(T):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = a * a
    raw = b.grad_fn._raw_saved_self
    before = (isinstance(raw, T.autograd.SavedTensor), raw.unpack_hook, raw.data, raw.unpack())
    raw.register_hooks(lambda x: x * 3, lambda x: x / 3)
    after = (raw.data, raw.unpack(), callable(raw.unpack_hook),
             catch(raw.register_hooks, lambda x: x, lambda x: x))
    b.sum().backward()
    return before, after, a.grad, type(raw) is T.autograd.SavedTensor


@differential
def test_multithreading_switch(T):
    A = T.autograd
    states = [A.is_multithreading_enabled()]
    with A.set_multithreading_enabled(False):
        states.append(A.is_multithreading_enabled())
        x = T.ones(2, requires_grad=True)
        (x * 2).sum().backward()
    states.append(A.is_multithreading_enabled())
    switch = A.set_multithreading_enabled(False)  # a call sets it now
    states.append(A.is_multithreading_enabled())
    switch.__exit__(None, None, None)
    seen_in_thread = []
    with A.set_multithreading_enabled(False):
        worker = threading.Thread(target=lambda: seen_in_thread.append(A.is_multithreading_enabled()))
        worker.start()
        worker.join()

    @A.set_multithreading_enabled(True)
    def inside():
        return A.is_multithreading_enabled()

    A.set_multithreading_enabled(False)
    decorated = inside(), A.is_multithreading_enabled()
    A.set_multithreading_enabled(True)
    return states, seen_in_thread, x.grad, decorated


@differential
def test_grad_layout_policy_switch(T):
    A = T.autograd
    read = T._C._is_grad_layout_enforcement_enabled if hasattr(T._C, "_is_grad_layout_enforcement_enabled") \
        else A._extra_modes.is_grad_layout_enforcement_enabled
    states = [read()]
    p = T.ones(2, 3, requires_grad=True)
    with A.enforce_grad_layout_policy(False):
        states.append(read())
        (p * 2).sum().backward()
    states.append(read())

    @A.enforce_grad_layout_policy(False)
    def inside():
        return read()

    states += [read(), inside(), read()]
    return states, p.grad


@differential
def test_view_replay_flag(T):
    return T.autograd.is_view_replay_enabled()


class Wrapped:
    """A tensor-like object with __torch_function__."""

    def __init__(self, value):
        self.value = value

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return ("handled", func.__name__, len(args))


@differential
def test_torch_function_helpers(T):
    A = T.autograd

    def public_api(x, y):
        if A.has_torch_function((x, y)):
            return A.handle_torch_function(public_api, (x, y), x, y)
        return "plain"

    t = T.ones(1)
    return (public_api(t, t), public_api(t, Wrapped(1)), A.is_tensor_like(t), A.is_tensor_like(Wrapped(1)),
            A.is_tensor_like(3), A.handle_torch_function is T.overrides.handle_torch_function)
