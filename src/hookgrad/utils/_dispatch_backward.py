"""More backward nodes as the ATen operators torch's formulas run, for dispatch modes (see
``_python_dispatch``): unary math, division and subtraction, reductions and expansion, indexing and
padding, embedding, adaptive pooling and the activation and loss kernels. A gradient the engine
sums down to a broadcast input's shape is summed here as torch's engine does (``sum.dim_IntList``
over the broadcast dims, then ``view`` where leading dims went), after the node's formula, input by
input.

Each step's value is computed only when a mode calls the operator with the arguments it was given
(the last step of an input's gradient gives the gradient the node computed)."""
from __future__ import annotations

from . import _python_dispatch as _dispatch
from ._python_dispatch import _Prev, _needs, _saved


class _Formula:
    """The steps of one node's backward formula, written operator by operator."""

    def __init__(self, node, grad, grad_inputs):
        self.node, self.grad, self.grad_inputs = node, grad, grad_inputs
        self.steps: list = []
        self._values: list = []
        self._gradients: list = []

    def op(self, name, overload, args, value, kwargs=None):
        """One operator; ``value`` computes its result (called at most once, when asked)."""
        cache: list = []

        def thunk():
            if not cache:
                cache.append(value())
            return cache[0]
        self._values.append(thunk)
        self.steps.append([name, overload, tuple(args), thunk, None] + ([kwargs] if kwargs else []))
        return _Prev(len(self.steps) - 1)

    def value(self, ref):
        return self._values[ref.index]() if isinstance(ref, _Prev) else ref

    def needs(self, index) -> bool:
        return _needs(self.grad_inputs, index)

    def saved(self, name):
        return _saved(self.node, name)

    def result(self):
        """The node's saved output, unpacked (torch detaches it)."""
        result = self.saved("result")
        return self.op("detach", "default", (result,), lambda: result)

    def gradient(self, ref, index, shape=None):
        """``ref`` is input ``index``'s gradient at ``shape`` (None: the input's own shape), before
        the engine sums it to the input's shape."""
        self._gradients.append((ref, index, shape))

    def finish(self) -> list:
        for ref, index, shape in sorted(self._gradients, key=lambda entry: entry[1]):
            target = self.grad_inputs[index]
            wanted = tuple(target.shape)
            if shape is None or tuple(shape) == wanted:
                if isinstance(ref, _Prev):    # else the incoming gradient passes as it is: no operator
                    self._mark(ref, index)
                continue
            if not wanted:     # to a scalar: one sum of everything
                self._mark(self.op("sum", "default", (ref,), lambda t=target: t), index)
                continue
            leading = len(shape) - len(wanted)
            dims = list(range(leading)) + [leading + i for i, size in enumerate(wanted)
                                           if size == 1 and shape[leading + i] != 1]
            kept = [1] * leading + list(wanted)
            summed = self.op("sum", "dim_IntList", (ref, dims, True), lambda t=target, k=kept: t.reshape(k))
            if leading:
                summed = self.op("view", "default", (summed, list(wanted)), lambda t=target: t)
            self._mark(summed, index)
        return _Steps([tuple(step) for step in self.steps], self._release)

    def _release(self):
        """Drop the values and the references between the steps (the steps' thunks refer to this
        object): the gradients are then held by the engine alone, as it expects."""
        self._values.clear()
        self.steps.clear()
        self._gradients.clear()


    def _mark(self, ref, index):
        target = self.grad_inputs[index]
        step = self.steps[ref.index]
        step[3] = lambda: target
        step[4] = index


class _Steps(list):
    """A formula's steps; ``release()`` once they ran."""

    def __init__(self, steps, release):
        super().__init__(steps)
        self.release = release


def _formula(write):
    """A backward plan from ``write(formula)``, which adds the steps."""
    def plan(node, grad, grad_inputs):
        formula = _Formula(node, grad, grad_inputs)
        write(formula)
        return formula.finish()
    plan.__name__ = write.__name__
    return plan


def _shape(value):
    return tuple(value.shape)


# ---- unary math ---------------------------------------------------------------------------------
def _through(name, overload="default", scalar=None):
    """An op on the saved input (``x.cos()``), then the gradient times it."""
    def write(f):
        x, grad = f.saved("self"), f.grad
        args = (x,) if scalar is None else (x, scalar)
        factor = f.op(name, overload, args, lambda: _apply(name, x, scalar))
        f.gradient(f.op("mul", "Tensor", (grad, factor), lambda: grad * f.value(factor)), 0)
    write.__name__ = name
    return _formula(write)


