"""``torch.utils._pytree``: nested containers ("pytrees") taken apart into their leaves and a
``TreeSpec`` describing the structure, and put back together.

Lists, tuples, dicts (in insertion order), namedtuples, OrderedDicts, defaultdicts and deques are
nodes; everything else is a leaf unless registered with ``register_pytree_node`` (or
``register_dataclass``). A ``TreeSpec`` compares, hashes, prints and serializes (``treespec_dumps``)
as torch's does, so that code which inspects specs sees the same thing.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import threading
import types
import warnings
from collections import OrderedDict, defaultdict, deque, namedtuple
from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any, NamedTuple

from .._dtype import Size

__all__ = ["PyTree", "Context", "FlattenFn", "UnflattenFn", "DumpableContext", "ToDumpableContextFn",
           "FromDumpableContextFn", "PyTreeSpec", "TreeSpec", "LeafSpec", "keystr", "key_get",
           "register_pytree_node", "tree_is_leaf", "tree_flatten", "tree_flatten_with_path", "tree_unflatten",
           "tree_iter", "tree_leaves", "tree_leaves_with_path", "tree_structure", "tree_map", "tree_map_with_path",
           "tree_map_", "tree_map_only", "tree_map_only_", "tree_all", "tree_any", "tree_all_only",
           "tree_any_only", "treespec_dumps", "treespec_loads", "treespec_pprint", "is_namedtuple",
           "is_namedtuple_class", "is_namedtuple_instance", "is_structseq", "is_structseq_class",
           "is_structseq_instance"]

Context = Any
PyTree = Any
FlattenFn = Callable[[PyTree], "tuple[list[Any], Context]"]
UnflattenFn = Callable[[Iterable[Any], Context], PyTree]
DumpableContext = Any
ToDumpableContextFn = Callable[[Context], DumpableContext]
FromDumpableContextFn = Callable[[DumpableContext], Context]
FlattenWithKeysFn = Callable[[PyTree], "tuple[list[tuple[Any, Any]], Any]"]
FlattenFunc, UnflattenFunc, FlattenWithKeysFunc = FlattenFn, UnflattenFn, FlattenWithKeysFn
KeyPath = tuple

DEFAULT_TREESPEC_SERIALIZATION_PROTOCOL = 1
NO_SERIALIZED_TYPE_NAME_FOUND = "NO_SERIALIZED_TYPE_NAME_FOUND"


class NodeDef(NamedTuple):
    type: type
    flatten_fn: FlattenFn
    unflatten_fn: UnflattenFn
    flatten_with_keys_fn: FlattenWithKeysFn | None


class _SerializeNodeDef(NamedTuple):
    typ: type
    serialized_type_name: str
    to_dumpable_context: ToDumpableContextFn | None
    from_dumpable_context: FromDumpableContextFn | None


_NODE_REGISTRY_LOCK = threading.RLock()
SUPPORTED_NODES: dict = {}
SUPPORTED_SERIALIZED_TYPES: dict = {}
SERIALIZED_TYPE_TO_PYTHON_TYPE: dict = {}


def _private_register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None,
                                  to_dumpable_context=None, from_dumpable_context=None, flatten_with_keys_fn=None):
    with _NODE_REGISTRY_LOCK:
        if cls in SUPPORTED_NODES:
            warnings.warn(f"{cls} is already registered as pytree node. Overwriting the previous registration.",
                          stacklevel=2)
        SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)
        if (to_dumpable_context is None) ^ (from_dumpable_context is None):
            raise ValueError(f"Both to_dumpable_context and from_dumpable_context for {cls} must be None or "
                             "registered.")
        name = NO_SERIALIZED_TYPE_NAME_FOUND if serialized_type_name is None else serialized_type_name
        SUPPORTED_SERIALIZED_TYPES[cls] = _SerializeNodeDef(cls, name, to_dumpable_context, from_dumpable_context)
        SERIALIZED_TYPE_TO_PYTHON_TYPE[name] = cls


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None, to_dumpable_context=None,
                         from_dumpable_context=None, flatten_with_keys_fn=None) -> None:
    """Make ``cls`` a node: ``flatten_fn(obj) -> (children, context)`` and
    ``unflatten_fn(children, context) -> obj``; ``flatten_with_keys_fn`` gives key paths."""
    with _NODE_REGISTRY_LOCK:
        if cls in SUPPORTED_NODES:
            raise ValueError(f"{cls} is already registered as pytree node.")
    _private_register_pytree_node(cls, flatten_fn, unflatten_fn, serialized_type_name=serialized_type_name,
                                  to_dumpable_context=to_dumpable_context,
                                  from_dumpable_context=from_dumpable_context,
                                  flatten_with_keys_fn=flatten_with_keys_fn)


def _register_pytree_node(cls, flatten_fn, unflatten_fn, to_str_fn=None, maybe_from_str_fn=None, *,
                          serialized_type_name=None, to_dumpable_context=None, from_dumpable_context=None,
                          flatten_with_keys_fn=None) -> None:
    """The deprecated spelling of ``register_pytree_node`` (still used by older libraries)."""
    warnings.warn("`torch.utils._pytree._register_pytree_node` is deprecated. Please use "
                  "`torch.utils._pytree.register_pytree_node` instead.", FutureWarning, stacklevel=2)
    if to_str_fn is not None or maybe_from_str_fn is not None:
        warnings.warn("`to_str_fn` and `maybe_from_str_fn` is deprecated. Please use `to_dumpable_context` and "
                      "`from_dumpable_context` instead.", FutureWarning, stacklevel=2)
    _private_register_pytree_node(cls, flatten_fn, unflatten_fn, serialized_type_name=serialized_type_name,
                                  to_dumpable_context=to_dumpable_context,
                                  from_dumpable_context=from_dumpable_context,
                                  flatten_with_keys_fn=flatten_with_keys_fn)


def _deregister_pytree_node(cls) -> None:
    with _NODE_REGISTRY_LOCK:
        del SUPPORTED_NODES[cls]
        node_def = SUPPORTED_SERIALIZED_TYPES.pop(cls)
        SERIALIZED_TYPE_TO_PYTHON_TYPE.pop(node_def.serialized_type_name, None)


def register_dataclass(cls, *, field_names=None, drop_field_names=None, serialized_type_name=None) -> None:
    """Make a dataclass a node whose children are its init fields (fields that are None are kept
    in the context, not as leaves)."""
    if not dataclasses.is_dataclass(cls):
        if field_names is None:
            raise ValueError("field_names must be specified with a list of all fields used to initialize "
                             f"{cls}, as it is not a dataclass.")
    elif field_names is None:
        field_names = [f.name for f in dataclasses.fields(cls) if f.init]
    else:
        expected = {f.name for f in dataclasses.fields(cls) if f.init} - set(drop_field_names or ())
        if expected != set(field_names):
            raise ValueError("field_names does not include all dataclass fields.\n")
    field_names = list(field_names)

    def flatten(obj):
        values, present, absent = [], [], []
        for name in field_names:
            value = getattr(obj, name)
            if value is None:
                absent.append(name)
            else:
                values.append(value)
                present.append(name)
        return values, [present, absent]

    def unflatten(values, context):
        present, absent = context
        return cls(**dict(zip(present, values, strict=True)), **dict.fromkeys(absent))

    def flatten_with_keys(obj):
        values, (present, _) = flatten(obj)
        return [(GetAttrKey(name), value) for name, value in zip(present, values)], present

    _private_register_pytree_node(cls, flatten, unflatten, serialized_type_name=serialized_type_name,
                                  flatten_with_keys_fn=flatten_with_keys)


# ---------------------------------------------------------------------------------------------- keys

@dataclasses.dataclass(frozen=True)
class SequenceKey:
    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"

    def get(self, sequence):
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class MappingKey:
    key: Any

    def __str__(self) -> str:
        return f"[{self.key!r}]"

    def get(self, mapping):
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    name: str

    def __str__(self) -> str:
        return f".{self.name}"

    def get(self, obj):
        return getattr(obj, self.name)


def keystr(kp) -> str:
    """The key path as the code that would reach the leaf: ``[0]['a'].b``."""
    return "".join(str(k) for k in kp)


def key_get(obj, kp):
    """The element of ``obj`` at key path ``kp``."""
    for key in kp:
        obj = key.get(obj)
    return obj


# ------------------------------------------------------------------------------- built-in node types

def is_namedtuple_class(cls) -> bool:
    return isinstance(cls, type) and issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple) \
        and all(type(f) is str for f in cls._fields) and callable(getattr(cls, "_make", None)) \
        and callable(getattr(cls, "_asdict", None))


def is_namedtuple_instance(obj) -> bool:
    return is_namedtuple_class(type(obj))


def is_namedtuple(obj) -> bool:
    cls = obj if isinstance(obj, type) else type(obj)
    return is_namedtuple_class(cls)


def is_structseq_class(cls) -> bool:
    """A C-level struct sequence (``os.stat_result``, ``time.struct_time``)."""
    return (isinstance(cls, type) and cls.__bases__ == (tuple,) and isinstance(getattr(cls, "n_sequence_fields",
                                                                                       None), int)
            and isinstance(getattr(cls, "n_fields", None), int)
            and isinstance(getattr(cls, "n_unnamed_fields", None), int))


def is_structseq_instance(obj) -> bool:
    return is_structseq_class(type(obj))


def is_structseq(obj) -> bool:
    cls = obj if isinstance(obj, type) else type(obj)
    return is_structseq_class(cls)


class structseq(tuple):
    """Stands for every struct-sequence type in a TreeSpec (as ``namedtuple`` does for namedtuples)."""


def _tuple_flatten(d):
    return list(d), None


def _tuple_unflatten(values, context):
    return tuple(values)


def _list_flatten(d):
    return d, None


def _list_unflatten(values, context):
    return list(values)


def _sequence_flatten_with_keys(d):
    values, context = list(d), None
    return [(SequenceKey(i), v) for i, v in enumerate(values)], context


def _dict_flatten(d):
    return list(d.values()), list(d.keys())


def _dict_flatten_with_keys(d):
    values, context = _dict_flatten(d)
    return [(MappingKey(k), v) for k, v in zip(context, values)], context


def _dict_unflatten(values, context):
    return dict(zip(context, values))


def _namedtuple_flatten(d):
    return list(d), type(d)


def _namedtuple_flatten_with_keys(d):
    values, context = _namedtuple_flatten(d)
    return [(GetAttrKey(field), v) for field, v in zip(context._fields, values)], context


def _namedtuple_unflatten(values, context):
    return context(*values)


def _namedtuple_serialize(context):
    node_def = SUPPORTED_SERIALIZED_TYPES.get(context)
    if node_def is None or node_def.serialized_type_name == NO_SERIALIZED_TYPE_NAME_FOUND:
        raise NotImplementedError(f"Can't serialize TreeSpec of namedtuple class {context} because we didn't "
                                  "register a serializated_type_name. Please register using `_register_namedtuple`.")
    return node_def.serialized_type_name


def _namedtuple_deserialize(dumpable_context):
    if dumpable_context not in SERIALIZED_TYPE_TO_PYTHON_TYPE:
        raise NotImplementedError(f"Can't deserialize TreeSpec of namedtuple class {dumpable_context} because we "
                                  "couldn't find a serializated name.")
    return SERIALIZED_TYPE_TO_PYTHON_TYPE[dumpable_context]


def _register_namedtuple(cls, *, serialized_type_name: str) -> None:
    """Give a namedtuple class a name so that specs holding it can be serialized."""
    _private_register_pytree_node(cls, _namedtuple_flatten, _namedtuple_unflatten,
                                  serialized_type_name=serialized_type_name,
                                  to_dumpable_context=_namedtuple_serialize,
                                  from_dumpable_context=_namedtuple_deserialize,
                                  flatten_with_keys_fn=_namedtuple_flatten_with_keys)


def _structseq_flatten(d):
    return list(d), type(d)


def _structseq_unflatten(values, context):
    return context(values)


def _ordereddict_flatten(d):
    return list(d.values()), list(d.keys())


def _ordereddict_unflatten(values, context):
    return OrderedDict((k, v) for k, v in zip(context, values))


def _defaultdict_flatten(d):
    values, keys = _dict_flatten(d)
    return values, [d.default_factory, keys]


def _defaultdict_flatten_with_keys(d):
    values, context = _defaultdict_flatten(d)
    return [(MappingKey(k), v) for k, v in zip(context[1], values)], context


def _defaultdict_unflatten(values, context):
    default_factory, keys = context
    return defaultdict(default_factory, dict(zip(keys, values)))


def _defaultdict_serialize(context):
    default_factory, keys = context
    return {"default_factory_module": default_factory.__module__,
            "default_factory_name": default_factory.__qualname__, "dict_context": keys}


def _defaultdict_deserialize(dumpable_context):
    if not isinstance(dumpable_context, dict):
        raise AssertionError("dumpable_context must be a dict")
    module = importlib.import_module(dumpable_context["default_factory_module"])
    return [getattr(module, dumpable_context["default_factory_name"]), dumpable_context["dict_context"]]


def _deque_flatten(d):
    return list(d), d.maxlen


def _deque_unflatten(values, context):
    return deque(values, maxlen=context)


_private_register_pytree_node(tuple, _tuple_flatten, _tuple_unflatten, serialized_type_name="builtins.tuple",
                              flatten_with_keys_fn=_sequence_flatten_with_keys)
_private_register_pytree_node(list, _list_flatten, _list_unflatten, serialized_type_name="builtins.list",
                              flatten_with_keys_fn=_sequence_flatten_with_keys)
_private_register_pytree_node(dict, _dict_flatten, _dict_unflatten, serialized_type_name="builtins.dict",
                              flatten_with_keys_fn=_dict_flatten_with_keys)
_private_register_pytree_node(namedtuple, _namedtuple_flatten, _namedtuple_unflatten,
                              serialized_type_name="collections.namedtuple",
                              to_dumpable_context=_namedtuple_serialize,
                              from_dumpable_context=_namedtuple_deserialize,
                              flatten_with_keys_fn=_namedtuple_flatten_with_keys)
_private_register_pytree_node(OrderedDict, _ordereddict_flatten, _ordereddict_unflatten,
                              serialized_type_name="collections.OrderedDict",
                              flatten_with_keys_fn=_dict_flatten_with_keys)
_private_register_pytree_node(defaultdict, _defaultdict_flatten, _defaultdict_unflatten,
                              serialized_type_name="collections.defaultdict",
                              to_dumpable_context=_defaultdict_serialize,
                              from_dumpable_context=_defaultdict_deserialize,
                              flatten_with_keys_fn=_defaultdict_flatten_with_keys)
_private_register_pytree_node(deque, _deque_flatten, _deque_unflatten, serialized_type_name="collections.deque",
                              flatten_with_keys_fn=_sequence_flatten_with_keys)
_private_register_pytree_node(structseq, _structseq_flatten, _structseq_unflatten,
                              serialized_type_name="structseq", flatten_with_keys_fn=_sequence_flatten_with_keys)

def _size_flatten(d):
    return list(d), None


def _size_unflatten(values, context):
    return tuple(values)  # as torch does: a rebuilt Size is a plain tuple


_private_register_pytree_node(Size, _size_flatten, _size_unflatten, serialized_type_name="torch.Size",
                              flatten_with_keys_fn=_sequence_flatten_with_keys)

_RETURN_TYPE_MODULES = ("torch.return_types", "hookgrad.return_types")


def _is_return_type(cls) -> bool:
    """A torch.return_types class (hookgrad's ops define theirs as named tuples in a few modules)."""
    module = getattr(cls, "__module__", "") or ""
    return module in _RETURN_TYPE_MODULES or module.startswith("hookgrad._ops.")


def _register_return_type(cls) -> None:
    """torch.return_types.X (torch's struct sequences, named tuples here) are nodes of their own
    type with no context, as in torch."""
    def flatten(d):
        return list(d), None

    def unflatten(values, context):
        return cls(*values)

    _private_register_pytree_node(cls, flatten, unflatten, flatten_with_keys_fn=_sequence_flatten_with_keys)


STANDARD_DICT_TYPES = frozenset({dict, OrderedDict, defaultdict})
BUILTIN_TYPES = frozenset({tuple, list, dict, namedtuple, OrderedDict, defaultdict, deque, structseq})


def _get_node_type(tree):
    node_type = type(tree)
    # every namedtuple (every struct sequence) class is a node, under one stand-in type
    if node_type not in SUPPORTED_NODES:
        if is_namedtuple_class(node_type):
            if _is_return_type(node_type):
                _register_return_type(node_type)
                return node_type
            return namedtuple
        if is_structseq_class(node_type):
            return structseq
    elif is_namedtuple_class(node_type) and not _is_return_type(node_type):
        return namedtuple
    return node_type


def tree_is_leaf(tree, is_leaf=None) -> bool:
    """Whether ``tree`` is a leaf: not a node type, or ``is_leaf(tree)`` says so."""
    if is_leaf is not None and is_leaf(tree):
        return True
    return _get_node_type(tree) not in SUPPORTED_NODES


# ----------------------------------------------------------------------------------------- TreeSpec

class TreeSpec:
    """The structure of a pytree: the root's node type, its context (dict keys, namedtuple class,
    ...), and one spec per child. A leaf's spec is ``LeafSpec()`` (printed ``*``)."""

    __slots__ = ("type", "_context", "_children", "num_nodes", "num_leaves", "num_children")

    def __init__(self, type, context, children_specs) -> None:
        set_ = object.__setattr__
        set_(self, "type", type)
        set_(self, "_context", context)
        set_(self, "_children", list(children_specs))
        if type is None:
            if context is not None:
                raise AssertionError("leaf node should not have a context")
            if self._children:
                raise AssertionError("leaf node should not have children")
            nodes = leaves = 1
        else:
            nodes, leaves = 1, 0
            for child in self._children:
                nodes += child.num_nodes
                leaves += child.num_leaves
        set_(self, "num_nodes", nodes)
        set_(self, "num_leaves", leaves)
        set_(self, "num_children", len(self._children))

    def __setattr__(self, name, value):
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __repr__(self, indent: int = 0) -> str:
        text = f"TreeSpec({self.type.__name__}, {self._context}, ["
        if self.num_children:
            indent += 2
            parts = [self._children[0].__repr__(indent)]
            parts += ["\n" + " " * indent + child.__repr__(indent) for child in self._children[1:]]
            text += ",".join(parts)
        return text + "])"

    def __eq__(self, other) -> bool:
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (str(self.type) == str(other.type) and self._context == other._context
                and self._children == other._children)

    def __hash__(self) -> int:
        context = self._context
        if self.type is defaultdict:
            context = (context[0], tuple(context[1]))
        elif self.type in (dict, OrderedDict):
            context = tuple(context)
        elif isinstance(context, list):
            context = tuple(context)
        return hash((self.type, context, tuple(self._children)))

    def __getstate__(self):
        return (self.type, self._context, self._children)

    def __setstate__(self, state):
        TreeSpec.__init__(self, *state)

    def __reduce__(self):
        return (TreeSpec, (self.type, self._context, self._children))

    @property
    def context(self):
        return self._context

    @property
    def children_specs(self):
        warnings.warn("`treespec.children_specs` is deprecated. Use `treespec.child(index)` to access a single "
                      "child, or `treespec.children()` to get all children.", FutureWarning, stacklevel=2)
        return self._children

    def is_leaf(self) -> bool:
        return self.num_nodes == 1 and self.num_leaves == 1

    def children(self) -> list:
        return self._children.copy()

    def child(self, index: int):
        return self._children[index]

    def flatten_up_to(self, tree) -> list:
        """The subtrees of ``tree`` at this spec's leaves (``tree`` must have this spec as a prefix)."""
        subtrees: list = []
        self._flatten_up_to(tree, subtrees)
        return subtrees

    def _flatten_up_to(self, node, subtrees: list) -> None:
        if self.is_leaf():
            subtrees.append(node)
            return
        node_type = _get_node_type(node)
        if self.type not in BUILTIN_TYPES:
            if node_type != self.type:
                raise ValueError(f"Type mismatch; expected {self.type!r}, but got {node_type!r}.")
            children, context = SUPPORTED_NODES[node_type].flatten_fn(node)
            if len(children) != self.num_children:
                raise ValueError(f"Node arity mismatch; expected {self.num_children}, but got {len(children)}.")
            if context != self._context:
                raise ValueError(f"Node context mismatch for custom node type {self.type!r}.")
        else:
            both_dicts = self.type in STANDARD_DICT_TYPES and node_type in STANDARD_DICT_TYPES
            if not both_dicts and node_type != self.type:
                raise ValueError(f"Node type mismatch; expected {self.type!r}, but got {node_type!r}.")
            if len(node) != self.num_children:
                raise ValueError(f"Node arity mismatch; expected {self.num_children}, but got {len(node)}.")
            if both_dicts:
                keys = self._context if self.type is not defaultdict else self._context[1]
                got, expected = set(node), set(keys)
                if got != expected:
                    message = ""
                    if expected - got:
                        message += f"; missing key(s): {expected - got}"
                    if got - expected:
                        message += f"; extra key(s): {got - expected}"
                    raise ValueError(f"Node keys mismatch{message}.")
                children = [node[key] for key in keys]
            else:
                children, context = SUPPORTED_NODES[node_type].flatten_fn(node)
                if node_type is not deque and context != self._context:
                    raise ValueError(f"Node context mismatch for node type {self.type!r}; expected "
                                     f"{self._context!r}, but got {context!r}.")
        for child, spec in zip(children, self._children, strict=True):
            spec._flatten_up_to(child, subtrees)

    def unflatten(self, leaves):
        """Build the pytree of this structure with ``leaves`` in order."""
        if not isinstance(leaves, (list, tuple)):
            leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers "
                             f"to a pytree that holds {self.num_leaves} items ({self}).")
        if self.is_leaf():
            return leaves[0]
        children, start = [], 0
        for spec in self._children:
            children.append(spec.unflatten(leaves[start:start + spec.num_leaves]))
            start += spec.num_leaves
        return SUPPORTED_NODES[self.type].unflatten_fn(children, self._context)


