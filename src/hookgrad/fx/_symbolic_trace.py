"""Symbolic tracing: run ``forward`` on Proxies and record what it does into a Graph.

While a trace runs, ``Module.__call__`` and ``Module.__getattr__`` are swapped for versions that
record leaf-module calls and parameter reads, and the public functions of ``hookgrad``,
``hookgrad.nn.functional`` and ``hookgrad.linalg`` (plus anything registered with ``wrap``) record a
``call_function`` node when given a Proxy; the originals are put back when the trace ends, whatever
happens. Code that needs a traced value (``if x.sum() > 0``, ``for row in x``) raises ``TraceError``.
"""
from __future__ import annotations

import builtins
import contextlib
import functools
import inspect
import types

from .._tensor import Tensor
from ..nn.modules.container import Sequential
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from .graph import Graph
from .graph_module import GraphModule
from .node import Node, map_aggregate
from .proxy import Proxy, TraceError

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH"]

_wrapped_globals: list[tuple[dict, str]] = []


class _PlaceholderMarker:
    def __repr__(self):
        return "PH"


PH = _PlaceholderMarker()


def wrap(fn_or_name):
    """Record calls to this module-level function as ``call_function`` nodes instead of tracing into it.

    Call at module scope with the function or its name; the caller's globals are patched during traces.
    """
    caller = inspect.currentframe().f_back
    if caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    name = fn_or_name if isinstance(fn_or_name, str) else fn_or_name.__name__
    _wrapped_globals.append((caller.f_globals, name))
    return fn_or_name


def _has_proxy(args, kwargs) -> bool:
    found = []
    map_aggregate((args, kwargs), lambda a: found.append(a) if isinstance(a, Proxy) else None)
    return bool(found)


def _recording(fn, tracer):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if _has_proxy(args, kwargs):
            return tracer.create_proxy("call_function", fn, args, kwargs)
        return fn(*args, **kwargs)
    call.__fx_original__ = fn
    return call


