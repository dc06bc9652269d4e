"""torch's argument handling at the entry of the public API (``torch.*``, ``nn.functional`` and
the Tensor methods): tensor-argument checks and torch's keyword forms.

torch's argument parser rejects a NumPy array, a list or None where a function takes a Tensor,
with a TypeError naming the function, the argument and the type it got::

    linear(): argument 'input' (position 1) must be Tensor, not numpy.ndarray
    expected Tensor as element 1 in argument 0, but got numpy.ndarray

hookgrad's kernels read ``._ndarray`` and would otherwise leak an AttributeError, or silently accept
an array. ``guard_namespace`` wraps every public function of a namespace once, at import: which
parameters must be tensors follows from their names (hookgrad's functions use torch's names or
the short ``x``/``a``/``b``), with a small table for the functions whose torch argument names
differ. A few functions of ``torch.nn.functional`` are written in Python in torch as
``input.<method>(...)``; for those torch raises AttributeError, and so do we.

The same wrappers accept torch's keyword forms of the arguments: torch's names where hookgrad's
differ (``input=``, ``other=``, ``mat2=``) and a variadic size passed as a keyword
(``ones(size=(2, 3))``, ``x.view(size=...)``, ``x.permute(dims=...)``). ``accept_keyword_forms``
does both for Tensor's methods (an in-place method takes the checks of its out-of-place form).
"""
from __future__ import annotations

import functools
import inspect
import numbers
import os

import numpy as np

from . import _autocast, _deprecated_overloads, _dtype, _out
from ._C import _torch_function
from ._ops._base import FP_IGNORE, fp_quiet, fp_restore
from ._tensor import Tensor

TENSOR, OPTIONAL, OR_NUMBER, SEQUENCE = "Tensor", "Tensor or None", "Tensor or Number", "tuple of Tensors"
_NUMBERS = (numbers.Number, np.bool_)
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

# parameter name -> (kind, torch's name for it); the first positional parameter is the input
_FIRST = {"x": "input", "a": "input", "t": "input", "input": "input", "bias": "input",
          "condition": "condition", "input1": "input1", "x1": "x1", "tensor": "input", "query": "query"}
_BY_NAME = {
    "b": (OR_NUMBER, "other"), "y": (OR_NUMBER, "other"), "other": (OR_NUMBER, "other"),
    "target": (TENSOR, "target"), "weight": (TENSOR, "weight"), "index": (TENSOR, "index"),
    "mask": (TENSOR, "mask"), "source": (TENSOR, "source"), "indices": (TENSOR, "indices"),
    "mat": (TENSOR, "mat"), "vec": (TENSOR, "vec"), "v": (TENSOR, "vec"), "t1": (TENSOR, "tensor1"),
    "t2": (TENSOR, "tensor2"), "x2": (TENSOR, "x2"), "input2": (TENSOR, "input2"),
    "query": (TENSOR, "query"), "key": (TENSOR, "key"), "src": (OR_NUMBER, "src"),
    "bias": (OPTIONAL, "bias"), "running_mean": (OPTIONAL, "running_mean"), "running_var": (OPTIONAL, "running_var"),
    "tensors": (SEQUENCE, "tensors"),
}
# torch's own name of a function (the aten op that reports the error) and of its arguments where
# they differ from what the rules above give
_TORCH_NAMES = {"cross_entropy": "cross_entropy_loss", "nll_loss": "nll_loss_nd", "clip": "clamp",
                "concat": "cat", "concatenate": "cat", "rdiv": "div", "true_divide": "div"}
