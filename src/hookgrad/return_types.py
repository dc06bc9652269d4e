"""``torch.return_types``: the named tuples that ops with several results return (``max(dim)``,
``sort``, ``linalg.svd``, ...). Each prints as torch prints it, one field per line."""
from __future__ import annotations

from collections import namedtuple

_VALUES_INDICES = ("values", "indices")
_FIELDS = {
    "aminmax": ("min", "max"), "cummax": _VALUES_INDICES, "cummin": _VALUES_INDICES,
    "frexp": ("mantissa", "exponent"), "geqrf": ("a", "tau"), "histogram": ("hist", "bin_edges"),
    "histogramdd": ("hist", "bin_edges"), "kthvalue": _VALUES_INDICES,
    "linalg_cholesky_ex": ("L", "info"), "linalg_eig": ("eigenvalues", "eigenvectors"),
    "linalg_eigh": ("eigenvalues", "eigenvectors"), "linalg_inv_ex": ("inverse", "info"),
    "linalg_ldl_factor": ("LD", "pivots"), "linalg_ldl_factor_ex": ("LD", "pivots", "info"),
    "linalg_lstsq": ("solution", "residuals", "rank", "singular_values"), "linalg_lu": ("P", "L", "U"),
    "linalg_lu_factor": ("LU", "pivots"), "linalg_lu_factor_ex": ("LU", "pivots", "info"),
    "linalg_qr": ("Q", "R"), "linalg_slogdet": ("sign", "logabsdet"), "linalg_solve_ex": ("result", "info"),
    "linalg_svd": ("U", "S", "Vh"), "lu_unpack": ("P", "L", "U"), "max": _VALUES_INDICES,
    "median": _VALUES_INDICES, "min": _VALUES_INDICES, "mode": _VALUES_INDICES, "nanmedian": _VALUES_INDICES,
    "qr": ("Q", "R"), "slogdet": ("sign", "logabsdet"), "sort": _VALUES_INDICES, "svd": ("U", "S", "V"),
    "topk": _VALUES_INDICES, "triangular_solve": ("solution", "cloned_coefficient"),
}
__all__ = ["make", *_FIELDS, *(name + "_out" for name in _FIELDS if name != "histogramdd")]


def _build(name: str, fields: tuple) -> type:
    base = namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{field}={value!r}" for field, value in zip(self._fields, self))
        return f"torch.return_types.{name}(\n{body})"
    def __reduce__(self):
        # printed as torch.return_types.X; pickled by hookgrad's own name
        return _rebuild, (name, tuple(self))
    return type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__reduce__": __reduce__,
                                "__module__": "torch.return_types"})


def _rebuild(name: str, values: tuple):
    return globals()[name](*values)


globals().update({name: _build(name, fields) for name, fields in _FIELDS.items()})
# what an out= call returns (torch.return_types.max_out, ...): the same fields under the name with "_out"
globals().update({name + "_out": _build(name + "_out", fields) for name, fields in _FIELDS.items()
                  if name != "histogramdd"})


def out_variant(cls: type) -> type:
    """The return type an out= call of ``cls``'s op returns (``cls`` itself where torch has none)."""
    return globals().get(cls.__name__ + "_out", cls)


def make(name: str, fields) -> type:
    """The return type ``name``, which must have ``fields`` (torch's); one class per name."""
    cls = globals()[name]
    if cls._fields != tuple(fields):
        raise AssertionError(f"torch.return_types.{name} has fields {cls._fields}, not {tuple(fields)}")
    return cls
