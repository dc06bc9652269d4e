"""ELU, SELU and CELU (and their in-place forms) against torch: the nodes they record, what those
nodes save, where their edges lead, and the first three derivatives, at zero of either sign, at
tiny values and away from zero, in float32 and float64."""
import pytest

from difftest import catch, differential

POINTS = [-0.0, 0.0, -1e-30, 1e-30, -0.5, 0.5, -3.0, 2.0]


def _node_facts(node, depth=0):
    """A node's name, its ``_saved_*`` attributes (tensors by value), and the same for the nodes its
    edges lead to (the whole graph below, to ``depth`` 6)."""
    if node is None:
        return None
    saved = {}
    for name in dir(node):
        if name.startswith("_saved_"):
            saved[name] = catch(getattr, node, name)
    below = [(_node_facts(fn, depth + 1) if depth < 6 else None, nr) for fn, nr in node.next_functions]
    return node.name(), saved, below


FORMS = {
    "elu": lambda T, x: T.nn.functional.elu(x, 0.7),
    "elu_default": lambda T, x: T.nn.functional.elu(x),
    "elu_negative_alpha": lambda T, x: T.nn.functional.elu(x, -0.4),
    "selu": lambda T, x: T.nn.functional.selu(x),
    "torch.selu": lambda T, x: T.selu(x),
    "celu": lambda T, x: T.nn.functional.celu(x, 0.7),
    "celu_default": lambda T, x: T.celu(x),
    "celu_negative_alpha": lambda T, x: T.nn.functional.celu(x, -1.3),
    "elu_inplace": lambda T, x: T.nn.functional.elu(x * 1, 0.7, inplace=True),
    "F.elu_": lambda T, x: T.nn.functional.elu_(x * 1, 0.3),
    "F.elu_default": lambda T, x: T.nn.functional.elu_(x * 1),
    "torch.celu_default": lambda T, x: T.celu_(x * 1),
    "selu_inplace": lambda T, x: T.nn.functional.selu(x * 1, inplace=True),
    "torch.selu_": lambda T, x: T.selu_(x * 1),
    "celu_inplace": lambda T, x: T.nn.functional.celu(x * 1, 0.7, inplace=True),
    "torch.celu_": lambda T, x: T.celu_(x * 1, 2.5),
    "ELU": lambda T, x: T.nn.ELU(0.5)(x),
    "CELU": lambda T, x: T.nn.CELU(0.5)(x),
    "SELU": lambda T, x: T.nn.SELU()(x),
    "ELU_inplace": lambda T, x: T.nn.ELU(0.5, inplace=True)(x * 1),
    "CELU_inplace": lambda T, x: T.nn.CELU(0.5, inplace=True)(x * 1),
    "SELU_inplace": lambda T, x: T.nn.SELU(inplace=True)(x * 1),
}


# float32: NumPy's expm1 and torch's vectorized one differ by an ulp now and then; the in-place
# forms' gradient (result + alpha) magnifies that near alpha's cancellation
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("form", list(FORMS))
def test_three_derivatives_and_their_graphs(form, dtype):
    tolerance = {"rtol": 1e-6, "atol": 1e-30} if dtype == "float64" else {"rtol": 2e-6, "atol": 1e-7}
    differential(_three_derivatives, **tolerance)(form, dtype)


def _three_derivatives(T, form, dtype):
    x = T.tensor(POINTS, dtype=getattr(T, dtype), requires_grad=True)
    weights = T.tensor([1.0, 2.0, -3.0, 0.5, 1.5, -2.0, 0.25, 4.0], dtype=x.dtype)
    y = FORMS[form](T, x)
    g1, = T.autograd.grad((y * weights).sum(), x, create_graph=True)
    g2, = T.autograd.grad((g1 * weights).sum(), x, create_graph=True)
    g3, = T.autograd.grad((g2 * weights).sum(), x)
    return (y, g1, g2, g3, _node_facts(y.grad_fn), _node_facts(g1.grad_fn), _node_facts(g2.grad_fn),
            [y.dtype, g1.dtype, g2.dtype, g3.dtype])


@pytest.mark.parametrize("form", ["elu", "selu", "celu", "elu_inplace", "celu_inplace"])
@differential(rtol=1e-6, atol=1e-30)
def test_double_backward_reaches_only_what_requires_grad(T, form):
    # the incoming gradient requires grad, the input does not (and the other way round)
    x = T.tensor([-1.0, -0.0, 0.0, 0.7], dtype=T.float64, requires_grad=True)
    y = FORMS[form](T, x)
    v = T.tensor([0.5, -1.0, 2.0, 3.0], dtype=T.float64, requires_grad=True)
    g, = T.autograd.grad(y, x, v, create_graph=True)
    dv, dx = T.autograd.grad((g * g).sum(), (v, x), allow_unused=True, retain_graph=True)
    g_no_x, = T.autograd.grad(y, x, v.detach(), create_graph=True)
    return g, dv, dx, _node_facts(g.grad_fn), g_no_x, g_no_x.requires_grad, _node_facts(g_no_x.grad_fn)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("form", ["elu", "selu", "celu", "celu_inplace", "selu_inplace"])
