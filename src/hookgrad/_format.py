"""``repr`` of tensors in torch's style: ``tensor([1.0000, 2.5000], requires_grad=True)``."""
from __future__ import annotations

import numpy as np

_options = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    if profile == "default":
        _options.update(precision=4, threshold=1000, edgeitems=3, linewidth=80)
    elif profile == "short":
        _options.update(precision=2, threshold=1000, edgeitems=2, linewidth=80)
    elif profile == "full":
        _options.update(precision=4, threshold=float("inf"), edgeitems=3, linewidth=80)
    for key, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                       ("linewidth", linewidth)):
        if value is not None:
            _options[key] = value
    _options["sci_mode"] = sci_mode


def _float_formatter(values: np.ndarray):
    finite = values[np.isfinite(values)]
    prec = _options["precision"]
    if finite.size == 0:
        return lambda x: _nonfinite(x) or f"{x:.{prec}f}"
    absvals = np.abs(finite.astype(np.float64))
    integral = np.all(finite == np.round(finite))
    nonzero = absvals[absvals != 0]
    big, small = (nonzero.max(), nonzero.min()) if nonzero.size else (0.0, 0.0)
    sci = _options["sci_mode"]
    if sci is None:
        sci = nonzero.size > 0 and (big / small > 1000.0 or big > 1e8 or small < 1e-4)
        if integral and big <= 1e8:
            sci = False
    if sci:
        return lambda x: _nonfinite(x) or f"{x:.{prec}e}"
    # as torch, the width is that of the nonzero values (a -0.0 does not widen the column)
    measured = finite[finite != 0] if nonzero.size else finite[:0]
    if integral:
        width = max((len(f"{v:.0f}") + 1 for v in measured), default=1)
        return lambda x: (_nonfinite(x) or f"{x:.0f}.").rjust(width)
    width = max((len(f"{v:.{prec}f}") for v in measured), default=1)
    return lambda x: (_nonfinite(x) or f"{x:.{prec}f}").rjust(width)


def _complex_formatter(values: np.ndarray):
    """torch's style for complex values: the real and the imaginary parts each get their own float
    format (chosen from all real parts, all imaginary parts), joined as ``re+imj``."""
    real_fmt, imag_fmt = _float_formatter(values.real), _float_formatter(values.imag)

    def fmt(z):
        imag = (imag_fmt(z.imag) + "j").lstrip()
        return real_fmt(z.real) + (imag if imag[0] in "+-" else "+" + imag)
    return fmt


def _nonfinite(x):
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    return None


def format_array(values: np.ndarray, indent: int) -> str:
    if values.dtype.kind == "b":
        fmt = lambda x: "True" if x else "False"  # noqa: E731
        width = 5 if values.size and not values.all() else 4
        formatter = lambda x: fmt(x).rjust(width)  # noqa: E731
    elif values.dtype.kind in "iu":
        width = max((len(str(v)) for v in values.flat), default=1)
        formatter = lambda x: str(x).rjust(width)  # noqa: E731
    elif values.dtype.kind == "c":
        formatter = _complex_formatter(values)
    else:
        formatter = _float_formatter(values)
    summarize = values.size > _options["threshold"]
    return np.array2string(values, separator=", ", prefix=" " * indent,
                           formatter={"all": formatter}, max_line_width=_options["linewidth"],
                           threshold=_options["threshold"] if summarize else values.size + 1,
                           edgeitems=_options["edgeitems"])


def format_tensor(t) -> str:
    from ._dtype import get_default_dtype, widen
    data = widen(t._data)  # bfloat16 prints from its exact float32 values
    prefix = "tensor("
    extras = []
    if data.size == 0 and data.ndim > 0 and data.shape != (0,):
        body = "[]"
        extras.append(f"size={tuple(data.shape)}")
    else:
        body = format_array(data, len(prefix))
    dt = t.dtype
    default_int = dt.name == "int64"
    default_complex = dt is get_default_dtype().to_complex()
    if not (dt is get_default_dtype() or default_int or default_complex or dt.name == "bool"):
        extras.append(f"dtype={dt}")
    fn = t.grad_fn
    if fn is not None:
        extras.append(f"grad_fn=<{fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    if type(t).__name__ == "Parameter":
        return "Parameter containing:\n" + prefix + body + "".join(", " + e for e in extras) + ")"
    return prefix + body + "".join(", " + e for e in extras) + ")"
