"""The op-test registry: every differentiable op's cases, in one place.

* ``UNARY`` / ``BINARY``: ``name -> (fn(T, *tensors), options)``; ``MATRIX`` / ``EDGE``:
  ``name -> (fn(T, *tensors), shapes[, options])``. Run on torch and hookgrad (values, gradients; BINARY
  over broadcasting shapes) and gradchecked (test_ops_differential.py, test_op_registry.py).
* ``DOUBLE_BACKWARD``: ``name -> fn(T, x)``, second derivatives against torch.
* ``FUNCTIONAL``: ``name -> (fn(*tensors), float64 hookgrad inputs[, options])``: nn.functional,
  gradchecked, and gradgradchecked where the options say so (test_ops_differential.py).
* ``FUNCTIONAL_VS_TORCH``: ``name -> (fn(T, F, *tensors), NumPy arrays, options)``: nn.functional
  against torch (values, every floating input's gradient, grad_fn name) over parameter grids, edge
  values and dtypes (test_ops_differential.py).
* ``EDGE``: ops with edge values, integer dtypes or several outputs (test_op_registry.py).

The options (the columns; every key may be left out, the defaults are in ``DEFAULTS``):

* ``positive``: inputs drawn from [0.5, 2.5] instead of [-2, 2] (UNARY, BINARY).
* ``dtypes``: the dtypes the row is compared with torch in; floating inputs are cast to a floating
  one, ``int64`` and ``bool`` inputs are drawn as integers / truth values (forward only).
* ``gradcheck`` / ``gradgradcheck``: finite-difference checks on hookgrad in float64 (off where the
  output's shape or the winning element changes under a small perturbation).
* ``facts``: what of the graph is compared with torch besides values and gradients:
  ``"grad_fn"`` the output's grad_fn name, ``"saved"`` every node's ``_saved_*`` names and values
  (test_saved_attributes.py), ``"pack_order"`` the tensors a ``saved_tensors_hooks`` pack hook
  receives, in order, and those its unpack hook receives in the backward (test_op_registry.py).
* ``rtol`` / ``atol``: the tolerance against torch (the default depends on the dtype).

test_op_registry.py runs every case once more and fails when a Node class of ``_ops`` or
``nn/_functional`` is reached by none: a new op is one declaration plus one row here.
"""
import numpy as np

import hookgrad

GRAD_FN, SAVED, PACK_ORDER = "grad_fn", "saved", "pack_order"

# the columns' values for a row that does not give them, per table
DEFAULTS = {
    "unary": {"dtypes": ("float32", "float64"), "gradcheck": True, "gradgradcheck": False,
              "facts": (GRAD_FN, SAVED, PACK_ORDER)},
    "binary": {"dtypes": ("float32", "float64"), "gradcheck": True, "gradgradcheck": False,
               "facts": (GRAD_FN, SAVED, PACK_ORDER)},
    "matrix": {"dtypes": ("float64",), "gradcheck": True, "gradgradcheck": False, "facts": (SAVED, PACK_ORDER)},
    "edge": {"dtypes": ("float64",), "gradcheck": True, "gradgradcheck": False, "facts": (SAVED, PACK_ORDER)},
    "functional": {"gradcheck": True, "gradgradcheck": False},
    "functional_vs_torch": {"dtypes": ("float64",), "facts": (GRAD_FN, PACK_ORDER)},
}


# dtypes columns of rows whose op also takes integer (and bool) tensors
INTEGERS = {"dtypes": ("float32", "float64", "int64")}
INTEGERS_AND_BOOL = {"dtypes": ("float32", "float64", "int64", "bool")}


def columns(table: str, row) -> tuple:
    """A row as ``(fn, inputs or shapes, options)``, the table's defaults filled in (UNARY and BINARY
    rows have no inputs: ``None``)."""
    if table in ("unary", "binary"):
        fn, options = row
        spec = None
    else:
        fn, spec, *rest = row
        options = rest[0] if rest else {}
    return fn, spec, {**DEFAULTS[table], **options}


def option(table: str, row, key):
    return columns(table, row)[2][key]

# name -> (fn(T, *tensors), shapes, options)
UNARY = {
    "neg": (lambda T, x: -x, INTEGERS), "exp": (lambda T, x: x.exp(), {}), "log": (lambda T, x: x.log(), {"positive": True, **INTEGERS_AND_BOOL}),
    "log1p": (lambda T, x: x.log1p(), {"positive": True, **INTEGERS_AND_BOOL}), "expm1": (lambda T, x: x.expm1(), INTEGERS_AND_BOOL),
    "sqrt": (lambda T, x: x.sqrt(), {"positive": True, **INTEGERS_AND_BOOL}), "rsqrt": (lambda T, x: x.rsqrt(), {"positive": True, **INTEGERS_AND_BOOL}),
    "abs": (lambda T, x: x.abs(), INTEGERS), "sin": (lambda T, x: x.sin(), INTEGERS_AND_BOOL), "cos": (lambda T, x: x.cos(), INTEGERS_AND_BOOL),
    "tan": (lambda T, x: (x * 0.5).tan(), INTEGERS_AND_BOOL), "tanh": (lambda T, x: x.tanh(), INTEGERS_AND_BOOL),
    "sigmoid": (lambda T, x: x.sigmoid(), INTEGERS_AND_BOOL), "relu": (lambda T, x: x.relu(), INTEGERS),
    "reciprocal": (lambda T, x: x.reciprocal(), {"positive": True, **INTEGERS_AND_BOOL}),
    "pow2": (lambda T, x: x ** 2, INTEGERS_AND_BOOL), "pow3": (lambda T, x: x.pow(3), INTEGERS_AND_BOOL), "pow_half": (lambda T, x: x ** 0.5, {"positive": True, **INTEGERS_AND_BOOL}),
    "rpow": (lambda T, x: 2 ** x, {}), "sinh": (lambda T, x: x.sinh(), INTEGERS_AND_BOOL), "cosh": (lambda T, x: x.cosh(), INTEGERS_AND_BOOL),
    "atan": (lambda T, x: x.atan(), INTEGERS_AND_BOOL), "asin": (lambda T, x: (x * 0.4).asin(), INTEGERS_AND_BOOL),
    "clamp": (lambda T, x: x.clamp(-0.5, 0.7), INTEGERS), "clamp_min": (lambda T, x: x.clamp(min=0.1), INTEGERS),
    "clamp_min_method": (lambda T, x: x.clamp_min(0.1), INTEGERS), "clamp_max_method": (lambda T, x: x.clamp_max(0.3), INTEGERS),
    "clip": (lambda T, x: T.clip(x, max=0.3), INTEGERS), "nan_to_num": (lambda T, x: x.nan_to_num(), INTEGERS_AND_BOOL),
    "square": (lambda T, x: x.square(), INTEGERS_AND_BOOL), "rsub": (lambda T, x: 3 - x, INTEGERS), "rdiv": (lambda T, x: 3 / x, {"positive": True, **INTEGERS_AND_BOOL}),
    "sum": (lambda T, x: x.sum(), INTEGERS_AND_BOOL), "sum0": (lambda T, x: x.sum(0), INTEGERS_AND_BOOL), "sum_keep": (lambda T, x: x.sum(-1, keepdim=True), INTEGERS_AND_BOOL),
    "sum_dims": (lambda T, x: x.sum((0, 1)), INTEGERS_AND_BOOL), "mean": (lambda T, x: x.mean(), {}), "mean1": (lambda T, x: x.mean(1), {}),
    "prod": (lambda T, x: x.prod(), INTEGERS_AND_BOOL), "prod1": (lambda T, x: x.prod(1), INTEGERS_AND_BOOL),
    "max": (lambda T, x: x.max(), {"gradcheck": False, **INTEGERS_AND_BOOL}), "max1": (lambda T, x: x.max(1)[0], {"gradcheck": False, **INTEGERS_AND_BOOL}), "min1k": (lambda T, x: x.min(1, keepdim=True).values, {"gradcheck": False, **INTEGERS_AND_BOOL}),
    "amax": (lambda T, x: x.amax(0), {"gradcheck": False, **INTEGERS_AND_BOOL}), "amin": (lambda T, x: x.amin((0, 1)), {"gradcheck": False, **INTEGERS_AND_BOOL}),
    "var": (lambda T, x: x.var(), {}), "var1": (lambda T, x: x.var(1, keepdim=True), {}), "std": (lambda T, x: x.std(0), {}),
    "var_c0": (lambda T, x: x.var(1, correction=0), {}),
    "norm": (lambda T, x: x.norm(), {}), "norm1": (lambda T, x: x.norm(p=1, dim=1), {}), "norm_dim": (lambda T, x: x.norm(dim=0), {}),
    "vnorm3": (lambda T, x: T.linalg.vector_norm(x, 3, dim=-1), {}),
    "logsumexp": (lambda T, x: x.logsumexp(1), INTEGERS_AND_BOOL), "softmax": (lambda T, x: x.softmax(1), {}),
    "log_softmax": (lambda T, x: x.log_softmax(0), {}), "cumsum": (lambda T, x: x.cumsum(1), INTEGERS_AND_BOOL), "cumprod": (lambda T, x: x.cumprod(1), INTEGERS_AND_BOOL),
    "view": (lambda T, x: x.view(-1), INTEGERS_AND_BOOL), "reshape": (lambda T, x: x.reshape(x.shape[0], -1), INTEGERS_AND_BOOL),
    "flatten": (lambda T, x: x.flatten(), INTEGERS_AND_BOOL), "unflatten": (lambda T, x: x.unflatten(1, (x.shape[1], 1)), INTEGERS_AND_BOOL),
    "squeeze": (lambda T, x: x.unsqueeze(0).squeeze(0), INTEGERS_AND_BOOL), "permute": (lambda T, x: x.permute(1, 0, 2), INTEGERS_AND_BOOL),
    "transpose": (lambda T, x: x.transpose(0, 2), INTEGERS_AND_BOOL), "mT": (lambda T, x: x.mT, INTEGERS_AND_BOOL), "T2": (lambda T, x: x[0].T, INTEGERS_AND_BOOL),
    "t": (lambda T, x: x[0].t(), INTEGERS_AND_BOOL), "expand": (lambda T, x: x[:, :1].expand(-1, 4, -1), INTEGERS_AND_BOOL),
    "repeat": (lambda T, x: x.repeat(2, 1, 1), INTEGERS_AND_BOOL), "flip": (lambda T, x: x.flip(0, 2), INTEGERS_AND_BOOL), "roll": (lambda T, x: x.roll(1, 1), INTEGERS_AND_BOOL),
    "tril": (lambda T, x: x.tril(), INTEGERS_AND_BOOL), "triu": (lambda T, x: x.triu(1), INTEGERS_AND_BOOL), "movedim": (lambda T, x: x.movedim(0, -1), INTEGERS_AND_BOOL),
    "narrow": (lambda T, x: x.narrow(1, 1, 2), INTEGERS_AND_BOOL), "split": (lambda T, x: x.split(2, 1)[1], INTEGERS_AND_BOOL), "chunk": (lambda T, x: x.chunk(2, 0)[0], INTEGERS_AND_BOOL),
    "unbind": (lambda T, x: x.unbind(1)[2], INTEGERS_AND_BOOL), "index_int": (lambda T, x: x[1], INTEGERS_AND_BOOL), "index_slice": (lambda T, x: x[:, 1:3, ::2], INTEGERS_AND_BOOL),
    "index_none": (lambda T, x: x[None, ..., 0], INTEGERS_AND_BOOL), "index_list": (lambda T, x: x[[0, 1, 0]], INTEGERS_AND_BOOL),
    "index_mask": (lambda T, x: x[x > 0], {"gradcheck": False, **INTEGERS_AND_BOOL}), "index_tensor": (lambda T, x: x[:, T.tensor([2, 0, 2])], INTEGERS_AND_BOOL),
    "gather": (lambda T, x: x.gather(1, T.tensor([[[0], [1], [0]]]).expand(x.shape[0], 3, 1).contiguous()), INTEGERS_AND_BOOL),
    "index_select": (lambda T, x: x.index_select(1, T.tensor([0, 2, 2])), INTEGERS_AND_BOOL),
    "masked_fill": (lambda T, x: x.masked_fill(x > 0.5, 1.5), INTEGERS_AND_BOOL), "clone": (lambda T, x: x.clone(), INTEGERS_AND_BOOL),
    "diagonal": (lambda T, x: x.diagonal(0, 1, 2), INTEGERS_AND_BOOL), "to64": (lambda T, x: x.float().double(), {"gradcheck": False, **INTEGERS_AND_BOOL}),
    "where_scalar": (lambda T, x: T.where(x > 0, x, 0.0), INTEGERS_AND_BOOL), "frac": (lambda T, x: x.frac(), {}),
    "acos": (lambda T, x: (x * 0.4).acos(), INTEGERS_AND_BOOL), "exp2": (lambda T, x: x.exp2(), INTEGERS_AND_BOOL),
    "log2": (lambda T, x: x.log2(), {"positive": True, **INTEGERS_AND_BOOL}), "log10": (lambda T, x: T.log10(x), {"positive": True, **INTEGERS_AND_BOOL}),
    "floor": (lambda T, x: x.floor(), INTEGERS), "ceil": (lambda T, x: x.ceil(), INTEGERS), "trunc": (lambda T, x: x.trunc(), INTEGERS),
    "round": (lambda T, x: x.round(), INTEGERS), "round_decimals": (lambda T, x: x.round(decimals=1), {}),
    "sign": (lambda T, x: x.sign(), INTEGERS_AND_BOOL), "sgn": (lambda T, x: T.sgn(x) * x, INTEGERS_AND_BOOL),
    "remainder": (lambda T, x: x % 0.7, INTEGERS_AND_BOOL), "fmod": (lambda T, x: x.fmod(0.7), INTEGERS_AND_BOOL),
    "div_floor": (lambda T, x: x.div(0.7, rounding_mode="floor"), INTEGERS_AND_BOOL),
    "masked_select": (lambda T, x: x.masked_select(x > 0), {"gradcheck": False, **INTEGERS_AND_BOOL}), "min": (lambda T, x: x.min(), {"gradcheck": False, **INTEGERS_AND_BOOL}),
    "squeeze_all": (lambda T, x: x[:1].squeeze(), INTEGERS_AND_BOOL), "squeeze_dims": (lambda T, x: x[:1].squeeze((0,)), INTEGERS_AND_BOOL),
    "split_sizes": (lambda T, x: x.split([1, 2], 1)[1], INTEGERS_AND_BOOL), "as_strided": (lambda T, x: x.as_strided((2, 2), (1, 2)), INTEGERS_AND_BOOL),
    "alias": (lambda T, x: x[...], INTEGERS_AND_BOOL),
    "index_put": (lambda T, x: x.index_put((T.tensor([0]),), T.tensor(1.5, dtype=x.dtype)), INTEGERS_AND_BOOL),
    "scatter_value": (lambda T, x: x.scatter(0, T.zeros(1, 2, 2, dtype=T.int64), 1.5), INTEGERS_AND_BOOL),
    "reshape_copy": (lambda T, x: x.transpose(0, 2).reshape(-1), INTEGERS_AND_BOOL),
    "var_mean": (lambda T, x: T.var_mean(x, 1)[0] * T.var_mean(x, 1)[1], {}),
    "std_mean": (lambda T, x: T.std_mean(x, (0, 2), keepdim=True)[0] + T.std_mean(x)[1], {}),
}

BINARY = {
    "add": (lambda T, a, b: a + b, INTEGERS_AND_BOOL), "sub": (lambda T, a, b: a - b, INTEGERS), "mul": (lambda T, a, b: a * b, INTEGERS_AND_BOOL),
    "div": (lambda T, a, b: a / b, {"positive": True, **INTEGERS_AND_BOOL}), "pow": (lambda T, a, b: a ** b, {"positive": True, **INTEGERS}),
    "add_alpha": (lambda T, a, b: a.add(b, alpha=2.5), {}), "sub_alpha": (lambda T, a, b: T.sub(a, b, alpha=0.5), {}),
    "maximum": (lambda T, a, b: T.maximum(a, b), {"gradcheck": False, **INTEGERS_AND_BOOL}), "minimum": (lambda T, a, b: T.minimum(a, b), {"gradcheck": False, **INTEGERS_AND_BOOL}),
    "where": (lambda T, a, b: T.where(a > b, a, b), {"gradcheck": False, **INTEGERS_AND_BOOL}), "lerp": (lambda T, a, b: a.lerp(b, 0.3), {}),
    "atan2": (lambda T, a, b: T.atan2(a, b), {}), "clamp_t": (lambda T, a, b: a.clamp(min=b), {"gradcheck": False, **INTEGERS_AND_BOOL}),
    "fmod_t": (lambda T, a, b: a.fmod(b), {"positive": True}), "remainder_t": (lambda T, a, b: T.remainder(a, b), {"positive": True}),
    "clamp_both_t": (lambda T, a, b: a.clamp(b, b + 0.5), {"gradcheck": False}),
}

