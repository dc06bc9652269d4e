"""``torch.onnx``: hookgrad exports no ONNX graphs. Code that asks whether an export is under way
(``is_in_onnx_export()``, torch_geometric in every message passing) hears no; asking for an export
fails loudly."""
from __future__ import annotations

__all__ = ["is_in_onnx_export", "export", "dynamo_export", "is_onnxrt_backend_supported"]


def is_in_onnx_export() -> bool:
    """No export ever runs here."""
    return False


def is_onnxrt_backend_supported() -> bool:
    return False


def export(*args, **kwargs):
    raise NotImplementedError("hookgrad has no ONNX exporter (torch.onnx.export traces the model into a graph)")


def dynamo_export(*args, **kwargs):
    raise NotImplementedError("hookgrad has no ONNX exporter (torch.onnx.dynamo_export traces the model into a graph)")
