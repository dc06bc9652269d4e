"""``Proxy``: stands in for a value during symbolic tracing; every operation on it adds a Node."""
from __future__ import annotations

import dis
import inspect
import operator

__all__ = ["Proxy", "Attribute", "TraceError"]


class TraceError(ValueError):
    """Raised when traced code needs the value of a Proxy (control flow, iteration)."""


class Proxy:
    def __init__(self, node, tracer=None):
        self.node = node
        self.tracer = tracer if tracer is not None else node.graph._tracer

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Attribute(self, name)

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self, *args), kwargs)

    def __iter__(self):
        # ``a, b = proxy`` unpacks a known number of items: record one getitem per item
        frame = inspect.currentframe().f_back
        instructions = list(dis.get_instructions(frame.f_code))
        current = next((i for i in instructions if i.offset == frame.f_lasti), None)
        if current is not None and current.opname == "UNPACK_SEQUENCE":
            return (self[i] for i in range(current.argval))
        return self.tracer.iter(self)

    def __bool__(self):
        return self.tracer.to_bool(self)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want this call to be "
                           "recorded, please call torch.fx.wrap('len') at module scope")

    def keys(self):
        return self.tracer.keys(self)

    def __getitem__(self, index):
        return self.tracer.create_proxy("call_function", operator.getitem, (self, index), {})

    def __abs__(self):
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

    def __neg__(self):
        return self.tracer.create_proxy("call_function", operator.neg, (self,), {})

    def __pos__(self):
        return self.tracer.create_proxy("call_function", operator.pos, (self,), {})

    def __invert__(self):
        return self.tracer.create_proxy("call_function", operator.invert, (self,), {})


class Attribute(Proxy):
    """``proxy.name``: a method call when called, else a ``getattr`` node (made on first use)."""

    def __init__(self, root: Proxy, attr: str):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root, *args), kwargs)


def _binary(op, reflected: bool):
    def method(self, other):
        args = (other, self) if reflected else (self, other)
        return self.tracer.create_proxy("call_function", op, args, {})
    return method


_BINARY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
           "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "matmul": operator.matmul,
           "and": operator.and_, "or": operator.or_, "xor": operator.xor, "lshift": operator.lshift,
           "rshift": operator.rshift}
for _name, _op in _BINARY.items():
    setattr(Proxy, f"__{_name}__", _binary(_op, False))
    setattr(Proxy, f"__r{_name}__", _binary(_op, True))
for _name, _op in {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
                   "eq": operator.eq, "ne": operator.ne}.items():
    setattr(Proxy, f"__{_name}__", _binary(_op, False))
Proxy.__hash__ = object.__hash__
