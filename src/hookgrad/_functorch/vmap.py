"""The batching transform behind ``torch.func.vmap``: the function runs ONCE, on batched tensors.

A ``BatchedTensor`` holds the whole batch in ``_value`` (a plain tensor) and shows the function the
per-example shape (its own array is a meta array of that shape, so ``shape``, ``dim()``, ``size()``
and ``numel()`` answer per example). ``_value``'s leading dims are the batch dims of the vmaps it is
batched over, one per level in ``_levels`` (outer vmap first); the per-example dims follow. Nested
vmaps thus share one flat representation, and a tensor from an outer vmap used inside an inner one
broadcasts over the inner level.

While a vmap runs, ``_BatchingMode`` (a torch-function mode) sees every op. An op with no batched
argument runs as it is (random ops are checked against ``randomness``). An op with one has a
batching rule (elementwise, reductions, views and shape ops, matmul/linear/conv, softmax, cat/stack,
losses) that computes it once on the physical tensors; every other op runs once per batch element
on slices and the results are stacked (the per-slice fallback: still one call of the function, so
hooks, prints and counters inside fire once).
"""
from __future__ import annotations

import numpy as np

import hookgrad
from .._tensor import Tensor, _init, wrap as _plain
from .._meta import MetaArray, meta_array
from .._C._torch_function import (_BackwardPass, _disabled_torch_function_impl, _DisableAll,
                                  _EnableTorchFunction)
from ..autograd import grad_tracking_text, wrapped_text
from ..overrides import TorchFunctionMode

# the vmaps running now, outer first: [level, batch size, randomness]
ACTIVE: list = []


class BatchedTensor(Tensor):
    """A tensor batched over one or more running vmaps (see the module docstring)."""

    # not an overloading subclass: the batching mode sees its ops (defining one would switch the
    # torch-function checks on for every op of every program)
    __torch_function__ = _disabled_torch_function_impl

    def __repr__(self, *, tensor_contents=None):
        return _describe(self)  # torch's text, inside its vmap or escaped from it

    __str__ = __repr__


_ESCAPED_MESSAGE = ("Either your tensor may have escaped from inside a function being vmapped and this is a user error "
                    "(see https://pytorch.org/functorch/stable/ux_limitations.html), or there is an internal functorch "
                    "error in `gen_vmap_plumbing` Please file an issue if it looks like the latter")


class _PerExampleArray(MetaArray):
    """A batched tensor's own array: the per-example shape and dtype, no values. Batched ops never
    reach it (the batching mode computes on ``_value``); an op that does ran outside any vmap (the
    tensor escaped its function) or past the batching path: torch's error, not a meta result."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise RuntimeError(_ESCAPED_MESSAGE)

    def __array_function__(self, func, types, args, kwargs):
        raise RuntimeError(_ESCAPED_MESSAGE)


def wrap(value: Tensor, levels: tuple) -> Tensor:
    """``value`` (batch dims for ``levels`` leading) as a BatchedTensor; plain when ``levels`` is empty."""
    if not levels:
        return value
    out = object.__new__(BatchedTensor)
    _init(out, meta_array(tuple(value.shape[len(levels):]), value._ndarray.dtype).view(_PerExampleArray))
    out.__dict__["_wrapper_device"] = value.device
    out.__dict__["_value"] = value
    out.__dict__["_levels"] = levels
    return out


def is_batched(x) -> bool:
    return x.__class__ is BatchedTensor


def _size_of(level: int) -> int:
    for lvl, size, _ in ACTIVE:
        if lvl == level:
            return size
    raise RuntimeError("vmap: a batched tensor escaped the vmap that made it; return it from the function "
                       "instead of storing it")


def _logical_ndim(x) -> int:
    return x._value.dim() - len(x._levels) if is_batched(x) else x.dim()


def _full(x, levels: tuple) -> Tensor:
    """``x``'s physical tensor with a batch dim for every one of ``levels`` (expanded where ``x`` is
    not batched over it), per-example dims after."""
    if is_batched(x):
        value, own = x._value, x._levels
    else:
        value, own = x, ()
    if own == levels:
        return value
    logical = tuple(value.shape[len(own):])
    shape, expanded = [], []
    for lvl in levels:
        inside = lvl in own
        shape.append(value.shape[own.index(lvl)] if inside else 1)
        expanded.append(_size_of(lvl))
    return value.reshape(*shape, *logical).expand(*expanded, *logical)


def _aligned(x, levels: tuple, rank: int) -> Tensor:
    """``x``'s physical tensor shaped to broadcast against the others of an elementwise op: a dim per
    level (1 where ``x`` is not batched over it), per-example dims right-aligned to ``rank``."""
    if not is_batched(x):
        return x
    value, own = x._value, x._levels
    logical = tuple(value.shape[len(own):])
    shape = [value.shape[own.index(lvl)] if lvl in own else 1 for lvl in levels]
    return value.reshape(*shape, *([1] * (rank - len(logical))), *logical)


def _batch_shape(levels) -> tuple:
    return tuple(_size_of(lvl) for lvl in levels)


# ---- walking arguments ----------------------------------------------------------------------------------
def _tree_any(value, test) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_tree_any(v, test) for v in value)
    if isinstance(value, dict):
        return any(_tree_any(v, test) for v in value.values())
    return test(value)


def _tree_map(fn, value):
    if isinstance(value, Tensor):
        return fn(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*[_tree_map(fn, v) for v in value])
    if isinstance(value, (list, tuple)):
        return type(value)(_tree_map(fn, v) for v in value)
    if isinstance(value, dict):
        return type(value)((k, _tree_map(fn, v)) for k, v in value.items())
    return value


def _levels_in(args, kwargs) -> tuple:
    found = set()

    def visit(v):
        if is_batched(v):
            found.update(v._levels)
        return False
    _tree_any((args, kwargs), visit)
    return tuple(sorted(found))


# ---- torch's errors ----------------------------------------------------------------------------------------
_ITEM_MESSAGE = ("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over calling .item() "
                 "on a Tensor, please try to rewrite what you're doing with other operations. If error is occurring "
                 "somewhere inside PyTorch internals, please file a bug report.")
_CONTROL_FLOW_MESSAGE = ("vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow. "
                         "We don't support that yet, please file an issue at https://github.com/pytorch/pytorch/issues .")
_RANDOM_MESSAGE = ("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                   "'different' randomness flags on vmap or perform the randomness operation out of vmap")


# torch's legacy batched tensor (the gradients of autograd.grad(is_grads_batched=True)) has no batching
# rule for reading values: its own refusals, by op
_LEGACY_RANDOM_MESSAGE = ("vmap: We do not yet support calling random operations inside of vmap. Please perform "
                          "random operations outside of vmap as a workaround")


def _no_legacy_rule(op: str) -> str:
    return f"Batching rule not implemented for aten::{op}. We could not generate a fallback."


_LEGACY_DETACH = ("Batching rule not implemented for aten::detach; the fallback path doesn't work on out= or view "
                  "ops.")
_LEGACY_REFUSALS = {
    **dict.fromkeys(("__repr__", "__str__", "__format__", "__bool__", "is_nonzero"), _no_legacy_rule("is_nonzero")),
    **dict.fromkeys(("item", "__float__", "__int__", "__complex__", "__index__"), _no_legacy_rule("item")),
    **dict.fromkeys(("detach", "numpy", "__array__"), _LEGACY_DETACH),
    "equal": _no_legacy_rule("equal"), "allclose": _no_legacy_rule("allclose"),
    "tolist": "Cannot access data pointer of Tensor that doesn't have storage",
    "detach_": "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) "
               "for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and "
               "hence detach_() cannot be called on these gradients. To fix this error, please refer to the "
               "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.",
}
LEGACY_LEVELS: set = set()  # the levels of batched-gradient passes (torch's legacy vmap)


def _legacy_refusal(name, levels):
    """torch's error for op ``name`` on a legacy batched tensor (None: the op runs as under vmap)."""
    return _LEGACY_REFUSALS.get(name) if LEGACY_LEVELS.intersection(levels) else None

def _inplace_error(name: str, op: str = "inplace arithmetic"):
    """torch's refusal of an in-place op whose self is batched over fewer vmaps than its other arguments;
    ``op`` is how torch names it (arithmetic ops have one wording, others their own name)."""
    ending = ("If said operator is being called inside the PyTorch framework, please file a bug report "
              + (f"(op: {name})" if op == "inplace arithmetic" else "instead."))
    return RuntimeError(
        f"vmap: {op}(self, *extra_args) is not possible because there exists a Tensor `other` in "
        "extra_args that has more elements than `self`. This happened due to `other` being vmapped over but `self` "
        f"not being vmapped over in a vmap. Please try to use out-of-place operators instead of {op}. " + ending)


# ---- names --------------------------------------------------------------------------------------------------
_PROPERTY_NAMES: dict = {}


def _name_of(func) -> str:
    if type(func).__name__ == "method-wrapper" and func.__name__ == "__get__":
        if not _PROPERTY_NAMES:
            for klass in reversed(Tensor.__mro__):
                for key, attr in vars(klass).items():
                    if isinstance(attr, property):
                        _PROPERTY_NAMES[id(attr)] = key
        return "property:" + _PROPERTY_NAMES.get(id(func.__self__), "?")
    return getattr(func, "__name__", "")


def _is_inplace(name: str) -> bool:
    if name.startswith("__"):
        return name[2:3] == "i" and name not in ("__index__", "__invert__", "__int__", "__iter__")
    return name.endswith("_") and name not in ("requires_grad_",)


_METADATA = {"size", "dim", "ndimension", "numel", "nelement", "is_floating_point", "is_complex", "element_size",
             "is_contiguous", "__len__", "get_device", "is_signed", "property:shape", "property:ndim",
             "property:dtype", "property:device", "property:layout", "property:is_cuda", "property:is_meta",
             "property:is_cpu", "property:is_sparse", "property:is_quantized", "property:names",
             "property:is_mkldnn", "property:itemsize", "property:nbytes"}
_FROM_VALUE = {"property:requires_grad", "property:is_leaf", "property:grad_fn", "property:_version",
               "property:output_nr"}
_ITEM_LIKE = {"item", "tolist", "__float__", "__int__", "__complex__", "numpy", "__index__", "__array__"}
_CONTROL_FLOW = {"__bool__", "is_nonzero", "equal", "allclose"}

_ELEMENTWISE = set("""
add sub subtract mul multiply div divide true_divide floor_divide remainder fmod pow float_power rsub neg negative
abs absolute exp exp2 log log2 log10 log1p expm1 sqrt rsqrt sin cos tan tanh sinh cosh asin acos atan asinh acosh
atanh arcsin arccos arctan arcsinh arccosh arctanh sigmoid relu relu6 gelu silu mish elu selu celu leaky_relu
softplus hardtanh hardsigmoid hardswish logsigmoid softsign tanhshrink hardshrink softshrink threshold sign sgn
floor ceil round trunc frac fix reciprocal square clamp clip clamp_min clamp_max where masked_fill maximum minimum
fmax fmin atan2 arctan2 lerp addcmul addcdiv eq ne lt le gt ge greater less greater_equal less_equal not_equal
logical_and logical_or logical_not logical_xor bitwise_and bitwise_or bitwise_xor bitwise_not nan_to_num erf erfc
erfinv isnan isinf isfinite isposinf isneginf float double half bfloat16 long int short bool byte char to type_as
detach clone contiguous zeros_like ones_like full_like empty_like positive xlogy hypot copysign heaviside
deg2rad rad2deg logit digamma lgamma i0 sinc signbit nextafter cpu cuda copy_ fill_ zero_ requires_grad_
__add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ __div__ __rdiv__ __floordiv__
__rfloordiv__ __mod__ __rmod__ __pow__ __rpow__ __neg__ __pos__ __abs__ __invert__ __and__ __rand__ __or__ __ror__
__xor__ __rxor__ __eq__ __ne__ __lt__ __le__ __gt__ __ge__ __lshift__ __rshift__
__iadd__ __isub__ __imul__ __itruediv__ __idiv__ __ifloordiv__ __imod__ __ipow__ __iand__ __ior__ __ixor__
""".split())
_ELEMENTWISE |= {n + "_" for n in list(_ELEMENTWISE) if n.isidentifier() and not n.startswith("_")
                 and not n.endswith("_")}

