"""Activation checkpointing with PyTorch's API and hook behaviour.

``checkpoint(fn, *args, use_reentrant=False)`` runs ``fn`` keeping none of the tensors its ops
save for backward; the backward recomputes them by running ``fn`` again. It is built on
saved-tensor hooks, as PyTorch's non-reentrant checkpoint is:

- forward: a pack hook replaces every tensor an op inside ``fn`` saves by a placeholder, in
  order (saved-tensor hooks registered outside the checkpoint do not see those tensors);
- backward: the first unpack of a placeholder reruns ``fn`` on the saved inputs, with grad
  mode on, the forward's RNG state and a pack hook that collects the tensors saved by the
  rerun in the same order. With ``early_stop`` (the default) the rerun stops as soon as the
  last needed tensor is saved, so hooks of modules after that point do not fire again; without
  it ``fn`` runs to the end. Every backward pass recomputes anew.
- the rerun must save as many tensors, with the same shapes and dtypes, as the forward did
  (``determinism_check='default'``), else CheckpointError; with ``debug=True`` (or
  ``set_checkpoint_debug_enabled(True)``) that error carries the ATen operators both runs executed
  and the frames they were called from, as torch's does.

Selective checkpointing (``context_fn=functools.partial(create_selective_checkpoint_contexts,
policy)``) runs the forward under a dispatch mode that asks the policy about each ATen operator
and keeps the outputs it says to save; the recomputation's mode hands those back, per operator in
the same order, instead of the values computed again (a view op's output is made again: a view
shares its input's memory). hookgrad's modes see an op after it ran, so the recomputation still
runs the saved ops (a FlopCounterMode counts them again; torch skips them): the policy's calls,
the values, the errors and the storage's lifetime are torch's, the compute saved is not.

``use_reentrant=True`` is the older scheme: ``fn`` runs under no_grad inside an autograd
Function whose backward reruns it with grad and backpropagates through the rerun. Not passing
``use_reentrant`` warns and means True, as in PyTorch 2.13.
"""
from __future__ import annotations

import contextlib
import enum
import warnings
import weakref
from collections import defaultdict

from ..autograd._hook_context import RECOMPUTING as _RECOMPUTING  # what hookgrad.hooks.context() reports

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "set_checkpoint_early_stop", "GraphExecGroup",
           "CheckpointPolicy", "CheckpointFunction", "check_backward_validity", "detach_variable",
           "set_checkpoint_debug_enabled"]


_graph_exec_group = [None]  # the GraphExecGroup block the program is in


class GraphExecGroup:
    """Within the block, each non-reentrant checkpoint recomputes at most once, whatever the number
    of backward calls; those calls must then need disjoint saved tensors (a second unpack of the
    same one raises CheckpointError). Blocks do not nest."""

    def __enter__(self):
        if _graph_exec_group[0] is not None:
            raise RuntimeError(f"GraphExecGroup contexts cannot be nested. Already inside group {_graph_exec_group[0]}")
        _graph_exec_group[0] = self
        return self

    def __exit__(self, *exc_info) -> None:
        _graph_exec_group[0] = None

    @classmethod
    def _get_current_group(cls):
        return _graph_exec_group[0]


class CheckpointError(RuntimeError):
    """The recomputation did not reproduce what the forward saved."""


class CheckpointPolicy(enum.Enum):
    """What selective checkpointing does with an operator's output: ``*_SAVE`` keeps it from the
    forward for the backward, ``*_RECOMPUTE`` computes it again (``MUST_*`` are not to be overridden
    by other subsystems; ``*_CPU_OFFLOAD`` keeps it, on a CPU-only library the same as saving)."""
    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


_early_stop_override = {"value": None}


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Within the block, non-reentrant checkpoints use ``early_stop=enable``."""
    saved = _early_stop_override["value"]
    _early_stop_override["value"] = enable
    try:
        yield
    finally:
        _early_stop_override["value"] = saved


_debug_override = {"value": None}


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Within the block, checkpoints use ``debug=enabled`` (None: each call's own ``debug``)."""
    saved = _debug_override["value"]
    _debug_override["value"] = enabled
    try:
        yield
    finally:
        _debug_override["value"] = saved


