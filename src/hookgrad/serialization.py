"""``save`` and ``load``: checkpoints in a format that loading can never turn into code execution.

A checkpoint file is::

    MAGIC (16 bytes) | format version (u32) | header length H (u64) | header: H bytes of UTF-8 JSON
    | array data, each array at a 64-byte aligned offset | SHA-256 of all preceding bytes (32 bytes)

The JSON header describes the saved object as a tree of tagged nodes (dicts with key order,
OrderedDicts, lists, tuples, sets, numbers, strings, bytes, None, bools, dtypes, sizes, devices,
NumPy arrays and scalars) whose tensor leaves point into a table of arrays (dtype, shape, offset,
length, ``requires_grad``, and whether it is a Parameter). Loading checks the magic, the length
and the checksum before it builds anything, then validates every dtype, shape and offset, so a
corrupt or truncated file raises :class:`CheckpointError` (a ``RuntimeError``) and never yields a
partial result.

Objects outside that list are stored as an opaque pickle only when saved, and loading them needs
``weights_only=False`` (like PyTorch's ``torch.load``, which refuses them by default with
``pickle.UnpicklingError``); only do that for files you trust.

Tensor identity: a tensor object that appears several times in the saved object comes back as one
tensor object. Distinct tensors that share memory (views of one another) are stored separately and
come back as independent tensors (PyTorch keeps their sharing; this format does not). Gradients and
hooks are not saved; saving a tensor with hooks warns, as PyTorch does.
"""
from __future__ import annotations

import collections
import hashlib
import io
import json
import os
import pickle
import struct
import tempfile

import numpy as np

__all__ = ["save", "load", "CheckpointError"]

MAGIC = b"\x89HOOKGRAD-CKPT\r\n"  # 16 bytes; the \x89 and \r\n catch text-mode mangling
FORMAT_VERSION = 1
_PREFIX = struct.Struct("<IQ")  # format version, header length
_DIGEST_SIZE = 32
_ALIGN = 64
_ALLOWED_KINDS = "biufc"  # bool, signed/unsigned int, float, complex: no objects, no strings


class CheckpointError(RuntimeError):
    """A checkpoint file is corrupt, truncated, of an unknown format or version, or inconsistent."""


# ---------------------------------------------------------------------------------------------
# Type lookups (lazy: this module is imported while the package is still loading)
# ---------------------------------------------------------------------------------------------
def _tensor_cls():
    from ._tensor import Tensor
    return Tensor


def _parameter_cls():
    try:
        from .nn.parameter import Parameter
    except ImportError:  # pragma: no cover - depends on how far nn is built
        try:
            from .nn import Parameter
        except ImportError:
            return None
    return Parameter


def _optional(module: str, name: str):
    try:
        mod = __import__(f"hookgrad.{module}", fromlist=[name])
        return getattr(mod, name)
    except (ImportError, AttributeError):
        return None


