"""How an op is declared, once: ``hookgrad.X``, ``Tensor.X`` and ``Tensor.X_`` all come from here.

Every public function of ``_ops`` carries one declaration (the ``@op(...)`` decorator or a
``unary(...)`` call) that says under which names it is a ``hookgrad`` function, a Tensor method
and an in-place Tensor method. ``bind_tensor_methods`` turns the declarations into Tensor methods
and each ``_ops`` module's ``__all__`` lists the functions it declares, so nothing else (NumPy,
Node classes, helpers) reaches the ``hookgrad`` namespace.

The declarations cost nothing per call: they are read once at import time, and the function that
runs is the plain Python function (no wrapper).
"""
from __future__ import annotations

import sys

import numpy as np

from .._dtype import narrow_to, scalar_type_name
from .._tensor import Tensor, wrap
from ..autograd.graph import Node
from ..autograd.profiler import _active as _profiling
from ._base import GRAD, NONE_EDGE, as_tensor_arg, edge, float_dtype_for, quiet_fp, record
from ._base import FP_IGNORE, fp_quiet, fp_restore
from ._dtype_rules import numpy_dtypes, refuse_kernel, refuse_lowprec
from .. import _dtype

__all__ = ["OpDecl", "op", "unary", "record_op", "UnaryNode", "ZeroGradNode", "node_class", "declared",
           "module_all", "bind_tensor_methods", "backward_results", "no_derivative_node", "formula_node",
           "pair_formula_node", "delayed_error", "underivable_node"]


class OpDecl:
    """Where one op appears: as which ``hookgrad`` functions, Tensor methods and in-place methods."""

    __slots__ = ("fn", "module", "functions", "methods", "inplace", "inplace_saves_self")

    def __init__(self, fn, module, functions, methods, inplace, inplace_saves_self):
        self.fn = fn
        self.module = module
        self.functions = functions
        self.methods = methods
        self.inplace = inplace
        self.inplace_saves_self = inplace_saves_self

    def __repr__(self):
        return (f"OpDecl({self.fn.__name__}: functions={self.functions}, methods={self.methods}, "
                f"inplace={self.inplace})")


_DECLS: list[OpDecl] = []


def _names(value, default):
    if value is True:
        return (default,)
    if not value:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def op(name=None, *, function=True, method=True, inplace=False, aliases=(), saves_self=True):
    """Declare the decorated function as an op.

    ``name``: the public name (default: the function's own). ``function``: whether ``hookgrad.<name>``
    exists. ``method``: ``True`` for ``Tensor.<name>``, a name or a tuple of names, or ``False``.
    ``aliases``: more names under which it is a function and a method (and in-place, if it has one).
    ``inplace``: ``True`` for ``Tensor.<name>_`` (and ``<alias>_``). ``saves_self``: whether the
    in-place form must keep the old value of ``self`` for the backward (False when the backward
    does not read it: ``add_``, ``neg_``, ``floor_``, ...).
    """
    def declare(fn):
        public = name or fn.__name__
        functions = (_names(function, public) + tuple(aliases)) if function else ()
        methods = _names(method, public) + (tuple(aliases) if method else ())
        inplace_names = tuple(m + "_" for m in (public,) + tuple(aliases)) if inplace is True else _names(
            inplace, public + "_")
        _DECLS.append(OpDecl(fn, fn.__module__, functions, methods, inplace_names, saves_self))
        return fn
    return declare


def declared() -> tuple:
    """Every declaration, in declaration order."""
    return tuple(_DECLS)


def module_all(namespace: dict) -> list:
    """The ``__all__`` of an ``_ops`` module (called with its ``globals()``): the public names of the
    functions declared in it. Aliases (``subtract`` for ``sub``) are bound in the module here."""
    names = []
    for d in _DECLS:
        if d.module == namespace["__name__"]:
            for n in d.functions:
                namespace.setdefault(n, d.fn)
                names.append(n)
    return names