def detach_variable(inputs):
    """Detached copies of a tuple's tensors, each keeping its ``requires_grad``."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    hg = _hg()
    out = []
    for value in inputs:
        if not isinstance(value, hg.Tensor):
            out.append(value)
            continue
        copy = value.detach()
        copy.requires_grad_(value.requires_grad)
        out.append(copy)
    return tuple(out)


def check_backward_validity(inputs) -> None:
    """Warn when no tensor among ``inputs`` requires grad (a reentrant checkpoint would then
    produce no gradients)."""
    hg = _hg()
    if not any(isinstance(v, hg.Tensor) and v.requires_grad for v in inputs):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", UserWarning,
                      stacklevel=3)


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


_DEBUG_TIP = ("Tip: To see a more detailed error message, either pass `debug=True` to "
              "`torch.utils.checkpoint.checkpoint(...)` or wrap the code block with "
              "`with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to enable checkpoint-debug mode "
              "globally.")


def _hg():
    import hookgrad
    return hookgrad


def _cpu_autocast_state() -> dict:
    """The CPU autocast settings in force now, to be restored around a recomputation."""
    hg = _hg()
    return {"enabled": hg.is_autocast_enabled("cpu"), "dtype": hg.get_autocast_dtype("cpu"),
            "cache_enabled": hg.is_autocast_cache_enabled()}


def _read_devices(args) -> None:
    """Read the device of each tensor among ``args``, as torch's checkpoint does to choose the device whose
    RNG state it keeps (here always the CPU's): function modes see the same reads."""
    hg = _hg()
    from ._pytree import tree_leaves
    for leaf in tree_leaves(args):
        if isinstance(leaf, hg.Tensor):
            leaf.device.type


def _metadata(t) -> dict:
    return {"shape": t.shape, "dtype": t.dtype, "device": t.device}


def _current_task():
    from ..autograd.engine import current_task
    return current_task()


class _StopRecomputation(Exception):
    pass


class _Placeholder:
    """Stands in for a saved tensor until the recomputation produces it."""
    __slots__ = ("__weakref__",)


class _Unplaced:
    """A tensor a recomputation saves beyond the forward's placeholders, kept as it is (see collect)."""
    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor


class _Frame:
    """One checkpointed call: its inputs, the placeholders its forward saved, and the tensors
    the latest recomputation produced for them."""

    def __init__(self, fn, args, kwargs, preserve_rng_state, early_stop, check_metadata):
        hg = _hg()
        self.fn, self.kwargs = fn, kwargs
        from ..autograd.graph import SavedTensor
        # inputs are saved like any tensor saved for backward: outer saved-tensor hooks see
        # them, and an in-place change before the backward is caught when they are unpacked
        self.inputs = [SavedTensor(a) if isinstance(a, hg.Tensor) else a for a in args]
        with hg._C.DisableTorchFunction():  # (torch keeps no such list: overrides see no reads)
            self.input_requires_grad = [isinstance(a, hg.Tensor) and a.requires_grad for a in args]
        self.rng_state = hg.get_rng_state() if preserve_rng_state else None
        self.autocast_state = _cpu_autocast_state()
        self.early_stop = early_stop
        self.check_metadata = check_metadata
        self.placeholders: list = []  # weak references, in saving order
        self.metadata: list = []
        # per backward pass (graph task id): id(placeholder) -> tensor, what that pass's one
        # recomputation produced and its unpacking has not taken yet
        self.recomputed: dict = {}
        self.forward_completed = False
        # set when a recomputation ran before the forward finished and saved more than it had: the
        # counts and metadata can then no longer be compared (torch gives up checking too)
        self.ignore_saved_mismatch = False
        self.on_error = None  # debug=True: turns a CheckpointError of the recomputation into torch's report

    def pack(self, tensor):
        placeholder = _Placeholder()
        self.placeholders.append(weakref.ref(placeholder))
        if self.check_metadata:
            self.metadata.append(_metadata(tensor))
        return placeholder

    def unpack(self, placeholder):
        # like torch: one recomputation per backward pass, or per GraphExecGroup block; outside a
        # pass, every unpack recomputes
        pass_id = _graph_exec_group[0]
        if pass_id is None:
            task = _current_task()
            pass_id = object() if task is None else task.id
        if pass_id not in self.recomputed:
            try:
                self.recomputed = {pass_id: self._recompute()}  # an earlier pass's leftovers are dropped
            except CheckpointError as error:
                if self.on_error is not None:  # debug=True: the operator logs of both runs
                    self.on_error(error)
                raise
        produced = self.recomputed[pass_id]
        if id(placeholder) not in produced:
            extra = ("Performing two backward calls that overlap (i.e. require the same saved activation in order "
                     "to compute gradients) is not allowed while under the torch.utils.checkpoint.GraphExecGroup "
                     "context. ") if _graph_exec_group[0] is not None else ""
            raise CheckpointError("torch.utils.checkpoint: Unpack is being triggered for a tensor that was already "
                                  f"unpacked once. {extra}If you are calling ctx.saved_tensors in backward, make sure "
                                  "to do so only once. Otherwise please open an issue with details on your use case.")
        return produced.pop(id(placeholder))

    def _unpacked_inputs(self):
        from ..autograd.graph import SavedTensor
        inputs = []
        for value, requires_grad in zip(self.inputs, self.input_requires_grad):
            if isinstance(value, SavedTensor):
                value = value.unpack()
                # an outer unpack hook (a checkpoint around this one) may hand back a detached
                # tensor; the rerun must see the input's requires_grad to save the same tensors
                if requires_grad and not value.requires_grad:
                    value = value.detach().requires_grad_(True)
            inputs.append(value)
        return inputs

    def _recompute(self) -> dict:
        """Rerun the function; {id(placeholder): recomputed tensor} for the placeholders alive."""
        hg = _hg()
        from ..autograd.graph import saved_tensors_hooks
        produced: list = []

        def collect(tensor):
            index = len(produced)
            if index >= len(self.placeholders):
                if not self.early_stop and not self.forward_completed:
                    # a backward inside the checkpointed function unpacked (and so recomputed) before
                    # the forward was over; what that rerun's own backward saves has no placeholder
                    self.ignore_saved_mismatch = True
                    return _Unplaced(tensor)
                raise CheckpointError("torch.utils.checkpoint: trying to save more tensors during recomputation "
                                      f"than during the original forward pass.\n{_DEBUG_TIP}")
            produced.append(tensor.detach() if tensor.requires_grad else tensor)
            if self.early_stop and len(produced) == len(self.placeholders):
                raise _StopRecomputation
            return index

        args = self._unpacked_inputs()
        saved_rng = hg.get_rng_state() if self.rng_state is not None else None
        try:
            if self.rng_state is not None:
                hg.set_rng_state(self.rng_state)
            with saved_tensors_hooks(collect, _unpack_recomputed(produced)), hg.enable_grad(), \
                    hg.autocast("cpu", **self.autocast_state):
                _RECOMPUTING[0] += 1
                try:
                    self.fn(*args, **self.kwargs)
                finally:
                    _RECOMPUTING[0] -= 1
        except _StopRecomputation:
            pass
        finally:
            if saved_rng is not None:
                hg.set_rng_state(saved_rng)
        if len(produced) != len(self.placeholders) and not self.ignore_saved_mismatch:
            raise CheckpointError("torch.utils.checkpoint: A different number of tensors was saved during the "
                                  "original forward and recomputation.\nNumber of tensors saved during forward: "
                                  f"{len(self.placeholders)}\nNumber of tensors saved during recomputation: "
                                  f"{len(produced)}.\n{_DEBUG_TIP}")
        if self.check_metadata and not self.ignore_saved_mismatch:
            different = [(i, meta, _metadata(t)) for i, (meta, t) in enumerate(zip(self.metadata, produced))
                         if meta != _metadata(t)]
            if different:
                listing = "".join(f"tensor at position {i}:\nsaved metadata: {a}\nrecomputed metadata: {b}\n"
                                  for i, a, b in different)
                raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors have "
                                      f"different metadata than during the forward pass.\n{listing}.\n{_DEBUG_TIP}")
        recomputed = {}
        for ref, tensor in zip(self.placeholders, produced):
            placeholder = ref()
            if placeholder is not None:
                recomputed[id(placeholder)] = tensor
        return recomputed


