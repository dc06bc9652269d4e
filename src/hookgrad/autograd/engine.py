"""The backward executor.

It follows torch's engine step for step so that hooks fire in the same order:
1. count, for every node reachable from the roots, how many edges point at it;
2. when only some tensors' gradients are wanted (``inputs=`` / ``autograd.grad``), mark the nodes
   that lie on a path to them; others are skipped, and the wanted gradients are captured (a node's
   formula asks ``Node._should_compute_output`` which of its inputs' gradients lead there);
3. run ready nodes from a max-heap keyed by sequence number (newest node first; AccumulateGrad
   before all), a heap that breaks ties exactly like ``std::priority_queue`` does, so that event
   logs match torch's line for line;
4. per node: tensor hooks, retain_grad hooks, node pre-hooks, the backward, node post-hooks;
   each node runs with the caller's saved-tensor hook state, whatever the previous node's hooks did.
Several root edges hang off one dummy root (torch's GraphRoot): only those a wanted gradient lies
behind are visited. A lone root edge is the graph's root itself: it is always visited.
"""
from __future__ import annotations

import itertools
import sys
import warnings
from collections import OrderedDict

import numpy as np

from .. import _memory_format, _tensor
from .._ops._base import FP_IGNORE, fp_quiet, fp_restore
from . import _hook_context, grad_mode
from . import graph as _graph
from .graph import _anomaly_state, _is_none, _op_backward_hooks
# the passes now running, innermost last (kept in graph, where nodes ask what their pass needs)
from .graph import _running_tasks as _task_stack
from .._late import LateNames

# the pass's own code runs with overrides off (_BackwardPass); the user code it calls (hooks, final
# callbacks) runs under the state backward() was called under (call_as_caller), as in torch
_above = LateNames(torch_function_live="hookgrad._C._torch_function:LIVE",
                   disable_torch_function="hookgrad._C._torch_function:_BackwardPass",
                   call_as_caller="hookgrad._C._torch_function")

def current_task():
    """The backward pass now running (None outside backward)."""
    return _task_stack[-1] if _task_stack else None


def is_checkpoint_valid() -> bool:
    """False inside a pass that runs only toward chosen inputs (``autograd.grad``,
    ``backward(inputs=...)``) or inside one nested in such a pass: what reentrant checkpointing
    cannot serve, as torch's engine answers it."""
    return all(task.exec_info is None for task in _task_stack)


# ---- a binary heap with libstdc++'s exact push/pop algorithms -----------------------------------
def _heap_push(heap: list, item) -> None:
    """libstdc++'s push_heap: ``item`` moves up from the end while its parent ranks lower."""
    hole = len(heap)
    heap.append(item)
    seq = item[0]
    while hole > 0:
        parent = (hole - 1) // 2
        if not heap[parent][0] < seq:
            break
        heap[hole] = heap[parent]
        hole = parent
    heap[hole] = item


def _heap_pop(heap: list):
    """libstdc++'s pop_heap: the hole left at the root goes down along the larger children to a
    leaf, then the former last element is sifted up from there (equal keys keep this exact order)."""
    top = heap[0]
    last = heap.pop()
    n = len(heap)
    if n == 0:
        return top
    hole = child = 0
    while child < (n - 1) // 2:
        child = 2 * (child + 1)
        if heap[child][0] < heap[child - 1][0]:
            child -= 1
        heap[hole] = heap[child]
        hole = child
    if (n & 1) == 0 and child == (n - 2) // 2:
        child = 2 * (child + 1)
        heap[hole] = heap[child - 1]
        hole = child - 1
    # libstdc++'s __push_heap from the hole (as in _heap_push)
    seq = last[0]
    while hole > 0:
        parent = (hole - 1) // 2
        if not heap[parent][0] < seq:
            break
        heap[hole] = heap[parent]
        hole = parent
    heap[hole] = last
    return top


_task_ids = itertools.count()


class GraphTask:
    """One backward pass: its dependency counts, gradient buffers and what to execute/capture."""

    __slots__ = ("id", "keep_graph", "create_graph", "exec_info", "captures", "captured", "reachable",
                 "final_callbacks", "caller", "current_node", "node_apply", "__weakref__")

    def __init__(self, keep_graph, create_graph):
        self.id = next(_task_ids)
        self.keep_graph = keep_graph
        self.create_graph = create_graph
        self.exec_info = None      # None: run everything; else {node: needed?}
        self.captures = None       # {node: [(output_nr, capture index), ...]}
        self.captured = None
        self.reachable = None      # (dependency counts, root nodes, one per root edge)
        self.final_callbacks = None  # what call_at_backward_end queued, run after the last node
        self.caller = None         # the frame that called backward()/grad(), for warnings at its line
        self.current_node = None   # the node being run (torch._C._current_autograd_node)
        self.node_apply = None     # is_grads_batched: runs a node's backward on batched gradients

    def will_execute_node(self, node) -> bool:
        """Whether this pass runs ``node``, as torch's engine answers it to multi-grad hooks: a lone
        root is the graph's own root and does not count; under ``autograd.grad`` a leaf cannot be
        answered for."""
        deps, roots = self.reachable
        if node not in deps and (len(roots) == 1 or node not in roots):
            return False
        if self.exec_info is None:
            return True
        if node not in self.exec_info:
            return False
        if node.is_sink and self.captures is not None:
            raise RuntimeError("A leaf node was passed to _will_engine_execute_node but we are currently running "
                               "autograd.grad(). This is currently not supported.")
        return True

    def execution_order(self) -> list:
        """The nodes this pass will still run, in order: a dry run of the engine's heap over a copy
        of the remaining dependency counts, skipping what ``exec_info`` leaves out."""
        deps, roots = self.reachable
        deps = dict(deps)
        exec_info = self.exec_info
        heap, order = [], []
        for node in dict.fromkeys(roots):
            if node is not None:
                _heap_push(heap, (node._seq, node))
        while heap:
            _, node = _heap_pop(heap)
            order.append(node)
            for nxt, _ in node.next_functions:
                if nxt is None or (exec_info is not None and nxt not in exec_info):
                    continue
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    _heap_push(heap, (nxt._seq, nxt))
        return order

    def __repr__(self):
        return f"<GraphTask at {id(self):#x}>"


# ---- the backward pass's lifecycle: start and end hooks, callbacks queued for its end ------------
# OrderedDicts: a RemovableHandle refers to its registry weakly, and a plain dict cannot be
_backward_start_hooks: OrderedDict = OrderedDict()
_backward_end_hooks: OrderedDict = OrderedDict()


class BackwardPassInfo:
    """What a backward-start or backward-end hook learns about the pass.

    ``id``: the pass's number (the same one ``hookgrad.hooks.context()`` reports inside its hooks);
    ``roots``: the tensors differentiated (``backward``'s ``tensors``, ``autograd.grad``'s
    ``outputs``); ``inputs``: the tensors whose gradients were asked for (None for a plain
    ``backward()``); ``kind``: ``"backward"`` or ``"grad"``; ``error``: the exception the pass
    raised (end hooks only; None when it finished)."""

    __slots__ = ("id", "kind", "roots", "inputs", "create_graph", "retain_graph", "error")

    def __init__(self, task, kind, roots, inputs):
        self.id = task.id
        self.kind = kind
        self.roots = roots
        self.inputs = inputs
        self.create_graph = task.create_graph
        self.retain_graph = task.keep_graph
        self.error = None

    def __repr__(self):
        state = "" if self.error is None else f", error={type(self.error).__name__}"
        return (f"BackwardPassInfo(id={self.id}, kind={self.kind!r}, roots={len(self.roots)}, "
                f"inputs={None if self.inputs is None else len(self.inputs)}, create_graph={self.create_graph}, "
                f"retain_graph={self.retain_graph}{state})")


def queue_final_callback(fn) -> None:
    """Run ``fn()`` when the backward pass now running has executed its last node (torch's
    ``Variable._execution_engine.queue_callback``); a callback may queue further ones."""
    task = current_task()
    if task is None:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    if not callable(fn):
        raise TypeError(f"a final callback must be callable, but got {type(fn).__name__}")
    if task.final_callbacks is None:
        task.final_callbacks = []
    task.final_callbacks.append(fn)


def _run_final_callbacks(task) -> None:
    callbacks = task.final_callbacks
    i = 0
    while i < len(callbacks):  # callbacks may append more
        _above.call_as_caller(callbacks[i])
        i += 1


def _call_lifecycle_hooks(registry, info) -> None:
    if _hook_context.ON[0]:  # hookgrad.hooks.context() in them names the pass
        _hook_context.ACTIVE.append(_hook_context.HookContext("backward", info.id, recompute=_hook_context.RECOMPUTING[0] > 0))
        try:
            for hook in tuple(registry.values()):
                _above.call_as_caller(hook, info)
        finally:
            _hook_context.ACTIVE.pop()
        return
    for hook in tuple(registry.values()):
        _above.call_as_caller(hook, info)


_PACKAGE_DIR = __file__[:-len("autograd/engine.py")]  # .../hookgrad/


def _cast_to_input_dtypes(dtypes, outputs):
    """A node's gradients, each in the dtype of the forward input it belongs to (torch's engine casts
    them so: a float32 leaf of a float64 loss gets a float32 gradient). Floating to floating only."""
    cast = list(outputs)
    for i, (g, dtype) in enumerate(zip(cast, dtypes)):
        if g is not None and dtype is not None and g._ndarray.dtype != dtype and dtype.kind == "f" \
                and g._ndarray.dtype.kind == "f":
            cast[i] = g.to(_dtype_of(dtype))
    return tuple(cast)


def _dtype_of(np_dtype):
    from .._dtype import from_numpy_dtype
    return from_numpy_dtype(np_dtype)


def warn_at_caller(message: str, category=UserWarning) -> None:
    """Warn from inside a backward pass at the line of the user's ``backward()``/``grad()`` call,
    however many engine and hook frames lie between (torch's engine warns at a fixed level that
    fits ``Tensor.backward``). The caller's frame was noted when the pass started, so this walks
    only the frames of hookgrad's entry points, not the whole stack."""
    task = _task_stack[-1] if _task_stack else None  # current_task()
    frame = task.caller if task is not None else None
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if task is not None:
        task.caller = frame  # the pass's next warning starts at the user's frame
    if frame is None:
        warnings.warn(message, category, stacklevel=2)
        return
    module_globals = frame.f_globals
    # no module_globals argument: with it, warn_explicit reads the source line even for an ignored warning.
    # Code exec'd with globals that have no __name__ gets the module from the file name: module=None
    # would make warn_explicit drop the warning even under an "always" filter
    name = module_globals.get("__name__")
    warnings.warn_explicit(message, category, frame.f_code.co_filename, frame.f_lineno,
                           **({"module": name} if isinstance(name, str) else {}),
                           registry=module_globals.setdefault("__warningregistry__", {}))


def _compute_dependencies(roots):
    deps = {}
    # several roots may be outputs of one node: walk each node once
    stack = [n for n in dict.fromkeys(roots) if n is not None]
    if len(stack) == 1:  # a lone root: no path leads back to it, so every node is walked when it enters ``deps``
        while stack:
            for nxt, _ in stack.pop().next_functions:
                if nxt in deps:
                    deps[nxt] += 1
                elif nxt is not None:
                    deps[nxt] = 1
                    stack.append(nxt)
        return deps
    walked = set(stack)  # the roots; every other node is walked when it enters ``deps``
    while stack:
        for nxt, _ in stack.pop().next_functions:
            if nxt in deps:
                deps[nxt] += 1
            elif nxt is not None:
                deps[nxt] = 1
                if nxt not in walked:
                    stack.append(nxt)
    return deps


def _mark_needed(roots, targets, include_targets: bool) -> dict:
    """{node: True} for the nodes that must run: those with a path to a target node (and the
    targets themselves when ``include_targets``, as for ``backward(inputs=...)``)."""
    targets = set(targets)
    memo = {}
    for root in roots:
        if root is None or root in memo:
            continue
        stack = [(root, iter(root.next_functions))]
        memo[root] = include_targets and root in targets
        while stack:
            node, it = stack[-1]
            advanced = False
            for nxt, _ in it:
                if nxt is None:
                    continue
                if nxt not in memo:
                    memo[nxt] = include_targets and nxt in targets
                    stack.append((nxt, iter(nxt.next_functions)))
                    advanced = True
                    break
                if memo[nxt] or nxt in targets:
                    memo[node] = True
            if not advanced:
                stack.pop()
                if stack and (memo[node] or node in targets):
                    memo[stack[-1][0]] = True
    return {n: True for n, needed in memo.items() if needed}


def _hook_name(hook) -> str:
    name = getattr(hook, "__name__", None)
    return name if isinstance(name, str) else "<unknown>"


