"""What a new user sees first: printed tensors, the named tuples ops return, the answers of
``torch.cuda`` on a machine without CUDA, and the wording of common errors and warnings — all
compared with torch as text."""
import math
import warnings

import pytest

from difftest import differential

PRINTED = {
    "summarized 2-d, scientific": lambda T: T.arange(2000.).reshape(40, 50) / 7,
    "summarized integers": lambda T: T.arange(2000).reshape(40, 50),
    "summarized whole floats switch to scientific": lambda T: T.arange(2000.),
    "tiny and huge": lambda T: T.tensor([1e-8, 1.0, 1e8]),
    "whole floats": lambda T: T.tensor([1., 2., 300.]),
    "ratio over 1000": lambda T: T.tensor([1., 2000.]),
    "negatives in 2-d": lambda T: T.tensor([[-1.5, 2.25], [3.125, -4.0625]]),
    "non-finite": lambda T: T.tensor([math.nan, math.inf, -math.inf, 1.5]),
    "nan among whole floats": lambda T: T.tensor([math.nan, 1., 2.]),
    "zeros": lambda T: T.zeros(2, 3),
    "bools": lambda T: T.tensor([True, False]),
    "0-d": lambda T: T.tensor(3.5),
    "0-d integer": lambda T: T.tensor(7),
    "empty": lambda T: T.empty(0),
    "empty 2-d": lambda T: T.empty(0, 3),
    "empty integer": lambda T: T.empty(2, 0, dtype=T.long),
    "half": lambda T: T.tensor([1.5, 2.25]).half(),
    "bfloat16": lambda T: T.tensor([1.5, 2.3]).to(T.bfloat16),
    "int32": lambda T: T.tensor([1, -20], dtype=T.int32),
    "line breaks": lambda T: T.linspace(-1, 1, 30),
    "suffix on its own line": lambda T: T.linspace(-1, 1, 17).requires_grad_(),
    "grad_fn suffix": lambda T: T.linspace(-1, 1, 17).requires_grad_() * 2,
    "3-d": lambda T: T.arange(24.).reshape(2, 3, 4) / 3,
    "summarized 4-d": lambda T: T.arange(5000.).reshape(5, 10, 10, 10),
    "parameter": lambda T: T.nn.Parameter(T.tensor([1., 2.])),
    "float64 with requires_grad": lambda T: T.tensor([1., 2.], dtype=T.float64).requires_grad_(),
}


def _text(shown: str) -> str:
    # outside `hookgrad run`, hookgrad names its dtypes hookgrad.X (torch.X under it)
    return shown.replace("hookgrad.", "torch.")


@pytest.mark.parametrize("case", list(PRINTED))
@differential
def test_printed_tensor(T, case):
    return _text(repr(PRINTED[case](T)))


@differential
def test_print_options(T):
    shown = []
    try:
        T.set_printoptions(precision=2, sci_mode=False)
        shown.append(repr(T.tensor([1e-8, 1.0, 1e8])))
        T.set_printoptions(edgeitems=0, threshold=5)
        shown += [repr(T.arange(10.)), repr(T.arange(12.).reshape(3, 4))]
        T.set_printoptions(profile="default", linewidth=40)
        shown.append(repr(T.linspace(0, 1, 20)))
        T.set_printoptions(profile="default", sci_mode=True)
        shown.append(repr(T.tensor([1., 2.5])))
    finally:
        T.set_printoptions(profile="default")
    return shown


@differential
def test_named_tuples_print_as_torch_return_types(T):
    x = T.tensor([[1., -2., 3.], [4., 5., -6.]])
    results = [x.max(dim=1), x.min(0), x.sort(), x.topk(2), T.aminmax(x), T.frexp(T.tensor([3.])),
               x.median(1), x.kthvalue(1, 1), T.linalg.slogdet(T.eye(2))]
    return [(_text(repr(r)), type(r).__name__, type(r).__module__) for r in results]


@differential
def test_cuda_answers_as_a_build_without_cuda(T):
    from difftest import catch
    cuda = T.cuda
    return [cuda.is_available(), cuda.device_count(), cuda.is_initialized(), cuda.memory_allocated(),
            cuda.max_memory_allocated(), cuda.memory_reserved(), list(cuda.memory_stats().items()),
            cuda.manual_seed(0), cuda.manual_seed_all(0), cuda.empty_cache(), cuda.get_rng_state_all(),
            cuda.is_bf16_supported(), cuda.get_arch_list(),
            catch(cuda.current_device), catch(cuda.get_device_name, 0), catch(cuda.synchronize),
            catch(cuda.get_device_properties, 0), catch(cuda.init), catch(lambda: cuda.device(0).__enter__()),
            catch(cuda.Stream), catch(cuda.Event), catch(lambda: cuda.FloatTensor([1.])),
            isinstance(T.ones(1), cuda.FloatTensor), catch(lambda: T.ones(1).cuda()),
            catch(lambda: T.nn.Linear(1, 1).cuda()), catch(lambda: T.ones(1).to("cuda")),
            catch(lambda: T.ones(1).pin_memory()), T.ones(1).is_pinned(), T.ones(1).is_cuda]


