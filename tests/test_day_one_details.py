"""Small differences a newcomer meets on day one, each against torch: a second ``...`` ending an index,
Python's own AttributeError for a name torch.Tensor lacks too."""
from __future__ import annotations

import pytest

from difftest import catch, differential

ELLIPSES = ["[..., ...]", "[0, ..., ...]", "[..., 1, ...]", "[..., None, ...]", "[..., ..., ...]", "[1:, ..., ...]"]


@pytest.mark.parametrize("index", ELLIPSES)
@differential
def test_a_second_ellipsis_may_end_an_index(T, index):
    x = T.arange(24.0).reshape(2, 3, 4).requires_grad_()
    y = eval(f"x{index}")  # noqa: S307 - the index is one of ELLIPSES
    (y * y).sum().backward()
    z = T.zeros(2, 3, 4)
    exec(f"z{index} = 1.0")  # noqa: S102
    return y, x.grad, z


@differential
def test_a_second_ellipsis_before_another_item_is_an_index_error(T):
    x = T.arange(24.0).reshape(2, 3, 4)
    return [catch(lambda: x[..., ..., 1]).__class__.__name__ == "Raised", catch(lambda: x[..., ..., 1]),
            x[..., 1].shape]


@differential
def test_attribute_torch_lacks_too(T):
    x = T.ones(2)
    raised = catch(lambda: x.astype)
    return raised, str(raised.message)
