"""The DataPipe base classes: ``IterDataPipe`` (an iterable-style dataset) and ``MapDataPipe`` (a
map-style one), whose functional forms (``dp.map(fn)``, ``dp.batch(4)``...) are the DataPipe
classes registered under those names; and ``DataChunk``, the list a batching pipe yields."""
from __future__ import annotations

import functools
from typing import TypeVar

from ..dataset import Dataset, IterableDataset

__all__ = ["DataChunk", "DFIterDataPipe", "IterDataPipe", "MapDataPipe"]

_T = TypeVar("_T")
_T_co = TypeVar("_T_co", covariant=True)


class DataChunk(list):
    """A batch of items (a list) as batching pipes yield it."""

    def __init__(self, items):
        items = list(items)
        super().__init__(items)
        self.items = items

    def as_str(self, indent: str = "") -> str:
        return indent + "[" + ", ".join(str(i) for i in iter(self)) + "]"

    def __iter__(self):
        yield from super().__iter__()

    def raw_iterator(self):
        yield from self.items


class _Functional:
    """What both pipe kinds share: a registry of functional forms and their lookup."""

    functions: dict = {}
    repr_hook = None
    str_hook = None

    @classmethod
    def _pipe_base(cls):
        raise NotImplementedError

    def __getattr__(self, attribute_name):
        functions = type(self)._pipe_base().functions
        if attribute_name in functions:
            bound = functools.partial(functions[attribute_name], self)
            functools.update_wrapper(wrapper=bound, wrapped=functions[attribute_name], assigned=("__doc__",))
            return bound
        raise AttributeError(f"'{self.__class__.__name__}' object has no attribute '{attribute_name}")

    @classmethod
    def register_function(cls, function_name, function) -> None:
        cls.functions[function_name] = function

    @classmethod
    def register_datapipe_as_function(cls, function_name, cls_to_register, enable_df_api_tracing=False) -> None:
        if function_name in cls.functions:
            raise Exception(f"Unable to add DataPipe function name {function_name} as it is already taken")

        def make(source_dp, *args, **kwargs):
            return cls_to_register(source_dp, *args, **kwargs)
        functools.update_wrapper(wrapper=make, wrapped=cls_to_register, assigned=("__doc__",))
        cls.functions[function_name] = make

    def __repr__(self) -> str:
        if self.repr_hook is not None:
            return self.repr_hook(self)
        return str(self.__class__.__qualname__)

    def __str__(self) -> str:
        if self.str_hook is not None:
            return self.str_hook(self)
        return str(self.__class__.__qualname__)

    def __dir__(self):
        return list(super().__dir__()) + list(type(self)._pipe_base().functions.keys())


class IterDataPipe(_Functional, IterableDataset[_T_co]):
    """An iterable-style DataPipe: subclasses implement ``__iter__``."""

    functions: dict = {}

    @classmethod
    def _pipe_base(cls):
        return IterDataPipe

    def reset(self) -> None:
        """Bring the pipe back to its initial state (nothing to do by default)."""


class DFIterDataPipe(IterDataPipe):
    """An IterDataPipe of DataFrames."""

    def _is_dfpipe(self) -> bool:
        return True


class MapDataPipe(_Functional, Dataset[_T_co]):
    """A map-style DataPipe: subclasses implement ``__getitem__`` (and usually ``__len__``)."""

    functions: dict = {}

    @classmethod
    def _pipe_base(cls):
        return MapDataPipe

    @classmethod
    def register_datapipe_as_function(cls, function_name, cls_to_register) -> None:
        super().register_datapipe_as_function(function_name, cls_to_register)
