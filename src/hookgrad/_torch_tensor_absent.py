"""The public ``torch.Tensor`` attributes hookgrad's Tensor lacks (tests/test_api_coverage.py checks
that every such name is here). A missing attribute torch has points to docs/api-coverage.md; one that
torch lacks too (``x.astype``) raises Python's own AttributeError, as under torch."""

TORCH_TENSOR_NAMES_ABSENT = frozenset({
    'ccol_indices', 'chalf', 'coalesce', 'col_indices', 'crow_indices', 'dense_dim', 'dequantize', 'index',
    'indices', 'int_repr', 'ipu', 'is_coalesced', 'is_ipu', 'is_maia', 'is_mkldnn', 'is_mps', 'is_mtia',
    'is_nested', 'is_shared', 'is_sparse_csr', 'is_vulkan', 'is_xla', 'is_xpu', 'mtia', 'q_per_channel_axis',
    'q_per_channel_scales', 'q_per_channel_zero_points', 'q_scale', 'q_zero_point', 'qscheme',
    'resize_as_sparse_', 'row_indices', 'share_memory_', 'smm', 'sparse_dim', 'sparse_mask', 'sparse_resize_',
    'sparse_resize_and_clear_', 'sspaddmm', 'to_mkldnn', 'to_padded_tensor', 'to_sparse', 'to_sparse_bsc',
    'to_sparse_bsr', 'to_sparse_coo', 'to_sparse_csc', 'to_sparse_csr', 'values', 'xpu',
})
