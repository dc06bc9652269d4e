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


def opcheck(op, args, kwargs=None, *, test_utils=None, raise_exception: bool = True, atol=None, rtol=None):
    """Run the operator once and check what hookgrad can check eagerly: it runs, its outputs do not
    alias its inputs, and with a registered gradient, backward runs. Returns ``{test: "SUCCESS"}``."""
    kwargs = kwargs or {}
    result = {}
    try:
        out = op(*args, **kwargs)
        result["test_schema"] = "SUCCESS"
        Tensor = _tensor_cls()
        outputs = [t for t in _flat_tensors(out if isinstance(out, (tuple, list)) else (out,))
                   if isinstance(t, Tensor) and t.requires_grad]
        if outputs:
            sum(o.sum() for o in outputs).backward()
        result["test_autograd_registration"] = "SUCCESS"
    except Exception as exc:  # noqa: BLE001 - reported, or raised when asked
        if raise_exception:
            raise
        result["test_schema"] = exc
    return result


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

    def __repr__(self):
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def define(self, schema: str, alias_analysis: str = "", *, tags=()) -> str:
        name = schema.split("(")[0].strip()
        if "." in name:
            name = name.split(".")[0]
        qualname = f"{self.ns}::{name}"
        if qualname in _OPERATORS:
            raise RuntimeError(f"Tried to register an operator ({self.ns}::{schema}) with the same name and overload "
                               "name multiple times. Each overload's schema should only be registered with a single "
                               "call to def().")
        _OPERATORS[qualname] = OperatorEntry(qualname, f"{self.ns}::{schema}")
        self._op_defs.add(qualname)
        from .ops import ops
        ops._forget(self.ns, name)
        return name

    def impl(self, op_name, fn, dispatch_key: str = "", *, with_keyset: bool = False, allow_override=False):
        if isinstance(op_name, str):
            name = op_name.split("::")[-1].split(".")[0]
            qualname = f"{self.ns}::{name}" if "::" not in op_name else op_name.split(".")[0]
        else:
            qualname = _qualname_of(op_name)
        entry = _OPERATORS.get(qualname)
        if entry is None:
            namespace, _, name = qualname.partition("::")
            if namespace == "aten":
                raise NotImplementedError(f"hookgrad cannot override torch's own operator {qualname}")
            raise RuntimeError(f"Could not find schema for {qualname}")
        key = dispatch_key or self.dispatch_key or "CompositeImplicitAutograd"
        if fn is fallthrough_kernel:
            return
        if key in ("CPU", "cpu", "CompositeImplicitAutograd", "CompositeExplicitAutograd", "Autograd",
                   "AutogradCPU", ""):
            entry.kernel = fn
        else:
            entry.other_kernels[key] = fn
        self._op_impls.add((qualname, key))

    def fallback(self, fn, dispatch_key: str = "", *, with_keyset: bool = False):
        raise NotImplementedError("Library.fallback registers a dispatcher-wide kernel; hookgrad has no dispatcher")

    def _destroy(self):
        for qualname in self._op_defs:
            _OPERATORS.pop(qualname, None)
        self._op_defs.clear()


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