# the values every UNARY row is differentiated at (a (2, 3, 4) tensor cycling through them) and every
# BINARY row at every pair of (test_op_registry.py): signed zeros, infinities, NaN, a subnormal-free
# tiny and a huge number, and ordinary ones
EDGE_SAMPLES = (0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), float("nan"), 1e-300, 1e300, 2.0)

# ops whose derivatives have edge-value cases of their own, differentiated at EDGE_SAMPLES only (as the
# UNARY and BINARY rows are there too): name -> fn(T, x) or fn(T, a, b)
EDGE_VALUE_UNARY = {
    "pow_half": lambda T, x: x ** 0.5, "pow_minus_half": lambda T, x: x.pow(-0.5), "pow_minus_one": lambda T, x: x ** -1,
    "pow_minus_two": lambda T, x: x ** -2, "pow_zero": lambda T, x: x ** 0, "pow_one_half": lambda T, x: x ** 1.5,
    "zero_rpow": lambda T, x: 0 ** x, "xlogy_number": lambda T, x: T.xlogy(x, 2.0), "sinc": lambda T, x: T.sinc(x),
    "prod_zeros": lambda T, x: x.prod(), "cumprod_zeros": lambda T, x: x.cumprod(-1), "cumprod_dim0": lambda T, x: x.cumprod(0),
    "vector_norm_inf": lambda T, x: T.linalg.vector_norm(x, float("inf"), dim=-1),
    "vector_norm_1": lambda T, x: T.linalg.vector_norm(x, 1, dim=-1),
    "vector_norm_half": lambda T, x: T.linalg.vector_norm(x, 0.5, dim=-1),
    "std_constant": lambda T, x: (x * 0).std(-1), "threshold": lambda T, x: T.nn.functional.threshold(x, 0.0, 2.0),
    "softshrink": lambda T, x: T.nn.functional.softshrink(x, 0.5), "hardshrink": lambda T, x: T.nn.functional.hardshrink(x, 0.5),
    # torch's gradients of these two at NaN depend on the element's place in its vectorized loop: NaN
    # left out
    "hardswish_bounds": lambda T, x: T.nn.functional.hardswish(x.nan_to_num(0.0, float("inf"), float("-inf")) * 3),
    "logit": lambda T, x: T.logit(x.nan_to_num(0.0, float("inf"), float("-inf")), 0.1),
    "softplus": lambda T, x: T.nn.functional.softplus(x, 2.0, 1.0), "sign_abs": lambda T, x: x.sign() * x + x.abs(),
    "logsumexp_neg_inf": lambda T, x: (x.abs() * 0 - x.abs().log()).logsumexp(-1),
}
EDGE_VALUE_BINARY = {
    "xlogy": lambda T, a, b: T.xlogy(a, b), "xlog1py": lambda T, a, b: T.special.xlog1py(a, b),
    "copysign": lambda T, a, b: T.copysign(a, b), "hypot": lambda T, a, b: T.hypot(a, b),
    "clamp_max_t": lambda T, a, b: a.clamp(max=b), "clamp_inverted_t": lambda T, a, b: a.clamp(b + 1, b),
    "float_power": lambda T, a, b: T.float_power(a, b), "smooth_l1": lambda T, a, b: T.nn.functional.smooth_l1_loss(a, b, reduction="none"),
    "huber": lambda T, a, b: T.nn.functional.huber_loss(a, b, reduction="none"),
    "l1": lambda T, a, b: T.nn.functional.l1_loss(a, b, reduction="none"),
}
# distances and norms where points coincide or vanish: name -> fn(T, a, b) on ZERO_STRUCTURE's arrays
ZERO_STRUCTURE = (np.array([[0.0, 0.0], [1.0, 2.0], [1.0, 2.0]]), np.array([[0.0, 0.0], [1.0, 2.0], [3.0, -1.0]]))
ZERO_STRUCTURE_ROWS = {
    **{f"cdist_p{p}": (lambda T, a, b, p=p: T.cdist(a, b, p=p)) for p in (0, 0.5, 1, 2, 3, float("inf"))},
    **{f"pdist_p{p}": (lambda T, a, b, p=p: T.pdist(a, p=p)) for p in (1, 2, 3, float("inf"))},
    "dist": lambda T, a, b: T.dist(a, b), "dist_p3": lambda T, a, b: T.dist(a, b, 3),
    "norm_rows": lambda T, a, b: a.norm(dim=1), "norm_p3": lambda T, a, b: a.norm(p=3, dim=1),
    "vector_norm_p_half": lambda T, a, b: T.linalg.vector_norm(a, 0.5, dim=1),
    "vector_norm_p_minus1": lambda T, a, b: T.linalg.vector_norm(a, -1, dim=1),
    "pairwise_distance": lambda T, a, b: T.nn.functional.pairwise_distance(a, b),
    "cosine_similarity": lambda T, a, b: T.nn.functional.cosine_similarity(a, b),
    "normalize": lambda T, a, b: T.nn.functional.normalize(a), "std_rows": lambda T, a, b: (a * 0).std(1),
    "atan2_origin": lambda T, a, b: T.atan2(a * 0, b * 0), "pow_zero_zero": lambda T, a, b: (a * 0) ** (b * 0),
    "hypot_origin": lambda T, a, b: T.hypot(a * 0, b * 0), "max_ties": lambda T, a, b: a.max(0)[0] + a.amax(),
    "maximum_ties": lambda T, a, b: T.maximum(a, b), "layer_norm_constant": lambda T, a, b: T.nn.functional.layer_norm(a * 0, (2,)),
    "group_norm_constant": lambda T, a, b: T.nn.functional.group_norm((a * 0).reshape(1, 3, 2), 1),
}

MATRIX = {
    "mm": (lambda T, a, b: a @ b, [(3, 4), (4, 2)]),
    "mv": (lambda T, a, b: a @ b, [(3, 4), (4,)]),
    "vm": (lambda T, a, b: a @ b, [(4,), (4, 2)]),
    "dot": (lambda T, a, b: T.dot(a, b), [(4,), (4,)]),
    "bmm": (lambda T, a, b: T.bmm(a, b), [(2, 3, 4), (2, 4, 5)]),
    "matmul_3d_2d": (lambda T, a, b: a @ b, [(2, 3, 4), (4, 5)]),
    "matmul_bcast": (lambda T, a, b: a @ b, [(2, 1, 3, 4), (3, 4, 2)]),
    "outer": (lambda T, a, b: T.outer(a, b), [(3,), (4,)]),
    "inner": (lambda T, a, b: T.inner(a, b), [(2, 3, 4), (5, 4)]),
    "inner_1d": (lambda T, a, b: a.inner(b), [(4,), (4,)]),
    "tensordot": (lambda T, a, b: T.tensordot(a, b, dims=([1, 2], [1, 0])), [(2, 3, 4), (4, 3)]),
    "tensordot_broadcast": (lambda T, a, b: T.tensordot(a, b, dims=([1], [0])), [(2, 1), (3, 4)]),
    "tensordot_int": (lambda T, a, b: T.tensordot(a, b, dims=1), [(3, 1), (1, 3)]),
    "einsum": (lambda T, a, b: T.einsum("bij,bjk->bik", a, b), [(2, 3, 4), (2, 4, 5)]),
    "einsum_sum": (lambda T, a, b: T.einsum("ij,kj->i", a, b), [(3, 4), (2, 4)]),
    "addmm": (lambda T, a, b: T.addmm(b[0], a, b), [(3, 3), (3, 2)]),
    "cat": (lambda T, a, b: T.cat([a, b], 1), [(2, 3), (2, 2)]),
    "stack": (lambda T, a, b: T.stack([a, b], 1), [(2, 3), (2, 3)]),
    "inv": (lambda T, a, b: T.linalg.inv(a + 3 * T.eye(3, dtype=a.dtype)) * b.sum(), [(3, 3), (2,)]),
    "det": (lambda T, a, b: T.linalg.det(a + 3 * T.eye(3, dtype=a.dtype)) * b.sum(), [(3, 3), (2,)]),
    "slogdet": (lambda T, a, b: T.linalg.slogdet(a + 3 * T.eye(3, dtype=a.dtype))[1] * b.sum(), [(3, 3), (2,)]),
    "solve": (lambda T, a, b: T.linalg.solve(a + 3 * T.eye(3, dtype=a.dtype), b), [(3, 3), (3,)]),
    "solve_mat": (lambda T, a, b: T.linalg.solve(a + 3 * T.eye(3, dtype=a.dtype), b), [(3, 3), (3, 2)]),
    "scatter": (lambda T, a, b: a.scatter(0, T.tensor([[1, 0, 2]]), b), [(3, 3), (1, 3)]),
    "scatter_add": (lambda T, a, b: a.scatter_add(1, T.tensor([[0, 0], [2, 1], [1, 1]]), b), [(3, 3), (3, 2)]),
    "index_add": (lambda T, a, b: a.index_add(0, T.tensor([0, 2, 0]), b), [(3, 2), (3, 2)]),
    "scatter_reduce_mean": (lambda T, a, b: a.scatter_reduce(1, T.tensor([[0, 0], [2, 1], [1, 1]]), b, "mean"),
                            [(3, 3), (3, 2)]),
    "scatter_reduce_amax": (lambda T, a, b: a.scatter_reduce(1, T.tensor([[0, 0], [2, 1], [1, 1]]), b, "amax",
                                                             include_self=False), [(3, 3), (3, 2)]),
    "scatter_reduce_prod": (lambda T, a, b: a.scatter_reduce(1, T.tensor([[0, 0], [2, 1], [1, 1]]), b, "prod"),
                            [(3, 3), (3, 2)]),
    "masked_fill_t": (lambda T, a, b: a.masked_fill(a > 0, b.sum()), [(3, 3), (2,)]),
}


DOUBLE_BACKWARD = {
    "tanh_mul": lambda T, x: (x.tanh() * x).sum(),
    "exp_pow": lambda T, x: (x.exp() * x ** 3).sum(),
    "softmax": lambda T, x: (x.softmax(-1) * x).sum(),
    "log_softmax": lambda T, x: (x.log_softmax(-1) ** 2).sum(),
    "matmul": lambda T, x: ((x @ x.t()).sigmoid()).sum(),
    "norm": lambda T, x: x.norm() * x.sum(),
    "var": lambda T, x: x.var(1).sum() * x.mean(),
    "index": lambda T, x: (x[0] * x[:, 1:2]).sum() + x[[1, 1]].pow(2).sum(),
    "max": lambda T, x: x.max(1)[0].pow(2).sum(),
    "cat_split": lambda T, x: T.cat([x, x * 2], 0).split(1, 0)[2].pow(2).sum(),
}


F = hookgrad.nn.functional
R = np.random.default_rng


def t(*shape, seed=0, low=None, high=None, grad=True):
    rng = R(seed)
    a = rng.uniform(low, high, shape) if low is not None else rng.standard_normal(shape)
    return hookgrad.tensor(a, dtype=hookgrad.float64, requires_grad=grad)


def idx(*values):
    return hookgrad.tensor(np.array(values, dtype=np.int64))


def _bn_train(x, w, b):
    return F.batch_norm(x, None, None, w, b, training=True)


def _bn_eval(x, w, b):
    rm = hookgrad.tensor([0.1, -0.2], dtype=hookgrad.float64)
    rv = hookgrad.tensor([0.5, 2.0], dtype=hookgrad.float64)
    return F.batch_norm(x, rm, rv, w, b, training=False)


SECOND_ORDER = {"gradgradcheck": True}  # the rows whose backward has a hand-written derivative of its own

