"""Process groups and collectives with ``torch.distributed``'s API, carried by MPI (``mpi4py``).

Every rank is an MPI process: ``mpiexec -n 2 python train.py`` or ``hookgrad run --nproc 2 train.py``
starts them, and MPI does the rendezvous, so ``init_process_group`` needs no address, port or store.
Both ``backend="mpi"`` and ``backend="gloo"`` (what CPU code usually asks for) are served by MPI;
``get_backend()`` answers the name asked for.

Collectives work in place on hookgrad tensors, as torch's do. Each one is a non-blocking MPI call
(``Iallreduce``, ``Ibcast``, ...); ``async_op=True`` hands back the :class:`Work`, otherwise it is
waited for before returning. Results land in the tensors when the Work completes: in the tensor's
own memory when it is contiguous and of a type MPI reduces natively, else through a contiguous copy
written back at completion (float16 and bfloat16 are reduced in float32 and rounded once).

Before a collective on tensors, the ranks compare a small fingerprint (operation, dtype, shape,
root, reduce op) with one ``Allgather``; a mismatch raises ``RuntimeError`` on every rank instead of
a wrong result or a hang. ``HOOKGRAD_DISTRIBUTED_CHECKS=0`` turns the check off (one round trip
less per collective). DistributedDataParallel's bucket reductions never pay for it.

A rank that dies of an uncaught exception prints it (prefixed ``[rankN]:`` like torch) and aborts
the whole MPI job, so the others do not wait for it forever.
"""
from __future__ import annotations

import enum
import os
import pickle
import sys
import time
import traceback
import zlib
from datetime import timedelta

import numpy as np

from ..futures import Future

__all__ = ["Backend", "GroupMember", "ProcessGroup", "ReduceOp", "RedOpType", "Work", "P2POp", "group",
           "is_available", "is_initialized", "is_mpi_available", "is_gloo_available", "is_nccl_available",
           "is_torchelastic_launched", "init_process_group", "destroy_process_group", "new_group",
           "get_rank", "get_world_size", "get_backend", "get_global_rank", "get_group_rank",
           "get_process_group_ranks", "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor",
           "reduce_scatter", "reduce_scatter_tensor", "reduce", "gather", "scatter", "all_to_all",
           "all_to_all_single", "send", "recv", "isend", "irecv", "batch_isend_irecv", "barrier",
           "monitored_barrier", "broadcast_object_list", "all_gather_object", "gather_object",
           "scatter_object_list", "send_object_list", "recv_object_list", "default_pg_timeout",
           "all_gather_single", "reduce_scatter_single", "is_ucc_available", "is_xccl_available",
           "is_backend_available", "supports_complex", "get_node_local_rank", "get_pg_count"]

_NOT_INITIALIZED = "Default process group has not been initialized, please make sure to call init_process_group."
_SERVED_BACKENDS = ("mpi", "gloo")
default_pg_timeout = timedelta(minutes=30)

_mpi_module = None


def _load_mpi():
    """mpi4py's MPI module; importing it initializes MPI (a singleton of one rank outside mpiexec)."""
    global _mpi_module
    if _mpi_module is None:
        try:
            from mpi4py import MPI
        except ImportError as exc:
            raise RuntimeError("hookgrad.distributed needs mpi4py and an MPI library: "
                               "pip install 'hookgrad[distributed]' (mpi4py and mpich)") from exc
        _mpi_module = MPI
    return _mpi_module


def is_available() -> bool:
    """True when mpi4py can be imported (hookgrad's only transport)."""
    import importlib.util
    return importlib.util.find_spec("mpi4py") is not None


def is_mpi_available() -> bool:
    return is_available()


def is_gloo_available() -> bool:
    """"gloo" is accepted and served by MPI, so it is there whenever MPI is."""
    return is_available()


def is_nccl_available() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    return False


def is_ucc_available() -> bool:
    return False


def is_xccl_available() -> bool:
    return False


def is_backend_available(backend: str) -> bool:
    """True for the backends served here ("mpi", "gloo") when MPI is there."""
    return str(backend).lower() in _SERVED_BACKENDS and is_available()


def supports_complex(reduceOp) -> bool:
    return _op_type(reduceOp) not in (RedOpType.MAX, RedOpType.MIN, RedOpType.PRODUCT, RedOpType.BAND,
                                      RedOpType.BOR, RedOpType.BXOR)


def get_node_local_rank(fallback_rank=None) -> int:
    """This process's rank on its machine: ``LOCAL_RANK`` (set under ``hookgrad run --nproc`` and by
    ``init_process_group``), else ``fallback_rank``."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
                       "`get_node_local_rank` to work, assuming you are not running in a multi-device context "
                       "and want the code to run locally instead.")


def get_pg_count() -> int:
    return len(_State.groups)


class Backend(str):
    """A backend name; ``Backend("GLOO") == "gloo"``. Only "mpi" and "gloo" can be used (both by MPI)."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: {type(name)}")
        return super().__new__(cls, name.lower())


