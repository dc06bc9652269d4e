"""``torch.distributed.device_mesh``: meshes of devices for distributed tensors, which hookgrad does not make."""

__all__ = ["DeviceMesh", "init_device_mesh"]


class DeviceMesh:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("hookgrad has no DeviceMesh (it makes no distributed tensors)")


def init_device_mesh(*args, **kwargs):
    raise RuntimeError("hookgrad has no DeviceMesh (it makes no distributed tensors)")
