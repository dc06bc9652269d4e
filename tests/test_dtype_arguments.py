"""A ``dtype=`` argument is a dtype or one of Python's number types (``float`` is float64, as in
torch, whatever the default dtype); a dtype's name or a NumPy dtype is torch's TypeError, in the
factories, the ``*_like`` and ``new_*`` functions, reductions and ``Tensor.to``."""
from __future__ import annotations

import numpy as np
import pytest

from difftest import catch, differential

BAD = {"name": "float32", "numpy type": np.float32, "numpy dtype": np.dtype("float64"), "number": 3}
CALLS = {
    "ones": lambda T, d: T.ones(2, dtype=d),
    "zeros": lambda T, d: T.zeros((2, 2), dtype=d),
    "full": lambda T, d: T.full((2,), 1, dtype=d),
    "tensor": lambda T, d: T.tensor([1, 2], dtype=d),
    "as_tensor": lambda T, d: T.as_tensor([1, 2], dtype=d),
    "zeros_like": lambda T, d: T.zeros_like(T.ones(2), dtype=d),
    "randn": lambda T, d: T.randn(2, dtype=d),
    "arange": lambda T, d: T.arange(3, dtype=d),
    "new_zeros": lambda T, d: T.ones(2).new_zeros(2, dtype=d),
    "sum": lambda T, d: T.ones(2).sum(dtype=d),
    "to": lambda T, d: T.ones(2).to(dtype=d),
}
SIMPLE_SIGNATURE = {"ones", "zeros", "full", "tensor", "as_tensor", "zeros_like", "new_zeros"}


@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("kind", sorted(BAD))
@differential
def test_dtype_must_be_a_dtype(T, call, kind):
    return catch(CALLS[call], T, BAD[kind])


@pytest.mark.parametrize("call", sorted(SIMPLE_SIGNATURE))
def test_message_is_torchs(call):
    import hookgrad
    import torch
    for value in BAD.values():
        with pytest.raises(TypeError) as theirs:
            CALLS[call](torch, value)
        with pytest.raises(TypeError) as ours:
            CALLS[call](hookgrad, value)
        assert str(ours.value).startswith(str(theirs.value))


@pytest.mark.parametrize("python_type", [float, int, bool, complex])
@differential
def test_python_number_types_are_dtypes(T, python_type):
    T.set_default_dtype(T.float32)
    made = [catch(make) for make in (lambda: T.ones(2, dtype=python_type), lambda: T.tensor([1], dtype=python_type),
                                     lambda: T.ones(1).to(python_type),
                                     lambda: T.zeros_like(T.ones(1), dtype=python_type),
                                     lambda: T.randn(1, dtype=python_type))]
    return [m.dtype if hasattr(m, "dtype") else m for m in made]