class RedOpType(enum.IntEnum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8
    UNUSED = 9


class ReduceOp:
    """The reduction of a collective: ``ReduceOp.SUM``, ``AVG``, ``PRODUCT``, ``MIN``, ``MAX``, and for
    integer and bool tensors ``BAND``, ``BOR``, ``BXOR``. ``AVG`` needs a floating or complex dtype."""
    RedOpType = RedOpType
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM
    UNUSED = RedOpType.UNUSED

    def __init__(self, op=RedOpType.SUM):
        self.op = RedOpType(op)

    def __eq__(self, other):
        return _op_type(other) == self.op if isinstance(other, (ReduceOp, RedOpType)) else NotImplemented

    def __hash__(self):
        return hash(self.op)

    def __repr__(self):
        return f"ReduceOp({self.op.name})"


def _op_type(op) -> RedOpType:
    if isinstance(op, ReduceOp):
        return op.op
    if isinstance(op, RedOpType):
        return op
    raise TypeError(f"op must be a torch.distributed.ReduceOp (e.g. ReduceOp.SUM), but got {type(op).__name__} "
                    f"({op!r})")


class ProcessGroup:
    """A set of ranks with its own MPI communicator. ``rank()`` and ``size()`` are within the group."""

    def __init__(self, comm, global_ranks: list, backend: str, name: str) -> None:
        self._comm = comm
        self._global_ranks = list(global_ranks)
        self._backend = backend
        self._name = name

    def rank(self) -> int:
        return self._comm.Get_rank()

    def size(self) -> int:
        return self._comm.Get_size()

    def name(self) -> str:
        return self._backend

    @property
    def group_name(self) -> str:
        return self._name

    def _get_backend_name(self) -> str:
        return self._backend

    def __repr__(self) -> str:
        return f"ProcessGroup(backend={self._backend!r} over MPI, ranks={self._global_ranks})"


class GroupMember:
    """``GroupMember.WORLD`` is the default group once initialized; ``new_group`` hands
    ``NON_GROUP_MEMBER`` to the ranks it leaves out."""
    WORLD = None
    NON_GROUP_MEMBER = -100


class group:
    WORLD = None


_GROUP_NAMESPACE = group  # ``group`` is also a parameter name below


class _State:
    default_pg: ProcessGroup | None = None
    backend: str | None = None
    groups: list = []
    excepthook_installed = False


def is_initialized() -> bool:
    return _State.default_pg is not None


def _default_group() -> ProcessGroup:
    if _State.default_pg is None:
        raise ValueError(_NOT_INITIALIZED)
    return _State.default_pg


def _group(group) -> ProcessGroup | None:
    """The group to run on, or None when this rank is not a member (the call then does nothing)."""
    pg = _default_group()
    if group is None or group is GroupMember.WORLD:
        return pg
    if group is GroupMember.NON_GROUP_MEMBER or (isinstance(group, int) and group == GroupMember.NON_GROUP_MEMBER):
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup from new_group (or None), but got {type(group).__name__}")
    if group not in _State.groups:
        raise ValueError("Invalid process group specified: it was destroyed or comes from an earlier "
                         "init_process_group")
    return group


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: environment variable "
                         f"{name} expected, but not an integer ({value!r})") from None


def init_process_group(backend=None, init_method=None, timeout=None, world_size: int = -1, rank: int = -1,
                       store=None, group_name: str = "", pg_options=None, device_id=None) -> None:
    """Join the MPI job as the default process group.

    ``backend``: "mpi", "gloo" or None (all served by MPI). ``init_method`` ("env://", "tcp://...",
    "file://...") and ``store`` are accepted and not used: MPI has already connected the ranks.
    ``world_size`` and ``rank`` (or the ``WORLD_SIZE`` and ``RANK`` environment variables) are
    checked against MPI's; a mismatch means the script was not started by ``mpiexec -n N`` (or
    ``hookgrad run --nproc N``) and raises ``ValueError`` saying so. ``timeout`` is recorded; MPI
    operations have no time-out of their own.
    """
    if _State.default_pg is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = "gloo" if backend is None else str(backend).lower()
    if name.startswith("cpu:"):
        name = name[4:]
    if name not in _SERVED_BACKENDS:
        raise RuntimeError(f"hookgrad.distributed has no {backend!r} backend: it runs on MPI and serves "
                           f"backend='mpi' and backend='gloo' (CPU tensors only)")
    if timeout is not None and not isinstance(timeout, timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {type(timeout)}")
    MPI = _load_mpi()
    world = MPI.COMM_WORLD
    mpi_size, mpi_rank = world.Get_size(), world.Get_rank()
    asked_size = world_size if world_size not in (None, -1) else _env_int("WORLD_SIZE")
    asked_rank = rank if rank not in (None, -1) else _env_int("RANK")
    if asked_size is not None and asked_size != mpi_size:
        raise ValueError(f"init_process_group: world_size={asked_size}, but this MPI job has {mpi_size} "
                         f"process{'es' if mpi_size != 1 else ''}: start the script with 'mpiexec -n {asked_size} "
                         f"python SCRIPT' or 'hookgrad run --nproc {asked_size} SCRIPT'")
    if asked_rank is not None and asked_rank != mpi_rank:
        raise ValueError(f"init_process_group: rank={asked_rank}, but MPI gave this process rank {mpi_rank}; "
                         f"under MPI the ranks are MPI's (leave rank=-1)")
    # a job-private copy: nothing else using COMM_WORLD can match our messages
    comm = world.Dup()
    pg = ProcessGroup(comm, list(range(mpi_size)), name, group_name or "default_pg")
    _State.default_pg, _State.backend, _State.groups = pg, name, [pg]
    GroupMember.WORLD = _GROUP_NAMESPACE.WORLD = pg
    if launched_by_mpi():
        # what torchrun gives its workers, for code that reads them after init
        for var, value in (("RANK", mpi_rank), ("WORLD_SIZE", mpi_size)):
            os.environ.setdefault(var, str(value))
        os.environ.setdefault("LOCAL_RANK", os.environ.get("MPI_LOCALRANKID", str(mpi_rank)))
        os.environ.setdefault("LOCAL_WORLD_SIZE", os.environ.get("MPI_LOCALNRANKS", str(mpi_size)))
    _install_abort_on_uncaught_error()


def destroy_process_group(group=None) -> None:
    """Free ``group``'s communicator, or with no argument every group (MPI itself stays up, so
    ``init_process_group`` may be called again)."""
    if _State.default_pg is None:
        raise ValueError(_NOT_INITIALIZED)
    if group is None or group is GroupMember.WORLD:
        for pg in _State.groups:
            pg._comm.Free()
        _State.default_pg, _State.backend, _State.groups = None, None, []
        GroupMember.WORLD = _GROUP_NAMESPACE.WORLD = None
        return
    pg = _group(group)
    if pg is None:
        return
    _State.groups.remove(pg)
    pg._comm.Free()


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None):
    """A group of the given global ranks (all ranks by default). Every rank must call it, as in torch;
    ranks left out get ``GroupMember.NON_GROUP_MEMBER``."""
    pg = _default_group()
    size = pg.size()
    members = sorted(set(range(size) if ranks is None else (int(r) for r in ranks)))
    for r in members:
        if not 0 <= r < size:
            raise ValueError(f"The new group's rank should be within the world_size set by init_process_group "
                             f"({size}), but got rank {r}")
    MPI = _load_mpi()
    world_group = pg._comm.Get_group()
    sub = world_group.Incl(members) if members else MPI.GROUP_EMPTY
    comm = pg._comm.Create(sub)
    if sub != MPI.GROUP_EMPTY:
        sub.Free()
    world_group.Free()
    if comm == MPI.COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    name = str(backend).lower() if backend is not None else _State.backend
    new = ProcessGroup(comm, members, name, group_desc or f"group{len(_State.groups)}")
    _State.groups.append(new)
    return new


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (-1 when it is not a member)."""
    pg = _group(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group=None) -> int:
    pg = _group(group)
    return -1 if pg is None else pg.size()


def get_backend(group=None) -> str:
    pg = _group(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return Backend(pg._backend)


def get_process_group_ranks(group) -> list:
    pg = _group(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return list(pg._global_ranks)


def get_global_rank(group, group_rank: int) -> int:
    ranks = get_process_group_ranks(group)
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    ranks = get_process_group_ranks(group)
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return ranks.index(global_rank)


# ---- uncaught errors end the job ---------------------------------------------------------------------
def launched_by_mpi() -> bool:
    """True in a process started by mpiexec (MPICH's or Open MPI's) as one of several ranks."""
    size = os.environ.get("PMI_SIZE") or os.environ.get("OMPI_COMM_WORLD_SIZE") or "1"
    return size.isdigit() and int(size) > 1


_ABORT_GRACE_S = 0.5


def abort_job(reason: str, code: int = 1) -> None:
    """End every rank of the MPI job (MPI is initialized first if this rank has not done so yet,
    which is what the other ranks may be waiting for)."""
    MPI = _load_mpi()
    rank, size = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
    if size > 1:
        sys.stderr.write(f"[rank{rank}]: {reason}: aborting all {size} ranks of the MPI job\n")
        sys.stderr.flush()
        sys.stdout.flush()
        # mpiexec forwards each rank's output asynchronously: on a busy machine an immediate abort
        # could end the launcher before this rank's traceback reached the terminal
        time.sleep(_ABORT_GRACE_S)
        MPI.COMM_WORLD.Abort(code)


def _rank_for_messages() -> str:
    if _mpi_module is not None:
        return str(_mpi_module.COMM_WORLD.Get_rank())
    return os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK") or "?"


def _install_abort_on_uncaught_error() -> None:
    if _State.excepthook_installed:
        return
    previous = sys.excepthook

    def report_and_abort(exc_type, exc, tb):
        if previous is sys.__excepthook__:
            text = "".join(traceback.format_exception(exc_type, exc, tb))
            rank = _rank_for_messages()
            sys.stderr.write("".join(f"[rank{rank}]: {line}\n" for line in text.rstrip("\n").split("\n")))
        else:
            previous(exc_type, exc, tb)
        if not issubclass(exc_type, KeyboardInterrupt):
            abort_job(f"uncaught {exc_type.__name__}")

    sys.excepthook = report_and_abort
    _State.excepthook_installed = True


if launched_by_mpi():
    # from the first import on, so that a rank failing before init_process_group ends the job too
    _install_abort_on_uncaught_error()


# ---- Work: a pending operation -----------------------------------------------------------------------
_in_flight: set = set()  # Works not yet complete: a Work its caller drops must keep its buffers alive


def _settle_in_flight() -> None:
    """Completes the dropped Works MPI has finished (their results land in their tensors, as torch's
    collectives complete in the background)."""
    for work in list(_in_flight):
        work.is_completed()


class Work:
    """A collective or point-to-point operation in flight. ``wait()`` completes it (writing the results
    into the tensors); ``is_completed()`` asks MPI without blocking."""

    def __init__(self, requests, on_complete=None, outputs=(), keep=()) -> None:
        self._requests = list(requests)
        self._on_complete = on_complete
        self._outputs = list(outputs)
        self._keep = keep           # buffers MPI reads or writes until completion
        self._done = False
        self._error = None
        self._source = -1
        if self._requests:
            _settle_in_flight()
            _in_flight.add(self)

    def _finish(self) -> None:
        if self._done:
            return
        self._done = True
        _in_flight.discard(self)
        callback, self._on_complete, self._keep = self._on_complete, None, ()
        if callback is not None:
            try:
                callback()
            except Exception as exc:  # noqa: BLE001 - kept for exception() and raised from wait()
                self._error = exc
                raise

    def wait(self, timeout=None) -> bool:
        if not self._done:
            MPI = _load_mpi()
            if self._requests:
                statuses = [MPI.Status() for _ in self._requests]
                MPI.Request.Waitall(self._requests, statuses)
                self._source = statuses[-1].Get_source()
            self._finish()
        if self._error is not None:
            raise self._error
        return True

    def synchronize(self) -> None:
        self.wait()

    def is_completed(self) -> bool:
        if not self._done and (not self._requests or _load_mpi().Request.Testall(self._requests)):
            self._finish()
        return self._done

    def is_success(self) -> bool:
        return self._done and self._error is None

    def exception(self):
        return self._error

    def result(self) -> list:
        self.wait()
        return list(self._outputs)

    def source_rank(self) -> int:
        self.wait()
        return self._source

    def get_future(self) -> Future:
        """A Future completed with the output tensors; waiting on it (or on any Future chained from
        it with ``then``) completes this Work."""
        fut = _WorkFuture(self.wait)
        if self._done:
            fut.set_result(list(self._outputs))
        else:
            self._when_done(lambda: fut.set_result(list(self._outputs)))
        return fut

    def _when_done(self, fn) -> None:
        previous = self._on_complete

        def both():
            if previous is not None:
                previous()
            fn()
        self._on_complete = both


class _WorkFuture(Future):
    """A Future whose value comes from an MPI operation: ``wait()`` drives that operation first,
    since MPI makes progress only inside MPI calls of this thread."""

    def __init__(self, drive) -> None:
        super().__init__()
        self._drive = drive

    def wait(self):
        if not self._finished:
            self._drive()
        return super().wait()

    def then(self, callback):
        return self._chain(callback, _WorkFuture(self.wait))


def _completed(work: Work, async_op: bool):
    if async_op:
        return work
    work.wait()
    return None


# ---- tensors as MPI buffers --------------------------------------------------------------------------
def _tensor_type():
    from .._tensor import Tensor
    return Tensor


def _check_tensor(value, param: str) -> None:
    if not isinstance(value, _tensor_type()):
        raise TypeError(f"Invalid function argument. Expected parameter `{param}` of type torch.Tensor\n"
                        f"             but got {type(value)} instead.")


def _check_tensor_list(value, param: str) -> None:
    if not isinstance(value, (list, tuple)) or not all(isinstance(t, _tensor_type()) for t in value):
        raise TypeError(f"Invalid function argument. Expected parameter `{param}` of type List[torch.Tensor]\n"
                        f"             but got {type(value)} with elements of type "
                        f"{[type(t) for t in value] if isinstance(value, (list, tuple)) else ''}.")


def _is_half(dt: np.dtype) -> bool:
    return dt == np.float16 or dt.name == "bfloat16"


def _mpi_type(dt: np.dtype):
    MPI = _load_mpi()
    table = {np.dtype(np.float32): MPI.FLOAT, np.dtype(np.float64): MPI.DOUBLE,
             np.dtype(np.complex64): MPI.C_FLOAT_COMPLEX, np.dtype(np.complex128): MPI.C_DOUBLE_COMPLEX,
             np.dtype(np.int8): MPI.INT8_T, np.dtype(np.int16): MPI.INT16_T, np.dtype(np.int32): MPI.INT32_T,
             np.dtype(np.int64): MPI.INT64_T, np.dtype(np.uint8): MPI.UINT8_T, np.dtype(np.bool_): MPI.C_BOOL,
             np.dtype(np.uint16): MPI.UINT16_T, np.dtype(np.uint32): MPI.UINT32_T,
             np.dtype(np.uint64): MPI.UINT64_T}
    try:
        return table[np.dtype(dt)]
    except KeyError:
        raise TypeError(f"hookgrad.distributed cannot send tensors of NumPy dtype {dt}") from None


def _transport_view(arr: np.ndarray) -> np.ndarray:
    """The same bytes in a dtype MPI knows (16-bit floats travel as uint16 when nothing is reduced)."""
    return arr.view(np.uint16) if _is_half(arr.dtype) else arr


def _flat_copy(tensor) -> np.ndarray:
    return np.ascontiguousarray(tensor._ndarray).reshape(-1)


def _writable_flat(tensor):
    """The tensor's own memory as a flat array MPI can write into, or None when it needs a copy."""
    data = tensor._ndarray
    if data.flags["C_CONTIGUOUS"] and data.flags["WRITEABLE"]:
        return data.reshape(-1)
    return None


