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


@differential
def test_view_of_a_view_made_under_no_grad_refuses_in_place_once_it_requires_grad(T):
    def made_in(mode):
        x = T.zeros(2)
        with mode():
            y = x.view(2)
        y.requires_grad_(True)
        return y

    refusals = []
    for mode in (T.no_grad, T.inference_mode):
        y = made_in(mode)
        refusals += [catch(lambda: y.view(2).div_(2)), catch(lambda: y.div_(2))]
    y = made_in(T.no_grad)
    (y * 2).sum().backward()  # the gradient does reach such a view
    with T.no_grad():
        w = T.zeros(2).view(2)
    return refusals, y.grad, w.requires_grad, w.grad_fn, w.mul_(2)


@differential
def test_a_view_made_before_its_base_requires_grad(T):
    a = T.randn(2, 3)
    b = a[:]
    b.add_(5)  # allowed: nothing requires grad yet
    a.requires_grad = True
    a.sum().backward()
    c = T.randn(2, 3)
    d = c[:]
    c.requires_grad = True
    facts = [d.requires_grad, d.grad_fn, d.is_leaf, catch(lambda: c.add_(5)), catch(lambda: d.add_(5))]
    # an in-place op on the base that gives it history gives the view history too
    r = T.ones(1, dtype=T.double, requires_grad=True)
    x = T.ones(5, dtype=T.double)
    v = x.select(0, 1)
    before = [v.requires_grad, v.grad_fn]
    x.add_(r)
    after = [v.requires_grad, type(v.grad_fn).__name__]
    v.backward()
    return a.grad, facts, before, after, r.grad


