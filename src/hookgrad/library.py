"""``torch.library``: user-defined operators, reachable as ``torch.ops.<namespace>.<name>``.

``custom_op("ns::name", mutates_args=...)`` turns a type-annotated Python function into an
operator: its schema is inferred from the annotations (as torch writes it), outputs may not alias
inputs, the arguments named in ``mutates_args`` are changed in place (their version counters move),
and ``register_autograd(backward, setup_context=...)`` gives it a gradient. Without one, calling it
on tensors that require grad still records a node, and backward through it raises torch's
RuntimeError. The autograd node is a custom Function node named
``GeneratedBackwardFor_<ns>_<name>_defaultBackward``, so tensor hooks, saved-tensor hooks and
node hooks see it as they see torch's.

The classic API (``Library(ns, "DEF")``, ``define``, ``impl``) serves what has eager meaning: a
defined schema with a CPU/composite kernel callable through ``torch.ops``; autograd then flows
through the kernel's own operations (torch's composite behaviour). Fake (meta) kernels are kept
with the operator but never run: hookgrad has no fake tensors.
"""
from __future__ import annotations

import contextlib
import sys

import collections.abc
import inspect
import types
import typing
from typing import Optional, Union

__all__ = ["Library", "impl", "define", "fallthrough_kernel", "impl_abstract", "register_autocast",
           "register_fake", "register_torch_dispatch", "register_vmap", "get_ctx", "get_kernel", "custom_op",
           "triton_op", "wrap_triton", "infer_schema", "register_autograd", "register_kernel", "opcheck",
           "CustomOpDef"]


def _tensor_cls():
    from ._tensor import Tensor
    return Tensor


# ------------------------------------------------------------------------------- schema inference

def _schema_types():
    """Annotation -> schema type name, for the argument types torch's custom ops accept."""
    from ._device import device
    from ._dtype import dtype
    Tensor = _tensor_cls()
    table = {Tensor: "Tensor", Optional[Tensor]: "Tensor?", int: "SymInt", Optional[int]: "SymInt?",
             float: "float", Optional[float]: "float?", bool: "bool", Optional[bool]: "bool?", str: "str",
             Optional[str]: "str?", dtype: "ScalarType", Optional[dtype]: "ScalarType?", device: "Device",
             Optional[device]: "Device?", Union[int, float, bool]: "Scalar", Optional[Union[int, float, bool]]:
                 "Scalar?"}
    sequences = {Tensor: "Tensor[]", Optional[Tensor]: "Tensor?[]", int: "SymInt[]", float: "float[]",
                 bool: "bool[]", Union[int, float, bool]: "Scalar[]"}
    for element, name in sequences.items():
        for seq in (typing.Sequence, typing.List, collections.abc.Sequence, list):
            table[seq[element]] = name
            if element not in (Tensor, Optional[Tensor]):
                table[Optional[seq[element]]] = name + "?"
    return table


def _lookup(table, annotation):
    try:
        return table.get(annotation)
    except TypeError:  # unhashable annotation
        return None


def _normalize(annotation):
    # ``X | None`` (types.UnionType) spells the same type as Optional[X]
    if isinstance(annotation, types.UnionType):
        return Union[annotation.__args__]
    origin = typing.get_origin(annotation)
    if origin in (list, collections.abc.Sequence) and typing.get_args(annotation):
        (arg,) = typing.get_args(annotation)
        return origin[_normalize(arg)]
    return annotation


