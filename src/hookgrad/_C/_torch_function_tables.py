"""Which of torch's functions and Tensor methods hand plain tensors to ``__torch_function__``.

torch's functions written in Python (``torch.nn.functional.relu``, ``torch.einsum``,
``Tensor.backward``) and the C++ methods that pass ``self`` on (``Tensor.neg``, ``Tensor.dim``, the
property getters) put plain ``torch.Tensor`` into the ``types`` a mode sees; the other built-ins
leave plain tensors out. Read off torch 2.13 (which functions are Python functions; which methods,
called on a plain tensor under a logging mode, report ``types == (torch.Tensor,)``).
"""

TORCH_PYTHON_LEVEL = frozenset("""
    atleast_1d atleast_2d atleast_3d block_diag broadcast_tensors cartesian_prod cdist chain_matmul
    einsum lobpcg lu matrix_rank meshgrid norm pca_lowrank split stft svd_lowrank tensordot unique
    unique_consecutive unravel_index
""".split())

FUNCTIONAL_PYTHON_LEVEL = frozenset("""
    adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d adaptive_max_pool1d_with_indices
    adaptive_max_pool2d adaptive_max_pool2d_with_indices adaptive_max_pool3d
    adaptive_max_pool3d_with_indices affine_grid alpha_dropout batch_norm binary_cross_entropy
    binary_cross_entropy_with_logits celu cosine_embedding_loss cross_entropy ctc_loss dropout dropout1d
    dropout2d dropout3d elu embedding embedding_bag feature_alpha_dropout fold fractional_max_pool2d
    fractional_max_pool2d_with_indices fractional_max_pool3d fractional_max_pool3d_with_indices
    gaussian_nll_loss glu grid_sample group_norm gumbel_softmax hardtanh hinge_embedding_loss huber_loss
    instance_norm interpolate kl_div l1_loss layer_norm leaky_relu linear_cross_entropy
    local_response_norm log_softmax lp_pool1d lp_pool2d lp_pool3d margin_ranking_loss max_pool1d
    max_pool1d_with_indices max_pool2d max_pool2d_with_indices max_pool3d max_pool3d_with_indices
    max_unpool1d max_unpool2d max_unpool3d mish mse_loss multi_head_attention_forward multi_margin_loss
    multilabel_margin_loss multilabel_soft_margin_loss nll_loss normalize pad poisson_nll_loss relu
    relu6 rms_norm rrelu selu silu smooth_l1_loss soft_margin_loss softmax softmin softsign tanhshrink
    threshold triplet_margin_loss triplet_margin_with_distance_loss unfold
""".split())

TENSOR_SELF_LEVEL = frozenset("""
    __abs__ __array__ __array_wrap__ __bool__ __complex__ __contains__ __deepcopy__ __dir__ __dlpack__
    __dlpack_device__ __float__ __floordiv__ __format__ __index__ __int__ __invert__ __ipow__ __len__
    __long__ __neg__ __nonzero__ __pos__ __pow__ __rdiv__ __reduce_ex__ __repr__ __reversed__
    __rfloordiv__ __rlshift__ __rmatmul__ __rmod__ __rpow__ __rrshift__ __rsub__ __rtruediv__
    __setstate__ __str__ abs abs_ absolute absolute_ acos acos_ acosh acosh_ adjoint angle arccos
    arccos_ arccosh arccosh_ arcsin arcsin_ arcsinh arcsinh_ arctan arctan_ arctanh arctanh_ argwhere
    asin asin_ asinh asinh_ atan atan_ atanh atanh_ backward bitwise_not bitwise_not_ ceil ceil_
    coalesce conj conj_physical conj_physical_ const_data_ptr corrcoef cos cos_ cosh cosh_ data_ptr
    deg2rad deg2rad_ dense_dim dequantize det detach detach_ digamma digamma_ dim dim_order element_size
    erf erf_ erfc erfc_ erfinv erfinv_ exp exp2 exp2_ exp_ expm1 expm1_ fix fix_ fliplr flipud floor
    floor_ frac frac_ frexp geqrf get_device i0 i0_ int_repr inverse is_coalesced is_complex is_conj
    is_distributed is_floating_point is_inference is_neg is_nonzero is_shared is_signed isfinite isinf
    isnan isneginf isposinf isreal istft item lgamma lgamma_ log log10 log10_ log1p log1p_ log2 log2_
    log_ logdet logical_not logical_not_ lu matrix_exp module_load msort ndimension neg neg_ negative
    negative_ nelement new new_tensor norm numel positive qscheme rad2deg rad2deg_ ravel reciprocal
    reciprocal_ register_hook register_post_accumulate_grad_hook relu relu_ resize resize_as
    resolve_conj resolve_neg retain_grad rsqrt rsqrt_ sgn sgn_ share_memory_ sigmoid sigmoid_ sign sign_
    signbit sin sin_ sinc sinc_ sinh sinh_ slogdet sparse_dim split sqrt sqrt_ square square_ stft
    storage storage_offset storage_type t t_ tan tan_ tanh tanh_ tolist trace trunc trunc_ unflatten
    unique unique_consecutive untyped_storage values zero_
""".split())