class LeafSpec(TreeSpec):
    """The spec of a leaf."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(None, None, [])

    def __repr__(self, indent: int = 0) -> str:
        return "*"

    def __reduce__(self):
        return (LeafSpec, ())


PyTreeSpec = TreeSpec
_LEAF_SPEC = LeafSpec()


def treespec_leaf() -> LeafSpec:
    return _LEAF_SPEC


def treespec_tuple(iterable=(), /) -> TreeSpec:
    return TreeSpec(tuple, None, list(iterable))


def treespec_dict(mapping=(), /, **kwargs) -> TreeSpec:
    d = dict(mapping, **kwargs)
    return TreeSpec(dict, list(d.keys()), list(d.values()))


# ----------------------------------------------------------------------------- flatten and friends

def tree_flatten(tree, is_leaf=None):
    """``(leaves, treespec)``: the leaves in order, and the structure to rebuild ``tree`` from them."""
    leaves: list = []

    def visit(node):
        if tree_is_leaf(node, is_leaf=is_leaf):
            leaves.append(node)
            return _LEAF_SPEC
        node_type = _get_node_type(node)
        children, context = SUPPORTED_NODES[node_type].flatten_fn(node)
        return TreeSpec(node_type, context, [visit(child) for child in children])

    spec = visit(tree)
    return leaves, spec


def tree_unflatten(leaves, treespec):
    """Inverse of ``tree_flatten``."""
    if not isinstance(treespec, TreeSpec):
        if not isinstance(leaves, TreeSpec):
            raise TypeError(f"Expected `treespec` to be an instance of PyTreeSpec but got item of type "
                            f"{type(treespec)}.")
        leaves, treespec = treespec, leaves
    return treespec.unflatten(leaves)


def tree_iter(tree, is_leaf=None):
    """The leaves of ``tree``, lazily, in order."""
    if tree_is_leaf(tree, is_leaf=is_leaf):
        yield tree
        return
    children, _ = SUPPORTED_NODES[_get_node_type(tree)].flatten_fn(tree)
    for child in children:
        yield from tree_iter(child, is_leaf=is_leaf)


def tree_leaves(tree, is_leaf=None) -> list:
    return list(tree_iter(tree, is_leaf=is_leaf))


def tree_structure(tree, is_leaf=None) -> TreeSpec:
    return tree_flatten(tree, is_leaf=is_leaf)[1]


def tree_map(func, tree, *rests, is_leaf=None):
    """The pytree of ``func(leaf, *matching leaves of rests)``, shaped like ``tree`` (each of
    ``rests`` must have ``tree``'s structure as a prefix)."""
    leaves, spec = tree_flatten(tree, is_leaf=is_leaf)
    columns = [leaves] + [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(map(func, *columns))


def tree_map_(func, tree, *rests, is_leaf=None):
    """Call ``func`` on every leaf (for its effect) and return ``tree`` itself."""
    leaves, spec = tree_flatten(tree, is_leaf=is_leaf)
    columns = [leaves] + [spec.flatten_up_to(r) for r in rests]
    for _ in map(func, *columns):
        pass
    return tree


def map_only(type_or_types_or_pred, /):
    """Decorator: apply the function to leaves that match (an ``isinstance`` type, tuple of types,
    or a predicate); other leaves pass through unchanged."""
    if isinstance(type_or_types_or_pred, (type, tuple, types.UnionType)):
        def pred(x):
            return isinstance(x, type_or_types_or_pred)
    elif callable(type_or_types_or_pred):
        pred = type_or_types_or_pred
    else:
        raise TypeError("Argument must be a type, a tuple of types, or a callable.")

    def wrapper(func):
        @functools.wraps(func)
        def wrapped(x):
            return func(x) if pred(x) else x
        return wrapped

    return wrapper


def tree_map_only(type_or_types_or_pred, /, func, tree, is_leaf=None):
    return tree_map(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types_or_pred, /, func, tree, is_leaf=None):
    return tree_map_(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None) -> bool:
    return all(map(pred, tree_iter(tree, is_leaf=is_leaf)))


def tree_any(pred, tree, is_leaf=None) -> bool:
    return any(map(pred, tree_iter(tree, is_leaf=is_leaf)))


def tree_all_only(type_or_types, /, pred, tree, is_leaf=None) -> bool:
    return all(pred(x) for x in tree_iter(tree, is_leaf=is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types, /, pred, tree, is_leaf=None) -> bool:
    return any(pred(x) for x in tree_iter(tree, is_leaf=is_leaf) if isinstance(x, type_or_types))


def arg_tree_leaves(*args, **kwargs) -> list:
    """The leaves of ``(args, kwargs)`` without building their spec."""
    leaves: list = []
    for arg in args:
        leaves.extend(tree_iter(arg))
    for value in kwargs.values():
        leaves.extend(tree_iter(value))
    return leaves


def _key_paths(path, tree, is_leaf):
    if is_leaf and is_leaf(tree):
        yield path, tree
        return
    node_type = _get_node_type(tree)
    handler = SUPPORTED_NODES.get(node_type)
    if handler is None:
        yield path, tree
        return
    if handler.flatten_with_keys_fn is None:
        raise ValueError(f"Did not find a flatten_with_keys_fn for type: {node_type}. Please pass a "
                         "flatten_with_keys_fn argument to register_pytree_node.")
    key_children, _ = handler.flatten_with_keys_fn(tree)
    for key, child in key_children:
        yield from _key_paths((*path, key), child, is_leaf)


def tree_flatten_with_path(tree, is_leaf=None):
    """``([(key_path, leaf), ...], treespec)``."""
    _, spec = tree_flatten(tree, is_leaf)
    return list(_key_paths((), tree, is_leaf)), spec


def tree_leaves_with_path(tree, is_leaf=None) -> list:
    return list(_key_paths((), tree, is_leaf))


def tree_map_with_path(func, tree, *rests, is_leaf=None):
    """Like ``tree_map`` with the key path as ``func``'s first argument."""
    path_leaves, spec = tree_flatten_with_path(tree, is_leaf)
    columns = list(zip(*path_leaves, strict=True)) if path_leaves else [(), ()]
    columns += [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(func(*xs) for xs in zip(*columns, strict=True))


def _broadcast_to_and_flatten(tree, treespec, is_leaf=None):
    """The leaves of ``tree`` broadcast to ``treespec`` (a leaf of ``tree`` fills a whole subtree),
    or None where ``tree`` does not fit."""
    def broadcast(node, spec, out):
        if tree_is_leaf(node, is_leaf=is_leaf):
            out.extend([node] * spec.num_leaves)
            return True
        if spec.is_leaf():
            return False
        node_type = _get_node_type(node)
        if node_type != spec.type:
            return False
        children, context = SUPPORTED_NODES[node_type].flatten_fn(node)
        if len(children) != spec.num_children or context != spec.context:
            return False
        return all(broadcast(c, s, out) for c, s in zip(children, spec.children()))

    out: list = []
    return out if broadcast(tree, treespec, out) else None


# --------------------------------------------------------------------------------------- serializing

class _EnumEncoder(json.JSONEncoder):
    def default(self, obj):
        if isinstance(obj, Enum):
            return {"__enum__": True, "fqn": f"{obj.__class__.__module__}:{obj.__class__.__qualname__}",
                    "name": obj.name}
        return super().default(obj)


def _enum_object_hook(obj):
    if "__enum__" in obj:
        module_name, _, class_name = obj["fqn"].partition(":")
        cls = importlib.import_module(module_name)
        for part in class_name.split("."):
            cls = getattr(cls, part)
        return cls[obj["name"]]
    return obj


def _spec_to_json(spec: TreeSpec) -> dict:
    if spec.is_leaf():
        return {"type": None, "context": None, "children_spec": []}
    if spec.type not in SUPPORTED_SERIALIZED_TYPES:
        raise NotImplementedError(f"Serializing {spec.type} in pytree is not registered.")
    node_def = SUPPORTED_SERIALIZED_TYPES[spec.type]
    if node_def.serialized_type_name == NO_SERIALIZED_TYPE_NAME_FOUND:
        raise NotImplementedError(f"No registered serialization name for {spec.type} found. Please update your "
                                  "_register_pytree_node call with a `serialized_type_name` kwarg.")
    if node_def.to_dumpable_context is None:
        try:
            context = json.dumps(spec.context, cls=_EnumEncoder)
        except TypeError as exc:
            raise TypeError("Unable to serialize context. Please make the context json dump-able, or register a "
                            "custom serializer using _register_pytree_node.") from exc
    else:
        context = node_def.to_dumpable_context(spec.context)
    return {"type": node_def.serialized_type_name, "context": context,
            "children_spec": [_spec_to_json(child) for child in spec.children()]}


def _json_to_spec(schema) -> TreeSpec:
    if schema["type"] is None and schema["context"] is None and not schema["children_spec"]:
        return _LEAF_SPEC
    if schema["type"] not in SERIALIZED_TYPE_TO_PYTHON_TYPE:
        raise NotImplementedError(f"Deserializing {schema['type']} in pytree is not registered.")
    typ = SERIALIZED_TYPE_TO_PYTHON_TYPE[schema["type"]]
    node_def = SUPPORTED_SERIALIZED_TYPES[typ]
    if node_def.from_dumpable_context is None:
        context = json.loads(schema["context"], object_hook=_enum_object_hook)
    else:
        context = node_def.from_dumpable_context(schema["context"])
    return TreeSpec(typ, context, [_json_to_spec(child) for child in schema["children_spec"]])


def treespec_dumps(treespec: TreeSpec, protocol: int | None = None) -> str:
    """The spec as a JSON string (torch's protocol 1 layout)."""
    protocol = DEFAULT_TREESPEC_SERIALIZATION_PROTOCOL if protocol is None else protocol
    if protocol != 1:
        raise ValueError(f"Unknown protocol {protocol}. Available protocols: [1]")
    return json.dumps((protocol, _spec_to_json(treespec)), cls=_EnumEncoder)


@functools.lru_cache
def treespec_loads(serialized: str) -> TreeSpec:
    protocol, schema = json.loads(serialized)
    if protocol != 1:
        raise ValueError(f"Unknown protocol {protocol}. Available protocols: [1]")
    return _json_to_spec(schema)


class _Asterisk(str):
    __slots__ = ()

    def __new__(cls):
        return super().__new__(cls, "*")

    def __repr__(self):
        return "*"


def treespec_pprint(treespec: TreeSpec) -> str:
    """The spec drawn as its pytree with ``*`` at each leaf."""
    return repr(treespec.unflatten([_Asterisk()] * treespec.num_leaves))