def infer_schema(prototype_function, /, *, mutates_args, op_name: str | None = None) -> str:
    """The operator schema torch writes for ``prototype_function``'s annotations, e.g.
    ``(Tensor(a0!) x, SymInt n) -> Tensor``; with ``op_name``, prefixed by the name."""
    signature = inspect.signature(prototype_function)

    def error(what):
        raise ValueError(f"infer_schema(func): {what} Got func with signature {signature})")

    try:
        hints = typing.get_type_hints(prototype_function)
    except Exception:  # noqa: BLE001 - unresolvable string annotations: read them raw
        hints = {name: p.annotation for name, p in signature.parameters.items()}
        hints["return"] = signature.return_annotation
    table = _schema_types()
    Tensor = _tensor_cls()
    params, seen_kw_only = [], False
    mutable = set() if mutates_args == "unknown" else set(mutates_args)
    for index, (name, param) in enumerate(signature.parameters.items()):
        if param.kind not in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            error("We do not support positional-only args, varargs, or varkwargs.")
        if param.kind == inspect.Parameter.KEYWORD_ONLY and not seen_kw_only:
            params.append("*")
            seen_kw_only = True
        if param.annotation is inspect.Parameter.empty:
            error(f"Parameter {name} must have a type annotation.")
        annotation = _normalize(hints.get(name, param.annotation))
        type_name = _lookup(table, annotation)
        if type_name is None:
            error(f"Parameter {name} has unsupported type {annotation}. The valid types are: "
                  f"{list(table.keys())}.")
        is_tensor_like = type_name.startswith("Tensor")
        if mutates_args == "unknown" and is_tensor_like or name in mutable:
            if not is_tensor_like:
                error(f"Parameter {name} is in mutable_args but only Tensors or collections of Tensors can be "
                      "mutated")
            if type_name.startswith("Tensor?"):
                type_name = f"Tensor(a{index}!){type_name[6:]}"
            else:
                type_name = f"Tensor(a{index}!){type_name[6:]}"
        text = f"{type_name} {name}"
        if param.default is not inspect.Parameter.empty:
            default = param.default
            if default is None or isinstance(default, (bool, int, float)):
                text += f"={default}"
            elif isinstance(default, str):
                text += f'="{default}"'
            else:
                error(f"Parameter {name} has an unsupported default value type {type(default)}. Please file an "
                      "issue on GitHub so we can prioritize this.")
        params.append(text)
    unknown = mutable - set(signature.parameters)
    if unknown:
        error(f"{unknown} in mutates_args were not found in the custom op's signature. mutates_args should "
              "contain the names of all args that the custom op mutates, or just the string 'unknown' if you "
              "don't know.")
    if signature.return_annotation is inspect.Parameter.empty:
        error("No return type annotation was provided. Please add one.")
    returns = _return_schema(hints.get("return", signature.return_annotation), table, Tensor, error)
    schema = f"({', '.join(params)}) -> {returns}"
    return f"{op_name}{schema}" if op_name is not None else schema


def _return_schema(annotation, table, Tensor, error) -> str:
    if annotation is None or annotation is type(None):
        return "()"
    annotation = _normalize(annotation)
    if typing.get_origin(annotation) is tuple:
        parts = [_return_schema(a, table, Tensor, error) for a in typing.get_args(annotation)]
        return f"({', '.join(parts)})"
    name = _lookup(table, annotation)
    if name is None or name.endswith("?"):
        error(f"Return has unsupported type {annotation}.")
    return name


# ------------------------------------------------------------------------------------- operators

_OPERATORS: dict = {}  # "ns::name" -> OperatorEntry


class OperatorEntry:
    """One operator: its schema and kernels, and what ``torch.ops`` hands out for it."""

    def __init__(self, qualname: str, schema: str, kernel=None, *, custom: bool = False, mutated=(),
                 signature: inspect.Signature | None = None):
        self.qualname = qualname
        self.namespace, self.name = qualname.split("::")
        self.schema = schema
        self.kernel = kernel
        self.custom = custom
        self.mutated = tuple(mutated)
        self.signature = signature
        self.fake = None
        self.backward = None
        self.setup_context = None
        self.other_kernels: dict = {}
        self._function = None

    # -- calling ---------------------------------------------------------------------------------
    def call(self, *args, **kwargs):
        if self.kernel is None and "CPU" in _BACKEND_FALLBACKS:
            from .ops import ops
            op = getattr(getattr(ops, self.namespace), self.name).default
            args, kwargs = _positional(self.schema, args, dict(kwargs))
            return _BACKEND_FALLBACKS["CPU"][0](op, *args, **kwargs)
        if self.kernel is None:
            raise NotImplementedError(f"{self.namespace}::{self.name}: There were no tensor arguments to this "
                                      "function (e.g., you passed an empty list of Tensors), but no fallback "
                                      "function is registered for schema " f"{self.namespace}::{self.name}. "
                                      "hookgrad runs the CPU or composite kernel; none was registered.")
        if not self.custom:
            return self.kernel(*args, **kwargs)
        batching = sys.modules.get("hookgrad._functorch.vmap")
        if batching is not None and batching.ACTIVE and batching.any_batched(args, kwargs):
            return batching.custom_op_call(self, args, kwargs)
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        inputs = tuple(bound.arguments.values())
        from . import autograd
        Tensor = _tensor_cls()
        needs_graph = autograd.is_grad_enabled() and any(
            isinstance(t, Tensor) and t.requires_grad for t in _flat_tensors(inputs))
        if not needs_graph:
            from .autograd.grad_mode import no_grad
            with no_grad():
                return self._run_kernel(inputs)
        return self._autograd_function().apply(*inputs)

    def _run_kernel(self, inputs):
        output = self.kernel(*inputs)
        self._check_no_alias(inputs, output)
        return output

    def _check_no_alias(self, inputs, output):
        outputs = [t for t in _flat_tensors(output if isinstance(output, (tuple, list)) else (output,))]
        if not outputs:
            return
        bases = {}
        for t in _flat_tensors(inputs):
            bases[id(_storage_of(t))] = t
        seen = set()
        for t in outputs:
            key = id(_storage_of(t))
            if key in bases or key in seen:
                raise RuntimeError(
                    f"{self.name} (with implementation in {inspect.getmodule(self.kernel)}): The output of this "
                    "custom operator (1) must not also be an input to this custom operator and (2) may not alias "
                    "any inputs to this custom operator or other returns. The most common way to trigger this error "
                    "is if we have y = custom_op(x) and y and x are the same Tensor. Please instead return a clone "
                    "of the offending output tensor(s) (e.g. return x.clone()) or refactor the custom operator to "
                    "not return y.")
            seen.add(key)

    def _autograd_function(self):
        if self._function is None:
            from .autograd.function import Function
            entry = self

            def forward(*inputs):
                from .autograd.grad_mode import no_grad
                with no_grad():
                    return entry._run_kernel(inputs)

            def setup_context(ctx, inputs, output):
                ctx._op_inputs_are_tensors = [isinstance(x, _tensor_cls()) for x in inputs]
                if entry.setup_context is not None:
                    entry.setup_context(ctx, inputs, output)

            def backward(ctx, *grads):
                if entry.backward is None:
                    raise RuntimeError(f"Trying to backward through {entry.namespace}.{entry.name}.default but no "
                                       "autograd formula was registered. Please use register_autograd to add one.")
                result = entry.backward(ctx, *grads)
                return entry._check_gradients(ctx, result, node_name)

            node_name = f"GeneratedBackwardFor_{self.namespace}_{self.name}_default"
            self._function = type(node_name, (Function,), {
                "forward": staticmethod(forward), "setup_context": staticmethod(setup_context),
                "backward": staticmethod(backward), "__module__": __name__})
        return self._function

    def _check_gradients(self, ctx, result, node_name):
        grads = result if isinstance(result, tuple) else (result,)
        is_tensor = ctx._op_inputs_are_tensors
        count = len(is_tensor)
        # torch counts one hidden input of its generated Function: its numbers are one higher
        if len(grads) == count + 1 and grads[-1] is None:
            grads = grads[:-1]
        if len(grads) != count:
            raise RuntimeError(f"function {node_name}Backward returned an incorrect number of gradients "
                               f"(expected {count + 1}, got {len(grads) + 1})")
        for position, (grad, tensor_input) in enumerate(zip(grads, is_tensor), start=1):
            if grad is not None and not tensor_input:
                raise RuntimeError(f"function {node_name}Backward returned a gradient different than None at "
                                   f"position {position}, but the corresponding forward input was not a Variable")
        return grads