# name -> (fn(*tensors), float64 hookgrad inputs[, options]): nn.functional, gradchecked (second order for some)
FUNCTIONAL = {
    "linear": (lambda x, w, b: F.linear(x, w, b), [t(2, 3), t(2, 3, seed=1), t(2, seed=2)], SECOND_ORDER),
    "linear3d": (lambda x, w: F.linear(x, w), [t(2, 2, 3), t(2, 3, seed=1)]),
    "bilinear": (lambda a, b, w, c: F.bilinear(a, b, w, c), [t(2, 2), t(2, 3, seed=1), t(2, 2, 3, seed=2),
                                                             t(2, seed=3)], SECOND_ORDER),
    "conv1d": (lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1), [t(1, 2, 5), t(2, 2, 3, seed=1),
                                                                        t(2, seed=2)], SECOND_ORDER),
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b, padding=1), [t(1, 2, 3, 3), t(2, 2, 2, 2, seed=1), t(2, seed=2)], SECOND_ORDER),
    "conv2d_strided_groups": (lambda x, w: F.conv2d(x, w, stride=2, dilation=(1, 2), groups=2, padding=1),
                              [t(1, 2, 4, 5), t(2, 1, 2, 2, seed=1)], SECOND_ORDER),
    "conv2d_same": (lambda x, w: F.conv2d(x, w, padding="same"), [t(1, 1, 3, 4), t(1, 1, 2, 3, seed=1)]),
    "conv_transpose2d": (lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
                         [t(1, 2, 2, 2), t(2, 1, 3, 3, seed=1), t(1, seed=2)], SECOND_ORDER),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2, 1), [t(1, 2, 3, 3)], SECOND_ORDER),
    "max_pool2d_pad_ceil": (lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), [t(1, 1, 4, 5)]),
    "max_pool1d": (lambda x: F.max_pool1d(x, 2), [t(1, 2, 5)]),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), [t(1, 1, 4, 5)], SECOND_ORDER),
    "avg_pool1d": (lambda x: F.avg_pool1d(x, 2), [t(1, 2, 5)]),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, (2, 3)), [t(1, 1, 3, 5)], SECOND_ORDER),
    "adaptive_avg_pool1d": (lambda x: F.adaptive_avg_pool1d(x, 2), [t(1, 2, 5)]),
    "pad_constant": (lambda x: F.pad(x, (1, -1, 2, 0), value=3.0), [t(1, 2, 3)], SECOND_ORDER),
    "pad_reflect": (lambda x: F.pad(x, (2, 1)), [t(1, 2, 4)]),
    "pad_reflect2d": (lambda x: F.pad(x, (1, 1, 2, 1), mode="reflect"), [t(1, 3, 3)], SECOND_ORDER),
    "pad_replicate": (lambda x: F.pad(x, (2, 1, 1, 0), mode="replicate"), [t(1, 2, 3)]),
    "pad_circular": (lambda x: F.pad(x, (2, 1), mode="circular"), [t(1, 2, 3)]),
    "batch_norm_train": (_bn_train, [t(3, 2, 2), t(2, seed=1), t(2, seed=2)], SECOND_ORDER),
    "batch_norm_eval": (_bn_eval, [t(3, 2, 2), t(2, seed=1), t(2, seed=2)], SECOND_ORDER),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (3,), w, b), [t(2, 3), t(3, seed=1), t(3, seed=2)], SECOND_ORDER),
    "group_norm": (lambda x, w, b: F.group_norm(x, 2, w, b), [t(2, 4, 2), t(4, seed=1), t(4, seed=2)], SECOND_ORDER),
    "embedding": (lambda w: F.embedding(idx(0, 2, 2, 3), w), [t(4, 2)], SECOND_ORDER),
    "relu": (lambda x: F.relu(x), [t(2, 3)]),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.1), [t(2, 3)], SECOND_ORDER),
    "elu": (lambda x: F.elu(x, 0.7), [t(2, 3)], SECOND_ORDER),
    "elu_inplace": (lambda x: F.elu(x * 1, 0.7, inplace=True), [t(2, 3)], SECOND_ORDER),
    "selu": (lambda x: F.selu(x), [t(2, 3)], SECOND_ORDER),
    "selu_inplace": (lambda x: F.selu(x * 1, inplace=True), [t(2, 3)], SECOND_ORDER),
    "celu": (lambda x: F.celu(x, 0.7), [t(2, 3)], SECOND_ORDER),
    "celu_inplace": (lambda x: F.celu(x * 1, 1.5, inplace=True), [t(2, 3)], SECOND_ORDER),
    "gelu": (lambda x: F.gelu(x), [t(2, 3)], SECOND_ORDER),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), [t(2, 3)], SECOND_ORDER),
    "silu": (lambda x: F.silu(x), [t(2, 3)], SECOND_ORDER),
    "sigmoid": (lambda x: F.sigmoid(x), [t(2, 3)]),
    "tanh": (lambda x: F.tanh(x), [t(2, 3)]),
    "softplus": (lambda x: F.softplus(x, 2.0, 1.5), [t(2, 3)], SECOND_ORDER),
    "hardtanh": (lambda x: F.hardtanh(x * 2), [t(2, 3)]),
    "relu6": (lambda x: F.relu6(x * 5), [t(2, 3)]),
    "softmax": (lambda x: F.softmax(x, 1), [t(2, 3)]),
    "log_softmax": (lambda x: F.log_softmax(x, 0), [t(2, 3)]),
    "normalize": (lambda x: F.normalize(x), [t(2, 3)]),
    "sdpa": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), [t(1, 2, 2), t(1, 3, 2, seed=1),
                                                                                      t(1, 3, 2, seed=2)], SECOND_ORDER),
    # 4-D with one head size: the fused CPU kernel's node (its backward has no derivative)
    "sdpa_fused": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                   [t(1, 2, 3, 2), t(1, 2, 4, 2, seed=1), t(1, 2, 4, 2, seed=2)]),
    "mse_loss": (lambda x, y: F.mse_loss(x, y), [t(2, 3), t(2, 3, seed=1)], SECOND_ORDER),
    "l1_loss": (lambda x, y: F.l1_loss(x, y, reduction="sum"), [t(2, 3), t(2, 3, seed=1)]),
    "smooth_l1_loss": (lambda x, y: F.smooth_l1_loss(x, y, beta=0.5), [t(2, 3), t(2, 3, seed=1)], SECOND_ORDER),
    "huber_loss": (lambda x, y: F.huber_loss(x, y, reduction="none", delta=0.7), [t(2, 3), t(2, 3, seed=1)]),
    "cross_entropy": (lambda x: F.cross_entropy(x, idx(0, 2, 1)), [t(3, 3)], SECOND_ORDER),
    "cross_entropy_smooth_weight": (lambda x: F.cross_entropy(
        x, idx(0, 2, 1), weight=hookgrad.tensor([1.0, 2.0, 0.5], dtype=hookgrad.float64), label_smoothing=0.2,
        ignore_index=1), [t(3, 3)]),
    "cross_entropy_probs": (lambda x, p: F.cross_entropy(x, p.softmax(1)), [t(2, 3), t(2, 3, seed=1)], SECOND_ORDER),
    "nll_loss": (lambda x: F.nll_loss(x, idx(1, 0), reduction="none"), [t(2, 3)], SECOND_ORDER),
    "binary_cross_entropy": (lambda x, y: F.binary_cross_entropy(x, y), [t(2, 3, low=0.1, high=0.9),
                                                                         t(2, 3, seed=1, low=0, high=1)], SECOND_ORDER),
    "bce_with_logits": (lambda x, y: F.binary_cross_entropy_with_logits(
        x, y, pos_weight=hookgrad.tensor([1.0, 2.0, 0.5], dtype=hookgrad.float64)),
        [t(2, 3), t(2, 3, seed=1, low=0, high=1)], SECOND_ORDER),
    "kl_div": (lambda x, y: F.kl_div(x, y, reduction="batchmean"), [t(2, 3), t(2, 3, seed=1, low=0.1, high=1)]),
    "kl_div_log_target": (lambda x, y: F.kl_div(x, y, reduction="sum", log_target=True), [t(2, 3), t(2, 3, seed=1)]),
    "pad_reflect1d": (lambda x: F.pad(x, (2, 1), mode="reflect"), [t(1, 2, 4)]),
    "group_norm_input_no_grad": (lambda x, w, b: F.group_norm(x, 2, w, b), [t(2, 4, 2, grad=False), t(4, seed=1),
                                                                            t(4, seed=2)]),
    "pad_reflect3d": (lambda x: F.pad(x, (1, 1, 1, 0, 0, 1), mode="reflect"), [t(1, 2, 2, 3)]),
    "pad_replicate1d": (lambda x: F.pad(x, (2, 1), mode="replicate"), [t(1, 2, 3)]),
    "pad_replicate3d": (lambda x: F.pad(x, (1, 0, 0, 1, 1, 1), mode="replicate"), [t(1, 2, 2, 3)]),
    "pad_circular2d": (lambda x: F.pad(x, (1, 1, 1, 0), mode="circular"), [t(1, 2, 3)]),
    "pad_circular3d": (lambda x: F.pad(x, (1, 0, 0, 1, 1, 1), mode="circular"), [t(1, 2, 2, 3)]),
    "nll_loss2d": (lambda x: F.nll_loss(x.log_softmax(1), idx(0, 2, 1, 1).reshape(1, 2, 2)), [t(1, 3, 2, 2)]),
    # activations recorded as one node each (torch's names; tests/test_layer_graphs.py compares the graphs)
    "glu": (lambda x: F.glu(x, 0), [t(4, 3)], SECOND_ORDER),
    "prelu_kernel": (lambda x, w: F.prelu(x, w), [t(2, 3, 2), t(3, seed=1)], SECOND_ORDER),
    "prelu_shared": (lambda x, w: F.prelu(x, w), [t(2, 3), t(1, seed=1)], SECOND_ORDER),
    "rrelu_eval": (lambda x: F.rrelu(x, 0.1, 0.3), [t(2, 3)], SECOND_ORDER),
    "rrelu_eval_inplace": (lambda x: F.rrelu(x * 1, 0.1, 0.3, inplace=True), [t(2, 3)], SECOND_ORDER),
    "rrelu_train": (lambda x: (hookgrad.manual_seed(0), F.rrelu(x, training=True))[1], [t(2, 3)], SECOND_ORDER),
    "threshold": (lambda x: F.threshold(x, 0.1, 2.0), [t(2, 3)], SECOND_ORDER),
    "threshold_inplace": (lambda x: F.threshold(x * 1, 0.1, -2.0, inplace=True), [t(2, 3)], SECOND_ORDER),
    "hardshrink_node": (lambda x: F.hardshrink(x, 0.3), [t(2, 3)], SECOND_ORDER),
    "softshrink": (lambda x: F.softshrink(x, 0.3), [t(2, 3)], SECOND_ORDER),
    "hardsigmoid": (lambda x: F.hardsigmoid(x * 2), [t(2, 3)], SECOND_ORDER),
    "hardswish": (lambda x: F.hardswish(x * 2.5), [t(2, 3)], SECOND_ORDER),
    "mish": (lambda x: F.mish(x), [t(2, 3)], SECOND_ORDER),
    "mish_inplace": (lambda x: F.mish(x * 1, inplace=True), [t(2, 3)], SECOND_ORDER),
    "logsigmoid": (lambda x: F.logsigmoid(x), [t(2, 3)], SECOND_ORDER),
    "pixel_shuffle": (lambda x: F.pixel_shuffle(x, 2), [t(1, 8, 2, 3)], SECOND_ORDER),
    "pixel_unshuffle": (lambda x: F.pixel_unshuffle(x, 2), [t(2, 1, 4, 2)], SECOND_ORDER),
    "interpolate_bicubic": (lambda x: F.interpolate(x, scale_factor=1.7, mode="bicubic"), [t(1, 2, 3, 4)], SECOND_ORDER),
    "interpolate_bicubic_corners": (lambda x: F.interpolate(x, size=(2, 5), mode="bicubic", align_corners=True),
                                    [t(1, 1, 4, 3)], SECOND_ORDER),
    "interpolate_trilinear": (lambda x: F.interpolate(x, size=(3, 2, 4), mode="trilinear"), [t(1, 1, 2, 3, 2)],
                              SECOND_ORDER),
    "max_pool3d": (lambda x: F.max_pool3d(x, 2, 1, ceil_mode=True), [t(1, 1, 3, 2, 3)], SECOND_ORDER),
    "avg_pool3d": (lambda x: F.avg_pool3d(x, 2, 1, 1, count_include_pad=False), [t(1, 1, 2, 3, 2)], SECOND_ORDER),
    "adaptive_avg_pool3d": (lambda x: F.adaptive_avg_pool3d(x, (2, 1, 3)), [t(1, 3, 3, 2, 4)], SECOND_ORDER),
    "adaptive_max_pool2d": (lambda x: F.adaptive_max_pool2d(x, (2, 3)), [t(2, 3, 5)], SECOND_ORDER),
    "adaptive_max_pool3d": (lambda x: F.adaptive_max_pool3d(x, 2), [t(1, 3, 3, 4)], SECOND_ORDER),
    "interpolate_area": (lambda x: F.interpolate(x, size=(2, 3, 2), mode="area"), [t(1, 1, 3, 4, 3)], SECOND_ORDER),
    # torch's C++ compositions call the Scalar overloads (AddBackward1, SubBackward1, DivBackward1, NormBackward1)
    "rms_norm": (lambda x, w: F.rms_norm(x, (3,), w, eps=1e-3), [t(2, 3), t(3, seed=1)], SECOND_ORDER),
    "pairwise_distance_p2": (lambda a, b: F.pairwise_distance(a, b), [t(3, 4), t(3, 4, seed=1)], SECOND_ORDER),
    "pairwise_distance_p3": (lambda a, b: F.pairwise_distance(a, b, p=3.0, keepdim=True), [t(3, 4), t(3, 4, seed=1)],
                             SECOND_ORDER),
    "pairwise_distance_p1": (lambda a, b: F.pairwise_distance(a, b, p=1.0), [t(3, 4), t(3, 4, seed=1)]),
    "cosine_embedding_loss": (lambda a, b: F.cosine_embedding_loss(a, b, idx(0, 1, 0) * 2 - 1, margin=0.1),
                              [t(3, 4), t(3, 4, seed=1)], SECOND_ORDER),
    "unfold": (lambda x: F.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), [t(1, 2, 3, 5)], SECOND_ORDER),
    "fold": (lambda x: F.fold(x, (4, 3), 2, padding=(1, 0)), [t(1, 8, 10)], SECOND_ORDER),
    "conv2d_channel_major": (lambda x, w, b: F.conv2d(x, w, b, padding=1), [
        t(2, 8, 5, 4), (t(32, 8, 3, 3, seed=1, grad=False) * 0.1).requires_grad_(), t(32, seed=2)], SECOND_ORDER),
}

# ---- nn.functional against torch: parameter grids, edge values, dtypes -----------------------------
# name -> (fn(T, F, *tensors), NumPy arrays, options): floating arrays become tensors that require
# grad; the output (its first tensor when it is a tuple) is backpropagated with a fixed random
# upstream gradient; the outputs, every gradient and (fact "grad_fn") the grad_fn name are compared.
FUNCTIONAL_VS_TORCH = {}
NO_NAME = (PACK_ORDER,)  # facts for rows whose grad_fn torch names after an internal op


def arr(*shape, seed=0, low=None, high=None):
    rng = R(seed)
    return rng.uniform(low, high, shape) if low is not None else rng.standard_normal(shape)


def ints(*shape, high=3, seed=0):
    return R(seed).integers(0, high, shape).astype(np.int64)


def _vs_torch(name, fn, *arrays, **options):
    assert name not in FUNCTIONAL_VS_TORCH, f"two rows named {name}"
    FUNCTIONAL_VS_TORCH[name] = (fn, list(arrays), options)


F32 = {"dtypes": ("float32",)}

# linear, bilinear
for shape in [(4, 5), (2, 3, 5), (5,), (1, 5), (2, 1, 3, 5)]:
    facts = {"facts": NO_NAME} if len(shape) == 1 else {}
    _vs_torch(f"linear{shape}", lambda T, F, x, w, b: F.linear(x, w, b), arr(*shape), arr(3, 5, seed=1),
              arr(3, seed=2), **facts)
    _vs_torch(f"linear{shape}_no_bias", lambda T, F, x, w: F.linear(x, w), arr(*shape), arr(3, 5, seed=1), **facts)
_vs_torch("linear_float32", lambda T, F, x, w, b: F.linear(x, w, b), arr(4, 5), arr(3, 5, seed=1), arr(3, seed=2),
          **F32, rtol=1e-5, atol=1e-6)
for shape in [(4,), (2, 3)]:
    _vs_torch(f"bilinear{shape}", lambda T, F, a, b, w, bias: F.bilinear(a, b, w, bias), arr(*shape, 3),
              arr(*shape, 4, seed=1), arr(2, 3, 4, seed=2), arr(2, seed=3), facts=NO_NAME)
# a weight wider than 4x the batch takes the weight @ x^T product path
for bias_shape in [(24,), (3, 24), (1, 24)]:
    wide = (arr(3, 7), arr(24, 7, seed=1), arr(*bias_shape, seed=2))
    if len(bias_shape) == 1:
        _vs_torch(f"linear_wide_bias{bias_shape}", lambda T, F, x, w, b: F.linear(x, w, b), *wide)
    _vs_torch(f"addmm_wide_bias{bias_shape}", lambda T, F, x, w, b: T.addmm(b, x, w.t()), *wide)
    _vs_torch(f"addmm_wide_bias{bias_shape}_beta_alpha", lambda T, F, x, w, b: T.addmm(b, x, w.t(), beta=0.5,
                                                                                     alpha=2.0), *wide)
    _vs_torch(f"linear_wide_bias{bias_shape}_view", lambda T, F, x, w, b: F.linear(
        x, w, b[..., :24]).contiguous().view(-1), *wide)
_vs_torch("linear_wide_no_bias", lambda T, F, x, w: F.linear(x, w), arr(3, 7), arr(24, 7, seed=1))