_ARG_OVERRIDES = {
    "vander": {"x": (TENSOR, "x")}, "ormqr": {"tau": (TENSOR, "input2"), "other": (TENSOR, "input3")},
    "mm": {"b": (TENSOR, "mat2")}, "bmm": {"b": (TENSOR, "mat2")}, "matmul": {"b": (TENSOR, "other")},
    "logical_and": {"b": (TENSOR, "other")}, "logical_or": {"b": (TENSOR, "other")},
    "logical_xor": {"b": (TENSOR, "other")},
    "dot": {"b": (TENSOR, "tensor")}, "vdot": {"b": (TENSOR, "other")}, "inner": {"b": (TENSOR, "other")},
    "outer": {"b": (TENSOR, "vec2")}, "ger": {"b": (TENSOR, "vec2")}, "tensordot": {"b": (TENSOR, "b")},
    "addmm": {"a": (TENSOR, "mat1"), "b": (TENSOR, "mat2")}, "baddbmm": {"a": (TENSOR, "batch1"),
                                                                    "b": (TENSOR, "batch2")},
    "lerp": {"start": (TENSOR, "input"), "end": (TENSOR, "end"), "weight": (OR_NUMBER, "weight")}, "view_as": {"other": (TENSOR, "other")},
    "scaled_dot_product_attention": {"value": (TENSOR, "value"), "attn_mask": (OPTIONAL, "attn_mask")},
    "embedding": {"input": (TENSOR, "indices", 1), "weight": (TENSOR, "weight", 0)},  # aten's order
    "equal": {"b": (TENSOR, "other")}, "allclose": {"b": (TENSOR, "other")}, "isclose": {"b": (TENSOR, "other")},
    "index_put": {"indices": None}, "index_put_": {"indices": None}, "select": {"index": None},
    "copy_": {"src": (TENSOR, "other")}, "movedim": {"source": None}, "moveaxis": {"source": None}, "expand_as": {"other": (TENSOR, "other")},
    "reshape_as": {"other": (TENSOR, "other")}, "type_as": {"other": (TENSOR, "other")}, "where": {"input": (OR_NUMBER, "input")}, "masked_fill": {"value": None}, "take_along_dim": {"indices": (TENSOR, "indices")},
    "select_scatter": {"index": None},
    "resize_as_": {"the_template": (TENSOR, "the_template")}, "map2_": {"x": (TENSOR, "x"), "y": (TENSOR, "y")},
    "bucketize": {"input": (OR_NUMBER, "input")},
    "batch_norm": {"weight": (OPTIONAL, "weight")}, "instance_norm": {"weight": (OPTIONAL, "weight")},
    "set_": {"source": None}, "native_batch_norm": {"weight": (OPTIONAL, "weight")},
    "native_layer_norm": {"weight": (OPTIONAL, "weight")}, "native_group_norm": {"weight": (OPTIONAL, "weight")},
    "pow": {"b": (OR_NUMBER, "exponent")}, "float_power": {"b": (OR_NUMBER, "exponent")},
    "cholesky_solve": {"b": (TENSOR, "input"), "L": (TENSOR, "input2")},
}
# torch accepts a Python number as the first argument of these (add ... floor_divide: its parser lets a
# number stand for any of their tensors, as a wrapped number: ``torch.div(1.0, t)``)
_FIRST_MAY_BE_NUMBER = {"pow", "remainder", "float_power", "xlogy", "bitwise_and", "bitwise_or", "bitwise_xor",
                        "bitwise_left_shift", "bitwise_right_shift", "result_type",
                        "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide"}
# torch.nn.functional implements these in Python as ``input.<method>()``: a non-tensor raises AttributeError
FUNCTIONAL_VIA_METHOD = {"softmax": "softmax", "log_softmax": "log_softmax", "softmin": "softmin", "sigmoid": "sigmoid",
              "tanh": "tanh", "softsign": "softsign", "tanhshrink": "tanhshrink", "normalize": "norm",
              "group_norm": "dim"}


_HEAP_TYPE = 1 << 9   # Py_TPFLAGS_HEAPTYPE: a class made by a class statement


def type_name(value) -> str:
    """The name torch's argument errors give ``value``'s type: CPython's ``tp_name``, which is the
    bare name for a class statement's class (Tensor, Parameter, a user's class) and
    ``module.name`` for a C type (``torch.Size``, ``numpy.ndarray``), the bare name for builtins."""
    cls = type(value)
    module = cls.__module__
    if module == "builtins" or isinstance(value, Tensor):
        return cls.__qualname__
    if cls.__flags__ & _HEAP_TYPE and not module.startswith(("torch", "hookgrad")):
        return cls.__name__
    return f"{module}.{cls.__qualname__}"


_PYTHON_TYPES_AS_DTYPES = (float, int, bool, complex)
# Tensor.type(dtype="torch.IntTensor") takes a tensor type's name, as torch's does
_DTYPE_NAMES_ALLOWED = frozenset({"type"})