def _flat_tensors(values):
    Tensor = _tensor_cls()
    for v in values:
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from _flat_tensors(v)


def _storage_of(t):
    data = t._ndarray
    while getattr(data, "base", None) is not None:
        data = data.base
    return data


def _parse_qualname(qualname: str):
    namespace, name = qualname.split("::")
    if "." in name:
        raise ValueError(f"The torch.custom_op only supports names without overloads ('{name}').")
    return namespace, name


def _entry(qualname: str) -> OperatorEntry:
    entry = _OPERATORS.get(qualname)
    if entry is None:
        namespace, _, name = qualname.partition("::")
        raise AttributeError(f"'_OpNamespace' '{namespace}' object has no attribute '{name}'")
    return entry


class CustomOpDef:
    """What ``custom_op`` returns: call it like the function; register a gradient, a fake kernel or
    device kernels on it."""

    def __init__(self, entry: OperatorEntry, fn):
        self._entry = entry
        self._init_fn = fn
        self._name = entry.name
        self._namespace = entry.namespace
        self._qualname = entry.qualname
        self.__wrapped__ = fn
        self.__name__ = getattr(fn, "__name__", entry.name)
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args, **kwargs):
        return self._entry.call(*args, **kwargs)

    def __repr__(self):
        return f"<CustomOpDef({self._qualname})>"

    @property
    def _opoverload(self):
        from .ops import ops
        return getattr(getattr(ops, self._namespace), self._name).default

    def register_autograd(self, backward, /, *, setup_context=None) -> None:
        self._entry.backward = backward
        self._entry.setup_context = setup_context

    def register_fake(self, fn, /):
        self._entry.fake = fn
        return fn

    def register_kernel(self, device_types, fn=None, /):
        def register(func):
            kinds = [device_types] if isinstance(device_types, str) or device_types is None else list(device_types)
            for kind in kinds:
                if kind in (None, "cpu"):
                    self._entry.kernel = func
                else:
                    self._entry.other_kernels[kind] = func  # a device hookgrad does not have
            return func
        return register(fn) if fn is not None else register

    def register_torch_dispatch(self, torch_dispatch_class, fn=None, /):
        def register(func):
            self._entry.other_kernels[("dispatch", torch_dispatch_class)] = func
            return func
        return register(fn) if fn is not None else register

    def register_autocast(self, device_type: str, cast_inputs) -> None:
        self._entry.other_kernels[("autocast", device_type)] = cast_inputs

    def register_vmap(self, func=None, /):
        def register(f):
            self._entry.other_kernels["vmap"] = f
            return f
        return register(func) if func is not None else register

    def set_kernel_enabled(self, device_type: str, enabled: bool = True):
        import contextlib
        return contextlib.nullcontext()