# convolution
for i, kw in enumerate([dict(), dict(stride=2), dict(padding=1), dict(padding=(2, 0), stride=(1, 2)),
                        dict(dilation=2, padding=2), dict(padding="same"), dict(padding="same", dilation=(2, 1)),
                        dict(padding="valid"), dict(groups=2, padding=1), dict(stride=3, padding=1, dilation=2,
                                                                              groups=2)]):
    w = arr(6, 4 // kw.get("groups", 1), 3, 2, seed=1)
    _vs_torch(f"conv2d_{i}_{kw}", lambda T, F, x, w, b, kw=kw: F.conv2d(x, w, b, **kw), arr(2, 4, 7, 6), w,
              arr(6, seed=2))
    _vs_torch(f"conv2d_{i}_{kw}_no_bias", lambda T, F, x, w, kw=kw: F.conv2d(x, w, **kw), arr(2, 4, 7, 6), w)
_vs_torch("conv2d_unbatched", lambda T, F, x, w: F.conv2d(x, w, padding=1), arr(3, 5, 5), arr(2, 3, 3, 3, seed=1))
_vs_torch("conv2d_1x1", lambda T, F, x, w, b: F.conv2d(x, w, b), arr(2, 3, 4, 4), arr(5, 3, 1, 1, seed=1),
          arr(5, seed=2))
_vs_torch("conv2d_float32", lambda T, F, x, w, b: F.conv2d(x, w, b, padding=1), arr(4, 3, 9, 9),
          arr(8, 3, 3, 3, seed=1), arr(8, seed=2), **F32, rtol=1e-4, atol=1e-5)
for kw in [dict(), dict(stride=2, padding=1), dict(dilation=2, padding="same"), dict(groups=3, padding=2)]:
    w = arr(6, 3 // kw.get("groups", 1), 3, seed=1)
    _vs_torch(f"conv1d_{kw}", lambda T, F, x, w, b, kw=kw: F.conv1d(x, w, b, **kw), arr(2, 3, 11), w, arr(6, seed=2))
    _vs_torch(f"conv1d_{kw}_unbatched", lambda T, F, x, w, kw=kw: F.conv1d(x, w, **kw), arr(3, 11), w)
for kw in [dict(), dict(stride=2), dict(stride=2, output_padding=1), dict(stride=2, padding=1, output_padding=1),
           dict(padding=1, dilation=2), dict(groups=2, stride=2), dict(stride=(2, 3), padding=(0, 1),
                                                                      output_padding=(1, 2))]:
    _vs_torch(f"conv_transpose2d_{kw}", lambda T, F, x, w, b, kw=kw: F.conv_transpose2d(x, w, b, **kw),
              arr(2, 4, 5, 4), arr(4, 3, 3, 3, seed=1), arr(3 * kw.get("groups", 1), seed=2))
_vs_torch("conv_transpose1d", lambda T, F, x, w: F.conv_transpose1d(x, w, stride=2, padding=1), arr(2, 4, 6),
          arr(4, 3, 3, seed=1))
# both column layouts of the kernels ((8, 32) channel-major, (2, 4) batch-major) and both window-copy
# methods (padding that keeps the width: the flat-shift copy; the rest: the strided one)
CONV2D_LAYOUTS = [dict(padding=1), dict(padding="same", dilation=2), dict(padding=(0, 1)), dict(padding=(2, 0)),
                  dict(stride=2, padding=1), dict(padding=0), dict(padding=1, groups=2)]
for cin, cout in [(2, 4), (8, 32)]:
    _vs_torch(f"conv_transpose2d_layout_{cin}_{cout}", lambda T, F, x, w, b: F.conv_transpose2d(x, w, b, padding=1),
              arr(3, cout, 7, 6), arr(cout, cin, 3, 3), arr(cin, seed=2))
    for kw in CONV2D_LAYOUTS:
        w = arr(cout, cin // kw.get("groups", 1), 3, 3, seed=1)
        _vs_torch(f"conv2d_layout_{cin}_{cout}_{kw}", lambda T, F, x, w, b, kw=kw: F.conv2d(x, w, b, **kw),
                  arr(3, cin, 7, 6), w, arr(cout, seed=2))
        _vs_torch(f"conv2d_layout_{cin}_{cout}_{kw}_non_contiguous", lambda T, F, x, w, b, kw=kw: F.conv2d(
            x.transpose(1, 2), w, b, **kw), arr(3, 7, cin, 6), w, arr(cout, seed=2))

# pooling
for kw in [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=3, stride=2, ceil_mode=True),
           dict(kernel_size=2, stride=1), dict(kernel_size=(2, 3), dilation=(2, 1), padding=(1, 1)),
           dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)]:
    _vs_torch(f"max_pool2d_{kw}_indices", lambda T, F, x, kw=kw: F.max_pool2d(x, return_indices=True, **kw),
              arr(2, 3, 7, 8))
    _vs_torch(f"max_pool2d_{kw}_unbatched", lambda T, F, x, kw=kw: F.max_pool2d(x, **kw), arr(2, 3, 7, 8)[0])
_ties = np.zeros((1, 1, 4, 4))
_ties[0, 0, 1, 1] = 1
_vs_torch("max_pool2d_ties_pick_first", lambda T, F, x: F.max_pool2d(x, 2, return_indices=True), _ties)
_nan = np.array([[[[1.0, np.nan, 3, np.nan], [np.nan, 2, 0, 5]]]])
_vs_torch("max_pool2d_nan_wins", lambda T, F, x: F.max_pool2d(x, 2, return_indices=True), _nan)
_vs_torch("max_pool2d_nan_wins_padded", lambda T, F, x: F.max_pool2d(x, (1, 3), 1, padding=(0, 1)), _nan)
# MaxPool2d(2): the pairwise fast path, its fallbacks and its lazily derived indices
for shape in [(2, 3, 6, 8), (3, 5, 7), (1, 2, 2, 2), (2, 1, 5, 3)]:
    for values in ["ties", "random", "nan", "inf"]:
        x = R(3).integers(0, 3, shape).astype(np.float64) if values == "ties" else arr(*shape, seed=4)
        if values == "nan":
            x.flat[::5] = np.nan
        if values == "inf":
            x.flat[::4], x.flat[1::6] = np.inf, -np.inf
        _vs_torch(f"max_pool2d_2x2{shape}_{values}", lambda T, F, x: F.max_pool2d(x, 2), x)
        _vs_torch(f"max_pool2d_2x2{shape}_{values}_indices", lambda T, F, x: F.max_pool2d(x, 2, return_indices=True), x)
        _vs_torch(f"max_pool2d_2x2{shape}_{values}_indices_only",
                  lambda T, F, x: F.max_pool2d(x, (2, 2), 2, return_indices=True)[1], x)
for kw in [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True), dict(kernel_size=3, dilation=2)]:
    _vs_torch(f"max_pool1d_{kw}", lambda T, F, x, kw=kw: F.max_pool1d(x, return_indices=True, **kw), arr(2, 3, 11))
for kw in [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
           dict(kernel_size=3, stride=2, padding=1, count_include_pad=False), dict(kernel_size=3, stride=2, ceil_mode=True),
           dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
           dict(kernel_size=(2, 3), divisor_override=5), dict(kernel_size=5, stride=1)]:
    _vs_torch(f"avg_pool2d_{kw}", lambda T, F, x, kw=kw: F.avg_pool2d(x, **kw), arr(2, 3, 7, 8))
    _vs_torch(f"avg_pool2d_{kw}_unbatched", lambda T, F, x, kw=kw: F.avg_pool2d(x, **kw), arr(3, 7, 8))
for kw in [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)]:
    _vs_torch(f"avg_pool1d_{kw}", lambda T, F, x, kw=kw: F.avg_pool1d(x, **kw), arr(2, 3, 10))
for size in [(3, 3), 1, (2, None), (5, 7), (4, 3), (9, 11)]:
    _vs_torch(f"adaptive_avg_pool2d_{size}", lambda T, F, x, size=size: F.adaptive_avg_pool2d(x, size), arr(2, 3, 7, 9))
for size in [1, 3, 4]:
    _vs_torch(f"adaptive_avg_pool1d_{size}", lambda T, F, x, size=size: F.adaptive_avg_pool1d(x, size), arr(2, 3, 10))

# padding
for mode, shape, p in [("constant", (2, 3), (1, 2)), ("constant", (2, 3, 4), (1, 0, 2, 1)),
                       ("constant", (2, 3, 4), (-1, 1)), ("reflect", (2, 3, 5), (2, 1)),
                       ("reflect", (1, 2, 4, 5), (1, 2, 3, 1)), ("replicate", (2, 3, 5), (3, 1)),
                       ("replicate", (1, 2, 4, 5), (2, 2, 1, 3)), ("circular", (1, 2, 5), (2, 1))]:
    _vs_torch(f"pad_{mode}{shape}{p}", lambda T, F, x, p=p, mode=mode: F.pad(x, p, mode=mode), arr(*shape),
              **({"facts": NO_NAME} if mode == "circular" else {}))
_vs_torch("pad_value", lambda T, F, x: F.pad(x, (1, 1, 2, 0), value=2.5), arr(2, 3, 3))


# normalization
def _batch_norm_training(affine):
    def fn(T, F, x, w, b):
        rm, rv = T.zeros(3, dtype=T.float64), T.ones(3, dtype=T.float64)
        out = F.batch_norm(x, rm, rv, w if affine else None, b if affine else None, training=True, momentum=0.3)
        return out, rm, rv
    return fn


def _batch_norm_eval(T, F, x, w, b):
    rm, rv = T.tensor(arr(3, seed=5)), T.tensor(arr(3, seed=6, low=0.5, high=2.0))
    return F.batch_norm(x, rm, rv, w, b, training=False)


def _batch_norm_float32(T, F, x):
    rm, rv = T.zeros(3), T.ones(3)
    return F.batch_norm(x, rm, rv, training=True), rm, rv


for shape in [(6, 3), (4, 3, 5), (2, 3, 4, 5)]:
    for affine in (True, False):
        _vs_torch(f"batch_norm_training{shape}_affine_{affine}", _batch_norm_training(affine), arr(*shape),
                  arr(3, seed=1), arr(3, seed=2))
for shape in [(6, 3), (2, 3, 4, 5)]:
    _vs_torch(f"batch_norm_eval{shape}", _batch_norm_eval, arr(*shape), arr(3, seed=1), arr(3, seed=2))
_vs_torch("batch_norm_no_running_stats", lambda T, F, x: F.batch_norm(x, None, None, training=True), arr(5, 3, 2))
_vs_torch("batch_norm_float32", _batch_norm_float32, arr(8, 3, 4), **F32, rtol=1e-4, atol=1e-5)
for shape, ns in [((4, 5), (5,)), ((2, 3, 4), (4,)), ((2, 3, 4), (3, 4)), ((5,), (5,))]:
    _vs_torch(f"layer_norm{shape}{ns}", lambda T, F, x, w, b, ns=ns: F.layer_norm(x, ns, w, b, eps=1e-4), arr(*shape),
              arr(*ns, seed=1), arr(*ns, seed=2))
    _vs_torch(f"layer_norm{shape}{ns}_no_affine", lambda T, F, x, ns=ns: F.layer_norm(x, ns), arr(*shape))
_vs_torch("layer_norm_float32", lambda T, F, x, w, b: F.layer_norm(x, (8,), w, b), arr(4, 8), arr(8, seed=1),
          arr(8, seed=2), **F32, rtol=1e-4, atol=1e-5)
for shape, groups in [((2, 6, 5), 3), ((2, 4, 3, 3), 2), ((3, 4), 4), ((2, 4, 3), 1)]:
    _vs_torch(f"group_norm{shape}_{groups}", lambda T, F, x, w, b, g=groups: F.group_norm(x, g, w, b), arr(*shape),
              arr(shape[1], seed=1), arr(shape[1], seed=2))
    _vs_torch(f"group_norm{shape}_{groups}_no_affine", lambda T, F, x, g=groups: F.group_norm(x, g), arr(*shape))

# activations (float64 tolerance 1e-6/1e-7, float32 2e-5/2e-6)
for name, kw in [("relu", {}), ("leaky_relu", {}), ("leaky_relu", {"negative_slope": 0.2}), ("elu", {}),
                 ("elu", {"alpha": 0.5}), ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}),
                 ("sigmoid", {}), ("tanh", {}), ("softplus", {}), ("softplus", {"beta": 2.0, "threshold": 1.0}),
                 ("hardtanh", {}), ("hardtanh", {"min_val": -0.5, "max_val": 2.0}), ("relu6", {})]:
    _vs_torch(f"{name}_{kw}", lambda T, F, x, name=name, kw=kw: getattr(F, name)(x, **kw), arr(3, 7) * 4,
              dtypes=("float64", "float32"))


def _inplace_activation(name):
    def fn(T, F, x):
        y = x * 1.0
        out = getattr(F, name)(y, inplace=True)
        return out, y, out is y
    return fn


for name in ["relu", "leaky_relu", "elu", "silu", "hardtanh", "relu6"]:
    _vs_torch(f"{name}_inplace", _inplace_activation(name), arr(3, 4) * 3, facts=NO_NAME)
# the ELU family: EluBackward0/1, CeluBackward0/1 (the in-place forms keep the result)
for name, kw in [("selu", {}), ("celu", {}), ("celu", {"alpha": 0.7}), ("celu", {"alpha": -1.5})]:
    _vs_torch(f"{name}_{kw}", lambda T, F, x, name=name, kw=kw: getattr(F, name)(x, **kw), arr(3, 7) * 4,
              dtypes=("float64", "float32"))
for name in ["elu", "selu", "celu"]:
    _vs_torch(f"{name}_inplace_node", lambda T, F, x, name=name: getattr(F, name)(x * 1, inplace=True), arr(3, 4) * 3,
              facts=(GRAD_FN, PACK_ORDER))
for name in ["softsign", "tanhshrink"]:
    _vs_torch(name, lambda T, F, x, name=name: getattr(F, name)(x), arr(3, 5) * 4, facts=NO_NAME)
for name in ["logsigmoid", "mish", "hardsigmoid", "hardswish", "hardshrink", "softshrink"]:
    _vs_torch(name, lambda T, F, x, name=name: getattr(F, name)(x), arr(3, 5) * 4, dtypes=("float64", "float32"))
_vs_torch("softmin", lambda T, F, x: F.softmin(x, 1), arr(3, 5), facts=NO_NAME)
_vs_torch("relu_", lambda T, F, x: F.relu_(x * 1), arr(3, 5), facts=NO_NAME)
_vs_torch("relu6_of_hardtanh", lambda T, F, x: F.relu6(F.hardtanh(x, -2.0, 2.0) * 4), arr(3, 2, 4), facts=NO_NAME)
for dim in [0, 1, -1]:
    _vs_torch(f"softmax_{dim}", lambda T, F, x, dim=dim: F.softmax(x, dim), arr(3, 4, 5))
    _vs_torch(f"log_softmax_{dim}", lambda T, F, x, dim=dim: F.log_softmax(x, dim), arr(3, 4, 5))
    _vs_torch(f"softmax_{dim}_to_float64", lambda T, F, x, dim=dim: F.softmax(x, dim, dtype=T.float64), arr(3, 4, 5),
              **F32, rtol=1e-5, atol=1e-7)

# interpolate: every mode against torch over sizes, scale factors and align_corners (bicubic: A = -0.75)
for mode, shape in [("nearest", (2, 3, 5)), ("nearest", (1, 2, 4, 5)), ("nearest-exact", (1, 2, 4, 5)),
                    ("linear", (2, 3, 5)), ("bilinear", (1, 2, 4, 5)), ("trilinear", (1, 2, 3, 4, 2)),
                    ("bicubic", (1, 2, 4, 5)), ("bicubic", (2, 1, 6, 3))]:
    nd = len(shape) - 2
    grid = [dict(scale_factor=2), dict(scale_factor=0.6), dict(scale_factor=1.7), dict(size=(7, 2, 3)[:nd])]
    if mode not in ("nearest", "nearest-exact"):
        grid += [dict(kw, align_corners=True) for kw in grid]
    for kw in grid:
        _vs_torch(f"interpolate_{mode}{shape}_{kw}", lambda T, F, x, mode=mode, kw=kw: F.interpolate(x, mode=mode, **kw),
                  arr(*shape), dtypes=("float64", "float32"))
# embedding, normalize, attention
_EMBEDDING_INDICES = np.array([[0, 1, 1, 4], [4, 4, 2, 0]])
for kw in [dict(), dict(padding_idx=1), dict(padding_idx=-1), dict(scale_grad_by_freq=True),
           dict(padding_idx=0, scale_grad_by_freq=True)]:
    _vs_torch(f"embedding_{kw}", lambda T, F, w, kw=kw: F.embedding(T.tensor(_EMBEDDING_INDICES), w, **kw), arr(5, 3))
_vs_torch("embedding_max_norm", lambda T, F, w: (F.embedding(T.tensor([[0, 2], [2, 3]]), w, max_norm=1.0),
                                                 w.detach().clone()), arr(5, 3) * 2)
for kw in [dict(), dict(p=1.0), dict(dim=0), dict(p=3.0, dim=-1)]:
    _vs_torch(f"normalize_{kw}", lambda T, F, x, kw=kw: F.normalize(x, **kw), arr(3, 4), facts=NO_NAME)


def _attention(mask, **kw):
    def fn(T, F, q, k, v):
        m = None
        if mask == "bool":
            m = T.tensor(R(5).random((4, 6)) > 0.3)
            m[:, 0] = True
        elif mask == "float":
            m = T.tensor(arr(4, 6, seed=7))
        elif mask == "dead":  # a row that attends to nothing
            m = T.tensor(np.array([[True] * 6, [False] * 6, [True, False] * 3, [False] * 5 + [True]]))
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw)
    return fn


for mask, kw in [(None, {}), (None, dict(is_causal=True)), (None, dict(scale=0.3)), ("bool", {}), ("float", {}),
                 ("dead", {})]:
    _vs_torch(f"sdpa_{mask}_{kw}", _attention(mask, **kw), arr(2, 4, 3), arr(2, 6, 3, seed=1), arr(2, 6, 5, seed=2))
# 4-D inputs with one head size: torch's fused CPU kernel (ScaledDotProductFlashAttentionForCpuBackward0)
for mask, kw in [(None, {}), (None, dict(is_causal=True)), ("bool", dict(scale=0.3)), ("dead", {})]:
    _vs_torch(f"sdpa_fused_{mask}_{kw}", _attention(mask, **kw), arr(1, 2, 4, 3), arr(1, 2, 6, 3, seed=1),
              arr(1, 2, 6, 3, seed=2))

