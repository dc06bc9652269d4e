"""inference_mode makes inference tensors, as torch's does: no version counter, never saved for
backward, no in-place update and no requires_grad outside the mode. Each scenario runs on torch and
hookgrad; error texts are compared whole (code in the wild matches them)."""
from __future__ import annotations

import importlib

from difftest import catch, differential


def _text(fn):
    """The result of ``fn``, or the class and full message of what it raised."""
    result = catch(fn)
    return (result.cls, result.message) if hasattr(result, "cls") else result


@differential
def test_what_inference_mode_makes_is_an_inference_tensor(T):
    normal = T.tensor([1.0, 2.0, 3.0])
    leaf = T.tensor([1.0, -1.0, 0.5], requires_grad=True)
    with T.inference_mode():
        flags = (T.is_grad_enabled(), T.is_inference_mode_enabled())
        made = T.ones(3)
        from_normal = normal * 2
        from_leaf = leaf * 2
        view_of_normal = normal.view(3)
        view_of_made = made[1:]
        reduced = normal.sum()
    kinds = [t.is_inference() for t in (made, from_normal, from_leaf, view_of_normal, view_of_made, reduced)]
    outside = [made.clone().is_inference(), made.detach().is_inference(), (made + normal).is_inference(),
               T.is_inference(made), T.is_inference(normal)]
    return (flags, kinds, outside, from_leaf.requires_grad, from_leaf.grad_fn, reduced.item(),
            _text(lambda: made._version), _text(lambda: view_of_made._version), normal._version,
            T.is_inference_mode_enabled())


@differential
def test_an_inference_tensor_is_updated_in_place_only_inside_the_mode(T):
    normal = T.tensor([1.0, 2.0, 3.0])
    with T.inference_mode():
        made = T.ones(3)
        made.add_(1)  # inside: allowed
        normal.mul_(2)  # a normal tensor changed inside: allowed, and its version moves
    first = _text(lambda: made.add_(1))
    with T.no_grad():
        second = _text(lambda: made.mul_(3))
    third = _text(lambda: made.copy_(normal))
    fourth = _text(lambda: made[0].fill_(7.0))
    copied_from = normal.clone().copy_(made)  # reading an inference tensor is fine
    with T.inference_mode():
        made.sub_(1)
    return first, second, third, fourth, copied_from, made, normal, normal._version


@differential
def test_an_inference_tensor_requires_grad_only_inside_the_mode(T):
    with T.inference_mode():
        made = T.ones(3)
        inside = T.zeros(2).requires_grad_()
    results = [_text(lambda: made.requires_grad_()), _text(lambda: setattr(made, "requires_grad", True)),
               _text(lambda: T.nn.Parameter(made)), made.requires_grad_(False).requires_grad]
    return results, inside.requires_grad, inside.is_inference(), T.nn.Parameter(made.clone()).requires_grad


@differential
def test_an_inference_tensor_cannot_be_saved_for_backward(T):
    w = T.tensor([[1.0, 2.0], [0.5, -1.0]], requires_grad=True)
    with T.inference_mode():
        made = T.tensor([[0.5, 1.5], [-2.0, 1.0]])

    class Square(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, other):
            ctx.save_for_backward(other)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            return grad * 2, None

    saved = [_text(lambda: w * made), _text(lambda: made @ w), _text(lambda: T.nn.functional.linear(made, w)),
             _text(lambda: Square.apply(w, made))]
    fine = (w + made).sum() + (w - made).sum() + (w * made.clone()).sum()  # nothing of made is saved
    fine.backward()
    graph_after = (w * 3).sum()  # the refusals left autograd usable
    graph_after.backward()
    return saved, w.grad


@differential
def test_a_view_made_in_inference_mode_of_a_tensor_requiring_grad(T):
    h = T.tensor([1.0, 2.0, 3.0], requires_grad=True) * 1
    with T.inference_mode():
        view = h.view(3)
        part = h[1:]
    flags = (view.requires_grad, view.is_inference(), view.grad_fn, view._base is h)
    refused = _text(lambda: view.add_(1))
    refused_part = _text(lambda: part.mul_(2))
    with T.no_grad():
        view.add_(1)  # no grad mode: allowed, through to h
    after = _text(lambda: view.grad_fn)
    with T.inference_mode():
        part.mul_(2)
    return flags, refused, refused_part, after, h.detach()