def _writable_flat_or_empty(tensor) -> np.ndarray:
    """A flat array for MPI to write the tensor's new values into: its own memory when possible, else a
    fresh one that ``_store`` copies back."""
    own = _writable_flat(tensor)
    return own if own is not None else np.empty(tensor.numel(), dtype=tensor._ndarray.dtype)


def _mpi_buffer(array: np.ndarray) -> list:
    """The buffer argument mpi4py takes: the array with its MPI datatype."""
    return [array, _mpi_type(array.dtype)]


def _store(tensor, flat: np.ndarray) -> None:
    """Write ``flat`` into ``tensor`` (unless it already is the tensor's memory) and bump its version."""
    data = tensor._ndarray
    if not (flat.base is data or flat is data or np.shares_memory(flat, data)):
        if not data.flags["WRITEABLE"]:
            raise RuntimeError("a collective cannot write into this tensor: its memory is read-only "
                               "(an expanded or broadcast view); pass a contiguous tensor")
        data[...] = flat.reshape(data.shape).astype(data.dtype, copy=False)
    tensor._bump_version()


class _Reduction:
    """How to reduce one dtype with one ReduceOp in MPI: the working dtype, the MPI op, and what to do
    to the result (divide for AVG)."""

    def __init__(self, op, dt: np.dtype, collective: str, group_size: int) -> None:
        MPI = _load_mpi()
        kind = _op_type(op)
        self.kind = kind
        self.divide_by = None
        is_bool, is_complex = dt == np.bool_, dt.kind == "c"
        is_integral = dt.kind in "iub"
        self.work_dtype = np.dtype(np.float32) if _is_half(dt) else dt
        if kind in (RedOpType.MIN, RedOpType.MAX) and is_complex:
            raise ValueError(f"{collective} does not support {kind} on complex tensors")
        if kind in (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR) and not is_integral:
            raise RuntimeError(f"Cannot use ReduceOp.{kind.name} with non-integral dtype")
        if kind == RedOpType.AVG and is_integral:
            raise RuntimeError(f"result type Float can't be cast to the desired output type {_dtype_name(dt)} "
                               f"({collective} with ReduceOp.AVG needs a floating or complex tensor: use SUM and "
                               f"divide)")
        if kind in (RedOpType.PREMUL_SUM, RedOpType.UNUSED):
            raise ValueError(f"ReduceOp.{kind.name} is not supported by hookgrad's MPI backend")
        if is_bool:
            self.mpi_op = {RedOpType.SUM: MPI.LOR, RedOpType.MAX: MPI.LOR, RedOpType.BOR: MPI.LOR,
                           RedOpType.PRODUCT: MPI.LAND, RedOpType.MIN: MPI.LAND, RedOpType.BAND: MPI.LAND,
                           RedOpType.BXOR: MPI.LXOR}[kind]
        else:
            self.mpi_op = {RedOpType.SUM: MPI.SUM, RedOpType.AVG: MPI.SUM, RedOpType.PRODUCT: MPI.PROD,
                           RedOpType.MIN: MPI.MIN, RedOpType.MAX: MPI.MAX, RedOpType.BAND: MPI.BAND,
                           RedOpType.BOR: MPI.BOR, RedOpType.BXOR: MPI.BXOR}[kind]
        if kind == RedOpType.AVG:
            self.divide_by = group_size
        self.mpi_type = _mpi_type(self.work_dtype)

    def buffer_for(self, tensor) -> np.ndarray:
        """A flat array to reduce in place: the tensor's own memory when possible."""
        own = _writable_flat(tensor)
        if own is not None and own.dtype == self.work_dtype and self.divide_by is None:
            return own
        return _flat_copy(tensor).astype(self.work_dtype, copy=True)

    def finish(self, flat: np.ndarray) -> np.ndarray:
        if self.divide_by is not None:
            flat /= self.divide_by
        return flat


# ---- the fingerprint check ---------------------------------------------------------------------------
_CHECKS = os.environ.get("HOOKGRAD_DISTRIBUTED_CHECKS", "1") != "0"
_OPS = ["ALLREDUCE", "BROADCAST", "ALLGATHER", "_ALLGATHER_BASE", "REDUCE_SCATTER", "_REDUCE_SCATTER_BASE",
        "REDUCE", "GATHER", "SCATTER", "ALLTOALL", "ALLTOALL_BASE", "BARRIER"]
_MAX_DIMS = 6


def _fingerprint(op: str, tensor=None, root: int = -1, reduce_op=None, with_shape: bool = True) -> np.ndarray:
    fp = np.full(5 + _MAX_DIMS, -1, dtype=np.int64)
    fp[0] = _OPS.index(op)
    fp[2], fp[3] = root, -1 if reduce_op is None else int(_op_type(reduce_op))
    if tensor is not None:
        fp[1] = zlib.crc32(str(tensor._ndarray.dtype).encode()) & 0x7FFFFFFF
        if with_shape:
            shape = tuple(tensor._ndarray.shape)
            fp[4] = len(shape)
            fp[5:5 + min(len(shape), _MAX_DIMS)] = shape[:_MAX_DIMS]
            if len(shape) > _MAX_DIMS:
                fp[-1] = zlib.crc32(repr(shape).encode()) & 0x7FFFFFFF
    return fp


