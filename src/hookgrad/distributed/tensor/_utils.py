"""``torch.distributed.tensor._utils``: shard arithmetic of distributed tensors, which hookgrad never makes."""


def compute_local_shape_and_global_offset(global_shape, mesh, placements, skip_offset=False):
    # only reachable with a DTensor's mesh and placements
    raise RuntimeError("hookgrad has no distributed tensors")
