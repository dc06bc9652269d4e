"""Dtype groups of ``torch.testing._internal.common_dtype``: tuples of hookgrad dtypes, each ``*_and``
form with extra dtypes appended."""
from ... import _dtype as _d


def _group(*names):
    return tuple(getattr(_d, name) for name in names)


def _and_extra(group):
    """The ``*_and`` form of a dtype group: the group with the given dtypes appended."""
    def group_and(*dtypes):
        return group() + dtypes
    group_and.__name__ = group_and.__qualname__ = f"{group.__name__}_and"
    return group_and


def floating_types():
    return _group("float32", "float64")


floating_types_and = _and_extra(floating_types)


def integral_types():
    return _group("uint8", "int8", "int16", "int32", "int64")


integral_types_and = _and_extra(integral_types)


def all_types():
    return floating_types() + integral_types()


all_types_and = _and_extra(all_types)


def complex_types():
    return _group("complex64", "complex128")


complex_types_and = _and_extra(complex_types)


def floating_and_complex_types():
    return floating_types() + complex_types()


floating_and_complex_types_and = _and_extra(floating_and_complex_types)


def all_types_and_complex():
    return all_types() + complex_types()


all_types_and_complex_and = _and_extra(all_types_and_complex)


def get_all_int_dtypes() -> list:
    return list(_group("uint8", "int8", "int16", "int32", "int64"))


def get_all_fp_dtypes(include_half=True, include_bfloat16=True) -> list:
    dtypes = list(_group("float32", "float64"))
    if include_half:
        dtypes.append(_d.float16)
    if include_bfloat16:
        dtypes.append(_d.bfloat16)
    return dtypes


def get_all_complex_dtypes(include_complex32=False) -> list:
    return ([_d.complex32] if include_complex32 else []) + list(_group("complex64", "complex128"))


def get_all_math_dtypes(device) -> list:
    """The integer, floating (half only on CUDA) and complex dtypes, as torch lists them."""
    return get_all_int_dtypes() + get_all_fp_dtypes(include_half=device.startswith("cuda"),
                                                    include_bfloat16=False) + get_all_complex_dtypes()
