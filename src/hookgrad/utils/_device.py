"""``torch.utils._device``: ``DeviceContext``, the function mode that ``with torch.device(...):``
pushes. It fills in ``device=`` for the factory functions that get none; hookgrad's only device
is the CPU, so what it changes is what other modes and ``_get_current_function_mode_stack`` see."""
from __future__ import annotations

import functools

import hookgrad
from hookgrad.overrides import TorchFunctionMode, _len_torch_function_stack, _pop_mode, _push_mode

CURRENT_DEVICE = None

_CONSTRUCTOR_NAMES = ("empty", "empty_permuted", "empty_strided", "empty_quantized", "ones", "arange", "bartlett_window",
                      "blackman_window", "eye", "fft.fftfreq", "fft.rfftfreq", "full", "hamming_window", "hann_window",
                      "kaiser_window", "linspace", "logspace", "nested.nested_tensor", "rand", "randn", "randint",
                      "randperm", "range", "sparse_coo_tensor", "sparse_compressed_tensor", "sparse_csr_tensor",
                      "sparse_csc_tensor", "sparse_bsr_tensor", "sparse_bsc_tensor", "tril_indices", "triu_indices",
                      "zeros", "asarray", "tensor", "as_tensor", "scalar_tensor")


@functools.lru_cache(maxsize=1)
def _device_constructors() -> frozenset:
    """The factory functions whose ``device=`` a DeviceContext fills in."""
    found = []
    for dotted in _CONSTRUCTOR_NAMES:
        target = hookgrad
        for part in dotted.split("."):
            target = getattr(target, part, None)
        if target is not None:
            found.append(target)
    return frozenset(found)


class DeviceContext(TorchFunctionMode):
    """A mode that makes ``device`` the factories' default device."""

    def __init__(self, device) -> None:
        self.device = hookgrad.device(device)
        self.prev_mode = None

    def __enter__(self):
        # set_default_device's way in: below any mode already on the stack, replacing an older DeviceContext
        global CURRENT_DEVICE
        self.old_device = CURRENT_DEVICE
        CURRENT_DEVICE = self.device
        above = [_pop_mode() for _ in range(_len_torch_function_stack())]
        _push_mode(self)
        for mode in reversed(above):
            if isinstance(mode, DeviceContext):
                self.prev_mode = mode
            else:
                _push_mode(mode)

    def __exit__(self, exc_type, exc_val, exc_tb):
        global CURRENT_DEVICE
        CURRENT_DEVICE = self.old_device
        above = []
        for _ in range(_len_torch_function_stack() - 1):
            mode = _pop_mode()
            if isinstance(mode, DeviceContext):
                raise AssertionError("Found nested DeviceContext on the mode stack where none expected")
            above.append(mode)
        if _len_torch_function_stack() > 0:
            mode = _pop_mode()
            if not isinstance(mode, DeviceContext):
                raise AssertionError("Expected a DeviceContext at the bottom of the mode stack")
        if self.prev_mode is not None:
            _push_mode(self.prev_mode)
        for mode in reversed(above):
            _push_mode(mode)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _device_constructors() and kwargs.get("device") is None:
            kwargs["device"] = self.device
        return func(*args, **kwargs)