_RANDOM = set("""
rand randn randint rand_like randn_like randint_like randperm normal bernoulli multinomial poisson dropout
dropout1d dropout2d dropout3d alpha_dropout feature_alpha_dropout rrelu uniform_ normal_ bernoulli_ exponential_
geometric_ cauchy_ log_normal_ random_ gumbel_softmax
""".split())


def _random_is_idle(name, args, kwargs) -> bool:
    """A dropout that draws nothing (evaluation mode or p == 0)."""
    if "dropout" not in name:
        return False
    training = kwargs.get("training", args[2] if len(args) > 2 else True)
    p = kwargs.get("p", args[1] if len(args) > 1 else 0.5)
    return not training or p == 0


# ---- the mode ------------------------------------------------------------------------------------------------
class _BatchingMode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return _run_op(func, args, kwargs or {})


def _run_op(func, args, kwargs):
    name = _name_of(func)
    levels = _levels_in(args, kwargs)
    if LEGACY_LEVELS:
        refusal = _legacy_refusal(name, levels)
        if refusal is not None:
            raise RuntimeError(refusal)
    if name == "rrelu":
        raise RuntimeError("vmap: we do not yet support aten::rrelu. Please file an issue")
    if name in _RANDOM and not _random_is_idle(name, args, kwargs):
        return _random_op(func, name, args, kwargs, levels)
    if not levels:
        if name in _DESCRIBING and _grad_levels():
            return _grad_tracking_text(repr(args[0].detach()))
        return func(*args, **kwargs)
    if name in _METADATA:
        return func(*args, **kwargs)
    if name in _FROM_VALUE:
        return func(args[0]._value)
    if name in _ITEM_LIKE:
        raise RuntimeError(_ITEM_MESSAGE)
    if name in _CONTROL_FLOW:
        raise RuntimeError(_CONTROL_FLOW_MESSAGE)
    if name in _DESCRIBING:
        return _describe(args[0])
    rule = _RULES.get(name)
    if rule is None and name in _ELEMENTWISE:
        rule = _elementwise
    if rule is not None:
        result = rule(func, name, args, kwargs, levels)
        if result is not NotImplemented:
            return result
    return _per_slice(func, name, args, kwargs, levels)


def _describe(x) -> str:
    """What torch prints for a batched tensor: a BatchedTensor per level (innermost outside) around the
    physical value, each batch dim where torch keeps it (``bdim``: where the vmap's in_dims put it, for
    an input or a unary elementwise op of one; 0 after other ops, which move it to the front), and
    under a function transform differentiating it, a GradTrackingTensor around all."""
    value, own = x._value, x._levels
    if LEGACY_LEVELS.intersection(own):
        raise RuntimeError(_LEGACY_REFUSALS["__repr__"])
    nb = len(own)
    shown = _shown_bdims(x)
    order = list(range(nb, value.dim()))
    for i in reversed(range(nb)):  # innermost level first: its dim goes into the example's dims
        order.insert(shown.get(own[i], 0), i)
    tracked = _grad_levels()
    with _DisableAll():  # the physical value's own text, which no mode rewrites
        text = repr(value.detach().permute(*order) if tracked else value.permute(*order))
    for lvl in own:
        text = wrapped_text(f"BatchedTensor(lvl={lvl}, bdim={shown.get(lvl, 0)}, value=", text)
    return _grad_tracking_text(text)


_DESCRIBING = ("__repr__", "__str__", "__format__")


def _grad_levels() -> range:
    """The levels of the differentiating transforms running inside the innermost vmap (torch wraps
    every tensor of their functions in a GradTrackingTensor per level)."""
    from ..func import TRANSFORMS_ACTIVE
    return range(ACTIVE[-1][0] + 1, TRANSFORMS_ACTIVE[0] + 1) if ACTIVE else range(0)


def _grad_tracking_text(text: str) -> str:
    return grad_tracking_text(text, _grad_levels())


def _shown_bdims(x) -> dict:
    return x.__dict__.get("_shown_bdims", {})


# ---- the per-slice fallback ---------------------------------------------------------------------------------
def _per_slice(func, name, args, kwargs, levels):
    """``func`` run once per batch element on slices of the batched arguments, the results stacked."""
    sizes = _batch_shape(levels)
    inplace = _is_inplace(name) or name in ("__setitem__",)
    if inplace:
        self = args[0]
        if not is_batched(self) or self._levels != levels:
            raise _inplace_error(name)
    fulls = {}

    def full(t):
        if is_batched(t):
            if id(t) not in fulls:
                fulls[id(t)] = _full(t, levels)
            return fulls[id(t)]
        return t
    full_args, full_kwargs = _tree_map(full, args), _tree_map(full, kwargs)
    batched_ids = {id(v) for v in fulls.values()}
    results = []
    import itertools
    for index in itertools.product(*[range(s) for s in sizes]):
        def pick(t, index=index):
            return t[index] if id(t) in batched_ids else t
        results.append(func(*_tree_map(pick, full_args), **_tree_map(pick, full_kwargs)))
    if inplace and name != "__setitem__":
        return args[0]
    if name == "__setitem__":
        return None
    return _stacked(results, sizes, levels)


def _stacked(results, sizes, levels):
    first = results[0]
    if isinstance(first, Tensor):
        stacked = hookgrad.stack(results, 0)
        return wrap(stacked.reshape(*sizes, *stacked.shape[1:]), levels)
    if isinstance(first, (tuple, list)):
        parts = [_stacked([r[k] for r in results], sizes, levels) for k in range(len(first))]
        maker = getattr(type(first), "_make", None)
        return maker(parts) if maker is not None else type(first)(parts)
    if first is None:
        return None
    raise RuntimeError(_ITEM_MESSAGE)


_SAME_WITH_BATCHED_INPUT = ("Vmap does not currently support same randomness with a batched tensor input. Please file "
                            "an issue with functorch")
_DIFFERENT_INPLACE_UNBATCHED = ("vmap: Cannot ask for different inplace randomness on an unbatched tensor. This will "
                                "appear like same randomness. If this is necessary for your usage, please file an "
                                "issue with functorch.")
# random ops whose tensor input says where to draw (probabilities, means, rates): elementwise draws
_DRAW_FROM_INPUT = {"bernoulli", "normal", "poisson", "multinomial"}
# factories: where their shape is among the arguments
_FACTORIES = {"rand", "randn", "randint", "normal"}


def _random_op(func, name, args, kwargs, levels):
    """A random op inside vmap. "error": torch's refusal. "same": one draw of the per-example shape,
    shared by every example (torch refuses a batched input that the draw depends on). "different":
    one draw of the batched shape (the batch dims in front), so each example gets its own values."""
    mode = ACTIVE[-1][2] if ACTIVE else "error"
    if mode == "legacy":  # a batched-gradients pass (torch's legacy vmap refuses every draw)
        raise RuntimeError(_LEGACY_RANDOM_MESSAGE)
    if mode == "error":
        raise RuntimeError(_RANDOM_MESSAGE)
    inplace = _is_inplace(name)
    if mode == "same":
        if not levels:
            return func(*args, **kwargs)
        if name in _DRAW_FROM_INPUT or inplace and _tree_any((args[1:], kwargs), is_batched):
            # torch refuses a batched input here; one that is the same for every example (an unbatched
            # input that a transform inside vmap batched, as vmap(grad(f), in_dims=(None, ...)) does
            # here and not in torch) draws once from the first example
            if _tree_any((args, kwargs), lambda v: is_batched(v) and not _same_for_every_example(v)):
                raise RuntimeError(_SAME_WITH_BATCHED_INPUT)
            return func(*_first_example(args), **_first_example(kwargs))
        if name == "dropout" and is_batched(args[0]) and not _tree_any((args[1:], kwargs), is_batched):
            # one mask of the example's shape (dropout multiplies by its noise), every example times it
            x = args[0]
            options = {k: v for k, v in kwargs.items() if k != "inplace"}
            noise = func(hookgrad.ones(x.shape, dtype=x.dtype), *args[1:3], **options)
            in_place = kwargs.get("inplace", args[3] if len(args) > 3 else False)
            return _run_op(Tensor.mul_ if in_place else hookgrad.mul, (x, noise), {})
        if inplace or name.endswith("_like"):
            # the draw over one example's shape, then every example
            x = args[0]
            sample = func(hookgrad.empty(x.shape, dtype=x.dtype), *args[1:], **kwargs)
            if not inplace:
                return sample
            x._value.copy_(sample.expand_as(x._value))
            return x
        return _per_slice(_same_draws(func, args, kwargs), name, args, kwargs, levels)
    # "different": every element of every running vmap draws its own values
    all_levels = tuple(lvl for lvl, _, _ in ACTIVE)
    batch = _batch_shape(all_levels)
    if inplace:
        x = args[0]
        if not is_batched(x) or x._levels != all_levels:
            raise RuntimeError(_DIFFERENT_INPLACE_UNBATCHED)
        func(x._value, *_tree_map(lambda t: _aligned(t, all_levels, _logical_ndim(x)), args[1:]), **kwargs)
        return x
    if name in _FACTORIES and not levels and not _tree_any((args, kwargs), lambda v: isinstance(v, Tensor)):
        batched_args, batched_kwargs = _with_batch_shape(name, args, kwargs, batch)
        return wrap(func(*batched_args, **batched_kwargs), all_levels)
    if name == "multinomial" and not _tree_any((args[1:], kwargs), is_batched):
        # rows of probabilities: every example's rows as the rows of one 2-D call (drawn row by row)
        probs = _full(args[0], all_levels)
        drawn = func(probs.reshape(-1, probs.shape[-1]), *args[1:], **kwargs)
        return wrap(drawn.reshape(*probs.shape[:-1], drawn.shape[-1]), all_levels)
    if name.endswith("_like") or name in _DRAW_FROM_INPUT and name != "multinomial" or \
            name in ("dropout", "alpha_dropout"):
        full_args = _tree_map(lambda t: _full(t, all_levels), args)
        full_kwargs = _tree_map(lambda t: _full(t, all_levels), kwargs)
        return wrap(func(*full_args, **full_kwargs), all_levels)
    if name in _FEATURE_DROPOUT_RANKS or name == "gumbel_softmax":
        result = _one_draw_for_the_batch(func, name, args, kwargs, all_levels)
        if result is not NotImplemented:
            return result
    return _per_slice(func, name, args, kwargs, all_levels)


# the rank at which a feature dropout's first dim is a batch of inputs (None: always), for randomness="different"
_FEATURE_DROPOUT_RANKS = {"dropout1d": 3, "dropout2d": None, "dropout3d": 5, "feature_alpha_dropout": None}


