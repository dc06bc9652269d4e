"""torch's legacy surface, differential: typed tensor classes, Tensor.type, set_default_tensor_type,
autograd.Variable, storages and data pointers across views, setitem broadcasting, generic data classes."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from difftest import catch, differential, warns

TYPE_NAMES = ["FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor",
              "ByteTensor", "BoolTensor"]
DTYPES = ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]


@pytest.mark.parametrize("name", TYPE_NAMES)
@differential
def test_typed_constructors(T, name):
    cls = getattr(T, name)
    sized = cls(2, 3)
    out = [cls.dtype, sized.dtype, sized.shape, cls(T.Size([4])).shape, cls().shape, cls(3).shape,
           cls([[1, 0], [2, 3]]), catch(cls, (1.7, -2.2, 0.0)), catch(cls, [300]), cls((1.7, 2.2)), cls(np.array([1.5, 2.0])), type(cls([1])) is T.Tensor,
           sized.type(), cls(2, device="cpu").shape]
    for bad in [lambda: cls("a"), lambda: cls(2.5), lambda: cls(2, 3.0), lambda: cls([1], dtype=T.float64)]:
        out.append(catch(bad))
    return out


@pytest.mark.parametrize("name", TYPE_NAMES)
@pytest.mark.parametrize("dtype", DTYPES)
@differential
def test_isinstance_follows_dtype(T, name, dtype):
    x = T.zeros(2, dtype=getattr(T, dtype))
    cls = getattr(T, name)
    return [isinstance(x, cls), isinstance(x, (cls, int)), isinstance(np.zeros(2), cls), isinstance(3, cls),
            issubclass(cls, T.Tensor), x.type(), isinstance(x.type(cls), cls), x.type(cls).dtype,
            x.type(f"torch.{name}").dtype]


@differential
def test_type_conversions(T):
    x = T.tensor([1.5, -2.5])
    p = T.nn.Parameter(T.zeros(2))
    return [x.type(T.float32) is x, x.type(T.FloatTensor) is x, x.type("torch.FloatTensor") is x,
            x.type(T.float64).dtype, x.type(dtype="torch.IntTensor"), x.type(T.LongTensor),
            isinstance(p, T.FloatTensor), p.type(), catch(x.type, "foo"), catch(x.type, "torch.Foo"),
            T.zeros(2, dtype=T.complex64).type(), T.zeros(2, dtype=T.complex128).type(), T.tensor(3).type()]


@differential
def test_legacy_constructor_aliases_a_tensor_of_its_type(T):
    d = T.DoubleTensor([1, 2])
    alias = T.DoubleTensor(d)
    alias[0] = 7.0
    return [alias is d, d, catch(T.FloatTensor, d)]


@differential
def test_set_default_tensor_type(T):
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            T.set_default_tensor_type(T.DoubleTensor)
        out = [T.get_default_dtype(), T.zeros(1).dtype, T.tensor([1.0]).dtype, T.Tensor(2).dtype,
               len(caught) <= 1, [w.category.__name__ for w in caught][:1]]
        T.set_default_tensor_type("torch.FloatTensor")
        out.append(T.get_default_dtype())
        out += [catch(T.set_default_tensor_type, T.LongTensor), catch(T.set_default_tensor_type, T.float64),
                catch(T.set_default_tensor_type, "torch.IntTensor"), T.get_default_dtype()]
        return out
    finally:
        T.set_default_dtype(T.float32)


@differential
def test_variable_class(T):
    from importlib import import_module
    Variable = import_module(f"{T.__name__}.autograd").Variable
    a = T.ones(3, requires_grad=True)
    b = a * 2
    v = Variable(b)
    w = Variable(b, requires_grad=True)
    (w * w).sum().backward()
    legacy = import_module(f"{T.__name__}.autograd.variable").Variable
    return [isinstance(a, Variable), isinstance(T.nn.Parameter(T.zeros(1)), Variable), isinstance([1], Variable),
            issubclass(T.Tensor, Variable), v.is_leaf, v.requires_grad, v.data_ptr() == b.data_ptr(),
            w.is_leaf, w.requires_grad, w.grad, Variable(a) is a, Variable(a).requires_grad,
            Variable().shape, catch(Variable, [1, 2]), warns(Variable, a, volatile=True)[1],
            legacy is Variable, catch(Variable, T.tensor([1, 2]), requires_grad=True)]


@differential
def test_storage_shared_across_views(T):
    x = T.arange(12.0).reshape(3, 4)
    views = [x, x[1:, 2:], x.t(), x[2], x.view(-1), x.detach(), x.data, x.expand(2, 3, 4), x[:, 1], x.narrow(1, 1, 2)]
    out = [[v.storage_offset() for v in views],
           [v.untyped_storage().data_ptr() == x.data_ptr() for v in views],
           [v.untyped_storage() is x.untyped_storage() for v in views],
           [v.data_ptr() - x.data_ptr() == v.storage_offset() * 4 for v in views],
           x.clone().untyped_storage().data_ptr() == x.data_ptr(),
           x.untyped_storage().nbytes(), len(x.untyped_storage()), x[1:].untyped_storage().nbytes()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = x[1:].storage()
        out += [len(s), s.size(), s.nbytes(), s.element_size(), s.dtype, s.data_ptr() == x.data_ptr(), s[5],
                s.tolist()[:3], s.type(), T.is_storage(s), T.is_storage(x.untyped_storage()), T.is_storage(x)]
        s[0] = 100.0
    out.append(x[0, 0])
    return out


@differential
def test_storage_of_empty_and_fresh_tensors(T):
    z = T.zeros(3)
    return [z[:2].storage_offset(), T.zeros(2, 2)[1].storage_offset(), T.ones(5)[2:].untyped_storage().nbytes(),
            T.zeros(0).untyped_storage().nbytes()]


@differential
def test_setitem_drops_leading_unit_dims(T):
    out = []
    for value_shape, target in [((1,), "scalar"), ((1, 2), "row"), ((1, 1, 2), "row"), ((1, 3), "column"),
                                ((1,), "row"), ((2, 2), "row"), ((1, 2), "fancy")]:
        t = T.zeros(3, 2) if target != "scalar" else T.zeros(3)
        v = T.arange(1.0, 1.0 + int(np.prod(value_shape))).reshape(value_shape).requires_grad_()
        src = v * 1
        t = t.clone()

        def assign():
            if target == "column":
                t[:, 0] = src
            elif target == "fancy":
                t[[0, 2]] = src
            else:
                t[0] = src
            t.sum().backward()
            return t, v.grad
        out.append(catch(assign))
    return out


@differential
def test_generic_data_classes(T):
    from importlib import import_module
    data = import_module(f"{T.__name__}.utils.data")

    class Evens(data.Sampler[int]):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(0, self.n, 2))

    class Squares(data.Dataset[int]):
        def __getitem__(self, i):
            return i * i

    return [list(Evens(6)), Squares()[3], str(data.Sampler[int]).split(".")[-1], str(data.Dataset[int]).split(".")[-1],
            str(data.IterableDataset[int]).split(".")[-1]]


@pytest.mark.parametrize("dtype", DTYPES)
@differential
def test_tensor_new_is_the_legacy_constructor_of_its_type(T, dtype):
    x = T.ones(2, dtype=getattr(T, dtype))
    other = T.ones(1, dtype=T.float64 if dtype != "float64" else T.float32)
    return [x.new(2, 3).dtype, x.new(2, 3).shape, x.new([1, 0]), x.new().shape, x.new(T.Size([4])).shape,
            catch(x.new, other), type(T.nn.Parameter(T.ones(2)).new(2)) is T.Tensor]


@differential
def test_inplace_ops_on_zero_dim_tensors(T):
    b = T.tensor(1.5, requires_grad=True)
    c = b * 2
    c.add_(2).mul_(3).sub_(T.tensor(0.5)).div_(2).clamp_(0, 100).pow_(2)
    c.backward()
    out = [c, b.grad]
    for op in (lambda t: t.add_(1), lambda t: t.mul_(T.tensor(3.0)), lambda t: t.zero_(), lambda t: t.fill_(5),
               lambda t: t.neg_(), lambda t: t.exp_(), lambda t: t.copy_(T.tensor(4.0)),
               lambda t: t.sub_(T.tensor([1.0])), lambda t: t.copy_(T.tensor([5.0]))):
        t = T.tensor(2.0) * 1  # a 0-d result of an op
        out.append(catch(lambda: (op(t), t)[1]))
    s = T.tensor(3.0).sum()
    alias = s.detach()
    s.add_(1)
    out += [s, alias, s.data_ptr() == alias.data_ptr()]
    return out
