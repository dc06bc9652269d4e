"""``hookgrad.fft``: discrete Fourier transforms with torch's normalizations, dtypes and gradients."""
from ._ops.fft import (fft, fft2, fftfreq, fftn, fftshift, hfft, hfft2, hfftn, ifft, ifft2, ifftn, ifftshift, ihfft,
                       ihfft2, ihfftn, irfft, irfft2, irfftn, rfft, rfft2, rfftfreq, rfftn)
from ._tensor import Tensor  # torch.fft re-exports it too

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
           "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

from . import _argcheck  # noqa: E402

# torch.fft's functions are built-ins: they take NumPy's axis=/keepdims= for dim=/keepdim=
_argcheck.accept_numpy_names(globals(), __all__)

from ._C import _torch_function as _tf  # noqa: E402

_tf.install_namespace(globals(), __all__)  # each function consults __torch_function__ overrides and modes
