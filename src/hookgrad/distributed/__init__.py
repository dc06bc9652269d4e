"""``torch.distributed`` on MPI: process groups, collectives on hookgrad tensors, and the pieces
DistributedDataParallel is built from.

The ranks are MPI processes (``mpiexec -n N python train.py`` or ``hookgrad run --nproc N
train.py``); ``init_process_group("gloo")`` and ``init_process_group("mpi")`` both join the MPI job.
``is_available()`` tells whether mpi4py is installed (``pip install 'hookgrad[distributed]'``).
Details in ``distributed_c10d``'s docstring. The names hook libraries import for type checks
(``DTensor``, ``FSDPModule``) exist and match nothing: hookgrad has no sharded tensors.
"""
from __future__ import annotations

from .distributed_c10d import (Backend, GroupMember, P2POp, ProcessGroup, RedOpType, ReduceOp, Work,  # noqa: F401
                               all_gather, all_gather_into_tensor, all_gather_object, all_reduce, all_to_all,
                               all_to_all_single, barrier, batch_isend_irecv, broadcast, broadcast_object_list,
                               default_pg_timeout, destroy_process_group, gather, gather_object, get_backend,
                               get_global_rank, get_group_rank, get_process_group_ranks, get_rank,
                               get_world_size, group, init_process_group, irecv, is_available,
                               is_gloo_available, is_initialized, is_mpi_available, is_nccl_available,
                               is_torchelastic_launched, isend, monitored_barrier, new_group, recv, reduce,
                               reduce_scatter, reduce_scatter_tensor, scatter, scatter_object_list, send,
                               send_object_list, recv_object_list)
from .distributed_c10d import (all_gather_single, get_node_local_rank, get_pg_count,  # noqa: F401
                               is_backend_available, is_ucc_available, is_xccl_available, reduce_scatter_single,
                               supports_complex)
from .distributed_c10d import __all__  # noqa: F401
