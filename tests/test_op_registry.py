"""The registry's own tests: every Node class of the op layer is reached by some case (coverage gate),
the registry's EDGE rows against torch, and the public namespace."""
import importlib
import pkgutil

import numpy as np
import pytest

import hookgrad
from difftest import assert_same, catch, differential, normalize
from hookgrad.autograd.graph import Node
from op_cases import BINARY, DOUBLE_BACKWARD, EDGE, FUNCTIONAL, MATRIX, UNARY

import torch

# classes that are bases of op nodes, never recorded themselves
ABSTRACT = {"Node", "UnaryNode", "ZeroGradNode", "LinearMapNode"}
# nodes whose every derivative is torch's NotImplementedError (no case can run a backward through
# them); test_special.py checks that they raise it
NOT_DIFFERENTIABLE = {"SpecialZetaBackward2"}


def _op_modules():
    import hookgrad._ops
    import hookgrad.nn._functional
    names = ["hookgrad.nn.functional"]
    for pkg in (hookgrad._ops, hookgrad.nn._functional):
        names += [f"{pkg.__name__}.{m.name}" for m in pkgutil.iter_modules(pkg.__path__)]
    return [importlib.import_module(n) for n in names]


def op_node_classes() -> set:
    """Every Node subclass the op layer defines (declared ones included)."""
    modules = {m.__name__ for m in _op_modules()}
    found, todo = set(), list(Node.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls.__module__ in modules and cls.__name__ not in ABSTRACT | NOT_DIFFERENTIABLE and not cls.__name__.startswith("_"):
            found.add(cls)
    return found


def _walk(roots, seen):
    todo = [r for r in roots if r is not None]
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        todo += [fn for fn, _ in node.next_functions if fn is not None]


def _reach(out, inputs, seen_nodes):
    """Record the classes of the graph of ``out``, and of its create_graph gradients (double backward)."""
    outs = [o for o in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(o, hookgrad.Tensor)]
    outs = [o for o in outs if o.requires_grad]
    _walk([o.grad_fn for o in outs], seen_nodes)
    diff = [t for t in inputs if isinstance(t, hookgrad.Tensor) and t.requires_grad]
    if not outs or not diff:
        return
    weighted = [(o.double() if o.dtype != hookgrad.float64 else o) * (1 + hookgrad.arange(
        o.numel(), dtype=hookgrad.float64).reshape(o.shape) / 7) for o in outs]
    # a linear and a quadratic loss: the backward runs with a constant and with a grad-requiring gradient
    for total in (sum(w.sum() for w in weighted), sum((w * w).sum() for w in weighted)):
        grads = hookgrad.autograd.grad(total, diff, create_graph=True, allow_unused=True)
        _walk([g.grad_fn for g in grads if g is not None], seen_nodes)
        second = [g for g in grads if g is not None and g.requires_grad]
        if second:
            try:
                gg = hookgrad.autograd.grad(sum((g * g).sum() for g in second), diff, create_graph=True,
                                            allow_unused=True)
            except RuntimeError as e:  # torch has no double backward for some ops (ctc_loss) either
                assert str(e).startswith("derivative for "), e
                continue
            _walk([g.grad_fn for g in gg if g is not None], seen_nodes)


def _registry_runs():
    """Every case of the registry as (name, thunk returning (output, inputs))."""
    rng = np.random.default_rng(0)

    def arrays(shapes, positive=False, **_):
        out = []
        for s in shapes:
            a = rng.uniform(-2, 2, size=s)
            out.append(np.abs(a) + 0.5 if positive else a)
        return out

    def tensors(arrs):
        return [hookgrad.tensor(a, requires_grad=True) for a in arrs]

    for name, (fn, opts) in UNARY.items():
        yield f"unary:{name}", lambda fn=fn, opts=opts: (lambda ts: (fn(hookgrad, *ts), ts))(
            tensors(arrays([(2, 3, 4)], **opts)))
    for name, (fn, opts) in BINARY.items():
        yield f"binary:{name}", lambda fn=fn, opts=opts: (lambda ts: (fn(hookgrad, *ts), ts))(
            tensors(arrays([(2, 3), (3,)], **opts)))
    for name, (fn, shapes) in MATRIX.items():
        yield f"matrix:{name}", lambda fn=fn, shapes=shapes: (lambda ts: (fn(hookgrad, *ts), ts))(
            tensors(arrays(shapes)))
    for name, fn in DOUBLE_BACKWARD.items():
        yield f"double:{name}", lambda fn=fn: (lambda ts: (fn(hookgrad, *ts), ts))(tensors(arrays([(3, 4)])))
    for name, (fn, inputs) in FUNCTIONAL.items():
        yield f"functional:{name}", lambda fn=fn, inputs=inputs: (lambda ts: (fn(*ts), ts))(
            [i.detach().requires_grad_(i.requires_grad) for i in inputs])
    for name, (fn, shapes) in EDGE.items():
        yield f"edge:{name}", lambda fn=fn, shapes=shapes: (lambda ts: (fn(hookgrad, *ts), ts))(
            tensors(arrays(shapes)))


def test_every_op_node_class_is_reached_by_a_registry_case():
    seen = set()
    for _name, run in _registry_runs():
        out, inputs = run()
        _reach(out, inputs, seen)
    reached = {type(n) for n in seen}
    missing = sorted(c.__name__ for c in op_node_classes() - reached)
    assert not missing, f"Node classes no registry case reaches (add a row to tests/op_cases.py): {missing}"


# ---- EDGE rows: against torch, and gradcheck ------------------------------------------------------
def _edge_run(T, name, arrays):
    fn, _ = EDGE[name]
    ts = [T.tensor(a, requires_grad=True) for a in arrays]
    out = fn(T, *ts)
    out.backward(T.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape))))
    return [out] + [t.grad for t in ts]


@pytest.mark.parametrize("name", sorted(EDGE))
def test_edge_case_matches_torch(name):
    arrays = [np.random.default_rng(1).uniform(-2, 2, s) for s in EDGE[name][1]]
    assert_same(normalize(_edge_run(hookgrad, name, arrays)), normalize(_edge_run(torch, name, arrays)),
                rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", sorted(EDGE))
def test_edge_case_gradcheck(name):
    fn, shapes = EDGE[name]
    ts = [hookgrad.tensor(np.random.default_rng(2).uniform(-2, 2, s), requires_grad=True) for s in shapes]
    assert hookgrad.autograd.gradcheck(lambda *xs: fn(hookgrad, *xs), ts, eps=1e-6, atol=1e-5, rtol=1e-4)


def test_node_class_names_are_their_grad_fn_names():
    """``type(grad_fn).__name__ == grad_fn.name()``, as in torch (whose C++ nodes add a namespace)."""
    seen = set()
    for _name, run in _registry_runs():
        out, inputs = run()
        _reach(out, inputs, seen)
    wrong = sorted({(type(n).__name__, n.name()) for n in seen
                    if n.name() not in (type(n).__name__, "torch::autograd::" + type(n).__name__)})
    assert not wrong


def test_readme_design_shows_a_real_declaration_and_its_registry_row():
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    design = (root / "README.md").read_text().split("**One op, one declaration.**")[1].split("\n- **")[0]
    declaration, row = [block.strip() for block in design.split("```python\n")[1:3]]
    declaration, row = declaration.split("```")[0].strip(), row.split("```")[0].strip()
    assert declaration in (root / "src/hookgrad/_ops/pointwise.py").read_text()
    assert row in (root / "tests/op_cases.py").read_text()