@differential
def test_inference_mode_false_turns_grad_mode_on(T):
    log = []
    with T.inference_mode():
        with T.inference_mode(False):
            log.append((T.is_grad_enabled(), T.is_inference_mode_enabled(), T.ones(1).is_inference()))
        log.append((T.is_grad_enabled(), T.is_inference_mode_enabled()))
    with T.no_grad():
        with T.inference_mode(False):
            log.append((T.is_grad_enabled(), T.is_inference_mode_enabled()))
        with T.inference_mode(mode=True):
            log.append((T.is_grad_enabled(), T.is_inference_mode_enabled()))
        log.append(T.is_grad_enabled())

    @T.inference_mode()
    def decorated():
        return T.ones(1).is_inference(), T.is_grad_enabled()

    @T.inference_mode
    def bare():
        return T.ones(1).is_inference()

    def generator():
        yield T.ones(1).is_inference()
        yield T.is_inference_mode_enabled()

    log.append((decorated(), bare(), list(T.inference_mode()(generator)()), T.inference_mode().mode,
                T.inference_mode(False).mode))
    return log


@differential
def test_evaluation_under_inference_mode_then_training_goes_on(T):
    T.manual_seed(0)
    model = T.nn.Sequential(T.nn.Linear(4, 8), T.nn.BatchNorm1d(8), T.nn.ReLU(), T.nn.Dropout(0.2),
                            T.nn.Linear(8, 3))
    with T.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(T.linspace(-0.5, 0.5 + 0.1 * i, p.numel()).reshape(p.shape))
    data = importlib.import_module(T.__name__ + ".utils.data")
    x = T.linspace(-2.0, 2.0, 40).reshape(10, 4)
    y = T.tensor([0, 1, 2, 0, 1, 2, 0, 1, 2, 0])
    loader = data.DataLoader(data.TensorDataset(x, y), batch_size=4)
    opt = T.optim.SGD(model.parameters(), lr=0.1)
    model.train()
    for xb, yb in loader:
        opt.zero_grad()
        T.nn.functional.cross_entropy(model(xb), yb).backward()
        opt.step()
    model.eval()
    correct, outputs = 0, []
    with T.inference_mode():
        for xb, yb in loader:
            logits = model(xb)
            correct += int((logits.argmax(1) == yb).sum())
            outputs.append(logits)
    last = outputs[-1]
    status = (last.is_inference(), last.requires_grad, _text(lambda: last.sum().backward()))
    model.train()
    loss = T.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    return correct, T.cat(outputs), status, loss, model[0].weight.grad, model[1].running_mean


@differential
def test_batch_norm_refuses_an_inference_input_before_updating_its_statistics(T):
    """torch saves an op's inputs before its kernel runs: the refusal leaves the running
    statistics as they were."""
    bn = T.nn.BatchNorm1d(3)
    with T.inference_mode():
        made = T.tensor([[1.0, 2.0, -1.0], [0.5, -0.5, 2.0]])
    refused = _text(lambda: bn(made))
    state_after_refusal = (bn.running_mean.clone(), bn.running_var.clone(), int(bn.num_batches_tracked))
    with T.no_grad():
        bn(made)  # nothing is saved without grad mode
    return refused, state_after_refusal, bn.running_mean, bn.running_var


@differential
def test_a_view_of_an_inference_tensor_is_no_view_to_autograd(T):
    with T.inference_mode():
        made = T.ones(2, 3)
        row = made[0]
        pooled = T.nn.functional.avg_pool1d(made.unsqueeze(1), 3, stride=1, padding=1).squeeze(1)
    normal = T.ones(2, 3)
    with T.inference_mode():
        normal_row = normal[0]
    flags = [(t._is_view(), t._base is None, t.is_inference()) for t in (row, pooled, normal_row)]
    return flags, catch(row.detach_), catch(pooled.detach_), catch(normal_row.detach_), row, pooled
