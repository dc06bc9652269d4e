"""Multi-grad hooks, differentially against torch: `autograd.graph.register_multi_grad_hook`
in its "all" and "any" modes."""
from difftest import catch, differential


@differential
def test_multi_grad_hook_all_and_any(T):
    log = []
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = T.tensor([3.0], requires_grad=True)
    c = T.tensor([4.0], requires_grad=True)
    h = T.autograd.graph.register_multi_grad_hook((a, b, c), lambda grads: log.append(("all", grads)))
    (a.sum() * b).sum().backward()
    (a * 2).sum().backward()
    h.remove()
    (a * 2).sum().backward()
    T.autograd.graph.register_multi_grad_hook((a, b), lambda g: log.append(("any", g)), mode="any")
    (a.sum() + b * 5).sum().backward()
    return log


@differential
def test_multi_grad_hook_on_a_non_tensor_reads_requires_grad_first(T):
    """A float among the tensors (a forward hook replaced an output with one): torch's AttributeError
    names requires_grad, which it reads before grad_fn."""
    a = T.ones(2, requires_grad=True)
    raised = catch(T.autograd.graph.register_multi_grad_hook, [a, 1.5], lambda grads: None)
    return raised.cls, "requires_grad" in raised.message