# losses
for reduction in ["mean", "sum", "none"]:
    for name, kw in [("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", {}), ("smooth_l1_loss", {"beta": 0.5}),
                     ("smooth_l1_loss", {"beta": 0.0}), ("huber_loss", {}), ("huber_loss", {"delta": 0.3})]:
        facts = {"facts": NO_NAME} if name == "smooth_l1_loss" and kw.get("beta") == 0.0 else {}
        _vs_torch(f"{name}_{kw}_{reduction}", lambda T, F, x, t, name=name, kw=kw, r=reduction: getattr(F, name)(
            x, t, reduction=r, **kw), arr(4, 5) * 2, arr(4, 5, seed=1), **facts)
    for name in ["mse_loss", "l1_loss", "huber_loss"]:
        _vs_torch(f"{name}_weight_{reduction}", lambda T, F, x, t, w, name=name, r=reduction: getattr(F, name)(
            x, t, reduction=r, weight=w.detach()), arr(4, 5) * 2, arr(4, 5, seed=1), arr(4, 5, seed=2, low=0.5, high=2.0),
            facts=NO_NAME)
_vs_torch("mse_loss_broadcast", lambda T, F, x, t: F.mse_loss(x, t), arr(4, 5), arr(1, 5, seed=1), facts=NO_NAME)


def _cross_entropy_indices(reduction, weight=False, **kw):
    target = np.array([0, 2, 1, 2, 0, 1])

    def fn(T, F, x, w):
        return F.cross_entropy(x, T.tensor(target), weight=w.detach() if weight else None, reduction=reduction, **kw)
    return fn


def _cross_entropy_probabilities(weight=False, **kw):
    probs = R(3).dirichlet(np.ones(4), size=5)

    def fn(T, F, x, w):
        return F.cross_entropy(x, T.tensor(probs), weight=w.detach() if weight else None, **kw)
    return fn


for reduction in ["mean", "sum", "none"]:
    for kw in [dict(), dict(weight=True), dict(ignore_index=1), dict(weight=True, ignore_index=2),
               dict(label_smoothing=0.2), dict(label_smoothing=0.1, weight=True), dict(label_smoothing=0.1, ignore_index=0),
               dict(label_smoothing=0.1, weight=True, ignore_index=0)]:
        _vs_torch(f"cross_entropy_indices_{kw}_{reduction}", _cross_entropy_indices(reduction, **kw), arr(6, 3),
                  arr(3, seed=1, low=0.5, high=2.0), **({"facts": NO_NAME} if kw.get("label_smoothing") else {}))
for kw in [dict(), dict(label_smoothing=0.1), dict(weight=True), dict(reduction="sum"), dict(reduction="none")]:
    _vs_torch(f"cross_entropy_probabilities_{kw}", _cross_entropy_probabilities(**kw), arr(5, 4),
              arr(4, seed=1, low=0.5, high=2.0), facts=NO_NAME)
_SPATIAL_TARGET = ints(2, 3, 4, high=5)
_SPATIAL_TARGET[0, 0, 0] = -100
_vs_torch("cross_entropy_spatial", lambda T, F, x: F.cross_entropy(x, T.tensor(_SPATIAL_TARGET)), arr(2, 5, 3, 4))
_vs_torch("cross_entropy_spatial_none", lambda T, F, x: F.cross_entropy(x, T.tensor(_SPATIAL_TARGET), reduction="none"),
          arr(2, 5, 3, 4))
_vs_torch("cross_entropy_unbatched", lambda T, F, x: F.cross_entropy(x, T.tensor(2)), arr(5))
_vs_torch("cross_entropy_float32", lambda T, F, x: F.cross_entropy(x, T.tensor(ints(64, high=10))), arr(64, 10),
          **F32, rtol=1e-5, atol=1e-6)
for reduction in ["mean", "sum", "none"]:
    _vs_torch(f"nll_loss_weight_ignore_{reduction}", lambda T, F, x, w, r=reduction: F.nll_loss(
        x, T.tensor(np.array([1, 0, 3, 3])), weight=w.detach(), reduction=r, ignore_index=0),
        arr(4, 4), arr(4, seed=2, low=0.1, high=1.0))
    for weighted in (False, True):
        _vs_torch(f"binary_cross_entropy_{reduction}_weighted_{weighted}", lambda T, F, x, t, w, r=reduction,
                  weighted=weighted: F.binary_cross_entropy(x, t, weight=w.detach() if weighted else None, reduction=r),
                  arr(3, 4, low=0.05, high=0.95), arr(3, 4, seed=1, low=0, high=1), arr(4, seed=2, low=0.5, high=1.5))
        for pos in (False, True):
            _vs_torch(f"bce_with_logits_{reduction}_weighted_{weighted}_pos_{pos}", lambda T, F, x, t, w, pw, r=reduction,
                      weighted=weighted, pos=pos: F.binary_cross_entropy_with_logits(
                          x, t, weight=w.detach() if weighted else None, pos_weight=pw.detach() if pos else None,
                          reduction=r), arr(3, 4) * 3, arr(3, 4, seed=1, low=0, high=1),
                      arr(4, seed=2, low=0.5, high=1.5), arr(4, seed=3, low=0.5, high=3.0))
for reduction in ["sum", "none", "batchmean"]:
    for log_target in (False, True):
        target = arr(3, 4, seed=1, low=0.05, high=1.0)
        target = np.log(target) if log_target else target
        log_input = np.log(arr(3, 4, low=0.1, high=1.0))
        _vs_torch(f"kl_div_{reduction}_log_target_{log_target}", lambda T, F, x, t, r=reduction, lt=log_target: F.kl_div(
            x, t, reduction=r, log_target=lt), log_input, target, facts=NO_NAME)
        target = target.copy()
        target[0, 0] = -np.inf if log_target else 0.0  # a zero probability
        _vs_torch(f"kl_div_{reduction}_log_target_{log_target}_zero_target", lambda T, F, x, t, r=reduction,
                  lt=log_target: F.kl_div(x, t.detach(), reduction=r, log_target=lt), log_input, target, facts=NO_NAME)


def _through_copy(T, a, b):
    y = a * 1
    y.copy_(b)
    return y


def _view_written_in_place(T, a, b):
    y = a * 1
    y[0].mul_(b[0])
    return y


# name -> (fn(T, *tensors), shapes): ops whose node torch does not have under the same name (composite in
# torch, in-place rewrites, several tensor arguments); values and gradients against torch, and gradcheck
EDGE = {
    "repeat_interleave": (lambda T, x: x.repeat_interleave(2, dim=1), [(2, 3)]),
    "repeat_interleave_tensor": (lambda T, x: x.repeat_interleave(T.tensor([1, 2, 0]), dim=1), [(2, 3)]),
    "repeat_interleave_flat": (lambda T, x: T.repeat_interleave(x, 2), [(2, 3)]),
    "lerp_tensor_weight": (lambda T, a, b, w: a.lerp(b, w), [(2, 3), (2, 3), (3,)]),
    "copy_": (_through_copy, [(2, 3), (3,)]),
    "zero_": (lambda T, a, b: (a * 1).zero_() + b, [(2, 3), (3,)]),
    "fill_number": (lambda T, a, b: (a * 1).fill_(2.0) * b, [(2, 3), (3,)]),
    "fill_tensor": (lambda T, a, b: (a * 1).fill_(b.sum()), [(2, 3), (3,)]),
    "view_written_in_place": (_view_written_in_place, [(2, 3), (2, 3)]),
    "diag_embed_dims": (lambda T, x: T.diag_embed(x, offset=1, dim1=0, dim2=2), [(2, 3)]),
    "diag_embed": (lambda T, x: T.diag_embed(x), [(2, 3)]),
}


# ---- more pointwise, shape and indexing ops (_ops/more.py) ----
def _inplace_on_copy(method, *args):
    def run(T, x):
        y = x * 1
        getattr(y, method)(*args)
        return y
    return run


UNARY.update({
    "acosh": (lambda T, x: (x.abs() + 1.5).acosh(), {}), "asinh": (lambda T, x: T.arcsinh(x), {}),
    "atanh": (lambda T, x: (x * 0.4).atanh(), {}), "deg2rad": (lambda T, x: T.deg2rad(x), {}),
    "rad2deg": (lambda T, x: x.rad2deg(), {}), "angle": (lambda T, x: T.angle(x) + x, {}),
    "copysign_number": (lambda T, x: x.copysign(-1.0), {}), "fix": (lambda T, x: T.fix(x), {}),
"exp2_": (_inplace_on_copy("exp2_"), {}),
    "log2_": (_inplace_on_copy("log2_"), {"positive": True}), "sinh_": (_inplace_on_copy("sinh_"), {}),
    "frac_": (_inplace_on_copy("frac_"), {}),
    "atan_": (_inplace_on_copy("atan_"), {}), "deg2rad_": (_inplace_on_copy("deg2rad_"), {}),
})

BINARY.update({
    "hypot": (lambda T, a, b: T.hypot(a, b), {}), "logaddexp": (lambda T, a, b: T.logaddexp(a, b), {}),
    "logaddexp2": (lambda T, a, b: a.logaddexp2(b), {}), "copysign": (lambda T, a, b: T.copysign(a, b), {}),
    "fmax": (lambda T, a, b: T.fmax(a, b), {}), "fmin": (lambda T, a, b: b.fmin(a), {}),
    "arctan2": (lambda T, a, b: T.arctan2(a, b), {}), "ldexp": (lambda T, a, b: a * T.ldexp(b, T.tensor(3)), {}),
})

EDGE.update({
    "renorm": (lambda T, x: x.renorm(2, 1, 1.0) + T.renorm(x, 1, 0, 2.0), [(2, 3, 2)]),
    "dist": (lambda T, a, b: T.dist(a, b) + a.dist(b, 3) + T.dist(a, b, 1), [(2, 3), (3,)]),
    "trapezoid": (lambda T, y: T.trapezoid(y), [(2, 4)]),
    "trapezoid_x": (lambda T, y, x: T.trapezoid(y, x, dim=0), [(3, 2), (3,)]),
    "trapz_dx": (lambda T, y: T.trapz(y, dx=0.5), [(2, 4)]),
    "cumulative_trapezoid": (lambda T, y, x: T.cumulative_trapezoid(y, x), [(2, 4), (2, 4)]),
    "cross": (lambda T, a, b: T.cross(a, b, dim=1), [(2, 3), (1, 3)]),
    "pdist": (lambda T, x: T.pdist(x), [(4, 3)]), "pdist1": (lambda T, x: T.pdist(x, 1), [(3, 2)]),
    "atleast": (lambda T, a, b: T.atleast_3d(a)[0] + T.atleast_2d(b).sum() + T.atleast_1d([a, b])[1].sum(), [(3,), ()]),
    "dstack": (lambda T, a, b: T.dstack([a, b]), [(2, 3), (2, 3)]),
    "row_stack": (lambda T, a, b: T.row_stack((a, b)), [(3,), (2, 3)]),
    "hvdsplit": (lambda T, x: T.hsplit(x, 2)[1] * T.vsplit(x, [1])[0].sum() + T.dsplit(x, (1,))[1][:, :2], [(2, 4, 2)]),
    "ravel": (lambda T, x: x.t().ravel(), [(2, 3)]),
    "rot90": (lambda T, x: T.rot90(x) + T.rot90(x, 3).flip(0).flip(1) + x.rot90(2, (1, 0)).rot90(2), [(3, 3)]),
    "take": (lambda T, x: T.take(x, T.tensor([[0, 5], [-1, 2]])), [(2, 3)]),
    "put": (lambda T, x, s: x.put(T.tensor([1, -1]), s), [(2, 3), (2,)]),
    "put_accumulate": (lambda T, x, s: T.put(x, T.tensor([1, 1]), s, accumulate=True), [(2, 3), (2,)]),
    "put_": (lambda T, x, s: (x * 1).put_(T.tensor([4, 0]), s), [(2, 3), (2,)]),
    "index_copy": (lambda T, x, s: x.index_copy(1, T.tensor([2, 0]), s), [(2, 3), (2, 2)]),
    "index_copy_": (lambda T, x, s: (x * 1).index_copy_(0, T.tensor([1]), s), [(2, 3), (1, 3)]),
    "index_fill": (lambda T, x: x.index_fill(1, T.tensor([0, 2]), -1.5), [(2, 3)]),
    "index_fill_tensor": (lambda T, x, v: T.index_fill(x, 0, T.tensor([1]), v.sum()), [(2, 3), (2,)]),
    "index_reduce_prod": (lambda T, x, s: x.index_reduce(0, T.tensor([0, 2, 0]), s, "prod"), [(3, 2), (3, 2)]),
    "index_reduce_mean": (lambda T, x, s: x.index_reduce(1, T.tensor([1, 1]), s, "mean", include_self=False)
                          + x.index_reduce(1, T.tensor([2, 1]), s, "mean"), [(2, 3), (2, 2)]),
    "index_reduce_amax": (lambda T, x, s: x.index_reduce(0, T.tensor([0, 2, 0]), s, "amax")
                          + T.index_reduce(x, 0, T.tensor([1, 1, 0]), s, "amin"), [(3, 2), (3, 2)]),
    "masked_scatter": (lambda T, x, s: x.masked_scatter(x > 0, s), [(2, 3), (3, 3)]),
    "masked_scatter_bcast": (lambda T, x, s: (x * 1).masked_scatter_(T.tensor([True, False, True]), s), [(2, 3), (5,)]),
    "diagflat": (lambda T, x: T.diagflat(x, 1) + 0, [(2, 2)]),
    "block_diag": (lambda T, a, b, c: T.block_diag(a, b, c), [(2, 2), (3,), ()]),
    "cartesian_prod": (lambda T, a, b: T.cartesian_prod(a, b), [(2,), (3,)]),
    "combinations": (lambda T, x: T.combinations(x, 2) + T.combinations(x, 2, with_replacement=True)[:3], [(3,)]),
    "split_with_sizes": (lambda T, x: x.split_with_sizes([1, 2], 1)[1] * T.unsafe_split(x, 2)[0].sum(), [(2, 3)]),
    "unsafe_chunk": (lambda T, x: T.unsafe_chunk(x, 2, 1)[1] + x.unsafe_split_with_sizes([2, 2], 1)[0], [(2, 4)]),
    "narrow_copy": (lambda T, x: T.narrow_copy(x, 1, 1, 2) + x.narrow_copy(0, 0, 1)[:, :2], [(2, 3)]),
    "copies": (lambda T, x: T.view_copy(x, (3, 2)).sum() + T.permute_copy(x, (1, 0)) + T.t_copy(x)
               + T.transpose_copy(x, 0, 1) + T.expand_copy(x[:, :1].t(), (3, 2)) + T.diagonal_copy(x).sum()
               + T.select_copy(x, 0, 1).unsqueeze(1) + T.slice_copy(x, 1, 0, 2).sum() + T.unsqueeze_copy(x, 0).sum()
               + T.squeeze_copy(x[None]).t() + T.alias_copy(x).t() + T.unbind_copy(x)[0].unsqueeze(1)
               + T.split_copy(x, 1)[1].t() + T.split_with_sizes_copy(x, [1, 1])[0].t()
               + T.as_strided_copy(x, (3, 2), (1, 3)), [(2, 3)]),
    "select_scatter": (lambda T, x, s: T.select_scatter(x, s, 1, 0), [(2, 3), (2,)]),
    "slice_scatter": (lambda T, x, s: x.slice_scatter(s, 1, 0, 3, 2), [(2, 3), (2, 2)]),
    "diagonal_scatter": (lambda T, x, s: T.diagonal_scatter(x, s, 1), [(3, 3), (2,)]),
    "fill": (lambda T, x, v: T.fill(x, v.sum()) * x, [(2, 3), (2,)]),
    "lerp_": (lambda T, a, b: (a * 1).lerp_(b, 0.25), [(2, 3), (3,)]),
    "hypot_": (lambda T, a, b: (a * 1).hypot_(b), [(2, 3), (3,)]),
    "copysign_": (lambda T, a, b: (a * 1).copysign_(b), [(2, 3), (2, 3)]),
    "torch_inplace_functions": (lambda T, x: T.sigmoid_(x * 1) + T.tanh_(x * 1) + T.sin_(x * 1) + T.exp_(x * 1)
                                + T.clamp_(x * 1, -1, 1) + T.cos_(x * 1) + T.clip_(x * 1, max=0.5), [(2, 3)]),
    "torch_inplace_functions2": (lambda T, x: T.rsqrt_(x * x + 1) + T.sqrt_(x * x + 1) + T.log1p_(x * x)
                                 + T.relu_(x * 1) + T.neg_(x * 1) + T.reciprocal_(x * x + 1) + T.abs_(x * 1)
                                 + T.square_(x * 1) + T.clamp_min_(x * 1, 0.1) + T.clamp_max_(x * 1, 0.1)
                                 + T.log_(x * x + 1) + T.expm1_(x * 1) + T.exp2_(x * 1) + T.tan_(x * 0.5)
                                 + T.sinh_(x * 1) + T.cosh_(x * 1) + T.atan_(x * 1) + T.asin_(x * 0.3)
                                 + T.acos_(x * 0.3) + T.arctan_(x * 1) + T.log2_(x * x + 1) + T.log10_(x * x + 1)
                                 + T.deg2rad_(x * 1) + T.rad2deg_(x * 1) + T.nan_to_num_(x * 1), [(2, 3)]),
    "atan2_": (lambda T, a, b: (a * 1).atan2_(b), [(2, 3), (3,)]),
    "inplace_shape_changes": (lambda T, x, w: (x * 1).unsqueeze_(1).squeeze_(1).unsqueeze_(0).squeeze_().t_()
                              .transpose_(0, 1).swapaxes_(1, 0) * w, [(2, 3), (3, 2)]),
    "squeeze_dims_": (lambda T, x: (x * 1).unsqueeze_(0).squeeze_((0,)) + (x * 1).unsqueeze_(1).squeeze_(-2),
                      [(2, 3)]),
    "inplace_squeeze_dims": (lambda T, x: (x * 1).unsqueeze_(-1).squeeze_((-1, 0)) * 2, [(1, 3)]),
    "cumsum_": (lambda T, x: (x * 1).cumsum_(1) + (x * 1).cumprod_(0), [(2, 3)]),
    "sum_to_size": (lambda T, x: x.sum_to_size(1, 3) * x.sum_to_size(2, 1), [(2, 3)]),
    "constant_pad_nd": (lambda T, x: T.constant_pad_nd(x, (1, 2), 0.5) + T.adjoint(x).sum(), [(2, 3)]),
})