def _view_returning_function(T, inplace_inside):
    class MyFn(T.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            view = inp.clone()[:3]
            if inplace_inside:
                view += 2
            return view

        @staticmethod
        def backward(ctx, grad):
            return T.cat([grad, grad.new_zeros(grad.shape[0] + 1)])

    return MyFn


@differential
def test_views_a_custom_function_returns_keep_its_node_and_refuse_in_place_changes(T):
    base = T.rand(10, requires_grad=True)
    names = [type(_view_returning_function(T, inplace).apply(base).grad_fn).__name__ for inplace in (False, True)]

    class ViewAs(T.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.view_as(inp)

        @staticmethod
        def backward(ctx, grad):
            return grad

    plain = T.rand(1, 2)
    b = T.rand(1, requires_grad=True)
    refused = [catch(lambda: ViewAs.apply(plain).add_(b)), catch(lambda: ViewAs.apply(plain).copy_(b)),
               catch(lambda: plain.unbind()[0].copy_(b)), catch(lambda: ViewAs.apply(base).mul_(2))]
    allowed = plain.select(1, 0).copy_(b)
    with T.no_grad():
        v = T.rand(3)[:2]
    refused.append(catch(lambda: v.mul_(b[0])))
    fresh = T.rand(1, 2)  # (plain has history now)
    return names, refused, allowed, plain.requires_grad, fresh.unbind()[0].mul_(2), ViewAs.apply(fresh).mul_(2)


def _dirty_function(T, returns, marks):
    class Dirty(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            c = 3 * a
            c.add_(b)
            a.add_(b)
            ctx.mark_dirty(*marks(a, c))
            return returns(a, b, c)

        @staticmethod
        def backward(ctx, *grads):
            return grads[0], grads[0]

    return Dirty


@differential
@pytest.mark.parametrize("case", ["non_input", "non_input_view", "not_returned", "view_input_two_outputs",
                                  "view_input_with_number", "fine"])
@pytest.mark.parametrize("requires_grad", [True, False])
def test_mark_dirty_checks(T, case, requires_grad):
    returns, marks, view_input = {
        "non_input": (lambda a, b, c: c, lambda a, c: (c,), False),
        "non_input_view": (None, None, False),
        "not_returned": (lambda a, b, c: (a.clone(), a + b), lambda a, c: (a,), False),
        "view_input_two_outputs": (lambda a, b, c: (a, a + b), lambda a, c: (a,), True),
        "view_input_with_number": (lambda a, b, c: (a, 3), lambda a, c: (a,), True),
        "fine": (lambda a, b, c: a, lambda a, c: (a,), True),
    }[case]
    if case == "non_input_view":  # marked is a view made in forward, returned beside the input
        made = {}

        def marks(a, c):
            made["view"] = c.view_as(c)
            return a, made["view"]

        def returns(a, b, c):
            return a, made["view"]
    leaf = T.ones(2, requires_grad=requires_grad)
    a = leaf.clone().view_as(leaf) if view_input else leaf.clone()
    b = T.ones(2)
    from difftest import warns
    result, caught = warns(_dirty_function(T, returns, marks).apply, a, b)
    return result, caught


@differential
def test_forward_ad_level_and_fwd_grad_switch(T):
    fwAD = T.autograd.forward_ad
    seen = [fwAD._current_level, fwAD._is_fwd_grad_enabled(), T._C._is_fwd_grad_enabled()]
    with fwAD.dual_level():
        seen.append(fwAD._current_level)
        x = fwAD.make_dual(T.tensor([1.0, 2.0]), T.tensor([1.0, 0.5]))
        with fwAD._set_fwd_grad_enabled(False):
            off = x * 3
            seen.append(fwAD._is_fwd_grad_enabled())
        T._C._set_fwd_grad_enabled(False)
        try:
            off_again = x.exp()
        finally:
            T._C._set_fwd_grad_enabled(True)
        seen += [fwAD.unpack_dual(x * 3).tangent, fwAD.unpack_dual(off).tangent, fwAD.unpack_dual(off_again).tangent]
    return seen, fwAD._current_level, fwAD._is_fwd_grad_enabled()


@differential
def test_gradcheck_checks_reentrancy_undefined_grads_and_stable_outputs(T):
    class Jittery(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, jitter):
            ctx.jitter = jitter
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            Jittery.calls += 1
            return grad * (1 + ctx.jitter * Jittery.calls), None

    Jittery.calls = 0
    x = T.randn(3, dtype=T.double, requires_grad=True)
    gradcheck, gradgradcheck = T.autograd.gradcheck, T.autograd.gradgradcheck
    verdicts = [gradcheck(lambda t: Jittery.apply(t, 0.0), (x,)),
                catch(gradcheck, lambda t: Jittery.apply(t, 1e-9), (x,)),
                gradcheck(lambda t: Jittery.apply(t, 1e-9), (x,), raise_exception=False),
                gradcheck(lambda t: Jittery.apply(t, 1e-9), (x,), nondet_tol=1e-5)]

    def refuses_undefined(t):
        def hook(g):
            if g is None:
                raise RuntimeError("x is undefined")
        y = t.clone()
        y.register_hook(hook)
        return y

    from difftest import warns
    one = T.ones(1, dtype=T.double, requires_grad=True)
    verdicts += [warns(gradcheck, refuses_undefined, (one,)),
                 gradcheck(refuses_undefined, (one,), raise_exception=False),
                 gradcheck(refuses_undefined, (one,), check_undefined_grad=False)]
    grows = lambda t: T.cat([t, t]) if bool(T.all(t >= 1)) else t  # noqa: E731
    casts = lambda t: t.to(T.float32) if bool(T.all(t >= 1)) else t  # noqa: E731
    verdicts += [catch(gradcheck, grows, (one,)), catch(gradcheck, grows, (one,), raise_exception=False),
                 catch(gradcheck, casts, (one,)),
                 gradgradcheck(lambda t: t * t, (x,)), catch(gradgradcheck, lambda t: Jittery.apply(t, 1e-9) ** 2, (x,))]
    return verdicts


@differential
def test_backward_from_a_view_made_before_its_base_required_grad(T):
    a = T.randn(3)
    b = a[:2]
    a.requires_grad = True
    refused = catch(b.backward, T.ones(2))
    x = T.ones(3, dtype=T.double)
    v = x[1:]
    r = T.ones(1, dtype=T.double, requires_grad=True)
    x.mul_(r)
    v.backward(T.ones(2, dtype=T.double))
    return refused, b.grad, a.grad, r.grad


@differential
def test_gradcheck_forward_and_backward_switches(T):
    x = T.rand(3, dtype=T.double, requires_grad=True)
    y = T.rand(3, dtype=T.double, requires_grad=True)
    gradcheck = T.autograd.gradcheck

    def wrong_backward(t):
        out = t.clone()
        out.register_hook(lambda g: g * 2)
        return out

    return [gradcheck(lambda a, b: (a * b).sin() + a.exp(), (x, y), check_forward_ad=True),
            gradcheck(lambda a, b: (a * b, a.tanh()), (x, y), check_forward_ad=True, check_backward_ad=False,
                      check_undefined_grad=False),
            catch(gradcheck, lambda a: a * 2, (x,), check_forward_ad=False, check_backward_ad=False),
            catch(gradcheck, lambda a: a * 2, (x,), check_backward_ad=False, check_batched_grad=True),
            catch(gradcheck, wrong_backward, (x,), check_forward_ad=True),
            # the forward-AD check calls the function on inputs that do not require grad
            catch(gradcheck, wrong_backward, (x,), check_forward_ad=True, check_backward_ad=False,
                  check_undefined_grad=False),
            gradcheck(lambda a: a.clone() * 3, (x,), check_forward_ad=True, check_backward_ad=False,
                      check_undefined_grad=False)]


@differential
def test_gradcheck_forward_ad_with_complex_values(T):
    z = T.rand(3, dtype=T.complex128, requires_grad=True)
    x = T.rand(3, dtype=T.double, requires_grad=True)
    return [T.autograd.gradcheck(lambda a: a * a.conj() + a.exp(), (z,), check_forward_ad=True),
            T.autograd.gradcheck(lambda a: T.polar(a, a * 2), (x,), check_forward_ad=True),
            T.autograd.gradcheck(lambda a: a.abs(), (z,), check_forward_ad=True)]


def _scaled_function(T, forward_scale, jvp_scale):
    class Scale(T.autograd.Function):
        @staticmethod
        def forward(ctx, nothing, x, factor):
            return x * forward_scale

        @staticmethod
        def vjp(ctx, grad):
            return None, grad * forward_scale, None

        @staticmethod
        def jvp(ctx, nothing, x_t, factor):
            assert nothing is None and factor is None
            return x_t * jvp_scale

    return Scale


@differential
def test_custom_function_jvp_gives_the_tangent(T):
    fwAD = T.autograd.forward_ad
    x = T.rand(4, dtype=T.double, requires_grad=True)
    right, wrong = _scaled_function(T, 2.0, 2.0), _scaled_function(T, 2.0, 3.0)
    with fwAD.dual_level():
        dual = fwAD.make_dual(x.detach(), T.ones(4, dtype=T.double))
        tangent = fwAD.unpack_dual(wrong.apply(None, dual, None) + 1).tangent
    gc = T.autograd.gradcheck
    return [tangent, gc(lambda t: right.apply(None, t, None), (x,), check_forward_ad=True),
            catch(gc, lambda t: wrong.apply(None, t, None), (x,), check_forward_ad=True),
            gc(lambda t: wrong.apply(None, t, None), (x,))]
