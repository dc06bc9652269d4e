"""Every row of the op-test registry called with bool, int64, uint8, float16 and bfloat16 inputs, on
torch and on hookgrad: the outcome must agree, "works and returns these dtypes" or "raises this
exception class". New rows are swept as they are added.

``KNOWN_DIFFERENCES`` lists the (row, dtype) pairs where hookgrad still differs (composed losses and
pools, integer inputs of some linalg functions, a few bfloat16 results computed in float32);
the test fails when a listed pair starts to agree, so the list only shrinks.
"""
import warnings

import numpy as np
import pytest

import hookgrad
from op_cases import BINARY, EDGE, MATRIX, UNARY, columns

import torch

DTYPES = ("bool", "int64", "uint8", "float16", "bfloat16")


def _rows():
    for name, (fn, _) in UNARY.items():
        yield f"unary:{name}", fn, [(2, 3, 4)]
    for name, (fn, _) in BINARY.items():
        yield f"binary:{name}", fn, [(2, 3), (3,)]
    for table, rows in (("matrix", MATRIX), ("edge", EDGE)):
        for name, row in rows.items():
            fn, shapes, _ = columns(table, row)
            yield f"{table}:{name}", fn, shapes


ROWS = {name: (fn, shapes) for name, fn, shapes in _rows()}


def _inputs(T, shapes, dtype):
    rng = np.random.default_rng(0)
    out = []
    for shape in shapes:
        if dtype == "bool":
            out.append(T.tensor(rng.integers(0, 2, size=shape).astype(bool)))
        elif dtype == "int64":
            out.append(T.tensor(rng.integers(-3, 4, size=shape).astype(np.int64)))
        elif dtype == "uint8":
            out.append(T.tensor(rng.integers(0, 6, size=shape).astype(np.uint8)))
        else:
            out.append(T.tensor(rng.uniform(-2, 2, size=shape).astype(np.float32), dtype=getattr(T, dtype)))
    return out


def outcome(T, row: str, dtype: str):
    """("ok", dtypes of the results) or ("raises", exception class name)."""
    fn, shapes = ROWS[row]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = fn(T, *_inputs(T, shapes, dtype))
        except Exception as exc:  # noqa: BLE001 - the class is what is compared
            return ("raises", type(exc).__name__)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return ("ok", tuple(str(getattr(o, "dtype", type(o).__name__)).rsplit(".", 1)[-1] for o in outs))


KNOWN_DIFFERENCES = {
    # torch interpolates uint8 images bilinearly and bicubically in fixed point; hookgrad refuses them
    # (NotImplementedError) rather than round differently
    "edge:interpolate_bilinear_and_nearest": {"uint8"},
    "edge:interpolate_bilinear_2d": {"uint8"},
    "edge:interpolate_bicubic_2d": {"uint8"},
    "edge:linalg_eig_complex": {"float16"},
    "edge:addbmm": {"int64", "uint8"},
    "edge:addbmm_": {"bool"},
    "edge:addmm_addmv_baddbmm_methods": {"bool", "int64", "uint8"},
    "edge:conv_tbc": {"bool"},
    "edge:corrcoef": {"bfloat16"},
    "edge:cov": {"bfloat16"},
    "edge:cov_1d": {"bfloat16"},
    "edge:cov_weights": {"bfloat16"},
    "edge:ctc_loss": {"bfloat16", "float16"},
    "edge:ctc_loss_flat_targets": {"bfloat16", "float16"},
    "edge:ctc_loss_lengths": {"bfloat16", "float16"},
    "edge:fractional_max_pool2d": {"bool", "int64", "uint8"},
    "edge:fractional_max_pool3d": {"bool", "int64", "uint8"},
    "edge:index_reduce_mean": {"bool"},
    "edge:linalg_vander": {"bfloat16", "bool", "float16"},
    "edge:lp_pool3d": {"bfloat16", "float16"},
    "edge:lp_pool_inf": {"int64", "uint8"},
    "edge:multi_margin_loss": {"bfloat16", "bool", "float16", "int64", "uint8"},
    "edge:multi_margin_loss_1d": {"bfloat16", "bool", "float16", "int64", "uint8"},
    "edge:multi_margin_loss_p2_weight": {"bfloat16", "bool", "float16", "int64", "uint8"},
    "edge:multilabel_margin_loss": {"bfloat16", "bool", "float16", "int64", "uint8"},
    "edge:multilabel_margin_loss_1d": {"bfloat16", "bool", "float16", "int64", "uint8"},
    "edge:native_group_norm_stats": {"bool", "int64", "uint8"},
    "edge:poisson_zero_rates": {"bfloat16", "int64", "uint8"},
    "edge:soft_margin_loss": {"bfloat16", "float16", "int64", "uint8"},
    "edge:torch_adaptive_max_pool1d": {"bool", "int64", "uint8"},
    "edge:torch_bce_with_logits": {"bool", "int64", "uint8"},
    "edge:torch_embedding_bag_mean_max": {"bool", "int64", "uint8"},
    "edge:torch_embedding_bag_sum_weighted": {"bool", "int64", "uint8"},
    "edge:torch_max_pool": {"bool", "int64", "uint8"},
    "edge:torch_max_pool2d_3d": {"bool"},
    "edge:torch_norms": {"bool", "int64", "uint8"},
    "edge:triangular_solve": {"bool"},
    "edge:triangular_solve_transpose": {"bool"},
    "matrix:einsum_sum": {"uint8"},
}


@pytest.mark.parametrize("row", sorted(ROWS))
def test_dtype_outcomes_match_torch(row):
    differing = {}
    for dtype in DTYPES:
        theirs, ours = outcome(torch, row, dtype), outcome(hookgrad, row, dtype)
        if theirs != ours:
            differing[dtype] = (theirs, ours)
    known = KNOWN_DIFFERENCES.get(row, set())
    unexpected = {d: v for d, v in differing.items() if d not in known}
    assert not unexpected, f"{row}: torch vs hookgrad outcomes differ: {unexpected}"
    now_agree = known - set(differing)
    assert not now_agree, f"{row}: now agrees with torch for {sorted(now_agree)}: remove from KNOWN_DIFFERENCES"
