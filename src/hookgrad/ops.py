"""``torch.ops``: operators by namespace. ``torch.ops.aten.<op>`` calls hookgrad's implementation
of torch's own operator (through the table below: ATen's name and calling convention mapped to
hookgrad's function); ``torch.ops.<ns>.<name>`` calls an operator made with ``torch.library``.

Each operator is an ``OpOverloadPacket``; its overloads (``.default``, ``.Tensor``, ``.Scalar``,
``.dim``, ...) are ``OpOverload`` objects calling the same function, since hookgrad's functions
take every form. An operator neither in the table nor defined raises AttributeError naming it.
"""
from __future__ import annotations

import importlib
import re
import sys
import types


def _missing(name: str) -> str:
    from ._run import missing_message
    return missing_message(f"torch.ops.aten.{name}")

__all__ = ["OpOverload", "OpOverloadPacket", "load_library"]

# ATen operators whose arguments are those of the torch function (or Tensor method) of the same name
_SAME_AS_TORCH = """
abs absolute acos acosh add addbmm addcdiv addcmul addmm addmv addr all allclose amax amin aminmax angle any
arange argmax argmin argsort as_strided asin asinh atan atan2 atanh baddbmm bernoulli bincount bitwise_and
bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor bmm broadcast_tensors bucketize cat
cdist ceil celu chunk clamp clamp_max clamp_min clip clone complex constant_pad_nd conv1d conv2d conv3d
conv_transpose1d conv_transpose2d conv_transpose3d copysign cos cosh count_nonzero cross cummax cummin cumprod
cumsum deg2rad diag diag_embed diagonal diff digamma dist div divide dot dropout einsum elu embedding_bag empty
empty_like eq equal erf erfc erfinv exp exp2 expm1 eye flatten flip fliplr flipud float_power floor floor_divide
fmax fmin fmod frac full full_like gather gcd ge gelu greater greater_equal gt hardshrink hardsigmoid hardswish
hardtanh heaviside histc hypot i0 igamma igammac index_add index_copy index_fill index_put index_select inner
isclose isfinite isinf isnan isneginf isposinf isreal kron kthvalue layer_norm lcm ldexp le leaky_relu lerp less
less_equal lgamma linalg_vector_norm linear linspace log log10 log1p log2 log_sigmoid logaddexp logaddexp2
logcumsumexp logical_and logical_not logical_or logical_xor logit logspace logsumexp lt masked_fill
masked_scatter masked_select matmul max maximum mean median meshgrid min minimum mish mm mode moveaxis movedim
mse_loss mul multinomial multiply mv mvlgamma nan_to_num nanmean nanmedian nanquantile nansum narrow ne neg
negative nextafter nonzero norm normal not_equal numel ones ones_like outer pdist permute pixel_shuffle
pixel_unshuffle poisson polar polygamma pow prelu prod quantile rad2deg rand rand_like randint randint_like
randn randn_like randperm ravel reciprocal relu relu6 remainder renorm repeat_interleave reshape roll rot90
round rrelu rsqrt scatter scatter_add scatter_reduce searchsorted select selu sgn sigmoid sign signbit silu sin
sinc sinh slice_scatter softplus softshrink sort split split_with_sizes sqrt square squeeze stack std
std_mean sub subtract sum swapaxes swapdims t take take_along_dim tan tanh tensor_split tensordot threshold
tile topk trace transpose trapezoid trapz tril tril_indices triu triu_indices true_divide trunc unbind
unflatten unique_consecutive unsqueeze var var_mean vdot view_as_complex view_as_real where xlogy zeros
zeros_like detach alias
""".split()