@differential(rtol=2e-6, atol=1e-6)
def test_values_and_gradients_over_a_range(T, form, dtype):
    x = T.linspace(-6, 4, 41, dtype=T.float64).to(getattr(T, dtype)).requires_grad_()
    y = FORMS[form](T, x)
    g, = T.autograd.grad((y * y).sum(), x)
    return y, g


@differential
def test_hooks_and_saved_tensor_hooks_see_the_nodes(T):
    log = []
    x = T.tensor([-1.0, 0.0, 2.0], dtype=T.float64, requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: (log.append(("pack", t.clone())), t)[1],
                                              lambda t: (log.append(("unpack", t.clone())), t)[1]):
        y = T.nn.functional.selu(x * 1, inplace=True)
        z = T.nn.functional.celu(x, 0.5)
    y.grad_fn.register_hook(lambda gi, go: log.append(("selu node", y.grad_fn.name(), gi, go)))
    z.register_hook(lambda g: log.append(("celu grad", g)))
    (y + z).sum().backward()
    return log, x.grad


@differential
def test_bad_inputs(T):
    F = T.nn.functional
    out = {}
    out["celu_alpha_0"] = catch(F.celu, T.tensor([1.0, -1.0]), 0.0)
    out["celu__alpha_0"] = catch(T.celu_, T.tensor([1.0, -1.0]), 0)
    kept = T.tensor([1.0, -1.0])
    catch(F.celu, kept, 0.0, True)
    out["unchanged_after_refusal"] = kept
    for name, fn in [("elu", F.elu), ("selu", F.selu), ("celu", F.celu), ("torch.selu", T.selu)]:
        out[name + "_long"] = catch(fn, T.tensor([1, -2]))
        out[name + "_bool"] = catch(fn, T.tensor([True, False]))
    # the in-place form with a negative alpha: the forward runs, the backward refuses
    x = T.tensor([-1.0, 2.0], requires_grad=True)
    y = F.elu(x * 1, -0.5, inplace=True)
    out["negative_alpha_inplace_forward"] = (y, y.grad_fn.name())
    out["negative_alpha_inplace_backward"] = catch(lambda: y.sum().backward())
    # the graph stays usable: another backward through an out-of-place form works
    F.elu(x, -0.5).sum().backward()
    out["grad_after"] = x.grad
    leaf = T.tensor([1.0], requires_grad=True)
    out["leaf_inplace"] = catch(F.selu, leaf, True)
    out["leaf_inplace_alpha_0"] = catch(F.celu, leaf, 0.0, True)
    for dtype in (T.complex64, T.complex128):
        z = T.tensor([1 + 1j, -1 - 1j], dtype=dtype)
        out[str(dtype).split(".")[-1]] = [catch(F.elu, z), catch(F.selu, z), catch(F.celu, z, 0.5),
                                          catch(F.elu, z, 1.0, True), catch(T.selu_, z), z]
    return out


@differential
def test_saved_tensors_are_checked_for_later_changes(T):
    x = T.tensor([-1.0, 2.0], requires_grad=True)
    y = T.nn.functional.celu(x * 1, 0.5, inplace=True)
    y.add_(1)  # the saved result changed: torch refuses the backward
    first = catch(lambda: y.sum().backward())
    a = x * 1
    z = T.nn.functional.elu(a)
    a.mul_(2)  # the saved input changed
    second = catch(lambda: z.sum().backward())
    return first, second


@pytest.mark.parametrize("form", ["elu", "selu", "celu", "elu_inplace", "celu_inplace"])
@differential
def test_double_backward_packs_grad_output_then_input(T, form):
    log = []
    x = T.tensor([-1.0, 0.0, 2.0], dtype=T.float64, requires_grad=True)
    y = FORMS[form](T, x)
    with T.autograd.graph.saved_tensors_hooks(lambda t: (log.append(("pack", t.clone())), t)[1],
                                              lambda t: (log.append(("unpack", t.clone())), t)[1]):
        g, = T.autograd.grad(y, x, T.tensor([3.0, 4.0, 5.0], dtype=T.float64), create_graph=True)
    g.grad_fn.register_prehook(lambda grad_outputs: log.append(("prehook", g.grad_fn.name(), grad_outputs)))
    g.sum().backward()
    return log, x.grad