# ---------------------------------------------------------------------------------------------
# Saving
# ---------------------------------------------------------------------------------------------
class _Writer:
    def __init__(self):
        self.blobs: list[bytes] = []
        self.offset = 0
        self.tensors: list[dict] = []
        self.tensor_ids: dict[int, int] = {}
        self.keepalive: list = []  # keeps memoized objects alive so their ids stay unique
        self.active: set[int] = set()
        self.tensor_cls = _tensor_cls()
        self.parameter_cls = _parameter_cls()
        self.dtype_cls = _optional("_dtype", "dtype")
        self.size_cls = _optional("_dtype", "Size")
        self.device_cls = _optional("_device", "device")

    def add_blob(self, data: bytes) -> dict:
        pad = (-self.offset) % _ALIGN
        if pad:
            self.blobs.append(b"\0" * pad)
            self.offset += pad
        ref = {"offset": self.offset, "nbytes": len(data)}
        self.blobs.append(data)
        self.offset += len(data)
        return ref

    def add_array(self, array: np.ndarray) -> dict:
        array = np.asarray(array)
        if array.dtype.kind not in _ALLOWED_KINDS:
            raise TypeError(f"cannot save an array of dtype {array.dtype}")
        le = array.dtype.newbyteorder("<") if array.dtype.byteorder == ">" else array.dtype
        # A transposed (Fortran-ordered) array is kept that way, as PyTorch keeps strides.
        fortran = array.ndim > 1 and array.flags.f_contiguous and not array.flags.c_contiguous
        data = np.asarray(array.T if fortran else array, dtype=le, order="C")  # 0-d stays 0-d
        ref = self.add_blob(data.tobytes())
        ref.update(dtype=data.dtype.str, shape=list(array.shape))
        if fortran:
            ref["order"] = "F"
        return ref

    def encode(self, obj):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if type(obj) is int:
            return obj
        if type(obj) is float:
            return obj
        if isinstance(obj, self.tensor_cls):
            return {"t": "tensor", "i": self.encode_tensor(obj)}
        key = id(obj)
        if key in self.active:
            raise ValueError("cannot save an object that contains itself")
        self.active.add(key)
        try:
            return self.encode_other(obj)
        finally:
            self.active.discard(key)

    def encode_tensor(self, t) -> int:
        index = self.tensor_ids.get(id(t))
        if index is not None:
            return index
        from .utils.hooks import warn_if_has_hooks
        warn_if_has_hooks(t)
        entry = self.add_array(t._data)
        is_param = self.parameter_cls is not None and isinstance(t, self.parameter_cls)
        entry.update(requires_grad=bool(t.requires_grad), parameter=is_param)
        index = len(self.tensors)
        self.tensors.append(entry)
        self.tensor_ids[id(t)] = index
        self.keepalive.append(t)
        return index

    def encode_other(self, obj):
        enc = self.encode
        if isinstance(obj, collections.OrderedDict) and type(obj) is collections.OrderedDict:
            return {"t": "odict", "k": [enc(k) for k in obj], "v": [enc(v) for v in obj.values()]}
        if type(obj) is dict:
            return {"t": "dict", "k": [enc(k) for k in obj], "v": [enc(v) for v in obj.values()]}
        if type(obj) is list:
            return {"t": "list", "v": [enc(v) for v in obj]}
        if self.size_cls is not None and type(obj) is self.size_cls:
            return {"t": "size", "v": [int(v) for v in obj]}
        if type(obj) is tuple:
            return {"t": "tuple", "v": [enc(v) for v in obj]}
        if type(obj) in (set, frozenset):
            return {"t": type(obj).__name__, "v": [enc(v) for v in obj]}
        if type(obj) is int or type(obj) is float:  # pragma: no cover - handled in encode
            return obj
        if type(obj) is complex:
            return {"t": "complex", "v": [obj.real, obj.imag]}
        if type(obj) in (bytes, bytearray):
            return {"t": type(obj).__name__, "b": self.add_blob(bytes(obj))}
        if self.dtype_cls is not None and isinstance(obj, self.dtype_cls):
            return {"t": "dtype", "v": obj.name}
        if self.device_cls is not None and isinstance(obj, self.device_cls):
            return {"t": "device", "v": str(obj)}
        if type(obj) is np.ndarray and obj.dtype.kind in _ALLOWED_KINDS:
            return {"t": "ndarray", "a": self.add_array(obj)}
        if isinstance(obj, np.generic) and obj.dtype.kind in _ALLOWED_KINDS:
            return {"t": "npscalar", "a": self.add_array(np.asarray(obj))}
        # Anything else is kept as an opaque pickle that only weights_only=False will load.
        return {"t": "pickle", "type": f"{type(obj).__module__}.{type(obj).__qualname__}",
                "b": self.add_blob(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))}

    def serialize(self, obj) -> bytes:
        root = self.encode(obj)
        header = json.dumps({"root": root, "tensors": self.tensors}, separators=(",", ":"),
                            allow_nan=True).encode("utf-8")
        head = MAGIC + _PREFIX.pack(FORMAT_VERSION, len(header)) + header
        # Blob offsets are relative to the (aligned) start of the data section.
        pad = (-len(head)) % _ALIGN
        digest = hashlib.sha256()
        parts = [head, b"\0" * pad, *self.blobs]
        for part in parts:
            digest.update(part)
        return b"".join(parts) + digest.digest()


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False) -> None:
    """Save ``obj`` (tensors, Parameters, state dicts, nested containers...) to ``f``, a path or a
    binary file object. Writing to a path replaces the file atomically. The pickle-related
    arguments exist for PyTorch compatibility and are ignored."""
    data = _Writer().serialize(obj)
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        directory = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".hookgrad-save-", dir=directory)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    else:
        f.write(data)


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------
def _check_map_location(map_location) -> None:
    if map_location is None or callable(map_location):
        return
    if isinstance(map_location, dict):
        targets = list(map_location.values())
    else:
        targets = [map_location]
    for target in targets:
        if not str(target).startswith("cpu"):
            raise RuntimeError(f"hookgrad tensors live on the CPU; cannot map them to {target!r}")


