"""Replays of libstdc++'s ``std::nth_element``, ``std::partial_sort`` and ``std::sort`` on a Python list.

torch's CPU sort, topk and mode run these on (value, index) pairs; which of several equal values they return, and the
order of an unsorted result, are whatever these algorithms leave behind. Replaying them step for step
is the only way to return the same indices (and so to send gradients to the same elements).
"""
from __future__ import annotations

__all__ = ["nth_element", "partial_sort", "sort", "topk_row"]


def _lg(n):
    return n.bit_length() - 1


def _insertion_sort(a, first, last, less):
    if first == last:
        return
    for i in range(first + 1, last):
        if less(a[i], a[first]):
            val = a[i]
            a[first + 1:i + 1] = a[first:i]
            a[first] = val
        else:
            _unguarded_linear_insert(a, i, less)


def _unguarded_linear_insert(a, last, less):
    val = a[last]
    nxt = last - 1
    while less(val, a[nxt]):
        a[last] = a[nxt]
        last = nxt
        nxt -= 1
    a[last] = val


def _move_median_to_first(a, result, x, y, z, less):
    # libstdc++'s two branches mirror each other with x and y exchanged: name the smaller of the two
    # ``lo`` and the other ``hi`` and one branch serves, with the same comparisons in the same order
    lo, hi = (x, y) if less(a[x], a[y]) else (y, x)
    if less(a[hi], a[z]):
        median = hi
    elif less(a[lo], a[z]):
        median = z
    else:
        median = lo
    a[result], a[median] = a[median], a[result]


def _unguarded_partition(a, first, last, pivot, less):
    while True:
        while less(a[first], a[pivot]):
            first += 1
        last -= 1
        while less(a[pivot], a[last]):
            last -= 1
        if not first < last:
            return first
        a[first], a[last] = a[last], a[first]
        first += 1


def _partition_pivot(a, first, last, less):
    mid = first + (last - first) // 2
    _move_median_to_first(a, first, first + 1, mid, last - 1, less)
    return _unguarded_partition(a, first + 1, last, first, less)


def _adjust_heap(a, first, hole, length, value, less):
    top = hole
    second = hole
    while second < (length - 1) // 2:
        second = 2 * (second + 1)
        if less(a[first + second], a[first + second - 1]):
            second -= 1
        a[first + hole] = a[first + second]
        hole = second
    if length & 1 == 0 and second == (length - 2) // 2:
        second = 2 * (second + 1)
        a[first + hole] = a[first + second - 1]
        hole = second - 1
    parent = (hole - 1) // 2
    while hole > top and less(a[first + parent], value):
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = value


def _make_heap(a, first, last, less):
    length = last - first
    if length < 2:
        return
    parent = (length - 2) // 2
    while True:
        _adjust_heap(a, first, parent, length, a[first + parent], less)
        if parent == 0:
            return
        parent -= 1


def _pop_heap(a, first, last, result, less):
    value = a[result]
    a[result] = a[first]
    _adjust_heap(a, first, 0, last - first, value, less)


def _heap_select(a, first, middle, last, less):
    _make_heap(a, first, middle, less)
    for i in range(middle, last):
        if less(a[i], a[first]):
            _pop_heap(a, first, middle, i, less)


def _sort_heap(a, first, last, less):
    while last - first > 1:
        last -= 1
        _pop_heap(a, first, last, last, less)


def partial_sort(a, first, middle, last, less):
    _heap_select(a, first, middle, last, less)
    _sort_heap(a, first, middle, less)


def nth_element(a, first, nth, last, less):
    if first == last or nth == last:
        return
    depth = _lg(last - first) * 2
    while last - first > 3:
        if depth == 0:
            _heap_select(a, first, nth + 1, last, less)
            a[first], a[nth] = a[nth], a[first]
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, less)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(a, first, last, less)


def _introsort_loop(a, first, last, depth, less):
    while last - first > 16:
        if depth == 0:
            partial_sort(a, first, last, last, less)
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, less)
        _introsort_loop(a, cut, last, depth, less)
        last = cut


def sort(a, first, last, less):
    if first == last:
        return
    _introsort_loop(a, first, last, _lg(last - first) * 2, less)
    if last - first > 16:
        _insertion_sort(a, first, first + 16, less)
        for i in range(first + 16, last):
            _unguarded_linear_insert(a, i, less)
    else:
        _insertion_sort(a, first, last, less)


def topk_row(values, k, largest, sorted_):
    """torch's CPU topk on one row: the (value, index) pairs it returns, in its order."""
    n = len(values)
    queue = [(v, i) for i, v in enumerate(values)]
    if largest:
        def less(x, y):
            return (x[0] != x[0] and y[0] == y[0]) or x[0] > y[0]
    else:
        def less(x, y):
            return (x[0] == x[0] and y[0] != y[0]) or x[0] < y[0]
    if k == 0:
        return []
    if k * 64 <= n:
        partial_sort(queue, 0, k, n, less)
    else:
        nth_element(queue, 0, k - 1, n, less)
        if sorted_:
            sort(queue, 0, k - 1, less)
    return queue[:k]
