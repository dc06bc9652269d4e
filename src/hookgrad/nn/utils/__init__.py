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
from . import fusion, prune, stateless  # noqa: E402,F401
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights  # noqa: E402
from .init import skip_init  # noqa: E402
from .memory_format import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format  # noqa: E402
__all__ += ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights",
            "skip_init", "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]