def _one_draw_for_the_batch(func, name, args, kwargs, levels):
    """A feature dropout or gumbel_softmax of a batched input, each example its own draw: one call on
    the examples as one batch (folded into the input's first dim where it has a batch dim of its own;
    the draws, taken in order, are the per-example ones one after another, as torch's)."""
    x = args[0]
    if not is_batched(x) or _tree_any((args[1:], kwargs), is_batched) or x._levels != levels:
        return NotImplemented
    shape, full = tuple(x.shape), _full(x, levels)
    if name == "gumbel_softmax":
        dim = kwargs.get("dim", args[4] if len(args) > 4 else -1)
        if not isinstance(dim, int) or not shape:
            return NotImplemented
        rest = {**dict(zip(("tau", "hard", "eps"), args[1:4])), **kwargs, "dim": dim + len(levels) if dim >= 0 else dim}
        return wrap(func(full, **rest), levels)
    in_place = kwargs.get("inplace", args[3] if len(args) > 3 else False)
    rank = _FEATURE_DROPOUT_RANKS[name]
    if in_place or len(shape) < 2 or name == "dropout2d" and len(shape) not in (3, 4) or \
            rank is not None and len(shape) not in (rank - 1, rank):
        return NotImplemented
    own_batch = rank is None or len(shape) == rank
    merged = full.reshape(-1, *shape[1:]) if own_batch else full.reshape(-1, *shape)
    return wrap(func(merged, *args[1:], **kwargs).reshape(full.shape), levels)


def _same_for_every_example(t) -> bool:
    value = t._value._ndarray
    first = value[(0,) * len(t._levels)]
    return bool(np.array_equal(value, np.broadcast_to(first, value.shape),
                               equal_nan=value.dtype.kind in "fc"))


def _first_example(tree):
    return _tree_map(lambda t: t._value[(0,) * len(t._levels)] if is_batched(t) else t, tree)


def _same_draws(func, args, kwargs):
    """``func`` drawing the same values at every call: the generator it draws from (an explicit one, as
    a keyword or positional Generator, or the default) set back to its state before each call."""
    generator = kwargs.get("generator") or next(
        (a for a in args if isinstance(a, hookgrad.Generator)), None) or hookgrad.default_generator
    state = generator.get_state()

    def same_draws(*a, **k):
        generator.set_state(state)
        return func(*a, **k)
    return same_draws


def _with_batch_shape(name, args, kwargs, batch):
    """A factory's arguments with the batch dims in front of the shape it draws."""
    args, kwargs = list(args), dict(kwargs)
    if name in ("rand", "randn"):
        if "size" in kwargs:
            kwargs["size"] = (*batch, *kwargs["size"])
        else:
            args = [*batch, *_shape_args(args)]
    else:  # randint(high, size) / randint(low, high, size) / normal(mean, std, size): size is last
        if "size" in kwargs:
            kwargs["size"] = (*batch, *kwargs["size"])
        else:
            args[-1] = (*batch, *args[-1])
    return args, kwargs


# ---- rules ----------------------------------------------------------------------------------------------------
def _elementwise(func, name, args, kwargs, levels):
    rank = 0
    for v in list(args) + list(kwargs.values()):
        if isinstance(v, Tensor):
            rank = max(rank, _logical_ndim(v))
    if _is_inplace(name) or name == "requires_grad_":
        self = args[0]
        if not is_batched(self) or self._levels != levels:
            raise _inplace_error(name)
        rank = _logical_ndim(self)
        func(self._value, *[_aligned(a, levels, rank) if isinstance(a, Tensor) else a for a in args[1:]],
             **{k: _aligned(v, levels, rank) if isinstance(v, Tensor) else v for k, v in kwargs.items()})
        return self
    if rank and name not in _NOT_PROMOTING_AS_EXAMPLES:
        args, kwargs = _promoted_as_examples(args, kwargs)
    physical = [_aligned(a, levels, rank) if isinstance(a, Tensor) else a for a in args]
    physical_kwargs = {k: _aligned(v, levels, rank) if isinstance(v, Tensor) else v for k, v in kwargs.items()}
    if not isinstance(physical[0], Tensor) or not is_batched(args[0]) and name in ("type_as", "to"):
        return NotImplemented
    result = func(*physical, **physical_kwargs)
    if not isinstance(result, Tensor) or result.dim() < len(levels):
        return NotImplemented
    if not is_batched(args[0]) and result.dim() < len(levels) + rank:
        return NotImplemented
    out = wrap(result, levels)
    if "_shown_bdims" in args[0].__dict__ and len(args) == 1 and not kwargs:
        out.__dict__["_shown_bdims"] = args[0].__dict__["_shown_bdims"]  # torch keeps a unary op's bdim
    return out


# ops whose batching rule in torch promotes the physical tensors (the other tensor's dtype is taken as
# it is, or the rule is not torch's binary one)
_NOT_PROMOTING_AS_EXAMPLES = {"type_as", "to", "clamp", "clip", "clamp_min", "clamp_max", "clamp_", "clip_"}


def _promoted_as_examples(args, kwargs):
    """A binary op: a batched argument that is 0-d per example ranks below a dimensioned tensor in type
    promotion (as in torch's binary rule), though its physical tensor has dims: cast to the type the
    examples promote to. (torch's rules for ops of three tensors promote the physical tensors.)"""
    tensors = [v for v in (*args, *kwargs.values()) if isinstance(v, Tensor)]
    if len(tensors) != 2 or tensors[0].dtype == tensors[1].dtype:
        return args, kwargs
    scalars = [v for v in tensors if is_batched(v) and _logical_ndim(v) == 0]
    if not scalars:
        return args, kwargs
    dimensioned = [v.dtype for v in tensors if _logical_ndim(v) > 0]
    if not dimensioned:
        return args, kwargs
    as_examples = hookgrad.result_type(*[hookgrad.empty((), dtype=v.dtype) if _logical_ndim(v) == 0 else
                                         hookgrad.empty((1,), dtype=v.dtype) for v in tensors])

    def cast(v):
        if isinstance(v, Tensor) and is_batched(v) and _logical_ndim(v) == 0 and v.dtype != as_examples:
            return wrap(v._value.to(as_examples), v._levels)
        return v
    return [cast(a) for a in args], {k: cast(v) for k, v in kwargs.items()}


def _norm_dim(d, ndim: int) -> int:
    if not isinstance(d, int):
        raise TypeError
    n = max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d % n


def _only_self_batched(args, kwargs, start=1) -> bool:
    return is_batched(args[0]) and not _tree_any((args[start:], kwargs), is_batched)


# reductions and other ops with one ``dim`` argument: name -> position of ``dim`` among the arguments
_DIM_POSITION = {name: 1 for name in """sum mean prod amax amin max min var std logsumexp argmax argmin all any
count_nonzero nansum nanmean median var_mean std_mean softmax log_softmax cumsum cumprod logcumsumexp sort argsort
cummax cummin""".split()}
_DIM_POSITION.update(norm=2, topk=2, kthvalue=2, normalize=2)
_DEFAULT_DIM = {"normalize": 1, "sort": -1, "argsort": -1, "topk": -1, "kthvalue": -1}
_NEEDS_DIM = {"softmax", "log_softmax", "cumsum", "cumprod", "logcumsumexp", "cummax", "cummin", "topk",
              "kthvalue"}


def _dim_op(func, name, args, kwargs, levels):
    if not _only_self_batched(args, kwargs):
        return NotImplemented
    if name in ("max", "min") and len(args) > 1 and isinstance(args[1], Tensor):
        return _elementwise(func, name, args, kwargs, levels)
    x = args[0]
    value, nb = x._value, len(x._levels)
    ndim = _logical_ndim(x)
    position = _DIM_POSITION[name]
    args = list(args)
    if name in ("var", "std", "var_mean", "std_mean") and len(args) > 1 and isinstance(args[1], bool):
        kwargs = {**kwargs, "unbiased": args.pop(1)}  # var(unbiased): the bool overload, no dim
    if "dim" in kwargs:
        dim, where = kwargs["dim"], "kw"
    elif len(args) > position:
        dim, where = args[position], "pos"
    else:
        dim, where = _DEFAULT_DIM.get(name), None
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0 and name in ("sum", "mean")):
        if name in _NEEDS_DIM:
            return NotImplemented
        # a full reduction: over the flattened example
        flat = value.reshape(*value.shape[:nb], -1)
        if where == "pos":
            args[position] = nb
            result = func(flat, *args[1:], **kwargs)
        else:
            result = func(flat, *args[1:], **{**kwargs, "dim": nb})
        if name in ("max", "min", "median") and isinstance(result, tuple):
            result = result[0]
        if name in ("max", "min", "median", "argmax", "argmin") or not kwargs.get("keepdim", False):
            return _wrap_all(result, x._levels)
        return _wrap_all(_tree_map(lambda r: r.reshape(*r.shape[:nb], *([1] * ndim)), result), x._levels)
    try:
        shifted = (tuple(_norm_dim(d, ndim) + nb for d in dim) if isinstance(dim, (tuple, list))
                   else _norm_dim(dim, ndim) + nb)
    except TypeError:
        return NotImplemented
    if where == "kw":
        kwargs = {**kwargs, "dim": shifted}
    elif where == "pos":
        args[position] = shifted
    else:
        kwargs = {**kwargs, "dim": shifted}
    return _wrap_all(func(value, *args[1:], **kwargs), x._levels)


def _wrap_all(result, levels):
    return _tree_map(lambda r: wrap(r, levels), result)


def _shape_args(rest) -> tuple:
    if len(rest) == 1 and isinstance(rest[0], (tuple, list, hookgrad.Size)):
        return tuple(rest[0])
    return tuple(rest)


def _view_op(func, name, args, kwargs, levels):
    """Views and shape ops of one batched tensor: the same op on the physical tensor, dims shifted past
    the batch dims."""
    if not _only_self_batched(args, kwargs) or kwargs and name not in ("flatten", "transpose", "unsqueeze",
                                                                       "squeeze", "select", "narrow", "chunk",
                                                                       "split", "unbind", "movedim"):
        return NotImplemented
    x = args[0]
    value, own = x._value, x._levels
    nb, ndim = len(own), _logical_ndim(x)
    batch = tuple(value.shape[:nb])
    logical = tuple(value.shape[nb:])
    rest = list(args[1:])
    kw = dict(kwargs)

    def dim_of(key, position, default=None, extra=0):
        d = kw.pop(key) if key in kw else (rest[position] if len(rest) > position else default)
        return _norm_dim(d, ndim + extra) + nb

    if name in ("view", "reshape"):
        shape = _shape_args(rest)
        if any(not isinstance(s, int) for s in shape):
            return NotImplemented
        result = value.reshape(*batch, *shape) if name == "reshape" else _view_or_reshape(value, batch + shape)
    elif name in ("view_as", "reshape_as"):
        result = value.reshape(*batch, *rest[0].shape)
    elif name == "flatten":
        if ndim == 0:
            result = value.reshape(*batch, 1)
        else:
            start, end = dim_of("start_dim", 0, 0), dim_of("end_dim", 1, -1)
            result = value.flatten(start, end)
    elif name == "permute":
        dims = _shape_args(rest)
        result = value.permute(*range(nb), *[_norm_dim(d, ndim) + nb for d in dims])
    elif name in ("transpose", "swapaxes", "swapdims"):
        a = dim_of("dim0", 0)
        b = dim_of("dim1", 1)
        result = value.transpose(a, b)
    elif name in ("t", "property:T", "property:mT", "adjoint", "property:mH", "property:H"):
        if ndim < 2:
            result = value
        elif name in ("property:mT", "property:mH", "adjoint") or ndim == 2:
            result = value.transpose(-1, -2)
        else:
            result = value.permute(*range(nb), *reversed(range(nb, nb + ndim)))
    elif name == "movedim":
        src, dst = rest[0] if rest else kw.pop("source"), rest[1] if len(rest) > 1 else kw.pop("destination")
        if not isinstance(src, int) or not isinstance(dst, int):
            return NotImplemented
        result = value.movedim(_norm_dim(src, ndim) + nb, _norm_dim(dst, ndim) + nb)
    elif name == "unsqueeze":
        result = value.unsqueeze(dim_of("dim", 0, extra=1))
    elif name == "squeeze":
        if not rest and "dim" not in kw:
            dims = [i + nb for i, s in enumerate(logical) if s == 1]
        else:
            d = kw.pop("dim") if "dim" in kw else rest[0]
            dims = [_norm_dim(i, ndim) + nb for i in (d if isinstance(d, (tuple, list)) else (d,))]
        dims = [d for d in dims if value.shape[d] == 1]
        result = value
        if dims:
            result = value.squeeze(tuple(dims)) if len(dims) > 1 else value.squeeze(dims[0])
    elif name in ("expand", "expand_as", "broadcast_to"):
        sizes = tuple(rest[0].shape) if name == "expand_as" else _shape_args(rest)
        if len(sizes) < ndim:
            return NotImplemented
        padded = value.reshape(*batch, *([1] * (len(sizes) - ndim)), *logical)
        result = padded.expand(*batch, *sizes)
    elif name == "select":
        result = value.select(dim_of("dim", 0), rest[1] if len(rest) > 1 else kw.pop("index"))
    elif name == "narrow":
        result = value.narrow(dim_of("dim", 0), rest[1], rest[2])
    elif name in ("chunk", "split", "unbind", "tensor_split"):
        if name == "unbind":
            parts = value.unbind(dim_of("dim", 0, 0))
        else:
            d = dim_of("dim", 1, 0)
            parts = getattr(value, name)(rest[0], d)
        return tuple(wrap(p, own) for p in parts)
    else:
        return NotImplemented
    return wrap(result, own)


