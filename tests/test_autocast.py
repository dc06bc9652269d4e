"""CPU autocast against torch's: which ops run in the low-precision dtype, which in float32,
which promote; the casts' graph (ToCopyBackward0 nodes, one per weight per block); gradients;
what hooks see inside a block; the torch.* state functions."""
from __future__ import annotations

import numpy as np
import pytest

from difftest import catch, differential

W1 = np.array([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6], [0.05, 0.15, 0.25], [-0.3, 0.2, 0.1]], dtype=np.float32)
X = np.array([[1.0, 2.0, 3.0], [0.5, 0.25, 0.125], [-1.5, 0.75, 2.5]], dtype=np.float32)


def _mlp(T):
    net = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.ReLU(), T.nn.Linear(4, 2))
    with T.no_grad():
        net[0].weight.copy_(T.tensor(W1))
        net[0].bias.copy_(T.tensor([0.01, -0.02, 0.03, 0.0]))
        net[2].weight.copy_(T.tensor(W1[:2, :].repeat(2, axis=1)[:, :4] * 0.5))
        net[2].bias.fill_(0.1)
    return net


@differential(rtol=1e-2, atol=1e-2)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_mlp_train_step_under_autocast(T, dtype):
    net = _mlp(T)
    seen = []
    for m in net:
        m.register_forward_hook(lambda mod, inp, out: seen.append((type(mod).__name__, inp[0].dtype, out.dtype)))
    x = T.tensor(X)
    target = T.tensor([0, 1, 1])
    with T.autocast("cpu", dtype=getattr(T, dtype)):
        out = net(x)
        loss = T.nn.functional.cross_entropy(out, target)
    loss.backward()
    grads = [(p.grad.dtype, p.grad) for p in net.parameters()]
    return seen, out.dtype, out.grad_fn.name(), loss.dtype, out, loss, grads


@differential
def test_autocast_graph_and_weight_cache(T):
    lin = T.nn.Linear(3, 4)
    x = T.tensor(X)
    with T.autocast("cpu"):
        a, b = lin(x), lin(x)
        nodes = [n.name() if n is not None else None for n, _ in a.grad_fn.next_functions]
        same_bias_cast = a.grad_fn.next_functions[0][0] is b.grad_fn.next_functions[0][0]
    with T.autocast("cpu"):
        c = lin(x)
    new_block_new_cast = c.grad_fn.next_functions[0][0] is not a.grad_fn.next_functions[0][0]
    return nodes, same_bias_cast, new_block_new_cast


@differential(rtol=1e-2, atol=1e-2)
def test_op_lists(T):
    x = T.tensor(X)
    xd = x.double()
    m = x.reshape(1, 3, 3)
    img = T.tensor(np.linspace(-1, 1, 2 * 2 * 5 * 5, dtype=np.float32).reshape(2, 2, 5, 5))
    wconv = T.tensor(np.linspace(-0.5, 0.5, 3 * 2 * 3 * 3, dtype=np.float32).reshape(3, 2, 3, 3))
    out = []
    with T.autocast("cpu"):
        for name, fn in [("matmul", lambda: x @ x), ("rmatmul", lambda: x.tolist() @ x if False else x.__rmatmul__(x)),
                         ("mm", lambda: T.mm(x, x)), ("method mm", lambda: x.mm(x)), ("bmm", lambda: T.bmm(m, m)),
                         ("baddbmm", lambda: T.baddbmm(m, m, m)), ("addmm", lambda: T.addmm(x, x, x)),
                         ("float64 stays", lambda: T.mm(xd, xd)), ("conv2d", lambda: T.nn.functional.conv2d(img, wconv)),
                         ("Conv2d", lambda: T.nn.Conv2d(2, 3, 3)(img).dtype),
                         ("sdpa", lambda: T.nn.functional.scaled_dot_product_attention(m, m, m)),
                         ("mse fp32", lambda: T.nn.functional.mse_loss((x @ x), x)),
                         ("cat promotes", lambda: T.cat([x @ x, x])), ("stack promotes", lambda: T.stack([x @ x, x])),
                         ("relu keeps", lambda: T.relu(x @ x)), ("sum keeps", lambda: (x @ x).sum()),
                         ("prod fp32", lambda: T.prod(x @ x)), ("add mixed", lambda: (x @ x) + x)]:
            r = fn()
            out.append((name, r.dtype if hasattr(r, "dtype") else r, r if hasattr(r, "dtype") and r.dtype != T.bfloat16 else None))
    return out


@differential
def test_autocast_state_functions(T):
    out = [T.is_autocast_enabled("cpu"), T.get_autocast_dtype("cpu"), T.is_autocast_cache_enabled()]
    with T.autocast("cpu", dtype=T.float16):
        out += [T.is_autocast_enabled("cpu"), T.get_autocast_dtype("cpu"), T.is_autocast_enabled()]
        with T.autocast("cpu", enabled=False):
            out += [T.is_autocast_enabled("cpu"), (T.tensor(X) @ T.tensor(X)).dtype]
        out.append(T.is_autocast_enabled("cpu"))
    out += [T.is_autocast_enabled("cpu"), T.get_autocast_dtype("cpu")]
    T.set_autocast_enabled("cpu", True)
    out.append((T.tensor(X) @ T.tensor(X)).dtype)
    T.set_autocast_enabled("cpu", False)
    out += [T.autocast_increment_nesting(), T.autocast_decrement_nesting(), catch(T.get_autocast_dtype, "gpu")]

    @T.autocast("cpu")
    def decorated(v):
        return (v @ v).dtype

    out.append(decorated(T.tensor(X)))
    return out


@differential(rtol=1e-2, atol=1e-2)
def test_hooks_inside_autocast(T):
    lin = T.nn.Linear(3, 4)
    with T.no_grad():
        lin.weight.copy_(T.tensor(W1))
    log = []
    lin.register_full_backward_hook(lambda m, gi, go: log.append(("module", [g.dtype if g is not None else None for g in gi],
                                                                   [g.dtype for g in go])))
    lin.weight.register_hook(lambda g: log.append(("weight", g.dtype)))
    x = T.tensor(X, requires_grad=True)
    with T.autocast("cpu"):
        y = lin(x)
        y.register_hook(lambda g: log.append(("output", g.dtype)))
    y.float().sum().backward()
    return log, x.grad.dtype, x.grad, lin.weight.grad
