"""Optimizers (SGD, Adam, AdamW, RMSprop, Adagrad) and learning-rate schedulers, with PyTorch's API,
state-dict format and hook semantics; the updates run on NumPy arrays in place."""
from . import lr_scheduler, optimizer
from .adagrad import Adagrad
from .adam import Adam
from .adamw import AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "SGD", "lr_scheduler"]
