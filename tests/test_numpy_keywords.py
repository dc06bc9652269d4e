"""torch's argument parser takes NumPy's ``axis=`` and ``keepdims=`` for ``dim=`` and ``keepdim=`` in
every built-in function and method (``x.sum(axis=0)``, ``torch.cat(ts, axis=1)``); the functions torch
writes in Python (``F.softmax``, ``Tensor.norm``, ``torch.split``) do not, and a NumPy name given
beside the torch one is an unknown keyword."""
from __future__ import annotations

import pytest

from difftest import catch, differential

CALLS = {
    "sum axis": lambda T, x: x.sum(axis=0),
    "sum keepdims": lambda T, x: x.sum(axis=1, keepdims=True),
    "torch.sum axis tuple": lambda T, x: T.sum(x, axis=(0, 1)),
    "mean keepdims": lambda T, x: x.mean(axis=-1, keepdims=True),
    "max axis": lambda T, x: tuple(x.max(axis=1)),
    "argmax axis": lambda T, x: x.argmax(axis=0),
    "std var axis": lambda T, x: (T.std(x, axis=0), x.var(axis=1, keepdims=True)),
    "amax keepdims": lambda T, x: T.amax(x, axis=1, keepdims=True),
    "logsumexp axis": lambda T, x: T.logsumexp(x, axis=0),
    "cumsum axis": lambda T, x: x.cumsum(axis=1),
    "cat axis": lambda T, x: T.cat([x, x], axis=1),
    "stack axis": lambda T, x: T.stack([x, x], axis=2),
    "softmax axis": lambda T, x: T.softmax(x, axis=0),
    "squeeze unsqueeze axis": lambda T, x: x.unsqueeze(axis=0).squeeze(axis=0),
    "sort and topk axis": lambda T, x: (x.sort(axis=0).values, T.topk(x, 1, axis=1).indices),
    "gather axis": lambda T, x: x.gather(axis=1, index=T.tensor([[0], [2]])),
    "size and stride axis": lambda T, x: (x.size(axis=1), x.stride(axis=0)),
    "linalg norms axis": lambda T, x: (T.linalg.norm(x, axis=0), T.linalg.vector_norm(x, axis=1, keepdims=True)),
    "fft axis": lambda T, x: T.fft.fft(x, axis=0).real,
    "special softmax axis": lambda T, x: T.special.softmax(x, axis=1),
    "F cosine_similarity axis": lambda T, x: T.nn.functional.cosine_similarity(x, x + 1, axis=0),
    # torch's Python-level functions keep their own keywords only
    "F.softmax axis": lambda T, x: T.nn.functional.softmax(x, axis=0),
    "Tensor.norm keepdims": lambda T, x: x.norm(dim=0, keepdims=True),
    "torch.split axis": lambda T, x: T.split(x, 1, axis=0),
    "Tensor.unique axis": lambda T, x: x.unique(axis=0),
    # both names given
    "dim and axis": lambda T, x: x.sum(dim=0, axis=0),
    "positional dim and axis": lambda T, x: T.sum(x, 0, axis=1),
    "keepdim and keepdims": lambda T, x: x.mean(0, keepdim=True, keepdims=True),
    # with a keyword nobody takes, torch names the first keyword that is no parameter's own name
    "axis then unknown": lambda T, x: x.sum(axis=0, out=None),
    "unknown then axis": lambda T, x: x.cumsum(bar=1, axis=0),
    "function takes out": lambda T, x: T.sum(x, axis=0, out=None),
    "np.sum of a tensor": lambda T, x: __import__("numpy").sum(x),
}


@pytest.mark.parametrize("name", sorted(CALLS))
@differential
def test_numpy_keyword_names(T, name):
    x = T.arange(6.0).reshape(2, 3)
    return catch(CALLS[name], T, x)


@pytest.mark.parametrize("name", ["dim and axis", "positional dim and axis", "axis then unknown", "unknown then axis"])
def test_wrong_keyword_message_is_torchs(name):
    import hookgrad
    import torch
    with pytest.raises(TypeError) as theirs:
        CALLS[name](torch, torch.ones(2, 3))
    with pytest.raises(TypeError) as ours:
        CALLS[name](hookgrad, hookgrad.ones(2, 3))
    assert str(ours.value) == str(theirs.value)
    # a failed call leaves the function usable
    assert hookgrad.ones(2, 2).sum(axis=0).tolist() == [2.0, 2.0]
