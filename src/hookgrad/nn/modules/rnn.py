"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their single-step cells.

The layers follow PyTorch 2.13's parameter names, shapes, initialisation, argument checks and
``extra_repr``. Gate order in the weights is PyTorch's: LSTM ``i, f, g, o``; GRU ``r, z, n``.

How a layer runs: ``forward`` takes torch's Python steps (unbatched input, default states, the
permutation of a packed batch's states) and calls the one op torch's module calls, ``torch.lstm``
/ ``gru`` / ``rnn_tanh`` / ``rnn_relu`` (``nn/_functional/recurrent.py``), which builds torch's
graph: a float32 LSTM is one fused ``MkldnnRnnLayerBackward0`` node per layer and direction, every
other case ATen's composition of ordinary ops, step by step. The single-step cells run that same
step (``torch.lstm_cell`` ...).
"""
from __future__ import annotations

import math
import numbers
import warnings

import hookgrad
from hookgrad._tensor import Tensor

from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """Dropout between stacked layers (the functional API's when it is there)."""
    if not training or p == 0:
        return x
    try:
        from .. import functional as F
    except ImportError:  # the functional module is optional for this file
        F = None
    if F is not None and hasattr(F, "dropout"):
        return F.dropout(x, p, True)
    if p == 1:
        return x * 0
    keep = hookgrad.bernoulli(hookgrad.full_like(x.detach(), 1.0 - p))
    return x * keep / (1.0 - p)


def _is_packed(input) -> bool:
    from ..utils.rnn import PackedSequence
    return isinstance(input, PackedSequence)


class RNNBase(Module):
    """Shared set-up of ``RNN``, ``LSTM`` and ``GRU``: parameters, checks and the layer loop."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device=None, dtype=None) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        directions = 2 if bidirectional else 1

        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)

        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else real_hidden * directions
            for direction in range(directions):
                suffix = "_reverse" if direction == 1 else ""
                shapes = [(f"weight_ih_l{layer}{suffix}", (gate_size, layer_input)),
                          (f"weight_hh_l{layer}{suffix}", (gate_size, real_hidden))]
                if bias:
                    shapes += [(f"bias_ih_l{layer}{suffix}", (gate_size,)),
                               (f"bias_hh_l{layer}{suffix}", (gate_size,))]
                if proj_size > 0:
                    shapes.append((f"weight_hr_l{layer}{suffix}", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name, Parameter(hookgrad.empty(shape, dtype=dtype)))
                names = [name for name, _ in shapes]
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    # ---- parameters -------------------------------------------------------------------------
    @property
    def _flat_weights(self) -> list:
        live = [getattr(self, name, None) for name in self._flat_weights_names]
        assigned = self.__dict__.get("_assigned_flat_weights")
        if assigned is not None:
            weights, seen = assigned
            # an assigned list is used while the weights it was assigned over are still in place (as torch
            # uses it until it notices a replaced weight and rebuilds the list from the attributes)
            if len(seen) == len(live) and all(a is b for a, b in zip(seen, live)):
                return list(weights)
            del self.__dict__["_assigned_flat_weights"]
        return live

    @_flat_weights.setter
    def _flat_weights(self, weights) -> None:
        # functional-model libraries (higher) assign the list before calling forward
        live = [getattr(self, name, None) for name in self._flat_weights_names]
        self.__dict__["_assigned_flat_weights"] = (list(weights), live)

    @property
    def all_weights(self) -> list:
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op: there is no fused kernel that wants one contiguous weight buffer."""

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ---- argument checks (PyTorch's messages) -----------------------------------------------
    def check_input(self, input: Tensor, batch_sizes=None) -> None:
        weight = self._flat_weights[0]
        if input.dtype != weight.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight.dtype}). "
                             f"Convert input: input.to({weight.dtype}), or convert model: model.to({input.dtype})")
        expected_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_dim:
            raise RuntimeError(f"input must have {expected_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.size(-1)}")

    def get_expected_hidden_size(self, input: Tensor, batch_sizes=None) -> tuple:
        return self._expected_state_size(input, batch_sizes, self.proj_size if self.proj_size > 0 else self.hidden_size)

    def _expected_state_size(self, input: Tensor, batch_sizes, size: int) -> tuple:
        """(layers times directions, batch, ``size``): the shape torch requires of a given initial state."""
        if batch_sizes is not None:
            batch = int(batch_sizes[0])
        else:
            batch = input.size(0) if self.batch_first else input.size(1)
        directions = 2 if self.bidirectional else 1
        return (self.num_layers * directions, batch, size)

    def check_hidden_size(self, hx: Tensor, expected: tuple, msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.size()) != tuple(expected):
            raise RuntimeError(msg.format(tuple(expected), list(hx.size())))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes=None) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return hx.index_select(1, permutation)

    # ---- the layer loop ---------------------------------------------------------------------
    def _run_layers(self, input: Tensor, hx, batch_sizes=None):
        """The one op torch's module calls (``_VF.lstm``, ``gru``, ``rnn_tanh``, ``rnn_relu``), on the
        padded input or, given ``batch_sizes``, on a packed batch's data."""
        # the public op, so that a __torch_function__ override sees it as torch's module call (_VF.lstm, ...)
        run = getattr(hookgrad, self.mode.lower())
        if batch_sizes is None:
            return run(input, hx, self._flat_weights, self.bias, self.num_layers, self.dropout, self.training,
                       self.bidirectional, self.batch_first)
        return run(input, batch_sizes, hx, self._flat_weights, self.bias, self.num_layers, self.dropout,
                   self.training, self.bidirectional)

    def _forward_packed(self, input, hx, batch_sizes):
        return self._run_layers(input, hx, batch_sizes)

    def _zeros(self, batch, size, like: Tensor) -> Tensor:
        directions = 2 if self.bidirectional else 1
        return hookgrad.zeros(self.num_layers * directions, int(batch), size, dtype=like.dtype, device=like.device)

    def _with_batch_dim(self, input: Tensor, dims_error: str):
        """A padded input with its batch dimension added when it has none: (input, whether it had one,
        where the batch dimension is). ``dims_error`` is torch's message for neither 2-D nor 3-D."""
        if input.dim() not in (2, 3):
            raise ValueError(dims_error.format(input.dim()))
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:
            input = input.unsqueeze(batch_dim)
        return input, is_batched, batch_dim

    def _forward_one_state(self, input, hx, dims_error):
        """forward of the RNN and GRU, whose state is a single tensor (LSTM has two): torch's steps.
        ``dims_error`` is the module's own message for an input neither 2-D nor 3-D."""
        from ..utils.rnn import PackedSequence
        orig_input = input
        if _is_packed(orig_input):
            input, batch_sizes, sorted_indices, unsorted_indices = orig_input
            if hx is None:
                hx = self._zeros(batch_sizes[0], self.hidden_size, input)
            else:
                hx = self.permute_hidden(hx, sorted_indices)
        else:
            batch_sizes = None
            input, is_batched, batch_dim = self._with_batch_dim(input, dims_error)
            if not is_batched:
                if hx is not None:
                    if hx.dim() != 2:
                        raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D "
                                           "tensor")
                    hx = hx.unsqueeze(1)
            elif hx is not None and hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
            sorted_indices = unsorted_indices = None
            if hx is None:
                hx = self._zeros(input.size(0) if self.batch_first else input.size(1), self.hidden_size, input)
            else:
                hx = self.permute_hidden(hx, sorted_indices)
        self.check_forward_args(input, hx, batch_sizes)
        if batch_sizes is None:
            output, hidden = self._run_layers(input, hx)
        else:
            output, hidden = self._forward_packed(input, hx, batch_sizes)
        if batch_sizes is not None:
            return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), \
                self.permute_hidden(hidden, unsorted_indices)
        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = hidden.squeeze(1)
        return output, self.permute_hidden(hidden, unsorted_indices)


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or ReLU)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward_one_state(input, hx, "RNN: Expected input to be 2D or 3D, got {}D tensor instead")


