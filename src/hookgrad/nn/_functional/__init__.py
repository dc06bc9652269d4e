"""Kernels behind ``hookgrad.nn.functional`` (conv, pooling/padding, normalization, activations, losses)."""
