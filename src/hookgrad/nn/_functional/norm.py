"""batch_norm, layer_norm and group_norm: one normalization kernel, three ways to pick the statistics.

A normalization is described by
* ``view``: the shape the input is reshaped to so that the statistics run over ``axes`` (keepdims);
* ``affine``: the shape weight and bias are reshaped to, to broadcast against the input;
* ``affine_axes``: the input axes summed for the weight and bias gradients.

The forward and the first-order backward run in NumPy. With ``create_graph=True`` batch and layer
norm record their backward as one node (torch's double-backward node); group norm's backward is
composed of hookgrad ops on the saved input and statistics, as torch's is.
"""
from __future__ import annotations

import math

import numpy as np

from ... import _threads as _blas
from ..._dtype import narrow_to, widen
from ..._tensor import Tensor, wrap
from ...autograd.graph import Node, SavedTensor, refuse_inference_saves
from ..._ops._base import GRAD, edge, record
from ..._ops._base import ones_vector, quiet_fp
from ..._ops._declare import outputs_of, record_op
from ..._ops.reduce import sum_keepdims
from .scalar_ops import div_scalar, mul_scalar, sub_scalar

_err = quiet_fp  # NumPy reports no inf/nan arithmetic (nor does torch)


class _NormBackward(Node):
    __slots__ = ("view", "axes", "affine", "affine_axes", "eps", "batch_stats", "mean", "invstd")
    saves_bias = False
    saved_names = ("input", "weight")
    # torch's one node for this backward's derivative (group norm's backward is composed of ops instead)
    double_backward_node = None

    def _statistics(self, saved):
        """The mean and inverse standard deviation the backward normalizes with."""
        return self.mean, self.invstd

    def apply(self, grads):
        g = grads[0]
        saved = self.saved()
        if g is None:
            return (None,) * len(self.next_functions)
        x, w = (saved[1], saved[0]) if self.saves_bias else saved[:2]
        b = saved[2] if self.saves_bias else None
        grads = self._apply_arrays(g, x, w, saved)
        if GRAD.enabled and self.double_backward_node is not None:
            return self._record_double_backward(g, x, w, b, saved, grads)
        return grads

    def _apply_arrays(self, g, x, w, saved):
        """The first-order backward on NumPy arrays."""
        gd, xd = g._ndarray, x._ndarray
        view, axes = self.view, self.axes
        mean, invstd = self._statistics(saved)
        with _err():
            xhat = np.subtract(xd.reshape(view), mean)
            xhat *= invstd                       # in view's shape
            gx = gw = gb = None
            if self._should_compute_output(0):
                gv = (gd * w._ndarray.reshape(self.affine) if w is not None else gd).reshape(view)
                if self.batch_stats:
                    centre = _mean_keepdims(gv, axes)
                    gv_xhat = gv * xhat
                    slope = _mean_keepdims(gv_xhat, axes)
                    gxv = np.subtract(gv, centre, out=gv if w is not None else None)  # gv is private then
                    gxv -= np.multiply(xhat, slope, out=gv_xhat)
                    gxv *= invstd
                else:
                    gxv = gv * invstd
                gx = wrap(gxv.reshape(xd.shape).astype(xd.dtype, copy=False))
            if self._should_compute_output(1):
                xhat = xhat.reshape(xd.shape)
                gw = wrap(np.asanyarray(_sum_over(np.multiply(gd, xhat, out=xhat), self.affine_axes),
                                     dtype=w._ndarray.dtype))
            if self._should_compute_output(2):
                gb = wrap(np.asanyarray(_sum_over(gd, self.affine_axes), dtype=gd.dtype))
        return gx, gw, gb

    def _record_double_backward(self, g, x, w, b, saved, grads):
        """Under create_graph, torch's backward is one op whose derivative is one node over the
        incoming gradient and what the forward saved: its results become that node's outputs."""
        node_cls = self.double_backward_node
        inputs = node_cls.edge_inputs(g, x, w, b, saved)
        if not any(t is not None and t._requires_grad for t in inputs):
            return grads
        node = node_cls(tuple(edge(t) for t in inputs))
        node.view, node.axes, node.affine, node.affine_axes = self.view, self.axes, self.affine, self.affine_axes
        node.eps, node.batch_stats = self.eps, self.batch_stats
        node.mean, node.invstd = self._statistics(saved) if not self.batch_stats else (self.mean, self.invstd)
        node.save_for_double_backward(g, x, w, saved)
        return outputs_of(node, grads)


