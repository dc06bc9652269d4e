"""Small modules written once against a framework ``T`` (torch or hookgrad), for the module and
module-hook differential tests. Only basic tensor ops are used, so the same class body works on
both frameworks. (This file holds helpers and a few sanity tests of them.)"""
from __future__ import annotations

import contextlib

from difftest import differential

_CACHE: dict = {}

W2x3 = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]]
W3x2 = [[1.0, -0.5], [0.25, 2.0], [-1.5, 0.75]]
B3 = [0.1, -0.2, 0.3]
B2 = [0.05, -0.1]
X2 = [[1.0, 2.0], [-1.0, 0.5]]


def mods(T):
    """A namespace of test module classes for framework ``T`` (built once per framework)."""
    key = T.__name__
    if key in _CACHE:
        return _CACHE[key]
    nn = T.nn

    class Scale(nn.Module):
        """y = x * w + b (elementwise)."""

        def __init__(self, w=2.0, b=0.5):
            super().__init__()
            self.w = nn.Parameter(T.tensor(w))
            self.b = nn.Parameter(T.tensor(b))

        def forward(self, x):
            return x * self.w + self.b

    class Affine(nn.Module):
        """y = x @ W + b, a Linear-like layer built from matmul."""

        def __init__(self, w=W2x3, b=B3):
            super().__init__()
            self.weight = nn.Parameter(T.tensor(w))
            self.bias = nn.Parameter(T.tensor(b))

        def forward(self, x):
            return x @ self.weight + self.bias

        def extra_repr(self):
            return f"in_features={self.weight.shape[0]}, out_features={self.weight.shape[1]}"

    class Relu(nn.Module):
        def forward(self, x):
            return x.relu()

    class Net(nn.Module):
        """Affine(2->3) -> relu -> Affine(3->2)."""

        def __init__(self):
            super().__init__()
            self.fc1 = Affine(W2x3, B3)
            self.act = Relu()
            self.fc2 = Affine(W3x2, B2)

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x)))

    class Two(nn.Module):
        """Two positional tensor inputs and a keyword argument: x * y * scale."""

        def forward(self, x, y, scale=1.0):
            return x * y * scale

    class Mixed(nn.Module):
        """A non-tensor positional argument between two tensors."""

        def forward(self, x, k, y):
            return x * k + y

    class Pair(nn.Module):
        """Returns a tuple of two tensors."""

        def forward(self, x):
            return x * 2.0, x * 3.0

    class PairWithNone(nn.Module):
        def forward(self, x):
            return x * 2.0, None

    class DictOut(nn.Module):
        def forward(self, x):
            return {"a": x * 2.0, "b": x + 1.0}

    class ListOut(nn.Module):
        def forward(self, x):
            return [x * 2.0, x * 3.0]

    class Identity(nn.Module):
        def forward(self, x):
            return x

    class Twice(nn.Module):
        """Calls the same child twice."""

        def __init__(self):
            super().__init__()
            self.inner = Scale(2.0, 0.0)

        def forward(self, x):
            return self.inner(self.inner(x))

    class Fail(nn.Module):
        def forward(self, x):
            raise ValueError("forward failed")

    class WithBuffers(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(T.tensor([1.0, 2.0]))
            self.register_buffer("running", T.tensor([0.5, 0.5]))
            self.register_buffer("scratch", T.tensor([9.0]), persistent=False)
            self.register_buffer("empty", None)
            self.register_parameter("nothing", None)

        def forward(self, x):
            return x * self.w + self.running

    class Tree(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = WithBuffers()
            self.b = nn.Sequential(Scale(), Relu(), Scale(3.0, -1.0))
            self.shared = self.a

        def forward(self, x):
            return self.b(self.a(x))

    ns = type("Mods", (), {})()
    for name, value in list(locals().items()):
        if isinstance(value, type):
            setattr(ns, name, value)
    _CACHE[key] = ns
    return ns


def leaf(T, values=X2, requires_grad=True):
    return T.tensor(values, requires_grad=requires_grad)


@contextlib.contextmanager
def clean_globals(T):
    """Run a block that registers global module hooks; restore the global hook state after."""
    mm = T.nn.modules.module
    names = ["_global_backward_pre_hooks", "_global_backward_hooks", "_global_forward_pre_hooks",
             "_global_forward_hooks", "_global_forward_hooks_always_called",
             "_global_forward_hooks_with_kwargs", "_global_buffer_registration_hooks",
             "_global_module_registration_hooks", "_global_parameter_registration_hooks"]
    saved = {n: dict(getattr(mm, n)) for n in names}
    flag = mm._global_is_full_backward_hook
    mm._global_is_full_backward_hook = None
    try:
        yield mm
    finally:
        for n in names:
            d = getattr(mm, n)
            d.clear()
            d.update(saved[n])
        mm._global_is_full_backward_hook = flag


def shapes(seq):
    """A tuple of shapes (or None) for a tuple of gradients: compact hook records."""
    return tuple(None if g is None else tuple(g.shape) for g in seq)


@differential
def test_fixture_net_forward_backward(T):
    m = mods(T)
    net = m.Net()
    x = leaf(T)
    y = net(x)
    y.sum().backward()
    return y, x.grad, [p.grad for p in net.parameters()]


@differential
def test_fixture_modules_forward(T):
    m = mods(T)
    x = leaf(T)
    return [m.Scale()(x), m.Two()(x, x, scale=2.0), m.Mixed()(x, 3.0, x), m.Pair()(x),
            m.Tree()(T.tensor([1.0, -2.0]))]