def _check_hook_result(hook, old, new):
    """A hook's replacement for one gradient, checked as torch checks it (None keeps ``old``)."""
    if new is None:
        return old
    if old is None:
        raise RuntimeError("can't replace a None gradient with a non-None value")
    if not isinstance(new, _tensor.Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}'")
    if new is not old:
        if new._ndarray.dtype != old._ndarray.dtype:
            raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the type of value (was {old.type()} got "
                               f"{new.type()})")
        if new._ndarray.shape != old._ndarray.shape:
            raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the size of value")
    return new


def _call_tensor_pre_hooks(node, grads):
    # a hook that returns None (the usual case) keeps the gradient: no check to call
    call = _above.call_as_caller
    if node._tensor_pre_hooks:
        for nr, hooks in node._tensor_pre_hooks:
            for hook in tuple(hooks.values()):
                new = call(hook, grads[nr])
                if new is not None:
                    grads[nr] = _check_hook_result(hook, grads[nr], new)
    if node.is_sink:
        hooks = node.variable._tensor_hooks
        if hooks:
            for hook in tuple(hooks.values()):
                new = call(hook, grads[0])
                if new is not None:
                    grads[0] = _check_hook_result(hook, grads[0], new)
    if node._retains_grad_hooks:  # hookgrad's own (torch's are C++): overrides stay off
        for nr, hook in tuple(node._retains_grad_hooks.items()):
            hook(grads[nr])
    return grads


def _check_tuple_result(hook, result, expected):
    if not isinstance(result, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(result).__name__}'")
    if len(result) != expected:
        raise RuntimeError(f"hook '{_hook_name(hook)}' has returned an incorrect number of values "
                           f"(got {len(result)}, but expected {expected})")


def _check_node_hook_result(hook, old, new):
    """A node hook's replacement for one slot: a slot without a gradient must stay without one."""
    if old is None:
        raise RuntimeError("can't replace a None gradient with a non-None value")
    return _check_hook_result(hook, old, new)


def _call_pre_hooks(node, grads):
    call = _above.call_as_caller
    for hook in tuple(node._pre_hooks.values()):
        result = call(hook, tuple(grads))
        if result is not None:
            _check_tuple_result(hook, result, len(grads))
            # unlike a tensor hook's None, a None entry here drops that gradient
            grads = [None if new is None else _check_node_hook_result(hook, old, new) for old, new in zip(grads, result)]
    return grads


def _call_post_hooks(node, outputs, grads):
    inputs_tuple = tuple(grads)
    call = _above.call_as_caller
    for hook in tuple(node._post_hooks.values()):
        result = call(hook, tuple(outputs), inputs_tuple)
        if result is not None:
            _check_tuple_result(hook, result, len(outputs))
            outputs = [new if new is None or new is old else _check_node_hook_result(hook, old, new)
                       for old, new in zip(outputs, result)]
    return outputs


def _check_nan(node, outputs):
    # (the forward trace is reported by _execute's error path, as for any error of a node)
    for i, g in enumerate(outputs):
        if g is not None and _tensor._dtype.is_inexact_np(g._ndarray.dtype) and np.isnan(g._ndarray).any():
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


# A backward pass started from inside a node's backward (reentrant) nests Python frames; like torch's
# engine, which hands a pass nested this deep to another thread, each _MAX_REENTRANT_DEPTH levels
# continue on a fresh thread (its own recursion limit and C stack) while the caller's thread waits
_MAX_REENTRANT_DEPTH = 60
_thread_base_depth = [0]  # how deep the nesting was where the current thread took over


