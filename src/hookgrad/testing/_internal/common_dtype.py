"""Dtype groups of ``torch.testing._internal.common_dtype``: tuples of hookgrad dtypes, each ``*_and``
form with extra dtypes appended."""
from ... import _dtype as _d


def _group(*names):
    return tuple(getattr(_d, name) for name in names)


def floating_types():
    return _group("float32", "float64")


def floating_types_and(*dtypes):
    return floating_types() + dtypes


def integral_types():
    return _group("uint8", "int8", "int16", "int32", "int64")


def integral_types_and(*dtypes):
    return integral_types() + dtypes


def all_types():
    return floating_types() + integral_types()


def all_types_and(*dtypes):
    return all_types() + dtypes


def complex_types():
    return _group("complex64", "complex128")


def complex_types_and(*dtypes):
    return complex_types() + dtypes


def floating_and_complex_types():
    return floating_types() + complex_types()


def floating_and_complex_types_and(*dtypes):
    return floating_and_complex_types() + dtypes


def all_types_and_complex():
    return all_types() + complex_types()


def all_types_and_complex_and(*dtypes):
    return all_types_and_complex() + dtypes
