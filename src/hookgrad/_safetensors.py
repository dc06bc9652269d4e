"""safetensors files for hookgrad tensors, through the ``safetensors`` package's NumPy API.

The functions mirror ``safetensors.torch`` (``save``, ``save_file``, ``load``, ``load_file``,
``save_model``, ``load_model``) and are also ``hookgrad.save_safetensors`` / ``load_safetensors``.
Under ``hookgrad run`` a script's ``import safetensors.torch`` gets this module, since the real
one needs torch's own tensors. The ``safetensors`` package is an optional extra
(``pip install hookgrad[safetensors]``).
"""
from __future__ import annotations

import collections
import os

import numpy as np

__all__ = ["save", "save_file", "load", "load_file", "save_model", "load_model", "storage_ptr", "storage_size"]


def storage_ptr(tensor) -> int:
    """Address of the start of the storage under ``tensor`` (equal for tensors sharing memory)."""
    return tensor.untyped_storage().data_ptr()


def storage_size(tensor) -> int:
    """Size in bytes of the whole storage under ``tensor`` (not only the part it views)."""
    return tensor.untyped_storage().nbytes()


def _numpy_api():
    try:
        import safetensors.numpy as api
    except ImportError:
        raise ImportError("reading and writing safetensors files needs the safetensors package: "
                          "pip install 'hookgrad[safetensors]'") from None
    return api


def _shared_groups(tensors) -> list[list[str]]:
    """Names of tensors whose memory overlaps, grouped (each group has two or more names)."""
    from ._legacy import UntypedStorage
    by_storage = collections.defaultdict(list)
    for name, t in tensors.items():
        if t._ndarray.size:
            by_storage[id(UntypedStorage._of(t._ndarray)._root)].append(name)
    return [sorted(names) for names in by_storage.values() if len(names) > 1]


def _arrays(tensors, check_shared: bool = True) -> dict:
    from ._tensor import Tensor
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, torch.Tensor] but received {type(tensors)}")
    for name, t in tensors.items():
        if not isinstance(t, Tensor):
            raise ValueError(f"Key `{name}` is invalid, expected torch.Tensor but received {type(t)}")
    if check_shared:
        shared = _shared_groups(tensors)
        if shared:
            raise RuntimeError(
                f"Some tensors share memory, this will lead to duplicate memory on disk and potential differences "
                f"when loading them again: {shared}.\nA potential way to correctly save your model is to use "
                "`save_model`.")
    return {name: t._ndarray if t._ndarray.flags.c_contiguous else t._ndarray.copy(order="C") for name, t in tensors.items()}


def save(tensors, metadata=None) -> bytes:
    """The bytes of a safetensors file holding ``tensors`` (a dict of name -> Tensor)."""
    return _numpy_api().save(_arrays(tensors), metadata=metadata)


def save_file(tensors, filename, metadata=None) -> None:
    """Write ``tensors`` (a dict of name -> Tensor) to the safetensors file ``filename``."""
    _numpy_api().save_file(_arrays(tensors), os.fspath(filename), metadata=metadata)


def _tensors(arrays: dict) -> dict:
    from ._tensor import wrap
    # the arrays may be views of the file's bytes: copy them into memory that is ours to write
    return {name: wrap(np.array(arr, copy=True)) for name, arr in arrays.items()}


def _parsed(data) -> dict:
    """name -> array for a safetensors file's bytes. safetensors' NumPy API reads no BF16 (NumPy has no
    such type): those entries become ml_dtypes bfloat16 arrays here, or without ml_dtypes float32
    arrays of the same values (as hookgrad.load does for torch checkpoints)."""
    api = _numpy_api()
    from safetensors import deserialize
    from ._dtype import bfloat16_np
    arrays = {}
    for name, entry in deserialize(data):
        code = entry["dtype"]
        if code == "BF16":
            bits = np.frombuffer(entry["data"], dtype="<u2")
            try:
                arr = bits.view(bfloat16_np())
            except ImportError:
                arr = (bits.astype(np.uint32) << 16).view(np.float32)  # exact: bfloat16 is float32's top half
        else:
            arr = np.frombuffer(entry["data"], dtype=api._getdtype(code))
        arrays[name] = arr.reshape(entry["shape"])
    return arrays


def load(data: bytes) -> dict:
    """The tensors of a safetensors file given as bytes."""
    return _tensors(_parsed(data))


def load_file(filename, device="cpu") -> dict:
    """The tensors of the safetensors file ``filename`` (on the CPU: hookgrad has no other device)."""
    if str(device) != "cpu":
        raise RuntimeError(f"hookgrad tensors live on the CPU; cannot load them to {device!r}")
    with open(os.fspath(filename), "rb") as f:
        return _tensors(_parsed(f.read()))


def _kept_names(state_dict) -> dict:
    """For tied tensors (one storage, several names) keep the alphabetically first name that covers
    the whole buffer, as safetensors does; map each removed name to the kept one."""
    from ._legacy import UntypedStorage
    removed = {}
    for group in _shared_groups(state_dict):
        complete = [n for n in group if state_dict[n]._ndarray.nbytes == UntypedStorage._of(
            state_dict[n]._ndarray).nbytes() and state_dict[n].storage_offset() == 0]
        if not complete:
            raise RuntimeError(f"Error while trying to find names to remove to save state dict, but found no "
                               f"suitable name to keep for saving amongst: {set(group)}. None is covering the "
                               "entire storage.")
        keep = complete[0]
        for name in group:
            if name != keep:
                removed[name] = keep
    return removed


def save_model(model, filename, metadata=None, force_contiguous=False) -> None:
    """Save a module's state dict, writing tied parameters once (the others are noted in the
    file's metadata, as safetensors does)."""
    state_dict = model.state_dict()
    removed = _kept_names(state_dict)
    metadata = dict(metadata or {})
    for name, kept in removed.items():
        metadata.setdefault(name, kept)
        del state_dict[name]
    save_file(dict(state_dict), filename, metadata=metadata or None)


def load_model(model, filename, strict=True, device="cpu"):
    """Load a safetensors file into ``model``; returns (missing, unexpected) names as safetensors does."""
    state_dict = load_file(filename, device=device)
    removed = _kept_names(model.state_dict())
    missing, unexpected = model.load_state_dict(state_dict, strict=False)
    missing = [name for name in missing if name not in removed or removed[name] not in state_dict]
    if strict and (missing or unexpected):
        lines = []
        if unexpected:
            lines.append("Unexpected key(s): " + ", ".join(f'"{k}"' for k in sorted(unexpected)) + ".")
        if missing:
            lines.append("Missing key(s): " + ", ".join(f'"{k}"' for k in sorted(missing)) + ".")
        raise RuntimeError(f"Error(s) in loading state_dict for {type(model).__name__}:\n\t" + "\n\t".join(lines))
    return missing, list(unexpected)