def _view_or_reshape(value, shape):
    try:
        return value.view(*shape)
    except RuntimeError:
        return value.reshape(*shape)


def _flat(x, levels) -> Tensor:
    full = _full(x, levels)
    return full.reshape(-1, *full.shape[len(levels):])


def _unflat(result, levels):
    return wrap(result.reshape(*_batch_shape(levels), *result.shape[1:]), levels)


def _matmul(func, name, args, kwargs, levels):
    if kwargs or len(args) != 2 or not all(isinstance(a, Tensor) for a in args):
        return NotImplemented
    a, b = args
    if not is_batched(a) and not is_batched(b):
        return func(a, b)
    na, nb_ = _logical_ndim(a), _logical_ndim(b)
    if na == 0 or nb_ == 0:
        return NotImplemented
    pa = _flat(a, levels) if is_batched(a) else a.unsqueeze(0)
    pb = _flat(b, levels) if is_batched(b) else b.unsqueeze(0)
    if na == 1:
        pa = pa.unsqueeze(-2)
    if nb_ == 1:
        pb = pb.unsqueeze(-1)
    rank = max(na, nb_, 2)
    pa = pa.reshape(pa.shape[0], *([1] * (rank - max(na, 2))), *pa.shape[1:])
    pb = pb.reshape(pb.shape[0], *([1] * (rank - max(nb_, 2))), *pb.shape[1:])
    result = hookgrad.matmul(pa, pb)
    if nb_ == 1:
        result = result.squeeze(-1)
    if na == 1:
        result = result.squeeze(-1 if nb_ == 1 else -2)
    return _unflat(result, levels)


def _linear(func, name, args, kwargs, levels):
    x = args[0]
    weight = args[1] if len(args) > 1 else kwargs.get("weight")
    bias = args[2] if len(args) > 2 else kwargs.get("bias")
    if not is_batched(weight) and not is_batched(bias):
        return wrap(func(x._value, weight, bias), x._levels)
    px = _flat(x, levels)
    n = px.shape[0]
    rows = px.reshape(n, -1, px.shape[-1])
    out = hookgrad.matmul(rows, _flat(weight, levels).transpose(1, 2))
    out = out.reshape(n, *px.shape[1:-1], out.shape[-1])
    if bias is not None:
        pb = _flat(bias, levels) if is_batched(bias) else bias.unsqueeze(0)
        out = out + pb.reshape(pb.shape[0], *([1] * (out.dim() - 2)), pb.shape[-1])
    return _unflat(out, levels)


def _addmm(func, name, args, kwargs, levels):
    if len(args) != 3 or set(kwargs) - {"beta", "alpha"}:
        return NotImplemented
    bias, m1, m2 = args
    beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
    product = _matmul(hookgrad.matmul, "matmul", (m1, m2), {}, levels)
    return _run_op(hookgrad.add, (_run_op(hookgrad.mul, (bias, beta), {}) if beta != 1 else bias,
                                  _run_op(hookgrad.mul, (product, alpha), {}) if alpha != 1 else product), {})


_SPATIAL = {"conv1d": 1, "conv2d": 2, "conv3d": 3}


def _conv(func, name, args, kwargs, levels):
    x = args[0]
    weight = args[1] if len(args) > 1 else kwargs.get("weight")
    bias = args[2] if len(args) > 2 else kwargs.get("bias")
    if is_batched(weight) or is_batched(bias):
        return _conv_batched_weight(func, name, args, kwargs, levels)
    if not is_batched(x):
        return NotImplemented
    value, nb = x._value, len(x._levels)
    batch = tuple(value.shape[:nb])
    if _logical_ndim(x) == _SPATIAL[name] + 2:   # batch dims folded into N
        merged = value.reshape(-1, *value.shape[nb + 1:])
        out = func(merged, *args[1:], **kwargs)
        return wrap(out.reshape(*batch, value.shape[nb], *out.shape[1:]), x._levels)
    merged = value.reshape(-1, *value.shape[nb:])
    out = func(merged, *args[1:], **kwargs)
    return wrap(out.reshape(*batch, *out.shape[1:]), x._levels)


def _cat(func, name, args, kwargs, levels):
    tensors = args[0] if args else kwargs.get("tensors")
    dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
    if len(args) > 2 or set(kwargs) - {"dim", "tensors"} or not isinstance(dim, int) or not tensors:
        return NotImplemented
    ndim = max(_logical_ndim(t) for t in tensors)
    shifted = _norm_dim(dim, ndim + (name == "stack")) + len(levels)
    full = [_full(t, levels) for t in tensors]
    return wrap(func(full, shifted), levels)


_REDUCTIONS = {"mean": lambda t, dims: t.mean(dims), "sum": lambda t, dims: t.sum(dims)}


def _pointwise_loss(func, name, args, kwargs, levels):
    """A loss that is elementwise before its reduction: computed unreduced, reduced per example."""
    kwargs = _without_defaults(kwargs)
    reduction = kwargs.get("reduction", "mean")
    if len(args) > 2 or set(kwargs) - {"reduction", "beta", "delta", "weight", "pos_weight"} or \
            is_batched(kwargs.get("weight")) or is_batched(kwargs.get("pos_weight")) or \
            not isinstance(reduction, str) or reduction not in ("mean", "sum", "none") or \
            len(args) == 2 and tuple(args[0].shape) != tuple(args[1].shape):
        return NotImplemented  # (input and target of other shapes: torch's warning or error, per example)
    unreduced = func(*[_full(a, levels) for a in args], **{**kwargs, "reduction": "none"})
    full = _full(wrap(unreduced, levels), levels)
    if reduction == "none":
        return wrap(full, levels)
    dims = tuple(range(len(levels), full.dim()))
    if not dims:
        return wrap(full, levels)
    return wrap(_REDUCTIONS[reduction](full, dims), levels)


def _without_defaults(kwargs):
    """The loss options given other than as their None defaults (the functional form passes them all)."""
    return {k: v for k, v in kwargs.items() if not (v is None and k in ("weight", "size_average", "reduce"))}


def _cross_entropy(func, name, args, kwargs, levels):
    """Class-index targets, no class weights: the unreduced losses of all examples in one call."""
    kwargs = _without_defaults(kwargs)
    reduction = kwargs.get("reduction", "mean")
    if len(args) != 2 or set(kwargs) - {"reduction", "ignore_index", "label_smoothing"} or \
            reduction not in ("mean", "sum", "none"):
        return NotImplemented
    logits, target = args
    if target.dtype.is_floating_point or _logical_ndim(logits) not in (1, 2) or \
            _logical_ndim(target) != _logical_ndim(logits) - 1:
        return NotImplemented
    ignore = kwargs.get("ignore_index", -100)
    px, pt = _flat(logits, levels), _flat(target, levels)
    n = px.shape[0]
    if px.dim() == 3:
        rows, row_targets = px.reshape(-1, px.shape[-1]), pt.reshape(-1)
    else:
        rows, row_targets = px, pt
    losses = func(rows, row_targets, **{**kwargs, "reduction": "none"}).reshape(n, -1)
    if reduction == "none":
        return _unflat(losses.reshape(n, *pt.shape[1:]), levels)
    total = losses.sum(1)
    if reduction == "sum":
        return _unflat(total, levels)
    counted = (pt.reshape(n, -1) != ignore).sum(1).to(total.dtype)
    return _unflat(total / counted, levels)


_RULES: dict = {}
for _n in _DIM_POSITION:
    _RULES[_n] = _dim_op
for _n in ("view reshape view_as reshape_as flatten permute transpose swapaxes swapdims t property:T property:mT "
           "adjoint movedim unsqueeze squeeze expand expand_as broadcast_to select narrow chunk split unbind "
           "tensor_split __getitem__").split():
    _RULES[_n] = _view_op
for _n in ("matmul", "mm", "bmm", "mv", "dot", "__matmul__", "__rmatmul__", "inner"):
    _RULES[_n] = _matmul
_RULES["__rmatmul__"] = lambda func, name, args, kwargs, levels: _matmul(func, name, (args[1], args[0]), kwargs,
                                                                         levels)
_RULES["linear"] = lambda func, name, args, kwargs, levels: (
    _linear(func, name, args, kwargs, levels) if is_batched(args[0]) or len(args) > 1 and is_batched(args[1])
    else NotImplemented)
_RULES["addmm"] = _addmm
for _n in _SPATIAL:
    _RULES[_n] = _conv
_RULES["cat"] = _RULES["concat"] = _RULES["concatenate"] = _RULES["stack"] = _cat
for _n in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy_with_logits",
           "binary_cross_entropy"):
    _RULES[_n] = _pointwise_loss
_RULES["cross_entropy"] = _cross_entropy


def _property_tensor(func, name, args, kwargs, levels):
    x = args[0]
    if name == "property:data":
        return wrap(x._value.data, x._levels)
    if name == "property:grad":
        return None
    return NotImplemented


_RULES["property:data"] = _RULES["property:grad"] = _property_tensor


def _batch_norm(func, name, args, kwargs, levels):
    """Training-mode batch norm updating unbatched running statistics: torch's error (one update per
    example would be wrong); otherwise the per-slice fallback."""
    names = ("input", "running_mean", "running_var", "weight", "bias", "training")
    given = dict(zip(names, args))
    given.update({k: v for k, v in kwargs.items() if k in names})
    stats = [given.get("running_mean"), given.get("running_var")]
    if given.get("training", False) and is_batched(given.get("input")) and \
            any(s is not None and not is_batched(s) for s in stats):
        raise RuntimeError("Batch norm got a batched tensor as input while the running_mean or running_var, which "
                           "will be updated in place, were not batched.\nIf you are using a module and do not need "
                           "eval mode, please set `track_running_stats` to be False.If you are using a prebuilt "
                           "module and do not need eval mode, please see the functorch website for resources on how "
                           "to patch your module to work with vmap")
    return NotImplemented


