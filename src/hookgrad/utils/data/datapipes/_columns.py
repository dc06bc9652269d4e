"""Applying a function to selected columns of a sample (the ``input_col``/``output_col`` of
``map`` and ``filter``)."""
from __future__ import annotations


def call_on_columns(fn, data, input_col):
    """``fn`` of the whole sample (``input_col`` None), of one column, or of several as arguments."""
    if input_col is None:
        return fn(data)
    if isinstance(input_col, (list, tuple)):
        return fn(*(data[col] for col in input_col))
    return fn(data[input_col])


def apply_to_columns(fn, data, input_col, output_col):
    if input_col is None and output_col is None:
        return fn(data)
    result = call_on_columns(fn, data, input_col)
    was_tuple = isinstance(data, tuple)
    data = list(data) if was_tuple else data
    if output_col is None:
        if isinstance(input_col, (list, tuple)):
            data[input_col[0]] = result
            for col in sorted(input_col[1:], reverse=True):
                del data[col]
        else:
            data[input_col] = result
    elif output_col == -1:
        data.append(result)
    else:
        data[output_col] = result
    return tuple(data) if was_tuple else data


def check_columns(input_col, output_col):
    if input_col is None and output_col is not None:
        raise ValueError("`output_col` must be None when `input_col` is None.")
    if isinstance(output_col, (list, tuple)):
        if len(output_col) > 1:
            raise ValueError("`output_col` must be a single-element list or tuple")
        return output_col[0]
    return output_col


class _ColumnMapper:
    """The options of ``map`` on either kind of pipe: ``fn`` of each item (or of its ``input_col``
    columns, written to ``output_col``)."""

    def __init__(self, datapipe, fn, input_col=None, output_col=None):
        self.datapipe, self.fn = datapipe, fn
        self.input_col, self.output_col = input_col, check_columns(input_col, output_col)

    def _mapped(self, item):
        return apply_to_columns(self.fn, item, self.input_col, self.output_col)