_DEBUG_REPORT = """ \
An error happened while unpacking tensors; dumping logs of latest computation
because you passed `debug=True` to `torch.utils.checkpoint.checkpoint()`.
Scroll all the way down for guidance on how to navigate these logs.

+~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~+
|        1. Stack traces of the operators that ran in the original forward     |
+------------------------------------------------------------------------------+

{forward_traces}
+~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~+
|        2. Stack traces of the operators that ran during recomputation        |
+------------------------------------------------------------------------------+

{recompute_traces}
+~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~+
|       3. Log of operators in the original forward and recomputation          |
+------------------------------------------------------------------------------+
(Scroll up to correlate stack traces with each operation listed below. This
 helps identify their source in the code.)

IMPORTANT: Differences in "detach" calls between the original forward and the
           recomputation are expected. They are introduced by the checkpointing
           mechanism and can be ignored.

Operations executed during the original forward:

{forward_ops}

Operations executed during recomputation:

{recompute_ops}

+------------------------------------------------------------------------------+
 ERROR: Detected non-determinism while running activation checkpointing

 You are seeing this error because you passed `debug=True` to checkpoint and
 tensors to be saved during the original forward and differ between those saved
 during recomputation. This can happen if different operators were ran in the
 original forward and in the recomputation.

 To identify where the mismatch may be coming from, you can do the following:

 1) Compare the operators ran during original forward and recomputation to
    see where they differ. These operators are printed above in the order they
    were executed.

 2) Review the stack trace for each operator to locate its invocation source.
    Each operator's stack trace is printed in their execution order.

 Note that the logs can be quite long. Here's how they are structured:
 (Tip: you can Ctrl-f for these headers)

 1. Stack traces of the operators that ran in the original forward
 2. Stack traces of the operators that ran during recomputation
 3. Log of operators in the original forward and recomputation
 4. Error message                                             <--- You are here
--------------------------------------------------------------------------------
"""