# ops whose input's first dim is a batch of independent examples: every vmap's batch folds into it.
# name -> the input's rank with that dim (None: the input always has it)
_FOLD_INTO_N = {"max_pool1d": 3, "max_pool2d": 4, "max_pool3d": 5, "avg_pool1d": 3, "avg_pool2d": 4, "avg_pool3d": 5,
                "adaptive_avg_pool1d": 3, "adaptive_avg_pool2d": 4, "adaptive_avg_pool3d": 5,
                "adaptive_max_pool1d": 3, "adaptive_max_pool2d": 4, "adaptive_max_pool3d": 5,
                "conv_transpose1d": 3, "conv_transpose2d": 4, "conv_transpose3d": 5, "conv1d": 3, "conv2d": 4,
                "conv3d": 5, "interpolate": None, "group_norm": None, "instance_norm": None, "batch_norm": None,
                "pixel_shuffle": 4, "pixel_unshuffle": 4}


def _fold_into_n(func, name, args, kwargs, levels):
    """The op once over every example: the batch dims folded into the input's first dim (or taken as it,
    for an input without one), the other tensor arguments unbatched."""
    x = args[0] if args else None
    if not is_batched(x) or _tree_any((args[1:], kwargs), is_batched):
        return NotImplemented
    if name == "batch_norm" and (args[5] if len(args) > 5 else kwargs.get("training", False)):
        return NotImplemented  # statistics over the batch: per example, and torch's error first
    value, nb = x._value, len(x._levels)
    batch = tuple(value.shape[:nb])
    full_rank = _FOLD_INTO_N[name]
    has_n = full_rank is None or _logical_ndim(x) == full_rank
    if has_n:
        merged = value.reshape(-1, *value.shape[nb + 1:])
    else:
        merged = value.reshape(-1, *value.shape[nb:])
    result = func(merged, *args[1:], **kwargs)

    def unfold(out):
        if not isinstance(out, Tensor):
            return out
        if has_n:
            return wrap(out.reshape(*batch, value.shape[nb], *out.shape[1:]), x._levels)
        return wrap(out.reshape(*batch, *out.shape[1:]), x._levels)
    return _tree_map(unfold, result) if isinstance(result, tuple) else unfold(result)


def _batch_norm_or_fold(func, name, args, kwargs, levels):
    refused = _batch_norm(func, name, args, kwargs, levels)
    return refused if refused is not NotImplemented else _fold_into_n(func, name, args, kwargs, levels)


for _n in _FOLD_INTO_N:
    if _n not in _SPATIAL:
        _RULES[_n] = _fold_into_n
_RULES["batch_norm"] = _batch_norm_or_fold


def _trailing_dims_op(func, name, args, kwargs, levels):
    """Ops over the input's last dims (layer_norm) or elementwise over an index input (embedding): the
    physical tensor as it is, the other arguments unbatched."""
    if not is_batched(args[0]) or _tree_any((args[1:], kwargs), is_batched):
        return NotImplemented
    return wrap(func(args[0]._value, *args[1:], **kwargs), args[0]._levels)


_RULES["layer_norm"] = _RULES["embedding"] = _RULES["rms_norm"] = _trailing_dims_op


# ---- indexing, flips and products: one call over the whole batch ------------------------------------------
def _arg(args, kwargs, position, key, default=None):
    return args[position] if len(args) > position else kwargs.get(key, default)


def _flip_roll(func, name, args, kwargs, levels):
    """flip and roll of one batched tensor: the same op on the physical tensor, dims shifted past the
    batch dims (roll without dims rolls the flattened example)."""
    if not _only_self_batched(args, kwargs):
        return NotImplemented
    x = args[0]
    value, nb, ndim = x._value, len(x._levels), _logical_ndim(x)
    if name.startswith("flip"):
        dims = _shape_args(args[1:]) if len(args) > 1 else kwargs.get("dims")
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        return wrap(value.flip([_norm_dim(d, ndim) + nb for d in dims]), x._levels)
    shifts, dims = _arg(args, kwargs, 1, "shifts"), _arg(args, kwargs, 2, "dims")
    if dims is None or dims == ():
        flat = value.reshape(*value.shape[:nb], -1)
        return wrap(flat.roll(shifts, nb).reshape(value.shape), x._levels)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    return wrap(value.roll(shifts, [_norm_dim(d, ndim) + nb for d in dims]), x._levels)


def _outer(func, name, args, kwargs, levels):
    """outer(a, b) of 1-D examples: a column times a row, broadcast over the batch dims."""
    if len(args) != 2 or kwargs:
        return NotImplemented
    a, b = (_aligned(t, levels, 1) for t in args)
    return wrap(a.unsqueeze(-1) * b.unsqueeze(-2), levels)


def _kron(func, name, args, kwargs, levels):
    """kron(a, b): every pair of elements multiplied (a's dims interleaved with b's), then each pair of
    dims merged; the smaller example padded with leading 1s, as kron pads it."""
    if len(args) != 2 or kwargs:
        return NotImplemented
    rank = max(_logical_ndim(t) for t in args)
    a, b = (_full(_expanded_rank(t, rank), levels) for t in args)
    nb = len(levels)
    sa, sb = a.shape[nb:], b.shape[nb:]
    a = a.reshape(*a.shape[:nb], *[s for d in sa for s in (d, 1)])
    b = b.reshape(*b.shape[:nb], *[s for d in sb for s in (1, d)])
    product = a * b
    return wrap(product.reshape(*product.shape[:nb], *[x * y for x, y in zip(sa, sb)]), levels)


def _expanded_rank(t, rank):
    """``t`` with leading 1s up to ``rank`` per-example dims (batched or not)."""
    missing = rank - _logical_ndim(t)
    if not missing:
        return t
    if not is_batched(t):
        return t.reshape(*([1] * missing), *t.shape)
    nb = len(t._levels)
    return wrap(t._value.reshape(*t._value.shape[:nb], *([1] * missing), *t._value.shape[nb:]), t._levels)


def _gather_scatter(func, name, args, kwargs, levels):
    """gather, scatter and scatter_add (and their in-place forms) with any of self, index and src
    batched: every tensor argument given a dim per level (expanded where it is not batched), the dim
    shifted past them; one call."""
    names = ("input", "dim", "index", "src") if name.startswith("scatter") else ("input", "dim", "index")
    if len(args) > len(names):
        return NotImplemented  # (gather's sparse_grad, given by position)
    given = dict(zip(names, args))
    for key in list(kwargs):
        if key in names or key == "value":
            given[key] = kwargs[key]
    extra = {k: v for k, v in kwargs.items() if k not in given}
    x, dim, index = given.get("input", args[0]), given.get("dim"), given.get("index")
    if not isinstance(dim, int) or not isinstance(index, Tensor) or _logical_ndim(x) == 0:
        return NotImplemented
    shifted = _norm_dim(dim, _logical_ndim(x)) + len(levels)
    if _is_inplace(name):
        if not is_batched(x) or x._levels != levels:
            raise _inplace_error(name, name)
        target = x._value
    else:
        target = _full(x, levels)
    src = given.get("src", given.get("value"))
    rest = () if "src" not in names else (_full(src, levels) if isinstance(src, Tensor) else src,)
    result = func(target, shifted, _full(index, levels), *rest, **extra)
    return x if _is_inplace(name) else wrap(result, levels)


def _index_select(func, name, args, kwargs, levels):
    """index_select: an unbatched index selects along the shifted dim; a batched one becomes a gather
    with the index spread over the other dims."""
    x, dim, index = args[0], _arg(args, kwargs, 1, "dim"), _arg(args, kwargs, 2, "index")
    if not isinstance(dim, int) or set(kwargs) - {"dim", "index"} or len(args) > 3:
        return NotImplemented
    ndim = _logical_ndim(x)
    d = _norm_dim(dim, ndim)
    if not is_batched(index):
        return wrap(x._value.index_select(d + len(x._levels), index), x._levels)
    full, nb = _full(x, levels), len(levels)
    if ndim == 0:
        return NotImplemented
    picks = _full(index, levels).reshape(*_batch_shape(levels), *([1] * d), -1, *([1] * (ndim - d - 1)))
    shape = list(full.shape)
    shape[nb + d] = picks.shape[nb + d]
    return wrap(full.gather(nb + d, picks.expand(*shape)), levels)


def _take_along_dim(func, name, args, kwargs, levels):
    x, indices, dim = args[0], _arg(args, kwargs, 1, "indices"), _arg(args, kwargs, 2, "dim")
    if set(kwargs) - {"indices", "dim"} or len(args) > 3:
        return NotImplemented
    nb = len(levels)
    if dim is None:
        flat_x, flat_i = (_full(t, levels) for t in (x, indices))
        flat_x = flat_x.reshape(*flat_x.shape[:nb], -1)
        flat_i = flat_i.reshape(*flat_i.shape[:nb], -1)
        return wrap(hookgrad.take_along_dim(flat_x, flat_i, nb), levels)
    rank = max(_logical_ndim(x), _logical_ndim(indices))
    if _logical_ndim(x) != _logical_ndim(indices):
        return NotImplemented  # torch's own size error
    physical_x, physical_i = (_full(t, levels) for t in (x, indices))
    return wrap(hookgrad.take_along_dim(physical_x, physical_i, _norm_dim(dim, rank) + nb), levels)


def _masked_fill(func, name, args, kwargs, levels):
    """masked_fill with a batched 0-d value: a where over the batch (the value in self's dtype)."""
    x, mask, value = args[0], _arg(args, kwargs, 1, "mask"), _arg(args, kwargs, 2, "value")
    if not is_batched(value) or len(args) + len(kwargs) != 3 or _logical_ndim(value) != 0:
        return _elementwise(func, name, args, kwargs, levels)
    return _run_op(hookgrad.where, (mask, _run_op(Tensor.to, (value, x.dtype), {}), x), {})


_RULES["masked_fill"] = _masked_fill
_RULES["flip"] = _RULES["flip_method"] = _RULES["roll"] = _flip_roll
_RULES["outer"] = _RULES["ger"] = _outer
_RULES["kron"] = _kron
for _n in ("gather", "scatter", "scatter_add", "scatter_", "scatter_add_"):
    _RULES[_n] = _gather_scatter
_RULES["index_select"] = _index_select
_RULES["take_along_dim"] = _take_along_dim


def _getitem(func, name, args, kwargs, levels):
    x, index = args[0], args[1]
    parts = index if isinstance(index, tuple) else (index,)
    if not is_batched(x) and not _tree_any(parts, is_batched):
        return func(x, index)
    return _index(x, parts, levels)


