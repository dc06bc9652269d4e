"""torch.library: scoped libraries, define/impl/fallback by library kind, custom ops with non-tensor
outputs and their registrations, opcheck, and torch's errors for bad schemas and redefinitions."""
import itertools

from difftest import catch, differential

_serial = itertools.count()


def _unique(prefix: str) -> str:
    return f"{prefix}{next(_serial)}"


@differential
def test_scoped_library_takes_its_ops_back(T):
    ns = _unique("scoped")
    L = T.library
    with L._scoped_library(ns, "DEF") as lib:
        name = lib.define("double(Tensor x) -> Tensor")
        lib.impl("double", lambda x: x * 2, "CompositeExplicitAutograd")
        inside = getattr(T.ops, ns).double(T.ones(2))
        again = catch(lib.define, "double(Tensor x) -> Tensor")
    after = catch(lambda: getattr(T.ops, ns).double(T.ones(2)))
    # the namespace can be defined afresh once the scoped DEF library is gone
    with L._scoped_library(ns, "DEF") as lib:
        redefined = lib.define("double(Tensor x) -> Tensor")
    destroyed = catch(lib.define, "other(Tensor x) -> Tensor")
    return name, inside, again, after, redefined, destroyed


@differential
def test_library_kinds(T):
    ns = _unique("kinds")
    L = T.library
    results = [catch(L.Library, ns, "BAD")]
    with L._scoped_library(ns, "FRAGMENT") as first:
        results.append(first.define("a(Tensor x) -> Tensor"))
        with L._scoped_library(ns, "FRAGMENT") as second:
            results.append(second.define("b(Tensor x) -> Tensor"))
            results.append(catch(second.define, "a(Tensor x) -> Tensor"))
        with L._scoped_library(ns, "IMPL") as impl:
            results.append(catch(impl.define, "c(Tensor x) -> Tensor"))
            impl.impl("a", lambda x: x + 1, "CPU")
            results.append(getattr(T.ops, ns).a(T.zeros(2)))
        # the IMPL library's kernel went with it
        results.append(catch(lambda: getattr(T.ops, ns).a(T.zeros(2))))
        results.append(catch(first.fallback, lambda *a: None, "CPU"))
    with L._scoped_library("_", "IMPL") as global_impl:
        results.append(catch(global_impl.fallback, lambda *a: None))
    return results


@differential
def test_impl_before_define(T):
    ns = _unique("early")
    L = T.library
    with L._scoped_library(ns, "FRAGMENT") as lib:
        lib.impl("late", lambda x: x * 3, "CPU")
        lib.define("late(Tensor x) -> Tensor")
        return getattr(T.ops, ns).late(T.ones(2))


@differential
def test_bad_schemas(T):
    ns = _unique("schemas")
    with T.library._scoped_library(ns, "DEF") as lib:
        return [catch(lib.define, text) for text in
                ["bad(Tensor x -> Tensor", "bad2(Tensorr x) -> Tensor", "bad3(Tensor x) -> Foo", "bad4(Tensor x)",
                 "bad5 Tensor x) -> Tensor", "ok(int[] x, *, float? y=None) -> (Tensor, int)",
                 "ok2(Tensor(a!) x) -> ()"]]


@differential
def test_custom_op_non_tensor_outputs(T):
    ns = _unique("outs")
    L = T.library

    @L.custom_op(f"{ns}::mixed", mutates_args=())
    def mixed(x: T.Tensor) -> tuple[T.Tensor, int, float, bool]:
        return x * 2, 3, 1.5, True

    @L.custom_op(f"{ns}::several", mutates_args=())
    def several(x: T.Tensor) -> list[T.Tensor]:
        return [x * 2, x + 1]

    @L.custom_op(f"{ns}::count", mutates_args=())
    def count(x: T.Tensor) -> int:
        return int(x.numel())

    @L.custom_op(f"{ns}::bump", mutates_args=["x"])
    def bump(x: T.Tensor) -> None:
        x.add_(1)

    a = T.ones(2)
    bumped = bump(a)
    return (mixed(T.ones(2)), several(T.ones(2)), count(T.ones(3, 2)), bumped, a,
            catch(L.custom_op(f"{ns}::untyped", mutates_args=()), lambda x: x),
            catch(L.custom_op, f"{ns}::mixed", lambda x: x, mutates_args=()))