class Tracer:
    """Turns a module's ``forward`` (or a function) into a Graph. Override ``is_leaf_module`` to choose
    which submodules are recorded as single ``call_module`` nodes."""

    def __init__(self, autowrap_modules=(), autowrap_functions=(), param_shapes_constant: bool = False):
        self.autowrap_functions = tuple(autowrap_functions)
        self.param_shapes_constant = param_shapes_constant
        self.graph: Graph | None = None
        self.root: Module | None = None
        self.tensor_attrs: dict = {}

    # ---- hooks a subclass may override ----------------------------------------------------------
    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        # hookgrad's layers are named torch.nn.* under `hookgrad run`
        return type(m).__module__.startswith(("hookgrad.nn", "torch.nn")) and not isinstance(m, Sequential)

    def path_of_module(self, mod: Module) -> str:
        for name, candidate in self.root.named_modules():
            if candidate is mod:
                return name
        raise NameError("module is not installed as a submodule")

    def call_module(self, m: Module, forward, args, kwargs):
        path = self.path_of_module(m)
        if not self.is_leaf_module(m, path):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", path, args, kwargs)

    def getattr(self, attr: str, attr_val, parameter_proxy_cache: dict):
        if isinstance(attr_val, Parameter):
            for name, p in self.root.named_parameters():
                if attr_val is p:
                    if name not in parameter_proxy_cache:
                        parameter_proxy_cache[name] = self.create_proxy("get_attr", name, (), {})
                    return parameter_proxy_cache[name]
        return attr_val

    def to_bool(self, obj: Proxy) -> bool:
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj: Proxy):
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy is used in a loop "
                         "or as a *args or **kwargs function argument. See the torch.fx docs on pytorch.org for a "
                         "more detailed explanation of what types of control flow can be traced, and check out the "
                         "Proxy docstring for help troubleshooting Proxy iteration errors")

    def keys(self, obj: Proxy):
        return Attribute_keys(obj)

    # ---- building nodes -------------------------------------------------------------------------
    def create_arg(self, a):
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Node):
            return a
        if isinstance(a, Tensor):
            for name, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", name, (), {})
            for name, b in self.root.named_buffers():
                if a is b:
                    return self.create_node("get_attr", name, (), {})
            if id(a) not in self.tensor_attrs:
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                name = f"_tensor_constant{i}"
                setattr(self.root, name, a)
                self.tensor_attrs[id(a)] = name
            return self.create_node("get_attr", self.tensor_attrs[id(a)], (), {})
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            return type(a)(*[self.create_arg(x) for x in a])
        if isinstance(a, (tuple, list)):
            return type(a)(self.create_arg(x) for x in a)
        if isinstance(a, dict):
            return {k: self.create_arg(v) for k, v in a.items()}
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, Module):
            raise RuntimeError(f"Modules cannot be traced as arguments: {type(a).__name__}")
        return a

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None) -> Node:
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        node = self.create_node(kind, target, self.create_arg(tuple(args)), self.create_arg(dict(kwargs)), name,
                                type_expr)
        return proxy_factory_fn(node) if proxy_factory_fn is not None else self.proxy(node)

    # ---- the trace --------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _patched(self):
        import hookgrad
        spaces = [hookgrad.__dict__, hookgrad.nn.functional.__dict__, hookgrad.linalg.__dict__]
        saved: list[tuple[dict, str, object]] = []
        parameter_proxy_cache: dict = {}
        tracer = self
        original_call, original_getattr = Module.__call__, Module.__getattr__

        def traced_call(mod, *args, **kwargs):
            return tracer.call_module(mod, functools.partial(original_call, mod), args, kwargs) \
                if tracer._is_in_root(mod) else original_call(mod, *args, **kwargs)

        def traced_getattr(mod, name):
            value = original_getattr(mod, name)
            return tracer.getattr(name, value, parameter_proxy_cache)

        try:
            for space in spaces:
                for name, value in list(space.items()):
                    if name.startswith("_") or isinstance(value, (type, types.ModuleType)) or not callable(value):
                        continue
                    saved.append((space, name, value))
                    space[name] = _recording(value, self)
            for space, name in _wrapped_globals:
                if name in space:
                    saved.append((space, name, space[name]))
                    space[name] = _recording(space[name], self)
                elif hasattr(builtins, name):
                    saved.append((space, name, _MISSING))
                    space[name] = _recording(getattr(builtins, name), self)
            for fn in self.autowrap_functions:
                module_globals = getattr(fn, "__globals__", {})
                if module_globals.get(fn.__name__) is fn:
                    saved.append((module_globals, fn.__name__, fn))
                    module_globals[fn.__name__] = _recording(fn, self)
            Module.__call__ = traced_call
            Module.__getattr__ = traced_getattr
            yield
        finally:
            Module.__call__, Module.__getattr__ = original_call, original_getattr
            for space, name, value in reversed(saved):
                if value is _MISSING:
                    space.pop(name, None)
                else:
                    space[name] = value

    def _is_in_root(self, mod: Module) -> bool:
        return any(candidate is mod for candidate in self.root.modules())

    def trace(self, root, concrete_args=None) -> Graph:
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
            bound_self = [root]
        else:
            self.root = Module()
            fn = root
            bound_self = []
        self.graph = Graph()
        self.graph._tracer = self
        self.tensor_attrs = {}
        concrete_args = dict(concrete_args or {})
        signature = inspect.signature(fn)
        params = list(signature.parameters.values())[len(bound_self):]
        args = []
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise NotImplementedError(f"hookgrad's symbolic_trace does not trace *args/**kwargs ({p.name}); "
                                          f"give the forward named parameters")
            if p.name in concrete_args:
                args.append(concrete_args[p.name])
                continue
            default = () if p.default is inspect.Parameter.empty else (p.default,)
            args.append(self.create_proxy("placeholder", p.name, default, {}))
        with self._patched():
            result = fn(*bound_self, *args)
        self.create_node("output", "output", (self.create_arg(result),), {})
        return self.graph


_MISSING = object()


def Attribute_keys(obj):  # noqa: N802 - the proxy returned for ``obj.keys()``
    return obj.tracer.create_proxy("call_method", "keys", (obj,), {})


def symbolic_trace(root, concrete_args=None) -> GraphModule:
    """Trace ``root`` (a Module or a function) into a GraphModule whose ``forward`` runs the graph."""
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
