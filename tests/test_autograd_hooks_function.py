"""Custom `autograd.Function`s, differentially against torch: forward/backward and the node
they create, needs_input_grad, non-differentiable outputs, materialize_grads, mark_dirty and the
setup_context style."""
from autograd_helpers import node_name
from difftest import catch, differential


def _square_fn(T):
    class Square(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(x)
            ctx.k = k
            return x * x * k

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x * ctx.k, None

    return Square


@differential
def test_custom_function_forward_backward_and_node(T):
    Square = _square_fn(T)
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = Square.apply(x, 3.0)
    y.grad_fn.register_prehook(lambda go: log.append(("pre", go)))
    y.grad_fn.register_hook(lambda gi, go: log.append(("post", gi, go)))
    y.sum().backward()
    return log, x.grad, y.grad_fn.name(), [node_name(n) for n, _ in y.grad_fn.next_functions]


@differential
def test_custom_function_needs_input_grad_and_non_differentiable(T):
    seen = []

    class Split(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            seen.append(ctx.needs_input_grad)
            idx = (x > 1.5)
            ctx.mark_non_differentiable(idx)
            return x * 2, idx

        @staticmethod
        def backward(ctx, g, g_idx):
            seen.append(g_idx)
            return g * 2, None

    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = T.tensor([1.0, 2.0])
    out, idx = Split.apply(x, y)
    out.sum().backward()
    return seen, x.grad, idx.requires_grad


@differential
def test_custom_function_materialize_grads(T):
    seen = []

    class Two(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append((g1, g2))
            return g1 if g2 is None else g1 + g2, None

    x = T.tensor([1.0, 2.0], requires_grad=True)
    a, b = Two.apply(x, True)
    a.sum().backward()
    a, b = Two.apply(x, False)
    a.sum().backward()
    return seen, x.grad


@differential
def test_custom_function_mark_dirty(T):
    class AddOneInPlace(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = a * 1
    c = AddOneInPlace.apply(b)
    c.sum().backward()
    return c is b, a.grad, b


@differential
def test_custom_function_wrong_number_of_grads(T):
    class Bad(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g

    x = T.tensor([1.0], requires_grad=True)
    return catch(lambda: Bad.apply(x, x).sum().backward())


@differential
def test_custom_function_setup_context_style(T):
    class Cube(T.autograd.Function):
        @staticmethod
        def forward(x):
            return x ** 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = Cube.apply(x)
    (g,) = T.autograd.grad(y.sum(), x, create_graph=True)
    g.sum().backward()
    return y, g, x.grad


@differential
def test_inplace_on_function_output_returned_as_is_raises(T):
    class Identity(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    a = T.tensor([1.0, 2.0], requires_grad=True)
    out = Identity.apply(a * 1)
    return catch(lambda: out.add_(1)), out.grad_fn.name(), out._base is not None


@differential
def test_function_non_differentiable_input_returned(T):
    class Pass(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.mark_non_differentiable(y)
            return x * 2, y

        @staticmethod
        def backward(ctx, gx, gy):
            return gx * 2, gy

    x = T.tensor([1.0], requires_grad=True)
    y = T.tensor([5.0], requires_grad=True)
    a, b = Pass.apply(x, y)
    a.sum().backward()
    return b.requires_grad, x.grad, y.grad