def _on_fresh_thread(fn, *args, **kwargs):
    import threading
    outcome = {}
    base = len(_task_stack)

    def run():
        saved = _thread_base_depth[0]
        _thread_base_depth[0] = base
        try:
            outcome["value"] = fn(*args, **kwargs)
        except BaseException as error:  # noqa: BLE001 - handed to the waiting caller
            outcome["error"] = error
        finally:
            _thread_base_depth[0] = saved

    worker = threading.Thread(target=run, name="hookgrad-reentrant-backward")
    worker.start()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def execute(roots, root_grads, keep_graph: bool, create_graph: bool, inputs=None, accumulate=True,
            root_tensors=(), input_tensors=None, caller=None, node_apply=None):
    """Run a backward pass from ``roots`` (edges) seeded with ``root_grads``.

    ``inputs``: edges whose gradients are wanted. With ``accumulate`` (``.backward``) those nodes
    run and accumulate; without (``autograd.grad``) their gradients are captured and returned.
    ``root_tensors``/``input_tensors``: what the caller differentiated, for the lifecycle hooks;
    ``caller``: the frame of the ``backward()``/``grad()`` call (see ``warn_at_caller``).
    ``node_apply(node, grads)``: runs each node's backward instead of ``node.apply`` (``grads``
    batched by vmap; the pass itself, its hooks included, then runs with the overrides on).
    """
    if len(_task_stack) - _thread_base_depth[0] >= _MAX_REENTRANT_DEPTH:
        return _on_fresh_thread(execute, roots, root_grads, keep_graph, create_graph, inputs, accumulate,
                                root_tensors, input_tensors, caller, node_apply)
    task = GraphTask(keep_graph, create_graph)
    task.caller = caller
    task.node_apply = node_apply
    if _above.torch_function_live[0] and node_apply is None:
        # torch's backward kernels are C++ and consult no __torch_function__; ours are written with
        # the public ops, which must not hand saved subclass tensors or the pass to overrides
        with _above.disable_torch_function():
            return _execute_undispatched(task, roots, root_grads, inputs, accumulate, root_tensors, input_tensors)
    return _execute_undispatched(task, roots, root_grads, inputs, accumulate, root_tensors, input_tensors)


def _execute_undispatched(task, roots, root_grads, inputs, accumulate, root_tensors, input_tensors):
    # torch's backward kernels never warn about NaN, infinities or overflow: NumPy's floating-point
    # warnings are off for the pass
    token = fp_quiet(FP_IGNORE)
    try:
        if _backward_start_hooks or _backward_end_hooks:
            info = BackwardPassInfo(task, "backward" if accumulate else "grad", tuple(root_tensors),
                                    None if input_tensors is None else tuple(input_tensors))
            return _execute_with_lifecycle(task, info, roots, root_grads, inputs, accumulate)
        return _execute(task, roots, root_grads, inputs, accumulate)
    finally:
        fp_restore(token)


def _execute_with_lifecycle(task, info, roots, root_grads, inputs, accumulate):
    _task_stack.append(task)  # start hooks may queue end-of-pass callbacks and ask for the context
    try:
        _call_lifecycle_hooks(_backward_start_hooks, info)
    except BaseException as error:
        _task_stack.pop()
        info.error = error
        _call_lifecycle_hooks(_backward_end_hooks, info)
        raise
    _task_stack.pop()
    try:
        captured = _execute(task, roots, root_grads, inputs, accumulate)
    except BaseException as error:
        info.error = error
        _call_lifecycle_hooks(_backward_end_hooks, info)
        raise
    _call_lifecycle_hooks(_backward_end_hooks, info)
    return captured


