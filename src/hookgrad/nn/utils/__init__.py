"""Utilities for parameters and gradients: clipping and flattening to/from one vector."""
from .clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_,
                        get_total_norm)
from .convert_parameters import parameters_to_vector, vector_to_parameters
from . import rnn  # noqa: F401
from . import parametrize, parametrizations  # noqa: F401
from .weight_norm import remove_weight_norm, weight_norm
from .spectral_norm import remove_spectral_norm, spectral_norm

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm", "parameters_to_vector", "vector_to_parameters"]
__all__ += ["weight_norm", "remove_weight_norm", "spectral_norm", "remove_spectral_norm"]