def _describe(fp: np.ndarray, dtypes: dict) -> str:
    op = _OPS[int(fp[0])]
    parts = [f"OpType={op}"]
    if fp[1] >= 0:
        if fp[4] >= 0:
            parts.append(f"TensorShape=[{', '.join(str(int(d)) for d in fp[5:5 + min(int(fp[4]), _MAX_DIMS)])}]")
        parts.append(f"TensorDtypes={dtypes.get(int(fp[1]), '?')}")
    if fp[2] >= 0:
        parts.append(f"Root={int(fp[2])}")
    if fp[3] >= 0:
        parts.append(f"ReduceOp={RedOpType(int(fp[3])).name}")
    return f"CollectiveFingerPrint({', '.join(parts)})"


def _check_matching(pg: ProcessGroup, op: str, tensor=None, root: int = -1, reduce_op=None,
                    with_shape: bool = True) -> None:
    """Every rank of ``pg`` runs the same collective on the same kind of tensor, or all of them raise."""
    if not _CHECKS or pg.size() == 1:
        return
    mine = _fingerprint(op, tensor, root, reduce_op, with_shape)
    everyone = np.empty((pg.size(), mine.size), dtype=np.int64)
    pg._comm.Allgather(mine, everyone)
    differs = np.nonzero((everyone != everyone[0]).any(axis=1))[0]
    if differs.size:
        names = {zlib.crc32(str(np.dtype(d)).encode()) & 0x7FFFFFFF: _dtype_name(np.dtype(d)) for d in
                 (np.float16, np.float32, np.float64, np.complex64, np.complex128, np.int8, np.int16, np.int32,
                  np.int64, np.uint8, np.bool_)}
        names[zlib.crc32(b"bfloat16") & 0x7FFFFFFF] = "BFloat16"
        other = int(differs[0])
        raise RuntimeError(f"Detected mismatch between collectives on ranks. Rank 0 is running collective: "
                           f"{_describe(everyone[0], names)}, but Rank {other} is running collective: "
                           f"{_describe(everyone[other], names)}.")


def _dtype_name(dt: np.dtype) -> str:
    return {"float16": "Half", "float32": "Float", "float64": "Double", "complex64": "ComplexFloat",
            "complex128": "ComplexDouble", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long",
            "uint8": "Byte", "bool": "Bool"}.get(dt.name, dt.name)


def _root(pg: ProcessGroup, global_rank, group_rank, name: str, param: str = "src") -> int:
    """The group rank of a root given as a global rank (``src``/``dst``) or a group rank."""
    if global_rank is not None and group_rank is not None:
        raise ValueError(f"Can only specify {param} or group_{param}")
    if group_rank is not None:
        root = int(group_rank)
    else:
        g = 0 if global_rank is None else int(global_rank)
        if g not in pg._global_ranks:
            raise RuntimeError(f"{name}: invalid root rank: {g} (the group has global ranks {pg._global_ranks})")
        root = pg._global_ranks.index(g)
    if not 0 <= root < pg.size():
        raise RuntimeError(f"{name}: invalid root rank: {root}")
    return root


def _same_shape(tensors, like, name: str, what: str) -> None:
    for i, t in enumerate(tensors):
        if tuple(t._ndarray.shape) != tuple(like._ndarray.shape) or t._ndarray.dtype != like._ndarray.dtype:
            raise ValueError(f"{name}: {what} at index {i} has shape {list(t.shape)} and dtype {t.dtype}, "
                             f"but the tensor has shape {list(like.shape)} and dtype {like.dtype}")


def _checked_group(group, **tensor_arguments) -> ProcessGroup | None:
    """Check a collective's tensor arguments, in order (one named ``..._list`` must be a list of tensors,
    any other a tensor), then return the group to run on (None: this rank is not a member)."""
    for param, value in tensor_arguments.items():
        (_check_tensor_list if param.endswith("_list") else _check_tensor)(value, param)
    return _group(group)


def _check_one_per_rank(pg: ProcessGroup, tensors, like, name: str, param: str, what: str) -> None:
    if len(tensors) != pg.size():
        raise ValueError(f"{name}: {param} must have world_size ({pg.size()}) tensors, got {len(tensors)}")
    _same_shape(tensors, like, name, what)


def _check_root_only_list(pg: ProcessGroup, is_root: bool, tensors, like, name: str, param: str) -> None:
    """gather's and scatter's list: given (one tensor per rank) on the root rank, and only there."""
    role = "destination" if name == "gather" else "source"
    if is_root:
        if not tensors:
            raise ValueError(f"Argument ``{param}`` must be specified on {role} rank.")
        _check_tensor_list(tensors, param)
        _check_one_per_rank(pg, tensors, like, name, param, f"{param} tensor")
    elif tensors:
        raise ValueError(f"Argument ``{param}`` must NOT be specified on non-{role} ranks.")


def _check_world_size_times(pg: ProcessGroup, whole, part, name: str, whole_name: str, part_name: str) -> None:
    """The single-tensor forms: ``whole`` holds world_size times ``part``'s elements, in its dtype."""
    if whole.numel() != pg.size() * part.numel() or whole.dtype != part.dtype:
        raise ValueError(f"{name}: the {whole_name} must hold world_size ({pg.size()}) times the {part_name}'s "
                         f"elements in the same dtype, but got {whole_name} {list(whole.shape)} {whole.dtype} "
                         f"for {part_name} {list(part.shape)} {part.dtype}")


def _fill_from_rows(tensors, rows: np.ndarray, dtype) -> None:
    for out, row in zip(tensors, rows):
        _store(out, row.view(dtype))