# ATen operators that are Tensor methods in torch's Python API
_TENSOR_METHODS = """
view expand expand_as contiguous new_zeros new_ones new_full new_empty new_tensor repeat unfold fill_ zero_
copy_ index_put_ masked_fill_ scatter_ scatter_add_ add_ sub_ mul_ div_ pow_ clamp_ relu_ sigmoid_ tanh_ neg_
abs_ exp_ log_ sqrt_ uniform_ normal_ bernoulli_ random_ exponential_ geometric_ cauchy_ log_normal_ t_ squeeze_
unsqueeze_ transpose_ resize_ set_ copysign_ lerp_ addcmul_ addcdiv_ addmm_ baddbmm_ fmod_ remainder_ floor_
ceil_ round_ trunc_ sign_ reciprocal_ rsqrt_ sin_ cos_ tan_ erf_ index_fill_ index_add_ index_copy_
masked_scatter_ sum_to_size type_as view_as reshape_as is_contiguous dim size stride storage_offset item
""".split()


def _sym_size(x, dim=None):
    return x.size() if dim is None else x.size(dim)


def _softmax(x, dim, half_to_float=False):
    import hookgrad
    return hookgrad.softmax(x, dim)


def _log_softmax(x, dim, half_to_float=False):
    import hookgrad
    return hookgrad.log_softmax(x, dim)


def _slice(x, dim=0, start=None, end=None, step=1):
    index = [slice(None)] * x.dim()
    index[dim] = slice(start, end, step)
    return x[tuple(index)]


def _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    from .nn import functional as F
    dims = weight.dim() - 2
    if transposed:
        fn = getattr(F, f"conv_transpose{dims}d")
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    return getattr(F, f"conv{dims}d")(input, weight, bias, stride, padding, dilation, groups)


def _convolution_with_backend_flags(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                                    groups, benchmark=False, deterministic=False, cudnn_enabled=True, allow_tf32=True):
    # ATen's _convolution: convolution plus flags that choose a GPU backend; on NumPy they change nothing
    return _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)


def _embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    from .nn import functional as F
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def _to_copy(x, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None):
    out = x.to(dtype=dtype) if dtype is not None else x
    return out.clone() if out is x else out


def _rsub(x, other, alpha=1):
    return other - alpha * x


def _native_layer_norm(input, normalized_shape, weight, bias, eps):
    import hookgrad
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    mean = input.mean(dims, keepdim=True)
    rstd = hookgrad.rsqrt(input.var(dims, unbiased=False, keepdim=True) + eps)
    out = (input - mean) * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out, mean, rstd


def _unsafe_view(x, size):
    return x.reshape(size)


def _scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None):
    import hookgrad
    return hookgrad.tensor(s, dtype=dtype if dtype is not None else hookgrad.get_default_dtype())


_ADAPTED = {"sym_size": _sym_size, "_softmax": _softmax, "softmax": _softmax, "_log_softmax": _log_softmax,
            "log_softmax": _log_softmax, "slice": _slice, "convolution": _convolution, "embedding": _embedding,
            "_to_copy": _to_copy, "rsub": _rsub, "native_layer_norm": _native_layer_norm, "_unsafe_view": _unsafe_view,
            "scalar_tensor": _scalar_tensor}
_ADAPTED["_convolution"] = _convolution_with_backend_flags

# overload names code commonly spells; hookgrad's functions take all of these forms
_OVERLOAD_NAMES = ("default", "Tensor", "Scalar", "int", "dim", "dim_IntList", "dim_int", "self", "other",
                   "Tensor_Scalar", "Scalar_Tensor", "Tensor_Tensor", "float", "using_ints", "correction",
                   "dim_max", "dim_min", "values", "start", "start_step", "low", "names", "src", "value", "input",
                   "Tensor_mode", "vec", "sizes", "memory_format")


def _resolve_aten(name: str):
    """hookgrad's function for ATen's ``name``; None for an unknown name."""
    if name in _ADAPTED:
        return _ADAPTED[name]
    import hookgrad
    if name in _SAME_AS_TORCH:
        for owner in (hookgrad, hookgrad.nn.functional, hookgrad.linalg):
            fn = getattr(owner, name.removeprefix("linalg_") if owner is hookgrad.linalg else name, None)
            if callable(fn):
                return fn
        raise AttributeError(_missing(name))
    if name in _TENSOR_METHODS:
        if not hasattr(hookgrad.Tensor, name):
            raise AttributeError(_missing(name))

        def method(self, *args, **kwargs):
            return getattr(self, name)(*args, **kwargs)
        method.__name__ = name
        return method
    return None


