"""``torch.utils.data._utils.collate``: the collate functions, at the path torch has them."""
from .._collate import (collate, collate_float_fn, collate_int_fn, collate_numpy_array_fn,  # noqa: F401
                        collate_numpy_scalar_fn, collate_tensor_fn, default_collate, default_collate_fn_map,
                        default_convert)

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map"]
