"""``repr`` of tensors, character for character as torch prints them.

torch's rules: one formatter per tensor decides integer/scientific mode and a common width from
the nonzero finite values (of the summarized tensor when it has more elements than ``threshold``);
rows are broken to fit ``linewidth``; a summarized dimension shows ``edgeitems`` at each end around
``...``; suffixes (dtype, grad_fn, ...) move to their own line when the last line would overflow."""
from __future__ import annotations

import math

import numpy as np

from ._late import LateNames

_above = LateNames(tangent_of="hookgrad.autograd._dual")

_options = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}
_PROFILES = {"default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
             "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
             "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    if profile is not None:
        _options.update(_PROFILES.get(profile, {}))
    for key, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                       ("linewidth", linewidth)):
        if value is not None:
            _options[key] = value
    _options["sci_mode"] = sci_mode


def get_printoptions() -> dict:
    return dict(_options)


class _Formatter:
    """The common width and mode of one tensor's elements (or of the real or imaginary parts)."""

    def __init__(self, values: np.ndarray, zero=None):
        self.floating = values.dtype.kind == "f"
        self.int_mode, self.sci_mode, self.max_width = True, False, 1
        precision = _options["precision"]
        if not self.floating:
            self.max_width = max((len(str(v)) for v in values.reshape(-1).tolist()), default=1)
            return
        flat = values.reshape(-1).astype(np.float64)
        if zero is None:
            nonzero = flat[np.isfinite(flat) & (flat != 0)]
        else:  # float8_e8m0fnu: torch's isfinite passes its NaN, and its "zero" is 2**-127
            nonzero = flat[flat != zero]
        if nonzero.size == 0:
            return
        magnitudes = np.abs(nonzero)
        smallest, largest = magnitudes.min(), magnitudes.max()
        self.int_mode = bool(np.all(nonzero == np.ceil(nonzero)))
        chosen = _options["sci_mode"]
        self.sci_mode = (largest / smallest > 1000.0 or largest > 1.0e8 or smallest < 1.0e-4) if chosen is None \
            else chosen
        if self.sci_mode:
            pattern, extra = f"{{:.{precision}e}}", 0
        elif self.int_mode:
            pattern, extra = "{:.0f}", 1  # room for the trailing "."
        else:
            pattern, extra = f"{{:.{precision}f}}", 0
        self.max_width = max(len(pattern.format(v)) for v in nonzero.tolist()) + extra

    def format(self, value) -> str:
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:{self.max_width}.{_options['precision']}e}"
        elif self.int_mode:
            text = f"{value:.0f}" + ("" if math.isinf(value) or math.isnan(value) else ".")
        else:
            text = f"{value:.{_options['precision']}f}"
        return text.rjust(self.max_width)


def _summarized(values: np.ndarray) -> np.ndarray:
    """The elements a summarized print shows: ``edgeitems`` at each end of every dimension."""
    edge = _options["edgeitems"]
    if values.ndim == 0:
        return values
    if values.ndim > 1 and not edge:
        return values[(slice(0, 0),) * values.ndim]
    if values.shape[0] > 2 * edge:
        values = np.concatenate([values[:edge], values[values.shape[0] - edge:]])
    if values.ndim == 1:
        return values
    return np.stack([_summarized(row) for row in values]) if len(values) else values


class _ElementText:
    """Formats one element: real, or complex as ``real+imagj`` with a formatter per part."""

    def __init__(self, values: np.ndarray, summarize: bool, zero=None):
        shown = _summarized(values) if summarize else values
        if values.dtype.kind == "c":
            self.real, self.imag = _Formatter(shown.real), _Formatter(shown.imag)
            self.width = self.real.max_width + 2 + self.imag.max_width + 1
        else:
            self.real, self.imag = _Formatter(shown, zero), None
            self.width = self.real.max_width + 2

    def __call__(self, value) -> str:
        if self.imag is None:
            return self.real.format(value)
        real = self.real.format(value.real)
        imag = (self.imag.format(value.imag) + "j").lstrip()
        return real + imag if imag[0] in "+-" else real + "+" + imag


