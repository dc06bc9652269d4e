"""Discrete Fourier transforms (``hookgrad.fft``) on NumPy's pocketfft, with torch's gradients.

Every transform is built, as torch builds it, from three differentiable primitives: a complex to
complex transform (``FftC2CBackward0``), a real to one-sided complex transform (``FftR2CBackward0``)
and its inverse, one-sided complex to real (``FftC2RBackward0``). Each takes a normalization
(``none``, ``by_root_n`` or ``by_n``: what the result is multiplied by, 1, 1/sqrt(n) or 1/n), so the
adjoint of a transform is the transform in the other direction with the same normalization.
Padding or trimming to ``n``/``s`` happens before, with ordinary (differentiable) tensor ops.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype
from .._tensor import Tensor, _wrap_dim, wrap
from ..autograd.graph import Node
from ._base import GRAD, as_tensor_arg, quiet_fp
from ._declare import module_all, op, record_op

NONE, BY_ROOT_N, BY_N = 0, 1, 2
# NumPy's norm= giving normalization ``k`` for a transform in the forward (e^{-i}) direction, and in
# the inverse (e^{+i}) direction
_NP_FORWARD = {NONE: "backward", BY_ROOT_N: "ortho", BY_N: "forward"}
_NP_INVERSE = {NONE: "forward", BY_ROOT_N: "ortho", BY_N: "backward"}


def _norm_mode(norm, forward: bool) -> int:
    """torch's normalization for ``norm=`` of a transform that runs forward or backward."""
    if norm is None or norm == "backward":
        return NONE if forward else BY_N
    if norm == "forward":
        return BY_N if forward else NONE
    if norm == "ortho":
        return BY_ROOT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _complex_np(real_np):
    return np.dtype(np.complex128) if real_np == np.float64 else np.dtype(np.complex64)


# ---- the three primitives ------------------------------------------------------------------------
class FftC2CBackward0(Node):
    __slots__ = ("dims", "normalization", "forward")
    saved_values = {"dim": lambda n: n.dims, "normalization": lambda n: n.normalization,
                    "forward": lambda n: n.forward}

    def apply(self, grads):
        return (fft_c2c(grads[0], self.dims, self.normalization, not self.forward),)


def fft_c2c(x: Tensor, dims: tuple, normalization: int, forward: bool) -> Tensor:
    """A complex transform over ``dims`` (e^{-i} when ``forward``), scaled per ``normalization``."""
    d = x._ndarray
    with quiet_fp():
        if forward:
            out = np.fft.fftn(d, axes=dims, norm=_NP_FORWARD[normalization])
        else:
            out = np.fft.ifftn(d, axes=dims, norm=_NP_INVERSE[normalization])
    result = wrap(out.astype(d.dtype, copy=False))
    if GRAD.enabled and x._requires_grad:
        node = record_op(FftC2CBackward0, (x,), result)
        node.dims, node.normalization, node.forward = tuple(dims), normalization, forward
    return result


class FftR2CBackward0(Node):
    __slots__ = ("dims", "normalization", "onesided", "full_size")
    saved_names = ("self",)  # as torch's: only its size is read, but a later in-place change is caught
    saved_values = {"dim": lambda n: n.dims, "normalization": lambda n: n.normalization,
                    "onesided": lambda n: n.onesided}

    def apply(self, grads):
        self.saved()
        g = grads[0]
        if self.onesided:
            # the dropped half of the spectrum had zero gradient: pad it back, then the adjoint
            last = self.dims[-1]
            missing = self.full_size - g._ndarray.shape[last]
            if missing > 0:
                shape = list(g._ndarray.shape)
                shape[last] = missing
                from .shape import cat
                g = cat([g, wrap(np.zeros(shape, dtype=g._ndarray.dtype))], last)
        return (fft_c2c(g, self.dims, self.normalization, False).real,)