def custom_op(name: str, fn=None, /, *, mutates_args, device_types=None, schema: str | None = None, tags=None):
    """Make ``fn`` (type-annotated) the operator ``name`` (``"namespace::op"``)."""
    def wrap(func):
        namespace, op_name = _parse_qualname(name)
        inferred = infer_schema(func, mutates_args=mutates_args) if schema is None else schema
        mutated = [] if mutates_args == "unknown" else list(mutates_args)
        entry = OperatorEntry(f"{namespace}::{op_name}", f"{namespace}::{op_name}{inferred}", func, custom=True,
                              mutated=mutated, signature=inspect.signature(func))
        _OPERATORS[entry.qualname] = entry
        from .ops import ops
        ops._forget(namespace, op_name)
        return CustomOpDef(entry, func)

    return wrap(fn) if fn is not None else wrap


def triton_op(name: str, fn=None, /, *, mutates_args, schema: str | None = None):
    """Triton kernels need a GPU; the operator still runs its Python body eagerly."""
    return custom_op(name, fn, mutates_args=mutates_args, schema=schema)


def wrap_triton(triton_kernel, /):
    raise RuntimeError("wrap_triton needs Triton and a GPU; hookgrad runs on the CPU only")


def _qualname_of(op) -> str:
    if isinstance(op, CustomOpDef):
        return op._qualname
    qualname = getattr(op, "_qualname", None)
    if qualname is not None:
        return qualname
    if not isinstance(op, str):
        raise ValueError(f"register: expected a string, CustomOpDef or OpOverload, got {type(op).__name__}")
    return op.split(".")[0]


def register_autograd(op, backward, /, *, setup_context=None, lib=None) -> None:
    """Give operator ``op`` a gradient formula (see ``CustomOpDef.register_autograd``)."""
    entry = _entry(_qualname_of(op))
    if not entry.custom:
        raise NotImplementedError(f"register_autograd(op): expected op to be a custom operator made with "
                                  f"torch.library.custom_op, got {entry.qualname}")
    entry.backward = backward
    entry.setup_context = setup_context


def register_fake(op, func=None, /, *, lib=None, _stacklevel: int = 1, allow_override: bool = False):
    """Record the operator's fake (shape-only) kernel; kept, never run: hookgrad has no fake tensors."""
    def register(f):
        _entry(_qualname_of(op)).fake = f
        return f
    return register(func) if func is not None else register


impl_abstract = register_fake


def register_kernel(op, device_types, func=None, /, *, lib=None):
    entry = _entry(_qualname_of(op))
    return CustomOpDef(entry, entry.kernel).register_kernel(device_types, func)


def register_torch_dispatch(op, torch_dispatch_class, func=None, /, *, lib=None):
    entry = _entry(_qualname_of(op))
    return CustomOpDef(entry, entry.kernel).register_torch_dispatch(torch_dispatch_class, func)


def register_vmap(op, func=None, /, *, lib=None):
    entry = _entry(_qualname_of(op))
    return CustomOpDef(entry, entry.kernel).register_vmap(func)


def register_autocast(op, device_type: str, cast_inputs, /, *, lib=None) -> None:
    _entry(_qualname_of(op)).other_kernels[("autocast", device_type)] = cast_inputs


def get_kernel(op, dispatch_key):
    """The Python kernel serving ``op`` on the CPU."""
    return _entry(_qualname_of(op)).kernel


def get_ctx():
    raise RuntimeError("torch.library.get_ctx() is only valid inside a fake (abstract) kernel; hookgrad has no "
                       "fake tensors, so those kernels never run")


class OpCheckError(Exception):
    """An ``opcheck`` test failed (raised when ``raise_exception=True``)."""