def no_derivative_node(aten_op: str, **attrs) -> type:
    """torch's node for a result whose op has no derivative: named ``NotImplemented``, its backward
    raises ``RuntimeError: derivative for aten::<aten_op> is not implemented``. ``attrs``: more class
    attributes (``_num_outputs`` for a backward with several results)."""
    message = f"derivative for aten::{aten_op} is not implemented"

    def apply(self, grads):
        raise RuntimeError(message)

    def name(self):
        return "torch::autograd::NotImplemented"  # torch's C++ node, named with its namespace

    return type("NotImplemented", (Node,), {"__slots__": (), "__module__": sys._getframe(1).f_globals["__name__"],
                                            "apply": apply, "name": name, **attrs})


def underivable_node(name: str, aten_op: str, **attrs) -> type:
    """torch's node ``name`` of an op whose derivative torch does not implement: its backward raises
    ``NotImplementedError: the derivative for '<aten_op>' is not implemented.``"""
    message = f"the derivative for '{aten_op}' is not implemented."

    def apply(self, grads):
        raise NotImplementedError(message)

    return node_class(name, apply=apply, __module__=sys._getframe(1).f_globals["__name__"], **attrs)


def note_input_dtypes(node, inputs) -> None:
    """Keep ``inputs``' dtypes on ``node`` (one entry per edge, in order) when the tensors among them
    differ: the engine then casts each gradient to its input's dtype."""
    dtypes = tuple(t._ndarray.dtype if isinstance(t, Tensor) else None for t in inputs)
    present = [d for d in dtypes if d is not None]
    if present and any(d is not present[0] for d in present):
        node._input_dtypes = dtypes


def outputs_of(node, results) -> tuple:
    """``results`` (Tensors or None), computed by composed ops, as fresh tensors that are ``node``'s
    outputs 0, 1, ... instead (one node in the graph where the composition had many)."""
    outputs = []
    for i, out in enumerate(results):
        if out is not None:
            out = wrap(out._ndarray)
            out._grad_fn_value, out._output_nr, out._requires_grad = node, i, True
        outputs.append(out)
    return tuple(outputs)


def record_op(node_cls, inputs: tuple, *outputs: Tensor):
    """The shared tail of a recorded op: a ``node_cls`` node whose edges lead to ``inputs``, made the
    grad_fn of ``outputs`` (output_nr in order). Returns the node, for the caller to store what its
    backward needs."""
    # spelled out per arity: this runs once per recorded op. Inputs are Tensors or None; a binary
    # op's second operand may also be a number
    n = len(inputs)
    if n == 1:
        node = node_cls((edge(inputs[0]),))
    elif n == 2:
        a, b = inputs
        if b.__class__ is Tensor or isinstance(b, Tensor):
            node = node_cls((edge(a), edge(b)))
            if a is not None and a._ndarray.dtype is not b._ndarray.dtype:
                node._input_dtypes = (a._ndarray.dtype, b._ndarray.dtype)
        else:
            node = node_cls((edge(a), NONE_EDGE))
    elif n == 3:
        a, b, c = inputs
        node = node_cls((edge(a), edge(b), edge(c)))
        if a is not None and b is not None and c is not None:
            d = a._ndarray.dtype
            if b._ndarray.dtype is not d or c._ndarray.dtype is not d:
                node._input_dtypes = (d, b._ndarray.dtype, c._ndarray.dtype)
        else:
            note_input_dtypes(node, inputs)
    else:
        node = node_cls(tuple([edge(t) for t in inputs]))
        note_input_dtypes(node, inputs)
    if len(outputs) == 1:
        out = outputs[0]
        out._grad_fn_value = node
        out._output_nr = 0
        out._requires_grad = True
    else:
        record(node, *outputs, inputs=inputs)
    return node


def delayed_error(message: str, t: Tensor) -> Tensor:
    """``t`` itself, or when it requires grad (a backward formula under ``create_graph``) an alias
    whose node raises ``RuntimeError(message)`` once a backward pass reaches it: torch's answer
    where a formula's own derivative is not defined (its DelayedError)."""
    if not t._requires_grad:
        return t
    from ..autograd.function import Error
    alias = wrap(t._ndarray)
    record_op(Error, (t,), alias).message = message
    return alias