# the Tensor methods torch writes in Python (the rest of TENSOR_SELF_LEVEL hand ``self`` over from C++)
TENSOR_PYTHON_LEVEL = frozenset("""
    __array__ __array_wrap__ __contains__ __deepcopy__ __dlpack__ __dlpack_device__ __floordiv__
    __format__ __ipow__ __len__ __pow__ __rdiv__ __reduce_ex__ __repr__ __reversed__ __rfloordiv__
    __rlshift__ __rmatmul__ __rmod__ __rpow__ __rrshift__ __rsub__ __rtruediv__ __setstate__ backward
    dim_order is_shared istft lu module_load norm register_hook register_post_accumulate_grad_hook
    resize resize_as share_memory_ split stft storage storage_type unique unique_consecutive unflatten
""".split())

# operators torch hands over as another method (``a + b`` as ``Tensor.add``); the rest as themselves
OPERATOR_AS = {
    "__add__": "add", "__radd__": "add", "__sub__": "sub", "__mul__": "mul", "__rmul__": "mul",
    "__truediv__": "div", "__mod__": "remainder", "__matmul__": "matmul", "__neg__": "neg",
    "__pos__": "positive", "__abs__": "abs", "__ne__": "ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt",
    "__ge__": "ge", "__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_", "__itruediv__": "div_",
    "__str__": "__repr__", "__lshift__": "__lshift__", "__rshift__": "__rshift__", "__div__": "div",
}
OPERATORS_AS_THEMSELVES = frozenset("""
    __rsub__ __rtruediv__ __floordiv__ __rfloordiv__ __rmod__ __pow__ __rpow__ __rmatmul__ __invert__
    __and__ __rand__ __or__ __ror__ __xor__ __rxor__ __eq__ __getitem__ __setitem__ __len__ __repr__
    __bool__ __float__ __int__ __index__ __complex__ __contains__ __format__ __deepcopy__ __reduce_ex__
    __array__ __ilshift__ __irshift__ __rlshift__ __rrshift__ __ipow__ __imatmul__ __iand__ __ior__ __ixor__
    __ifloordiv__ __imod__ __reversed__ __array_wrap__ __dlpack__ __dlpack_device__
""".split())
# torch.* names that never consult overrides (not tensor functions, or torch's own protocol helpers)
TORCH_NEVER = frozenset("""
    is_tensor is_storage broadcast_shapes compile set_default_dtype get_default_dtype manual_seed seed initial_seed
    is_grad_enabled is_inference_mode_enabled typename set_printoptions from_numpy set_default_device
    get_default_device use_deterministic_algorithms are_deterministic_algorithms_enabled get_rng_state set_rng_state
    set_default_tensor_type
""".split())
# Tensor methods that never consult overrides
TENSOR_NEVER = frozenset("as_subclass _make_subclass _make_wrapper_subclass".split())
# torch.nn.functional names that are not overridable themselves (sigmoid and tanh call the Tensor method)
# torch's functions whose override call leaves a parameter out: F.l1_loss asks only ``input`` and ``target``
# whether they override and hands over no ``weight`` (which still counts among the types), so an override
# that calls it back computes the unweighted loss
FUNCTIONAL_LEFT_OUT = {"l1_loss": ("weight",)}

FUNCTIONAL_NEVER = frozenset("""
    sigmoid tanh assert_int_or_pair boolean_dispatch handle_torch_function has_torch_function
    has_torch_function_unary has_torch_function_variadic
""".split())