def _index(x, parts, levels):
    """``x[parts]`` once over the batch. Basic indexing (ints, slices, None, Ellipsis) on the physical
    tensor past its batch dims; with index tensors (batched or not, bool masks unbatched) each level
    adds an arange index in front, and the dims the index tensors make are placed where torch places
    them for one example (where the tensors stand if they are adjacent, else first)."""
    if not all(p is None or p is Ellipsis or isinstance(p, (int, slice, Tensor)) and not isinstance(p, bool)
               for p in parts):
        return NotImplemented
    if not any(isinstance(p, Tensor) for p in parts):
        nb = len(x._levels)
        return wrap(x._value[(slice(None),) * nb + tuple(parts)], x._levels)
    if any(isinstance(p, Tensor) and p.dtype == hookgrad.bool and is_batched(p) for p in parts):
        return NotImplemented  # a batched mask: data-dependent shapes
    if any(isinstance(p, int) for p in parts):
        # torch selects the ints first, then indexes with the tensors
        basic = [slice(None) if isinstance(p, Tensor) else p for p in parts]
        x = _index(x, basic, x._levels) if is_batched(x) else x[tuple(basic)]
        parts = [p if isinstance(p, Tensor) else Ellipsis if p is Ellipsis else slice(None)
                 for p in parts if not isinstance(p, int)]
    expanded = []
    for p in parts:  # a mask stands for its nonzero positions, one index tensor per dim it covers
        if isinstance(p, Tensor) and p.dtype == hookgrad.bool:
            expanded.extend(p.nonzero().unbind(1) if p.dim() else [p])
        else:
            expanded.append(p)
    parts = expanded
    if any(isinstance(p, Tensor) and p.dtype == hookgrad.bool for p in parts):
        return NotImplemented
    consumed = sum(p is not None and p is not Ellipsis for p in parts)
    if Ellipsis in [p for p in parts if not isinstance(p, Tensor)]:
        at = next(i for i, p in enumerate(parts) if p is Ellipsis and not isinstance(p, Tensor))
        parts = parts[:at] + [slice(None)] * (_logical_ndim(x) - consumed) + parts[at + 1:]
    where = [i for i, p in enumerate(parts) if isinstance(p, Tensor)]
    rank = max(_logical_ndim(parts[i]) for i in where)
    nb = len(levels)
    physical = [_aligned(p, levels, rank) if isinstance(p, Tensor) else p for p in parts]
    aranges = []
    for i, size in enumerate(_batch_shape(levels)):
        shape = [1] * (nb + rank)
        shape[i] = size
        aranges.append(hookgrad.arange(size).reshape(shape))
    result = _full(x, levels)[(*aranges, *physical)]
    adjacent = where == list(range(where[0], where[-1] + 1))
    before = sum(1 for p in parts[:where[0]] if not isinstance(p, Tensor))
    if adjacent and before:
        # NumPy's rule put the index dims first (the aranges and the tensors are apart): move them back
        order = list(range(result.dim()))
        block = order[nb:nb + rank]
        rest = order[nb + rank:]
        result = result.permute(*order[:nb], *rest[:before], *block, *rest[before:])
    return wrap(result, levels)


_RULES["__getitem__"] = _getitem


def _conv_batched_weight(func, name, args, kwargs, levels):
    """A convolution whose weight (or bias) is batched: the examples side by side as groups of one
    convolution (input (N, B*C, ...), weight (B*O, C/g, ...), groups B*g)."""
    names = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
    given = dict(zip(names, args))
    given.update(kwargs)
    if set(given) - set(names):
        return NotImplemented
    x, weight, bias = given["input"], given["weight"], given.get("bias")
    groups = given.get("groups", 1)
    spatial = _SPATIAL[name]
    unbatched_form = _logical_ndim(x) == spatial + 1
    nb = len(levels)
    batch = _batch_shape(levels)
    b = 1
    for s in batch:
        b *= s
    px = _full(x, levels)
    px = px.reshape(b, *px.shape[nb:])
    if unbatched_form:
        px = px.unsqueeze(1)  # (B, N=1, C, ...)
    n, c = px.shape[1], px.shape[2]
    merged_x = px.transpose(0, 1).reshape(n, b * c, *px.shape[3:])
    pw = _full(weight, levels)
    merged_w = pw.reshape(b * pw.shape[nb], *pw.shape[nb + 1:])
    merged_b = None if bias is None else _full(bias, levels).reshape(-1)
    options = {k: given[k] for k in ("stride", "padding", "dilation") if k in given}
    out = func(merged_x, merged_w, merged_b, groups=groups * b, **options)
    out = out.reshape(n, b, -1, *out.shape[2:]).transpose(0, 1)
    if unbatched_form:
        out = out.squeeze(1)
    return wrap(out.reshape(*batch, *out.shape[1:]), levels)


# ---- entering and leaving a vmap ------------------------------------------------------------------------------
_MODE: list = []  # the one batching mode pushed while any vmap runs


def enter(size: int, randomness: str, level: int) -> int:
    """Start the vmap at ``level`` (torch's: one more than the function transforms running around it)."""
    ACTIVE.append([level, size, randomness])
    if len(ACTIVE) == 1:
        mode = _BatchingMode()
        mode.__enter__()
        _MODE.append(mode)
    return level


def leave(level: int) -> None:
    assert ACTIVE and ACTIVE[-1][0] == level
    if len(ACTIVE) == 1:
        _MODE.pop().__exit__(None, None, None)
    ACTIVE.pop()


def add_level(t: Tensor, dim: int, level: int) -> Tensor:
    """``t`` batched over ``level`` along its (per-example) dim ``dim``."""
    if is_batched(t):
        nb = len(t._levels)
        out = wrap(_moved(t._value, dim + nb, nb), t._levels + (level,))
        shown = {**_shown_bdims(t), level: dim}
    else:
        out = wrap(_moved(t, dim, 0), (level,))
        shown = {level: dim}
    if any(shown.values()):
        out.__dict__["_shown_bdims"] = shown
    return out


def _moved(t: Tensor, source: int, destination: int) -> Tensor:
    # no view node where nothing moves: the output's grad_fn stays the last op's, as in torch
    return t if source == destination else t.movedim(source, destination)


def remove_level(t, level: int, out_dim: int, size: int):
    """The output ``t`` of the vmap at ``level`` with that level's dim placed at ``out_dim``."""
    if is_batched(t) and level in t._levels:
        value, own = t._value, t._levels
        position = own.index(level)
        rest = tuple(lvl for lvl in own if lvl != level)
        value = _moved(value, position, len(own) - 1)
    else:
        if is_batched(t):
            value, rest = t._value, t._levels
        else:
            value, rest = t, ()
        nb = len(rest)
        value = value.unsqueeze(nb).expand(*value.shape[:nb], size, *value.shape[nb:])
    nb = len(rest)
    ndim = value.dim() - nb
    value = _moved(value, nb, _norm_dim(out_dim, ndim) + nb)
    return wrap(value, rest)


def batched_over_all(t: Tensor) -> Tensor:
    """``t`` batched over every running vmap (expanded where it was not): what a transform nested
    inside vmap differentiates, so that each example gets its own gradient."""
    if not ACTIVE or not isinstance(t, Tensor):
        return t
    levels = tuple(lvl for lvl, _, _ in ACTIVE)
    if is_batched(t) and t._levels == levels:
        return t
    return wrap(_full(t, levels), levels)


_EXTENDING_URL = "https://pytorch.org/docs/main/notes/extending.func.html"


def function_apply(cls, args, kwargs):
    """A custom ``autograd.Function`` applied to batched tensors, as torch does it: ``setup_context``
    and a vmap rule are required; a ``vmap`` staticmethod is called once for the innermost level
    (``vmap(info, in_dims, *args)`` with that level's batch dim unwrapped, returning ``(output,
    out_dims)``); with ``generate_vmap_rule=True`` its steps run once on batched tensors. Where a graph
    is recorded, its backward too sees batched gradients (see ``_rule_function_apply``)."""
    if not cls._custom_setup:
        raise RuntimeError("In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, jacrev, "
                           f"...), it must override the setup_context staticmethod. For more details, please see "
                           f"{_EXTENDING_URL}")
    overrides_vmap = "vmap" in vars(cls) or any(
        "vmap" in vars(base) for base in cls.__mro__[1:] if base.__name__ not in ("Function", "_SingleLevelFunction"))
    if getattr(cls, "generate_vmap_rule", False):
        if overrides_vmap:
            raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it has both generate_vmap_rule=True and "
                               "an overridden vmap staticmethod. Please set generate_vmap_rule=False or delete the "
                               f"overridden vmap staticmethod to avoid ambiguity. For more details, please see "
                               f"{_EXTENDING_URL}")
        return _generated_rule_apply(cls, args, kwargs)
    if not overrides_vmap:
        raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it does not have vmap support. Please override "
                           f"and implement the vmap staticmethod or set generate_vmap_rule=True. For more details, "
                           f"please see {_EXTENDING_URL}")
    if _tree_any(kwargs, lambda v: isinstance(v, Tensor)):
        raise NotImplementedError("Run vmap on autograd.Function with kwarg-only Tensor args. Please do not pass "
                                  f"kwarg-only Tensors to autograd.Function. Got: {kwargs}")
    level = _levels_in(args, kwargs)[-1]
    entry = next(e for e in ACTIVE if e[0] == level)
    unwrapped, in_dims = zip(*[_peeled(a, level) for a in args]) if args else ((), ())
    if hookgrad.is_grad_enabled() and any(isinstance(u, Tensor) and u.requires_grad for u in unwrapped):
        # differentiated (vmap of grad): the node's backward, as torch's, sees batched gradients
        return _rule_function_apply(cls, True, level, entry, unwrapped, in_dims)
    output, out_dims = _call_vmap_staticmethod(cls, VmapInfo(entry[1], entry[2]), in_dims, unwrapped, kwargs)
    originals = {id(u): a for u, a in zip(unwrapped, args)}

    def placed(out, dim):
        if not isinstance(out, Tensor):
            return out
        if id(out) in originals:  # an input handed back (mark_dirty): the caller's own tensor
            return originals[id(out)]
        return out if dim is None else add_level(out, _norm_dim(dim, _logical_ndim(out)), level)
    return _zip_out_dims(output, out_dims, placed)


def _call_vmap_staticmethod(cls, info, in_dims, unwrapped, kwargs):
    result = cls.vmap(info, tuple(in_dims), *unwrapped, **kwargs)
    if not isinstance(result, tuple) or len(result) != 2:
        base = ("Expected the vmap staticmethod to have two returns, an output and out_dims with pytree structure "
                "compatible with the output. ")
        raise RuntimeError(base + (f"Got a {type(result)} instead" if not isinstance(result, tuple) else
                                   f"Got {len(result)} returns instead"))
    return result


def _zip_out_dims(output, out_dims, placed):
    """``placed(out, dim)`` for each output and its out_dim (one int or None for all, or one per output)."""
    if isinstance(output, (tuple, list)):
        dims = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(output)
        if len(dims) != len(output) or any(isinstance(d, (tuple, list)) for d in dims):
            raise _incompatible_out_dims(out_dims, output)
        return type(output)(placed(o, d) for o, d in zip(output, dims))
    if not (out_dims is None or isinstance(out_dims, int)):
        raise _incompatible_out_dims(out_dims, output)
    return placed(output, out_dims)


# ---- a Function whose steps run once on batched tensors ---------------------------------------------------
class _RuleInfo:
    """What the generated Function's steps need to batch the user's: the vmap level, its size and
    randomness, where each input's batch dim is (None: not batched over the level), whether the
    forward returned one tensor."""

    __slots__ = ("level", "size", "randomness", "in_dims", "single")

    def __init__(self, level, size, randomness, in_dims):
        self.level, self.size, self.randomness, self.in_dims = level, size, randomness, in_dims
        self.single = True


_GENERATED_RULES: dict = {}  # (user's Function class, forward through its vmap staticmethod) -> Function


def _generated_rule_apply(cls, args, kwargs):
    """As torch's generated vmap rule: the user's forward, setup_context and backward each run once,
    on tensors batched over the level, so they see per-example shapes."""
    if kwargs:
        return _per_slice(cls.apply, "apply", args, kwargs, _levels_in(args, kwargs))
    level = _levels_in(args, kwargs)[-1]
    entry = next(e for e in ACTIVE if e[0] == level)
    pairs = [_peeled_at_front(a, level) for a in args]
    return _rule_function_apply(cls, False, level, entry, [a for a, _ in pairs],
                                [0 if batched else None for _, batched in pairs])