def _vector(values: np.ndarray, indent: int, summarize: bool, text: _ElementText) -> str:
    edge = _options["edgeitems"]
    per_line = max(1, math.floor((_options["linewidth"] - indent) / text.width))
    if summarize and not edge:
        items = ["..."]
    elif summarize and values.shape[0] > 2 * edge:
        items = ([text(v) for v in values[:edge].tolist()] + [" ..."]
                 + [text(v) for v in values[values.shape[0] - edge:].tolist()])
    else:
        items = [text(v) for v in values.tolist()]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(values: np.ndarray, indent: int, summarize: bool, text: _ElementText) -> str:
    if values.ndim == 0:
        return text(values.item())
    if values.ndim == 1:
        return _vector(values, indent, summarize, text)
    edge, n = _options["edgeitems"], values.shape[0]
    if summarize and n > 2 * edge:
        rows = ([_nested(values[i], indent + 1, summarize, text) for i in range(edge)] + ["..."]
                + [_nested(values[i], indent + 1, summarize, text) for i in range(n - edge, n)])
    else:
        rows = [_nested(values[i], indent + 1, summarize, text) for i in range(n)]
    return "[" + ("," + "\n" * (values.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def format_array(values: np.ndarray, indent: int, zero=None) -> str:
    """The bracketed body of a tensor print (``[]`` when empty). ``zero``: for float8_e8m0fnu, the
    value that the choice of mode and width skips as torch skips zeros and non-finite values there
    (its smallest value, which is what 0 converts to; its NaN counts as finite, as in torch)."""
    if values.size == 0:
        return "[]"
    summarize = values.size > _options["threshold"]
    return _nested(values, indent, summarize, _ElementText(values, summarize, zero))


def _with_suffixes(body: str, suffixes: list, indent: int) -> str:
    parts = [body]
    last_line = len(body) - body.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > _options["linewidth"]:
            parts.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line += len(suffix) + 2
    return "".join(parts) + ")"


def format_tensor(t) -> str:
    from ._dtype import get_default_dtype, printed_values
    from ._meta import MetaArray
    meta = isinstance(t._ndarray, MetaArray)
    data = t._ndarray if meta else printed_values(t._ndarray)  # bfloat16 and float8 print from their exact float32 values
    plain = type(t).__name__ in ("Tensor", "Parameter")
    prefix = "tensor(" if plain else f"{type(t).__name__}("
    indent = len(prefix)
    dt, default = t.dtype, get_default_dtype()
    suffixes = []
    if meta:   # no values to print: torch shows the device, the size and any dtype but the default
        suffixes += ["device='meta'", f"size={tuple(data.shape)}"] + ([f"dtype={dt}"] if dt is not default else [])
        body = "..."
    elif data.size == 0:
        if data.ndim != 1:
            suffixes.append(f"size={tuple(data.shape)}")
        if dt is not default:
            suffixes.append(f"dtype={dt}")
        body = "[]"
    else:
        if not _options["edgeitems"]:
            suffixes.append(f"size={tuple(data.shape)}")
        default_complex = "complex128" if default.name == "float64" else "complex64"
        if not (dt is default or dt.name in ("int64", "bool", default_complex)):
            suffixes.append(f"dtype={dt}")
        body = format_array(data, indent, zero=2.0 ** -127 if dt.name == "float8_e8m0fnu" else None)
    try:
        fn = t.grad_fn
        fn_name = None if fn is None else fn.name().rsplit('::', 1)[-1]
    except RuntimeError:  # a view made and modified in place under no_grad: torch prints it this way
        fn_name = "Invalid"
    if fn_name is not None:
        suffixes.append(f"grad_fn=<{fn_name}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    tangent = _above.tangent_of(t)
    if tangent is not None:  # a dual tensor (forward AD)
        suffixes.append(f"tangent={format_tensor(tangent)}")
    text = _with_suffixes(prefix + body, suffixes, indent)
    if type(t).__name__ == "Parameter":
        return "Parameter containing:\n" + text
    return text
