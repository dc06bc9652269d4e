"""Operator schemas as torch's ``FunctionSchema`` objects, parsed from their text.

``aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`` becomes a schema with
``name`` ``aten::add``, ``overload_name`` ``Tensor``, its ``arguments`` and ``returns`` (each with a
name, a type, a default, keyword-only and alias information) and ``str()`` the text itself. The
ATen operators' texts and tags are in ``_aten_schema_table`` (generated from torch once).
"""
from __future__ import annotations

import ast
import enum
import functools

__all__ = ["FunctionSchema", "Argument", "AliasInfo", "SchemaType", "Tag", "aten_overloads", "parse_schema"]


class _TagBase(enum.Enum):
    def __int__(self):
        return self.value

    __index__ = __int__


def _make_tag_enum():
    from ._aten_schema_table import TAGS
    tag = _TagBase("Tag", TAGS)
    tag.__module__ = "hookgrad"
    tag.__doc__ = "Properties of an operator (torch.Tag): pointwise, inplace_view, nondeterministic_seeded, ..."
    return tag


Tag = _make_tag_enum()


class AliasInfo:
    """An argument's alias annotation: ``Tensor(a!)`` writes to alias set ``a``."""

    __slots__ = ("is_write", "before_set", "after_set", "_text")

    def __init__(self, text: str, of_elements: bool = False):
        before, _, after = text.partition("->")
        self.is_write = "!" in before
        self.before_set = {part.strip().rstrip("!") for part in before.split("|") if part.strip()}
        self.after_set = {part.strip() for part in after.split("|")} if after else set(self.before_set)
        if of_elements:   # ``Tensor(a!)[]``: the list's own annotation only says whether it is written
            self.before_set, self.after_set = set(), set()
        self._text = text

    def __repr__(self):
        return f"AliasInfo({self._text})"


class SchemaType:
    """An argument's type as torch's type objects describe it: ``str()`` (``Optional[List[int]]``),
    ``kind()`` (``OptionalType``) and the schema's own spelling (``annotation_str``)."""

    __slots__ = ("annotation_str", "_str", "_kind")

    def __init__(self, text: str):
        from ._aten_schema_table import TYPES
        self.annotation_str = text
        self._str, self._kind = TYPES.get(text) or _describe_type(text)

    def __str__(self):
        return self._str

    __repr__ = __str__

    def str(self):
        return self._str

    def kind(self) -> str:
        return self._kind

    def __eq__(self, other):
        return isinstance(other, SchemaType) and self._str == other._str

    def __hash__(self):
        return hash(self._str)

    def getElementType(self):
        text = self.annotation_str
        if text.endswith("?"):
            return SchemaType(text[:-1])
        if text.endswith("]"):
            return SchemaType(text[:text.rindex("[")])
        raise RuntimeError(f"{self._str} has no element type")

    def isSubtypeOf(self, other) -> bool:
        mine, theirs = self._str, str(other)
        return mine == theirs or theirs == f"Optional[{mine}]" or (mine == "NoneType" and theirs.startswith("Optional["))


_SCALAR_TYPES = {"Tensor": "Tensor", "int": "int", "SymInt": "int", "float": "float", "bool": "bool", "str": "str",
                 "Scalar": "number", "ScalarType": "int", "Layout": "int", "MemoryFormat": "int", "Device": "Device",
                 "Generator": "Generator", "Dimname": "str", "complex": "complex", "Any": "Any"}


def _describe_type(text: str):
    """``(str, kind)`` of a type the generated table lacks (a custom operator's), by torch's rules."""
    if text.endswith("?"):
        inner, _ = _describe_type(text[:-1])
        return f"Optional[{inner}]", "OptionalType"
    if text.endswith("]"):
        inner, _ = _describe_type(text[:text.rindex("[")])
        return f"List[{inner}]", "ListType"
    name = _SCALAR_TYPES.get(text, text)
    kind = {"number": "NumberType", "Tensor": "TensorType"}.get(name, name[:1].upper() + name[1:] + "Type")
    return name, kind


class Argument:
    """One parameter (or result) of a schema."""

    __slots__ = ("name", "type", "type_text", "default_value", "_has_default", "kwarg_only", "alias_info", "N",
                 "is_out")

    def __init__(self, name, type_text, default_text, kwarg_only, alias_text):
        # alias_text: None, or (annotation, whether it annotates the list's elements)
        self.name = name
        self.type_text = type_text
        self.type = SchemaType(type_text)
        self.kwarg_only = kwarg_only
        self.alias_info = AliasInfo(*alias_text) if alias_text is not None else None
        self.N = _list_length(type_text)
        self._has_default = default_text is not None
        self.default_value = _default_value(default_text, self.N) if default_text is not None else None
        self.is_out = False

    @property
    def real_type(self):
        return self.type

    @property
    def is_write(self) -> bool:
        return self.alias_info is not None and self.alias_info.is_write

    def has_default_value(self) -> bool:
        return self._has_default

    def __repr__(self):
        return f"Argument({self.name}: {self.type_text})"


def _list_length(type_text):
    """``int[2]`` -> 2; other types -> None."""
    base = type_text.rstrip("?")
    if base.endswith("]") and not base.endswith("[]"):
        return int(base[base.rindex("[") + 1:-1])
    return None


def _default_value(text: str, length):
    text = text.strip()
    if text == "None":
        return None
    if text in ("True", "False"):
        return text == "True"
    if text == "Mean":
        return 1
    if text in ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d"):
        import hookgrad
        return getattr(hookgrad, text)
    if text in ("inf", "-inf", "nan"):
        return float(text)
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    if length is not None and isinstance(value, int):
        return [value] * length
    return value


