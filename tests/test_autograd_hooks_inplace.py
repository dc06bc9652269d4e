"""In-place ops and views under autograd, differentially against torch: version counters
shared by views, view regeneration after an in-place change of the base, and which in-place ops raise."""
from autograd_helpers import node_name
from difftest import catch, differential


@differential
def test_inplace_leaf_errors(T):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    r1 = catch(lambda: a.add_(1))
    r2 = catch(lambda: a[0].mul_(2))
    with T.no_grad():
        a.add_(1)
    return r1, r2, a


@differential
def test_inplace_on_view_of_nonleaf(T):
    a = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    b = a.clone()
    v = b[0]
    v.mul_(3)
    names = (node_name(b.grad_fn), node_name(v.grad_fn), [node_name(n) for n, _ in b.grad_fn.next_functions])
    (b * b).sum().backward()
    return names, a.grad, b


@differential
def test_index_assignment_gradients(T):
    a = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = T.tensor([10.0, 20.0], requires_grad=True)
    b = a * 1
    b[0] = c[1]
    b[b > 2.5] = 0.0
    names = node_name(b.grad_fn)
    (b * T.tensor([1.0, 2.0, 3.0])).sum().backward()
    return names, a.grad, c.grad, b


@differential
def test_view_after_base_inplace_regenerates(T):
    a = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    b = a * 1
    v = b[1:3]
    b.mul_(2)
    name = node_name(v.grad_fn)
    (v * v).sum().backward()
    return name, a.grad


@differential
def test_version_counter_shared_by_views(T):
    a = T.zeros(4)
    v = a[1:]
    v.add_(1)
    a.mul_(2)
    return a._version, v._version, a


@differential
def test_inplace_ops_gradients(T):
    x = T.tensor([0.5, -1.5, 2.0], requires_grad=True)
    y = T.tensor([1.5, 2.5, -0.5], requires_grad=True)
    b = x * 1
    b.mul_(y)
    b.add_(y, alpha=2)
    b.sub_(1)
    b.div_(y)
    b.pow_(2)
    b.clamp_(-3, 30)
    b.masked_fill_(b > 2.5, 1.0)
    b.sigmoid_()
    b.sum().backward()
    c = x * 1
    c.sigmoid_()
    c.exp_()
    # sigmoid_ saved its result, which exp_ then changed in place
    return b, x.grad, y.grad, node_name(b.grad_fn), catch(lambda: c.sum().backward())


@differential
def test_zero_fill_copy_inplace(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    s = T.tensor([4.0, 5.0, 6.0], requires_grad=True)
    names = []
    b = x * 1
    b.zero_()
    names.append(node_name(b.grad_fn))
    c = x * 1
    c.fill_(2.0)
    names.append(node_name(c.grad_fn))
    d = x * 1
    d.copy_(s)
    names.append(node_name(d.grad_fn))
    (b + c + d * d).sum().backward()
    return names, x.grad, s.grad


@differential
def test_inplace_on_split_output_raises_only_with_grad(T):
    a = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    x, y = (a * 1).split(2)
    plain = T.zeros(4)
    p, q = plain.split(2)
    q.add_(1)
    return catch(lambda: x.mul_(2)), plain


@differential
def test_second_backward_through_copy_slices_is_refused(T):
    # CopySlices saves nothing itself, yet releasing the graph frees the in-place op's node (which
    # saved ``w``): the second backward raises instead of accumulating again
    a = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    w = T.tensor([2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    b = a + 0
    b.view(-1).mul_(w)
    b.sum().backward()
    second = catch(lambda: b.sum().backward())
    return a.grad, second