def _rule_function_apply(cls, through_vmap_staticmethod, level, entry, unwrapped, in_dims):
    """A Function over the physical tensors (``unwrapped``, each batched at its in_dim) whose node
    runs the user's steps on batched tensors: forward through the user's vmap staticmethod or on
    batched tensors, setup_context and backward on batched tensors. Its outputs have the level's
    batch dim first."""
    info = _RuleInfo(level, entry[1], entry[2], tuple(in_dims))
    key = (cls, through_vmap_staticmethod)
    rule = _GENERATED_RULES.get(key)
    if rule is None:
        rule = _GENERATED_RULES[key] = _generated_rule(cls, through_vmap_staticmethod)
    outputs = rule.apply(info, *unwrapped)
    if isinstance(outputs, tuple):
        return tuple(add_level(o, 0, level) if isinstance(o, Tensor) else o for o in outputs)
    return add_level(outputs, 0, level)


def _expanded_front(t, size: int):
    return t.unsqueeze(0).expand(size, *t.shape)


def _peeled_at_front(a, level: int):
    """(``a``'s tensor without ``level``, that level's batch dim first among the example's dims;
    whether ``a`` was batched over it)."""
    if not is_batched(a) or level not in a._levels:
        return a, False
    own = a._levels
    rest = tuple(lvl for lvl in own if lvl != level)
    return wrap(_moved(a._value, own.index(level), len(own) - 1), rest), True


class _AtLevel:
    """The user's step runs inside the vmap at ``info.level`` (entered again for a backward pass run
    after that vmap returned), its ops seen by the batching mode."""

    def __init__(self, info):
        self.info = info
        self.entered = False

    def __enter__(self):
        if not any(e[0] == self.info.level for e in ACTIVE):
            enter(self.info.size, self.info.randomness, self.info.level)
            self.entered = True
        self.switch = _EnableTorchFunction()
        self.switch.__enter__()

    def __exit__(self, *exc_info):
        self.switch.__exit__(*exc_info)
        if self.entered:
            leave(self.info.level)


def _generated_rule(cls, through_vmap_staticmethod):
    from ..autograd.function import Function

    def batched(info, tensors):
        return [t if d is None or not isinstance(t, Tensor) else add_level(t, d, info.level)
                for t, d in zip(tensors, info.in_dims)]

    def at_front(info, t):
        """``t``'s physical tensor at this level, the batch dim first."""
        if not isinstance(t, Tensor):
            return t
        peeled, was_batched = _peeled_at_front(t, info.level)
        return peeled if was_batched else _expanded_front(peeled, info.size)

    def forward(info, *args):
        with _AtLevel(info):
            if through_vmap_staticmethod:
                out, out_dims = _call_vmap_staticmethod(cls, VmapInfo(info.size, info.randomness), info.in_dims,
                                                        args, {})
                info.single = not isinstance(out, (tuple, list))
                placed = _zip_out_dims(out, out_dims, lambda o, d: o if not isinstance(o, Tensor) else
                                       _expanded_front(o, info.size) if d is None else o.movedim(d, 0))
                return placed if info.single else tuple(placed)
            out = cls.forward(*batched(info, args))
            info.single = not isinstance(out, tuple)
            return at_front(info, out) if info.single else tuple(at_front(info, o) for o in out)

    def setup_context(ctx, inputs, output):
        info = inputs[0]
        ctx._generated_rule_info = info
        with _AtLevel(info):
            outs = (output,) if info.single else output
            shown = tuple(add_level(o, 0, info.level) if isinstance(o, Tensor) else o for o in outs)
            cls.setup_context(ctx, tuple(batched(info, inputs[1:])), shown[0] if info.single else shown)

    def backward(ctx, *grads):
        info = ctx._generated_rule_info
        with _AtLevel(info):
            result = cls.backward(ctx, *[None if g is None else add_level(g, 0, info.level) for g in grads])
            result = result if isinstance(result, tuple) else (result,)
            physical = []
            for g, d in zip(result, info.in_dims):
                if g is None or not isinstance(g, Tensor):
                    physical.append(g)
                    continue
                peeled, was_batched = _peeled_at_front(g, info.level)
                if d is None:  # an input shared by every example: its gradients summed over the batch
                    physical.append(peeled.sum(0) if was_batched else peeled * info.size)
                else:
                    physical.append((peeled if was_batched else _expanded_front(peeled, info.size)).movedim(0, d))
        return (None, *physical)

    return type(f"{cls.__name__}Vmapped", (Function,), {
        "forward": staticmethod(forward), "setup_context": staticmethod(setup_context),
        "backward": staticmethod(backward), "generate_vmap_rule": True})


def _peeled(a, level: int):
    """``a`` without ``level``'s batch dim (where torch keeps it: its ``bdim``), and that dim's index
    (None where ``a`` is not batched over ``level``)."""
    if not is_batched(a) or level not in a._levels:
        return a, None
    own = a._levels
    rest = tuple(lvl for lvl in own if lvl != level)
    bdim = _shown_bdims(a).get(level, 0)
    value = _moved(a._value, own.index(level), len(own) - 1)  # the level's dim first among the example's
    value = _moved(value, len(rest), len(rest) + bdim)
    out = wrap(value, rest)
    if rest and any(_shown_bdims(a).get(lvl) for lvl in rest):
        out.__dict__["_shown_bdims"] = {lvl: d for lvl, d in _shown_bdims(a).items() if lvl != level}
    return out, bdim


def _incompatible_out_dims(out_dims, output):
    return RuntimeError("The autograd.Function's vmap staticmethod returned an incompatible (output, out_dims) tuple. "
                        f"Expected out_dims={out_dims} to be compatible with the structure of `output`. For more "
                        f"details, please see {_EXTENDING_URL}")


class VmapInfo:
    """What a custom op's vmap rule is told: the batch size and the randomness flag."""

    def __init__(self, batch_size: int, randomness: str):
        self.batch_size = batch_size
        self.randomness = randomness

    def __repr__(self):
        return f"VmapInfo(batch_size={self.batch_size}, randomness='{self.randomness}')"


def custom_op_call(entry, args, kwargs):
    """A ``torch.library.custom_op`` called on batched tensors: its registered vmap rule once, with
    every running vmap's batch folded into one dim; without a rule, the op once per batch element."""
    from ..func import TRANSFORMS_ACTIVE
    levels = _levels_in(args, kwargs)
    if entry.backward is not None and TRANSFORMS_ACTIVE[0] > len(ACTIVE) and hookgrad.is_grad_enabled():
        raise RuntimeError("In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, jacrev, "
                           f"...), it must override the setup_context staticmethod. For more details, please see "
                           f"{_EXTENDING_URL}")
    rule = entry.other_kernels.get("vmap")
    if rule is None or kwargs:
        return _per_slice(entry.call, "custom_op", args, kwargs, levels)
    # the rule handles the innermost level; tensors batched over outer levels stay batched over them
    level = levels[-1]
    size = _size_of(level)

    def peeled(a):
        if not is_batched(a) or level not in a._levels:
            return a, None
        own = a._levels
        value = a._value.movedim(own.index(level), len(own) - 1)
        return wrap(value, own[:-1] if own[-1] == level else tuple(lvl for lvl in own if lvl != level)), 0
    pairs = [peeled(a) for a in args]
    info = VmapInfo(size, ACTIVE[-1][2])
    outputs, out_dims = rule(info, tuple(d for _, d in pairs), *[a for a, _ in pairs])

    def placed(out, dim):
        if not isinstance(out, Tensor):
            return out
        if dim is None:
            return out
        return add_level(out, dim % max(_logical_ndim(out), 1), level)
    if isinstance(outputs, tuple):
        dims = out_dims if isinstance(out_dims, tuple) else (out_dims,) * len(outputs)
        return tuple(placed(o, d) for o, d in zip(outputs, dims))
    return placed(outputs, out_dims)


def refuse_backward_hook(args) -> None:
    """Module backward hooks on batched tensors that require grad: torch's error."""
    from ..func import TRANSFORMS_ACTIVE
    differentiating = TRANSFORMS_ACTIVE[0] > len(ACTIVE)  # a grad/vjp/jacrev runs too (plain vmap: no error)
    if differentiating and hookgrad.is_grad_enabled() and any(is_batched(a) and a._value.requires_grad
                                                              for a in args):
        raise RuntimeError("In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, jacrev, "
                           f"...), it must override the setup_context staticmethod. For more details, please see "
                           f"{_EXTENDING_URL}")


def _register_hook(func, name, args, kwargs, levels):
    """A tensor hook on a batched tensor: registered once on the physical tensor; the hook sees the
    gradient batched as the tensor (per-example shape) and what it returns replaces it."""
    x, hook = args[0], (args[1] if len(args) > 1 else kwargs["hook"])
    own = x._levels

    def on_physical(grad):
        # backward passes run with overrides off: the hook's ops on the batched gradient need the mode
        with _EnableTorchFunction():
            result = hook(wrap(grad, own))
        if result is None:
            return None
        return _full(result, own) if is_batched(result) or isinstance(result, Tensor) else result
    return x._value.register_hook(on_physical)


_RULES["register_hook"] = _register_hook


class _Unpacked:
    """A saved tensor already unpacked: a node's backward run once per batch entry unpacks (and runs
    the unpack hooks) once, as torch's one vmapped backward does."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def unpack(self, node):
        return self.value


def _stacked_entries(entries, levels):
    """One gradient per batch entry, stacked into a batched tensor (None where the formula gave none)."""
    if any(e is None for e in entries):
        return None
    if any(e._requires_grad for e in entries):
        return wrap(hookgrad.stack(entries), levels)
    return wrap(_plain(np.stack([e._ndarray for e in entries])), levels)


def _nodes_running_user_code() -> tuple:
    """Nodes whose backward is the user's code (a custom Function's) or calls the user's hooks (a
    module's backward hooks): run once on the batched gradients, as torch runs them."""
    from ..autograd.function import BackwardCFunction
    from ..nn.modules._backward_hook import _HookIdentityNode
    return BackwardCFunction, _HookIdentityNode


# -- batched formulas: one call on the whole batch of gradients -----------------------------------
# A node's formula computes on arrays of the example's shape. For the common nodes the same values
# come from one call on the gradient array with the batch as its leading dim (saved tensors
# broadcast against it); each entry below returns the input gradients so, or NotImplemented where
# its case is not covered (the node then runs once per batch entry).

_REAL = (np.dtype(np.float32), np.dtype(np.float64))


def _sum_to(g, shape):
    """The batched gradient ``g`` (batch dim first) summed over the dims an input of ``shape`` was
    broadcast along, as ``sum_to_shape`` does per entry."""
    if g.shape[1:] == tuple(shape):
        return g
    lead = g.ndim - 1 - len(shape)
    dims = tuple(range(1, 1 + lead)) + tuple(1 + lead + i for i, s in enumerate(shape)
                                             if s == 1 and g.shape[1 + lead + i] != 1)
    return g.sum(axis=dims).reshape((g.shape[0],) + tuple(shape)) if dims else g


def _real_operands(g, *tensors) -> bool:
    return g.dtype in _REAL and all(t is None or t._ndarray.dtype is g.dtype for t in tensors)


def _matmul_left(g, b):
    """Per entry ``g[i] @ b.T`` as one product (the batch folded into the rows)."""
    n, p = g.shape[1:]
    return (g.reshape(-1, p) @ b.T).reshape(g.shape[0], n, b.shape[0])


def _matmul_right(a, g):
    """Per entry ``a.T @ g[i]`` as one product (the batch folded into the columns)."""
    size, n, p = g.shape
    return (a.T @ g.transpose(1, 0, 2).reshape(n, size * p)).reshape(a.shape[1], size, p).transpose(1, 0, 2)