def _apply(name, x, scalar):
    import hookgrad
    if name == "add":
        return x + scalar
    return getattr(hookgrad, name)(x)


@_formula
def _cos_backward(f):
    x, grad = f.saved("self"), f.grad
    sin = f.op("sin", "default", (x,), lambda: x.sin())
    negated = f.op("neg", "default", (sin,), lambda: -f.value(sin))
    f.gradient(f.op("mul", "Tensor", (grad, negated), lambda: grad * f.value(negated)), 0)


def _divided_by(make_divisor):
    def write(f):
        grad = f.grad
        divisor = make_divisor(f)
        f.gradient(f.op("div", "Tensor", (grad, divisor), lambda: grad / f.value(divisor)), 0)
    return _formula(write)


@_formula
def _sqrt_backward(f):
    result = f.result()
    doubled = f.op("mul", "Scalar", (result, 2), lambda: f.value(result) * 2)
    f.gradient(f.op("div", "Tensor", (f.grad, doubled), lambda: f.grad / f.value(doubled)), 0)


@_formula
def _rsqrt_backward(f):
    result = f.result()
    cubed = f.op("pow", "Tensor_Scalar", (result, 3), lambda: f.value(result) ** 3)
    scaled = f.op("mul", "Scalar", (cubed, -0.5), lambda: f.value(cubed) * -0.5)
    f.gradient(f.op("mul", "Tensor", (f.grad, scaled), lambda: f.grad * f.value(scaled)), 0)


@_formula
def _reciprocal_backward(f):
    result = f.result()
    squared = f.op("mul", "Tensor", (result, result), lambda: f.value(result) * f.value(result))
    negated = f.op("neg", "default", (f.grad,), lambda: -f.grad)
    f.gradient(f.op("mul", "Tensor", (negated, squared), lambda: f.value(negated) * f.value(squared)), 0)


@_formula
def _expm1_backward(f):
    result = f.result()
    plus_one = f.op("add", "Scalar", (result, 1), lambda: f.value(result) + 1)
    f.gradient(f.op("mul", "Tensor", (f.grad, plus_one), lambda: f.grad * f.value(plus_one)), 0)


@_formula
def _log1p_backward(f):
    x = f.saved("self")
    plus_one = f.op("add", "Scalar", (x, 1), lambda: x + 1)
    f.gradient(f.op("div", "Tensor", (f.grad, plus_one), lambda: f.grad / f.value(plus_one)), 0)


# ---- binary arithmetic --------------------------------------------------------------------------
def _scaled_by_alpha(f, ref, alpha):
    if alpha == 1:
        return ref
    return f.op("mul", "Scalar", (ref, alpha), lambda: f.value(ref) * alpha)


def _add_or_sub_backward(f, subtract):
    """``self + alpha * other`` or ``self - alpha * other``: the gradient as is for self, scaled
    by alpha (negated first for a difference) for other."""
    alpha = f.saved("alpha")
    shape = _shape(f.grad)
    if f.needs(0):
        f.gradient(f.grad, 0, shape)
    if f.needs(1):
        other_grad = f.op("neg", "default", (f.grad,), lambda: -f.grad) if subtract else f.grad
        f.gradient(_scaled_by_alpha(f, other_grad, alpha), 1, shape)


@_formula
def _add_backward(f):
    _add_or_sub_backward(f, subtract=False)


@_formula
def _sub_backward(f):
    _add_or_sub_backward(f, subtract=True)


@_formula
def _mul_backward(f):
    x, other, grad = f.saved("self"), f.saved("other"), f.grad
    shape = _shape(grad)
    # torch's formula computes the other operand's gradient first
    if f.needs(1):
        f.gradient(f.op("mul", "Tensor", (grad, x), lambda: grad * x), 1, shape)
    if f.needs(0):
        f.gradient(f.op("mul", "Tensor", (grad, other), lambda: grad * other), 0, shape)


@_formula
def _div_backward(f):
    x, other, grad = f.saved("self"), f.saved("other"), f.grad
    shape = _shape(grad)
    # as for mul, torch's formula computes the divisor's gradient first
    if f.needs(1):
        ratio = f.op("div", "Tensor", (x, other), lambda: x / other)
        twice = f.op("div", "Tensor", (ratio, other), lambda: f.value(ratio) / other)
        negated = f.op("neg", "default", (grad,), lambda: -grad)
        f.gradient(f.op("mul", "Tensor", (negated, twice), lambda: f.value(negated) * f.value(twice)), 1, shape)
    if f.needs(0):
        f.gradient(f.op("div", "Tensor", (grad, other), lambda: grad / other), 0, shape)


