"""``torch.func.rearrange``: einops-style reordering of a tensor's axes by a pattern such as
``"b (h w) c -> b c h w"``, computed with reshape, permute and reshape (so it is differentiable).

The pattern rules and errors are those of torch 2.13's ``rearrange``: axis names are Python
identifiers, ``(...)`` groups axes into one dimension, ``...`` stands for the remaining
dimensions, ``1`` or ``()`` is a dimension of size one (on the left, such a dimension is summed
over whatever its size, as torch does), and sizes that cannot be bound raise
``DimensionBindError`` with torch's text (which names the axes ``d0``, ``d1``... in pattern order).
"""
from __future__ import annotations

import keyword
import math
import warnings

__all__ = ["rearrange", "DimensionBindError"]

_ELLIPSIS = "\u2026"  # the one-character stand-in for "..." while parsing


class DimensionBindError(Exception):
    """A tensor's sizes do not fit the pattern (the class torch raises, from functorch.dim)."""


class _NumberedAxis:
    """An axis written as a number other than 1 (refused by rearrange; each one is distinct)."""

    def __init__(self, text: str):
        self.value = int(text)
        if self.value < 1:
            raise ValueError(f"Anonymous axis should have positive length, not {self.value}")


def _axis_name_problem(name: str):
    if not name.isidentifier():
        return "not a valid python identifier"
    if name[0] == "_" or name[-1] == "_":
        return "axis name should should not start or end with underscore"
    if keyword.iskeyword(name):
        warnings.warn(f"It is discouraged to use axes names that are keywords: {name}", RuntimeWarning)
    if name == "axis":
        warnings.warn("It is discouraged to use 'axis' as an axis name and will raise an error in future",
                      FutureWarning)
    return None


class _Side:
    """One side of a pattern: ``groups`` in order, each a list of axis names (``[]`` for a unit
    dimension) or, at top level, the ellipsis itself."""

    def __init__(self, expression: str):
        self.groups: list = []
        self.names: set = set()
        self.has_ellipsis = False
        self.ellipsis_grouped = None
        self.has_numbered_axes = False
        if "." in expression:
            if "..." not in expression:
                raise ValueError("Expression may contain dots only inside ellipsis (...)")
            if expression.count("...") != 1 or expression.count(".") != 3:
                raise ValueError("Expression may contain dots only inside ellipsis (...); only one ellipsis for "
                                 "tensor ")
            expression = expression.replace("...", _ELLIPSIS)
            self.has_ellipsis = True
        group = None
        token = ""
        for char in expression + " ":
            if char in "() ":
                if token:
                    self._add(token, group)
                token = ""
                if char == "(":
                    if group is not None:
                        raise ValueError("Axis composition is one-level (brackets inside brackets not allowed)")
                    group = []
                elif char == ")":
                    if group is None:
                        raise ValueError("Brackets are not balanced")
                    self.groups.append(group)
                    group = None
            elif char.isalnum() or char in ("_", _ELLIPSIS):
                token += char
            else:
                raise ValueError(f"Unknown character '{char}'")
        if group is not None:
            raise ValueError(f"Imbalanced parentheses in expression: '{expression}'")

    def _add(self, token: str, group) -> None:
        if token in self.names:
            raise ValueError(f"Indexing expression contains duplicate dimension '{token}'")
        if token == _ELLIPSIS:
            self.names.add(token)
            if group is None:
                self.groups.append(_ELLIPSIS)
                self.ellipsis_grouped = False
            else:
                group.append(_ELLIPSIS)
                self.ellipsis_grouped = True
            return
        if token.isdecimal() and int(token) == 1:
            if group is None:
                self.groups.append([])  # a unit dimension; inside a group a 1 changes nothing
            return
        problem = _axis_name_problem(token)
        if problem is not None and not token.isdecimal():
            raise ValueError(f"Invalid axis identifier: {token}\n{problem}")
        axis = _NumberedAxis(token) if token.isdecimal() else token
        if token.isdecimal():
            self.has_numbered_axes = True
        self.names.add(axis)
        if group is None:
            self.groups.append([axis])
        else:
            group.append(axis)


