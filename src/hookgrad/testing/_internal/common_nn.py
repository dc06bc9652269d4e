"""``torch.testing._internal.common_nn`` pieces that module tests use: ``NNTestCase`` and
``_create_basic_net``."""
from __future__ import annotations

from .common_utils import TestCase


class NNTestCase(TestCase):
    """TestCase for module tests. Subclasses that check Jacobians supply ``_forward``,
    ``_backward``, ``_get_parameters`` and ``_zero_grad_parameters``; the helpers below work on
    tensors and (nested) tuples/lists of them."""

    def _forward(self, *args, **kwargs):
        raise NotImplementedError

    def _get_parameters(self, module):
        raise NotImplementedError

    def _zero_grad_parameters(self, module):
        raise NotImplementedError

    def _backward(self, module, input, output, grad_output, create_graph=False):
        raise NotImplementedError

    def _jacobian(self, input, num_out):
        """Zero Jacobian storage shaped (input elements, outputs), mirroring ``input``'s nesting."""
        import hookgrad
        if isinstance(input, tuple):
            return tuple(self._jacobian(item, num_out) for item in input)
        if isinstance(input, list):
            return [self._jacobian(item, num_out) for item in input]
        return hookgrad.zeros(input.nelement(), num_out)

    def _flatten_tensors(self, x):
        import hookgrad
        if isinstance(x, hookgrad.Tensor):
            return x.view(-1)
        return tuple(self._flatten_tensors(item) for item in x)

    def _zero_grad_input(self, input):
        import hookgrad
        if isinstance(input, hookgrad.Tensor):
            if input.requires_grad and input.grad is not None:
                input.grad.zero_()
                input.grad.detach_()
        else:
            for item in input:
                self._zero_grad_input(item)


def _create_basic_net():
    """Three modules sharing parts, for registration-hook tests: a ``Layer`` with one parameter and
    one buffer, a ``Net`` holding a Layer plus its own parameter and buffer, and a Sequential that
    holds that same Net twice. Returns (layer, net, sequential)."""
    import hookgrad
    from hookgrad import nn

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer_dummy_param = nn.Parameter(hookgrad.empty(3, 5))
            self.layer_dummy_buf = nn.Buffer(hookgrad.zeros(1, 3, 3, 7))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = Layer()
            self.dummy_param = nn.Parameter(hookgrad.empty(3, 5))
            self.dummy_buf = nn.Buffer(hookgrad.zeros(7, 3, 3, 1))

    layer = Layer()
    net = Net()
    return layer, net, nn.Sequential(net, net)
