"""``torch.distributed._functional_collectives``: hookgrad's collectives finish before they return, so a
tensor they gave back is ready at once."""


def wait_tensor(tensor):
    """The tensor a collective returned, once it is complete (it always already is)."""
    return tensor


def all_to_all_single_autograd(self, output_split_sizes, input_split_sizes, group, tag=""):
    raise RuntimeError("hookgrad has no differentiable all_to_all_single; its collectives are the "
                       "torch.distributed functions")