# The operators a dispatch mode is deciding right now (innermost last); their ``call(op, args, kwargs)``
# answers a call of an overload made inside the mode (the op's result, computed once, for the
# arguments the mode was given). Kept by utils._python_dispatch; empty outside modes.
_PENDING: list = []


class OpOverload:
    """One overload of an operator (``torch.ops.aten.add.Tensor``): one object per overload, the
    one a dispatch mode receives as ``func``."""

    def __init__(self, packet: "OpOverloadPacket", overload_name: str, schema_text: str | None = None,
                 tag_names=()):
        self.overloadpacket = packet
        self._overloadname = overload_name
        self._op = packet._op
        self._qualname = packet._qualname
        self.__name__ = f"{packet._name}.{overload_name}"
        self.__qualname__ = self.name()
        self.__module__ = f"torch._ops.{packet._namespace}"
        self._schema_text = schema_text
        self._tag_names = tuple(tag_names)
        self._parsed = None

    def __call__(self, *args, **kwargs):
        if _PENDING:
            return _PENDING[-1].call(self, args, kwargs)
        return self._op(*args, **kwargs)

    def name(self) -> str:
        return f"{self._qualname}.{self._overloadname}" if self._overloadname != "default" else self._qualname

    @property
    def _overloadpacket(self):
        return self.overloadpacket

    @property
    def _schema(self):
        if self._parsed is None:
            if self._schema_text is None:
                return self.overloadpacket._schema
            from ._function_schema import FunctionSchema
            self._parsed = FunctionSchema(self._schema_text)
        return self._parsed

    @property
    def tags(self) -> list:
        from ._function_schema import Tag
        return [Tag[name] for name in self._tag_names]

    @property
    def is_view(self) -> bool:
        returns = self._schema.returns if self._schema_text is not None else ()
        return bool(returns) and returns[0].alias_info is not None and not returns[0].alias_info.is_write

    @property
    def namespace(self) -> str:
        return self.overloadpacket._namespace

    @property
    def op(self):
        return self._op

    def __repr__(self):
        return f"<OpOverload(op='{self.overloadpacket._namespace}.{self.overloadpacket._name}', " \
               f"overload='{self._overloadname}')>"

    def __str__(self):
        return f"{self.overloadpacket._namespace}.{self.overloadpacket._name}.{self._overloadname}"

    def __hash__(self):
        return hash((self._qualname, self._overloadname))

    def __eq__(self, other):
        return isinstance(other, OpOverload) and (self._qualname, self._overloadname) == \
            (other._qualname, other._overloadname)

    # one object per operator, as in torch: a deep copy (of a table keyed by ops, say) is the op itself
    def __deepcopy__(self, memo=None):
        return self


class _Schema:
    """The schema of an operator whose text hookgrad cannot parse as torch's (shown as given)."""

    def __init__(self, text: str, name: str):
        self._text, self.name = text, name

    def __str__(self):
        # as torch's FunctionSchema prints defaults: 2.0 -> 2.
        return re.sub(r"=(-?\d+)\.0\b", r"=\1.", self._text)

    __repr__ = __str__