def _execute(task, roots, root_grads, inputs, accumulate):
    keep_graph = task.keep_graph
    root_nodes = [node for node, _ in roots]
    deps = _compute_dependencies(root_nodes)
    task.reachable = (deps, root_nodes)

    if inputs is not None:
        targets = []
        if not accumulate:
            task.captures = {}
            task.captured = [None] * len(inputs)
        for i, (node, nr) in enumerate(inputs):
            if node is None:
                continue
            targets.append(node)
            if not accumulate:
                task.captures.setdefault(node, []).append((nr, i))
        needed = _mark_needed(root_nodes, targets, accumulate)
        if not accumulate:
            # capture-only nodes are visited (for their hooks) but not run unless on a path
            for node in task.captures:
                needed.setdefault(node, False)
        task.exec_info = needed

    buffers = {}
    # a heap entry is (sequence number, node, its gradients): a node is pushed once all its
    # gradients have arrived, so they travel with it (a node fed by one edge never needs a buffer)
    heap = []
    # the heap is a libstdc++ priority queue; while it is empty, the one node made ready is held
    # here instead (the state a push then a pop would leave)
    ready_node = ready_grads = None
    if len(roots) == 1 and len(root_grads) == 1:
        # a lone root edge (the usual loss.backward()) is the first node to run, whatever is wanted
        # (see below): the steps below for one root, without the buffers and the heap
        node, nr = roots[0]
        if node is not None:
            ready_grads = [None] * node._num_outputs
            ready_grads[nr] = root_grads[0]
            ready_node = node
    else:
        for (node, nr), grad in zip(roots, root_grads):
            if node is None:
                continue
            buf = buffers.get(node)
            if buf is None:
                buf = buffers[node] = [None] * node._num_outputs
            buf[nr] = grad if buf[nr] is None else buf[nr] + grad
        # a lone root edge is visited even when no wanted gradient lies behind it (its tensor hooks and
        # retain_grad run); several roots hang off one dummy node in torch, which visits only those needed
        lone_root = len(roots) == 1
        for node in dict.fromkeys(root_nodes):
            if node is not None and deps.get(node, 0) == 0:
                if task.exec_info is not None and node not in task.exec_info and not lone_root:
                    continue
                _heap_push(heap, (node._seq, node, buffers.pop(node)))

    prev_mode = grad_mode.STATE.enabled
    grad_mode.STATE.enabled = task.create_graph
    _task_stack.append(task)
    exec_info = task.exec_info
    pop, push = _heap_pop, _heap_push
    # every node runs with the caller's saved-tensor hooks: what one node's hooks enter or exit
    # is undone after it, and the caller's own state is left as it was
    hooks_changes = _graph._saved_hooks_changes
    hooks_state = _graph._hooks_state()
    unchanged = hooks_state[2]
    anomaly = _anomaly_state
    try:
        while True:
            if ready_node is not None:  # a chain's lone ready node: no heap at all
                node, grads = ready_node, ready_grads
                ready_node = ready_grads = None
            elif heap:
                _, node, grads = heap.pop() if len(heap) == 1 else pop(heap)
            else:
                break
            task.current_node = node
            if exec_info is not None:
                outputs = _evaluate_filtered(task, node, grads)
            elif node._has_hooks or (node.is_sink and node.variable._tensor_hooks):
                outputs = _run_node(task, node, grads)
            else:
                # _run_node's steps for a node without hooks (hooks its backward registers still run);
                # the gradient is tested first: reading a class attribute through a node costs more
                if grads[0] is not None or node.runs_without_grads or any(g is not None for g in grads):
                    outputs = node.apply(grads)
                    if node._input_dtypes is not None:
                        outputs = _cast_to_input_dtypes(node._input_dtypes, outputs)
                else:
                    outputs = _without_grads(node)
                if node._post_hooks or _op_backward_hooks:
                    outputs = _after_backward(node, outputs, grads, False)
                if keep_graph:
                    pass
                elif node._releases_more_than_saved:
                    node.release_variables()
                elif node._saved:  # Node.release_variables, written out
                    if None in node._saved:
                        node._freed_undefined = tuple(map(_is_none, node._saved))
                    node._saved = None
                if anomaly.enabled and outputs and anomaly.check_nan:
                    _check_nan(node, outputs)
            if hooks_changes[0] != unchanged:
                _graph._restore_hooks_state(hooks_state)
            if outputs is None:
                continue
            nexts = node.next_functions
            if len(nexts) == 1 and exec_info is None and outputs:
                # one edge (a chain's link, an identity node): the loop below for a next node that this
                # gradient makes ready, without its zip, its per-edge tests and buffer look-ups
                nxt = nexts[0][0]
                if nxt is not None and deps[nxt] == 1 and nxt._num_outputs == 1 and not buffers:
                    deps[nxt] = 0
                    if ready_node is None and not heap:
                        ready_node, ready_grads = nxt, [outputs[0]]
                    else:
                        if ready_node is not None:  # what the heap would hold: it had been empty
                            heap.append((ready_node._seq, ready_node, ready_grads))
                            ready_node = None
                        push(heap, (nxt._seq, nxt, [outputs[0]]))
                    # as after the loop below; ``buf`` may still hold the gradients this node ran on
                    outputs = buf = None
                    continue
            for (nxt, nr), g in zip(nexts, outputs):
                if nxt is None:
                    continue
                remaining = deps[nxt] - 1
                deps[nxt] = remaining
                if exec_info is not None and nxt not in exec_info:
                    continue
                if remaining:
                    buf = buffers.get(nxt)
                    if buf is None:
                        buf = buffers[nxt] = [None] * nxt._num_outputs
                    if g is not None:
                        buf[nr] = g if buf[nr] is None else _accumulate_buffer(buf[nr], g)
                    continue
                # its last gradient: the node is ready
                buf = buffers.pop(nxt, None) if buffers else None
                if buf is None:
                    if nxt._num_outputs == 1:
                        buf = [g]
                    else:
                        buf = [None] * nxt._num_outputs
                        buf[nr] = g
                elif g is not None:
                    buf[nr] = g if buf[nr] is None else _accumulate_buffer(buf[nr], g)
                if ready_node is None and not heap:
                    ready_node, ready_grads = nxt, buf
                else:
                    if ready_node is not None:  # what the heap would hold: it had been empty
                        heap.append((ready_node._seq, ready_node, ready_grads))
                        ready_node = None
                    push(heap, (nxt._seq, nxt, buf))
            # drop our references, so that a sink can tell it holds the only one (see
            # accumulate_into_grad); ``grads`` is rebound before the next node runs, and ``buf``
            # is the gradient list of a node still to run
            outputs = g = None
        task.current_node = None  # no node runs during the final callbacks
        if task.final_callbacks:
            # like torch's engine: after the last node, still inside the pass (a callback may queue
            # more, and current_task() is this pass), in the pass's grad mode
            if hooks_changes[0] != unchanged:
                _graph._restore_hooks_state(hooks_state)
            _run_final_callbacks(task)
    except BaseException:
        if anomaly.enabled and task.current_node is not None:  # a node (its hooks included) failed
            from .anomaly_mode import report_backward_error
            report_backward_error(task.current_node)
        raise
    finally:
        _task_stack.pop()
        grad_mode.STATE.enabled = prev_mode
        if hooks_changes[0] != unchanged:
            _graph._restore_hooks_state(hooks_state)
    return task.captured