class MetadataMismatchError(Exception):
    """The fake kernel's outputs differ from the real kernel's in shape, dtype or count."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason

    def __repr__(self):
        return f"MetadataMismatchError(reason={self.reason!r})"


_OPCHECK_TESTS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def _cloned(values):
    Tensor = _tensor_cls()
    return tuple(v.detach().clone().requires_grad_(v.requires_grad) if isinstance(v, Tensor) else v for v in values)


def _outputs_of(result) -> list:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def opcheck(op, args, kwargs=None, *, test_utils=None, raise_exception: bool = True, atol=None, rtol=None):
    """torch's operator checks, as far as they apply without a tracer: ``test_schema`` (runs; inputs not
    declared in ``mutates_args`` are left unchanged; outputs do not alias inputs), ``test_autograd_registration``
    (with inputs that require grad, backward through the op reaches them), ``test_faketensor`` (a fake
    kernel is registered and its outputs have the real outputs' shapes and dtypes),
    ``test_aot_dispatch_dynamic`` (the registered backward gives gradients shaped as their inputs and
    the op gives the same values when run again). Returns ``{test: "SUCCESS" or the exception}``."""
    kwargs = kwargs or {}
    tests = _OPCHECK_TESTS if test_utils is None else ((test_utils,) if isinstance(test_utils, str)
                                                       else tuple(test_utils))
    unknown = [t for t in tests if t not in _OPCHECK_TESTS]
    if unknown:
        raise ValueError(f"opcheck(op, ...): test_utils is expected to only contain {_OPCHECK_TESTS}, but got "
                         f"{tests}")
    qualname = _qualname_of(op)
    entry = _OPERATORS.get(qualname)
    checks = {"test_schema": _check_schema_behaviour, "test_autograd_registration": _check_autograd,
              "test_faketensor": _check_fake, "test_aot_dispatch_dynamic": _check_repeatable_backward}
    result = {}
    for name in tests:
        try:
            checks[name](op, entry, args, kwargs)
            result[name] = "SUCCESS"
        except Exception as exc:  # noqa: BLE001 - reported, or raised when asked
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {name} failed with {exc} (scroll up for stack trace)") from exc
            result[name] = exc
    return result


def _check_schema_behaviour(op, entry, args, kwargs):
    Tensor = _tensor_cls()
    copies = _cloned(args)
    before = [v.detach().clone() if isinstance(v, Tensor) else None for v in copies]
    op(*copies, **kwargs)
    mutated = set(entry.mutated) if entry is not None else set()
    names = list(entry.signature.parameters) if entry is not None and entry.signature is not None else []
    for position, (now, then) in enumerate(zip(copies, before)):
        name = names[position] if position < len(names) else str(position)
        if then is not None and name not in mutated and not (now.detach() == then).all() \
                and not (now.isnan() & then.isnan()).all():
            raise RuntimeError(f"{_qualname_text(op)}: argument '{name}' is mutated by the operator but not "
                               "declared in mutates_args")


def _qualname_text(op) -> str:
    return _qualname_of(op).replace("::", ".") + ".default"


def _check_autograd(op, entry, args, kwargs):
    Tensor = _tensor_cls()
    copies = _cloned(args)
    wants = [v for v in copies if isinstance(v, Tensor) and v.requires_grad]
    out = op(*copies, **kwargs)
    outputs = [t for t in _flat_tensors(_outputs_of(out)) if isinstance(t, Tensor) and t.requires_grad]
    if wants and outputs:
        from . import autograd
        autograd.grad(sum(o.sum() for o in outputs), wants, allow_unused=True)


def _fake_kernel(op, entry):
    fake = None if entry is None else (entry.fake or entry.other_kernels.get("Meta"))
    if fake is None:
        name = _qualname_text(op).split(".")[1]
        raise RuntimeError(f"There was no fake impl registered for {op!r}. This is necessary for "
                           f"torch.compile/export/fx tracing to work. Please use `{name}.register_fake` to add an "
                           "fake impl.")
    return fake


def _check_fake(op, entry, args, kwargs):
    fake = _fake_kernel(op, entry)
    from .autograd.grad_mode import no_grad
    Tensor = _tensor_cls()
    with no_grad():
        real = _outputs_of(op(*_cloned(args), **kwargs))
        faked = _outputs_of(fake(*_cloned(args), **kwargs))
    where = _qualname_text(op)
    if len(real) != len(faked):
        raise MetadataMismatchError(f"When comparing the output of {where} on FakeTensor and concrete Tensors, found "
                                    f"{len(faked)} outputs from the fake kernel and {len(real)} from the real one")
    for r, f in zip(real, faked):
        if isinstance(r, Tensor) != isinstance(f, Tensor):
            raise MetadataMismatchError(f"When comparing the output of {where} on FakeTensor and concrete Tensors, "
                                        f"found a {type(f).__name__} where the real kernel gave a {type(r).__name__}")
        if isinstance(r, Tensor):
            if r.shape != f.shape:
                raise MetadataMismatchError(
                    f"When comparing the output of {where} on FakeTensor and concrete Tensors, found mismatched "
                    f"tensor metadata: Shapes {r.shape} and {f.shape} are not equal!")
            if r.dtype != f.dtype:
                raise MetadataMismatchError(
                    f"When comparing the output of {where} on FakeTensor and concrete Tensors, found mismatched "
                    f"tensor metadata: Dtypes {r.dtype} and {f.dtype} are not equal!")


def _check_repeatable_backward(op, entry, args, kwargs):
    _fake_kernel(op, entry)  # torch traces the op with it
    Tensor = _tensor_cls()
    from .autograd.grad_mode import no_grad
    with no_grad():
        first, second = (_outputs_of(op(*_cloned(args), **kwargs)) for _ in range(2))
    for a, b in zip(first, second):
        if isinstance(a, Tensor) and not (a.shape == b.shape and ((a == b) | (a.isnan() & b.isnan())).all()):
            raise RuntimeError(f"{_qualname_text(op)}: two runs on the same inputs gave different outputs")
    copies = _cloned(args)
    wants = [v for v in copies if isinstance(v, Tensor) and v.requires_grad]
    out = op(*copies, **kwargs)
    outputs = [t for t in _flat_tensors(_outputs_of(out)) if isinstance(t, Tensor) and t.requires_grad]
    if not wants or not outputs:
        return
    from . import autograd
    grads = autograd.grad(sum(o.sum() for o in outputs), wants, allow_unused=True)
    for g, t in zip(grads, wants):
        if g is not None and g.shape != t.shape:
            raise RuntimeError(f"{_qualname_text(op)}: the registered backward gave a gradient of shape "
                               f"{list(g.shape)} for an input of shape {list(t.shape)}")


# ---------------------------------------------------------------------------- the classic API

fallthrough_kernel = object()  # the marker torch's Library.impl takes for "fall through"

_LIBRARY_KINDS = ("DEF", "IMPL", "FRAGMENT")
_DEFINED_NAMESPACES = {"aten", "prim", "prims"}  # torch's own


class Library:
    """A namespace's operators: ``define`` a schema, ``impl`` a kernel for it (the CPU and composite
    kernels run; kernels of device back ends are kept unused)."""

    def __init__(self, ns: str, kind: str, dispatch_key: str = ""):
        if kind not in _LIBRARY_KINDS:
            raise ValueError(f"Unsupported kind: {kind}")
        if kind == "DEF":
            if ns in _DEFINED_NAMESPACES:
                raise RuntimeError(f"Only a single TORCH_LIBRARY can be used to register the namespace {ns}; please "
                                   "put all of your definitions in a single TORCH_LIBRARY block.  If you were trying "
                                   "to specify implementations, consider using TORCH_LIBRARY_IMPL (which can be "
                                   "duplicated).  If you really intended to define operators for a single namespace "
                                   "in a distributed way, you can use TORCH_LIBRARY_FRAGMENT to explicitly indicate "
                                   "this.")
            _DEFINED_NAMESPACES.add(ns)
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._op_defs: set = set()
        self._op_impls: set = set()
        self._destroyed = False

    def __repr__(self):
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def _check_alive(self):
        if self._destroyed:
            raise AssertionError("Library object has been destroyed")

    def define(self, schema: str, alias_analysis: str = "", *, tags=()) -> str:
        self._check_alive()
        name = schema.split("(")[0].strip()
        if self.kind == "IMPL":
            raise RuntimeError(f'def("{name}"): Cannot define an operator inside of a TORCH_LIBRARY_IMPL block.  All '
                               "def()s should be placed in the (unique) TORCH_LIBRARY block for their namespace.  "
                               "(Error occurred while processing TORCH_LIBRARY_IMPL block)")
        _check_schema_text(schema)
        if "." in name:
            name = name.split(".")[0]
        qualname = f"{self.ns}::{name}"
        if qualname in _OPERATORS:
            raise RuntimeError(f"Tried to register an operator ({self.ns}::{schema}) with the same name and overload "
                               "name multiple times. Each overload's schema should only be registered with a single "
                               "call to def().")
        entry = _OPERATORS[qualname] = OperatorEntry(qualname, f"{self.ns}::{schema}")
        for key, fn in _PENDING_IMPLS.pop(qualname, {}).items():  # impls registered before the def
            _set_kernel(entry, key, fn)
        self._op_defs.add(qualname)
        from .ops import ops
        ops._forget(self.ns, name)
        return name

    def impl(self, op_name, fn, dispatch_key: str = "", *, with_keyset: bool = False, allow_override=False):
        self._check_alive()
        if isinstance(op_name, str):
            name = op_name.split("::")[-1].split(".")[0]
            qualname = f"{self.ns}::{name}" if "::" not in op_name else op_name.split(".")[0]
        else:
            qualname = _qualname_of(op_name)
        key = dispatch_key or self.dispatch_key or "CompositeImplicitAutograd"
        if fn is fallthrough_kernel:
            return
        entry = _OPERATORS.get(qualname)
        if entry is None:
            namespace, _, name = qualname.partition("::")
            if namespace == "aten":
                raise NotImplementedError(f"hookgrad cannot override torch's own operator {qualname}")
            # torch takes a kernel for an operator defined later; it joins the operator at its def
            _PENDING_IMPLS.setdefault(qualname, {})[key] = fn
            self._op_impls.add((qualname, key))
            return
        self._op_impls.add((qualname, key, _set_kernel(entry, key, fn)))

    def fallback(self, fn, dispatch_key: str = "", *, with_keyset: bool = False):
        if dispatch_key == "":
            dispatch_key = self.dispatch_key
        if self.ns != "_":
            raise RuntimeError('Fallback can only be registered using library fragment on the global namespace "_" '
                               f"but it is {self.ns}")
        if dispatch_key == "":
            raise AssertionError("dispatch_key must not be empty for fallback")
        self._check_alive()
        _check_fallback_key(dispatch_key)
        if with_keyset:
            raise NotImplementedError("Library.fallback(with_keyset=True): hookgrad has no dispatch key sets to hand "
                                      "the kernel")
        _BACKEND_FALLBACKS[dispatch_key] = (fn, _caller_site(), self)

    def _destroy(self):
        """Take back what this library registered: its operators, its kernels (the kernels they replaced
        return) and, for a DEF library, the claim on its namespace."""
        from .ops import ops
        for record in sorted(self._op_impls, key=lambda r: -len(r)):
            qualname, key = record[0], record[1]
            pending = _PENDING_IMPLS.get(qualname)
            if pending is not None:
                pending.pop(key, None)
            entry = _OPERATORS.get(qualname)
            if entry is not None and len(record) == 3 and record[0] not in self._op_defs:
                _restore_kernel(entry, key, record[2])
        self._op_impls.clear()
        for qualname in self._op_defs:
            _OPERATORS.pop(qualname, None)
            namespace, _, name = qualname.partition("::")
            ops._forget(namespace, name)
        self._op_defs.clear()
        if self.kind == "DEF":
            _DEFINED_NAMESPACES.discard(self.ns)
        for key in [k for k, (_, _, owner) in _BACKEND_FALLBACKS.items() if owner is self]:
            del _BACKEND_FALLBACKS[key]
        self._destroyed = True


# backend fallbacks: the kernel torch runs for an operator with no kernel of its own for that backend.
# Every built-in op has a CPU kernel, so here one runs for operators defined without a kernel.
_BACKEND_FALLBACKS: dict = {}  # dispatch key -> (kernel, where it was registered, its Library)
_BACKENDS = ("CPU", "CUDA", "HIP", "XLA", "MPS", "IPU", "XPU", "HPU", "VE", "Lazy", "MTIA", "MAIA", "PrivateUse1",
             "PrivateUse2", "PrivateUse3")
_FALLBACK_KEYS = {prefix + backend for backend in _BACKENDS
                  for prefix in ("", "Sparse", "Quantized", "NestedTensor", "SparseCsr")}
# keys torch registers its own fallback for (a second one is refused); alias keys spread over many keys
_TORCH_OWN_FALLBACKS = {"Meta", "Python", "PythonTLSSnapshot", "PythonDispatcher", "BackendSelect", "Functionalize",
                        "ADInplaceOrView", "Conjugate", "Negative", "ZeroTensor", "Batched", "VmapMode",
                        "FuncTorchBatched", "FuncTorchVmapMode", "FuncTorchGradWrapper",
                        "FuncTorchDynamicLayerBackMode", "FuncTorchDynamicLayerFrontMode", "Tracer", "AutogradOther",
                        "Named"} | {prefix + backend for backend in _BACKENDS for prefix in ("Autograd", "Autocast")}
_ALIAS_KEYS = {"Autograd": "AutogradOther", "CompositeImplicitAutograd": "Meta",
               "CompositeExplicitAutograd": None, "CompositeExplicitAutogradNonFunctional": None,
               "CompositeImplicitAutogradNestedTensor": None, "FuncTorchBatchedDecomposition": None}


def _check_fallback_key(key: str) -> None:
    if key.startswith("Composite") and "CPU" in _BACKEND_FALLBACKS:
        key = "CPU"  # the first backend key torch registers an alias key's fallback for
    if key in _TORCH_OWN_FALLBACKS or _ALIAS_KEYS.get(key) or key in _BACKEND_FALLBACKS:
        shown = _ALIAS_KEYS.get(key) or key
        previous = _BACKEND_FALLBACKS[shown][1] if shown in _BACKEND_FALLBACKS else f"torch's own {shown} fallback"
        raise RuntimeError(f"Tried to register multiple backend fallbacks for the same dispatch key {shown}; previous "
                           f"registration registered at {previous}, new registration registered at {_caller_site()}")
    if key in _ALIAS_KEYS:
        raise NotImplementedError(f"Library.fallback for the alias key {key}: hookgrad registers a fallback for one "
                                  "backend key (CPU, CUDA, ...)")
    if key not in _FALLBACK_KEYS:
        raise RuntimeError(f"could not parse dispatch key: {key}")


def _caller_site() -> str:
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return "<unknown>" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def _positional(schema: str, args: tuple, kwargs: dict):
    """``args`` and ``kwargs`` as the dispatcher hands them to a boxed kernel: arguments the schema
    takes by position, by position."""
    inside = schema[schema.index("(") + 1:schema.rindex(")") if ") ->" not in schema else schema.index(") ->")]
    names = []
    for part in inside.split(","):
        part = part.strip()
        if part == "*":
            break
        if part:
            names.append(part.split("=")[0].split()[-1])
    args = list(args)
    for name in names[len(args):]:
        if name not in kwargs:
            break
        args.append(kwargs.pop(name))
    return tuple(args), kwargs


_PENDING_IMPLS: dict = {}  # {qualname: {dispatch key: kernel}} for operators not defined yet
_COMPUTE_KEYS = ("CPU", "cpu", "CompositeImplicitAutograd", "CompositeExplicitAutograd", "Autograd", "AutogradCPU", "")
_ABSENT = object()


def _set_kernel(entry, key, fn):
    """Install ``fn`` for ``key`` on ``entry``; returns what it replaced (``_ABSENT`` for nothing)."""
    if key in _COMPUTE_KEYS:
        previous = entry.kernel if entry.kernel is not None else _ABSENT
        entry.kernel = fn
    else:
        previous = entry.other_kernels.get(key, _ABSENT)
        entry.other_kernels[key] = fn
    return previous


def _restore_kernel(entry, key, previous):
    if key in _COMPUTE_KEYS:
        entry.kernel = None if previous is _ABSENT else previous
    elif previous is _ABSENT:
        entry.other_kernels.pop(key, None)
    else:
        entry.other_kernels[key] = previous


_SCHEMA_TYPE_NAMES = {"Tensor", "int", "SymInt", "float", "bool", "str", "Scalar", "ScalarType", "Layout",
                      "MemoryFormat", "Device", "Generator", "Dimname", "complex", "Any", "Storage", "Stream",
                      "QScheme", "t", "DimVector", "SymBool", "GraphModule"}


def _check_schema_text(schema: str) -> None:
    """torch's RuntimeError for a schema that does not parse or names an unknown type."""
    from ._function_schema import split_schema
    name_part = schema.split("(")[0].strip()
    if "(" not in schema or not name_part or any(c.isspace() for c in name_part):
        raise RuntimeError(f"expected eof but found 'ident' here:\n{schema}")
    if "->" not in schema:
        raise RuntimeError(f"expected arrow but found 'eof' here:\n{schema}")
    try:
        _, _, arguments, returns, _ = split_schema(schema)
    except (ValueError, IndexError) as exc:
        raise RuntimeError(f"expected ) but found 'arrow' here:\n{schema}") from exc
    for argument in list(arguments) + list(returns):
        text = argument.type.annotation_str
        while text.endswith("?") or text.endswith("]"):
            text = text[:-1] if text.endswith("?") else text[:text.rindex("[")]
        if text not in _SCHEMA_TYPE_NAMES:
            raise RuntimeError("\nunknown type specifier. Common valid schema types include Tensor, SymInt, int, "
                               "float, bool, Scalar; for a full list, please see "
                               "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/README.md#func :\n"
                               f"{schema}\n")