def _parse(pattern: str, axes_lengths: dict):
    sides = pattern.split("->")
    if len(sides) != 2:
        raise ValueError("Pattern must contain a single '->' separator")
    if _ELLIPSIS in axes_lengths:
        raise ValueError(f"'{_ELLIPSIS}' is not an allowed axis identifier")
    left, right = _Side(sides[0]), _Side(sides[1])
    if right.has_ellipsis and not left.has_ellipsis:
        raise ValueError(f"Ellipsis found in right side, but not left side of a pattern {pattern}")
    if left.has_ellipsis and left.ellipsis_grouped:
        raise ValueError(f"Ellipsis is parenthesis in the left side is not allowed: {pattern}")
    for length in axes_lengths.values():
        if type(length) is not int:
            raise TypeError(f"rearrange axis lengths must be integers, got: {type(length)}")
    if left.has_numbered_axes or right.has_numbered_axes:
        raise ValueError("rearrange only supports unnamed axes of size 1")
    one_sided = left.names ^ right.names
    if one_sided:
        raise ValueError(f"Identifiers only on one side of rearrange expression (should be on both): {one_sided}")
    unknown = axes_lengths.keys() - left.names
    if unknown:
        raise ValueError(f"Identifiers not found in rearrange expression: {unknown}")
    return left, right


def _pack_text(labels) -> str:
    return "(" + ", ".join(labels) + ("," if len(labels) == 1 else "") + ")"


def rearrange(tensor, pattern: str, **axes_lengths):
    """Reorder, split, merge, add or remove axes of ``tensor`` (or of a list of tensors, stacked
    along a new first axis) as ``pattern`` says; ``axes_lengths`` give sizes the pattern cannot
    infer, e.g. ``rearrange(x, "b (h w) -> b h w", h=4)``."""
    import hookgrad
    if not isinstance(tensor, hookgrad.Tensor):
        tensor = hookgrad.stack(tensor)
    left, right = _parse(pattern, axes_lengths)
    ndim = tensor.dim()
    unit_groups = sum(1 for g in left.groups if not g)
    if left.has_ellipsis:
        ellipsis_dims = ndim - (len(left.groups) - 1)
        pattern_ndim = unit_groups + len(left.names) - 1
        if pattern_ndim > ndim:
            raise ValueError(f"Number of dimensions in pattern ({pattern_ndim}) must be less than or equal to the "
                             f"number of dimensions in the tensor ({ndim})")
    else:
        ellipsis_dims = 0
        if len(left.groups) != ndim:
            raise ValueError(f"Number of dimensions in pattern ({len(left.groups)}) must be equal to the number of "
                             f"dimensions in the tensor ({ndim})")

    # elementary axes in left order, labelled d0, d1... as torch's messages label them
    labels, sizes = {}, {}
    summed = []  # the elementary positions of left unit dimensions
    elementary = []  # keys of the elementary axes, in left order
    shape = list(tensor.shape)
    dim = 0
    for group in left.groups:
        if group == _ELLIPSIS:
            for j in range(ellipsis_dims):
                key = (_ELLIPSIS, j)
                labels[key] = f"d{len(labels)}"
                sizes[key] = shape[dim]
                elementary.append(key)
                dim += 1
            continue
        if not group:
            key = ("unit", dim)
            labels[key] = f"d{len(labels)}"
            sizes[key] = shape[dim]
            summed.append(len(elementary))
            elementary.append(key)
            dim += 1
            continue
        for name in group:
            labels[name] = f"d{len(labels)}"
        known = [axes_lengths.get(name) for name in group]
        unknown = [name for name, size in zip(group, known) if size is None]
        if len(unknown) > 1:
            raise DimensionBindError(f"cannot infer the sizes of two dimensions at once {labels[unknown[0]]} and "
                                     f"{labels[unknown[1]]}")
        product = math.prod(size for size in known if size is not None)
        if unknown:
            if product == 0 or shape[dim] % product:
                shown = tuple("?" if size is None else size for size in known)
                raise DimensionBindError(f"inferred dimension does not evenly fit into larger dimension: "
                                         f"{shape[dim]} vs {shown}")
            known[known.index(None)] = shape[dim] // product
        elif product != shape[dim]:
            raise DimensionBindError(f"Dimension sizes to do not match ({shape[dim]} != {product}) when matching "
                                     f"dimension pack {_pack_text([labels[n] for n in group])}")
        for name, size in zip(group, known):
            sizes[name] = size
            elementary.append(name)
        dim += 1
    if not elementary:
        return tensor

    out = tensor.reshape([sizes[key] for key in elementary])
    if summed:
        out = out.sum(dim=summed, keepdim=False)
        elementary = [key for i, key in enumerate(elementary) if i not in summed]
    right_order, final_shape = [], []
    for group in right.groups:
        if group == _ELLIPSIS:
            keys = [(_ELLIPSIS, j) for j in range(ellipsis_dims)]
            right_order += keys
            final_shape += [sizes[key] for key in keys]
            continue
        keys = []
        for name in group:
            keys += [(_ELLIPSIS, j) for j in range(ellipsis_dims)] if name == _ELLIPSIS else [name]
        right_order += keys
        final_shape.append(math.prod(sizes[key] for key in keys))
    out = out.permute([elementary.index(key) for key in right_order])
    return out.reshape(final_shape)