# ---- ordering ----
UNARY.update({
    "sort": (lambda T, x: x.sort(1).values, {}), "sort_desc": (lambda T, x: x.sort(-1, descending=True)[0], {}),
    "sort_stable": (lambda T, x: T.sort(x, stable=True, dim=0).values, {}), "msort": (lambda T, x: T.msort(x), {}),
    "topk": (lambda T, x: x.topk(2, 1).values, {}), "topk_smallest": (lambda T, x: x.topk(3, largest=False)[0], {}),
    "kthvalue": (lambda T, x: x.kthvalue(2, 0).values, {}), "kthvalue_keep": (lambda T, x: x.kthvalue(3, -1, True)[0], {}),
    "median": (lambda T, x: x.median(), {}), "median_dim": (lambda T, x: x.median(1).values, {}),
    "nanmedian": (lambda T, x: x.nanmedian(), {}), "nanmedian_dim": (lambda T, x: x.nanmedian(-1, keepdim=True)[0], {}),
    "mode": (lambda T, x: x.mode(1).values, {}),
    "cummax": (lambda T, x: x.cummax(1).values, {}), "cummin": (lambda T, x: x.cummin(-1)[0], {}),
    "logcumsumexp": (lambda T, x: x.logcumsumexp(1), {}), "unfold": (lambda T, x: x.unfold(2, 2, 1), {}),
    "unfold_step": (lambda T, x: x.unfold(-1, 2, 2), {}),
})

DOUBLE_BACKWARD.update({
    "elu_family": lambda T, x: (T.nn.functional.elu(x, 0.7) * T.celu(x, 0.5) + T.selu(x) ** 2
                                + T.nn.functional.elu_(x * 1, 0.3) ** 2 + T.celu_(x * 2, 1.5) * x).sum(),
})
EDGE.update({
    "elu_family_saved": (lambda T, x: T.nn.functional.elu(x, 0.7) + T.selu(x) + T.celu(x, 0.7)
                         + T.nn.functional.elu_(x * 1, 0.3) + T.selu_(x * 1) + T.celu_(x * 1, 2.0), [(2, 3)]),
})
DOUBLE_BACKWARD.update({
    "sort": lambda T, x: (x.sort(1).values * T.arange(4.0, dtype=x.dtype)).pow(2).sum(),
    "topk": lambda T, x: x.topk(2, 0).values.pow(3).sum(),
    "kthvalue_median": lambda T, x: (x.kthvalue(2, 1).values * x.median(0).values.sum()).sum() + x.median() ** 2,
    "mode": lambda T, x: x.mode(1).values.pow(2).sum() * x.nanmedian(),
    "cummax": lambda T, x: (x.cummax(1).values ** 2).sum() + (x.cummin(0)[0] ** 3).sum(),
    "logcumsumexp": lambda T, x: (x.logcumsumexp(1) * x).sum(),
    "unfold": lambda T, x: (x.unfold(1, 3, 1) ** 2).sum() * x.sum(),
    "quantile": lambda T, x: (x.quantile(T.tensor([0.3, 0.8], dtype=x.dtype), dim=1) ** 2).sum(),
    "diff": lambda T, x: (x.diff(n=2) ** 2).sum(),
})

EDGE.update({
    "quantile": (lambda T, x: x.quantile(0.3), [(3, 4)]),
    "quantile_q_dim": (lambda T, x: T.quantile(x, T.tensor([0.0, 0.4, 1.0], dtype=x.dtype), dim=0, keepdim=True),
                       [(3, 4)]),
    "quantile_midpoint": (lambda T, x: x.quantile(0.4, dim=1, interpolation="midpoint"), [(3, 4)]),
    "quantile_nearest": (lambda T, x: x.quantile(0.5, dim=-1, interpolation="nearest"), [(3, 4)]),
    "quantile_lower_higher": (lambda T, x: x.quantile(0.3, 0, interpolation="lower") * x.quantile(
        0.3, 0, interpolation="higher"), [(3, 4)]),
    "nanquantile": (lambda T, x: T.nanquantile(x, 0.7, dim=1), [(3, 4)]),
    "diff": (lambda T, x: x.diff(), [(3, 4)]),
    "diff_n_dim": (lambda T, x: T.diff(x, n=2, dim=0), [(4, 3)]),
    "diff_prepend_append": (lambda T, a, b: T.diff(a, dim=1, prepend=b, append=b * 2), [(2, 3), (2, 2)]),
    "column_stack": (lambda T, a, b: T.column_stack([a, b, a[:, 0]]), [(3, 2), (3,)]),
})

# ---- special functions (torch.special, torch.erf/lgamma/..., their Tensor forms) ----
UNARY.update({
    "special_erf": (lambda T, x: T.special.erf(x), {}), "erfc": (lambda T, x: x.erfc(), {}),
    "erfinv": (lambda T, x: (x * 0.4).erfinv(), {}), "erfcx": (lambda T, x: T.special.erfcx(x), {}),
    "lgamma": (lambda T, x: x.lgamma(), {"positive": True}), "digamma": (lambda T, x: x.digamma(), {"positive": True}),
    "polygamma2": (lambda T, x: T.polygamma(2, x), {"positive": True}),
    "polygamma_": (lambda T, x: (x * 1).polygamma_(1), {"positive": True}),
    "mvlgamma": (lambda T, x: x.mvlgamma(2), {"positive": True}), "i0": (lambda T, x: x.i0(), {}),
    "i0e": (lambda T, x: T.special.i0e(x), {}), "i1": (lambda T, x: T.special.i1(x), {}),
    "i1e": (lambda T, x: T.special.i1e(x), {}), "ndtri": (lambda T, x: T.special.ndtri(x.sigmoid()), {}),
    "log_ndtr": (lambda T, x: T.special.log_ndtr(x), {}), "sinc": (lambda T, x: x.sinc(), {}),
    "entr": (lambda T, x: T.special.entr(x), {"positive": True}), "logit": (lambda T, x: x.sigmoid().logit(), {}),
    "logit_eps": (lambda T, x: T.logit(x.sigmoid(), eps=0.2), {}),
    "xlogy_number_self": (lambda T, x: T.xlogy(2.0, x), {"positive": True}),
    "xlogy_number_other": (lambda T, x: x.xlogy(3.0), {}),
    "xlog1py_number_self": (lambda T, x: T.special.xlog1py(2.0, x), {"positive": True}),
    "xlog1py_number_other": (lambda T, x: T.special.xlog1py(x, 0.5), {}),
    "zeta_number_self": (lambda T, x: T.special.zeta(2.5, x), {"positive": True}),
    "zeta_q": (lambda T, x: T.special.zeta(T.full_like(x, 3.0), x), {"positive": True}),
    "igamma": (lambda T, x: T.igamma(T.full_like(x, 1.5), x), {"positive": True}),
    "igammac": (lambda T, x: T.igammac(T.full_like(x, 0.7), x), {"positive": True}),
})
BINARY.update({
    "xlogy": (lambda T, a, b: T.xlogy(a, b), {"positive": True}),
    "xlog1py": (lambda T, a, b: T.special.xlog1py(a, b), {"positive": True}),
})

# ---- linalg decompositions ----
def _spd(T, a):
    return a @ a.mT + a.shape[-1] * T.eye(a.shape[-1], dtype=a.dtype)


def _well(T, a):  # a square matrix safely away from singular
    return a + 4 * T.eye(a.shape[-1], dtype=a.dtype)


def _svd_invariants(U, S, Vh):
    """Sign-free functions of the factors: the squared entries of U and Vh, and S."""
    return (U * U).sum(-2) * 0.3 + (U * U)[..., 0, :] + (Vh * Vh)[..., :, -1] + S * 1.5


LINALG = {
    "linalg_svd": (lambda T, a: _svd_invariants(*T.linalg.svd(a, full_matrices=False)), [(2, 4, 3)]),
    "linalg_svd_wide": (lambda T, a: _svd_invariants(*T.linalg.svd(a, full_matrices=False)), [(3, 5)]),
    "linalg_svd_S_only": (lambda T, a: T.linalg.svd(a)[1], [(4, 3)]),
    "linalg_svd_product": (lambda T, a: (lambda r: (r.U * r.S.unsqueeze(-2)) @ r.Vh)(T.linalg.svd(a, False)), [(2, 3, 3)]),
    "svdvals": (lambda T, a: T.linalg.svdvals(a), [(2, 3, 5)]),
    "torch_svd": (lambda T, a: (lambda r: r.U.abs() + r.V.abs().sum() + r.S)(T.svd(a)), [(4, 3)]),
    "linalg_qr": (lambda T, a: T.cat([x.flatten() for x in T.linalg.qr(a)]), [(2, 4, 3)]),
    "linalg_qr_square": (lambda T, a: T.cat([x.flatten() for x in T.linalg.qr(a)]), [(3, 3)]),
    "linalg_qr_wide": (lambda T, a: T.cat([x.flatten() for x in T.linalg.qr(a)]), [(3, 5)]),
    "linalg_qr_complete_wide": (lambda T, a: T.cat([x.flatten() for x in T.linalg.qr(a, mode="complete")]), [(2, 4)]),
    "linalg_qr_R_only": (lambda T, a: T.linalg.qr(a)[1], [(4, 3)]),
    "torch_qr": (lambda T, a: T.qr(a)[0] * 2, [(4, 3)]),
    "linalg_eigh": (lambda T, a: (lambda r: T.cat([r[0], (r[1] * r[1]).flatten()]))(T.linalg.eigh(_spd(T, a))), [(3, 3)]),
    "linalg_eigh_upper": (lambda T, a: (lambda r: r[0] + (r[1] ** 2).sum(-1))(T.linalg.eigh(a + a.mT, UPLO="U")), [(2, 4, 4)]),
    "eigvalsh": (lambda T, a: T.linalg.eigvalsh(a + a.mT), [(2, 3, 3)]),
    "linalg_cholesky": (lambda T, a: T.linalg.cholesky(_spd(T, a)), [(2, 3, 3)]),
    "linalg_cholesky_upper": (lambda T, a: T.linalg.cholesky(_spd(T, a), upper=True), [(3, 3)]),
    "cholesky_ex": (lambda T, a: T.linalg.cholesky_ex(_spd(T, a)).L, [(4, 4)]),
    "cholesky_solve": (lambda T, a, b: T.cholesky_solve(b, T.linalg.cholesky(_spd(T, a))), [(3, 3), (3, 2)]),
    "cholesky_solve_upper": (lambda T, a, b: T.cholesky_solve(b, T.linalg.cholesky(_spd(T, a), upper=True), upper=True),
                             [(3, 3), (2, 3, 2)]),
    "cholesky_inverse": (lambda T, a: T.cholesky_inverse(T.linalg.cholesky(_spd(T, a))), [(3, 3)]),
    "solve_triangular": (lambda T, a, b: T.linalg.solve_triangular(_well(T, a), b, upper=True), [(3, 3), (2, 3, 2)]),
    "solve_triangular_right": (lambda T, a, b: T.linalg.solve_triangular(_well(T, a), b, upper=False, left=False),
                               [(2, 3, 3), (4, 3)]),
    "solve_triangular_unit": (lambda T, a, b: T.linalg.solve_triangular(a, b, upper=False, unitriangular=True),
                              [(3, 3), (3, 2)]),
    "triangular_solve": (lambda T, b, a: T.cat([x.flatten() for x in T.triangular_solve(b, _well(T, a), upper=False)]),
                         [(3, 2), (3, 3)]),
    "triangular_solve_transpose": (lambda T, b, a: T.triangular_solve(b, _well(T, a), transpose=True)[0],
                                   [(3, 2), (3, 3)]),
    "linalg_lu": (lambda T, a: T.cat([x.flatten() for x in T.linalg.lu(a)]), [(2, 3, 3)]),
    "linalg_lu_tall": (lambda T, a: T.cat([x.flatten() for x in T.linalg.lu(a)]), [(5, 3)]),
    "linalg_lu_wide": (lambda T, a: T.cat([x.flatten() for x in T.linalg.lu(a)]), [(3, 5)]),
    "lu_factor": (lambda T, a: T.linalg.lu_factor(a).LU, [(2, 4, 4)]),
    "lu_factor_tall": (lambda T, a: T.linalg.lu_factor(a).LU, [(4, 2)]),
    "lu_solve": (lambda T, a, b: T.linalg.lu_solve(*T.linalg.lu_factor(_well(T, a)), b), [(3, 3), (3, 2)]),
    "lu_solve_adjoint": (lambda T, a, b: T.linalg.lu_solve(*T.linalg.lu_factor(_well(T, a)), b, adjoint=True),
                         [(3, 3), (3, 2)]),
    "lu_solve_right": (lambda T, a, b: T.linalg.lu_solve(*T.linalg.lu_factor(_well(T, a)), b, left=False),
                       [(3, 3), (2, 3)]),
    "lu_solve_right_adjoint": (lambda T, a, b: T.linalg.lu_solve(*T.linalg.lu_factor(_well(T, a)), b, left=False,
                                                                 adjoint=True), [(3, 3), (2, 3)]),
    "lu_unpack": (lambda T, a: T.cat([x.flatten() for x in T.lu_unpack(*T.linalg.lu_factor(a))]), [(3, 3)]),
    "torch_lu_solve": (lambda T, a, b: T.lu_solve(b, *T.linalg.lu_factor(_well(T, a))), [(3, 3), (3, 1)]),
    "pinv": (lambda T, a: T.linalg.pinv(a), [(2, 4, 3)]),
    "pinv_wide": (lambda T, a: T.linalg.pinv(a), [(3, 5)]),
    "pinv_hermitian": (lambda T, a: T.linalg.pinv(_spd(T, a), hermitian=True), [(3, 3)]),
    "pinverse": (lambda T, a: a.pinverse(), [(3, 2)]),
    "lstsq": (lambda T, a, b: T.linalg.lstsq(a, b).solution, [(5, 3), (5, 2)]),
    "lstsq_wide": (lambda T, a, b: T.linalg.lstsq(a, b, driver="gelsd").solution, [(2, 4), (2, 3)]),
    "lstsq_batch": (lambda T, a, b: T.linalg.lstsq(a, b).solution, [(2, 4, 3), (1, 4, 1)]),
    "lstsq_vector": (lambda T, a, b: T.linalg.lstsq(a, b).solution, [(2, 4, 3), (2, 4)]),
    "matrix_exp": (lambda T, a: T.linalg.matrix_exp(a), [(2, 3, 3)]),
    "matrix_exp_method": (lambda T, a: (a * 0.5).matrix_exp(), [(4, 4)]),
    "matrix_power": (lambda T, a: T.linalg.matrix_power(a, 3), [(2, 3, 3)]),
    "matrix_power_neg": (lambda T, a: T.linalg.matrix_power(_well(T, a), -2), [(3, 3)]),
    "matrix_power_method": (lambda T, a: a.matrix_power(1) + T.matrix_power(a, 0), [(3, 3)]),
    "cond": (lambda T, a: T.linalg.cond(a), [(2, 3, 3)]),
    "cond_m2": (lambda T, a: T.linalg.cond(a, -2), [(3, 3)]),
    "matrix_norm_nuc": (lambda T, a: T.linalg.matrix_norm(a, "nuc"), [(2, 3, 4)]),
    "matrix_norm_2": (lambda T, a: T.linalg.matrix_norm(a, 2, keepdim=True), [(2, 3, 4)]),
    "matrix_norm_m2": (lambda T, a: T.linalg.matrix_norm(a, -2, dim=(0, 2)), [(3, 2, 4)]),
    "matrix_norm_1": (lambda T, a: T.linalg.matrix_norm(a, 1), [(2, 3, 4)]),
    "matrix_norm_minf": (lambda T, a: T.linalg.matrix_norm(a, -float("inf"), dim=(2, 0), keepdim=True), [(2, 3, 4)]),
    "linalg_norm_ord": (lambda T, a: T.linalg.norm(a, 1), [(3, 4)]),
    "linalg_norm_vec": (lambda T, a: T.linalg.norm(a, 3, dim=1), [(3, 4)]),
    "logdet": (lambda T, a: T.logdet(_spd(T, a)) + _well(T, a).logdet(), [(3, 3)]),
    "householder_product": (lambda T, a, tau: T.linalg.householder_product(a, tau), [(4, 3), (2,)]),
    "householder_product_batch": (lambda T, a, tau: T.linalg.householder_product(a, tau), [(2, 3, 3), (2, 3)]),
    "orgqr": (lambda T, a, tau: T.orgqr(a, tau), [(3, 2), (2,)]),
    "trace": (lambda T, a: T.trace(a) + a.trace(), [(3, 4)]),
    "kron": (lambda T, a, b: T.kron(a, b), [(2, 3), (3, 1, 2)]),
    "multi_dot": (lambda T, a, b, c: T.linalg.multi_dot([a, b, c]), [(3,), (3, 4), (4, 2)]),
    "multi_dot_vec": (lambda T, a, b, c: T.linalg.multi_dot([a, b, c]), [(3,), (3, 4), (4,)]),
    "chain_matmul": (lambda T, a, b: T.chain_matmul(a, b, a.mT), [(2, 3), (3, 3)]),
    "vecdot": (lambda T, a, b: T.linalg.vecdot(a, b), [(2, 3), (3,)]),
    "tensorinv": (lambda T, a: T.linalg.tensorinv(_well(T, a).reshape(2, 3, 6), ind=2), [(6, 6)]),
    "tensorsolve": (lambda T, a, b: T.linalg.tensorsolve(_well(T, a).reshape(6, 2, 3), b), [(6, 6), (6,)]),
    "linalg_vander": (lambda T, a: T.linalg.vander(a, N=4), [(2, 3)]),
    "linalg_diagonal": (lambda T, a: T.linalg.diagonal(a, offset=1), [(2, 3, 4)]),
    "inv_ex": (lambda T, a: T.linalg.inv_ex(_well(T, a)).inverse, [(2, 3, 3)]),
    "solve_ex": (lambda T, a, b: T.linalg.solve_ex(_well(T, a), b).result, [(3, 3), (3, 2)]),
    "solve_ex_right": (lambda T, a, b: T.linalg.solve_ex(_well(T, a), b, left=False).result, [(3, 3), (2, 3)]),
    "linalg_cross": (lambda T, a, b: T.linalg.cross(a, b), [(2, 3), (1, 3)]),
    "torch_cross": (lambda T, a, b: T.cross(a, b, dim=0) + a.cross(b, 0), [(3, 2), (3, 2)]),
    "ormqr": (lambda T, a, tau, c: T.ormqr(a, tau, c), [(4, 3), (3,), (4, 2)]),
    "ormqr_right_transpose": (lambda T, a, tau, c: a.ormqr(tau, c, left=False, transpose=True), [(3, 3), (3,), (2, 3)]),
}
EDGE.update(LINALG)

