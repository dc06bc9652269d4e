"""Activation layers: thin modules over ``nn.functional``."""
from __future__ import annotations

from .. import functional as F
import hookgrad

from ..parameter import Parameter
from ._one_option import _OneOptionLayer
from .module import Module

__all__ = ["ReLU", "LeakyReLU", "ELU", "GELU", "SiLU", "Sigmoid", "Tanh", "Softplus", "Softmax", "LogSoftmax",
           "Hardtanh", "ReLU6", "Threshold", "RReLU", "Hardsigmoid", "Mish", "Hardswish", "CELU", "SELU", "GLU",
           "Hardshrink", "LogSigmoid", "Softshrink", "PReLU", "Softsign", "Tanhshrink", "Softmin", "Softmax2d",
           "MultiheadAttention"]


def _inplace_repr(inplace):
    return "inplace=True" if inplace else ""


class _InplaceOnly(Module):
    """An activation whose only option is ``inplace``."""

    __constants__ = ["inplace"]

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class _AlphaInplace(Module):
    """An activation with an ``alpha`` and an ``inplace`` option (ELU, CELU)."""

    __constants__ = ["alpha", "inplace"]

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class ReLU(_InplaceOnly):
    def forward(self, input):
        return F.relu(input, inplace=self.inplace)


class LeakyReLU(Module):
    __constants__ = ["inplace", "negative_slope"]

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(_AlphaInplace):
    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)


class GELU(Module):
    __constants__ = ["approximate"]

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={repr(self.approximate)}"


class SiLU(_InplaceOnly):
    def forward(self, input):
        return F.silu(input, inplace=self.inplace)


class Sigmoid(Module):
    def forward(self, input):
        return hookgrad.sigmoid(input)  # torch.sigmoid, as torch's module calls it (what overrides see)


class Tanh(Module):
    def forward(self, input):
        return hookgrad.tanh(input)


class Softplus(Module):
    __constants__ = ["beta", "threshold"]

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class _SoftmaxOverDim(Module):
    """Softmax, LogSoftmax and Softmin: one optional ``dim`` (None for torch's legacy choice); siblings,
    not subclasses of one another, as in torch."""

    __constants__ = ["dim"]

    def __init__(self, dim=None) -> None:
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_SoftmaxOverDim):
    def forward(self, input):
        return F.softmax(input, self.dim, _stacklevel=4)


class LogSoftmax(_SoftmaxOverDim):
    def forward(self, input):
        return F.log_softmax(input, self.dim, _stacklevel=4)


class Hardtanh(Module):
    __constants__ = ["min_val", "max_val", "inplace"]

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace
        assert self.max_val > self.min_val

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class ReLU6(Hardtanh):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class Threshold(Module):
    __constants__ = ["threshold", "value", "inplace"]

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class RReLU(Module):
    __constants__ = ["lower", "upper", "inplace"]

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class Hardsigmoid(_InplaceOnly):
    def forward(self, input):
        return F.hardsigmoid(input, self.inplace)


class Hardswish(_InplaceOnly):
    def forward(self, input):
        return F.hardswish(input, self.inplace)


class Mish(_InplaceOnly):
    def forward(self, input):
        return F.mish(input, inplace=self.inplace)


class SELU(_InplaceOnly):
    def forward(self, input):
        return F.selu(input, self.inplace)


class CELU(_AlphaInplace):
    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class GLU(_OneOptionLayer):
    __constants__ = ["dim"]
    _function = "glu"

    def __init__(self, dim: int = -1) -> None:
        super().__init__(dim)


class _Shrink(Module):
    """Hardshrink and Softshrink: one threshold ``lambd``; siblings, as in torch."""

    __constants__ = ["lambd"]

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Hardshrink(_Shrink):
    def forward(self, input):
        return F.hardshrink(input, self.lambd)


class Softshrink(_Shrink):
    def forward(self, input):
        return F.softshrink(input, self.lambd)


class LogSigmoid(Module):
    def forward(self, input):
        return F.logsigmoid(input)


class Softsign(Module):
    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(Module):
    def forward(self, input):
        return F.tanhshrink(input)


class PReLU(Module):
    """Leaky ReLU whose negative slope is learned: one per channel, or ``num_parameters=1`` shared."""

    __constants__ = ["num_parameters"]

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None) -> None:
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(hookgrad.empty(num_parameters, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        with hookgrad.no_grad():
            self.weight.fill_(self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class Softmin(_SoftmaxOverDim):
    def forward(self, input):
        return F.softmin(input, self.dim, _stacklevel=4)


class Softmax2d(Module):
    """Softmax over the channels of each spatial position of a (N, C, H, W) or (C, H, W) input."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3, _stacklevel=4)


from .attention import MultiheadAttention  # noqa: E402 - torch keeps it in this file
