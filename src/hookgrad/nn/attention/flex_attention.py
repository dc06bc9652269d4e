"""``torch.nn.attention.flex_attention``: the mask combinators are here; ``flex_attention`` itself and
block masks (a compiled kernel's sparse layout) are not in hookgrad, and calling them raises."""
from typing import NamedTuple

_DEFAULT_SPARSE_BLOCK_SIZE = 128

__all__ = ["BlockMask", "create_block_mask", "create_mask", "flex_attention", "AuxRequest", "and_masks", "or_masks",
           "noop_mask"]

_MISSING = ("hookgrad has no flex_attention (block-sparse attention kernels); use "
            "torch.nn.functional.scaled_dot_product_attention with a dense attn_mask")


class AuxRequest(NamedTuple):
    lse: bool = False
    max_scores: bool = False


class BlockMask:
    def __init__(self, *args, **kwargs):
        raise RuntimeError(_MISSING)

    @classmethod
    def from_kv_blocks(cls, *args, **kwargs):
        raise RuntimeError(_MISSING)


def create_block_mask(*args, **kwargs):
    raise RuntimeError(_MISSING)


def create_mask(*args, **kwargs):
    raise RuntimeError(_MISSING)


def flex_attention(*args, **kwargs):
    raise RuntimeError(_MISSING)


def noop_mask(batch, head, token_q, token_kv):
    """Keeps every position: a true boolean 0-d tensor."""
    import hookgrad
    return batch.new_ones(size=(), dtype=hookgrad.bool)


def _combined(mask_mods, start, combine):
    """A mask_mod that folds the mask_mods' answers with ``combine``, starting from ``start`` (0-d bool)."""
    if not all(callable(arg) for arg in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def combined(b, h, q_idx, kv_idx):
        import hookgrad
        result = b.new_full((), start, dtype=hookgrad.bool)
        for mask_mod in mask_mods:
            result = combine(result, mask_mod(b, h, q_idx, kv_idx))
        return result
    return combined


def or_masks(*mask_mods):
    return _combined(mask_mods, False, lambda a, b: a | b)


def and_masks(*mask_mods):
    return _combined(mask_mods, True, lambda a, b: a & b)
