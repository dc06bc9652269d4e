"""The op-test registry: every differentiable op's cases, in one place.

* ``UNARY`` / ``BINARY`` / ``MATRIX``: ``name -> (fn(T, *tensors), options or shapes)``, run on torch and
  hookgrad (values, gradients, grad_fn name; BINARY over broadcasting shapes) and gradchecked
  (test_ops_differential.py).
* ``DOUBLE_BACKWARD``: ``name -> fn(T, x)``, second derivatives against torch.
* ``FUNCTIONAL``: nn.functional cases, gradchecked and gradgradchecked (test_functional_grad.py).
* ``EDGE``: ops with edge values, integer dtypes or several outputs (test_op_registry.py).

test_op_registry.py runs every case once more and fails when a Node class of ``_ops`` or
``nn/_functional`` is reached by none: a new op is one declaration plus one row here.
"""
import numpy as np

import hookgrad

# name -> (fn(T, *tensors), shapes, options)
UNARY = {
    "neg": (lambda T, x: -x, {}), "exp": (lambda T, x: x.exp(), {}), "log": (lambda T, x: x.log(), {"positive": True}),
    "log1p": (lambda T, x: x.log1p(), {"positive": True}), "expm1": (lambda T, x: x.expm1(), {}),
    "sqrt": (lambda T, x: x.sqrt(), {"positive": True}), "rsqrt": (lambda T, x: x.rsqrt(), {"positive": True}),
    "abs": (lambda T, x: x.abs(), {}), "sin": (lambda T, x: x.sin(), {}), "cos": (lambda T, x: x.cos(), {}),
    "tan": (lambda T, x: (x * 0.5).tan(), {}), "tanh": (lambda T, x: x.tanh(), {}),
    "sigmoid": (lambda T, x: x.sigmoid(), {}), "relu": (lambda T, x: x.relu(), {}),
    "reciprocal": (lambda T, x: x.reciprocal(), {"positive": True}),
    "pow2": (lambda T, x: x ** 2, {}), "pow3": (lambda T, x: x.pow(3), {}), "pow_half": (lambda T, x: x ** 0.5, {"positive": True}),
    "rpow": (lambda T, x: 2 ** x, {}), "sinh": (lambda T, x: x.sinh(), {}), "cosh": (lambda T, x: x.cosh(), {}),
    "atan": (lambda T, x: x.atan(), {}), "asin": (lambda T, x: (x * 0.4).asin(), {}),
    "clamp": (lambda T, x: x.clamp(-0.5, 0.7), {}), "clamp_min": (lambda T, x: x.clamp(min=0.1), {}),
    "clip": (lambda T, x: T.clip(x, max=0.3), {}), "nan_to_num": (lambda T, x: x.nan_to_num(), {}),
    "square": (lambda T, x: x.square(), {}), "rsub": (lambda T, x: 3 - x, {}), "rdiv": (lambda T, x: 3 / x, {"positive": True}),
    "sum": (lambda T, x: x.sum(), {}), "sum0": (lambda T, x: x.sum(0), {}), "sum_keep": (lambda T, x: x.sum(-1, keepdim=True), {}),
    "sum_dims": (lambda T, x: x.sum((0, 1)), {}), "mean": (lambda T, x: x.mean(), {}), "mean1": (lambda T, x: x.mean(1), {}),
    "prod": (lambda T, x: x.prod(), {}), "prod1": (lambda T, x: x.prod(1), {}),
    "max": (lambda T, x: x.max(), {}), "max1": (lambda T, x: x.max(1)[0], {}), "min1k": (lambda T, x: x.min(1, keepdim=True).values, {}),
    "amax": (lambda T, x: x.amax(0), {}), "amin": (lambda T, x: x.amin((0, 1)), {}),
    "var": (lambda T, x: x.var(), {}), "var1": (lambda T, x: x.var(1, keepdim=True), {}), "std": (lambda T, x: x.std(0), {}),
    "var_c0": (lambda T, x: x.var(1, correction=0), {}),
    "norm": (lambda T, x: x.norm(), {}), "norm1": (lambda T, x: x.norm(p=1, dim=1), {}), "norm_dim": (lambda T, x: x.norm(dim=0), {}),
    "vnorm3": (lambda T, x: T.linalg.vector_norm(x, 3, dim=-1), {}),
    "logsumexp": (lambda T, x: x.logsumexp(1), {}), "softmax": (lambda T, x: x.softmax(1), {}),
    "log_softmax": (lambda T, x: x.log_softmax(0), {}), "cumsum": (lambda T, x: x.cumsum(1), {}), "cumprod": (lambda T, x: x.cumprod(1), {}),
    "view": (lambda T, x: x.view(-1), {}), "reshape": (lambda T, x: x.reshape(x.shape[0], -1), {}),
    "flatten": (lambda T, x: x.flatten(), {}), "unflatten": (lambda T, x: x.unflatten(1, (x.shape[1], 1)), {}),
    "squeeze": (lambda T, x: x.unsqueeze(0).squeeze(0), {}), "permute": (lambda T, x: x.permute(1, 0, 2), {}),
    "transpose": (lambda T, x: x.transpose(0, 2), {}), "mT": (lambda T, x: x.mT, {}), "T2": (lambda T, x: x[0].T, {}),
    "t": (lambda T, x: x[0].t(), {}), "expand": (lambda T, x: x[:, :1].expand(-1, 4, -1), {}),
    "repeat": (lambda T, x: x.repeat(2, 1, 1), {}), "flip": (lambda T, x: x.flip(0, 2), {}), "roll": (lambda T, x: x.roll(1, 1), {}),
    "tril": (lambda T, x: x.tril(), {}), "triu": (lambda T, x: x.triu(1), {}), "movedim": (lambda T, x: x.movedim(0, -1), {}),
    "narrow": (lambda T, x: x.narrow(1, 1, 2), {}), "split": (lambda T, x: x.split(2, 1)[1], {}), "chunk": (lambda T, x: x.chunk(2, 0)[0], {}),
    "unbind": (lambda T, x: x.unbind(1)[2], {}), "index_int": (lambda T, x: x[1], {}), "index_slice": (lambda T, x: x[:, 1:3, ::2], {}),
    "index_none": (lambda T, x: x[None, ..., 0], {}), "index_list": (lambda T, x: x[[0, 1, 0]], {}),
    "index_mask": (lambda T, x: x[x > 0], {}), "index_tensor": (lambda T, x: x[:, T.tensor([2, 0, 2])], {}),
    "gather": (lambda T, x: x.gather(1, T.tensor([[[0], [1], [0]]]).expand(x.shape[0], 3, 1).contiguous()), {}),
    "index_select": (lambda T, x: x.index_select(1, T.tensor([0, 2, 2])), {}),
    "masked_fill": (lambda T, x: x.masked_fill(x > 0.5, 1.5), {}), "clone": (lambda T, x: x.clone(), {}),
    "diagonal": (lambda T, x: x.diagonal(0, 1, 2), {}), "to64": (lambda T, x: x.float().double(), {}),
    "where_scalar": (lambda T, x: T.where(x > 0, x, 0.0), {}), "frac": (lambda T, x: x.frac(), {}),
    "acos": (lambda T, x: (x * 0.4).acos(), {}), "exp2": (lambda T, x: x.exp2(), {}),
    "log2": (lambda T, x: x.log2(), {"positive": True}), "log10": (lambda T, x: T.log10(x), {"positive": True}),
    "floor": (lambda T, x: x.floor(), {}), "ceil": (lambda T, x: x.ceil(), {}), "trunc": (lambda T, x: x.trunc(), {}),
    "round": (lambda T, x: x.round(), {}), "round_decimals": (lambda T, x: x.round(decimals=1), {}),
    "sign": (lambda T, x: x.sign(), {}), "sgn": (lambda T, x: T.sgn(x) * x, {}),
    "remainder": (lambda T, x: x % 0.7, {}), "fmod": (lambda T, x: x.fmod(0.7), {}),
    "div_floor": (lambda T, x: x.div(0.7, rounding_mode="floor"), {}),
    "masked_select": (lambda T, x: x.masked_select(x > 0), {}), "min": (lambda T, x: x.min(), {}),
    "squeeze_all": (lambda T, x: x[:1].squeeze(), {}), "squeeze_dims": (lambda T, x: x[:1].squeeze((0,)), {}),
    "split_sizes": (lambda T, x: x.split([1, 2], 1)[1], {}), "as_strided": (lambda T, x: x.as_strided((2, 2), (1, 2)), {}),
    "alias": (lambda T, x: x[...], {}),
    "index_put": (lambda T, x: x.index_put((T.tensor([0]),), T.tensor(1.5, dtype=x.dtype)), {}),
    "scatter_value": (lambda T, x: x.scatter(0, T.zeros(1, 2, 2, dtype=T.int64), 1.5), {}),
    "reshape_copy": (lambda T, x: x.transpose(0, 2).reshape(-1), {}),
    "var_mean": (lambda T, x: T.var_mean(x, 1)[0] * T.var_mean(x, 1)[1], {}),
    "std_mean": (lambda T, x: T.std_mean(x, (0, 2), keepdim=True)[0] + T.std_mean(x)[1], {}),
}