# ---- unary ops: a NumPy forward and a backward formula ----------------------------------------
# the dtypes a unary op computes in as they are (no refusal, promotion or rounding to decide)
_PLAIN_DTYPES = frozenset(map(np.dtype, (np.float16, np.float32, np.float64)))
# the dtypes a backward formula may compute in on arrays. Not float16: a Python number in a formula
# enters its mul and div unrounded (see pointwise._np_binary), where NumPy rounds it to float16 first
_ARRAY_DTYPES = frozenset(map(np.dtype, (np.float32, np.float64)))


# the unary ops torch computes on float8 tensors (not on float8_e8m0fnu, which has no sign to drop),
# and on complex32 ones (in complex64, the result rounded to complex32 or float16 once)
_FLOAT8_UNARY = frozenset(("abs", "absolute"))
_COMPLEX32_UNARY = frozenset(("abs", "absolute", "neg", "negative"))


def _lowprec_operand(name: str, data):
    """What unary op ``name`` computes on for a float8 or complex32 array ``data``, or torch's
    NotImplementedError where it has no kernel for the type."""
    if data.dtype == _dtype.complex32.np and name in _COMPLEX32_UNARY:
        return _dtype.complex32_as_complex64(data)
    if _dtype.is_float8_np(data.dtype) and name in _FLOAT8_UNARY and data.dtype != _dtype.float8_e8m0fnu.np:
        return data
    refuse_lowprec(data, f"{name}_cpu")


class UnaryNode(Node):
    """Backward of a declared unary op: ``backward(grad, saved)`` where ``saved`` is the op's input
    (``saves="self"``) or its result (``saves="result"``), or ``backward(grad)`` when it saves
    nothing. Subclasses are made once per declaration by ``unary``."""

    __slots__ = ()
    formula = None
    # the formula on NumPy arrays (float32/64), for a backward that nothing records or observes
    # (no create_graph, no profile): the same ufunc calls on the same operands, without a Tensor per step
    array_formula = None
    conj_saved = True

    def apply(self, grads):
        saved = self.saved()
        array_formula = self.array_formula
        if array_formula is not None and not GRAD.enabled and not _profiling:
            g = grads[0]._ndarray
            dtype = g.dtype
            if dtype in _ARRAY_DTYPES and (not saved or saved[0]._ndarray.dtype is dtype):
                token = fp_quiet(FP_IGNORE)
                try:
                    return (wrap(array_formula(g, saved[0]._ndarray) if saved else array_formula(g)),)
                finally:
                    fp_restore(token)
        if saved and self.conj_saved and saved[0]._ndarray.dtype.kind == "c":
            # a holomorphic f with real Taylor coefficients: torch's gradient g * conj(f'(z)) is the
            # real formula evaluated at conj(z) (or at conj(f(z)) for one written with the result)
            saved = (saved[0].conj(),)
        return (self.formula(grads[0], *saved),)


class _InputShapeNode(Node):
    """Backward of an op whose gradient needs its input's shape only (``in_shape``, which torch
    shows as ``self_sym_sizes``): sum, view, reshape, expand, squeeze."""

    __slots__ = ("in_shape",)
    saved_values = {"self_sym_sizes": lambda n: n.in_shape}


class ZeroGradNode(Node):
    """Backward of an op whose gradient is zero almost everywhere (sign, floor, round, rounding
    division, ...): ``inputs`` holds ``(shape, dtype)`` per input (``None`` for a number)."""

    __slots__ = ("inputs",)

    def apply(self, grads):
        return tuple(wrap(np.zeros(s[0], dtype=s[1])) if s is not None and e[0] is not None else None
                     for s, e in zip(self.inputs, self.next_functions))

    def keep_shapes(self, *inputs) -> None:
        self.inputs = tuple((t._ndarray.shape, t._ndarray.dtype) if isinstance(t, Tensor) else None for t in inputs)