def _mean_keepdims(a, axes):
    """``np.mean(a, axes, keepdims=True)``; over trailing axes of a float32/float64 array, one BLAS
    product with ones (NumPy walks short rows one by one: 4x slower on rows of 128)."""
    k = len(axes)
    if axes == tuple(range(a.ndim - k, a.ndim)) and a.dtype.type in (np.float32, np.float64) \
            and a.flags.c_contiguous and a.size:
        n = math.prod(a.shape[a.ndim - k:])
        total = sum_keepdims(a.reshape(a.shape[:a.ndim - k] + (n,)), a.ndim - k)
        total /= n
        return total.reshape(a.shape[:a.ndim - k] + (1,) * k)
    return np.mean(a, axis=axes, keepdims=True)


def _sum_over(a, axes):
    """``a.sum(axes)``; over leading axes of a float32/float64 array, one BLAS product with ones."""
    k = len(axes)
    if axes == tuple(range(k)) and 0 < k < a.ndim and a.dtype.type in (np.float32, np.float64) \
            and a.flags.c_contiguous and a.size:
        rows = math.prod(a.shape[:k])
        return _blas.matmul(ones_vector(rows, a.dtype), a.reshape(rows, -1)).reshape(a.shape[k:])
    return a.sum(axes)


def _sum(t, axes):
    return t.sum(axes) if axes else t


class _NormDoubleBackward(Node):
    """torch's double backward of batch and layer norm: one node over the first backward's incoming
    gradient, input and weight (and torch's other edges), keeping them and the statistics. Its
    backward is the first backward's vector-Jacobian product, written with differentiable ops
    (so a third order composes); the statistics count as constants there, as in torch."""

    __slots__ = ("view", "axes", "affine", "affine_axes", "eps", "batch_stats", "mean", "invstd")
    _num_outputs = 3
    # where the incoming gradient, the input and the weight sit among the edges
    g_edge, x_edge, w_edge = 0, 1, 2

    def _operands(self):
        """(incoming gradient, input, weight) from what was saved."""
        raise NotImplementedError

    def apply(self, grads):
        ggx, ggw, ggb = (list(grads) + [None] * 3)[:3]
        g, x, w = self._operands()
        wants_g, wants_x, wants_w = (self._should_compute_output(i) for i in (self.g_edge, self.x_edge, self.w_edge))
        axes, affine = self.axes, self.affine
        mean, s = wrap(self.mean), wrap(self.invstd)
        xh = (x - mean) * s
        w_b = w.reshape(affine) if w is not None else None
        ggw_b = ggw.reshape(affine) if ggw is not None else None

        def centred(a):  # a minus its mean, minus its component along xh (a symmetric map)
            return a - a.mean(axes, keepdim=True) - xh * (a * xh).mean(axes, keepdim=True)

        gg_in = (centred(ggx) if self.batch_stats else ggx) if ggx is not None else None
        out = [None] * len(self.next_functions)
        if wants_g:
            terms = []
            if gg_in is not None:
                terms.append(gg_in * s * w_b if w_b is not None else gg_in * s)
            if ggw_b is not None:
                terms.append(ggw_b * xh)
            if ggb is not None:
                terms.append(ggb.reshape(affine).expand_as(x))
            out[self.g_edge] = _total(terms)
        if wants_w and gg_in is not None:
            out[self.w_edge] = _sum(g * s * gg_in, self.affine_axes)
        if wants_x:
            terms = []
            if ggw_b is not None:
                terms.append(centred(ggw_b * g) * s if self.batch_stats else ggw_b * g * s)
            if ggx is not None and self.batch_stats:
                u = g * w_b if w_b is not None else g
                u_c = centred(u)
                gx = u_c * s
                terms.append(-(s * xh * (ggx * gx).mean(axes, keepdim=True))
                             - s * s * ((u * xh).mean(axes, keepdim=True) * gg_in
                                        + (ggx * xh).mean(axes, keepdim=True) * u_c))
            out[self.x_edge] = _total(terms)
        return tuple(out)


def _total(terms):
    if not terms:
        return None
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total


class NativeLayerNormBackwardBackward0(_NormDoubleBackward):
    __slots__ = ()
    # edges: grad_out, input, mean, rstd, weight, bias (torch packs in alphabetical order)
    saved_names = ("grad_out", "input", "mean", "rstd", "weight")
    saved_values = {"normalized_shape": lambda n: n.affine}
    g_edge, x_edge, w_edge = 0, 1, 4

    @staticmethod
    def edge_inputs(g, x, w, b, saved):
        return (g, x, saved[3], saved[4], w, b)

    def save_for_double_backward(self, g, x, w, saved):
        self.save(g, x, saved[3], saved[4], w)

    def _operands(self):
        g, x, _, _, w = self.saved()
        return g, x, w