def _batched_unary(node, g, saved):
    formula = node.array_formula
    if formula is None or not _real_operands(g, *saved):
        return NotImplemented
    return (formula(g, saved[0]._ndarray) if saved else formula(g)),


def _batched_relu(node, g, saved):
    if not _real_operands(g, *saved):
        return NotImplemented
    return np.where(saved[0]._ndarray <= 0, g.dtype.type(0), g),


def _batched_add(node, g, saved):
    scale = node.sign * node.alpha
    needs = node._should_compute_output  # the pass's rule: an edge, toward a wanted gradient
    dtypes = [dt for i, dt in enumerate((node.a_dtype, node.b_dtype)) if needs(i)]
    if scale not in (1, -1) or g.dtype not in _REAL or any(dt != g.dtype for dt in dtypes):
        return NotImplemented
    return (_sum_to(g, node.a_shape) if needs(0) else None,
            _sum_to(g if scale == 1 else -g, node.b_shape) if needs(1) else None)


def _operands(node, g, saved):
    """A product or quotient's operands as its per-entry formula takes them: (the second operand, a
    saved tensor's array or the number rounded to the gradient's dtype; the first operand's array),
    None for one not saved; NotImplemented for a case left to that formula."""
    from .._ops.pointwise import _scalar_operand
    if node.scalar is None:
        if not _real_operands(g, *saved):
            return NotImplemented
        return tuple(None if s is None else s._ndarray for s in saved)
    if node.scalar.__class__ in (int, float) and node.a_dtype is g.dtype and g.dtype in _REAL:
        return _scalar_operand(node.scalar, g.dtype), None
    return NotImplemented


def _batched_pair(node, g, saved, grad_of_a, grad_of_b):
    """A two-operand node's gradients on the batched ``g``: ``grad_of_a(g, a, b)`` and
    ``grad_of_b(g, a, b)``, each summed back to its operand's shape (None where there is no edge)."""
    operands = _operands(node, g, saved)
    if operands is NotImplemented:
        return NotImplemented
    b, a = operands
    needs = node._should_compute_output  # the pass's rule: an edge, toward a wanted gradient
    return (_sum_to(grad_of_a(g, a, b), node.a_shape) if needs(0) else None,
            _sum_to(grad_of_b(g, a, b), node.b_shape) if needs(1) else None)


def _batched_mul(node, g, saved):
    return _batched_pair(node, g, saved, lambda g, a, b: g * b, lambda g, a, b: g * a)


def _batched_div(node, g, saved):
    return _batched_pair(node, g, saved, lambda g, a, b: g / b, lambda g, a, b: -g * ((a / b) / b))


def _batch_dim(dim: int) -> int:
    """An example's dim ``dim`` in the gradient with the batch dim in front."""
    return dim + 1 if dim >= 0 else dim


def _batched_softmax(node, g, saved):
    if not _real_operands(g, *saved) or not saved[0]._ndarray.ndim:
        return NotImplemented
    return node.on_arrays(g, saved[0]._ndarray, _batch_dim(node.dim)),


def _batched_log_softmax(node, g, saved):
    if not _real_operands(g, *saved) or not saved[0]._ndarray.ndim:
        return NotImplemented
    # LogSoftmaxBackward0.on_arrays's steps, its in-place product broadcast to the batch
    return g - np.exp(saved[0]._ndarray) * g.sum(axis=(_batch_dim(node.dim),), keepdims=True, dtype=g.dtype),


def _batched_unsqueeze(node, g, saved):
    return np.squeeze(g, axis=_batch_dim(node.dim)),


def _batched_permute(node, g, saved):
    return g.transpose((0,) + tuple(_batch_dim(int(d)) for d in np.argsort(node.dims))),


def _batched_transpose(node, g, saved):
    return np.swapaxes(g, _batch_dim(node.d0), _batch_dim(node.d1)),


def _batched_expand(node, g, saved):
    return _sum_to(g, node.in_shape),


def _batched_mm(node, g, saved):
    b, a = saved
    if not _real_operands(g, a, b) or g.ndim != 3:
        return NotImplemented
    needs = node._should_compute_output  # the pass's rule: an edge, toward a wanted gradient
    return (_matmul_left(g, b._ndarray) if needs(0) else None,
            _matmul_right(a._ndarray, g) if needs(1) else None)


def _batched_addmm(node, g, saved):
    a, b = saved
    if node.alpha != 1 or node.beta != 1 or not _real_operands(g, a, b) or g.ndim != 3:
        return NotImplemented
    needs = node._should_compute_output  # the pass's rule: an edge, toward a wanted gradient
    return (_sum_to(g, node.bias_shape) if needs(0) else None,
            _matmul_left(g, b._ndarray) if needs(1) else None,
            _matmul_right(a._ndarray, g) if needs(2) else None)


def _batched_t(node, g, saved):
    return (g.swapaxes(1, 2) if g.ndim == 3 else g),


def _batched_view(node, g, saved):
    return g.reshape((g.shape[0],) + tuple(node.in_shape)),


def _expanded(g, node, keep_shape):
    """``g`` (one reduced value per entry) reshaped to ``keep_shape`` and expanded to the input's shape."""
    return np.array(np.broadcast_to(g.reshape((g.shape[0],) + tuple(keep_shape)),
                                    (g.shape[0],) + tuple(node.in_shape)))


def _batched_sum(node, g, saved):
    return _expanded(g, node, (1,) * len(node.in_shape)),


def _batched_sum_dims(node, g, saved):
    from .._ops.reduce import _keep_shape
    if node.dims is None:
        return NotImplemented
    return _expanded(g, node, g.shape[1:] if node.keepdim else _keep_shape(node.in_shape, node.dims)),


def _batched_mean(node, g, saved):
    if g.dtype not in _REAL:
        return NotImplemented
    return (_batched_sum_dims if hasattr(node, "dims") else _batched_sum)(node, g / node.count, saved)


def _recorded_unary(node, g, saved):
    """A create_graph pass: an elementwise op's formula (or a product by a number) once on the batched
    gradient tensor ``g``, so the gradient's grad_fn is the formula's last node (MulBackward0, ...),
    as torch's."""
    from .._ops._declare import UnaryNode
    from .._ops import pointwise
    cls = type(node)
    if cls is pointwise.MulBackward0 and isinstance(node.scalar, (int, float)) and node.a_dtype is g._ndarray.dtype:
        return g * node.scalar, None
    # an elementwise formula is declared with its array form (relu's computes on arrays itself)
    elementwise = cls.__bases__ == (UnaryNode,) and (cls.array_formula is not None
                                                     or cls.formula is pointwise._relu_backward)
    if not elementwise or not _real_operands(g._ndarray, *saved):
        return NotImplemented
    # the saved tensor expanded to the batch: formulas recording their own node expect its shape
    return cls.formula(g, *[s.expand(g.shape) for s in saved]),


_BATCHED_FORMULAS: dict = {}


def _batched_formula(node):
    """The one-call formula for ``node``'s class (None: the node runs per batch entry)."""
    from .._ops._declare import UnaryNode
    from .._ops import pointwise, linalg, views, reduce
    if not _BATCHED_FORMULAS:
        _BATCHED_FORMULAS.update({
            pointwise.AddBackward0: _batched_add, pointwise.SubBackward0: _batched_add,
            pointwise.MulBackward0: _batched_mul, linalg.MmBackward0: _batched_mm,
            linalg.AddmmBackward0: _batched_addmm, views.TBackward0: _batched_t,
            views.ViewBackward0: _batched_view, views.ReshapeAliasBackward0: _batched_view,
            reduce.SumBackward0: _batched_sum, reduce.SumBackward1: _batched_sum_dims,
            reduce.MeanBackward0: _batched_mean, reduce.MeanBackward1: _batched_mean,
            pointwise.DivBackward0: _batched_div, reduce.SoftmaxBackward0: _batched_softmax,
            reduce.LogSoftmaxBackward0: _batched_log_softmax, views.SqueezeBackward0: _batched_view,
            views.SqueezeBackward1: _batched_view, views.SqueezeBackward2: _batched_view,
            views.UnsqueezeBackward0: _batched_unsqueeze, views.PermuteBackward0: _batched_permute,
            views.TransposeBackward0: _batched_transpose, views.ExpandBackward0: _batched_expand})
    cls = type(node)
    if cls.__bases__ == (UnaryNode,):  # a declared unary op's node
        return _batched_relu if cls.formula is pointwise._relu_backward else _batched_unary
    return _BATCHED_FORMULAS.get(cls)


def _apply_per_entry(node, node_grads, fulls, values, size, levels):
    """``node``'s backward run once per batch entry (``fulls``: its gradients with the batch dim first,
    tensors when a create_graph pass records the slices, else arrays), the results stacked; its saved
    tensors (``values``, unpacked once) handed to every run."""
    recording = hookgrad.is_grad_enabled()
    saved = node._saved
    if saved:
        node._saved = tuple(None if v is None else _Unpacked(v) for v in values)
    try:
        with _BackwardPass():
            per_entry = [node.apply([g if f is None else f[b] if recording else _plain(f[b])
                                     for f, g in zip(fulls, node_grads)]) for b in range(size)]
    finally:
        if saved:
            node._saved = saved
    return tuple(_stacked_entries([out[i] for out in per_entry], levels) for i in range(len(per_entry[0])))


def batched_gradients_pass(run, grads, size: int):
    """``autograd.grad(is_grads_batched=True)``: ONE backward pass whose gradients are batched over a
    vmap level of ``size`` (each grad's first dim), as torch vmaps its backward. Hooks and the engine's
    own sums see batched tensors (per-example shapes) and fire once. The common nodes' formulas run
    once on the batched gradient arrays (``_batched_formula``); the others once per batch entry (the
    formulas compute on arrays, below the batching mode), their saved tensors unpacked once. ``run(grads, node_apply)`` runs the pass and returns the captured gradients, returned here
    with the batch dim first."""
    level = max([lvl for lvl, _, _ in ACTIVE] + [0]) + 1
    enter(size, "legacy", level)
    LEGACY_LEVELS.add(level)
    levels = (level,)

    user_code = _nodes_running_user_code()

    def node_apply(node, node_grads):
        if isinstance(node, user_code):
            return node.apply(node_grads)  # once, on the batched gradients (its hooks see them so)
        if not any(is_batched(g) for g in node_grads):
            with _BackwardPass():
                return node.apply(node_grads)
        recording = hookgrad.is_grad_enabled()  # create_graph: slices and stacks join the graph
        fulls = [None if not is_batched(g) else _full(g, levels) if recording else _full(g, levels)._ndarray
                 for g in node_grads]
        saved = node._saved
        values = node.saved() if saved else ()
        if len(fulls) == 1 and fulls[0] is not None:
            if recording:
                with _BackwardPass():
                    outs = _recorded_unary(node, fulls[0], values)
            else:
                formula = _batched_formula(node)
                with np.errstate(all="ignore"):
                    outs = NotImplemented if formula is None else formula(node, fulls[0], values)
                outs = outs if outs is NotImplemented else [None if o is None else _plain(o) for o in outs]
            if outs is not NotImplemented:
                return tuple(None if o is None else wrap(o, levels) for o in outs)
        return _apply_per_entry(node, node_grads, fulls, values, size, levels)

    try:
        captured = run([None if g is None else wrap(g, levels) for g in grads], node_apply)
        return [None if c is None else _full(c, levels) if is_batched(c) else
                c.unsqueeze(0).expand(size, *c.shape) for c in captured]
    finally:
        LEGACY_LEVELS.discard(level)
        leave(level)


def any_batched(*values) -> bool:
    return _tree_any(values, is_batched)


def physical(t):
    return t._value if is_batched(t) else t