@differential
def test_custom_op_registrations(T):
    ns = _unique("regs")
    L = T.library
    import numpy as np

    @L.custom_op(f"{ns}::numpy_sin", mutates_args=())
    def numpy_sin(x: T.Tensor) -> T.Tensor:
        return T.from_numpy(np.sin(x.numpy()))

    @numpy_sin.register_fake
    def _(x):
        return T.empty_like(x)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()

    numpy_sin.register_autograd(backward, setup_context=setup_context)
    seen = []

    @numpy_sin.register_kernel("cpu")
    def _(x):
        seen.append("cpu kernel")
        return T.from_numpy(np.sin(x.detach().numpy()))

    x = T.tensor([0.0, 0.5, 1.0], dtype=T.float64, requires_grad=True)
    y = numpy_sin(x)
    y.sum().backward()
    calls = list(seen)
    return y, x.grad, calls, L.opcheck(numpy_sin, (x.detach().requires_grad_(),))


@differential
def test_opcheck_failures(T):
    ns = _unique("check")
    L = T.library

    @L.custom_op(f"{ns}::nofake", mutates_args=())
    def nofake(x: T.Tensor) -> T.Tensor:
        return x * 2

    @L.custom_op(f"{ns}::wrongfake", mutates_args=())
    def wrongfake(x: T.Tensor) -> T.Tensor:
        return x * 2

    @wrongfake.register_fake
    def _(x):
        return T.empty(x.shape[0] + 1)

    @L.custom_op(f"{ns}::sneaky", mutates_args=())
    def sneaky(x: T.Tensor) -> T.Tensor:
        x.add_(1)
        return x + 0

    @sneaky.register_fake
    def _(x):
        return T.empty_like(x)

    reports = [L.opcheck(op, (T.ones(2),), raise_exception=False) for op in (nofake, wrongfake, sneaky)]
    summary = [{k: v if v == "SUCCESS" else type(v).__name__ for k, v in r.items()} for r in reports]
    return (summary, catch(L.opcheck, nofake, (T.ones(2),)),
            L.opcheck(wrongfake, (T.ones(2),), test_utils="test_schema"),
            catch(L.opcheck, nofake, (T.ones(2),), test_utils=["bogus"]))


@differential
def test_backend_fallback_runs_for_an_operator_without_a_kernel(T):
    ns = _unique("fallback")
    L = T.library
    seen = []

    def boxed(op, *args, **kwargs):
        seen.append((str(op).split(".", 1)[1], len(args), sorted(kwargs)))
        return args[0] * args[1]
    results = []
    with L._scoped_library(ns, "DEF") as lib:
        lib.define("scale(Tensor x, float k) -> Tensor")
        with L._scoped_library("_", "IMPL") as everywhere:
            everywhere.fallback(boxed, "CPU")
            op = getattr(T.ops, ns).scale
            results += [op(T.ones(2), 3.0), op(T.ones(2), k=2.0), T.ones(2) + 1]  # built-in ops keep their kernels
            for key in ("CPU", "AutogradCPU", "Autograd", "CompositeImplicitAutograd", "Meta", "FuncTorchBatched",
                        "not_a_key"):
                raised = catch(L.Library("_", "IMPL").fallback, boxed, key)
                results.append((key, raised, raised.message.split(";")[0]))
        results.append(catch(op, T.ones(2), 3.0))  # the fallback left with its library
    with L._scoped_library("_", "IMPL") as again:
        again.fallback(boxed, "CPU")
    return results, seen