def _message(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the scenario records any error
        return type(exc).__name__, str(exc).split("\n")[0]
    return None


@differential
def test_dtype_names_in_error_messages(T):
    return [_message(lambda: T.tensor([1, 2]).mean()),
            _message(lambda: T.linalg.vector_norm(T.ones(2, dtype=T.long))),
            _message(lambda: T.ones(2, dtype=T.long).add_(T.ones(2))),
            _message(lambda: T.ones(2, dtype=T.int32).add_(1.5))]


@differential
def test_non_leaf_grad_warning_text(T):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = T.ones(2, requires_grad=True)
        _ = (a * 2).grad
    return [str(w.message).split(" (Triggered internally")[0] for w in caught]


@differential
def test_product_dtype_errors_name_the_kernel_and_types(T):
    F = T.nn.functional
    f, d = T.ones(2, 2), T.ones(2, 2, dtype=T.float64)
    others = [T.ones(2, 2, dtype=dt) for dt in (T.long, T.int32, T.int16, T.int8, T.uint8, T.float16,
                                                 T.bfloat16, T.bool)]
    calls = [lambda: T.mm(f, d), lambda: f @ d, lambda: T.bmm(f[None], d[None]), lambda: T.matmul(f[None], d[None]),
             lambda: T.matmul(f[0], d), lambda: T.matmul(T.ones(3, 2, 2), d), lambda: T.mv(f, d[0]),
             lambda: T.mv(d, f[0]), lambda: T.dot(f[0], d[0]), lambda: T.matmul(f[0], d[0]),
             lambda: F.linear(f, d), lambda: F.linear(f, d, f[0]), lambda: F.linear(f, f, d[0]),
             lambda: F.linear(others[0], f, f[0]), lambda: T.addmm(d, f, f), lambda: T.addmm(f, d, f)]
    calls += [lambda o=o: T.mm(o, f) for o in others]
    return [_message(call) for call in calls]


@differential
def test_in_place_modification_error_names_the_forward_op(T):
    class Square(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * x
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    def modified_then_backward(op):
        a = T.ones(2, 2, requires_grad=True)
        y = op(a)
        y.mul_(2)
        return _message(lambda: y.sum().backward())
    texts = [modified_then_backward(op) for op in (T.exp, T.sigmoid, lambda a: a.softmax(0), Square.apply)]
    a = T.ones(2, requires_grad=True)
    b = a * 1
    c = b * b
    b.add_(1)
    texts.append(_message(lambda: c.sum().backward()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with T.autograd.set_detect_anomaly(True):
            texts.append(modified_then_backward(T.exp))
    return texts


@differential
def test_finfo_and_iinfo(T):
    return [(repr(T.finfo(dt)), T.finfo(dt).resolution, T.finfo(dt).dtype, T.finfo(dt).bits)
            for dt in (T.float16, T.bfloat16, T.float32, T.float64)] + \
        [(repr(T.iinfo(dt)), str(T.iinfo(dt)), T.iinfo(dt).dtype, T.iinfo(dt).max)
         for dt in (T.int8, T.uint8, T.int16, T.int32, T.int64)] + [repr(T.finfo())]


def test_return_types_pickle_and_copy():
    import copy
    import pickle

    import hookgrad
    result = hookgrad.tensor([[1., 3.], [2., 0.]]).max(1)
    again = pickle.loads(pickle.dumps(result))
    assert type(again) is type(result) and again.values.tolist() == [3., 2.] and again.indices.tolist() == [1, 0]
    assert copy.deepcopy(result).indices.tolist() == [1, 0]


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin", "max", "min"])
@pytest.mark.parametrize("include_self", [True, False])
@differential
def test_scatter_reduce_values_and_gradients(T, reduce, include_self):
    x = T.tensor([[1., 2., 0., 4.], [-1., 3., 3., 0.]], requires_grad=True)
    src = T.tensor([[3., 0., 5., 2., 2.], [3., 3., 0., 0., -2.]], requires_grad=True)
    index = T.tensor([[0, 0, 1, 3, 3], [1, 2, 2, 0, 0]])
    from difftest import catch
    out = x.scatter_reduce(1, index, src, reduce, include_self=include_self)
    grads = catch(T.autograd.grad, (out * T.arange(1., 5.)).sum(), (x, src))   # torch's backward refuses max/min
    in_place = x.detach().clone().scatter_reduce_(1, index, src.detach(), reduce, include_self=include_self)
    ints = T.tensor([5, 7, -9]).scatter_reduce(0, T.tensor([0, 0, 2]), T.tensor([2, 4, 4]), reduce,
                                               include_self=include_self)
    return out, grads, out.grad_fn.name(), in_place, ints


@differential
def test_scatter_reduce_refuses_unknown_reductions(T):
    from difftest import catch
    x = T.zeros(3)
    return [catch(x.scatter_reduce, 0, T.tensor([0]), T.ones(1), name) for name in ("add", "multiply", "mul")]


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_gradcheck(reduce):
    import hookgrad
    gen = hookgrad.Generator().manual_seed(3)
    x = hookgrad.rand(3, 4, dtype=hookgrad.float64, generator=gen).requires_grad_()
    src = hookgrad.rand(3, 5, dtype=hookgrad.float64, generator=gen).requires_grad_()
    index = hookgrad.randint(0, 4, (3, 5), generator=gen)
    for include_self in (True, False):
        assert hookgrad.autograd.gradcheck(
            lambda a, b: a.scatter_reduce(1, index, b, reduce, include_self=include_self), (x, src))


@differential
def test_complex_legacy_storages(T):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # TypedStorage's deprecation notice
        made = T.ComplexFloatStorage([1 + 2j, 3])
        double = T.ComplexDoubleStorage(2)
        read = T.ComplexFloatStorage.from_buffer(b"\x00\x00\x80?\x00\x00\x00@", "little")
        return [list(made), made.dtype, len(double), double.dtype, list(read), _text(repr(T.ComplexFloatStorage)),
                isinstance(T.ones(2, dtype=T.complex64).storage(), T.ComplexFloatStorage),
                isinstance(T.ones(2, dtype=T.complex64).storage(), T.ComplexDoubleStorage),
                T.ones(1, dtype=T.complex128).storage_type() is T.ComplexDoubleStorage]