def check_dtype_argument(fn_name: str, value) -> None:
    """torch's TypeError for a ``dtype=`` that is neither a dtype nor one of Python's number types
    (a dtype's name or a NumPy dtype: hookgrad's internals take those, torch's API does not)."""
    if value is None or isinstance(value, _dtype.dtype) or any(value is t for t in _PYTHON_TYPES_AS_DTYPES):
        return
    if type(value).__module__ == "torch" and type(value).__name__ == "dtype":   # code mixing the two
        return
    raise TypeError(f"{fn_name}(): argument 'dtype' must be torch.dtype, not {type_name(value)}")


def _checks_for(name: str, fn):
    """[(position, parameter name, kind, torch's argument name and position, None allowed)] for
    ``fn``'s tensor parameters."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return []
    overrides = _ARG_OVERRIDES.get(name, {})
    checks = []
    for pos, p in enumerate(params):
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            break
        if p.name in overrides:
            rule = overrides[p.name]
        elif pos == 0 and p.name in _FIRST:
            rule = (OR_NUMBER if name in _FIRST_MAY_BE_NUMBER else TENSOR, _FIRST[p.name])
        elif (pos > 0 or p.name == "tensors") and p.name in _BY_NAME:
            rule = _BY_NAME[p.name]
        else:
            rule = None
        if rule is None:
            continue
        kind, torch_arg, torch_pos = (*rule, pos) if len(rule) == 2 else rule
        if p.default is None and kind == TENSOR:
            kind = OPTIONAL
        checks.append((pos, p.name, kind, torch_arg, torch_pos, p.default is None))
    return checks


def _fails(kind: str, value, none_ok: bool) -> bool:
    if isinstance(value, Tensor):
        return False
    if value is None and (none_ok or kind == OPTIONAL):
        return False
    if kind == OR_NUMBER and isinstance(value, _NUMBERS):
        return False
    return True


class TensorLikeArgument(TypeError):
    """Raised by the checks for a non-Tensor argument whose class has a ``__torch_function__``: the
    checking wrapper then hands the call to the overrides instead of refusing it."""


def _refuse_tensor_like(value) -> None:
    if _torch_function.overloaded_args((value,)) and _torch_function.state() == _torch_function.ENABLED:
        _torch_function.install_tensor_entry_points()
        raise TensorLikeArgument(f"a tensor-like {type_name(value)} reached a check outside a public function")


def check_sequence(fn_name: str, value, position: int = 0, arg: str = "tensors") -> None:
    """A sequence of tensors, as torch checks the ``tensors`` of cat/stack/...: raises TypeError."""
    if isinstance(value, (list, tuple)) and not all(isinstance(item, Tensor) for item in value):
        _refuse_tensor_like(value)
    elif not isinstance(value, Tensor):
        _refuse_tensor_like(value)
    if isinstance(value, Tensor) or not isinstance(value, (list, tuple)):
        raise TypeError(f"{fn_name}(): argument '{arg}' (position {position + 1}) must be tuple of Tensors, "
                        f"not {type_name(value)}")
    for i, item in enumerate(value):
        if not isinstance(item, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument {position}, but got {type_name(item)}")


def _raise(torch_name: str, pos: int, torch_arg: str, via_method: str | None, value):
    _refuse_tensor_like(value)
    if via_method is not None and pos == 0:
        raise AttributeError(f"'{type_name(value)}' object has no attribute '{via_method}'")
    raise TypeError(f"{torch_name}(): argument '{torch_arg}' (position {pos + 1}) must be Tensor, "
                    f"not {type_name(value)}")


# torch's keyword names for a variadic size/shape/dims parameter, by hookgrad's name for it
_VARIADIC_KEYWORDS = {"size": ("size",), "shape": ("shape", "size"), "sizes": ("size", "sizes", "repeats"),
                      "dims": ("dims",)}


# torch's keyword names for parameters hookgrad names differently
_TORCH_KEYWORDS = {"split_size_or_sections": ("split_size",)}
# NumPy's names that torch's argument parser takes for these parameters of every built-in function and
# method (``x.sum(axis=0, keepdims=True)``); what torch writes in Python (F.softmax, Tensor.norm) does not
NUMPY_KEYWORDS = {"axis": "dim", "keepdims": "keepdim"}
PYTHON_LEVEL_IN_TORCH = frozenset({"norm", "split", "unique", "unique_consecutive", "unflatten"})


class _KeywordPlan:
    """How to turn torch's keyword forms into the call ``fn`` expects: torch's argument names
    (``input=``, ``other=``, ``mat2=``, ...) become hookgrad's, and a variadic size given as a
    keyword (``ones(size=(2, 3))``, ``x.view(size=...)``, ``x.permute(dims=...)``) becomes positional."""

    def __init__(self, name, fn, checks, numpy_names=True, takes_out=False):
        params = list(inspect.signature(fn).parameters.values())
        own = {p.name for p in params}
        # the keywords a call may use (None: any, ``fn`` takes **kwargs)
        self.known = None if any(p.kind == p.VAR_KEYWORD for p in params) else own | ({"out"} if takes_out else set())
        python_level = name in PYTHON_LEVEL_IN_TORCH and numpy_names != "always"
        self.numpy = {} if not numpy_names or python_level else {
            alias: param for alias, param in NUMPY_KEYWORDS.items() if param in own and alias not in own}
        self.positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        # hookgrad's own code may name a dtype ('float32') or give NumPy's; torch's callers may not
        self.dtype_checked = "dtype" in own and name not in _DTYPE_NAMES_ALLOWED
        self.renames = {torch_arg: param for _, param, _, torch_arg, _, _ in checks if torch_arg != param}
        for p in params:
            for alias in _TORCH_KEYWORDS.get(p.name, ()):
                self.renames[alias] = p.name
        self.leading, self.variadic = [], None
        for p in params:
            if p.kind == p.VAR_POSITIONAL:
                self.variadic = _VARIADIC_KEYWORDS.get(p.name)  # None for a generic *args
                break
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                break
            self.leading.append(p.name)
        if self.variadic is None:
            self.leading = []
        self.name = name
        self.arange = name == "arange"  # torch.arange(end=5) counts from 0

    @property
    def torch_forms(self) -> bool:
        """Whether torch's own keyword forms need translating (beyond NumPy's names)."""
        return bool(self.renames or self.variadic or self.arange)

    def __bool__(self):
        return self.torch_forms or bool(self.numpy) or self.dtype_checked

    def _refuse_unknown_keywords(self, kwargs):
        """A call with NumPy's names and a keyword nobody takes: torch's parser names the first
        keyword that is not a parameter's own name, a NumPy name included."""
        if self.known is None or all(k in self.known or k in self.numpy for k in kwargs):
            return
        first = next(k for k in kwargs if k not in self.known)
        raise TypeError(f"{self.name}() got an unexpected keyword argument '{first}'")

    def apply(self, args, kwargs):
        if self.dtype_checked and "dtype" in kwargs:
            check_dtype_argument(self.name, kwargs["dtype"])
        if self.numpy and not self.numpy.keys().isdisjoint(kwargs):
            self._refuse_unknown_keywords(kwargs)
            for alias, param in self.numpy.items():
                if alias in kwargs:
                    if param in kwargs or (param in self.positional and self.positional.index(param) < len(args)):
                        # torch's parser then reads the NumPy name as an unknown keyword
                        raise TypeError(f"{self.name}() got an unexpected keyword argument '{alias}'")
                    kwargs[param] = kwargs.pop(alias)
        for torch_arg, param in self.renames.items():
            if torch_arg in kwargs and param not in kwargs:
                kwargs[param] = kwargs.pop(torch_arg)
        if self.variadic is not None and len(args) <= len(self.leading):
            keyword = next((k for k in self.variadic if k in kwargs), None)
            if keyword is not None:
                args = list(args)
                for param in self.leading[len(args):]:
                    if param not in kwargs:
                        raise TypeError(f"missing required argument '{param}'")
                    args.append(kwargs.pop(param))
                value = kwargs.pop(keyword)
                if not isinstance(value, (tuple, list)) and not type(value).__name__ == "Size":
                    raise TypeError(f"{self.name}(): argument '{keyword}' must be tuple of ints, not "
                                    f"{type_name(value)}")
                args.extend(value)
                args = tuple(args)
        if self.arange and not args and "end" in kwargs and "start" not in kwargs:
            args = (0,)
        return args, kwargs


