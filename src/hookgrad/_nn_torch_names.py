"""The ``torch.*`` names whose functions live with the nn kernels (``nn/_functional/torch_level.py``):
listed here, apart, so that ``hookgrad.__getattr__`` can tell them without loading ``nn``."""

# torch binds these to the very nn.functional functions
SAME_AS_FUNCTIONAL = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                      "conv_tbc", "avg_pool1d", "adaptive_avg_pool1d", "bilinear", "channel_shuffle",
                      "native_channel_shuffle", "pairwise_distance", "pixel_shuffle", "pixel_unshuffle", "rms_norm")

NN_TORCH_NAMES = SAME_AS_FUNCTIONAL + (
    "celu_", "selu_", "rrelu_", "threshold_", "celu", "selu", "rrelu", "threshold", "dropout", "dropout_",
    "alpha_dropout", "alpha_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_", "feature_dropout",
    "feature_dropout_", "batch_norm", "instance_norm", "layer_norm", "group_norm", "embedding", "max_pool1d",
    "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "adaptive_max_pool1d", "binary_cross_entropy_with_logits",
    "kl_div", "cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss", "triplet_margin_loss",
    "poisson_nll_loss", "ctc_loss", "native_batch_norm", "native_layer_norm", "native_group_norm", "native_dropout",
    "convolution", "embedding_renorm_", "rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell", "norm_except_dim",
    "frobenius_norm", "nuclear_norm", "affine_grid_generator", "grid_sampler", "grid_sampler_2d", "grid_sampler_3d")
NN_TORCH_NAMES += ("lstm", "gru", "rnn_tanh", "rnn_relu", "embedding_bag", "batch_norm_update_stats")