# ---- reductions, expansion, indexing ------------------------------------------------------------
def _reduced_dims(f):
    sizes = list(f.saved("self_sym_sizes"))
    dims = f.saved("dim")
    dims = [_dispatch._signed(d) for d in ([dims] if isinstance(dims, int) else list(dims))]
    if not dims:      # sum over every dim
        dims = list(range(len(sizes)))
    return sizes, sorted(d % len(sizes) for d in dims) if sizes else []


def _expanded_back(f):
    """The reduced gradient made the input's shape: unsqueezed at each reduced dim (unless kept),
    then expanded."""
    sizes, dims = _reduced_dims(f)
    current = f.grad
    if not f.saved("keepdim"):
        for dim in dims:
            before = current
            current = f.op("unsqueeze", "default", (current, dim), lambda b=before, d=dim: f.value(b).unsqueeze(d))
    shaped = current
    return sizes, f.op("expand", "default", (shaped, sizes), lambda: f.value(shaped).expand(sizes))


@_formula
def _sum_dim_backward(f):
    _, expanded = _expanded_back(f)
    f.gradient(expanded, 0)


@_formula
def _mean_dim_backward(f):
    sizes, expanded = _expanded_back(f)
    _, dims = _reduced_dims(f)
    count = 1
    for dim in dims:
        count *= sizes[dim]
    f.gradient(f.op("div", "Scalar", (expanded, count), lambda: f.value(expanded) / count), 0)


@_formula
def _expand_backward(f):
    f.gradient(f.grad, 0, _shape(f.grad))


@_formula
def _select_backward(f):
    sizes = list(f.saved("self_sym_sizes"))
    args = (f.grad, sizes, f.saved("dim"), _dispatch._signed(f.saved("index")))
    f.gradient(f.op("select_backward", "default", args, lambda: None), 0)


@_formula
def _slice_backward(f):
    sizes = list(f.saved("self_sym_sizes"))
    start, end = f.saved("start"), f.saved("end")
    args = (f.grad, sizes, f.saved("dim"), 0 if start is None else start,
            _dispatch._LAST if end is None else end, f.saved("step"))
    f.gradient(f.op("slice_backward", "default", args, lambda: None), 0)


@_formula
def _constant_pad_backward(f):
    pad = [-int(p) for p in f.saved("pad")]
    f.gradient(f.op("constant_pad_nd", "default", (f.grad, pad), lambda: None), 0)


@_formula
def _clone_backward(f):
    f.gradient(f.grad, 0)


# ---- kernels ------------------------------------------------------------------------------------
def _kernel(name, *saved_names, extra=()):
    """One ATen kernel ``name(grad, *saved, *extra)`` makes input 0's gradient."""
    def write(f):
        args = (f.grad,) + tuple(_dispatch._signed(_dispatch._as_list(f.saved(n))) for n in saved_names) + extra
        f.gradient(f.op(name, "default", args, lambda: None), 0)
    write.__name__ = name
    return _formula(write)


@_formula
def _embedding_backward(f):
    padding_idx = _dispatch._signed(f.saved("padding_idx"))
    args = (f.grad, f.saved("indices"), int(f.saved("weight_sym_argsize_0")), padding_idx,
            bool(f.saved("scale_grad_by_freq")))
    f.gradient(f.op("embedding_dense_backward", "default", args, lambda: None), 0)


@_formula
def _leaky_relu_backward(f):
    args = (f.grad, f.saved("self"), f.saved("negative_slope"), False)
    f.gradient(f.op("leaky_relu_backward", "default", args, lambda: None), 0)


@_formula
def _celu_backward(f):
    alpha = f.saved("alpha")
    args = (f.grad, alpha, 1, 1.0 / alpha, False, f.saved("self"))
    f.gradient(f.op("elu_backward", "default", args, lambda: None), 0)


@_formula
def _mse_backward(f):
    x, target, reduction = f.saved("self"), f.saved("target"), f.saved("reduction")
    if f.needs(0):
        f.gradient(f.op("mse_loss_backward", "default", (f.grad, x, target, reduction), lambda: None), 0)
    if f.needs(1):
        f.gradient(f.op("mse_loss_backward", "default", (f.grad, target, x, reduction), lambda: None), 1)