def checked(fn, name: str | None = None, via_method: str | None = None, numpy_names: bool = True):
    """``fn`` with torch's checks of its tensor arguments in front and torch's keyword forms
    accepted (``fn`` itself when it needs neither).
    ``via_method``: torch calls ``input.<via_method>()``, so a non-tensor input raises AttributeError.
    ``numpy_names``: whether ``axis=``/``keepdims=`` stand for ``dim=``/``keepdim=`` (torch's built-ins)."""
    name = name or fn.__name__
    checks = _checks_for(name, fn)
    takes_out = name in _out.OUT_NAMES and "out" not in inspect.signature(fn).parameters
    plan = _KeywordPlan(name, fn, checks, numpy_names, takes_out)
    torch_name = _TORCH_NAMES.get(name, name)
    if not checks and not plan and not takes_out and _autocast.policy_of(torch_name) is None:
        return fn
    wrapper = _wrapper(fn, torch_name, checks, plan, via_method, takes_out)
    wrapper.__hookgrad_checked__ = bool(checks or plan.torch_forms)  # not only the autocast cast or NumPy names
    wrapper.__hookgrad_wrapped__ = True
    return wrapper


def _wrapper(fn, torch_name, checks, plan, via_method, takes_out=False, method=False):
    """The checking wrapper of ``fn``, written out for its own checks: this runs in front of every
    public call, so a call with positional arguments costs one ``isinstance`` per tensor argument
    (a value that is not a Tensor goes on to the full rule); a call with keywords also looks its
    checked parameters up by name, after torch's keyword forms are translated."""

    def check_all(args, kwargs):
        if kwargs and plan:
            args, kwargs = plan.apply(args, kwargs)
        n = len(args)
        for pos, param, kind, torch_arg, torch_pos, none_ok in checks:
            if pos < n:
                value = args[pos]
            elif param is not None and param in kwargs:
                value = kwargs[param]
            else:
                continue
            if kind == SEQUENCE:
                check_sequence(torch_name, value, torch_pos, torch_arg)
            elif _fails(kind, value, none_ok):
                _raise(torch_name, torch_pos, torch_arg, via_method, value)
        return args, kwargs

    def make_refusal(kind, torch_arg, torch_pos, none_ok):
        def refuse_unless_allowed(value):
            if _fails(kind, value, none_ok):
                _raise(torch_name, torch_pos, torch_arg, via_method, value)
        return refuse_unless_allowed

    # the generated code counts as this module's (warnings that skip hookgrad's frames skip it too)
    names = {"__name__": __name__, "fn": fn, "Tensor": Tensor, "check_all": check_all,
             "live": _torch_function.LIVE, "dispatch": _torch_function.dispatch,
             "NO_DISPATCH": _torch_function.NO_DISPATCH, "TensorLikeArgument": TensorLikeArgument,
             "dispatch_tensor_like": _dispatch_tensor_like,
             "check_sequence": check_sequence, "torch_name": torch_name, "autocast": _autocast.STATE,
             "cast_arguments": _autocast.cast_arguments, "policy": _autocast.policy_of(torch_name)}
    lines = ["def wrapper(*args, **kwargs):"]
    deprecated = _deprecated_overloads.rewrite_for(torch_name, method)
    if deprecated is not None:  # torch's deprecated overloads (x.add_(-lr, grad)): a number where a tensor goes
        least, at, names["deprecated"] = deprecated
        lines.append(f"    if len(args) >= {least} and not isinstance(args[{at}], Tensor): "
                     "args, kwargs = deprecated(args, kwargs)")
    if names["policy"] is not None:
        # CPU autocast casts the arguments after torch's checks of them, before the op
        lines += ["    if autocast.enabled:",
                  "        args, kwargs = check_all(args, kwargs)",
                  "        args, kwargs = cast_arguments(policy, args, kwargs)",
                  "        return fn(*args, **kwargs)"]
    lines += ["    if kwargs:"]
    if plan:
        if plan.torch_forms:
            lines.append("        args, kwargs = plan_apply(args, kwargs)")
        else:   # only NumPy's names or a dtype to check: look for those keywords first (the common call has none)
            watched = list(plan.numpy) + (["dtype"] if plan.dtype_checked else [])
            lines.append(f"        if {' or '.join(f'{k!r} in kwargs' for k in watched)}: "
                         "args, kwargs = plan_apply(args, kwargs)")
        names["plan_apply"] = plan.apply
    lines.append("        n = len(args)")
    positional = ["    n = len(args)"]
    for i, (pos, param, kind, torch_arg, torch_pos, none_ok) in enumerate(checks):
        if kind == SEQUENCE:
            lines.append(f"        if n > {pos}: check_sequence(torch_name, args[{pos}], {torch_pos}, {torch_arg!r})")
            if param is not None:
                lines.append(f"        elif {param!r} in kwargs: check_sequence(torch_name, kwargs[{param!r}], "
                             f"{torch_pos}, {torch_arg!r})")
            positional.append(f"    if n > {pos}: check_sequence(torch_name, args[{pos}], {torch_pos}, {torch_arg!r})")
            continue
        names[f"refuse{i}"] = make_refusal(kind, torch_arg, torch_pos, none_ok)
        lines.append(f"        if n > {pos}:")
        lines.append(f"            if not isinstance(args[{pos}], Tensor): refuse{i}(args[{pos}])")
        if param is not None:
            lines.append(f"        elif {param!r} in kwargs and not isinstance(kwargs[{param!r}], Tensor): "
                         f"refuse{i}(kwargs[{param!r}])")
        positional.append(f"    if n > {pos} and not isinstance(args[{pos}], Tensor): refuse{i}(args[{pos}])")
    if takes_out:  # torch's out=, handled here for the functions that do not take it themselves
        lines.append("        if 'out' in kwargs: return call_with_out(fn, torch_name, args, kwargs)")
        names["call_with_out"] = _out.call_with_out
    lines.append("        return fn(*args, **kwargs)")
    lines += positional
    lines.append("    return fn(*args)")
    # torch's kernels never warn about NaN, infinities or overflow: NumPy's floating-point warnings
    # are off for the whole call (one context-variable set and reset, nested calls included)
    # overrides first (``__torch_function__`` of an argument's class, function modes): one list read
    # while no Tensor subclass overrides and no mode was ever pushed
    lines = [lines[0], "    if live[0]:", "        result = dispatch(wrapper, args, kwargs)",
             "        if result is not NO_DISPATCH: return result",
             "    token = fp_quiet(FP_IGNORE)", "    try:"] + ["    " + line for line in lines[1:]] + [
        "    except TensorLikeArgument:", "        return dispatch_tensor_like(wrapper, args, kwargs)",
        "    finally:", "        fp_restore(token)"]
    names.update(fp_quiet=fp_quiet, fp_restore=fp_restore, FP_IGNORE=FP_IGNORE)
    # a file name inside the package that no file has (tracebacks show no stray source line), with
    # "importlib" and "_bootstrap" in it: CPython's warnings skip such frames when they count stacklevel,
    # so a warning of the checked function still names its caller's line (as torch's, which has no
    # frame in between)
    exec(compile("\n".join(lines), f"{_PACKAGE_DIR}<checks of {torch_name}, skipped by warnings as "
                 "importlib._bootstrap>", "exec"), names)
    wrapper = functools.wraps(fn)(names["wrapper"])
    wrapper.__hookgrad_dispatches__ = True
    return wrapper


