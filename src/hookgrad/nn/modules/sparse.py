"""Embedding and EmbeddingBag."""
from __future__ import annotations

import hookgrad

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Embedding", "EmbeddingBag"]


def _checked_padding_idx(padding_idx, num_embeddings: int, name: str):
    """``padding_idx`` made non-negative; out of range it fails torch's assertion (which spells the
    argument ``name``)."""
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < num_embeddings, f"{name} must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -num_embeddings, f"{name} must be within num_embeddings"
            padding_idx = num_embeddings + padding_idx
    return padding_idx


def _max_norm_options(embedding) -> str:
    """The repr format of an embedding's max_norm, norm_type and scale_grad_by_freq, where not the default."""
    s = ""
    if embedding.max_norm is not None:
        s += ", max_norm={max_norm}"
    if embedding.norm_type != 2:
        s += ", norm_type={norm_type}"
    if embedding.scale_grad_by_freq is not False:
        s += ", scale_grad_by_freq={scale_grad_by_freq}"
    return s

class Embedding(Module):
    """A lookup table of ``num_embeddings`` vectors of size ``embedding_dim`` (N(0, 1) initialized)."""

    __constants__ = ["num_embeddings", "embedding_dim", "padding_idx", "max_norm", "norm_type",
                     "scale_grad_by_freq", "sparse"]

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None, max_norm=None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False, _weight=None,
                 _freeze: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = _checked_padding_idx(padding_idx, num_embeddings, "Padding_idx")
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        if _weight is None:
            self.weight = Parameter(hookgrad.empty((num_embeddings, embedding_dim), dtype=dtype),
                                    requires_grad=not _freeze)
            self.reset_parameters()
        else:
            assert list(_weight.shape) == [num_embeddings, embedding_dim], \
                "Shape of weight does not match num_embeddings and embedding_dim"
            self.weight = Parameter(_weight, requires_grad=not _freeze)
        self.sparse = sparse

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            self.weight._ndarray[self.padding_idx] = 0
            self.weight._bump_version()

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = "{num_embeddings}, {embedding_dim}"
        if self.padding_idx is not None:
            s += ", padding_idx={padding_idx}"
        s += _max_norm_options(self)
        if self.sparse is not False:
            s += ", sparse=True"
        return s.format(**self.__dict__)

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx=None, max_norm=None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False):
        """An Embedding whose weight is ``embeddings`` (shared, not copied), frozen unless ``freeze=False``."""
        assert embeddings.dim() == 2, "Embeddings parameter is expected to be 2-dimensional"
        rows, cols = embeddings.shape
        return cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, _freeze=freeze,
                   padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


class EmbeddingBag(Module):
    """Sums, averages or takes the max of the embeddings in each bag, without the intermediate rows."""

    __constants__ = ["num_embeddings", "embedding_dim", "max_norm", "norm_type", "scale_grad_by_freq", "mode",
                     "sparse", "include_last_offset", "padding_idx"]

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm=None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False, _weight=None,
                 include_last_offset: bool = False, padding_idx=None, device=None, dtype=None) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.padding_idx = _checked_padding_idx(padding_idx, num_embeddings, "padding_idx")
        if _weight is None:
            self.weight = Parameter(hookgrad.empty((num_embeddings, embedding_dim), dtype=dtype))
            self.reset_parameters()
        else:
            assert list(_weight.shape) == [num_embeddings, embedding_dim], \
                "Shape of weight does not match num_embeddings and embedding_dim"
            self.weight = Parameter(_weight)
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with hookgrad.no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                               self.mode, self.sparse, per_sample_weights, self.include_last_offset,
                               self.padding_idx)

    def extra_repr(self) -> str:
        s = "{num_embeddings}, {embedding_dim}" + _max_norm_options(self)
        s += ", mode={mode}"
        if self.padding_idx is not None:
            s += ", padding_idx={padding_idx}"
        return s.format(**{k: repr(v) if k == "mode" else v for k, v in self.__dict__.items()})

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, max_norm=None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                        include_last_offset: bool = False, padding_idx=None):
        assert embeddings.dim() == 2, "Embeddings parameter is expected to be 2-dimensional"
        rows, cols = embeddings.shape
        bag = cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, max_norm=max_norm,
                  norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq, mode=mode, sparse=sparse,
                  include_last_offset=include_last_offset, padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag
