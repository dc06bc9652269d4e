"""``DistributedDataParallel``: data-parallel training over ``hookgrad.distributed`` (MPI), built on hooks.

How a training step synchronizes, as in torch's reducer:

- construction: every rank checks that all ranks hold the same parameter shapes, then takes rank 0's
  parameters and buffers (one broadcast per dtype). Parameters that require grad are put in buckets
  in registration order (the first at most 1 MiB when ``bucket_cap_mb`` is left at its default, the
  others at most ``bucket_cap_mb``), and the bucket list is reversed: the last layers' gradients
  are ready first in backward, so their bucket goes first;
- forward: runs the wrapped module (its own hooks fire as usual) and arms the reduction for the
  next backward unless inside :meth:`no_sync` or under ``no_grad``; with
  ``find_unused_parameters=True`` it walks the graph from the outputs and marks the parameters it
  does not reach as ready;
- backward: a post-accumulate-grad hook on every parameter counts it ready; when the last parameter
  of a bucket is ready, that bucket (and any following ones already complete) is copied into a flat
  buffer, divided by the world size and sent into a non-blocking MPI all-reduce (or handed to the
  registered comm hook) while backward goes on; every later hook lets MPI progress;
- end of the pass: a callback queued with ``hookgrad.hooks.call_at_backward_end`` waits for every
  bucket and writes the averaged gradients into ``.grad``.

Not done like torch: buckets keep the construction order (torch rebuilds them after the first
iteration from the order gradients arrived); no ``static_graph``, ``gradient_as_bucket_view``,
``join()`` or mixed precision; one CPU device only.
"""
from __future__ import annotations

import contextlib
import time

import numpy as np

from ..._late import LateNames
from ..._tensor import Tensor, wrap
from ...autograd.grad_mode import is_grad_enabled
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_above = LateNames(dist="hookgrad.distributed:distributed_c10d",
                   call_at_backward_end="hookgrad.hooks:call_at_backward_end")

_MB = 1024 * 1024
_DEFAULT_BUCKET_CAP_MB = 25
_DEFAULT_FIRST_BUCKET_BYTES = 1 * _MB

_UNFINISHED_REDUCTION = (
    "Expected to have finished reduction in the prior iteration before starting a new one. This error "
    "indicates that your module has parameters that were not used in producing loss. You can enable unused "
    "parameter detection by passing the keyword argument `find_unused_parameters=True` to "
    "`torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs "
    "participate in calculating loss.")


class GradBucket:
    """What a comm hook receives: one bucket's flat gradient buffer and its parameters."""

    def __init__(self, index: int, buffer: Tensor, params: list, offsets: list, is_last: bool) -> None:
        self._index, self._buffer, self._params = index, buffer, params
        self._offsets, self._is_last = offsets, is_last

    def index(self) -> int:
        return self._index

    def buffer(self) -> Tensor:
        return self._buffer

    def set_buffer(self, tensor: Tensor) -> None:
        self._buffer = tensor

    def gradients(self) -> list:
        return [self._buffer[start:start + p.numel()].view(p.shape) for p, start in zip(self._params, self._offsets)]

    def parameters(self) -> list:
        return list(self._params)

    def is_last(self) -> bool:
        return self._is_last


class _Bucket:
    def __init__(self, index: int, params: list, positions: list) -> None:
        self.index = index
        self.params = params
        self.positions = positions              # indices into the DDP's parameter list
        self.sizes = [p.numel() for p in params]
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(int).tolist()
        self.numel = int(sum(self.sizes))
        self.dtype = params[0]._ndarray.dtype


def _assign_buckets(params: list, limits: list) -> list:
    """Group parameter indices (registration order) into buckets per dtype under the byte limits
    (the first limit for each dtype's first bucket, the last for the rest)."""
    open_buckets: dict = {}
    done = []
    for i, p in enumerate(params):
        key = p._ndarray.dtype
        bucket, size, limit_index = open_buckets.get(key, ([], 0, 0))
        bucket.append(i)
        size += p.numel() * p._ndarray.dtype.itemsize
        if size >= limits[min(limit_index, len(limits) - 1)]:
            done.append(bucket)
            open_buckets[key] = ([], 0, limit_index + 1)
        else:
            open_buckets[key] = (bucket, size, limit_index)
    done.extend(b for b, _, _ in open_buckets.values() if b)
    return sorted(done, key=min)