BINARY = {
    "add": (lambda T, a, b: a + b, {}), "sub": (lambda T, a, b: a - b, {}), "mul": (lambda T, a, b: a * b, {}),
    "div": (lambda T, a, b: a / b, {"positive": True}), "pow": (lambda T, a, b: a ** b, {"positive": True}),
    "add_alpha": (lambda T, a, b: a.add(b, alpha=2.5), {}), "sub_alpha": (lambda T, a, b: T.sub(a, b, alpha=0.5), {}),
    "maximum": (lambda T, a, b: T.maximum(a, b), {}), "minimum": (lambda T, a, b: T.minimum(a, b), {}),
    "where": (lambda T, a, b: T.where(a > b, a, b), {}), "lerp": (lambda T, a, b: a.lerp(b, 0.3), {}),
    "atan2": (lambda T, a, b: T.atan2(a, b), {}), "clamp_t": (lambda T, a, b: a.clamp(min=b), {}),
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


# name -> (fn(*tensors), float64 hookgrad inputs): nn.functional, gradchecked (second order for some)
FUNCTIONAL = {
    "linear": (lambda x, w, b: F.linear(x, w, b), [t(2, 3), t(2, 3, seed=1), t(2, seed=2)]),
    "linear3d": (lambda x, w: F.linear(x, w), [t(2, 2, 3), t(2, 3, seed=1)]),
    "bilinear": (lambda a, b, w, c: F.bilinear(a, b, w, c), [t(2, 2), t(2, 3, seed=1), t(2, 2, 3, seed=2),
                                                             t(2, seed=3)]),
    "conv1d": (lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1), [t(1, 2, 5), t(2, 2, 3, seed=1),
                                                                        t(2, seed=2)]),
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b, padding=1), [t(1, 2, 3, 3), t(2, 2, 2, 2, seed=1), t(2, seed=2)]),
    "conv2d_strided_groups": (lambda x, w: F.conv2d(x, w, stride=2, dilation=(1, 2), groups=2, padding=1),
                              [t(1, 2, 4, 5), t(2, 1, 2, 2, seed=1)]),
    "conv2d_same": (lambda x, w: F.conv2d(x, w, padding="same"), [t(1, 1, 3, 4), t(1, 1, 2, 3, seed=1)]),
    "conv_transpose2d": (lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
                         [t(1, 2, 2, 2), t(2, 1, 3, 3, seed=1), t(1, seed=2)]),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2, 1), [t(1, 2, 3, 3)]),
    "max_pool2d_pad_ceil": (lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), [t(1, 1, 4, 5)]),
    "max_pool1d": (lambda x: F.max_pool1d(x, 2), [t(1, 2, 5)]),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), [t(1, 1, 4, 5)]),
    "avg_pool1d": (lambda x: F.avg_pool1d(x, 2), [t(1, 2, 5)]),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, (2, 3)), [t(1, 1, 3, 5)]),
    "adaptive_avg_pool1d": (lambda x: F.adaptive_avg_pool1d(x, 2), [t(1, 2, 5)]),
    "pad_constant": (lambda x: F.pad(x, (1, -1, 2, 0), value=3.0), [t(1, 2, 3)]),
    "pad_reflect": (lambda x: F.pad(x, (2, 1)), [t(1, 2, 4)]),
    "pad_reflect2d": (lambda x: F.pad(x, (1, 1, 2, 1), mode="reflect"), [t(1, 3, 3)]),
    "pad_replicate": (lambda x: F.pad(x, (2, 1, 1, 0), mode="replicate"), [t(1, 2, 3)]),
    "pad_circular": (lambda x: F.pad(x, (2, 1), mode="circular"), [t(1, 2, 3)]),
    "batch_norm_train": (_bn_train, [t(3, 2, 2), t(2, seed=1), t(2, seed=2)]),
    "batch_norm_eval": (_bn_eval, [t(3, 2, 2), t(2, seed=1), t(2, seed=2)]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (3,), w, b), [t(2, 3), t(3, seed=1), t(3, seed=2)]),
    "group_norm": (lambda x, w, b: F.group_norm(x, 2, w, b), [t(2, 4, 2), t(4, seed=1), t(4, seed=2)]),
    "embedding": (lambda w: F.embedding(idx(0, 2, 2, 3), w), [t(4, 2)]),
    "relu": (lambda x: F.relu(x), [t(2, 3)]),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.1), [t(2, 3)]),
    "elu": (lambda x: F.elu(x, 0.7), [t(2, 3)]),
    "gelu": (lambda x: F.gelu(x), [t(2, 3)]),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), [t(2, 3)]),
    "silu": (lambda x: F.silu(x), [t(2, 3)]),
    "sigmoid": (lambda x: F.sigmoid(x), [t(2, 3)]),
    "tanh": (lambda x: F.tanh(x), [t(2, 3)]),
    "softplus": (lambda x: F.softplus(x, 2.0, 1.5), [t(2, 3)]),
    "hardtanh": (lambda x: F.hardtanh(x * 2), [t(2, 3)]),
    "relu6": (lambda x: F.relu6(x * 5), [t(2, 3)]),
    "softmax": (lambda x: F.softmax(x, 1), [t(2, 3)]),
    "log_softmax": (lambda x: F.log_softmax(x, 0), [t(2, 3)]),
    "normalize": (lambda x: F.normalize(x), [t(2, 3)]),
    "sdpa": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), [t(1, 2, 2), t(1, 3, 2, seed=1),
                                                                                      t(1, 3, 2, seed=2)]),
    "mse_loss": (lambda x, y: F.mse_loss(x, y), [t(2, 3), t(2, 3, seed=1)]),
    "l1_loss": (lambda x, y: F.l1_loss(x, y, reduction="sum"), [t(2, 3), t(2, 3, seed=1)]),
    "smooth_l1_loss": (lambda x, y: F.smooth_l1_loss(x, y, beta=0.5), [t(2, 3), t(2, 3, seed=1)]),
    "huber_loss": (lambda x, y: F.huber_loss(x, y, reduction="none", delta=0.7), [t(2, 3), t(2, 3, seed=1)]),
    "cross_entropy": (lambda x: F.cross_entropy(x, idx(0, 2, 1)), [t(3, 3)]),
    "cross_entropy_smooth_weight": (lambda x: F.cross_entropy(
        x, idx(0, 2, 1), weight=hookgrad.tensor([1.0, 2.0, 0.5], dtype=hookgrad.float64), label_smoothing=0.2,
        ignore_index=1), [t(3, 3)]),
    "cross_entropy_probs": (lambda x, p: F.cross_entropy(x, p.softmax(1)), [t(2, 3), t(2, 3, seed=1)]),
    "nll_loss": (lambda x: F.nll_loss(x, idx(1, 0), reduction="none"), [t(2, 3)]),
    "binary_cross_entropy": (lambda x, y: F.binary_cross_entropy(x, y), [t(2, 3, low=0.1, high=0.9),
                                                                         t(2, 3, seed=1, low=0, high=1)]),
    "bce_with_logits": (lambda x, y: F.binary_cross_entropy_with_logits(
        x, y, pos_weight=hookgrad.tensor([1.0, 2.0, 0.5], dtype=hookgrad.float64)),
        [t(2, 3), t(2, 3, seed=1, low=0, high=1)]),
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
}




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
