"""Views and in-place ops as test/test_autograd.py exercises them, differentially against torch."""
from __future__ import annotations

import pytest

from difftest import catch, differential


@differential
@pytest.mark.parametrize("how", ["unsafe_split", "unsafe_chunk", "unsafe_split_with_sizes"])
def test_unsafe_split_outputs_share_memory_but_are_no_views(T, how):
    T.manual_seed(0)
    a = T.randn(3, 3, requires_grad=True)
    b = a * 2
    arg = {"unsafe_split": 1, "unsafe_chunk": 3, "unsafe_split_with_sizes": [1, 1, 1]}[how]
    s1, s2, s3 = getattr(b, how)(arg)
    facts = [type(s1.grad_fn).__name__, s1._base is None, s1._is_view(), s1.data_ptr() == b.data_ptr()]
    s1.mul_(s2)  # allowed: the pieces are not views to autograd
    facts += [type(s1.grad_fn).__name__, b._version, s1._version, s2._version, b.detach().clone()]
    s1.sum().backward()
    along_dim_1 = {"unsafe_split": 3, "unsafe_chunk": 2, "unsafe_split_with_sizes": [1, 3]}[how]
    by_dim = getattr(T, how)(T.ones(2, 4, requires_grad=True), along_dim_1, 1)
    return facts, a.grad, [p.shape for p in by_dim], [type(p.grad_fn).__name__ for p in by_dim]


@differential
def test_unsafe_split_refusals(T):
    x = T.randn(3, 3)
    return [catch(T.unsafe_split, x, [1, 2]), catch(T.unsafe_chunk, x, 0), catch(T.unsafe_split_with_sizes, x, [1, 1])]


@differential
def test_repr_of_a_no_grad_view_modified_in_place_names_an_invalid_grad_fn(T):
    a = T.ones(1, requires_grad=True)
    with T.no_grad():
        b = a[:]
        b *= 2
        c = a[:]
    return repr(b), repr(c), catch(lambda: b.grad_fn), repr(a * 1)
