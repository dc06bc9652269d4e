"""The helper names torch.nn.functional exposes for TorchScript and ``__torch_function__``
dispatch: argument checks, boolean dispatch, and the broadcasting-list type markers."""
from __future__ import annotations

from ...overrides import (handle_torch_function, has_torch_function, has_torch_function_unary,  # noqa: F401
                          has_torch_function_variadic)

__all__ = ["BroadcastingList1", "BroadcastingList2", "BroadcastingList3", "assert_int_or_pair", "boolean_dispatch",
           "handle_torch_function", "has_torch_function", "has_torch_function_unary", "has_torch_function_variadic"]

boolean_dispatched = {}


class BroadcastingListCls:
    """A type marker (``BroadcastingList2[int]``): an int, or a list of that many ints."""

    def __getitem__(self, types):
        return None


BroadcastingList1 = BroadcastingListCls()
BroadcastingList2 = BroadcastingListCls()
BroadcastingList3 = BroadcastingListCls()


def assert_int_or_pair(arg, arg_name, message):
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))


def boolean_dispatch(arg_name, arg_index, default, if_true, if_false, module_name, func_name):
    """A function that calls ``if_true`` or ``if_false`` by the boolean argument ``arg_name`` (at
    position ``arg_index``, ``default`` when not given); it carries the one docstring of the two."""
    def fn(*args, **kwargs):
        flag = kwargs[arg_name] if arg_name in kwargs else args[arg_index] if arg_index < len(args) else default
        return if_true(*args, **kwargs) if flag else if_false(*args, **kwargs)

    docs = [f.__doc__ for f in (if_true, if_false) if f.__doc__ is not None]
    if len(docs) == 2:
        raise RuntimeError("only one function can have a docstring")
    fn.__doc__ = docs[0] if docs else None
    if_true.__doc__ = if_false.__doc__ = fn.__doc__
    if module_name is not None:
        fn.__module__ = module_name
    if func_name is not None:
        fn.__name__ = func_name
    boolean_dispatched[fn] = {"if_true": if_true, "if_false": if_false, "index": arg_index, "default": default,
                              "arg_name": arg_name}
    return fn