def _dispatch_tensor_like(public, args, kwargs):
    result = _torch_function.dispatch(public, args, kwargs)
    if result is _torch_function.NO_DISPATCH:
        raise TypeError(f"{public.__name__}(): no override took the tensor-like argument")
    return result


def matmul_operator(matmul, reflected=False):
    """``a @ b`` (``reflected``: ``b @ a``): ``matmul``, with CPU autocast's cast of a lower-precision
    op in front (torch's ``@`` is ``matmul``), and no argument checks (Python's operator rules apply)."""
    state, cast = _autocast.STATE, _autocast.cast_arguments

    def operator(a, b):
        if not isinstance(b, Tensor) and not hasattr(type(b), "__torch_function__"):
            return NotImplemented   # torch's ``@`` takes only tensors: Python then asks the other operand
        if reflected:
            a, b = b, a
        if state.enabled:
            (a, b), _ = cast("lower", (a, b), {})
        return matmul(a, b)

    operator.__name__ = "__rmatmul__" if reflected else "__matmul__"
    return operator


def accept_keyword_forms(cls) -> None:
    """Give ``cls``'s public methods torch's argument handling: a non-tensor where torch's method
    takes a tensor raises torch's TypeError (``add(): argument 'other' (position 1) must be Tensor,
    not numpy.ndarray``), a variadic size may be a keyword (view, reshape, permute, expand, repeat,
    flip, new_zeros, ...: ``x.view(size=(3, 2))``), and torch's names for parameters named
    differently here are accepted (``x.split(split_size=1)``)."""
    method_checks = {}
    for name in sorted(dir(cls), key=lambda n: n.endswith("_")):  # out-of-place methods first
        if name.startswith("_"):
            continue
        fn = cls.__dict__.get(name)
        if not inspect.isfunction(fn) or getattr(fn, "__hookgrad_wrapped__", False):
            continue
        try:
            # the method's own tensor is position 0; torch numbers the other arguments from 1
            checks = [(pos, param, kind, torch_arg, torch_pos - 1, none_ok)
                      for pos, param, kind, torch_arg, torch_pos, none_ok in _checks_for(name, fn) if pos > 0]
            plan = _KeywordPlan(name, fn, checks)
        except (TypeError, ValueError):
            continue
        if not checks and name.endswith("_") and _takes_only_varargs(fn):
            # an in-place variant (``add_``) built generically: it takes what its out-of-place form takes
            checks = [c for c in method_checks.get(name[:-1], ()) if c[1] not in ("x", "a")]
            checks = [(pos, None, kind, torch_arg, torch_pos, none_ok)
                      for pos, _, kind, torch_arg, torch_pos, none_ok in checks]
        method_checks[name] = checks
        if checks or plan or _autocast.policy_of(_TORCH_NAMES.get(name, name)) is not None or \
                _deprecated_overloads.rewrite_for(_TORCH_NAMES.get(name, name), True) is not None:
            setattr(cls, name, _method_with_checks(fn, name, checks, plan))