def _tensors_in(value, found: list) -> list:
    if isinstance(value, Tensor):
        found.append(value)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _tensors_in(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            _tensors_in(item, found)
    return found


class DistributedDataParallel(Module):
    """Wraps ``module`` so that each rank trains on its share of the batch and every backward pass
    leaves the average of all ranks' gradients in ``.grad``. The wrapped module is ``.module``, so
    ``state_dict()`` keys start with ``module.`` as in torch."""

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0, broadcast_buffers: bool = True,
                 init_sync: bool = True, process_group=None, bucket_cap_mb=None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None, mixed_precision=None,
                 device_mesh=None, skip_all_reduce_unused_params: bool = False, **unsupported) -> None:
        super().__init__()
        if unsupported:
            raise TypeError(f"DistributedDataParallel got unexpected keyword arguments {sorted(unsupported)}")
        dist = _above.dist
        pg = dist._default_group() if process_group is None else dist._group(process_group)
        if pg is None:
            raise ValueError("DistributedDataParallel: this rank is not a member of process_group")
        if device_ids or output_device is not None:
            raise ValueError(f"DistributedDataParallel device_ids and output_device arguments only work with "
                             f"single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                             f"{device_ids}, output_device {output_device}, and module parameters "
                             f"{{device(type='cpu')}}.")
        for name, value in (("gradient_as_bucket_view", gradient_as_bucket_view), ("static_graph", static_graph)):
            if value:
                raise NotImplementedError(f"DistributedDataParallel({name}=True) is not supported by hookgrad")
        if mixed_precision is not None or device_mesh is not None:
            raise NotImplementedError("DistributedDataParallel: mixed_precision and device_mesh are not supported "
                                      "by hookgrad")
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        self.module = module
        self.process_group = pg
        self.dim = dim
        self.device_ids = None
        self.output_device = None
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((_DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb) * _MB)
        self._world = pg.size()
        self._verify_same_model(params)
        if init_sync:
            self._broadcast_from_rank0(list(module.parameters()) + list(module.buffers()))
        limits = ([_DEFAULT_FIRST_BUCKET_BYTES, self.bucket_bytes_cap] if bucket_cap_mb is None
                  else [self.bucket_bytes_cap])
        groups = list(reversed(_assign_buckets(params, limits)))
        self._params = params
        self._buckets = [_Bucket(i, [params[j] for j in g], g) for i, g in enumerate(groups)]
        self._bucket_of = {}
        for b in self._buckets:
            for j in b.positions:
                self._bucket_of[j] = b
        self._comm_hook = None
        self._comm_state = None
        self._armed = False              # the next backward reduces
        self._pass = None                # the reduction in progress
        self._unfinished = None          # indices of parameters the last reduction never got
        self._last_wait_s = 0.0          # time the last pass's end waited for communication
        self._last_pass_times = None     # (backward's end, reduction's end) on time.perf_counter's clock
        self._last_buckets_reduced_early = []   # buckets whose reduction was over when backward ended
        self._hook_handles = [p.register_post_accumulate_grad_hook(self._grad_ready_hook(j))
                              for j, p in enumerate(params)]

    # ---- construction ------------------------------------------------------------------------------
    def _verify_same_model(self, params) -> None:
        dist = _above.dist
        mine = [(tuple(p.shape), str(p.dtype)) for p in params]
        everyone = [None] * self._world
        dist.all_gather_object(everyone, mine, group=self.process_group)
        for rank, theirs in enumerate(everyone):
            if len(theirs) != len(mine):
                raise RuntimeError(f"DDP expects same model across all ranks, but Rank {self.process_group.rank()} "
                                   f"has {len(mine)} params, while rank {rank} has inconsistent {len(theirs)} params.")
            for i, (a, b) in enumerate(zip(mine, theirs)):
                if a != b:
                    raise RuntimeError(f"DDP expects same model across all ranks, but Rank "
                                       f"{self.process_group.rank()} has parameter {i} of shape {list(a[0])} "
                                       f"{a[1]}, while rank {rank} has {list(b[0])} {b[1]}.")

    def _broadcast_from_rank0(self, tensors) -> None:
        """Rank 0's values into every rank's tensors: one flat broadcast per dtype."""
        dist = _above.dist
        by_dtype: dict = {}
        for t in tensors:
            by_dtype.setdefault(t._ndarray.dtype, []).append(t)
        for dtype, group in by_dtype.items():
            flat = wrap(np.concatenate([np.ascontiguousarray(t._ndarray).reshape(-1) for t in group]))
            dist.broadcast(flat, src=self.process_group._global_ranks[0], group=self.process_group)
            start = 0
            for t in group:
                n = t.numel()
                if self.process_group.rank() != 0:
                    t._ndarray[...] = flat._ndarray[start:start + n].reshape(t._ndarray.shape)
                    t._bump_version()
                start += n

    # ---- forward -----------------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        if self._unfinished:
            missing, self._unfinished = self._unfinished, None
            raise RuntimeError(f"{_UNFINISHED_REDUCTION}\nParameter indices which did not receive grad for rank "
                               f"{self.process_group.rank()}: {' '.join(map(str, missing))}")
        if self.broadcast_buffers and self.require_forward_param_sync:
            buffers = list(self.module.buffers())
            if buffers and self._world > 1:
                self._broadcast_from_rank0(buffers)
        self._armed = is_grad_enabled() and self.require_backward_grad_sync
        if self._pass is not None:
            self._pass.abandon()        # a backward that raised, or never came
        self._pass = None
        output = self.module(*inputs, **kwargs)
        if self._armed:
            self._start_pass(output)
        return output

    def _start_pass(self, output) -> None:
        used = None
        if self.find_unused_parameters:
            used = self._reachable_parameters(output)
        self._pass = _Pass(self, used)

    def _reachable_parameters(self, output) -> set:
        """Indices of the parameters the graph from ``output`` reaches."""
        index = {id(p): j for j, p in enumerate(self._params)}
        reached, seen = set(), set()
        stack = [t.grad_fn for t in _tensors_in(output, []) if t.grad_fn is not None]
        stack += [t for t in _tensors_in(output, []) if t.grad_fn is None and t.requires_grad]
        while stack:
            node = stack.pop()
            if isinstance(node, Tensor):
                if id(node) in index:
                    reached.add(index[id(node)])
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            variable = getattr(node, "variable", None)
            if variable is not None and id(variable) in index:
                reached.add(index[id(variable)])
            for nxt, _ in getattr(node, "next_functions", ()):
                if nxt is not None:
                    stack.append(nxt)
        return reached

    # ---- backward ----------------------------------------------------------------------------------
    def _grad_ready_hook(self, position: int):
        def grad_ready(param):
            current = self._pass
            if current is not None:
                current.mark_ready(position)
        return grad_ready

    @contextlib.contextmanager
    def no_sync(self):
        """Inside this block, backward passes accumulate local gradients without communicating; the
        first synchronized backward after it reduces what has accumulated."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def register_comm_hook(self, state, hook) -> None:
        """Reduce each bucket with ``hook(state, bucket) -> Future`` whose value is the bucket's
        reduced flat gradient (see ``hookgrad.distributed.algorithms.ddp_comm_hooks.default_hooks``)."""
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        self._comm_hook, self._comm_state = hook, state


class _Pass:
    """One synchronized backward pass: which parameters are ready, which buckets have been sent."""

    def __init__(self, ddp: DistributedDataParallel, used) -> None:
        self.ddp = ddp
        self.remaining = [len(b.params) for b in ddp._buckets]
        self.ready = [False] * len(ddp._params)
        self.local_used = None if used is None else np.zeros(len(ddp._params), dtype=np.int32)
        self.next_bucket = 0
        self.in_flight: list = []       # (bucket, flat array or comm-hook future, MPI request or None)
        self.finish_queued = False
        self.progressing = False        # the background progress thread is on for this pass
        if used is not None:
            for j in range(len(ddp._params)):
                if j in used:
                    self.local_used[j] = 1
                else:
                    self._count_ready(j)

    def _count_ready(self, position: int) -> None:
        if self.ready[position]:
            return
        self.ready[position] = True
        self.remaining[self.ddp._bucket_of[position].index] -= 1

    def mark_ready(self, position: int) -> None:
        ddp = self.ddp
        if not self.finish_queued:
            self.finish_queued = True
            _above.call_at_backward_end(self.finish)
        if self.local_used is not None:
            self.local_used[position] = 1
        self._count_ready(position)
        buckets = ddp._buckets
        while self.next_bucket < len(buckets) and self.remaining[self.next_bucket] == 0:
            self._launch(buckets[self.next_bucket])
            self.next_bucket += 1
        requests = [r for _, _, r in self.in_flight if r is not None]
        if requests:
            _above.dist._progress(requests)

    def _launch(self, bucket: _Bucket) -> None:
        ddp = self.ddp
        flat = np.empty(bucket.numel, dtype=bucket.dtype)
        for p, start, size in zip(bucket.params, bucket.offsets, bucket.sizes):
            grad = p.grad
            if grad is None:
                flat[start:start + size] = 0
            else:
                flat[start:start + size] = grad._ndarray.reshape(-1)
        if ddp._comm_hook is not None:
            gb = GradBucket(bucket.index, wrap(flat), bucket.params, bucket.offsets,
                            bucket.index == len(ddp._buckets) - 1)
            future = ddp._comm_hook(ddp._comm_state, gb)
            if not hasattr(future, "wait"):
                raise RuntimeError(f"A DDP communication hook must return a torch.futures.Future, but "
                                   f"{getattr(ddp._comm_hook, '__name__', ddp._comm_hook)!r} returned "
                                   f"{type(future).__name__}")
            self.in_flight.append((bucket, future, None))
        else:
            flat /= ddp._world
            request = _above.dist._start_allreduce_sum(flat, ddp.process_group)
            self.in_flight.append((bucket, flat, request))
        if not self.progressing:
            self.progressing = True
            _above.dist._background_progress.begin()

    def abandon(self) -> None:
        """Forget this pass without finishing it (its backward raised or never ran)."""
        if self.progressing:
            self.progressing = False
            _above.dist._background_progress.end()

    def finish(self) -> None:
        ddp = self.ddp
        dist = _above.dist
        ddp._pass = None
        started = time.perf_counter()
        # how much of the gradient was already reduced when backward ended (hidden behind it)
        ddp._last_buckets_reduced_early = [b.index for b, payload, r in self.in_flight
                                           if (payload.done() if r is None else dist._is_done(r))]
        try:
            dist._wait_all([r for _, _, r in self.in_flight if r is not None])
        finally:
            if self.progressing:
                self.progressing = False
                dist._background_progress.end()
        results = []
        for bucket, payload, request in self.in_flight:
            if request is None:
                value = payload.wait()
                if isinstance(value, (list, tuple)):
                    value = value[0]
                if not isinstance(value, Tensor) or value.numel() != bucket.numel:
                    raise RuntimeError(f"A DDP communication hook's future must hold the bucket's reduced flat "
                                       f"gradient ({bucket.numel} elements), got {type(value).__name__}")
                payload = np.ascontiguousarray(value._ndarray).reshape(-1)
            results.append((bucket, payload))
        globally_used = None
        if self.local_used is not None:
            globally_used = self.local_used.copy()
            dist._wait_all([dist._start_allreduce_sum(globally_used, ddp.process_group)])
        ddp._last_pass_times = (started, time.perf_counter())   # end of this rank's backward, reduction done
        ddp._last_wait_s = ddp._last_pass_times[1] - started
        for bucket, flat in results:
            for p, j, start, size in zip(bucket.params, bucket.positions, bucket.offsets, bucket.sizes):
                if globally_used is not None and globally_used[j] == 0:
                    continue                        # no rank used it: .grad stays as it was
                value = flat[start:start + size].reshape(p._ndarray.shape)
                grad = p.grad
                if grad is None:
                    p.grad = wrap(value.astype(p._ndarray.dtype, copy=True))
                elif grad._ndarray.flags["WRITEABLE"] and grad._ndarray.flags["C_CONTIGUOUS"]:
                    grad._ndarray[...] = value
                else:
                    grad._ndarray = value.astype(p._ndarray.dtype, copy=True)
        if self.next_bucket < len(ddp._buckets):
            ddp._unfinished = [j for j, r in enumerate(self.ready) if not r]
