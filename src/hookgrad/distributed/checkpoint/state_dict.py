"""``torch.distributed.checkpoint.state_dict``: state dicts of sharded models and optimizers."""
from . import _no_dcp


class StateDictOptions:
    def __init__(self, full_state_dict=False, cpu_offload=False, ignore_frozen_params=False, keep_submodule_prefixes=True,
                 strict=True, broadcast_from_rank0=False, flatten_optimizer_state_dict=False, dsd_fqn_modifiers="_fqn_modifiers"):
        self.full_state_dict, self.cpu_offload, self.ignore_frozen_params = full_state_dict, cpu_offload, ignore_frozen_params
        self.keep_submodule_prefixes, self.strict, self.broadcast_from_rank0 = keep_submodule_prefixes, strict, broadcast_from_rank0
        self.flatten_optimizer_state_dict, self.dsd_fqn_modifiers = flatten_optimizer_state_dict, dsd_fqn_modifiers


def get_model_state_dict(model, *args, **kwargs):
    _no_dcp()


def set_model_state_dict(model, model_state_dict, *args, **kwargs):
    _no_dcp()


def get_optimizer_state_dict(model, optimizers, *args, **kwargs):
    _no_dcp()


def set_optimizer_state_dict(model, optimizers, optim_state_dict, *args, **kwargs):
    _no_dcp()


def get_state_dict(model, optimizers, *args, **kwargs):
    _no_dcp()


def set_state_dict(model, optimizers, *args, **kwargs):
    _no_dcp()