def fft_r2c(x: Tensor, dims: tuple, normalization: int, onesided: bool = True) -> Tensor:
    """A forward transform of a real tensor; with ``onesided`` only the first n//2 + 1 entries of
    the last of ``dims`` (the rest are their conjugates)."""
    d = x._ndarray
    transform = np.fft.rfftn if onesided else np.fft.fftn
    with quiet_fp():
        out = transform(d, axes=dims, norm=_NP_FORWARD[normalization])
    result = wrap(out.astype(_complex_np(d.dtype), copy=False))
    if GRAD.enabled and x._requires_grad:
        node = record_op(FftR2CBackward0, (x,), result)
        node.dims, node.normalization, node.onesided = tuple(dims), normalization, onesided
        node.full_size = d.shape[dims[-1]]
        node.save(x)
    return result


class FftC2RBackward0(Node):
    __slots__ = ("dims", "normalization", "last_dim_size")
    saved_values = {"dim": lambda n: n.dims, "normalization": lambda n: n.normalization}

    def apply(self, grads):
        g = grads[0]
        gi = fft_r2c(g, self.dims, self.normalization, True)
        last = self.dims[-1]
        half = gi._ndarray.shape[last]
        doubled = self.last_dim_size - half  # entries that stand for themselves and their mirror image
        if doubled > 0:
            weights = np.ones(half, dtype=g._ndarray.dtype)
            weights[1:1 + doubled] = 2
            shape = [1] * gi._ndarray.ndim
            shape[last] = half
            gi = gi * wrap(weights.reshape(shape))
        return (gi,)


def fft_c2r(x: Tensor, dims: tuple, normalization: int, last_dim_size: int) -> Tensor:
    """The inverse of a one-sided transform: a real tensor whose last of ``dims`` has ``last_dim_size``
    entries, from ``x`` holding its first last_dim_size // 2 + 1 coefficients there."""
    d = x._ndarray
    sizes = [d.shape[a] for a in dims[:-1]] + [last_dim_size]
    with quiet_fp():
        out = np.fft.irfftn(d, s=sizes, axes=dims, norm=_NP_INVERSE[normalization])
    result = wrap(out.astype(_PART[d.dtype], copy=False))
    if GRAD.enabled and x._requires_grad:
        node = record_op(FftC2RBackward0, (x,), result)
        node.dims, node.normalization, node.last_dim_size = tuple(dims), normalization, last_dim_size
    return result


_PART = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}


# ---- arguments as torch reads them -------------------------------------------------------------------
def _as_complex(x: Tensor) -> Tensor:
    """A complex tensor for a complex transform: real (and integer) tensors are converted first."""
    k = x._ndarray.dtype.kind
    if k == "c":
        return x
    if x._ndarray.dtype == _dtype.complex32.np:  # torch's CPU transforms have no half-precision types
        raise RuntimeError("MKL FFT doesn't support tensors of type: Half")
    _refuse_half(x)
    if k != "f":
        x = x.to(_dtype.get_default_dtype())
    return x.to(_dtype.from_numpy_dtype(x._ndarray.dtype).to_complex())


def _refuse_half(x: Tensor) -> None:
    """torch's pocketfft has no half-precision transforms."""
    if x._ndarray.dtype == np.float16 or _dtype.is_bfloat16_np(x._ndarray.dtype):
        raise RuntimeError("Unsupported dtype " + _dtype.scalar_type_name(x._ndarray.dtype))


def _as_real(x: Tensor, fname: str) -> Tensor:
    k = x._ndarray.dtype.kind
    if k == "c":
        raise RuntimeError(f"{fname} expects a real input tensor, but got {_dtype.scalar_type_name(x._ndarray.dtype)}")
    _refuse_half(x)
    if k != "f":
        x = x.to(_dtype.get_default_dtype())
    return x


def _resize(x: Tensor, dims, sizes) -> Tensor:
    """Zero-pad or trim ``x`` along each of ``dims`` to the matching size (torch's resize of the input)."""
    pads = [0] * (2 * x._ndarray.ndim)
    padded = False
    for dim, size in zip(dims, sizes):
        have = x._ndarray.shape[dim]
        if size < have:
            x = x.narrow(dim, 0, size)
        elif size > have:
            pads[2 * (x._ndarray.ndim - 1 - dim) + 1] = size - have
            padded = True
    if padded:
        from .more import constant_pad_nd
        x = constant_pad_nd(x, pads)
    return x