def _swapped_loss(kernel, parameter):
    """Losses whose target's gradient is the same kernel with input and target swapped."""
    def write(f):
        x, target, reduction, extra = f.saved("self"), f.saved("target"), f.saved("reduction"), f.saved(parameter)
        if f.needs(0):
            f.gradient(f.op(kernel, "default", (f.grad, x, target, reduction, extra), lambda: None), 0)
        if f.needs(1):
            f.gradient(f.op(kernel, "default", (f.grad, target, x, reduction, extra), lambda: None), 1)
    write.__name__ = kernel
    return _formula(write)


@_formula
def _binary_cross_entropy_backward(f):
    x, target, weight, reduction = f.saved("self"), f.saved("target"), f.saved("weight"), f.saved("reduction")
    grad = f.grad
    if f.needs(0):
        args = (grad, x, target, weight) + ((reduction,) if reduction != 1 else ())
        f.gradient(f.op("binary_cross_entropy_backward", "default", args, lambda: None), 0)
    if f.needs(1):
        # the target's: -logit(x) * grad (* weight), divided by the count for a mean
        logits = f.op("logit", "default", (x,), lambda: x.logit())
        negated = f.op("neg_", "default", (logits,), lambda: -f.value(logits))
        current = f.op("mul", "Tensor", (negated, grad), lambda: f.value(negated) * grad)
        if weight is not None:
            before = current
            current = f.op("mul", "Tensor", (before, weight), lambda: f.value(before) * weight)
        if reduction == 1:
            before = current
            current = f.op("div_", "Scalar", (before, x.numel()), lambda: f.value(before) / x.numel())
        f.gradient(current, 1)


@_formula
def _value_selecting_backward(f):
    """max/min over a dim: the gradient scattered at the chosen indices into zeros of the input's
    shape (both unsqueezed at the dim first unless it was kept)."""
    dim, indices, sizes = _dispatch._signed(f.saved("dim")), f.saved("indices"), list(f.saved("self_sym_sizes"))
    grad = f.grad
    if not f.saved("keepdim"):
        grad = f.op("unsqueeze", "default", (grad, dim), lambda: f.grad.unsqueeze(dim))
        indices = f.op("unsqueeze", "default", (indices, dim), lambda: f.saved("indices").unsqueeze(dim))
    zeros = f.op("new_zeros", "default", (grad, sizes), lambda: f.grad.new_zeros(sizes))
    f.gradient(f.op("scatter", "src", (zeros, dim, indices, grad), lambda: None), 0)


@_formula
def _zero_gradient(f):
    f.gradient(f.op("zeros_like", "default", (f.grad,), lambda: None), 0)


_dispatch._BACKWARD_STEPS.update({
    "SinBackward0": _through("cos"), "SinhBackward0": _through("cosh"), "CoshBackward0": _through("sinh"),
    "AbsBackward0": _through("sgn"), "CosBackward0": _cos_backward,
    "LogBackward0": _divided_by(lambda f: f.saved("self")),
    "SqrtBackward0": _sqrt_backward, "RsqrtBackward0": _rsqrt_backward, "ReciprocalBackward0": _reciprocal_backward,
    "Expm1Backward0": _expm1_backward, "Log1PBackward0": _log1p_backward,
    "AddBackward0": _add_backward, "SubBackward0": _sub_backward, "MulBackward0": _mul_backward,
    "DivBackward0": _div_backward,
    "SumBackward1": _sum_dim_backward, "MeanBackward1": _mean_dim_backward, "ExpandBackward0": _expand_backward,
    "SelectBackward0": _select_backward, "SliceBackward0": _slice_backward,
    "ConstantPadNdBackward0": _constant_pad_backward, "CloneBackward0": _clone_backward,
    "EmbeddingBackward0": _embedding_backward,
    "AdaptiveAvgPool2DBackward0": _kernel("_adaptive_avg_pool2d_backward", "self"),
    "HardtanhBackward0": _kernel("hardtanh_backward", "self", "min_val", "max_val"),
    "LeakyReluBackward0": _leaky_relu_backward,
    "SoftplusBackward0": _kernel("softplus_backward", "self", "beta", "threshold"),
    "HuberLossBackward0": _swapped_loss("huber_loss_backward", "delta"),
    "SmoothL1LossBackward0": _swapped_loss("smooth_l1_loss_backward", "beta"),
    "BinaryCrossEntropyBackward0": _binary_cross_entropy_backward,
    "FloorBackward0": _zero_gradient, "CeilBackward0": _zero_gradient, "RoundBackward0": _zero_gradient,
    "TruncBackward0": _zero_gradient,
    "MaxBackward0": _value_selecting_backward, "MinBackward0": _value_selecting_backward,
    "CeluBackward0": _celu_backward, "MseLossBackward0": _mse_backward,
})