# ---- collectives on tensors --------------------------------------------------------------------------
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``tensor`` across the group, in place on every rank."""
    pg = _checked_group(group, tensor=tensor)
    if pg is None:
        return None
    reduction = _Reduction(op, tensor._ndarray.dtype, "all_reduce", pg.size())
    _check_matching(pg, "ALLREDUCE", tensor, reduce_op=op)
    MPI = _load_mpi()
    flat = reduction.buffer_for(tensor)
    request = pg._comm.Iallreduce(MPI.IN_PLACE, [flat, reduction.mpi_type], reduction.mpi_op)
    work = Work([request], lambda: _store(tensor, reduction.finish(flat)), [tensor], keep=flat)
    return _completed(work, async_op)


def broadcast(tensor, src=None, group=None, async_op: bool = False, group_src=None):
    """Copy ``tensor`` from rank ``src`` into ``tensor`` on every other rank."""
    pg = _checked_group(group, tensor=tensor)
    if pg is None:
        return None
    root = _root(pg, src, group_src, "broadcast")
    _check_matching(pg, "BROADCAST", tensor, root=root)
    own = _writable_flat(tensor)
    flat = own if own is not None else _flat_copy(tensor).copy()
    view = _transport_view(flat)
    request = pg._comm.Ibcast(_mpi_buffer(view), root=root)
    is_root = pg.rank() == root
    work = Work([request], None if is_root else (lambda: _store(tensor, flat)), [tensor], keep=flat)
    return _completed(work, async_op)


def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    """Fill ``tensor_list[i]`` with rank i's ``tensor``."""
    pg = _checked_group(group, tensor_list=tensor_list, tensor=tensor)
    if pg is None:
        return None
    if len(tensor_list) != pg.size():
        raise RuntimeError(f"all_gather: invalid output tensor list at index 0 (expected length {pg.size()}, "
                           f"got {len(tensor_list)})")
    _same_shape(tensor_list, tensor, "all_gather", "output tensor")
    _check_matching(pg, "ALLGATHER", tensor)
    send = _transport_view(_flat_copy(tensor))
    recv = np.empty((pg.size(), send.size), dtype=send.dtype)
    request = pg._comm.Iallgather(_mpi_buffer(send), _mpi_buffer(recv))
    work = Work([request], lambda: _fill_from_rows(tensor_list, recv, tensor._ndarray.dtype), list(tensor_list),
                keep=(send, recv))
    return _completed(work, async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """Gather every rank's ``input_tensor`` into ``output_tensor``, concatenated (or stacked) along dim 0."""
    pg = _checked_group(group, output_tensor=output_tensor, input_tensor=input_tensor)
    if pg is None:
        return None
    _check_world_size_times(pg, output_tensor, input_tensor, "all_gather_into_tensor", "output", "input")
    _check_matching(pg, "_ALLGATHER_BASE", input_tensor)
    send = _transport_view(_flat_copy(input_tensor))
    out_flat = _writable_flat_or_empty(output_tensor)
    recv = _transport_view(out_flat)
    request = pg._comm.Iallgather(_mpi_buffer(send), _mpi_buffer(recv))
    work = Work([request], lambda: _store(output_tensor, out_flat), [output_tensor], keep=(send, recv))
    return _completed(work, async_op)


def _reduce_scatter(pg, output_tensor, inputs, op, name: str, matched_as: str, async_op: bool):
    """Reduce the concatenation of ``inputs`` over the ranks; rank i keeps block i in ``output_tensor``."""
    reduction = _Reduction(op, output_tensor._ndarray.dtype, name, pg.size())
    _check_matching(pg, matched_as, output_tensor, reduce_op=op)
    blocks = [_flat_copy(t).astype(reduction.work_dtype) for t in inputs]
    send = blocks[0] if len(blocks) == 1 else np.concatenate(blocks)
    recv = np.empty(output_tensor.numel(), dtype=reduction.work_dtype)
    request = pg._comm.Ireduce_scatter_block([send, reduction.mpi_type], [recv, reduction.mpi_type],
                                             reduction.mpi_op)
    work = Work([request], lambda: _store(output_tensor, reduction.finish(recv)), [output_tensor], keep=(send, recv))
    return _completed(work, async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """``output`` on rank i = the reduction over ranks of ``input_list[i]``."""
    pg = _checked_group(group, output=output, input_list=input_list)
    if pg is None:
        return None
    _check_one_per_rank(pg, input_list, output, "reduce_scatter", "input_list", "input tensor")
    return _reduce_scatter(pg, output, input_list, op, "reduce_scatter", "REDUCE_SCATTER", async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """``reduce_scatter`` with the inputs concatenated (or stacked) along dim 0 of one tensor."""
    pg = _checked_group(group, output=output, input=input)
    if pg is None:
        return None
    _check_world_size_times(pg, input, output, "reduce_scatter_tensor", "input", "output")
    return _reduce_scatter(pg, output, [input], op, "reduce_scatter_tensor", "_REDUCE_SCATTER_BASE", async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op: bool = False, group_dst=None):
    """Reduce ``tensor`` across the group into rank ``dst``'s ``tensor``; the others keep theirs."""
    pg = _checked_group(group, tensor=tensor)
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "reduce", "dst")
    reduction = _Reduction(op, tensor._ndarray.dtype, "reduce", pg.size())
    _check_matching(pg, "REDUCE", tensor, root=root, reduce_op=op)
    send = _flat_copy(tensor).astype(reduction.work_dtype, copy=True)
    if pg.rank() == root:
        recv = np.empty_like(send)
        request = pg._comm.Ireduce([send, reduction.mpi_type], [recv, reduction.mpi_type], reduction.mpi_op, root)
        work = Work([request], lambda: _store(tensor, reduction.finish(recv)), [tensor], keep=(send, recv))
    else:
        request = pg._comm.Ireduce([send, reduction.mpi_type], None, reduction.mpi_op, root)
        work = Work([request], None, [tensor], keep=send)
    return _completed(work, async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op: bool = False, group_dst=None):
    """Rank ``dst`` receives every rank's ``tensor`` in ``gather_list``."""
    pg = _checked_group(group, tensor=tensor)
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "gather", "dst")
    is_root = pg.rank() == root
    _check_root_only_list(pg, is_root, gather_list, tensor, "gather", "gather_list")
    _check_matching(pg, "GATHER", tensor, root=root)
    send = _transport_view(_flat_copy(tensor))
    kind = _mpi_type(send.dtype)
    if is_root:
        recv = np.empty((pg.size(), send.size), dtype=send.dtype)
        request = pg._comm.Igather([send, kind], [recv, kind], root)
        work = Work([request], lambda: _fill_from_rows(gather_list, recv, tensor._ndarray.dtype), list(gather_list),
                    keep=(send, recv))
    else:
        request = pg._comm.Igather([send, kind], None, root)
        work = Work([request], None, [], keep=send)
    return _completed(work, async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op: bool = False, group_src=None):
    """Rank ``src`` sends ``scatter_list[i]`` to rank i, which receives it into ``tensor``."""
    pg = _checked_group(group, tensor=tensor)
    if pg is None:
        return None
    root = _root(pg, src, group_src, "scatter")
    is_root = pg.rank() == root
    _check_root_only_list(pg, is_root, scatter_list, tensor, "scatter", "scatter_list")
    _check_matching(pg, "SCATTER", tensor, root=root)
    recv_flat = np.empty(tensor.numel(), dtype=tensor._ndarray.dtype)
    recv = _transport_view(recv_flat)
    kind = _mpi_type(recv.dtype)
    if is_root:
        send = _transport_view(np.concatenate([_flat_copy(t) for t in scatter_list]))
        request = pg._comm.Iscatter([send, kind], [recv, kind], root)
    else:
        send = None
        request = pg._comm.Iscatter(None, [recv, kind], root)
    work = Work([request], lambda: _store(tensor, recv_flat), [tensor], keep=(send, recv))
    return _completed(work, async_op)


def _alltoallv(pg, send: np.ndarray, send_counts, recv: np.ndarray, recv_counts, on_complete, outputs, async_op):
    kind = _mpi_type(send.dtype)
    send_displs = np.concatenate([[0], np.cumsum(send_counts)[:-1]]).astype(int).tolist()
    recv_displs = np.concatenate([[0], np.cumsum(recv_counts)[:-1]]).astype(int).tolist()
    request = pg._comm.Ialltoallv([send, (list(send_counts), send_displs), kind],
                                  [recv, (list(recv_counts), recv_displs), kind])
    work = Work([request], on_complete, outputs, keep=(send, recv))
    return _completed(work, async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op: bool = False):
    """Rank i sends ``input_tensor_list[j]`` to rank j, which receives it in ``output_tensor_list[i]``."""
    pg = _checked_group(group, output_tensor_list=output_tensor_list, input_tensor_list=input_tensor_list)
    if pg is None:
        return None
    n = pg.size()
    if len(output_tensor_list) != n or len(input_tensor_list) != n:
        raise ValueError(f"all_to_all: both tensor lists must have world_size ({n}) tensors, got "
                         f"{len(output_tensor_list)} outputs and {len(input_tensor_list)} inputs")
    dtypes = {t._ndarray.dtype for t in (*output_tensor_list, *input_tensor_list)}
    if len(dtypes) != 1:
        raise ValueError("all_to_all: every input and output tensor must have the same dtype")
    _check_matching(pg, "ALLTOALL", input_tensor_list[0], with_shape=False)
    send = _transport_view(np.concatenate([_flat_copy(t) for t in input_tensor_list]))
    recv_flat = np.empty(sum(t.numel() for t in output_tensor_list), dtype=output_tensor_list[0]._ndarray.dtype)
    recv_counts = [t.numel() for t in output_tensor_list]

    def fill():
        start = 0
        for out, count in zip(output_tensor_list, recv_counts):
            _store(out, recv_flat[start:start + count])
            start += count
    return _alltoallv(pg, send, [t.numel() for t in input_tensor_list], _transport_view(recv_flat), recv_counts,
                      fill, list(output_tensor_list), async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op: bool = False):
    """``all_to_all`` on one tensor split along dim 0 (evenly, or by the given split sizes)."""
    pg = _checked_group(group, output=output, input=input)
    if pg is None:
        return None
    n = pg.size()
    if output._ndarray.dtype != input._ndarray.dtype:
        raise ValueError("all_to_all_single: input and output must have the same dtype")

    def counts(t, splits, what):
        rows = t.shape[0] if t.dim() else 1
        row = t.numel() // rows if rows else 0
        if splits is None or len(splits) == 0:
            if rows % n:
                raise ValueError(f"all_to_all_single: the {what}'s first dimension ({rows}) must divide evenly "
                                 f"by world_size ({n}) when no split sizes are given")
            return [rows // n * row] * n
        splits = [int(s) for s in splits]
        if len(splits) != n or sum(splits) != rows:
            raise ValueError(f"all_to_all_single: {what}_split_sizes {splits} must have world_size ({n}) entries "
                             f"adding up to the {what}'s first dimension ({rows})")
        return [s * row for s in splits]
    send_counts = counts(input, input_split_sizes, "input")
    recv_counts = counts(output, output_split_sizes, "output")
    _check_matching(pg, "ALLTOALL_BASE", input, with_shape=False)
    send = _transport_view(_flat_copy(input))
    recv_flat = np.empty(output.numel(), dtype=output._ndarray.dtype)
    return _alltoallv(pg, send, send_counts, _transport_view(recv_flat), recv_counts,
                      lambda: _store(output, recv_flat), [output], async_op)


def barrier(group=None, async_op: bool = False, device_ids=None):
    pg = _group(group)
    if pg is None:
        return None
    return _completed(Work([pg._comm.Ibarrier()]), async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks: bool = False):
    """A barrier (MPI reports a rank that died by ending the job, so there is nothing to monitor)."""
    barrier(group)


# torch 2.13's newer names for the single-tensor forms
all_gather_single = all_gather_into_tensor
reduce_scatter_single = reduce_scatter_tensor


# ---- point to point ----------------------------------------------------------------------------------
def _peer(pg, global_rank, group_rank, param: str) -> int:
    if global_rank is not None and group_rank is not None:
        raise ValueError(f"Can only specify {param} or group_{param}")
    if group_rank is not None:
        peer = int(group_rank)
    else:
        if global_rank not in pg._global_ranks:
            raise ValueError(f"Invalid {'destination' if param == 'dst' else 'source'} rank: {global_rank} is "
                             f"not in the group (ranks {pg._global_ranks})")
        peer = pg._global_ranks.index(global_rank)
    if peer == pg.rank():
        which = "destination" if param == "dst" else "source"
        raise ValueError(f"Invalid {which} rank: {which} rank should not be the same as the rank of the "
                         f"current process.")
    return peer


def isend(tensor, dst=None, group=None, tag: int = 0, group_dst=None):
    pg = _checked_group(group, tensor=tensor)
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "dst")
    send = _transport_view(_flat_copy(tensor))
    return Work([pg._comm.Isend(_mpi_buffer(send), peer, tag)], None, [tensor], keep=send)


def irecv(tensor, src=None, group=None, tag: int = 0, group_src=None):
    pg = _checked_group(group, tensor=tensor)
    if pg is None:
        return None
    MPI = _load_mpi()
    peer = MPI.ANY_SOURCE if src is None and group_src is None else _peer(pg, src, group_src, "src")
    flat = _writable_flat_or_empty(tensor)
    view = _transport_view(flat)
    work = Work([pg._comm.Irecv(_mpi_buffer(view), peer, tag)], lambda: _store(tensor, flat),
                [tensor], keep=flat)
    return work


def send(tensor, dst=None, group=None, tag: int = 0, group_dst=None) -> None:
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag: int = 0, group_src=None) -> int:
    """Receive into ``tensor``; returns the sender's global rank (-1 when not a member of ``group``)."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return _group(group)._global_ranks[work._source]


class P2POp:
    """One send or receive for :func:`batch_isend_irecv`: ``P2POp(dist.isend, tensor, peer)``."""

    def __init__(self, op, tensor, peer=None, group=None, tag: int = 0, group_peer=None) -> None:
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                             "``torch.distributed.irecv``.")
        _check_tensor(tensor, "tensor")
        self.op, self.tensor, self.peer, self.group, self.tag, self.group_peer = op, tensor, peer, group, tag, group_peer


def batch_isend_irecv(p2p_op_list) -> list:
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type ``torch.distributed.P2POp``.")
    works = []
    for p in p2p_op_list:
        if p.op is isend:
            works.append(isend(p.tensor, p.peer, p.group, p.tag, p.group_peer))
        else:
            works.append(irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer))
    return works


# ---- objects (pickled) -------------------------------------------------------------------------------
def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None) -> None:
    """Replace ``object_list``'s items on every rank by those of rank ``src`` (pickled)."""
    pg = _group(group)
    if pg is None:
        return
    root = _root(pg, src, group_src, "broadcast_object_list")
    received = pg._comm.bcast(list(object_list) if pg.rank() == root else None, root=root)
    if len(received) != len(object_list):
        raise ValueError(f"broadcast_object_list: rank {root} sent {len(received)} objects, but this rank's "
                         f"object_list has room for {len(object_list)}")
    object_list[:] = received


