"""Sequence layers: recurrent layers and cells, multi-head attention, the transformer encoder.

``hookgrad.nn.modules`` star-imports this file; its names are also appended to the package's
``__all__`` so that ``hookgrad.nn`` (which star-imports the package) exports them too.
"""
import sys as _sys

from .attention import MultiheadAttention
from .rnn import GRU, GRUCell, LSTM, LSTMCell, RNN, RNNBase, RNNCell, RNNCellBase
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
                          TransformerEncoderLayer)

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
           "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
           "TransformerDecoder", "Transformer"]

_package_all = getattr(_sys.modules.get(__package__), "__all__", None)
if isinstance(_package_all, list):
    _package_all.extend(name for name in __all__ if name not in _package_all)
del _sys, _package_all