def node_class(name: str, base=Node, **attrs):
    """A Node subclass named like torch's grad_fn, made once at declaration time."""
    return type(name, (base,), {"__slots__": (), "__module__": __name__, **attrs})


def formula_node(name: str, saved_names: tuple, formula) -> type:
    """torch's node ``name`` for an op with one differentiable input, whose gradient is
    ``formula(grad, *saved)`` written with hookgrad ops (so it is differentiable itself); ``saved_names``
    are torch's names of what the op saves, in order. The saved tensors enter as they are."""
    return node_class(name, UnaryNode, formula=staticmethod(formula), saved_names=saved_names, conj_saved=False,
                      __module__=sys._getframe(1).f_globals["__name__"])


class _PairFormulaNode(Node):
    """Backward of an op with two inputs: ``first(grad, *saved)`` and ``second(grad, *saved)`` are
    their gradients, each computed only where its input has an edge. Subclasses are made by
    ``pair_formula_node``."""

    __slots__ = ()
    first = second = None

    def apply(self, grads):
        saved = self.saved()
        g = grads[0]
        return (self.first(g, *saved) if self._should_compute_output(0) else None,
                self.second(g, *saved) if self._should_compute_output(1) else None)


def pair_formula_node(name: str, saved_names: tuple, first, second) -> type:
    """torch's node ``name`` for an op with two inputs whose gradients are ``first(grad, *saved)``
    and ``second(grad, *saved)``, written with hookgrad ops; ``saved_names`` as in ``formula_node``."""
    return node_class(name, _PairFormulaNode, first=staticmethod(first), second=staticmethod(second),
                      saved_names=saved_names, __module__=sys._getframe(1).f_globals["__name__"])


def unary(name, forward, backward, *, node, saves=None, floating=True, on_complex="holomorphic", refuse=None,
          on_arrays=None, **decl):
    """Declare a unary op ``name`` from its NumPy ``forward(array)`` and its ``backward`` formula.

    ``backward(grad, saved)`` is written with hookgrad ops (so it is differentiable); ``saves`` is
    ``"self"`` or ``"result"`` (what ``saved`` is) or ``None``. ``backward=None`` declares an op with
    zero gradient. ``node`` is torch's grad_fn name. ``floating``: integer inputs compute in the
    default float dtype (exp, sin, ...). ``refuse``: ``(dtype names, kernel name)`` that torch has no
    kernel for (its NotImplementedError, see ``_dtype_rules``). The other keywords are ``op``'s
    (``inplace``, ``aliases``, ``method``, ``saves_self``). ``on_complex``: ``"holomorphic"`` (the
    backward formula holds for complex inputs with the saved value conjugated, torch's convention),
    ``"own"`` (the formula handles complex inputs itself), or the message of the NotImplementedError
    torch raises for a complex input (``{dtype}`` stands for torch's name of the input's type), or a
    pair (exception class, message). ``on_arrays``: the backward on NumPy arrays, computing the
    same values with the same ufunc calls (``True``: ``backward`` itself, written with operators only).
    """
    if backward is None:
        node_cls = node_class(node, ZeroGradNode)
    else:
        array_formula = backward if on_arrays is True else on_arrays
        node_cls = node_class(node, UnaryNode, formula=staticmethod(backward),
                              array_formula=None if array_formula is None else staticmethod(array_formula),
                              saved_names=(saves,) if saves else (), conj_saved=on_complex == "holomorphic")
    complex_refused = None if on_complex in ("holomorphic", "own") else on_complex
    save_input, save_output = saves == "self", saves == "result"
    zero_grad = backward is None

    refused, kernel = refuse if refuse is not None else (None, None)
    refused_dtypes = numpy_dtypes(refused) if refused is not None else None

    # the dtypes that need none of the checks and conversions below
    plain_dtypes = frozenset(dt for dt in _PLAIN_DTYPES if refused_dtypes is None or dt not in refused_dtypes)

    def fn(x):
        if not isinstance(x, Tensor):
            x = as_tensor_arg(x)
        data = x._ndarray
        if data.dtype in plain_dtypes:
            token = fp_quiet(FP_IGNORE)
            try:
                result = wrap(forward(data))
            finally:
                fp_restore(token)
            if GRAD.enabled and x._requires_grad:
                producer = x._grad_fn_value  # edge(x), written out for a non-view result of an op
                n = node_cls(((producer, x._output_nr) if producer is not None and x._base_value is None else edge(x),))
                result._grad_fn_value = n
                result._requires_grad = True
                if zero_grad:
                    n.inputs = ((data.shape, data.dtype),)
                elif save_input:
                    n.save(x)
                elif save_output:
                    n.save(output=result)
            return result
        if complex_refused is not None and data.dtype.kind == "c":
            error, message = complex_refused if isinstance(complex_refused, tuple) else (
                NotImplementedError, complex_refused)
            raise error(message.replace("{dtype}", scalar_type_name(data.dtype)))
        if refused_dtypes is not None and data.dtype in refused_dtypes:
            refuse_kernel(data, refused, kernel)
        if _dtype.is_lowprec_storage_np(data.dtype):
            data = _lowprec_operand(name, data)
        if floating and data.dtype.kind not in "fc":
            data = data.astype(float_dtype_for(x))
        with quiet_fp():
            out = forward(data)
        if x._ndarray.dtype.kind == "V":  # bfloat16 (ml_dtypes): computed in float32, rounded once
            out = narrow_to(out, x._ndarray.dtype)
        result = wrap(out)
        if GRAD.enabled and x._requires_grad:
            n = node_cls((edge(x),))
            record(n, result, inputs=(x,))
            if zero_grad:
                n.inputs = ((data.shape, x._ndarray.dtype),)
            elif save_input:
                n.save(x)
            elif save_output:
                n.save(output=result)
        return result

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}: elementwise, recorded as {node}."
    fn.node_cls = node_cls
    fn.__module__ = sys._getframe(1).f_globals["__name__"]  # the declaring module lists it in __all__
    return op(name, **decl)(fn)