class NativeBatchNormBackwardBackward0(_NormDoubleBackward):
    __slots__ = ()
    # edges: grad_out, input, weight, running_mean, running_var (torch packs in alphabetical order)
    saved_names = ("grad_out", "input", "running_mean", "running_var", "save_invstd", "save_mean", "weight")
    saved_values = {"eps": lambda n: n.eps, "train": lambda n: n.batch_stats}

    @staticmethod
    def edge_inputs(g, x, w, b, saved):
        return (g, x, w, saved[2], saved[3])

    def save_for_double_backward(self, g, x, w, saved):
        self.save(g, x, saved[2], saved[3], saved[5], saved[4], w)

    def _operands(self):
        g, x, _, _, _, _, w = self.saved()
        return g, x, w


class NativeBatchNormBackward0(_NormBackward):
    __slots__ = ("training",)
    # saved before the running statistics are updated, as torch does (batch_norm below)
    saved_names = ("input", "weight", "running_mean", "running_var", "result1", "result2")
    # torch packs and unpacks the running statistics before the weight
    pack_order = unpack_order = (0, 2, 3, 1, 4, 5)
    saved_values = {"training": lambda n: n.training, "eps": lambda n: n.eps}
    double_backward_node = NativeBatchNormBackwardBackward0

    def _statistics(self, saved):
        if self.batch_stats:
            return self.mean, self.invstd
        # evaluation mode reads the running statistics as they are now, as torch's saved references do
        # (a training-mode forward in between updates them in place)
        running_mean, running_var = saved[2]._ndarray, saved[3]._ndarray
        dtype = self.mean.dtype
        with _err():
            mean = running_mean.reshape(self.affine).astype(dtype, copy=False)
            invstd = (1.0 / np.sqrt(running_var.reshape(self.affine) + self.eps)).astype(dtype, copy=False)
        return mean, invstd


class NativeLayerNormBackward0(_NormBackward):
    __slots__ = ()
    saves_bias = True
    saved_names = ("weight", "input", "bias", "result1", "result2")
    pack_order = unpack_order = (2, 1, 0, 3, 4)  # torch packs and unpacks bias, input, weight
    saved_values = {"normalized_shape": lambda n: n.affine}
    double_backward_node = NativeLayerNormBackwardBackward0


class NativeGroupNormBackward0(_NormBackward):
    __slots__ = ()
    saved_names = ("input", "weight", "result1", "result2")
    # view: (N, group, C // group * HxW); affine: (1, C, 1, ...)
    saved_values = {"N": lambda n: n.view[0], "C": lambda n: n.affine[1], "group": lambda n: n.view[1],
                    "HxW": lambda n: n.view[2] * n.view[1] // n.affine[1] if n.affine[1] else 0,
                    "eps": lambda n: n.eps}
    _num_outputs = 3  # the normalized input, the mean and the rstd

    def apply(self, grads):
        g, dmean, drstd = (tuple(grads) + (None, None))[:3]
        if GRAD.enabled or dmean is not None or drstd is not None:
            return self._differentiable_backward(g, dmean, drstd)
        return super().apply(grads)

    def _differentiable_backward(self, dy, dmean, drstd):
        """torch's infinitely differentiable group-norm backward, which it runs under create_graph or
        when the mean or rstd outputs got a gradient: ops on the saved input and the saved statistics
        (outputs of this node, so a second-order pass comes back here through them), in torch's order
        so that the nodes a hook on a first-order gradient sees are torch's."""
        x, w, mean, rstd = self.saved()
        wants_x, wants_w, wants_b = (self._should_compute_output(i) for i in range(3))
        n, groups, c = self.view[0], self.view[1], self.affine[1]
        per_group = c // groups
        hxw = self.view[2] // per_group if per_group else 0
        count = per_group * hxw
        s = 1.0 / count if count else math.inf
        # (where torch's C++ computes both operands of a binary op, it computes the right one first:
        # the order of the nodes made and of the tensors packed follows it)
        x4 = x.reshape(n, groups, per_group, hxw)
        mean4, rstd4 = mean.reshape(n, groups, 1, 1), rstd.reshape(n, groups, 1, 1)
        gx = gw = gb = None
        if dy is not None:
            dy4 = dy.reshape(n, groups, per_group, hxw)
            ds = (dy4 * x4).sum(3).unsqueeze_(-1)
            db = dy4.sum(3).unsqueeze_(-1)
        both_stats = dmean is not None and drstd is not None
        if wants_x:
            w4 = w.reshape(1, groups, per_group, 1) if w is not None else None
            # torch also computes the variance here and never uses it: what it saves is still packed
            sub_scalar((rstd4 * rstd4).reciprocal_(), self.eps).clamp_min(0)
            rstd_cube = rstd4 * rstd4 * rstd4
            dvar = None
            if drstd is not None:
                drstd4 = drstd.view(n, groups, 1, 1)
                dvar = mul_scalar(rstd_cube, -0.5) * drstd4
            if dy is not None:
                a = rstd4 * w4 if w4 is not None else rstd4
                b = ((ds * w4).sum(2) if w4 is not None else ds.sum(2)).unsqueeze_(-2)
                c_ = ((db * w4).sum(2) if w4 is not None else db.sum(2)).unsqueeze_(-2)
                b = mul_scalar((c_ * mean4 - b) * rstd_cube, s)
                c_scaled = mul_scalar(c_ * rstd4, s)
                c_ = -b * mean4 - c_scaled
                from_x = b * x4
                gx = a * dy4 + from_x + c_
                if both_stats:
                    gx += _var_mean_backward(dvar, dmean.view(n, groups, 1, 1), x4, count)
                gx = gx.reshape_as(x)
            elif both_stats:
                gx = _var_mean_backward(dvar, dmean.view(n, groups, 1, 1), x4, count).reshape_as(x)
        if wants_w and dy is not None:
            gw = ((ds - db * mean4) * rstd4).sum(0).reshape_as(w)
        if wants_b and dy is not None:
            gb = db.sum(0).reshape(c)
        return gx, gw, gb