def _one_dim(x: Tensor, n, dim):
    dim = _wrap_dim(dim, x._ndarray.ndim)
    if n is not None and n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return (dim,), (x._ndarray.shape[dim] if n is None else int(n),)


def _many_dims(x: Tensor, s, dim):
    """(dims, sizes) for an n-dimensional transform, torch's rules for s= and dim=."""
    nd = x._ndarray.ndim
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = tuple(_wrap_dim(d, nd) for d in dims)
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
        if s is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    elif s is not None:
        if len(s) > nd:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {nd} dimensions.")
        dims = tuple(range(nd - len(s), nd))
    else:
        dims = tuple(range(nd))
    sizes = tuple(x._ndarray.shape[d] for d in dims) if s is None else tuple(
        x._ndarray.shape[d] if int(n) == -1 else int(n) for d, n in zip(dims, s))
    for n in sizes:
        if n < 1:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return dims, sizes


def _c2c(x, dims, sizes, norm, forward):
    x = _resize(_as_complex(x), dims, sizes)
    return fft_c2c(x, dims, _norm_mode(norm, forward), forward)


def _r2c(x, dims, sizes, norm, fname):
    x = _resize(_as_real(x, fname), dims, sizes)
    return fft_r2c(x, dims, _norm_mode(norm, True), True)