# ---- Tensor methods ---------------------------------------------------------------------------
def _inplace_method(fn, saves_self, name):
    from .views import apply_inplace

    def method(self, *args, **kwargs):
        return apply_inplace(self, fn, *args, saves_self=saves_self, **kwargs)
    method.__name__ = method.__qualname__ = name
    return method


def bind_tensor_methods() -> None:
    """Attach every declared op to Tensor under its method and in-place names."""
    for d in _DECLS:
        for m in d.methods:
            setattr(Tensor, m, d.fn)
        for m in d.inplace:
            setattr(Tensor, m, _inplace_method(d.fn, d.inplace_saves_self, m))


# ---- create_graph: what a backward op's results depend on ------------------------------------
def backward_results(node_cls, inputs: tuple, outputs: tuple) -> tuple:
    """``outputs`` of a backward computed under ``create_graph=True``, with torch's requires_grad.

    torch runs a backward as one op whose inputs are the incoming gradient and the saved tensors,
    so every gradient it returns requires grad when any of those inputs does. A result our formula
    computed without touching a grad-requiring input has a zero derivative in all of them; it is
    recorded as a zero-gradient ``node_cls`` node over ``inputs`` (torch's double-backward name).
    """
    if not GRAD.enabled or not any(t is not None and t._requires_grad for t in inputs):
        return outputs
    fixed = []
    for out in outputs:
        if out is not None and not out._requires_grad:
            out = wrap(out._ndarray)
            record_op(node_cls, inputs, out).keep_shapes(*inputs)
        fixed.append(out)
    return tuple(fixed)


def inplace_function(name):
    """Declares ``torch.<name>(input, ...)``, the function form of the in-place method ``Tensor.<name>``."""
    def fn(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}(input, ...): ``input.{name}(...)``."
    fn.__module__ = sys._getframe(1).f_globals["__name__"]  # the declaring module lists it in __all__
    return op(name, method=False)(fn)