class LSTM(RNNBase):
    """Long short-term memory; with ``proj_size > 0`` the hidden state is projected (LSTMP)."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input: Tensor, batch_sizes=None) -> tuple:
        return self._expected_state_size(input, batch_sizes, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes=None):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)

    def forward(self, input, hx=None):
        from ..utils.rnn import PackedSequence
        orig_input = input
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if _is_packed(orig_input):
            input, batch_sizes, sorted_indices, unsorted_indices = orig_input
            if hx is None:
                hx = (self._zeros(batch_sizes[0], real_hidden, input),
                      self._zeros(batch_sizes[0], self.hidden_size, input))
            else:
                hx = self.permute_hidden(hx, sorted_indices)
        else:
            batch_sizes = None
            input, is_batched, batch_dim = self._with_batch_dim(
                input, "LSTM: Expected input to be 2D or 3D, got {}D instead")
            batch = input.size(0) if self.batch_first else input.size(1)
            sorted_indices = unsorted_indices = None
            if hx is None:
                hx = (self._zeros(batch, real_hidden, input), self._zeros(batch, self.hidden_size, input))
                self.check_forward_args(input, hx, batch_sizes)
            else:
                if is_batched:
                    if hx[0].dim() != 3 or hx[1].dim() != 3:
                        raise RuntimeError("For batched 3-D input, hx and cx should also be 3-D but got "
                                           f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                else:
                    if hx[0].dim() != 2 or hx[1].dim() != 2:
                        raise RuntimeError("For unbatched 2-D input, hx and cx should also be 2-D but got "
                                           f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                    hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
                self.check_forward_args(input, hx, batch_sizes)
                hx = self.permute_hidden(hx, sorted_indices)
        if batch_sizes is None:
            output, h_n, c_n = self._run_layers(input, hx)
        else:
            output, h_n, c_n = self._forward_packed(input, hx, batch_sizes)
        if batch_sizes is not None:
            return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), \
                self.permute_hidden((h_n, c_n), unsorted_indices)
        hidden = (h_n, c_n)
        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = (h_n.squeeze(1), c_n.squeeze(1))
        return output, self.permute_hidden(hidden, unsorted_indices)


class GRU(RNNBase):
    """Gated recurrent unit (PyTorch's formulation: the reset gate multiplies ``W_hn h + b_hn``)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        # GRU's message, unlike RNN's, has no "tensor"
        return self._forward_one_state(input, hx, "GRU: Expected input to be 2D or 3D, got {}D instead")


# ---- cells ----------------------------------------------------------------------------------------
class RNNCellBase(Module):
    """Shared set-up of the cells: ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(hookgrad.empty((num_chunks * hidden_size, input_size), dtype=dtype))
        self.weight_hh = Parameter(hookgrad.empty((num_chunks * hidden_size, hidden_size), dtype=dtype))
        if bias:
            self.bias_ih = Parameter(hookgrad.empty(num_chunks * hidden_size, dtype=dtype))
            self.bias_hh = Parameter(hookgrad.empty(num_chunks * hidden_size, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _check(self, input, hx, name: str, what: str = "hidden"):
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {hx.dim()}D instead")
        return input.dim() == 2

    def _batched_with_hidden(self, input, hx, name: str):
        """``(batched, input, hx)`` for a cell with one hidden tensor (RNNCell, GRUCell): checked,
        with a batch dim added to unbatched arguments and zeros for a missing ``hx``."""
        batched = self._check(input, hx, name)
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = hookgrad.zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
        elif not batched:
            hx = hx.unsqueeze(0)
        self._check_sizes(input, hx, "")
        return batched, input, hx

    def _check_sizes(self, input, hx, hidden_label="hx"):
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected {self.input_size}")
        if hx.size(0) != input.size(0):
            raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{hidden_label} batch size "
                               f"{hx.size(0)}")
        if hx.size(1) != self.hidden_size:
            raise RuntimeError(f"hidden{hidden_label} has inconsistent hidden_size: got {hx.size(1)}, expected "
                               f"{self.hidden_size}")


class RNNCell(RNNCellBase):
    """One step of an Elman RNN with tanh or ReLU."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        batched, input, hx = self._batched_with_hidden(input, hx, "RNNCell")
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        step = hookgrad.rnn_tanh_cell if self.nonlinearity == "tanh" else hookgrad.rnn_relu_cell
        out = step(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One step of an LSTM; returns ``(h', c')``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got {value.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = hookgrad.zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
            hx = (zeros, zeros)
        elif not batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        self._check_sizes(input, hx[0], "[0]")
        self._check_sizes(input, hx[1], "[1]")
        h, c = hookgrad.lstm_cell(input, (hx[0], hx[1]), self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One step of a GRU."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        batched, input, hx = self._batched_with_hidden(input, hx, "GRUCell")
        out = hookgrad.gru_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out if batched else out.squeeze(0)
