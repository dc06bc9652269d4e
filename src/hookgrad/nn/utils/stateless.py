"""``torch.nn.utils.stateless``: call a module with some of its parameters and buffers replaced for
that one call (the older home of ``torch.func.functional_call``)."""
from __future__ import annotations

import contextlib
import warnings

__all__ = ["functional_call"]


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers: dict, tie_weights: bool = False, strict: bool = False,
                          stack_weights: bool = False):
    """Within the block, ``module``'s named tensors are the given ones; on leaving, the originals
    are back (also after an exception)."""
    from ...func import _check_names_match, _swapped, _untied
    tensors = dict(parameters_and_buffers)
    if tie_weights:
        tensors = _untied(module, tensors)
    if strict:
        _check_names_match(module, tensors)
    with _swapped(module, tensors):
        yield


def functional_call(module, parameters_and_buffers: dict, args=None, kwargs=None, *, tie_weights: bool = True,
                    strict: bool = False):
    """Deprecated: ``torch.func.functional_call`` does the same."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed "
                  "in a future version of PyTorch. Please use `torch.func.functional_call` instead which is a "
                  "drop-in replacement.", FutureWarning, stacklevel=2)
    from ...func import functional_call as call
    return call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