# ---- API breadth: torch.* names of the nn kernels, Tensor methods, losses, LP pooling ----
def _signs(T, *shape):
    return T.tensor(np.sign(np.random.default_rng(5).standard_normal(shape)), dtype=T.float64)


def _positive(T, *shape):
    return T.tensor(np.random.default_rng(6).uniform(0.2, 3.0, shape), dtype=T.float64)


BREADTH = {
    "cosine_embedding_loss": (lambda T, a, b: T.nn.functional.cosine_embedding_loss(a, b.flip(1), T.tensor([1, -1, -1]),
                                                                                   margin=-0.3), [(3, 4), (3, 4)]),
    "cosine_embedding_loss_1d": (lambda T, a, b: T.cosine_embedding_loss(a, b.flip(0), T.tensor(-1), -0.9, 0), [(4,), (4,)]),
    "hinge_embedding_loss": (lambda T, x: T.nn.functional.hinge_embedding_loss(x, _signs(T, 3, 4), margin=1.5,
                                                                               reduction="sum"), [(3, 4)]),
    "hinge_embedding_loss_torch": (lambda T, x: T.hinge_embedding_loss(x, _signs(T, 4), 1.0, 0), [(3, 4)]),
    "margin_ranking_loss": (lambda T, a, b: T.nn.functional.margin_ranking_loss(a, b.flip(0), _signs(T, 5), margin=0.3),
                            [(5,), (5,)]),
    "margin_ranking_loss_torch": (lambda T, a, b: T.margin_ranking_loss(a, b.flip(1), _signs(T, 2, 3), 0.1, 2),
                                  [(2, 3), (2, 3)]),
    "triplet_margin_loss": (lambda T, a, p, n: T.nn.functional.triplet_margin_loss(a, p * 0.7 + 0.3, n.flip(1) * 0.8, margin=2.0,
                                                                                   p=1.5, swap=True), [(3, 4)] * 3),
    "triplet_margin_loss_torch": (lambda T, a, p, n: T.triplet_margin_loss(a, p.flip(1), n * 0.5, 1.0, 2.0, 1e-6, False, 0),
                                  [(2, 3, 4)] * 3),
    "triplet_margin_with_distance_loss": (lambda T, a, p, n: T.nn.functional.triplet_margin_with_distance_loss(
        a, p.flip(0), n * 0.5 + 0.2, distance_function=lambda x, y: ((x - y) ** 2).sum(-1), margin=3.0, swap=True, reduction="none"),
        [(3, 4)] * 3),
    "poisson_nll_loss": (lambda T, x: T.nn.functional.poisson_nll_loss(x, _positive(T, 3, 4) * 2, full=True),
                         [(3, 4)]),
    "poisson_nll_loss_rate": (lambda T, x: T.poisson_nll_loss(x.abs() + 0.2, _positive(T, 3, 4), False, True, 1e-8, 2),
                              [(3, 4)]),
    "gaussian_nll_loss": (lambda T, x, y, v: T.nn.functional.gaussian_nll_loss(x, y.flip(1), v * v + 0.1, full=True),
                          [(3, 4), (3, 4), (3, 4)]),
    "gaussian_nll_loss_homoscedastic": (lambda T, x, y, v: T.nn.functional.gaussian_nll_loss(
        x, y.flip(0), v.abs() + 0.2, reduction="none"), [(3, 4), (3, 4), (3,)]),
    "soft_margin_loss": (lambda T, x: T.nn.functional.soft_margin_loss(x, _signs(T, 3, 4)), [(3, 4)]),
    "multilabel_soft_margin_loss": (lambda T, x, y: T.nn.functional.multilabel_soft_margin_loss(
        x, (y.flip(1) > 0).to(x.dtype), weight=T.tensor([0.5, 1.0, 2.0, 1.5], dtype=x.dtype)), [(3, 4), (3, 4)]),
    "multi_margin_loss": (lambda T, x: T.nn.functional.multi_margin_loss(x, T.tensor([0, 3, 1]), margin=0.8),
                          [(3, 4)]),
    "multi_margin_loss_p2_weight": (lambda T, x: T.nn.functional.multi_margin_loss(
        x, T.tensor([2, 2, 0]), p=2, weight=T.tensor([0.5, 1.0, 2.0, 1.5], dtype=x.dtype), reduction="none"),
        [(3, 4)]),
    "multi_margin_loss_1d": (lambda T, x: T.nn.functional.multi_margin_loss(x, T.tensor(1), reduction="sum"), [(4,)]),
    "multilabel_margin_loss": (lambda T, x: T.nn.functional.multilabel_margin_loss(
        x, T.tensor([[3, 0, -1, 1], [1, 1, 2, -1], [-1, 0, 0, 0]]), reduction="none"), [(3, 4)]),
    "multilabel_margin_loss_1d": (lambda T, x: T.nn.functional.multilabel_margin_loss(x, T.tensor([2, 0, -1, 3])),
                                  [(4,)]),
    "lp_pool1d": (lambda T, x: T.nn.functional.lp_pool1d(x.abs() + 0.1, 2, 3, 2), [(2, 3, 7)]),
    "lp_pool2d": (lambda T, x: T.nn.functional.lp_pool2d(x.abs() + 0.1, 3.0, 2, ceil_mode=True), [(1, 2, 5, 4)]),
    "lp_pool3d": (lambda T, x: T.nn.functional.lp_pool3d(x.abs() + 0.1, 1.5, (1, 2, 2)), [(1, 1, 2, 4, 4)]),
    "lp_pool_inf": (lambda T, x: T.nn.functional.lp_pool1d(x, float("inf"), 2) + T.nn.functional.lp_pool1d(
        x, -float("inf"), 2), [(1, 2, 6)]),
    "torch_kl_div": (lambda T, a, b: T.kl_div(a.log_softmax(1), b.flip(1).softmax(1), 2) + T.kl_div(a, b.flip(0), 0, log_target=True).sum(),
                     [(2, 3), (2, 3)]),
    "torch_bce_with_logits": (lambda T, a, b: T.binary_cross_entropy_with_logits(a, b.flip(1).sigmoid(), None, T.tensor([0.5, 2.0, 1.0], dtype=a.dtype), 1),
                              [(2, 3), (2, 3)]),
    "torch_norms": (lambda T, x, w, b: T.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, False)
                    + T.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False)
                    + T.layer_norm(x, (4,), None, None, 1e-5, True) + T.group_norm(x, 3, w, b),
                    [(2, 3, 4), (3,), (3,)]),
    "torch_embedding": (lambda T, w: T.embedding(w, T.tensor([[0, 3], [3, 1]]), 2) + T.embedding(w, T.tensor([1, 1]), -1), [(4, 2)]),
    "torch_max_pool": (lambda T, x: T.max_pool1d(x, 2, [], 1) + T.max_pool1d_with_indices(x, 2, 1, 1)[0][..., ::1][..., :4],
                       [(1, 2, 6)]),
    "torch_max_pool2d_3d": (lambda T, x: T.max_pool2d(x, 2).sum() + T.max_pool3d(x.unsqueeze(0), (1, 2, 2), [], 0).sum(),
                            [(1, 4, 4)]),
    "torch_adaptive_max_pool1d": (lambda T, x: T.adaptive_max_pool1d(x, 3)[0], [(2, 7)]),
    "torch_activations": (lambda T, x: T.celu(x, 0.5) + T.selu(x) + T.threshold(x, 0.1, -2.0) + T.rrelu(x), [(3, 4)]),
    "inplace_activations": (lambda T, x: T.celu_(x * 1, 0.5) + T.selu_(x * 1) + T.threshold_(x * 1, 0.1, 2.0)
                            + T.nn.functional.elu_(x * 1) + T.nn.functional.hardtanh_(x * 1, -0.5, 0.5)
                            + T.nn.functional.leaky_relu_(x * 1, 0.2) + T.rrelu_(x * 1), [(3, 4)]),
    "torch_dropout_eval": (lambda T, x: T.dropout(x, 0.5, False) + T.alpha_dropout(x, 0.3, False)
                           + T.feature_alpha_dropout(x, 0.3, False) + T.feature_dropout(x, 0.5, False), [(2, 3)]),
    "conv_tbc": (lambda T, x, w, b: T.conv_tbc(x, w, b, 1), [(5, 2, 3), (3, 3, 4), (4,)]),
    "cov": (lambda T, x: T.cov(x), [(3, 5)]),
    "cov_weights": (lambda T, x, a: T.cov(x, correction=2, fweights=T.tensor([1, 2, 0, 3, 1]), aweights=a.abs() + 0.1),
                    [(2, 5), (5,)]),
    "cov_1d": (lambda T, x: x.cov(correction=0), [(4,)]),
    "corrcoef": (lambda T, x: T.corrcoef(x) + x.corrcoef(), [(3, 5)]),
    "addbmm": (lambda T, m, a, b: T.addbmm(m, a, b, beta=0.5, alpha=2.0), [(3,), (2, 4, 5), (2, 5, 3)]),
    "addbmm_": (lambda T, m, a, b: (m * 1).addbmm_(a, b), [(4, 3), (2, 4, 5), (2, 5, 3)]),
    "addr": (lambda T, m, u, v: T.addr(m, u, v, alpha=3.0) + m.addr(u.flip(0), v.flip(0), beta=0)
             + (m * 1).addr_(u, v, beta=2.0), [(3, 2), (3,), (2,)]),
    "addmm_addmv_baddbmm_methods": (lambda T, m, a, b: (m * 1).addmm_(a, b).sum() + m[0].addmv(a, b[:, 0], beta=2.0).sum()
                                    + (m[0] * 1).addmv_(a, b[:, 1]).sum() + m.baddbmm(a[None], b[None]).sum()
                                    + (m[None] * 1).baddbmm_(a[None], b[None], alpha=0.5).sum() + T.addmv_(m[1] * 1, a, b[:, 0]).sum(),
                                    [(3, 3), (3, 4), (4, 3)]),
    "hardshrink": (lambda T, x: x.hardshrink(0.3) + T.hardshrink(x) + T.nn.functional.hardshrink(x, 1.0), [(3, 4)]),
    "prelu_method": (lambda T, x, w: x.prelu(w) + T.prelu(x, w[:1]), [(2, 3, 4), (3,)]),
    "vdot_method": (lambda T, a, b: a.vdot(b.flip(0)) * T.vdot(b, a), [(4,), (4,)]),
    "inplace_special_functions": (lambda T, x, y: T.erf_(x * 1) + T.erfc_(x * 1) + T.i0_(x * 1) + T.sinc_(x * 1)
                                  + T.xlogy_(x * x + 0.5, y.flip(1) * y.flip(1) + 0.5), [(2, 3), (2, 3)]),
    "ctc_loss": (lambda T, x: T.nn.functional.ctc_loss(x.log_softmax(2), T.tensor([[1, 2, 2], [3, 1, 3]]), (6, 6),
                                                        (3, 3)), [(6, 2, 4)]),
    "ctc_loss_flat_targets": (lambda T, x: T.ctc_loss(x.log_softmax(1), T.tensor([2, 1]), (5,), (2,), 0, 0),
                              [(5, 3)]),
    "ctc_loss_lengths": (lambda T, x: T.nn.functional.ctc_loss(x.log_softmax(2), T.tensor([[1, 1, 2], [2, 1, 0]]),
                                                                T.tensor([5, 5]), T.tensor([2, 2]), reduction="sum"),
                         [(5, 2, 3)]),
    "fractional_max_pool2d": (lambda T, x: T.nn.functional.fractional_max_pool2d(
        x, (2, 3), (3, 4), _random_samples=T.tensor([[[0.3, 0.8], [0.05, 0.5]]], dtype=x.dtype)), [(1, 2, 6, 7)]),
    "fractional_max_pool3d": (lambda T, x: T.nn.functional.fractional_max_pool3d(
        x, 2, output_ratio=(0.6, 0.5, 0.7), _random_samples=T.tensor([[[0.2, 0.9, 0.4]]], dtype=x.dtype)),
        [(1, 5, 6, 6)]),
    "cdist": (lambda T, a, b: T.cdist(a, b, p=1.0).sum() + T.cdist(a, b, p=3.0).sum() + T.cdist(a, b).sum()
              + T.cdist(a, b, p=float("inf")).sum(), [(2, 3, 4), (1, 5, 4)]),
    "cdist_by_product": (lambda T, a, b: T.cdist(a, b * 0.7 + 0.3, compute_mode="use_mm_for_euclid_dist"), [(3, 4), (5, 4)]),
    "channel_shuffle": (lambda T, x: T.nn.functional.channel_shuffle(x, 2) + T.nn.ChannelShuffle(3)(x), [(2, 6, 3)]),
    "affine_grid": (lambda T, th: T.nn.functional.affine_grid(th, (2, 1, 3, 4), False), [(2, 2, 3)]),
    "poisson_zero_rates": (lambda T, x: T.poisson(x.abs() * 0) + x, [(2, 3)]),
    "native_group_norm_stats": (lambda T, x, w, b: (lambda r: r[0].sum() + r[1].sum() * 2 + r[2].sum())(
        T.native_group_norm(x, w, b, 2, 4, 3, 2, 1e-5)), [(2, 4, 3), (4,), (4,)]),
}
EDGE.update(BREADTH)
# interpolate (one upsample node per call; its backward's node the other of its pair) and the fused
# path of conv3d at stride 1 (a shifted gather on the input's grid)
EDGE.update({
    "interpolate_bilinear_and_nearest": (lambda T, x: T.nn.functional.interpolate(x, size=(5, 7), mode="bilinear")
                                         + T.nn.functional.interpolate(x, size=(5, 7)), [(1, 2, 3, 4)],
                                         {"gradgradcheck": True}),
    "conv3d_stride_one": (lambda T, x, w: T.nn.functional.conv3d(x, w, padding=1, dilation=(1, 2, 1)),
                          [(1, 2, 4, 5, 3), (3, 2, 2, 2, 2)], {"gradgradcheck": True}),
})