class _Reader:
    def __init__(self, buffer: bytearray, data_start: int, data_end: int, tensors: list,
                 weights_only: bool, map_location):
        self.buffer = buffer
        self.data_start = data_start
        self.data_end = data_end
        self.table = tensors
        self.built: dict[int, object] = {}
        self.weights_only = weights_only
        self.map_location = map_location

    def bytes_at(self, ref) -> memoryview:
        if not isinstance(ref, dict):
            raise CheckpointError("malformed data reference in checkpoint header")
        offset, nbytes = ref.get("offset"), ref.get("nbytes")
        if type(offset) is not int or type(nbytes) is not int or offset < 0 or nbytes < 0:
            raise CheckpointError("malformed data reference in checkpoint header")
        start = self.data_start + offset
        if start + nbytes > self.data_end:
            raise CheckpointError("checkpoint data reference points past the end of the data")
        return memoryview(self.buffer)[start:start + nbytes]

    def array(self, ref) -> np.ndarray:
        try:
            dtype = np.dtype(ref["dtype"])
            shape = tuple(ref["shape"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"malformed array entry in checkpoint header: {exc}") from None
        if dtype.kind not in _ALLOWED_KINDS or dtype.hasobject:
            raise CheckpointError(f"checkpoint array has a disallowed dtype {dtype}")
        if any(type(s) is not int or s < 0 for s in shape):
            raise CheckpointError(f"checkpoint array has an invalid shape {shape}")
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        raw = self.bytes_at(ref)
        if len(raw) != count * dtype.itemsize:
            raise CheckpointError(f"checkpoint array of shape {shape} and dtype {dtype} has "
                                  f"{len(raw)} bytes, expected {count * dtype.itemsize}")
        arr = np.frombuffer(raw, dtype=dtype, count=count)
        if ref.get("order") == "F":
            arr = arr.reshape(shape[::-1]).T
        else:
            arr = arr.reshape(shape)
        native = dtype.newbyteorder("=")
        return arr.astype(native) if native != dtype else arr

    def tensor(self, index):
        if type(index) is not int or not 0 <= index < len(self.table):
            raise CheckpointError("checkpoint refers to a tensor that is not in its table")
        if index in self.built:
            return self.built[index]
        entry = self.table[index]
        arr = self.array(entry)
        from ._tensor import wrap
        requires_grad = bool(entry.get("requires_grad", False))
        if entry.get("parameter"):
            parameter_cls = _parameter_cls()
            if parameter_cls is None:
                raise CheckpointError("checkpoint holds a Parameter but hookgrad.nn is unavailable")
            out = parameter_cls(wrap(arr), requires_grad=requires_grad)
        else:
            out = wrap(arr)
            if requires_grad:
                out.requires_grad_(True)
        if callable(self.map_location):
            mapped = self.map_location(out, "cpu")
            if mapped is not None:
                out = mapped
        self.built[index] = out
        return out

    def decode(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if not isinstance(node, dict) or "t" not in node:
            raise CheckpointError("malformed node in checkpoint header")
        tag = node["t"]
        dec = self.decode
        try:
            if tag == "tensor":
                return self.tensor(node["i"])
            if tag in ("dict", "odict"):
                keys, values = node["k"], node["v"]
                if len(keys) != len(values):
                    raise CheckpointError("checkpoint mapping has unequal numbers of keys and values")
                cls = dict if tag == "dict" else collections.OrderedDict
                return cls((dec(k), dec(v)) for k, v in zip(keys, values))
            if tag == "list":
                return [dec(v) for v in node["v"]]
            if tag == "tuple":
                return tuple(dec(v) for v in node["v"])
            if tag == "set":
                return {dec(v) for v in node["v"]}
            if tag == "frozenset":
                return frozenset(dec(v) for v in node["v"])
            if tag == "size":
                size_cls = _optional("_dtype", "Size") or tuple
                return size_cls(int(v) for v in node["v"])
            if tag == "complex":
                re_, im = node["v"]
                return complex(float(re_), float(im))
            if tag == "bytes":
                return bytes(self.bytes_at(node["b"]))
            if tag == "bytearray":
                return bytearray(self.bytes_at(node["b"]))
            if tag == "dtype":
                from ._dtype import to_dtype
                return to_dtype(str(node["v"]))
            if tag == "device":
                device_cls = _optional("_device", "device")
                return device_cls(str(node["v"])) if device_cls is not None else str(node["v"])
            if tag == "ndarray":
                return self.array(node["a"]).copy()
            if tag == "npscalar":
                return self.array(node["a"])[()]
            if tag == "pickle":
                if self.weights_only:
                    raise pickle.UnpicklingError(
                        f"Weights only load failed: the checkpoint contains an object of type "
                        f"{node.get('type')!r}, stored as a pickle. Loading it can run arbitrary code; "
                        "if you trust the file, load it with weights_only=False.")
                return pickle.loads(bytes(self.bytes_at(node["b"])))
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"malformed {tag!r} node in checkpoint header: {exc!r}") from None
        raise CheckpointError(f"unknown node type {tag!r} in checkpoint header")


def _read_all(f) -> bytearray:
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return bytearray(fh.read())
    if isinstance(f, (bytes, bytearray, memoryview)):
        return bytearray(f)
    data = f.read()
    if isinstance(data, str):
        raise TypeError("hookgrad.load needs a file opened in binary mode")
    return bytearray(data)


def load(f, map_location=None, pickle_module=None, *, weights_only: bool = True, mmap=None, **kwargs):
    """Load an object saved with :func:`save` from a path or a binary file object.

    With ``weights_only=True`` (the default) nothing in the file can run code; objects that were
    stored as pickles raise ``pickle.UnpicklingError``. ``map_location`` may be None, ``"cpu"``, a
    CPU device, a dict mapping locations to the CPU, or a callable ``fn(tensor, "cpu")`` whose
    non-None result replaces the tensor. A corrupt, truncated or foreign file raises
    :class:`CheckpointError`.
    """
    _check_map_location(map_location)
    buffer = _read_all(f)
    head_len = len(MAGIC) + _PREFIX.size
    if len(buffer) < head_len + _DIGEST_SIZE or bytes(buffer[:len(MAGIC)]) != MAGIC:
        if bytes(buffer[:4]) == b"PK\x03\x04":
            raise CheckpointError("this is a zip archive (as written by torch.save), not a hookgrad "
                                  "checkpoint; hookgrad.load reads only files written by hookgrad.save")
        if len(buffer) >= len(MAGIC) and bytes(buffer[:len(MAGIC)]) != MAGIC:
            raise CheckpointError("not a hookgrad checkpoint (bad magic number)")
        raise CheckpointError(f"checkpoint is truncated ({len(buffer)} bytes)")
    version, header_len = _PREFIX.unpack_from(buffer, len(MAGIC))
    if version != FORMAT_VERSION:
        raise CheckpointError(f"unsupported checkpoint format version {version} "
                              f"(this hookgrad reads version {FORMAT_VERSION})")
    body_end = len(buffer) - _DIGEST_SIZE
    if head_len + header_len > body_end:
        raise CheckpointError("checkpoint is truncated (header extends past the end of the file)")
    digest = hashlib.sha256(memoryview(buffer)[:body_end]).digest()
    if digest != bytes(buffer[body_end:]):
        raise CheckpointError("checkpoint checksum mismatch: the file is corrupt or truncated")
    try:
        header = json.loads(bytes(buffer[head_len:head_len + header_len]).decode("utf-8"))
        root, tensors = header["root"], header["tensors"]
        if not isinstance(tensors, list):
            raise TypeError("tensor table is not a list")
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"checkpoint header is malformed: {exc}") from None
    header_end = head_len + header_len
    data_start = header_end + (-header_end) % _ALIGN
    reader = _Reader(buffer, data_start, body_end, tensors, weights_only, map_location)
    try:
        return reader.decode(root)
    except RecursionError:
        raise CheckpointError("checkpoint header is nested too deeply") from None