def _unquoted(text: str, start: int = 0):
    """``(index, char)`` for each character of ``text`` from ``start`` outside quoted strings."""
    quote, i = None, start
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\":
                i += 1
            elif char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        else:
            yield i, char
        i += 1


def _split_top_level(text: str, separator: str = ",") -> list:
    """``text`` split at the separators outside brackets, parentheses and quotes."""
    parts, depth, start = [], 0, 0
    for i, char in _unquoted(text):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == separator and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _closing(text: str, opening: int) -> int:
    """The index of the parenthesis closing the one at ``opening``."""
    depth = 0
    for i, char in _unquoted(text, opening):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced parentheses")


def _parse_argument(text: str, kwarg_only: bool, result: bool = False) -> Argument:
    default = None
    head = text
    equals = _split_top_level(text, "=")
    if len(equals) > 1 and not result:
        head, default = equals[0], text[text.index("=", len(equals[0])) + 1:]
    # the type ends at the last space outside an alias annotation (``Tensor(a -> *) self``)
    depth, split_at = 0, -1
    for i, char in enumerate(head):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == " " and depth == 0:
            split_at = i
    type_text, name = (head[:split_at].strip(), head[split_at + 1:].strip()) if split_at >= 0 else (head.strip(), "")
    type_text, alias, of_elements = _without_alias(type_text)
    return Argument(name, type_text, default, kwarg_only, None if alias is None else (alias, of_elements))


_PARAMETERIZED = ("Dict", "Future", "RRef", "Await", "Union", "Tuple")


def _without_alias(text: str):
    """``(type, alias annotation or None, whether it annotates a list's elements)``: ``Tensor(a!)`` ->
    ``("Tensor", "a!", False)``, ``Tensor(a!)[]`` -> ``("Tensor[]", "a!", True)``; the parentheses of
    a tuple type ``(int, t)`` or of ``Dict(str, t)`` belong to the type."""
    kept, i = [], 0
    if text.startswith("("):
        i = _closing(text, 0) + 1
    else:
        while i < len(text) and (text[i].isalnum() or text[i] in "_."):
            i += 1
        if text[:i] in _PARAMETERIZED and text[i:i + 1] == "(":
            i = _closing(text, i) + 1
    kept.append(text[:i])
    alias, of_elements = None, False
    while i < len(text):
        if text[i] == "(":
            closing = _closing(text, i)
            if alias is None:
                alias = text[i + 1:closing].strip()
                of_elements = text[closing + 1:closing + 2] == "["
            i = closing + 1
        else:
            kept.append(text[i])
            i += 1
    return "".join(kept), alias, of_elements


def split_schema(text: str):
    """``(name, overload name, arguments, returns, takes varargs)`` of a schema's text."""
    opening = text.index("(")
    qualified = text[:opening]
    name, _, overload = qualified.partition(".")
    closing = _closing(text, opening)
    arguments, kwarg_only, varargs = [], False, False
    for part in _split_top_level(text[opening + 1:closing]):
        if part == "*":
            kwarg_only = True
            continue
        if part == "...":
            varargs = True
            continue
        arguments.append(_parse_argument(part, kwarg_only))
    returns_text = text[closing + 1:].strip()
    if not returns_text.startswith("->"):
        raise ValueError(f"a schema's results follow '->': {text!r}")
    returns_text = returns_text[2:].strip()
    if returns_text.startswith("(") and _closing(returns_text, 0) == len(returns_text) - 1:
        returns = [_parse_argument(part, False, result=True) for part in _split_top_level(returns_text[1:-1])]
    elif returns_text == "...":
        returns = []
    else:
        returns = [_parse_argument(returns_text, False, result=True)]
    return name, overload, arguments, returns, varargs


class FunctionSchema:
    """An operator's schema: ``name``, ``overload_name``, ``arguments``, ``returns``; ``str()`` is
    its text as torch prints it."""

    def __init__(self, text: str):
        self._text = text
        self.name, self.overload_name, arguments, returns, self.is_vararg = split_schema(text)
        self.arguments = arguments
        self.returns = returns
        for argument in arguments:
            argument.is_out = argument.kwarg_only and argument.is_write
        self.is_varret = text.rstrip().endswith("-> ...")

    @property
    def is_mutable(self) -> bool:
        return any(argument.is_write for argument in self.arguments)

    def _is_view_op(self) -> bool:
        return any(a.alias_info is not None and not a.alias_info.is_write for a in self.arguments)

    def __str__(self):
        return self._text

    def __repr__(self):
        return self._text

    def __eq__(self, other):
        return isinstance(other, FunctionSchema) and self._text == other._text

    def __hash__(self):
        return hash(self._text)


def parse_schema(text: str) -> FunctionSchema:
    return FunctionSchema(text)


@functools.lru_cache(maxsize=None)
def _aten_index() -> dict:
    """ATen operator name -> {overload name: line of the table}, built once on first use."""
    from ._aten_schema_table import SCHEMAS
    index: dict = {}
    for line in SCHEMAS.splitlines():
        if not line:
            continue
        opening = line.index("(")
        name, _, overload = line[len("aten::"):opening].partition(".")
        index.setdefault(name, {})[overload or "default"] = line
    return index


def aten_overloads(name: str):
    """``{overload: (schema text, tag names)}`` of ATen operator ``name`` as torch 2.13 has it, in
    torch's order; None for a name ATen lacks."""
    lines = _aten_index().get(name)
    if lines is None:
        return None
    return {overload: (line.partition("\t")[0], tuple(line.partition("\t")[2].split()))
            for overload, line in lines.items()}