def _takes_only_varargs(fn) -> bool:
    params = list(inspect.signature(fn).parameters.values())
    return any(p.kind == p.VAR_POSITIONAL for p in params) and \
        all(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params[1:] if p.kind != p.VAR_POSITIONAL) and \
        len([p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]) <= 1


def _method_with_checks(fn, name, checks, plan):
    method = _wrapper(fn, _TORCH_NAMES.get(name, name), checks, plan, None, method=True)
    method.__hookgrad_checked__ = bool(checks or plan.torch_forms)
    method.__hookgrad_wrapped__ = True
    return method


_GUARDED_MODULES = ("hookgrad._ops.", "hookgrad.nn.")
_UNGUARDED_MODULES = ("hookgrad._ops._base",)


def _is_public_api_module(module: str) -> bool:
    if module.startswith(_UNGUARDED_MODULES):
        return False
    return module == "hookgrad" or module == "hookgrad._ops" or module.startswith(_GUARDED_MODULES)


def guard_namespace(namespace: dict, names, via_method=None, numpy_names=True) -> None:
    """Replace each function ``namespace[name]`` of hookgrad's op and functional modules with its
    checked version (creation functions get only torch's keyword forms: their parameters are not
    named like tensors). ``numpy_names``: True, False or the names that take ``axis=``/``keepdims=``."""
    for name in names:
        fn = namespace.get(name)
        if not inspect.isfunction(fn) or getattr(fn, "__hookgrad_wrapped__", False):
            continue
        if not _is_public_api_module(fn.__module__) and not fn.__module__.startswith("hookgrad._ops.creation"):
            continue
        numpy = numpy_names if isinstance(numpy_names, bool) else name in numpy_names
        namespace[name] = checked(fn, name, (via_method or {}).get(name), numpy)


def accept_numpy_names(namespace: dict, names) -> None:
    """Let each function ``namespace[name]`` with a ``dim``/``keepdim`` parameter take NumPy's
    ``axis=``/``keepdims=`` too, as torch's built-ins of that namespace do (torch.linalg)."""
    for name in names:
        fn = namespace.get(name)
        if not inspect.isfunction(fn) or getattr(fn, "__hookgrad_wrapped__", False):
            continue
        plan = _KeywordPlan(name, fn, [], numpy_names="always")
        if plan.numpy:
            wrapper = _wrapper(fn, name, [], plan, None)
            wrapper.__hookgrad_wrapped__ = True
            namespace[name] = wrapper