def all_gather_object(object_list, obj, group=None) -> None:
    """``object_list[i]`` = rank i's ``obj`` (pickled); ``object_list`` has world_size items."""
    pg = _group(group)
    if pg is None:
        return
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must have world_size ({pg.size()}) items, "
                         f"got {len(object_list)}")
    object_list[:] = pg._comm.allgather(obj)


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None) -> None:
    pg = _group(group)
    if pg is None:
        return
    root = _root(pg, dst, group_dst, "gather_object", "dst")
    if pg.rank() == root:
        if object_gather_list is None:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        if len(object_gather_list) != pg.size():
            raise ValueError(f"gather_object: object_gather_list must have world_size ({pg.size()}) items")
    elif object_gather_list is not None:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    gathered = pg._comm.gather(obj, root=root)
    if pg.rank() == root:
        object_gather_list[:] = gathered


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None, group=None,
                        group_src=None) -> None:
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    pg = _group(group)
    if pg is None:
        return
    root = _root(pg, src, group_src, "scatter_object_list")
    items = None
    if pg.rank() == root:
        items = list(scatter_object_input_list or [])
        if len(items) != pg.size():
            raise ValueError(f"scatter_object_list: scatter_object_input_list must have world_size ({pg.size()}) "
                             f"items on the source rank, got {len(items)}")
    scatter_object_output_list[0] = pg._comm.scatter(items, root=root)


