"""torch's keyword forms of arguments: a size given as ``size=``/``shape=``/``dims=``, tensors as
``input=``/``other=``, ``arange(end=...)``; differential against torch."""
from __future__ import annotations

import pytest

from difftest import catch, differential


def _cases(T):
    x = T.ones(2, 3)
    F = T.nn.functional
    return {
        "ones size": lambda: T.ones(size=(2, 3)),
        "zeros size list": lambda: T.zeros(size=[2]),
        "zeros size int": lambda: T.zeros(size=2),
        "rand size": lambda: T.rand(size=(2,)).shape,
        "randn size": lambda: T.randn(size=(2,)).shape,
        "empty size": lambda: T.empty(size=(2,)).shape,
        "full": lambda: T.full(size=(2,), fill_value=3.0),
        "randint": lambda: T.randint(low=0, high=5, size=(3,)).shape,
        "arange end": lambda: T.arange(end=5),
        "arange start end": lambda: T.arange(start=1, end=5),
        "arange step": lambda: T.arange(0, 5, step=2),
        "view size": lambda: x.view(size=(3, 2)).shape,
        "view positional": lambda: x.view(3, 2).shape,
        "reshape shape": lambda: x.reshape(shape=(3, 2)).shape,
        "torch.reshape": lambda: T.reshape(x, shape=(3, 2)).shape,
        "torch.reshape input": lambda: T.reshape(input=x, shape=(6,)).shape,
        "permute dims": lambda: x.permute(dims=(1, 0)).shape,
        "torch.permute": lambda: T.permute(x, dims=(1, 0)).shape,
        "expand size": lambda: T.ones(1, 3).expand(size=(2, 3)).shape,
        "repeat": lambda: x.repeat(repeats=(2, 1)).shape,
        "flip": lambda: T.arange(3).flip(dims=(0,)),
        "new_zeros": lambda: x.new_zeros(size=(4,)),
        "new_ones": lambda: x.new_ones(size=(4, 1)),
        "new_empty": lambda: x.new_empty(size=(4,)).shape,
        "split": lambda: [t.shape for t in x.split(split_size=1, dim=0)],
        "torch.split": lambda: [t.shape for t in T.split(x, split_size_or_sections=2, dim=1)],
        "ones_like input": lambda: T.ones_like(input=x),
        "matmul": lambda: T.matmul(input=x, other=x.t()),
        "add alpha": lambda: T.add(input=x, other=x, alpha=2),
        "mul other": lambda: T.mul(x, other=3),
        "mm mat2": lambda: T.mm(x, mat2=x.t()),
        "F softmax": lambda: F.softmax(input=x, dim=-1),
        "F linear": lambda: F.linear(input=x, weight=T.ones(2, 3)),
        "where": lambda: T.where(condition=x > 0, input=x, other=x),
        "sum dim": lambda: T.sum(input=x, dim=1),
        "cat tensors": lambda: T.cat(tensors=[x, x], dim=0).shape,
        "bad keyword": lambda: T.ones(sizes=(2,)),
    }


@pytest.mark.parametrize("case", list(_cases(__import__("torch"))))
@differential
def test_keyword_form(T, case):
    return catch(_cases(T)[case])
