"""The layer modules, gathered: ``hookgrad.nn.modules`` star-imports this file.

The names are also appended to the package's ``__all__`` so that ``hookgrad.nn`` (which
star-imports the package) exports them too.
"""
import sys as _sys

from .activation import (ELU, GELU, Hardtanh, LeakyReLU, LogSoftmax, ReLU, ReLU6, Sigmoid, SiLU, Softmax, Softplus,
                         Tanh)
from .batchnorm import BatchNorm1d, BatchNorm2d
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from .dropout import Dropout
from .flatten import Flatten, Unflatten
from .linear import Bilinear, Identity, Linear
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss, NLLLoss,
                   SmoothL1Loss)
from .normalization import GroupNorm, LayerNorm
from .pooling import AdaptiveAvgPool1d, AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d
from .sparse import Embedding

__all__ = [
    "Identity", "Linear", "Bilinear", "Flatten", "Unflatten", "Conv1d", "Conv2d", "ConvTranspose1d",
    "ConvTranspose2d", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
    "BatchNorm1d", "BatchNorm2d", "LayerNorm", "GroupNorm", "Dropout", "Embedding", "ReLU", "LeakyReLU", "ELU",
    "GELU", "SiLU", "Sigmoid", "Tanh", "Softplus", "Softmax", "LogSoftmax", "Hardtanh", "ReLU6", "MSELoss", "L1Loss",
    "SmoothL1Loss", "HuberLoss", "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "KLDivLoss",
]

_package_all = getattr(_sys.modules.get(__package__), "__all__", None)
if isinstance(_package_all, list):
    _package_all.extend(name for name in __all__ if name not in _package_all)
del _sys, _package_all
