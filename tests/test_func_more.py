"""torch.func's rearrange, functionalize, replace_all_batch_norm_modules_ and debug_unwrap
against torch: values, shapes, gradients, aliasing and input mutation, and the errors (by class,
and by message for rearrange's pattern errors)."""
import numpy as np
import pytest

from difftest import catch, differential

X = np.arange(2 * 6 * 4, dtype=np.float64).reshape(2, 6, 4) / 7

PATTERNS = [
    ("a b c -> a b c", {}), ("a b c -> c a b", {}), ("a b c -> a (b c)", {}), ("a b c -> (c a) b", {}),
    ("a (h w) c -> a h w c", {"h": 2}), ("a (h w) c -> a w h c", {"w": 3}), ("a (h w) c -> (a w) (c h)", {"h": 3}),
    ("a b c -> a 1 b c 1", {}), ("a b c -> a () b (c)", {}), ("a () c -> a c", {}), ("a 1 c -> c a", {}),
    ("... c -> c (...)", {}), ("a ... -> ... a", {}), ("a ... -> (...) a", {}), ("a b ... -> b a ...", {}),
    ("a (b1 b2) c -> b1 a b2 c", {"b1": 3}), ("a (b c) d -> a b c d", {"b": 6, "c": 1}),
    ("a b c -> a b c", {"a": 2, "b": 6}), ("a (b 1) c -> a b c", {}),
]


@pytest.mark.parametrize("pattern,lengths", PATTERNS)
@differential
def test_rearrange_values_and_grads(T, pattern, lengths):
    x = T.tensor(X, requires_grad=True)
    out = T.func.rearrange(x, pattern, **lengths)
    weights = T.arange(out.numel(), dtype=out.dtype).reshape(out.shape)
    (out * weights).sum().backward()
    return out, x.grad


@differential
def test_rearrange_list_of_tensors(T):
    xs = [T.tensor(X[0]), T.tensor(X[1])]
    return T.func.rearrange(xs, "n h w -> h (n w)"), T.func.rearrange(tuple(xs), "n h w -> (w n) h")


BAD = [
    ("a b (c d) -> a b c d", {"c": 3, "d": 3}), ("a b c -> a b c", {"a": 3}), ("(a b) c d -> a b c d", {}),
    ("a b c -> a b", {}), ("a b c -> a b c d", {}), ("a b c -> a b c", {"z": 3}), ("a b c -> a b b", {}),
    ("a b c d -> a b c d", {}), ("a b c -> a b c", {"a": 2.0}), ("a b c", {}), ("a b _c -> a b _c", {}),
    ("a b c -> a b (c 2)", {}), ("a b (c d) -> a b c d", {"c": 5}), ("a b c -> a b c -> a", {}),
    ("a b c. -> a b c", {}), ("a b .... -> a b", {}), ("a (b (c)) -> a b c", {}), ("a b) c -> a b c", {}),
    ("a (b c -> a b c", {}), ("a b c -> a b c!", {}), ("a b c -> a b ...", {}), ("a (b ...) -> a b ...", {}),
    ("a b 0 -> a b", {}), ("a b c d e -> ...", {}), ("a ... b c d e -> ...", {}), ("a b c -> a b c", {"…": 2}),
]


def error_record(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001
        return type(exc).__name__, str(exc)
    return None


@pytest.mark.parametrize("pattern,lengths", BAD)
@differential
def test_rearrange_errors(T, pattern, lengths):
    x = T.tensor(X)
    return error_record(lambda: T.func.rearrange(x, pattern, **lengths))


def f_mutating(a):
    b = a.view(-1)
    b.add_(1)
    return b


@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
@differential
def test_functionalize_input_mutation_and_aliasing(T, remove):
    x = T.zeros(2, 2)
    out = T.func.functionalize(f_mutating, remove=remove)(x)
    record = [x, out, out._base is not None, x._version]
    out.add_(5)  # the result does not alias the input
    w = T.ones(2)
    returned = T.func.functionalize(lambda a, b: a.add_(b), remove=remove)(w, T.ones(2))
    untouched = T.ones(3)
    T.func.functionalize(lambda a: a * 2, remove=remove)(untouched)
    return record + [x, w, returned, returned is w, untouched._version]


@differential
def test_functionalize_gradients_and_errors(T):
    y = T.tensor([1.0, 2.0, 3.0], requires_grad=True)

    def g(a):
        c = a * 2
        c.mul_(3)
        c.add_(a * a)
        return c.sum()

    out = T.func.functionalize(g)(y)
    out.backward()
    grads = T.func.grad(T.func.functionalize(lambda a: (a * 2).mul_(a).sum()))(T.tensor([1.0, 2.0, 3.0]))
    leaf = T.zeros(2, 2, requires_grad=True)
    kw = T.zeros(2)
    T.func.functionalize(lambda *, a: a.add_(2))(a=kw)
    return (out, y.grad, grads, catch(T.func.functionalize(f_mutating), leaf), kw,
            catch(T.func.functionalize, f_mutating, remove="views"))


@differential
def test_replace_all_batch_norm_modules(T):
    T.manual_seed(0)
    net = T.nn.Sequential(T.nn.Conv2d(2, 3, 1), T.nn.BatchNorm2d(3),
                          T.nn.Sequential(T.nn.Flatten(), T.nn.BatchNorm1d(24, track_running_stats=False)))
    bn = T.nn.BatchNorm1d(4)
    same = T.func.replace_all_batch_norm_modules_(net) is net
    T.func.replace_all_batch_norm_modules_(bn)  # the root itself
    x = T.tensor(X[:, :4, :].reshape(2, 2, 2, 4).astype(np.float32))
    net.eval()
    out = net(x)
    return (same, sorted(net.state_dict().keys()), net[1].running_mean, net[1].track_running_stats,
            bn.running_var, bn.num_batches_tracked, out.shape, bn(T.ones(3, 4)))


@differential
def test_debug_unwrap_outside_transforms(T):
    x = T.ones(2)
    return T.func.debug_unwrap(x) is x, T.func.debug_unwrap(x, recurse=False) is x
