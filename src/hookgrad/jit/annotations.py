"""``torch.jit.annotations``: the typing names TorchScript's annotations use, and the checks on them
(hookgrad compiles nothing; code imports these for its own type hints)."""
import typing
from typing import Any, Dict, List, Optional, Tuple, Union  # noqa: F401

from ..futures import Future  # noqa: F401


def _bare(ann, name: str) -> None:
    if ann is getattr(typing, name):
        if name == "Dict":
            raise RuntimeError("Attempted to use Dict without contained types. Please add contained type, e.g. "
                               "Dict[int, int]")
        raise RuntimeError(f"Attempted to use {name} without a contained type. Please add a contained type, e.g. "
                           f"{name}[int]")


def is_tuple(ann) -> bool:
    _bare(ann, "Tuple")
    return typing.get_origin(ann) is tuple


def is_list(ann) -> bool:
    _bare(ann, "List")
    return typing.get_origin(ann) is list


def is_dict(ann) -> bool:
    _bare(ann, "Dict")
    return typing.get_origin(ann) is dict


def is_union(ann) -> bool:
    import types
    _bare(ann, "Union")
    return typing.get_origin(ann) in (Union, types.UnionType)


def is_optional(ann) -> bool:
    _bare(ann, "Optional")
    return is_union(ann) and type(None) in typing.get_args(ann)
