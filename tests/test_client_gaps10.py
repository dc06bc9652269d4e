"""Behaviours accelerate, torchdyn and the other libraries of tests/clients' tenth round reach for, each
checked against torch as a differential scenario."""
from __future__ import annotations

import numpy as np

from difftest import catch, differential


@differential
def test_linspace_with_zero_dim_tensor_ends(T):
    # torchdyn's multiple-shooting solvers pass a step held in a 0-d tensor
    dt = T.tensor(0.25, dtype=T.float64)
    return (T.linspace(0, dt, 4), T.linspace(T.tensor(-1.0), T.tensor(2.0), 5), T.linspace(dt, 1, 3).dtype,
            T.linspace(T.tensor(1), T.tensor(3), 3, dtype=T.float64))


def _function_with_a_stray_gradient(T):
    class Scale(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            # torchdyn's adjoint returns a gradient for its time grid of another shape and dtype
            return g * 2, T.ones(2, dtype=T.float16)
    return Scale


@differential
def test_function_gradient_for_an_input_needing_none_is_not_checked(T):
    scale = _function_with_a_stray_gradient(T)
    a, b = T.ones(3, requires_grad=True), T.ones(5)
    seen = []
    y = scale.apply(a, b)
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append(
        [None if g is None else (tuple(g.shape), g.dtype) for g in grad_inputs]))
    y.sum().backward()
    wanted = scale.apply(a, b.requires_grad_())
    return a.grad, seen, catch(wanted.sum().backward), b.grad


@differential
def test_tensor_str_body_alone(T):
    # torch_geometric writes OFF files from torch._tensor_str._tensor_str
    from importlib import import_module
    tensor_str = import_module(f"{T.__name__}._tensor_str")
    values = T.tensor([[1.5, -2.25, 3.0], [4.0, 5.125, 6.0]])
    return (tensor_str._tensor_str(values, indent=0), tensor_str._tensor_str(values, indent=4),
            tensor_str._tensor_str(T.arange(6).reshape(3, 2), indent=2), tensor_str._tensor_str(T.zeros(0), 0),
            tensor_str._str(values) == repr(values))


@differential
def test_jit_overload_stubs_are_handed_back(T):
    def stub(x: int) -> int:
        ...
    return T.jit._overload(stub) is stub, T.jit._overload_method(stub) is stub


@differential
def test_build_configuration_text(T):
    # torch_geometric reads torch.__config__.show() for 'USE_MKL=OFF' at import
    config = T.__config__
    shown, parallel = config.show(), config.parallel_info()
    return (isinstance(shown, str), "USE_MKL=OFF" in shown, isinstance(parallel, str),
            "OMP_NUM_THREADS" in parallel, isinstance(config._cxx_flags(), str))


@differential
def test_advanced_index_after_a_slice_is_contiguous(T):
    # torch_geometric's subgraph views edge_index[:, mask] flat
    edges = T.tensor([[0, 1, 2, 3, 4], [1, 2, 3, 4, 0]])
    mask = T.tensor([True, False, True, True, False])
    order = T.tensor([4, 0, 2])
    return [(t.stride(), t.is_contiguous(), t.view(-1)) for t in (edges[:, mask], edges[:, order],
                                                                  T.ones(2, 3, 4)[:, :, T.tensor([0, 2])])]


@differential
def test_onnx_export_never_under_way(T):
    return T.onnx.is_in_onnx_export()