def _var_mean_backward(dvar, dmean, x4, count):
    """The gradient a (population) variance and a mean over a group's last two dims send to ``x4``."""
    centred = x4 - x4.mean((2, 3), keepdim=True)
    from_var = mul_scalar(dvar, 2.0 / count if count else math.inf) * centred
    from_mean = div_scalar(dmean.expand(*x4.shape), count)
    return from_var + from_mean


def _normalize(node_cls, x, weight, bias, view, axes, affine, affine_axes, eps, mean=None, var=None):
    """Shared forward: statistics (from the batch unless given), normalization, affine, recording."""
    xd = widen(x._ndarray)  # bfloat16: statistics and normalization in float32, the output rounded once
    xv = xd.reshape(view)
    batch_stats = mean is None
    with _err():
        if batch_stats:
            mean = _mean_keepdims(xv, axes)
            out = xv - mean
            var = _mean_keepdims(out * out, axes)
        invstd = (1.0 / np.sqrt(var + eps)).astype(xd.dtype, copy=False)
        mean = mean.astype(xd.dtype, copy=False)
        if not batch_stats:
            out = xv - mean
        out *= invstd  # xv - mean is a fresh array: normalized in place
        out = out.reshape(xd.shape)
    if weight is not None:
        out *= weight._ndarray.reshape(affine)
    if bias is not None:
        out += bias._ndarray.reshape(affine)
    result = wrap(narrow_to(out, x._ndarray.dtype))
    if GRAD.enabled and (x._requires_grad or (weight is not None and weight._requires_grad)
                         or (bias is not None and bias._requires_grad)):
        node = record_op(node_cls, (x, weight, bias), result)
        node.view, node.axes, node.affine, node.affine_axes = view, axes, affine, affine_axes
        node.eps, node.batch_stats, node.mean, node.invstd = eps, batch_stats, mean, invstd
        if node_cls.saves_bias:
            _save_in_pack_order(node, (weight, x, bias, wrap(mean), wrap(invstd)))
        elif node_cls is NativeGroupNormBackward0:
            # torch's group norm returns its mean and rstd as outputs 1 and 2 of the node (they require
            # grad, with it as grad_fn) and saves them as outputs
            stats = wrap(mean.reshape(view[:2])), wrap(invstd.reshape(view[:2]))
            record(node, result, *stats)
            saved_inputs = SavedTensor(x), None if weight is None else SavedTensor(weight)  # packed first
            saved_stats = SavedTensor(stats[0], True), SavedTensor(stats[1], True)
            saved_stats[0].output_nr, saved_stats[1].output_nr = 1, 2
            node._saved = saved_inputs + saved_stats
    return result, mean, var


def _check_len(t, name, c):
    if t is not None and t._ndarray.size != c:
        raise RuntimeError(f"{name} should contain {c} elements not {t._ndarray.size}")