def send_object_list(object_list, dst=None, group=None, device=None, group_dst=None) -> None:
    pg = _group(group)
    if pg is None:
        return
    pg._comm.send(pickle.dumps(list(object_list)), dest=_peer(pg, dst, group_dst, "dst"), tag=0x7F0B)


def recv_object_list(object_list, src=None, group=None, device=None, group_src=None) -> int:
    pg = _group(group)
    if pg is None:
        return -1
    MPI = _load_mpi()
    status = MPI.Status()
    peer = MPI.ANY_SOURCE if src is None and group_src is None else _peer(pg, src, group_src, "src")
    received = pickle.loads(pg._comm.recv(source=peer, tag=0x7F0B, status=status))
    if len(received) != len(object_list):
        raise ValueError(f"recv_object_list: received {len(received)} objects for an object_list of "
                         f"{len(object_list)}")
    object_list[:] = received
    return pg._global_ranks[status.Get_source()]


# ---- for DistributedDataParallel ---------------------------------------------------------------------
def _start_allreduce_sum(flat: np.ndarray, group=None):
    """Start an unchecked in-place SUM all-reduce of a flat float array; returns the MPI request.
    (DDP's buckets are checked once, at construction, instead of on every call.)"""
    pg = _group(group)
    return pg._comm.Iallreduce(_load_mpi().IN_PLACE, _mpi_buffer(flat), _load_mpi().SUM)


def _progress(requests) -> bool:
    """Let MPI move pending requests forward without blocking; True when all are complete."""
    return bool(_load_mpi().Request.Testall(requests)) if requests else True


class _BackgroundProgress:
    """A helper thread that lets MPI move pending non-blocking operations forward while the main
    thread computes (NumPy releases the GIL in its long operations). MPI advances transfers only
    inside MPI calls; without this, a bucket sent early in backward would travel only at the next
    gradient hook. The thread probes a private communicator on which nothing is ever sent, which
    runs MPI's progress engine without touching anyone's requests (MPI_THREAD_MULTIPLE is needed,
    which mpi4py asks for). It runs only between ``begin()`` and ``end()``, sleeping
    ``interval_s`` between probes."""

    interval_s = 0.0005

    def __init__(self) -> None:
        import threading
        self._active = 0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread = None
        self._comm = None
        self.enabled = os.environ.get("HOOKGRAD_MPI_PROGRESS_THREAD", "1") != "0"

    def begin(self) -> None:
        if not self.enabled:
            return
        with self._lock:
            if self._thread is None:
                MPI = _load_mpi()
                if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
                    self.enabled = False
                    return
                import threading
                self._comm = MPI.COMM_WORLD.Dup()
                self._thread = threading.Thread(target=self._run, name="hookgrad-mpi-progress", daemon=True)
                self._thread.start()
            self._active += 1
            self._wake.set()

    def end(self) -> None:
        if not self.enabled:
            return
        with self._lock:
            self._active = max(0, self._active - 1)
            if self._active == 0:
                self._wake.clear()

    def _run(self) -> None:
        import time as _time
        MPI = _load_mpi()
        while True:
            self._wake.wait()
            try:
                if MPI.Is_finalized():
                    return
                self._comm.Iprobe(MPI.ANY_SOURCE, MPI.ANY_TAG)
            except Exception:  # noqa: BLE001 - MPI finalized at exit: stop quietly
                return
            _time.sleep(self.interval_s)


_background_progress = _BackgroundProgress()


def _is_done(request) -> bool:
    return bool(request.Test())


def _wait_all(requests) -> None:
    if requests:
        _load_mpi().Request.Waitall(requests)