# What sys.getrefcount reports for a gradient that only the engine holds, when _is_private looks
# at it (reached only as engine -> AccumulateGrad.apply -> accumulate_into_grad -> _is_private):
# the Tensor is held by the list of gradients given to apply, apply's local, accumulate_into_grad's
# and _is_private's parameters, and getrefcount's argument; its array by the Tensor, the local
# `data` in accumulate_into_grad, _is_private's parameter and getrefcount's argument; a base array
# by its one view, the local `base` and getrefcount's argument. Any other holder (a hook that kept
# the gradient, a view of it, another edge it also flows to) adds one. tests/test_grad_adoption.py
# pins both directions: a plain backward adopts (no copy), and every kind of holder prevents it.
_ENGINE_REFS_TO_GRAD = 5
_ENGINE_REFS_TO_DATA = 4
_ENGINE_REFS_TO_BASE = 3


def _is_private(grad, data) -> bool:
    """Whether nothing but the engine can see ``grad``'s storage, so ``.grad`` may adopt it."""
    if grad.grad_fn is not None or not data.flags.writeable:
        return False
    if sys.getrefcount(grad) > _ENGINE_REFS_TO_GRAD or sys.getrefcount(data) > _ENGINE_REFS_TO_DATA:
        return False
    base = data.base
    # a view is fine when it alone holds a base of the same size (the transpose of a fresh product)
    return base is None or (type(base) is np.ndarray and base.base is None and base.size == data.size
                            and sys.getrefcount(base) <= _ENGINE_REFS_TO_BASE)


def _copy_like(data, like):
    if like.flags.c_contiguous or not _memory_format.is_dense(like):
        return data.copy(order="C")   # a method call: a meta gradient copies as meta
    out = np.empty_like(like, dtype=data.dtype)   # like's strides
    out[...] = data
    return out


def _accumulate_buffer(old, new):
    return old + new


def _evaluate_filtered(task, node, grads):
    """A node of a pass that wants only some gradients: capture what is wanted here, and run the
    node only if it lies on a path to a wanted gradient (its tensor hooks run either way)."""
    needed = task.exec_info.get(node, False)
    if not needed:
        grads = _call_tensor_pre_hooks(node, grads)
    captures = task.captures.get(node) if task.captures else None
    if captures:
        for nr, index in captures:
            task.captured[index] = grads[nr]
    if not needed:
        return None
    return _run_node(task, node, grads)


