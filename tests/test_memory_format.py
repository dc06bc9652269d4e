"""Memory formats: ``channels_last``, ``channels_last_3d``, ``preserve_format`` and ``contiguous_format`` are
four distinct objects, and a tensor laid out channels-last has torch's strides, through contiguous/to/
clone, the factories, the ``*_like`` functions, elementwise ops, convolutions, a module's ``to`` and
the gradient a channels-last leaf accumulates. Strides are compared with torch's."""
from __future__ import annotations

import pytest

from difftest import catch, differential


def _layout(t):
    return tuple(t.shape), t.stride(), t.is_contiguous(), t.is_contiguous(memory_format=_cl(t))


def _cl(t):
    import hookgrad
    import torch
    T = torch if type(t).__module__.startswith("torch") else hookgrad
    return T.channels_last_3d if t.dim() == 5 else T.channels_last


@differential
def test_formats_are_distinct_objects(T):
    formats = [T.contiguous_format, T.preserve_format, T.channels_last, T.channels_last_3d]
    return [repr(f) for f in formats], [a is b for a in formats for b in formats], type(T.channels_last).__name__


@differential
def test_contiguous_to_clone_and_is_contiguous(T):
    x = T.arange(120.0).reshape(2, 3, 4, 5)
    y = x.contiguous(memory_format=T.channels_last)
    return [_layout(y), _layout(x.to(memory_format=T.channels_last)), _layout(y.clone()),
            _layout(y.clone(memory_format=T.contiguous_format)), _layout(y.contiguous()),
            y.contiguous(memory_format=T.channels_last) is y, T.equal(x, y), y,
            _layout(T.ones(1, 3, 1, 1).contiguous(memory_format=T.channels_last)),
            _layout(T.arange(720.0).reshape(2, 3, 4, 5, 6).contiguous(memory_format=T.channels_last_3d))]


@differential
def test_factories_and_like(T):
    y = T.zeros(2, 3, 4, 5).contiguous(memory_format=T.channels_last)
    made = [T.empty(2, 3, 4, 5, memory_format=T.channels_last), T.empty_like(y), T.zeros_like(y), T.ones_like(y),
            T.full_like(y, 2.0), T.ones_like(y, memory_format=T.contiguous_format), T.rand_like(y),
            T.empty_like(y, memory_format=T.channels_last), T.zeros_like(T.zeros(2, 3, 4, 5),
                                                                          memory_format=T.channels_last)]
    T.manual_seed(0)
    drawn = T.rand_like(y)   # drawn in memory order, as torch fills the storage
    return [_layout(m) for m in made], drawn, T.ones_like(y), T.full_like(y, 2.0).sum()


@differential
def test_elementwise_results_keep_the_layout(T):
    x = T.arange(120.0).reshape(2, 3, 4, 5)
    y = x.contiguous(memory_format=T.channels_last)
    results = [y + 1, y * x, x * y, T.relu(y - 50), y.exp(), y + y, y.sum(1), y < x, y.double() * x.float(),
               y.int() + x, y.sigmoid(), -y, y / 2]
    return [(_layout(r), r) for r in results]


@differential
def test_convolution_follows_a_channels_last_input(T):
    T.manual_seed(0)
    x = T.randn(2, 3, 6, 6)
    y = x.contiguous(memory_format=T.channels_last)
    conv = T.nn.Conv2d(3, 4, 3)
    strided = T.nn.Conv2d(3, 4, 3, stride=2, bias=False)
    cl_conv = T.nn.Conv2d(3, 4, 3).to(memory_format=T.channels_last)
    c3 = T.nn.Conv3d(3, 2, 2)
    v = T.randn(2, 3, 4, 4, 4).contiguous(memory_format=T.channels_last_3d)
    return [(_layout(o), o) for o in (conv(y), conv(x), strided(y), cl_conv(x), c3(v))]


@differential
def test_module_to_lays_out_its_4d_and_5d_tensors(T):
    m = T.nn.Sequential(T.nn.Conv2d(3, 4, 3), T.nn.Linear(4, 2)).to(memory_format=T.channels_last)
    return [(n, p.stride(), p.is_contiguous()) for n, p in m.named_parameters()]


@differential
def test_gradients_of_channels_last_leaves(T):
    T.manual_seed(0)
    a = T.randn(2, 3, 4, 5).contiguous(memory_format=T.channels_last).requires_grad_()
    (a * 2).sum().backward()
    b = T.randn(2, 3, 4, 5, requires_grad=True)
    c = b.contiguous(memory_format=T.channels_last)
    (c * c).sum().backward()
    w = T.nn.Conv2d(3, 4, 3).to(memory_format=T.channels_last)
    w(T.randn(1, 3, 5, 5)).sum().backward()
    return [(_layout(t.grad), t.grad) for t in (a, b, w.weight)], c.grad_fn.name(), \
        b.to(memory_format=T.channels_last).grad_fn.name()


@pytest.mark.parametrize("call", ["contiguous 2d", "empty 3d", "to 4d as 3d", "contiguous preserve"])
@differential
def test_wrong_rank_is_torchs_error(T, call):
    calls = {"contiguous 2d": lambda: T.ones(2, 3).contiguous(memory_format=T.channels_last),
             "empty 3d": lambda: T.empty(2, 3, 4, memory_format=T.channels_last),
             "to 4d as 3d": lambda: T.ones(1, 2, 3, 4).to(memory_format=T.channels_last_3d),
             "contiguous preserve": lambda: T.ones(1, 2, 3, 4).transpose(1, 3).contiguous(
                 memory_format=T.preserve_format)}
    x = T.ones(1, 2, 3, 4)
    return catch(calls[call]), x.contiguous(memory_format=T.channels_last).stride()


@differential
def test_an_expanded_first_operand_takes_the_second_ones_layout(T):
    # (a distribution's loc expanded over a batch plus contiguous noise: the sum is row-major in torch)
    loc = T.zeros(3, dtype=T.float64).expand(6, 3)
    noise = T.arange(18.0, dtype=T.float64).reshape(6, 3)
    column = T.ones(6, 1).expand(6, 4)
    transposed = T.arange(24.0).reshape(4, 6).t()
    results = [loc + noise, noise + loc, loc * noise, loc - noise, column + T.ones(6, 4), column + transposed,
               transposed + column, transposed * T.ones(6, 4)]
    return [(r.stride(), r) for r in results]


@differential
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_randn_like_fills_a_non_row_major_layout_in_memory_order(T, dtype):
    # torch fills empty_like(x) with normal_: such a tensor is not contiguous, so not in 16-element blocks
    dt = getattr(T, dtype)
    shapes = [T.zeros(6, 3, dtype=dt).t(), T.zeros(2, 3, 4, 5, dtype=dt).contiguous(memory_format=T.channels_last),
              T.zeros(3, 2, dtype=dt).t(), T.zeros(4, 5, dtype=dt)[:, ::2]]
    drawn = []
    for x in shapes:
        T.manual_seed(0)
        drawn.append(T.randn_like(x))
        drawn.append(T.randn_like(x, memory_format=T.contiguous_format))
    T.manual_seed(1)
    chained = [T.randn_like(shapes[2]), T.randn(5, dtype=dt), T.randn_like(shapes[0], requires_grad=True)]
    return [(d.stride(), d) for d in drawn], chained, chained[-1].requires_grad