class OpOverloadPacket:
    """An operator with all its overloads (``torch.ops.aten.add``); calling it calls the operator.
    ``schemas`` (overload -> (schema text, tag names)) gives the overloads torch has, each with its
    schema and tags; without it, ``overloads`` names them."""

    def __init__(self, namespace: str, name: str, op, overloads=("default",), schema: str | None = None,
                 schemas: dict | None = None):
        self._namespace, self._name = namespace, name
        self._qualname = f"{namespace}::{name}"
        self._op = op
        self._schemas = schemas or {}
        self._overload_names = tuple(schemas) if schemas else tuple(overloads)
        self._schema_text = schema
        self.__name__ = name
        self.__module__ = f"torch._ops.{namespace}"
        self._dir = list(self._overload_names)

    def __call__(self, *args, **kwargs):
        return self._op(*args, **kwargs)

    def __getattr__(self, key):
        if key.startswith("_"):
            raise AttributeError(key)
        if key in self._overload_names:
            text, tag_names = self._schemas.get(key, (None, ()))
            if text is None and self._schema_text and key == "default":
                text = self._parseable_custom_schema()
            overload = OpOverload(self, key, text, tag_names)
            setattr(self, key, overload)
            return overload
        raise AttributeError(f"The underlying op of '{self._namespace}.{self._name}' has no overload name '{key}'")

    def _parseable_custom_schema(self):
        """A ``torch.library`` operator's schema text when hookgrad's parser reads it, else None."""
        text = str(_Schema(self._schema_text, self._qualname))    # defaults printed as torch prints them
        if not text.startswith(self._qualname + "("):
            return None
        try:
            from ._function_schema import FunctionSchema
            FunctionSchema(text)
        except (ValueError, IndexError, KeyError):
            return None
        return text

    def overloads(self) -> list:
        return list(self._overload_names)

    @property
    def _qualified_op_name(self) -> str:
        return self._qualname

    @property
    def _schema(self):
        if "default" in self._schemas:
            return self.default._schema
        return _Schema(self._schema_text or f"{self._qualname}(...) -> ...", self._qualname)

    @property
    def op(self):
        return self._op

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self._namespace}.{self._name}')>"

    def __str__(self):
        return f"{self._namespace}.{self._name}"

    def __hash__(self):
        return hash(self._qualname)

    def __deepcopy__(self, memo=None):
        return self


class _OpNamespace(types.ModuleType):
    """``torch.ops.<namespace>``: its operators as attributes."""

    def __init__(self, name: str):
        super().__init__(f"torch.ops.{name}")
        self.name = name

    def __getattr__(self, op_name: str):
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        packet = self._find(op_name)
        if packet is None:
            hint = " (hookgrad maps the ATen operators listed in hookgrad/ops.py; see docs/api-coverage.md)" \
                if self.name == "aten" else ""
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute '{op_name}'{hint}")
        self.__dict__[op_name] = packet
        return packet

    def _find(self, op_name: str):
        from . import library
        entry = library._OPERATORS.get(f"{self.name}::{op_name}")
        if entry is not None:
            return OpOverloadPacket(self.name, op_name, entry.call, schema=entry.schema)
        if self.name == "aten":
            from ._function_schema import aten_overloads
            schemas = aten_overloads(op_name)
            try:
                fn = _resolve_aten(op_name)
            except AttributeError:
                if schemas is None:
                    raise
                fn = None
            if schemas is not None:
                # torch's operator, with torch's overloads; one hookgrad cannot run says so when called
                return OpOverloadPacket("aten", op_name, fn or _not_implemented(op_name), schemas=schemas)
            if fn is not None:
                return OpOverloadPacket("aten", op_name, fn, overloads=_OVERLOAD_NAMES)
        return None


def _not_implemented(name: str):
    def run(*args, **kwargs):
        raise NotImplementedError(_missing(name))
    run.__name__ = name
    return run


_namespaces: dict = {}


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    namespace = _namespaces.get(name)
    if namespace is None:
        namespace = _namespaces[name] = _OpNamespace(name)
    return namespace


def _forget(namespace: str, name: str) -> None:
    """Drop a cached operator (it was just (re)defined)."""
    if namespace in _namespaces:
        _namespaces[namespace].__dict__.pop(name, None)


def load_library(path: str) -> None:
    raise OSError(f"torch.ops.load_library({path!r}): hookgrad cannot load compiled C++/CUDA operator libraries; "
                  "define operators in Python with torch.library.custom_op")


def import_module(module: str) -> None:
    """Import the Python module that registers operators (as torch.ops.import_module does)."""
    importlib.import_module(module)


ops = sys.modules[__name__]