def _run_node(task, node, grads):
    """Tensor hooks, retain_grad, node pre-hooks, the backward, node post-hooks: torch's order.
    (``_execute`` runs a node without hooks itself, the same steps minus the hooks.)"""
    if node._tensor_pre_hooks or node._retains_grad_hooks or (node.is_sink and node.variable._tensor_hooks):
        grads = _call_tensor_pre_hooks(node, grads)
    if node._pre_hooks:
        grads = _call_pre_hooks(node, grads)
    # like torch, the incoming gradients are kept for post hooks only if some existed before the
    # backward ran; hooks registered during it (from an unpack hook) get an empty grad_outputs
    had_post_hooks = bool(node._post_hooks)
    if grads[0] is not None or node.runs_without_grads or any(g is not None for g in grads):
        outputs = node.apply(grads) if task.node_apply is None else task.node_apply(node, grads)
        if getattr(node, "_input_dtypes", None) is not None:
            outputs = _cast_to_input_dtypes(node._input_dtypes, outputs)
    else:
        outputs = _without_grads(node)
    exec_info = task.exec_info
    if exec_info is not None and not node.runs_without_grads:
        outputs = _drop_unneeded(node, outputs, exec_info)
    if node._post_hooks or _op_backward_hooks:
        outputs = _after_backward(node, outputs, grads, had_post_hooks)
    if task.keep_graph:
        pass
    elif node._releases_more_than_saved:
        node.release_variables()
    elif node._saved:  # Node.release_variables, written out as in _execute
        if None in node._saved:
            node._freed_undefined = tuple(map(_is_none, node._saved))
        node._saved = None
    if _anomaly_state.enabled and outputs and _anomaly_state.check_nan:
        _check_nan(node, outputs)
    return outputs


def _without_grads(node):
    """No gradient arrived: the formula is skipped, but like torch's generated backward the node
    still unpacks what it saved (unpack hooks run; a freed graph or an in-place change raises)."""
    if node._saved is None or node._saved:
        node.saved()
    return (None,) * len(node.next_functions)


def _after_backward(node, outputs, grads, had_post_hooks):
    """Node post-hooks, then op backward hooks, after a node's backward."""
    if node._post_hooks:
        outputs = _call_post_hooks(node, outputs, grads if had_post_hooks else ())
    if _op_backward_hooks:
        outputs = _above.call_as_caller(_graph._op_dispatch[1], node, outputs, grads)
    return outputs


def _drop_unneeded(node, outputs, exec_info):
    """A built-in formula computes only the gradients this pass needs (custom Functions compute
    them all), so post-hooks see None for the others."""
    edges = node.next_functions
    if node.grads_for_every_input:
        if any(nxt is not None and nxt in exec_info for nxt, _ in edges):
            return outputs
        return (None,) * len(outputs)
    return tuple([g if nxt is not None and nxt in exec_info else None for (nxt, _), g in zip(edges, outputs)])


def accumulate_into_grad(var, grad) -> None:
    """Add ``grad`` into ``var.grad`` as torch's AccumulateGrad does.

    The first gradient is adopted without a copy when nothing else can see its storage (the same
    reference-count test torch makes); later ones are added in place, so ``.grad`` keeps its identity.
    """
    current = var._grad_value  # a leaf's: what its .grad property returns
    vdata = var._ndarray
    data = grad._ndarray
    same_dtype = data.dtype == vdata.dtype
    if not same_dtype and _tensor._dtype.is_bfloat16_np(vdata.dtype):
        # a backward formula that left bfloat16 for float32 math: round once into the leaf's dtype
        grad = grad.to(var.dtype)
        data = grad._ndarray
        same_dtype = True
    if grad_mode.STATE.enabled:
        # create_graph: the gradient keeps its own graph, so accumulate out of place; the first one
        # is copied into a fresh tensor laid out like the leaf (a CopyBackwards node, as in torch)
        var.grad = _tensor.wrap(np.empty_like(vdata, dtype=data.dtype)).copy_(grad) if current is None else current + grad
        return
    if current is None:
        # torch's layout contract: .grad is strided as a dense leaf is (channels-last, transposed), else row-major
        layout_ok = data.strides == vdata.strides if not vdata.flags.c_contiguous and _memory_format.is_dense(vdata) \
            else data.flags.c_contiguous
        new = _tensor.wrap(data if layout_ok and _is_private(grad, data) else _copy_like(data, vdata))
        if same_dtype and data.shape == vdata.shape:
            var._grad_value = new
        else:
            var.grad = new  # the .grad setter's errors
        return
    cur = current._ndarray
    if cur.shape == data.shape and cur.flags.writeable:
        np.add(cur, data, out=cur, casting="unsafe")
        current._bump_version()
    else:
        var.grad = _tensor.wrap(cur + data)