# interpolate: one torch upsample node per call and mode (and its backward's node under create_graph)
EDGE.update({
    f"interpolate_{mode}_{len(shape) - 2}d": (lambda T, x, mode=mode, kw=kw: T.nn.functional.interpolate(x, mode=mode, **kw),
                                              [shape], {"gradgradcheck": True, "facts": (GRAD_FN, SAVED, PACK_ORDER)})
    for mode, shape, kw in [
        ("nearest", (2, 3, 4), dict(scale_factor=1.5)), ("nearest", (1, 2, 3, 4), dict(size=(5, 3))),
        ("nearest", (1, 1, 2, 3, 2), dict(scale_factor=2)), ("nearest-exact", (2, 2, 5), dict(size=3)),
        ("nearest-exact", (1, 2, 3, 3), dict(scale_factor=(2, 1.5))), ("nearest-exact", (1, 1, 2, 2, 3), dict(size=(3, 3, 2))),
        ("linear", (2, 2, 4), dict(scale_factor=1.75)), ("bilinear", (1, 2, 3, 4), dict(size=(5, 3), align_corners=True)),
        ("trilinear", (1, 1, 2, 3, 2), dict(scale_factor=(1.5, 2, 1))), ("bicubic", (1, 2, 3, 4), dict(scale_factor=2.5)),
    ]})

# second derivatives of these are compared with finite differences (test_layers_breadth.py)
BREADTH_SECOND_ORDER = ["cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss", "triplet_margin_loss",
                        "poisson_nll_loss", "gaussian_nll_loss", "soft_margin_loss", "multilabel_soft_margin_loss",
                        "multi_margin_loss_p2_weight", "multilabel_margin_loss", "lp_pool1d", "lp_pool2d",
                        "torch_kl_div", "torch_norms", "cov_weights", "addbmm", "affine_grid", "addr", "conv_tbc",
                        "torch_activations"]

# ---- complex tensors and torch.fft ----
# Rows take real float64 tensors, build complex ones inside (view_as_complex, complex, polar) and end
# in a real output, so values, gradients and gradcheck cover torch's complex gradient convention.
def _cplx(T, x):
    return T.view_as_complex(x)


COMPLEX = {
    "complex_parts": (lambda T, x: T.view_as_real(_cplx(T, x).conj() * 2) + _cplx(T, x).real.unsqueeze(-1)
                      - _cplx(T, x).imag.unsqueeze(-1), [(3, 4, 2)]),
    "complex_polar": (lambda T, r, a, z: T.view_as_real(T.polar(r.abs() + 0.5, a) * _cplx(T, z)
                                                        + T.complex(r, a.flip(0))), [(3, 4), (3, 4), (3, 4, 2)]),
    "complex_abs_angle_sgn": (lambda T, x: _cplx(T, x).abs() + _cplx(T, x).angle() * 2
                              + T.view_as_real(_cplx(T, x).sgn()).sum(-1), [(3, 4, 2)]),
    "complex_mul_div_exp": (lambda T, x, y: T.view_as_real((_cplx(T, x) * _cplx(T, y)).exp()
                                                           + _cplx(T, x) / (_cplx(T, y) + 3)
                                                           + _cplx(T, x).conj_physical() * 0.5), [(3, 2), (3, 2)]),
    "complex_holomorphic_unary": (lambda T, x: T.view_as_real(
        (_cplx(T, x) * 0.3).sigmoid() + (_cplx(T, x) * 0.3).tanh() + (_cplx(T, x) + 3).log() + (_cplx(T, x) + 3).sqrt()
        + (_cplx(T, x) * 0.5).sin() + (_cplx(T, x) * 0.5).cos() + (_cplx(T, x) + 3).reciprocal()
        + _cplx(T, x).pow(3)), [(4, 2)]),
    "complex_matmul_sum_prod": (lambda T, a, b: T.view_as_real(
        (_cplx(T, a) @ _cplx(T, b)).sum(0) + T.einsum("ij,jk->k", _cplx(T, a), _cplx(T, b))
        + _cplx(T, a).prod(1).mean() + T.bmm(_cplx(T, a)[None], _cplx(T, b)[None])[0, 0]
        + T.vdot(_cplx(T, a)[0], _cplx(T, b)[:, 0])), [(2, 3, 2), (3, 2, 2)]),
    "complex_real_mix": (lambda T, x, r: T.view_as_real(r * _cplx(T, x) + (r + 1j) / (_cplx(T, x) + 3)
                                                        + r.to(T.cdouble) * 1j), [(3, 2), (3,)]),
}
FFT = {
    "fft_c2c": (lambda T, z, x: T.view_as_real(T.fft.fft(_cplx(T, z)) + T.fft.ifft(x, n=5, norm="ortho")
                                               + T.fft.fft2(_cplx(T, z), s=(3, 5), norm="forward")
                                               + T.fft.ifftn(_cplx(T, z), dim=0)[:, :5]), [(3, 5, 2), (3, 4)]),
    "fft_rfft": (lambda T, x: T.view_as_real(T.fft.rfft(x) + T.fft.rfft(x, n=6, norm="ortho")[:, :4]
                                             + T.fft.rfft2(x, norm="forward")), [(3, 6)]),
    "fft_rfftn_pad": (lambda T, x: T.view_as_real(T.fft.rfftn(x, s=(4, 7))), [(3, 5)]),
    "fft_irfft": (lambda T, z: T.fft.irfft(_cplx(T, z)) + T.fft.irfft(_cplx(T, z), n=8, norm="ortho")
                  + T.fft.irfft2(_cplx(T, z), norm="forward"), [(3, 5, 2)]),
    "fft_irfft_odd": (lambda T, z: T.fft.irfftn(_cplx(T, z), s=(2, 7)) + T.fft.irfft(_cplx(T, z), n=7, dim=-1)[:2],
                      [(3, 5, 2)]),
    "fft_hfft": (lambda T, z: T.fft.hfft(_cplx(T, z)) + T.fft.hfft2(_cplx(T, z), norm="ortho")
                 + T.fft.hfftn(_cplx(T, z), s=(3, 8), norm="forward"), [(3, 5, 2)]),
    "fft_ihfft": (lambda T, x: T.view_as_real(T.fft.ihfft(x).resolve_conj() + T.fft.ihfft2(x, norm="ortho")
                                              + T.fft.ihfftn(x, s=(3, 7), norm="forward")[:, :4]), [(3, 6)]),
    "fft_shift_freq": (lambda T, x: T.fft.fftshift(x) * T.fft.fftfreq(6, dtype=x.dtype) + T.fft.ifftshift(x, dim=1)
                       * T.fft.rfftfreq(10, 0.5, dtype=x.dtype)[:6], [(3, 6)]),
}
COMPLEX.update(FFT)
COMPLEX.update({
    "stft_istft": (lambda T, x: T.view_as_real(T.stft(x, 8, 3, 6, T.hann_window(6, dtype=x.dtype), return_complex=True))
                   .sum(-1) .sum(-2)[..., :5] + T.istft(T.stft(x, 8, 2, window=T.hann_window(8, dtype=x.dtype),
                                                              return_complex=True),
                                                       8, 2, window=T.hann_window(8, dtype=x.dtype), length=20)[..., :5],
                   [(2, 20)]),
})
COMPLEX.update({
    # eigenvectors are fixed up to a phase each: the losses see only phase-free quantities
    "linalg_eig": (lambda T, a: (lambda L, V: T.stack([L.abs(), (L * L).real, (V.abs() ** 2).sum(0) * L.real,
                                                      (V.conj() * V[:, :1]).abs().sum(0)]))(*T.linalg.eig(a)),
                   [(4, 4)]),
    "linalg_eig_complex": (lambda T, a: (lambda L, V: T.view_as_real(L) + (V.abs() ** 2).sum(0).unsqueeze(-1))(
        *T.linalg.eig(_cplx(T, a))), [(3, 3, 2)]),
    "linalg_eigvals": (lambda T, a: T.view_as_real(T.linalg.eigvals(a)), [(2, 3, 3)]),
})
# torch's graphs of these hold lazily conjugated tensors (NumPy has no conjugate bit: hookgrad's
# conj is a copy), so what saved-tensor hooks see differs; eig's saved eigenvectors carry the bit
_CONJ_BIT_ROWS = {"complex_matmul_sum_prod", "complex_polar", "fft_c2c", "linalg_eig", "linalg_eig_complex",
                  "linalg_eigvals"}
for _name, _row in COMPLEX.items():
    EDGE[_name] = (_row[0], _row[1], {"facts": () if _name in _CONJ_BIT_ROWS else (SAVED, PACK_ORDER)})
# istft overlap-adds with index_add where torch folds (col2im): the same values, other saved tensors
EDGE["stft_istft"][2]["facts"] = (SAVED,)
# ---- torch.* breadth: functional recurrent entries, embedding_bag ----
# (embedding_bag's node saves other tensors than torch's ATen kernel does: values and gradients are compared)
_VALUES_AND_GRADIENTS = {"facts": ()}
EDGE.update({
    "torch_embedding_bag_sum_weighted": (lambda T, w, p: T.embedding_bag(
        w, T.tensor([1, 2, 4, 5, 4, 3, 2, 9]), T.tensor([0, 3, 3]), False, 0, False, p, False, 2)[0], [(10, 3), (8,)],
        _VALUES_AND_GRADIENTS),
    "torch_embedding_bag_mean_max": (lambda T, w: T.embedding_bag(w, T.tensor([1, 2, 4, 5, 4, 3]), T.tensor([0, 2]),
                                                                  False, 1)[0]
                                     + T.nn.functional.embedding_bag(T.tensor([[1, 7], [0, 3]]), w, mode="max"),
                                     [(10, 3)], _VALUES_AND_GRADIENTS),
    # float32: torch's fused oneDNN layer (MkldnnRnnLayerBackward0); too coarse for a float64 gradcheck, so its
    # gradients are compared with torch's (tests/test_rnn_graph.py) and checked in float64 through torch_lstm
    "torch_lstm_float32": (lambda T, x, h, c, wi, wh, bi, bh: (lambda o: o[0].sum() + 2 * o[1].sum() + 3 * o[2].sum())(
        T.lstm(x.float(), (h.float(), c.float()), [wi.float(), wh.float(), bi.float(), bh.float()], True, 1, 0.0,
               False, False, False)), [(3, 2, 4), (1, 2, 5), (1, 2, 5), (20, 4), (20, 5), (20,), (20,)],
        {"gradcheck": False, "facts": (), "rtol": 1e-5, "atol": 1e-6}),
    "torch_lstm": (lambda T, x, h, c, wi, wh, bi, bh: (lambda o: o[0].sum() + 2 * o[1].sum() + 3 * o[2].sum())(
        T.lstm(x, (h, c), [wi, wh, bi, bh], True, 1, 0.0, False, False, False)),
        [(4, 2, 3), (1, 2, 2), (1, 2, 2), (8, 3), (8, 2), (8,), (8,)]),
    "torch_gru_packed": (lambda T, x, h, wi, wh: (lambda o: o[0].sum() + 2 * o[1].sum())(
        T.gru(x, T.tensor([2, 2, 1]), h, [wi, wh], False, 1, 0.0, False, False)),
        [(5, 3), (1, 2, 2), (6, 3), (6, 2)]),
})
EDGE.update({
    "segment_reduce": (lambda T, x: T.segment_reduce(x, "sum", lengths=T.tensor([2, 0, 2]))
                       + T.segment_reduce(x, "prod", lengths=T.tensor([1, 1, 2]), initial=2.0)
                       + T.segment_reduce(x, "mean", offsets=T.tensor([0, 1, 3, 4])), [(4, 3)], _VALUES_AND_GRADIENTS),
    # torch iterates to its default tolerance (about 1e-8); hookgrad solves exactly
    "lobpcg": (lambda T, a: T.lobpcg(a @ a.mT + 9 * T.eye(9, dtype=a.dtype), k=2)[0], [(9, 9)],
               {**_VALUES_AND_GRADIENTS, "rtol": 1e-5, "atol": 1e-6}),
})
EDGE.update({
    "slice_inverse": (lambda T, x: (lambda y: T.slice_inverse(y[1:4:2], y, 0, 1, 4, 2) * 2)(x * 1), [(5, 3)],
                      _VALUES_AND_GRADIENTS),
})

DOUBLE_BACKWARD.update({
    # the fill value is a constant: the gradient's own backward pads with zeros
    "pad_value": lambda T, x: (T.nn.functional.pad(x, (1, 2, 0, 1), value=2.5) ** 2).sum(),
})
EDGE.update({
    # the backward of softmax's backward, as a create_graph pass records it (its own backward second order)
    "_softmax_backward_data": (lambda T, g, x: T._softmax_backward_data(g, x.softmax(1), 1, x.dtype),
                               [(2, 3), (2, 3)], SECOND_ORDER),
    "_log_softmax_backward_data": (lambda T, g, x: T._log_softmax_backward_data(g, x.log_softmax(0), 0, x.dtype),
                                   [(3, 2), (3, 2)], SECOND_ORDER),
})

EDGE.update({
    # grouped products exist for float32, bfloat16 and float16 only (float64 inputs are cast; no
    # gradcheck); the operands' leading strides are multiples of 16 bytes, as the grouped-GEMM layout
    # check wants
    "grouped_mm_3d": (lambda T, a, b: T._grouped_mm(a.float(), b.float()), [(2, 3, 4), (2, 4, 8)],
                      {"gradcheck": False, "rtol": 1e-5, "atol": 1e-5}),
    "grouped_mm_jagged": (lambda T, a, b: T._grouped_mm(a.float(), b.float(), T.tensor([1, 4, 5], dtype=T.int32)),
                          [(5, 4), (3, 4, 8)], {"gradcheck": False, "rtol": 1e-5, "atol": 1e-5}),
})
