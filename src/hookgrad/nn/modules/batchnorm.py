"""BatchNorm1d, 2d and 3d: batch statistics in training, running statistics in eval."""
from __future__ import annotations

import hookgrad

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d"]


class _NormBase(Module):
    _version = 2
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = Parameter(hookgrad.empty(num_features, dtype=dtype))
            if bias:
                self.bias = Parameter(hookgrad.empty(num_features, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if self.track_running_stats:
            self.register_buffer("running_mean", hookgrad.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", hookgrad.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", hookgrad.tensor(0, dtype=hookgrad.long))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean._ndarray[...] = 0
            self.running_mean._bump_version()
            self.running_var._ndarray[...] = 1
            self.running_var._bump_version()
            self.num_batches_tracked._ndarray[...] = 0
            self.num_batches_tracked._bump_version()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            # checkpoints from before num_batches_tracked existed: keep (or start) the count
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = (self.num_batches_tracked if self.num_batches_tracked is not None
                                   else hookgrad.tensor(0, dtype=hookgrad.long))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked._ndarray += 1
            self.num_batches_tracked._bump_version()
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked._ndarray)
            else:
                factor = self.momentum
        bn_training = True if self.training else (self.running_mean is None and self.running_var is None)
        use_buffers = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_buffers else None,
                            self.running_var if use_buffers else None, self.weight, self.bias, bn_training,
                            factor, self.eps)


class BatchNorm1d(_BatchNorm):
    def _check_input_dim(self, input) -> None:
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    def _check_input_dim(self, input) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    def _check_input_dim(self, input) -> None:
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class SyncBatchNorm(_BatchNorm):
    """Batch norm whose statistics are reduced over a process group; hookgrad runs in one process,
    where (as in torch without an initialized group) it is a plain batch norm over any input rank."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group=None, device=None, dtype=None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm*d replaced by a SyncBatchNorm sharing its parameters and buffers."""
        converted = module
        if isinstance(module, _BatchNorm) and not isinstance(module, cls):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group)
            if module.affine:
                converted.weight = module.weight
                converted.bias = module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted


from .lazy import LazyModuleMixin  # noqa: E402 - the lazy variants build on the classes above
from ..parameter import UninitializedBuffer, UninitializedParameter  # noqa: E402


class _LazyNormBase(LazyModuleMixin, _NormBase):
    """``num_features`` comes from dim 1 of the first input."""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True) -> None:
        super().__init__(0, eps, momentum, False, False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(dtype=dtype)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(dtype=dtype)
            self.running_var = UninitializedBuffer(dtype=dtype)
            self.num_batches_tracked = hookgrad.tensor(0, dtype=hookgrad.long)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            with hookgrad.no_grad():
                if self.affine:
                    self.weight.materialize((self.num_features,))
                    if self.bias is not None:
                        self.bias.materialize((self.num_features,))
                if self.track_running_stats:
                    self.running_mean.materialize((self.num_features,))
                    self.running_var.materialize((self.num_features,))
            self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    cls_to_become = BatchNorm1d
    _check_input_dim = BatchNorm1d._check_input_dim


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    cls_to_become = BatchNorm2d
    _check_input_dim = BatchNorm2d._check_input_dim


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    cls_to_become = BatchNorm3d
    _check_input_dim = BatchNorm3d._check_input_dim