def _c2r(x, dims, sizes, norm, forward=False, conj_input=False, c2c_first=False):
    """One-sided complex to real over ``dims`` with output sizes ``sizes`` (last: n, input n//2 + 1)."""
    x = _as_complex(x)
    mode = _norm_mode(norm, forward)
    x = _resize(x, dims, sizes[:-1] + (sizes[-1] // 2 + 1,))
    if c2c_first and len(dims) > 1:
        x = fft_c2c(x, dims[:-1], mode, True)
        dims_c2r = dims[-1:]
    else:
        dims_c2r = dims
    if conj_input:
        from .complex import conj
        x = conj(x)
    return fft_c2r(x, dims_c2r, mode, sizes[-1])


def _default_last_size(x, dim, n):
    if n is not None:
        return int(n)
    size = 2 * (x.shape[dim] - 1)
    if size < 1:
        raise RuntimeError(f"Invalid number of data points ({size}) specified")
    return size


# ---- torch.fft ---------------------------------------------------------------------------------------
def _declare(fn):
    return op(function=False, method=False)(fn)


def _over_last_two_dims(transform_n):
    """The two-dimensional form of an n-dimensional transform: the same with ``dim=(-2, -1)``."""
    def transform_2(input, s=None, dim=(-2, -1), norm=None):
        return transform_n(input, s, dim, norm)
    transform_2.__name__ = transform_2.__qualname__ = transform_n.__name__[:-1] + "2"
    transform_2.__doc__ = f"``{transform_n.__name__}`` over the last two dims."
    return _declare(transform_2)


def _transform(input, size, dim, dims_and_sizes, kernel, norm, **options):
    """A public transform: the dims and sizes that ``dims_and_sizes`` reads from ``n``/``s`` and ``dim``
    (torch's rules), then ``kernel`` over them."""
    x = as_tensor_arg(input)
    dims, sizes = dims_and_sizes(x, size, dim)
    return kernel(x, dims, sizes, norm, **options)


def _c2r_one_dim(x, n, dim):
    """A one-dimensional complex to real transform's dim and size: by default 2 * (m - 1) for m inputs."""
    (d,), _ = _one_dim(x, n, dim)
    return (d,), (_default_last_size(x, d, n),)


def _c2r_many_dims(x, s, dim):
    dims, sizes = _many_dims(x, s, dim)
    if s is None or int(s[-1]) == -1:
        sizes = sizes[:-1] + (_default_last_size(x, dims[-1], None),)
    return dims, sizes


def _ihfft(x, dims, sizes, norm, fname):
    from .complex import conj, conj_physical
    x = _resize(_as_real(x, fname), dims, sizes)
    mode = _norm_mode(norm, False)
    out = fft_r2c(x, dims[-1:], mode, True)
    if len(dims) == 1:
        return conj(out)
    return fft_c2c(conj_physical(out), dims[:-1], mode, False)


@_declare
def fft(input, n=None, dim=-1, norm=None):
    """The one-dimensional discrete Fourier transform along ``dim`` (padded or trimmed to ``n``)."""
    return _transform(input, n, dim, _one_dim, _c2c, norm, forward=True)


@_declare
def ifft(input, n=None, dim=-1, norm=None):
    """The inverse of ``fft``."""
    return _transform(input, n, dim, _one_dim, _c2c, norm, forward=False)


@_declare
def fftn(input, s=None, dim=None, norm=None):
    """The n-dimensional transform over ``dim`` (by default the last ``len(s)`` dims, or all)."""
    return _transform(input, s, dim, _many_dims, _c2c, norm, forward=True)


@_declare
def ifftn(input, s=None, dim=None, norm=None):
    """The inverse of ``fftn``."""
    return _transform(input, s, dim, _many_dims, _c2c, norm, forward=False)


fft2 = _over_last_two_dims(fftn)


ifft2 = _over_last_two_dims(ifftn)


@_declare
def rfft(input, n=None, dim=-1, norm=None):
    """The transform of a real signal: only the n // 2 + 1 non-negative frequencies."""
    return _transform(input, n, dim, _one_dim, _r2c, norm, fname="rfft")


@_declare
def rfftn(input, s=None, dim=None, norm=None):
    """The n-dimensional real transform: one-sided along the last of ``dim``, full along the others."""
    return _transform(input, s, dim, _many_dims, _r2c, norm, fname="rfftn")


rfft2 = _over_last_two_dims(rfftn)


@_declare
def irfft(input, n=None, dim=-1, norm=None):
    """The inverse of ``rfft``: a real signal of ``n`` points (by default 2 * (m - 1))."""
    return _transform(input, n, dim, _c2r_one_dim, _c2r, norm)


@_declare
def irfftn(input, s=None, dim=None, norm=None):
    """The inverse of ``rfftn``."""
    return _transform(input, s, dim, _c2r_many_dims, _c2r, norm)


irfft2 = _over_last_two_dims(irfftn)


@_declare
def hfft(input, n=None, dim=-1, norm=None):
    """The real spectrum of a Hermitian-symmetric signal given by its first half (conj, then c2r)."""
    return _transform(input, n, dim, _c2r_one_dim, _c2r, norm, forward=True, conj_input=True)


@_declare
def hfftn(input, s=None, dim=None, norm=None):
    """The n-dimensional ``hfft``."""
    return _transform(input, s, dim, _c2r_many_dims, _c2r, norm, forward=True, conj_input=True, c2c_first=True)


hfft2 = _over_last_two_dims(hfftn)


@_declare
def ihfft(input, n=None, dim=-1, norm=None):
    """The inverse of ``hfft``: the first half of the Hermitian-symmetric signal of a real spectrum."""
    return _transform(input, n, dim, _one_dim, _ihfft, norm, fname="ihfft")


@_declare
def ihfftn(input, s=None, dim=None, norm=None):
    """The inverse of ``hfftn``."""
    return _transform(input, s, dim, _many_dims, _ihfft, norm, fname="ihfftn")


ihfft2 = _over_last_two_dims(ihfftn)


def _freq(values, dtype, requires_grad, fname):
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{fname} requires a floating point or complex dtype")
    out = wrap(np.asanyarray(values).astype(dt.np))
    if requires_grad:
        out.requires_grad_(True)
    return out


@_declare
def fftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of an n-point transform: [0, 1, ..., -1] / (d * n)."""
    return _freq(np.fft.fftfreq(int(n), d), dtype, requires_grad, "fftfreq")


@_declare
def rfftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False):
    return _freq(np.fft.rfftfreq(int(n), d), dtype, requires_grad, "rfftfreq")


def _shift(input, dim, inverse):
    x = as_tensor_arg(input)
    nd = x._ndarray.ndim
    dims = tuple(range(nd)) if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    dims = tuple(_wrap_dim(d, nd) for d in dims)
    shifts = tuple(((x._ndarray.shape[d] + 1) // 2 if inverse else x._ndarray.shape[d] // 2) for d in dims)
    return x.roll(shifts, dims)


@_declare
def fftshift(input, dim=None):
    """The zero frequency moved to the middle (a roll by n // 2 along each dim)."""
    return _shift(input, dim, False)


@_declare
def ifftshift(input, dim=None):
    return _shift(input, dim, True)


# ---- short-time Fourier transform -----------------------------------------------------------------------
def _full_window(window, win_length, n_fft, like):
    """The window padded with zeros on both sides (centred) to ``n_fft``; ones when none is given."""
    if window is None:
        window = wrap(np.ones(win_length, dtype=_PART.get(like, like) if like.kind == "c" else like))
    elif window._ndarray.ndim != 1 or window._ndarray.shape[0] != win_length:
        raise RuntimeError(f"stft: expected a 1D window tensor of size equal to win_length={win_length}, but got "
                           f"window with size {list(window._ndarray.shape)}")
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        from .more import constant_pad_nd
        window = constant_pad_nd(window, [left, n_fft - win_length - left])
    return window


_NO_WINDOW_WARNINGS = {
    "stft": "A window was not provided. A rectangular window will be applied,which is known to cause spectral "
            "leakage. Other windows such as torch.hann_window or torch.hamming_window are recommended to reduce "
            "spectral leakage.To suppress this warning and use a rectangular window, explicitly set "
            "`window=torch.ones(n_fft, device=<device>)`.",
    "istft": "A window was not provided. A rectangular window will be applied.Please provide the same window used "
             "by stft to make the inversion lossless.To suppress this warning and use a rectangular window, "
             "explicitly set `window=torch.ones(n_fft, device=<device>)`."}


def _stft_lengths(n_fft, hop_length, win_length, window, name):
    """stft's and istft's hop and window lengths, checked; warns (once) when no window is given."""
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    win = n_fft if win_length is None else int(win_length)
    if n_fft <= 0:
        raise RuntimeError(f"{name}: expected 0 < n_fft, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"{name}: expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise RuntimeError(f"{name}: expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is None:
        from ..autograd._warn_once import warn_once
        warn_once(f"{name}_no_window", _NO_WINDOW_WARNINGS[name], stacklevel=4)
    return hop, win


def _with_batch_dim(x, batched_ndim: int):
    """``x`` with a leading batch dim (added when it has none), and whether it came with one."""
    batched = x._ndarray.ndim == batched_ndim
    return (x if batched else x.unsqueeze(0)), batched


@op()
def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None):
    """Fourier transforms of overlapping windowed frames: (batch, n_fft // 2 + 1 or n_fft, frames)."""
    x = as_tensor_arg(input)
    if x._ndarray.dtype == np.float16 or _dtype.is_bfloat16_np(x._ndarray.dtype):
        raise RuntimeError(f"MKL FFT doesn't support tensors of type: {_dtype.scalar_type_name(x._ndarray.dtype)}")
    complex_input = x._ndarray.dtype.kind == "c" or (window is not None and window._ndarray.dtype.kind == "c")
    if return_complex is None:
        if not complex_input:
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will "
                               "further require that return_complex=True in a future PyTorch release.")
        return_complex = True
    if not return_complex:
        from ..autograd._warn_once import warn_once
        warn_once("stft_return_complex_false",
                  "stft with return_complex=False is deprecated. In a future pytorch release, stft will return "
                  "complex tensors for all inputs, and return_complex=False will raise an error.\nNote: you can "
                  "still call torch.view_as_real on the complex output to recover the old return format.",
                  stacklevel=3)
    if x._ndarray.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {x._ndarray.ndim}D tensor")
    hop, win = _stft_lengths(n_fft, hop_length, win_length, window, "stft")
    x, batched = _with_batch_dim(x, 2)
    if center:
        from ..nn import functional as F
        half = n_fft // 2
        # as torch: the signals padded as one (1, batch, length) input
        x = F.pad(x.unsqueeze(0), (half, half), mode=pad_mode).squeeze(0)
    length = x._ndarray.shape[-1]
    if n_fft > length:
        raise RuntimeError(f"stft: expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    frames = x.unfold(-1, n_fft, hop)  # (batch, frames, n_fft)
    frames = frames * _full_window(window, win, n_fft, x._ndarray.dtype)
    onesided = not complex_input if onesided is None else onesided
    if onesided and complex_input:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spec = rfft(frames, norm=norm) if onesided else fft(frames, norm=norm)
    spec = spec.transpose(-1, -2)
    if not batched:
        spec = spec.squeeze(0)
    if not return_complex:
        from .complex import view_as_real
        return view_as_real(spec)
    return spec


@op()
def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """The signal whose ``stft`` is ``input``: inverse transforms of the frames, overlap-added and
    divided by the summed squared window."""
    x = as_tensor_arg(input)
    if x._ndarray.dtype.kind != "c":
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    if x._ndarray.ndim not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex, but got {x._ndarray.ndim}D")
    hop, win = _stft_lengths(n_fft, hop_length, win_length, window, "istft")
    x, batched = _with_batch_dim(x, 3)
    n_freq, n_frames = x._ndarray.shape[-2], x._ndarray.shape[-1]
    onesided = n_freq != n_fft if onesided is None else onesided
    if onesided and n_fft // 2 + 1 != n_freq:
        raise RuntimeError("istft: expected the frequency dimension (3rd to the last) of the input tensor to match "
                           f"n_fft / 2 + 1 when onesided=True, but got {n_freq}")
    if not onesided and n_freq != n_fft:
        raise RuntimeError("istft: expected the frequency dimension (3rd to the last) of the input tensor to match "
                           f"n_fft when onesided=False, but got {n_freq}")
    if onesided and return_complex:
        raise RuntimeError("cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spectra = x.transpose(-1, -2)  # (batch, frames, freq)
    if return_complex:
        frames = ifft(spectra, n=n_fft, norm=norm)
    else:
        # a real signal: as torch, from the first half of a two-sided spectrum too (Hermitian assumed)
        half = n_fft // 2 + 1
        frames = irfft(spectra if onesided else spectra.narrow(-1, 0, half), n=n_fft, norm=norm)
    w = _full_window(window, win, n_fft, frames._ndarray.dtype)
    frames = frames * w
    total = n_fft + hop * (n_frames - 1)
    positions = wrap((np.arange(n_frames)[:, None] * hop + np.arange(n_fft)[None, :]).reshape(-1))
    batch = frames._ndarray.shape[0]
    signal = wrap(np.zeros((batch, total), dtype=frames._ndarray.dtype)).index_add(
        1, positions, frames.reshape(batch, -1))
    envelope = np.zeros(total, dtype=np.abs(w._ndarray).dtype)
    np.add.at(envelope, positions._ndarray, np.abs(w._ndarray.reshape(1, -1).repeat(n_frames, 0).reshape(-1)) ** 2)
    start = n_fft // 2 if center else 0
    end = total - (n_fft // 2 if center else 0) if length is None else start + int(length)
    end = min(end, total)
    kept = envelope[start:end]
    if kept.size and np.abs(kept).min() < 1e-11:
        raise RuntimeError("istft: window overlap add min: the window's squares sum to zero somewhere in the "
                           "kept signal (no inversion there)")
    signal = signal[:, start:end] / wrap(kept.reshape(1, -1))
    if length is not None and signal._ndarray.shape[-1] < length:
        from .more import constant_pad_nd
        signal = constant_pad_nd(signal, [0, int(length) - signal._ndarray.shape[-1]])
    return signal if batched else signal.squeeze(0)


FFT_NAMES = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn",
             "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift",
             "ifftshift"]
# the transforms live in hookgrad.fft; stft and istft are hookgrad functions and Tensor methods
__all__ = module_all(globals())