@contextlib.contextmanager
def _scoped_library(*args, **kwargs):
    """A Library for a ``with`` block: what it registered is taken back on exit."""
    lib = Library(*args, **kwargs)
    try:
        yield lib
    finally:
        lib._destroy()


_keep_alive: list = []  # libraries made by define/impl without lib=, as torch keeps them


def define(qualname: str, schema: str, *, lib=None, tags=()):
    """Define the operator ``qualname`` ("ns::name") with ``schema`` ("(Tensor x) -> Tensor")."""
    namespace, name = qualname.split("::")
    if lib is None:
        lib = Library(namespace, "FRAGMENT")
        _keep_alive.append(lib)
    lib.define(name + schema, tags=tags)


def impl(qualname, types, func=None, *, lib=None):
    """Register ``func`` as the kernel of ``qualname`` for the device ``types`` ("cpu", "cuda", ...)."""
    def register(f):
        namespace = _qualname_of(qualname).split("::")[0]
        library = lib
        if library is None:
            library = Library(namespace, "FRAGMENT")
            _keep_alive.append(library)
        kinds = [types] if isinstance(types, str) else list(types)
        for kind in kinds:
            key = {"cpu": "CPU", "default": "CompositeExplicitAutograd"}.get(kind, kind)
            library.impl(_qualname_of(qualname) if "::" in str(qualname) else qualname, f, key)
        return f
    return register(func) if func is not None else register