def _debug_context_and_error():
    """checkpoint(debug=True): (context_fn, on_error). The contexts log every ATen operator of the
    forward and of the recomputation with the Python frames it was called from; on_error raises a
    CheckpointError carrying both logs (torch's report, with hookgrad's operator log lines)."""
    import os
    import traceback
    from . import _python_dispatch

    package_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    class _OperatorLog(_python_dispatch.TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops, self.traces = [], []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func))
            self.traces.append([frame for frame in traceback.extract_stack()[:-1]
                                if not os.path.abspath(frame.filename).startswith(package_dir)])
            return func(*args, **(kwargs or {}))

    logs = {"forward": None, "recompute": None}

    @contextlib.contextmanager
    def logging(which):
        log = logs[which] = _OperatorLog()
        with log:
            yield

    def traces(label, log):
        lines = []
        for i, (op, frames) in enumerate(zip(log.ops, log.traces)):
            lines.append(f"{op}   ({i + 1} of {len(log.ops)} in {label})\n")
            lines.extend(f"{f.filename}:{f.lineno}:{f.name}" for f in reversed(frames))
            lines.append("\n")
        return "\n".join(lines)

    def on_error(error):
        forward, recompute = logs["forward"], logs["recompute"]
        if forward is None or recompute is None:
            raise AssertionError("checkpoint(debug=True): an operator log is missing")
        raise CheckpointError(_DEBUG_REPORT.format(
            forward_traces=traces("original", forward), recompute_traces=traces("recompute", recompute),
            forward_ops="\n".join(forward.ops), recompute_ops="\n".join(recompute.ops))) from error

    def context_fn():
        return logging("forward"), logging("recompute")

    return context_fn, on_error


def _unpack_recomputed(produced: list):
    def unpack(packed):
        return packed.tensor if packed.__class__ is _Unplaced else produced[packed]
    return unpack