def batch_norm(input: Tensor, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-5) -> Tensor:
    x = input
    xd = x._ndarray
    if xd.ndim < 2:
        raise ValueError(f"expected 2D or 3D input (got {xd.ndim}D input)")
    c = xd.shape[1]
    _check_len(running_mean, "running_mean", c)
    _check_len(running_var, "running_var", c)
    _check_len(weight, "weight", c)
    _check_len(bias, "bias", c)
    axes = (0,) + tuple(range(2, xd.ndim))
    affine = (1, c) + (1,) * (xd.ndim - 2)
    if training:
        n = xd.size // c if c else 0
        if n <= 1:
            from ..._dtype import Size
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{_size_repr(Size(xd.shape))}")
        result, mean, var = _normalize(NativeBatchNormBackward0, x, weight, bias, xd.shape, axes, affine, axes, eps)
        if result._grad_fn_value is not None:  # torch saves before its kernel updates the statistics
            refuse_inference_saves(x, weight, running_mean, running_var)
        # (so a pack hook sees them before the update, and one that raises leaves them unchanged)
        _save_batch_norm(result, x, weight, running_mean, running_var, True)
        # the running statistics are updated inside the kernel, as torch's are: no version bump, so a
        # graph that saved them stays usable after another training-mode forward
        if running_mean is not None:
            rm = running_mean._ndarray
            rm *= (1 - momentum)
            rm += (momentum * mean.reshape(-1)).astype(rm.dtype, copy=False)
        if running_var is not None:
            rv = running_var._ndarray
            rv *= (1 - momentum)
            rv += (momentum * var.reshape(-1) * (n / (n - 1))).astype(rv.dtype, copy=False)
        return result
    if running_mean is None or running_var is None:
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    mean = running_mean._ndarray.reshape(affine).astype(xd.dtype, copy=False)
    var = running_var._ndarray.reshape(affine).astype(xd.dtype, copy=False)
    result, _, _ = _normalize(NativeBatchNormBackward0, x, weight, bias, xd.shape, axes, affine, axes, eps, mean, var)
    _save_batch_norm(result, x, weight, running_mean, running_var, False)
    return result


def _save_batch_norm(result, x, weight, running_mean, running_var, training):
    """What torch's batch norm packs (in training mode before the running statistics are updated):
    the inputs, then the batch mean and inverse std (empty in evaluation mode)."""
    node = result._grad_fn_value
    if node is None:
        return
    node.training = training
    if training:
        stats = wrap(node.mean.reshape(-1)), wrap(node.invstd.reshape(-1))
    else:
        stats = wrap(np.empty(0, x._ndarray.dtype)), wrap(np.empty(0, x._ndarray.dtype))
    _save_in_pack_order(node, (x, weight, running_mean, running_var) + stats)


def _save_in_pack_order(node, tensors):
    """``node.save(*tensors)`` with the pack hooks called in torch's order (the node class's
    ``pack_order``, indices into ``tensors``), which is not the order its backward reads them in."""
    saved = [None] * len(tensors)
    for i in type(node).pack_order:
        if tensors[i] is not None:
            saved[i] = SavedTensor(tensors[i])
    node._saved = tuple(saved)


def _size_repr(size):
    return f"torch.Size({list(size)})"


def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None, eps=1e-5) -> Tensor:
    x = input
    xd = x._ndarray
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    ns = tuple(int(s) for s in normalized_shape)
    k = len(ns)
    if k == 0 or xd.ndim < k or tuple(xd.shape[xd.ndim - k:]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*, "
                           f"{', '.join(str(s) for s in ns)}], but got input of size{list(xd.shape)}")
    for t, name in ((weight, "weight"), (bias, "bias")):
        if t is not None and tuple(t._ndarray.shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t._ndarray.shape)} and normalized_shape = {list(ns)}")
    axes = tuple(range(xd.ndim - k, xd.ndim))
    lead = tuple(range(xd.ndim - k))
    result, _, _ = _normalize(NativeLayerNormBackward0, x, weight, bias, xd.shape, axes, ns, lead, eps)
    return result


def group_norm(input: Tensor, num_groups: int, weight=None, bias=None, eps=1e-5) -> Tensor:
    x = input
    xd = x._ndarray
    if xd.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {xd.ndim}")
    n, c = xd.shape[:2]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(xd.shape)} and num_groups={num_groups}")
    _check_len(weight, "weight", c)
    _check_len(bias, "bias", c)
    view = (n, num_groups, xd.size // (n * num_groups) if xd.size else 0)
    affine = (1, c) + (1,) * (xd.ndim - 2)
    affine_axes = (0,) + tuple(range(2, xd.ndim))
    result, _, _ = _normalize(NativeGroupNormBackward0, x, weight, bias, view, (2,), affine, affine_axes, eps)
    return result
