"""Instance normalization: each (sample, channel) plane is normalized by its own statistics."""
from __future__ import annotations

import warnings

from .. import functional as F
from .batchnorm import _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d"]


class _InstanceNorm(_NormBase):
    """Like batch norm, but without affine parameters or running statistics unless asked for."""

    _dims = 0

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, input) -> None:
        if input.dim() not in (self._dims + 1, self._dims + 2):
            raise ValueError(f"expected {self._dims + 1}D or {self._dims + 2}D input "
                             f"(got {input.dim()}D input)")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        version = local_metadata.get("version", None)
        if version is None and not self.track_running_stats:
            # checkpoints from before InstanceNorm stopped tracking statistics by default
            stale = [prefix + name for name in ("running_mean", "running_var") if prefix + name in state_dict]
            if stale:
                error_msgs.append("Unexpected running stats buffer(s) {names} for {klass} with "
                                  "track_running_stats=False. If state_dict is a checkpoint saved before 0.4.0, "
                                  "this may be expected because {klass} does not track running stats by default "
                                  "since 0.4.0. Please remove these keys from state_dict. If the running stats "
                                  "are actually needed, instead set track_running_stats=True in {klass} to enable "
                                  "them. See the documentation of {klass} for details."
                                  .format(names=" and ".join(f'"{k}"' for k in stale),
                                          klass=self.__class__.__name__))
                for key in stale:
                    state_dict.pop(key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def forward(self, input):
        self._check_input_dim(input)
        feature_dim = input.dim() - self._dims - 1
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.size(feature_dim)}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                          f"warning by not passing in num_features, which is not used because affine=False")
        unbatched = input.dim() == self._dims + 1
        x = input.unsqueeze(0) if unbatched else input
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats, self.momentum if self.momentum is not None
                              else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    _dims = 1


class InstanceNorm2d(_InstanceNorm):
    _dims = 2


class InstanceNorm3d(_InstanceNorm):
    _dims = 3


from .batchnorm import _LazyNormBase  # noqa: E402 - the lazy variants build on the classes above

class LazyInstanceNorm1d(_LazyNormBase, _InstanceNorm):
    cls_to_become = InstanceNorm1d
    _dims = 1


class LazyInstanceNorm2d(_LazyNormBase, _InstanceNorm):
    cls_to_become = InstanceNorm2d
    _dims = 2


class LazyInstanceNorm3d(_LazyNormBase, _InstanceNorm):
    cls_to_become = InstanceNorm3d
    _dims = 3