def _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check, early_stop, args, kwargs,
                                  on_error=None):
    hg = _hg()
    from ..autograd.graph import saved_tensors_hooks
    if determinism_check not in ("default", "none"):
        raise ValueError("determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    _read_devices(args)
    forward_context, recompute_context = context_fn()
    if not hg.is_grad_enabled():  # nothing is saved without grad mode: plain call
        with forward_context:
            return function(*args, **kwargs)
    if _early_stop_override["value"] is not None:
        early_stop = _early_stop_override["value"]

    def rerun(*inputs, **kw):
        with recompute_context:
            return function(*inputs, **kw)

    frame = _Frame(rerun, args, kwargs, preserve, early_stop, determinism_check == "default")
    frame.on_error = on_error
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_context:
        out = function(*args, **kwargs)
    frame.forward_completed = True
    return out


def _reentrant_function():
    from ..autograd.function import Function
    hg = _hg()

    class CheckpointFunction(Function):
        @staticmethod
        def forward(ctx, run_function, preserve_rng_state, *args):
            check_backward_validity(args)
            _read_devices(args)
            ctx.run_function = run_function
            ctx.preserve_rng_state = preserve_rng_state
            ctx.autocast_state = _cpu_autocast_state()
            if preserve_rng_state:
                ctx.fwd_rng_state = hg.get_rng_state()
            ctx.inputs, ctx.tensor_indices, tensors = [], [], []
            for i, arg in enumerate(args):
                if isinstance(arg, hg.Tensor):
                    tensors.append(arg)
                    ctx.tensor_indices.append(i)
                    ctx.inputs.append(None)
                else:
                    ctx.inputs.append(arg)
            ctx.save_for_backward(*tensors)
            with hg.no_grad():
                return run_function(*args)

        @staticmethod
        def backward(ctx, *grad_outputs):
            from ..autograd import engine
            if not engine.is_checkpoint_valid():
                raise RuntimeError("When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                                   "passing an `inputs` parameter to .backward(). To resolve this error, you can either "
                                   "set use_reentrant=False, or call .backward() without passing the `inputs` argument.")
            inputs = list(ctx.inputs)
            for i, tensor in zip(ctx.tensor_indices, ctx.saved_tensors):
                inputs[i] = tensor
            detached = detach_variable(tuple(inputs))
            saved_rng = hg.get_rng_state() if ctx.preserve_rng_state else None
            try:
                if saved_rng is not None:
                    hg.set_rng_state(ctx.fwd_rng_state)
                with hg.enable_grad(), hg.autocast("cpu", **ctx.autocast_state):
                    _RECOMPUTING[0] += 1
                    try:
                        outputs = ctx.run_function(*detached)
                    finally:
                        _RECOMPUTING[0] -= 1
            finally:
                if saved_rng is not None:
                    hg.set_rng_state(saved_rng)
            if isinstance(outputs, hg.Tensor):
                outputs = (outputs,)
            with_grad = [(o, g) for o, g in zip(outputs, grad_outputs) if isinstance(o, hg.Tensor) and o.requires_grad]
            if not with_grad:
                raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
            hg.autograd.backward([o for o, _ in with_grad], [g for _, g in with_grad])
            grads = tuple(d.grad if isinstance(d, hg.Tensor) else None for d in detached)
            return (None, None) + grads

    return CheckpointFunction


_REENTRANT = {}


def _use_reentrant_or_warn(use_reentrant, missing: str) -> bool:
    """``use_reentrant`` as given; when left out, torch's UserWarning (``missing`` + the shared advice,
    pointed at the caller of the public function) and the reentrant variant."""
    if use_reentrant is None:
        warnings.warn(missing + "use_reentrant=False is recommended, but if you need to preserve the current default "
                      "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
                      "differences between the two variants.", UserWarning, stacklevel=3)
        return True
    return use_reentrant


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn, determinism_check="default",
               debug=False, early_stop=True, **kwargs):
    """Run ``function(*args, **kwargs)`` without keeping its saved tensors; recompute them in
    backward (see the module docstring)."""
    use_reentrant = _use_reentrant_or_warn(use_reentrant, "torch.utils.checkpoint: the use_reentrant parameter "
                                           "should be passed explicitly. Starting in PyTorch 2.9, calling checkpoint "
                                           "without use_reentrant will raise an exception. ")
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        if "fn" not in _REENTRANT:
            _REENTRANT["fn"] = _reentrant_function()
        return _REENTRANT["fn"].apply(function, preserve, *args)
    on_error = None
    if _debug_override["value"] if _debug_override["value"] is not None else debug:
        if context_fn is not noop_context_fn:
            raise ValueError("debug=True is incompatible with non-default context_fn")
        context_fn, on_error = _debug_context_and_error()
    return _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check, early_stop, args,
                                         kwargs, on_error)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Split ``functions`` (a list or an nn.Sequential) into ``segments`` chunks and checkpoint
    every chunk but the last."""
    use_reentrant = _use_reentrant_or_warn(use_reentrant, "torch.utils.checkpoint.checkpoint_sequential: the "
                                           "use_reentrant parameter should be passed explicitly. In version 2.9 we "
                                           "will raise an exception if use_reentrant is not passed. ")
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run(start, end):
        def forward(value):
            for j in range(start, end + 1):
                value = functions[j](value)
            return value
        return forward

    from ..nn import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)


def __getattr__(name):
    # the reentrant autograd Function, built on first use (it needs the autograd package)
    if name == "CheckpointFunction":
        if "fn" not in _REENTRANT:
            _REENTRANT["fn"] = _reentrant_function()
        return _REENTRANT["fn"]
    # selective checkpointing's modes and ignored operators (they need the dispatch layer)
    if name == "_CachingTorchDispatchMode":
        return _selective_modes()[0]
    if name == "_CachedTorchDispatchMode":
        return _selective_modes()[1]
    if name == "SAC_IGNORED_OPS":
        return _sac_ignored()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- device states and selective checkpointing --------------------------------------------------------
__all__ += ["get_device_states", "set_device_states", "DefaultDeviceType", "SelectiveCheckpointContext",
            "create_selective_checkpoint_contexts", "SAC_IGNORED_OPS"]


def get_device_states(*args):
    """The accelerator devices of the tensors in ``args`` and their RNG states: none, on the CPU."""
    return [], []


def set_device_states(devices, states, *, device_type=None) -> None:
    """Restore accelerator RNG states; with no accelerator, only an empty list is valid."""
    if list(devices) or list(states):
        raise RuntimeError("set_device_states: hookgrad has no accelerator devices to restore RNG states on")


class DefaultDeviceType:
    """The device type whose RNG state checkpoint preserves (the CPU's is always preserved)."""

    _default_device_type = "cpu"

    @staticmethod
    def set_device_type(device: str = "cpu") -> None:
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        return DefaultDeviceType._default_device_type


class SelectiveCheckpointContext:
    """What a selective-checkpoint policy function receives about the op being decided (the policy
    is asked during the forward only: ``is_recompute`` is False)."""

    def __init__(self, *, is_recompute, op_output=None) -> None:
        self.is_recompute = is_recompute
        self.op_output = op_output


def _ignored_ops() -> set:
    """The operators selective checkpointing passes through undecided: ``detach`` (checkpointing
    runs a different number of them in the forward and the recomputation) and the metadata
    queries."""
    from .. import ops
    aten = ops.aten
    return {aten.detach.default, aten.is_contiguous.default, aten.is_contiguous.memory_format,
            aten.is_strides_like_format.default, aten.is_non_overlapping_and_dense.default, aten.size.default,
            aten.sym_size.default, aten.stride.default, aten.sym_stride.default, aten.storage_offset.default,
            aten.sym_storage_offset.default, aten.numel.default, aten.sym_numel.default, aten.dim.default}


_SAVING = (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE, CheckpointPolicy.MUST_CPU_OFFLOAD,
           CheckpointPolicy.PREFER_CPU_OFFLOAD)
_RECOMPUTE = object()    # a storage entry: the policy chose to recompute this output
_CONSUMED = object()     # a storage entry: its saved output was handed to the recomputation
_MISMATCH = ("This can happen if the operations in the checkpointed region are nondeterministic or depend on "
             "global state that changed between forward and backward.")


class _VersionWrapper:
    """A saved output and its version counter when saved: a later in-place change is an error."""

    def __init__(self, value) -> None:
        hg = _hg()
        self.val = value
        self.version = value._version if isinstance(value, hg.Tensor) else None

    def get_val(self, allow_cache_entry_mutation):
        if self.version is not None and not allow_cache_entry_mutation and self.val._version != self.version:
            raise RuntimeError("Tensor cached during selective activation checkpoint has been mutated")
        return self.val


def _map_outputs(fn, value):
    if isinstance(value, (tuple, list)):
        return type(value)(_map_outputs(fn, v) for v in value)
    return fn(value)


def _saved_form(value):
    """What the storage keeps of an output: a detached tensor (no graph kept alive through it)."""
    hg = _hg()
    return _VersionWrapper(value.detach() if isinstance(value, hg.Tensor) else value)


def _selective_modes():
    """The two dispatch-mode classes (made on first use: the dispatch layer loads after this module)."""
    if "modes" in _SAC_STATE:
        return _SAC_STATE["modes"]
    from ._python_dispatch import TorchDispatchMode

    class StorageMode(TorchDispatchMode):
        """What both modes share: the storage, keyed by operator and by how many calls of it came before."""

        def __init__(self, storage) -> None:
            super().__init__()
            self.storage = storage
            self.func_counter = defaultdict(int)

        @classmethod
        def ignore_compile_internals(cls):
            return True

        def _next_index(self, func) -> int:
            index = self.func_counter[func]
            self.func_counter[func] += 1
            return index

    class CachingMode(StorageMode):
        """The forward: asks the policy about each operator and keeps what it says to save."""

        def __init__(self, policy_fn, storage, ac_graph_id=None) -> None:
            super().__init__(storage)
            self.policy_fn = policy_fn
            self.ac_graph_id = ac_graph_id

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = {} if kwargs is None else kwargs
            if func in _sac_ignored():
                return func(*args, **kwargs)
            out = func(*args, **kwargs)
            index = self._next_index(func)
            policy = self.policy_fn(SelectiveCheckpointContext(is_recompute=False, op_output=out), func, *args,
                                    **kwargs)
            if isinstance(policy, bool):
                policy = CheckpointPolicy.MUST_SAVE if policy else CheckpointPolicy.PREFER_RECOMPUTE
            self.storage[func][index] = _map_outputs(_saved_form, out) if policy in _SAVING else _RECOMPUTE
            return out

    class CachedMode(StorageMode):
        """The recomputation: hands back what the forward saved, recomputes the rest."""

        def __init__(self, policy_fn, storage, allow_cache_entry_mutation=False) -> None:
            super().__init__(storage)
            self.allow_cache_entry_mutation = allow_cache_entry_mutation

        def __enter__(self):
            self.func_counter.clear()     # a retained graph's second backward finds the entries consumed
            return super().__enter__()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = {} if kwargs is None else kwargs
            if func in _sac_ignored():
                return func(*args, **kwargs)
            index = self._next_index(func)
            entries = self.storage.get(func)
            if entries is None:
                raise RuntimeError(f"{func} encountered during backward but not found in storage. {_MISMATCH}")
            entry = entries.get(index)
            if entry is None:
                raise RuntimeError(f"{func} invocation index {index} encountered during backward but not found in "
                                   f"storage. {_MISMATCH}")
            if entry is _CONSUMED:
                raise RuntimeError("Trying to backward an extra time. You are only allowed to backward once on any "
                                   "region computed under selective activation checkpoint.")
            if entry is _RECOMPUTE:
                return func(*args, **kwargs)
            entries[index] = _CONSUMED
            saved = _map_outputs(lambda wrapper: wrapper.get_val(self.allow_cache_entry_mutation), entry)
            if func.is_view:
                # hookgrad's view shares its input's memory and cannot take other values; the saved
                # output of a view op equals the view made again
                return func(*args, **kwargs)
            return saved

    CachingMode.__name__ = CachingMode.__qualname__ = "_CachingTorchDispatchMode"
    CachedMode.__name__ = CachedMode.__qualname__ = "_CachedTorchDispatchMode"
    for cls in (CachingMode, CachedMode):
        cls.__module__ = __name__
    _SAC_STATE["modes"] = CachingMode, CachedMode
    return CachingMode, CachedMode


_SAC_STATE: dict = {}     # the mode classes and the ignored operators, made on first use


def _sac_ignored() -> set:
    ignored = _SAC_STATE.get("ignored")
    if ignored is None:
        ignored = _SAC_STATE["ignored"] = _ignored_ops()
    return ignored


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation: bool = False):
    """The ``context_fn`` result for selective activation checkpointing: ``(forward context,
    recomputation context)``, two dispatch modes sharing one storage. The forward's mode asks
    ``policy_fn(ctx, op, *args, **kwargs)`` per ATen operator (a list of ops means MUST_SAVE for
    those, PREFER_RECOMPUTE for the others) and keeps the outputs to save; the recomputation's mode
    hands them back in the same order per operator instead of the values recomputed."""
    from ..ops import OpOverload, OpOverloadPacket
    if isinstance(policy_fn_or_list, list):
        for op in policy_fn_or_list:
            if not isinstance(op, OpOverload):
                extra = ("Please update the OpOverloadPacket to a specific OpOverload.For example, if you have "
                         "`torch.ops.aten.mm`, change it to `torch.ops.aten.mm.default`."
                         if isinstance(op, OpOverloadPacket) else "")
                raise ValueError(f"Expected op in `op_list` to be an OpOverload but got: {op} of type {type(op)}. "
                                 f"{extra}")
        ops_to_save = list(policy_fn_or_list)

        def policy_fn(ctx, op, *args, **kwargs):
            return CheckpointPolicy.MUST_SAVE if op in ops_to_save else CheckpointPolicy.PREFER_RECOMPUTE
    elif callable(policy_fn_or_list):
        policy_fn = policy_fn_or_list
    else:
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    caching, cached = _selective_modes()
    storage: dict = defaultdict(dict)
    return caching(policy_fn, storage), cached(None, storage, allow_cache_entry_mutation)
