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

NumPy arrays and scalars are stored as such, but ``weights_only`` loading (the default) refuses them as
torch does, until the user allows ``numpy._core.multiarray._reconstruct`` (or ``.scalar``),
``numpy.ndarray``, ``numpy.dtype`` and the dtype's class with ``add_safe_globals``.

Objects outside that list are stored as an opaque pickle only when saved, and loading them needs
``weights_only=False`` (like PyTorch's ``torch.load``, which refuses them by default with
``pickle.UnpicklingError``); only do that for files you trust.

Files written by PyTorch's ``torch.save`` (zip archives) load too, as ``torch.load(...,
weights_only=True)`` would load them: tensors (with their strides, and sharing memory where they
shared a storage), Parameters, state dicts (with their ``_metadata``), sizes, dtypes, devices and
plain containers. Their pickle is read by a small opcode interpreter in this module that knows a
fixed list of globals, never by the pickle module; any other global raises
``pickle.UnpicklingError`` whatever ``weights_only`` says. bfloat16 tensors come back as bfloat16
(ml_dtypes arrays); without the optional ml_dtypes package, as float32 (the conversion is exact).

``save(obj, f, format="torch")`` writes PyTorch's own zip checkpoint instead (see
``_torch_format.py``); it is the default under ``hookgrad run``, where a script's ``torch.save`` is
this function.

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

from ._dtype import bfloat16_np, is_bfloat16_np
from ._torch_identity import dumps_with_own_names, own_name

__all__ = ["save", "load", "CheckpointError"]

MAGIC = b"\x89HOOKGRAD-CKPT\r\n"  # 16 bytes; the \x89 and \r\n catch text-mode mangling
FORMAT_VERSION = 1
_PREFIX = struct.Struct("<IQ")  # format version, header length
_DIGEST_SIZE = 32
_ALIGN = 64
_ALLOWED_KINDS = "biufc"  # bool, signed/unsigned int, float, complex: no objects, no strings


class CheckpointError(RuntimeError):
    """A checkpoint file is corrupt, truncated, of an unknown format or version, or inconsistent."""


class _NotACheckpoint(CheckpointError, pickle.UnpicklingError):
    """A file that is no checkpoint at all: torch's unpickler fails on its first byte, so this is
    also (and is named as) pickle's UnpicklingError."""


_NotACheckpoint.__name__ = _NotACheckpoint.__qualname__ = "UnpicklingError"

_LOAD_DEFAULT_CHANGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` from `False` to "
    "`True`. Re-running `torch.load` with `weights_only` set to `False` will likely succeed, but it can result in "
    "arbitrary code execution. Do it only if you got the file from a trusted source.")
_LOAD_DOCS = ("\n\nCheck the documentation of torch.load to learn more about types accepted by default with "
              "weights_only https://pytorch.org/docs/stable/generated/torch.load.html.")


def _weights_only_failure(detail: str) -> str:
    """torch's message for a refused weights-only load, around the unpickler's own ``detail``."""
    if "was not an allowed global by default" in detail:
        return ("Weights only load failed. This file can still be loaded, to do so you have two options, "
                "\033[1mdo those steps only if you trust the source of the checkpoint\033[0m. "
                f"\n\t(1) {_LOAD_DEFAULT_CHANGE}\n\t(2) Alternatively, to load with `weights_only=True` please check "
                "the recommended steps in the following error message.\n\tWeightsUnpickler error: " + detail
                + _LOAD_DOCS)
    return (f"Weights only load failed. {_LOAD_DEFAULT_CHANGE}\nPlease file an issue with the following so that we "
            "can make `weights_only=True` compatible with your use case: WeightsUnpickler error: \n\n" + detail
            + _LOAD_DOCS)


def _unsupported_global(module: str, name: str) -> str:
    """The unpickler's refusal of a global, naming hookgrad's own classes as the script sees them
    (torch's names under ``hookgrad run``); nothing outside hookgrad is imported to name it."""
    full = f"{module}.{name}"
    if module == "hookgrad" or module.startswith("hookgrad."):
        import importlib
        try:
            found = getattr(importlib.import_module(module), name)
            full = f"{found.__module__}.{found.__qualname__}"
        except (ImportError, AttributeError):
            pass
    return (f"Unsupported global: GLOBAL {full} was not an allowed global by default. Please use "
            f"`torch.serialization.add_safe_globals([{full}])` or the `torch.serialization.safe_globals([{full}])` "
            "context manager to allowlist this global if you trust this class/function.")


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
        if is_bfloat16_np(array.dtype):  # stored as its 16-bit patterns, tagged by name
            ref = self.add_array(array.view(np.uint16))
            ref["dtype"] = "bfloat16"
            return ref
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
        entry = self.add_array(t._ndarray)
        is_param = self.parameter_cls is not None and isinstance(t, self.parameter_cls)
        entry.update(requires_grad=bool(t.requires_grad), parameter=is_param)
        index = len(self.tensors)
        self.tensors.append(entry)
        self.tensor_ids[id(t)] = index
        self.keepalive.append(t)
        return index

    def encode_other(self, obj):
        enc = self.encode
        if type(obj) is collections.OrderedDict:
            node = {"t": "odict", "k": [enc(k) for k in obj], "v": [enc(v) for v in obj.values()]}
            attrs = vars(obj)  # e.g. a module state dict's ``_metadata``, kept as PyTorch keeps it
            if attrs:
                node["attrs"] = {"t": "dict", "k": [str(k) for k in attrs], "v": [enc(v) for v in attrs.values()]}
            return node
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
                "b": self.add_blob(dumps_with_own_names(obj))}

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


def _default_format() -> str:
    # under ``hookgrad run`` the name torch is hookgrad: torch.save writes torch's own format there
    import sys
    hookgrad_module = sys.modules.get(__name__.rpartition(".")[0])
    return "torch" if hookgrad_module is not None and sys.modules.get("torch") is hookgrad_module else "hookgrad"


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False, *, format=None) -> None:
    """Save ``obj`` (tensors, Parameters, state dicts, nested containers...) to ``f``, a path or a
    binary file object. Writing to a path replaces the file atomically. The pickle-related
    arguments exist for PyTorch compatibility and are ignored.

    ``format="torch"`` writes PyTorch's own zip checkpoint, which ``torch.load(weights_only=True)``
    opens (see ``hookgrad/_torch_format.py``); ``format="hookgrad"`` writes the format described
    above. The default is ``"torch"`` under ``hookgrad run`` (where the script's ``torch.save`` is
    this function) and ``"hookgrad"`` otherwise. An object a torch weights-only checkpoint cannot
    hold (a whole module, a custom class, a NumPy array) is written in hookgrad's format whatever
    the ``format``: torch could only read it back with torch's own classes; ``hookgrad.load``
    reads both."""
    if format is None:
        format = _default_format()
    if format not in ("torch", "hookgrad"):
        raise ValueError(f"save(): format must be 'torch' or 'hookgrad', not {format!r}")
    data = None
    if format == "torch":
        from ._torch_format import NotTorchEncodable, torch_checkpoint_bytes
        try:
            data = torch_checkpoint_bytes(obj)
        except NotTorchEncodable:
            data = None
    if data is None:
        try:
            data = _Writer().serialize(obj)
        except pickle.PicklingError as exc:
            # the words of the C pickler that torch.save uses, for a class that cannot be found by name
            import re
            raise pickle.PicklingError(re.sub(r"it's not found as (.+)\.([^.]+)$", r"attribute lookup \2 on \1 failed",
                                              str(exc))) from None
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise RuntimeError(f"Parent directory {os.path.dirname(path)} does not exist.")
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
        f.write(memoryview(data))   # what torch's writer hands a file object


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------
def _map_target(map_location):
    """Where ``map_location`` sends the saved storages (all tagged "cpu"), as a location string; None
    for none or a callable."""
    if map_location is None or callable(map_location):
        return None
    if isinstance(map_location, dict):
        location = map_location.get("cpu", "cpu")
        if not isinstance(location, str):   # torch matches the value against a pattern
            kind = "torch.device" if type(location).__name__ == "device" else type(location).__name__
            raise TypeError(f"expected string or bytes-like object, got '{kind}'")
        return location
    if isinstance(map_location, str) or type(map_location).__name__ == "device":
        return str(map_location)
    raise TypeError(f"'{type(map_location).__name__}' object is not callable")   # torch calls anything else


def _check_map_location(map_location) -> None:
    """The error torch's CPU-only build gives for a place other than the CPU or the meta device."""
    location = _map_target(map_location)
    if location in (None, "cpu", "meta"):
        return
    for kind, name in (("cuda", "CUDA"), ("xpu", "XPU")):
        if location.startswith(kind):
            from ._device import device
            device(location)   # torch parses the string first
            raise RuntimeError(_NOT_AVAILABLE.format(name, kind))
    if location.startswith("mps"):
        raise RuntimeError("torch.UntypedStorage(): Storage device not recognized: mps")
    raise RuntimeError(f"don't know how to restore data location of torch.storage.UntypedStorage (tagged with "
                       f"{location})")


def _tensor_from_array(arr, requires_grad: bool):
    from ._tensor import wrap
    out = wrap(arr)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _apply_map_location(map_location, tensor):
    """A callable ``map_location`` sees every loaded tensor with location "cpu"; None keeps it. On the meta
    device a tensor keeps its shape and dtype, not its data."""
    if _map_target(map_location) == "meta":
        from ._meta import meta_like
        tensor._ndarray = meta_like(tensor._ndarray)   # the tensor was just built: nothing else sees it
        return tensor
    if callable(map_location):
        mapped = map_location(tensor, "cpu")
        if mapped is not None:
            return mapped
    return tensor


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
        if isinstance(ref, dict) and ref.get("dtype") == "bfloat16":
            return self.array({**ref, "dtype": "<u2"}).view(bfloat16_np())
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
            out = _tensor_from_array(arr, requires_grad)
        out = _apply_map_location(self.map_location, out)
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
                out = cls((dec(k), dec(v)) for k, v in zip(keys, values))
                if tag == "odict" and "attrs" in node:
                    attrs = dec(node["attrs"])
                    if not isinstance(attrs, dict) or not all(isinstance(k, str) for k in attrs):
                        raise CheckpointError("malformed attributes of a mapping in checkpoint header")
                    for k, v in attrs.items():
                        setattr(out, k, v)
                return out
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
                array = self.array(node["a"])
                if self.weights_only:
                    require_numpy_globals(_NUMPY_ARRAY_GLOBALS, array.dtype)
                return array.copy()
            if tag == "npscalar":
                array = self.array(node["a"])
                if self.weights_only:
                    require_numpy_globals(_NUMPY_SCALAR_GLOBALS, array.dtype)
                return array[()]
            if tag == "pickle":
                if _map_target(self.map_location) == "meta":   # its tensors are not built here to be mapped
                    raise RuntimeError(f"hookgrad cannot load the pickled {node.get('type')} onto the meta device")
                if self.weights_only:
                    # only the globals allowed with torch.serialization.add_safe_globals (and the
                    # arrays and tensors inside them) may be named
                    return _SafeUnpickler(io.BytesIO(bytes(self.bytes_at(node["b"]))), node.get("type")).load()
                return pickle.loads(bytes(self.bytes_at(node["b"])))
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"malformed {tag!r} node in checkpoint header: {exc!r}") from None
        raise CheckpointError(f"unknown node type {tag!r} in checkpoint header")



# ---------------------------------------------------------------------------------------------
# Reading checkpoints written by PyTorch's torch.save (zip archives of a pickle + raw storages)
# ---------------------------------------------------------------------------------------------
# The pickle is read by a small interpreter of the pickle opcodes that PyTorch emits, written
# here instead of using the pickle module: it can only build plain containers, numbers, strings
# and the few objects listed in ``_torch_globals`` (tensors, Parameters, sizes, dtypes...). Any
# other global raises ``pickle.UnpicklingError``, as PyTorch's ``weights_only`` loader does.

_STORAGE_DTYPES = {
    "FloatStorage": "<f4", "DoubleStorage": "<f8", "HalfStorage": "<f2", "BFloat16Storage": "bfloat16",
    "LongStorage": "<i8", "IntStorage": "<i4", "ShortStorage": "<i2", "CharStorage": "i1",
    "ByteStorage": "u1", "BoolStorage": "?", "ComplexFloatStorage": "<c8", "ComplexDoubleStorage": "<c16",
}


class _StorageType:
    def __init__(self, name: str, dtype: str):
        self.name, self.dtype = name, dtype


class _TorchArchive:
    """The storages of one torch.save archive, read lazily and checked against their sizes."""

    def __init__(self, zf, prefix: str, big_endian: bool, map_location):
        self.zf, self.prefix, self.big_endian = zf, prefix, big_endian
        self.map_location = map_location
        self.storages: dict = {}

    def storage(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _StorageType)):
            raise CheckpointError(f"unsupported persistent id in PyTorch checkpoint: {pid!r}")
        _, stype, key, _location, numel = pid
        key = str(key)
        if key in self.storages:
            return self.storages[key]
        try:
            raw = self.zf.read(f"{self.prefix}data/{key}")
        except KeyError:
            raise CheckpointError(f"PyTorch checkpoint lacks the data of storage {key!r}") from None
        if stype.dtype == "bfloat16":
            half = np.frombuffer(raw, dtype=">u2" if self.big_endian else "<u2")
            try:
                arr = half.astype("<u2").view(bfloat16_np())
            except ImportError:
                # without ml_dtypes: widen to float32 exactly (bfloat16 is float32's top half)
                arr = (half.astype(np.uint32) << 16).view(np.float32)
        else:
            dtype = np.dtype(stype.dtype)
            if self.big_endian:
                dtype = dtype.newbyteorder(">")
            if len(raw) % dtype.itemsize:
                raise CheckpointError(f"PyTorch checkpoint storage {key!r} has a partial element")
            arr = np.frombuffer(bytearray(raw), dtype=dtype)
            if dtype.byteorder == ">":
                arr = arr.astype(dtype.newbyteorder("="))
        if type(numel) is int and arr.size != numel:
            raise CheckpointError(f"PyTorch checkpoint storage {key!r} has {arr.size} elements, "
                                  f"expected {numel}")
        self.storages[key] = arr
        return arr

    def rebuild_tensor(self, storage, offset, size, stride, requires_grad=False, backward_hooks=None,
                       metadata=None):
        if not isinstance(storage, np.ndarray):
            raise CheckpointError("PyTorch checkpoint tensor does not refer to a storage")
        try:
            offset = int(offset)
            size = tuple(int(v) for v in size)
            stride = tuple(int(v) for v in stride)
        except (TypeError, ValueError):
            raise CheckpointError("PyTorch checkpoint tensor has a malformed size or stride") from None
        if len(size) != len(stride) or offset < 0 or any(v < 0 for v in size + stride):
            raise CheckpointError("PyTorch checkpoint tensor has an invalid size, stride or offset")
        count = int(np.prod(size, dtype=np.int64))
        if count:
            last = offset + sum((n - 1) * st for n, st in zip(size, stride))
            if last >= storage.size:
                raise CheckpointError("PyTorch checkpoint tensor reaches past the end of its storage")
            item = storage.itemsize
            arr = np.lib.stride_tricks.as_strided(storage[offset:], size, tuple(st * item for st in stride),
                                                  writeable=True)
        else:
            arr = np.zeros(size, dtype=storage.dtype)
        out = _tensor_from_array(arr, requires_grad)
        out = _apply_map_location(self.map_location, out)
        return out

    def rebuild_parameter(self, data, requires_grad, backward_hooks=None, state=None):
        parameter_cls = _parameter_cls()
        if parameter_cls is None:
            raise CheckpointError("checkpoint holds a Parameter but hookgrad.nn is unavailable")
        return parameter_cls(data, requires_grad=bool(requires_grad))


def _torch_dtype(name: str):
    from ._dtype import to_dtype

    def resolve():
        try:
            return to_dtype(name)
        except (TypeError, KeyError, ValueError):
            raise CheckpointError(f"PyTorch checkpoint uses dtype torch.{name}, which hookgrad lacks") from None
    return resolve


def _torch_globals(archive: _TorchArchive) -> dict:
    """The only globals a PyTorch checkpoint may name, and what each one becomes here."""
    size_cls = _optional("_dtype", "Size") or tuple
    device_cls = _optional("_device", "device")
    table = {
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("torch._utils", "_rebuild_tensor_v2"): archive.rebuild_tensor,
        ("torch._utils", "_rebuild_parameter"): archive.rebuild_parameter,
        ("torch._utils", "_rebuild_parameter_with_state"): archive.rebuild_parameter,
        ("torch", "Size"): lambda dims=(): size_cls(int(d) for d in dims),
        ("torch", "device"): (lambda *a: device_cls(*a)) if device_cls is not None else (lambda *a: str(a[0])),
        ("builtins", "set"): set, ("builtins", "frozenset"): frozenset, ("builtins", "complex"): complex,
        ("builtins", "slice"): slice, ("builtins", "bytearray"): bytearray,
        ("_codecs", "encode"): lambda text, encoding="utf-8": str(text).encode(str(encoding)),
    }
    for module, name in list(table):
        if module == "builtins":
            table[("__builtin__", name)] = table[(module, name)]
    for name, dtype in _STORAGE_DTYPES.items():
        table[("torch", name)] = _StorageType(name, dtype)
    for name in ("float32", "float", "float64", "double", "float16", "half", "int64", "long", "int32", "int",
                 "int16", "short", "int8", "uint8", "bool", "complex64", "complex128", "bfloat16"):
        table[("torch", name)] = _LazyGlobal(_torch_dtype(name))
    return table


class _LazyGlobal:
    """A global whose value is resolved when it is used (so an unused unsupported dtype is harmless)."""

    def __init__(self, resolve):
        self.resolve = resolve


class _Mark:
    pass


class _PickleReader:
    """Interprets a pickle stream with a fixed table of globals; never imports or calls anything else."""

    def __init__(self, data: bytes, globals_table: dict, persistent_load):
        self.data = memoryview(data)
        self.pos = 0
        self.globals = globals_table
        self.callables = {id(v) for v in globals_table.values() if callable(v)}
        # classes allowed with torch.serialization.add_safe_globals: built as pickle builds them
        self.user_classes = {v for v in _safe_global_entries().values() if isinstance(v, type)}
        self.persistent_load = persistent_load

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise CheckpointError("PyTorch checkpoint pickle is truncated")
        out = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return out

    def line(self) -> str:
        end = bytes(self.data[self.pos:]).find(b"\n")
        if end < 0:
            raise CheckpointError("PyTorch checkpoint pickle is truncated")
        text = bytes(self.data[self.pos:self.pos + end]).decode("utf-8")
        self.pos += end + 1
        return text

    def find_global(self, module: str, name: str):
        value = self.globals.get((module, name))
        if value is None:
            raise pickle.UnpicklingError(_weights_only_failure(_unsupported_global(module, name)))
        return value

    def value(self, obj):
        return obj.resolve() if isinstance(obj, _LazyGlobal) else obj

    def call(self, fn, args):
        fn = self.value(fn)
        if id(fn) not in self.callables or not isinstance(args, tuple):
            raise CheckpointError(f"PyTorch checkpoint calls something that is not allowed: {fn!r}")
        try:
            return fn(*args)
        except CheckpointError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure here means a malformed file
            raise CheckpointError(f"PyTorch checkpoint holds a malformed object: {exc!r}") from None

    def pop_mark(self, stack):
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is _Mark:
                items = stack[i + 1:]
                del stack[i:]
                return items
        raise CheckpointError("PyTorch checkpoint pickle is malformed (no mark)")

    def load(self):
        try:
            return self._run()
        except (CheckpointError, pickle.UnpicklingError):
            raise
        except RecursionError:
            raise CheckpointError("PyTorch checkpoint is nested too deeply") from None
        except Exception as exc:  # noqa: BLE001 - whatever a malformed stream provokes
            raise CheckpointError(f"PyTorch checkpoint pickle is malformed: {exc!r}") from None

    def _run(self):
        stack: list = []
        memo: dict = {}
        unpack = struct.unpack
        while True:
            op = self.take(1)
            if op == b"\x80":  # PROTO
                self.take(1)
            elif op == b"\x95":  # FRAME
                self.take(8)
            elif op == b".":  # STOP
                if len(stack) != 1:
                    raise CheckpointError("PyTorch checkpoint pickle is malformed (stack at STOP)")
                return self.value(stack.pop())
            elif op == b"(":
                stack.append(_Mark)
            elif op == b")":
                stack.append(())
            elif op == b"t":
                stack.append(tuple(self.value(v) for v in self.pop_mark(stack)))
            elif op in (b"\x85", b"\x86", b"\x87"):
                n = op[0] - 0x84
                if len(stack) < n:
                    raise CheckpointError("PyTorch checkpoint pickle is malformed (short stack)")
                items = tuple(self.value(v) for v in stack[len(stack) - n:])
                del stack[len(stack) - n:]
                stack.append(items)
            elif op == b"]":
                stack.append([])
            elif op == b"l":
                stack.append([self.value(v) for v in self.pop_mark(stack)])
            elif op == b"a":
                item = self.value(stack.pop())
                self.expect(stack[-1], list).append(item)
            elif op == b"e":
                items = [self.value(v) for v in self.pop_mark(stack)]
                self.expect(stack[-1], list).extend(items)
            elif op == b"}":
                stack.append({})
            elif op == b"d":
                items = [self.value(v) for v in self.pop_mark(stack)]
                stack.append(dict(zip(items[::2], items[1::2])))
            elif op == b"s":
                value, key = self.value(stack.pop()), self.value(stack.pop())
                self.expect(stack[-1], dict)[key] = value
            elif op == b"u":
                items = [self.value(v) for v in self.pop_mark(stack)]
                target = self.expect(stack[-1], dict)
                for k, v in zip(items[::2], items[1::2]):
                    target[k] = v
            elif op == b"\x8f":
                stack.append(set())
            elif op == b"\x90":
                items = [self.value(v) for v in self.pop_mark(stack)]
                self.expect(stack[-1], set).update(items)
            elif op == b"\x91":
                stack.append(frozenset(self.value(v) for v in self.pop_mark(stack)))
            elif op == b"N":
                stack.append(None)
            elif op == b"\x88":
                stack.append(True)
            elif op == b"\x89":
                stack.append(False)
            elif op == b"K":
                stack.append(self.take(1)[0])
            elif op == b"M":
                stack.append(unpack("<H", self.take(2))[0])
            elif op == b"J":
                stack.append(unpack("<i", self.take(4))[0])
            elif op == b"\x8a":
                n = self.take(1)[0]
                stack.append(int.from_bytes(self.take(n), "little", signed=True))
            elif op == b"\x8b":
                n = unpack("<i", self.take(4))[0]
                if n < 0:
                    raise CheckpointError("PyTorch checkpoint pickle is malformed (negative length)")
                stack.append(int.from_bytes(self.take(n), "little", signed=True))
            elif op == b"I":
                text = self.line()
                stack.append({"00": False, "01": True}.get(text) if text in ("00", "01") else int(text))
            elif op == b"G":
                stack.append(unpack(">d", self.take(8))[0])
            elif op in (b"X", b"\x8c", b"\x8d"):
                n = {b"X": lambda: unpack("<I", self.take(4))[0], b"\x8c": lambda: self.take(1)[0],
                     b"\x8d": lambda: unpack("<Q", self.take(8))[0]}[op]()
                stack.append(self.take(n).decode("utf-8", "surrogatepass"))
            elif op in (b"B", b"C", b"\x8e"):
                n = {b"B": lambda: unpack("<I", self.take(4))[0], b"C": lambda: self.take(1)[0],
                     b"\x8e": lambda: unpack("<Q", self.take(8))[0]}[op]()
                stack.append(self.take(n))
            elif op == b"c":
                module = self.line()
                stack.append(self.find_global(module, self.line()))
            elif op == b"\x93":
                name, module = self.value(stack.pop()), self.value(stack.pop())
                stack.append(self.find_global(str(module), str(name)))
            elif op == b"R":
                args = stack.pop()
                fn = stack.pop()
                stack.append(self.call(fn, args))
            elif op == b"\x81":  # NEWOBJ: only for the allowed classes
                args = stack.pop()
                cls = stack.pop()
                if isinstance(cls, type) and cls in self.user_classes:
                    stack.append(cls.__new__(cls, *args))
                else:
                    stack.append(self.call(cls, args))
            elif op == b"b":  # BUILD: attribute state, for dicts (state-dict metadata) and allowed classes
                state = self.value(stack.pop())
                target = stack[-1]
                if type(target) in self.user_classes:
                    _set_state(target, state)
                    continue
                if isinstance(target, (np.dtype, np.ndarray)):   # torch's unpickler names the class it refuses
                    raise pickle.UnpicklingError(_weights_only_failure(
                        "Can only build Tensor, Parameter, OrderedDict or types allowlisted via `add_safe_globals`, "
                        f"but got {type(target)}"))
                if not isinstance(target, dict) or not isinstance(state, dict) or \
                        not all(isinstance(k, str) for k in state):
                    raise CheckpointError("PyTorch checkpoint sets state on an object that is not allowed")
                for k, v in state.items():
                    setattr(target, k, v)
            elif op == b"Q":
                stack.append(self.persistent_load(self.value(stack.pop())))
            elif op in (b"q", b"r", b"p", b"\x94"):
                if op == b"q":
                    idx = self.take(1)[0]
                elif op == b"r":
                    idx = unpack("<I", self.take(4))[0]
                elif op == b"p":
                    idx = int(self.line())
                else:
                    idx = len(memo)
                if not stack:
                    raise CheckpointError("PyTorch checkpoint pickle is malformed (empty stack)")
                memo[idx] = stack[-1]
            elif op in (b"h", b"j", b"g"):
                idx = (self.take(1)[0] if op == b"h" else unpack("<I", self.take(4))[0] if op == b"j"
                       else int(self.line()))
                if idx not in memo:
                    raise CheckpointError("PyTorch checkpoint pickle refers to an unknown memo entry")
                stack.append(memo[idx])
            elif op == b"0":
                stack.pop()
            elif op == b"1":
                self.pop_mark(stack)
            elif op == b"2":
                stack.append(stack[-1])
            else:
                raise CheckpointError(f"PyTorch checkpoint pickle uses an unsupported opcode {op!r}")

    @staticmethod
    def expect(obj, cls):
        if not isinstance(obj, cls):
            raise CheckpointError("PyTorch checkpoint pickle is malformed (wrong container)")
        return obj


def _load_torch_zip(buffer: bytearray, map_location):
    import zipfile
    try:
        zf = zipfile.ZipFile(io.BytesIO(bytes(buffer)))
        names = zf.namelist()
        pickles = [n for n in names if n == "data.pkl" or n.endswith("/data.pkl")]
        if not pickles:
            raise CheckpointError("zip archive holds no data.pkl: not a PyTorch checkpoint")
        prefix = pickles[0][:-len("data.pkl")]
        # without a record, torch.serialization.set_default_load_endianness decides (default: little)
        big_endian = _settings["endianness"] is LoadEndianness.BIG
        if prefix + "byteorder" in names:
            big_endian = zf.read(prefix + "byteorder").strip() == b"big"
        archive = _TorchArchive(zf, prefix, big_endian, map_location)
        globals_table = _torch_globals(archive)
        globals_table.update(_safe_global_entries())  # torch.serialization.add_safe_globals
        reader = _PickleReader(zf.read(pickles[0]), globals_table, archive.storage)
        return reader.load()
    except (zipfile.BadZipFile, EOFError, OSError, struct.error, UnicodeDecodeError, IndexError,
            ValueError, TypeError, AttributeError) as exc:
        raise CheckpointError(f"corrupt PyTorch checkpoint: {exc}") from None
    except RecursionError:
        raise CheckpointError("PyTorch checkpoint is nested too deeply") from None


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
    CPU device, ``"meta"`` (shapes and dtypes without data), a dict giving where ``"cpu"`` goes, or a
    callable ``fn(tensor, "cpu")`` whose non-None result replaces the tensor; another device is torch's
    error on a machine without it. A corrupt, truncated or foreign file raises
    :class:`CheckpointError`. Checkpoints written by ``torch.save`` are read as described in the
    module documentation.
    """
    _check_map_location(map_location)
    buffer = _read_all(f)
    head_len = len(MAGIC) + _PREFIX.size
    if len(buffer) < head_len + _DIGEST_SIZE or bytes(buffer[:len(MAGIC)]) != MAGIC:
        if bytes(buffer[:4]) == b"PK\x03\x04":
            return _load_torch_zip(buffer, map_location)
        if len(buffer) >= len(MAGIC) and bytes(buffer[:len(MAGIC)]) != MAGIC:
            first = chr(buffer[0])
            detail = _weights_only_failure(f"Unsupported operand {buffer[0]}") if weights_only else \
                f"invalid load key, {first!r}."
            raise _NotACheckpoint(f"{detail} (not a hookgrad checkpoint: bad magic number)")
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


# ---------------------------------------------------------------------------------------------
# The rest of torch.serialization's public names
# ---------------------------------------------------------------------------------------------
import enum as _enum  # noqa: E402
import mmap as _mmap  # noqa: E402
import threading as _threading  # noqa: E402
import warnings as _warnings  # noqa: E402

__all__ += ["DEFAULT_PROTOCOL", "SourceChangeWarning", "mkdtemp", "register_package",
            "check_module_version_greater_or_equal", "validate_cuda_device", "validate_hpu_device", "location_tag",
            "default_restore_location", "normalize_storage_type", "storage_to_tensor_type", "StorageType",
            "LoadEndianness", "get_crc32_options", "set_crc32_options", "get_default_load_endianness",
            "set_default_load_endianness", "get_default_mmap_options", "set_default_mmap_options",
            "clear_safe_globals", "get_safe_globals", "add_safe_globals", "safe_globals",
            "get_unsafe_globals_in_checkpoint", "skip_data"]

DEFAULT_PROTOCOL = 2


class SourceChangeWarning(Warning):
    """torch's warning for a saved module whose source changed; hookgrad never pickles module source."""


def mkdtemp():
    """A context manager giving a temporary folder, removed on exit."""
    return tempfile.TemporaryDirectory()


class LoadEndianness(_enum.Enum):
    NATIVE = 1
    LITTLE = 2
    BIG = 3


_settings = {"endianness": None, "crc32": True, "mmap_flags": _mmap.MAP_PRIVATE}


def get_default_load_endianness():
    """The byte order assumed for torch checkpoints that do not record theirs (None: little-endian,
    what every checkpoint without the record was written in)."""
    return _settings["endianness"]


def set_default_load_endianness(endianness) -> None:
    if endianness is not None and not isinstance(endianness, LoadEndianness):
        raise TypeError("Invalid argument type in function set_default_load_endianness")
    _settings["endianness"] = endianness


def get_crc32_options() -> bool:
    return _settings["crc32"]


def set_crc32_options(compute_crc32: bool) -> None:
    """Kept for torch's API: Python's zipfile always writes CRC-32 checksums in the records it writes."""
    _settings["crc32"] = bool(compute_crc32)


def get_default_mmap_options():
    return _settings["mmap_flags"]


class set_default_mmap_options:
    """Set the mmap flags of ``load(..., mmap=True)`` (as a call, or for a ``with`` block)."""

    def __init__(self, flags: int) -> None:
        if flags not in (_mmap.MAP_PRIVATE, _mmap.MAP_SHARED):
            raise ValueError("Invalid argument in function set_default_mmap_options, expected mmap.MAP_PRIVATE or "
                             f"mmap.MAP_SHARED, but got {flags}")
        self.prev = _settings["mmap_flags"]
        _settings["mmap_flags"] = flags

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        _settings["mmap_flags"] = self.prev


# -- globals allowed in weights_only loading ------------------------------------------------------
_user_safe_globals: list = []
_safe_globals_local = _threading.local()


def _safe_global_entries():
    entries = list(_user_safe_globals) + list(getattr(_safe_globals_local, "stack", ()))
    table = {}
    for entry in entries:
        if isinstance(entry, tuple):
            obj, name = entry
            module, _, qualname = name.rpartition(".")
        else:
            obj, module, qualname = entry, getattr(entry, "__module__", ""), getattr(entry, "__qualname__", "")
            own = own_name(entry) if isinstance(entry, type) else None
            if own is not None:  # a class named as torch's under `hookgrad run`: saved under its own name
                table[own] = obj
        table[(module, qualname)] = obj
    return table


def add_safe_globals(safe_globals: list) -> None:
    """Allow these classes and functions (or ``(object, "module.name")`` pairs) in ``weights_only``
    loading, for the rest of the process."""
    _user_safe_globals.extend(safe_globals)


def get_safe_globals() -> list:
    return list(_user_safe_globals) + list(getattr(_safe_globals_local, "stack", ()))


def clear_safe_globals() -> None:
    _user_safe_globals.clear()


class safe_globals:
    """``add_safe_globals`` for the duration of a ``with`` block (in this thread)."""

    def __init__(self, safe_globals: list):
        self.safe_globals = list(safe_globals)

    def __enter__(self):
        stack = getattr(_safe_globals_local, "stack", None)
        if stack is None:
            stack = _safe_globals_local.stack = []
        stack.extend(self.safe_globals)

    def __exit__(self, *exc):
        stack = _safe_globals_local.stack
        del stack[len(stack) - len(self.safe_globals):]
        return False


def get_unsafe_globals_in_checkpoint(f) -> list:
    """The ``module.name`` globals a torch checkpoint's pickle names that ``weights_only`` loading
    would refuse (neither built in nor added with ``add_safe_globals``)."""
    import pickletools
    import types
    import zipfile
    buffer = _read_all(f)
    pickles = []
    if bytes(buffer[:len(MAGIC)]) == MAGIC:  # hookgrad's format: the objects it stored as pickles
        head_len = len(MAGIC) + _PREFIX.size
        _, header_len = _PREFIX.unpack_from(buffer, len(MAGIC))
        header = json.loads(bytes(buffer[head_len:head_len + header_len]).decode("utf-8"))
        header_end = head_len + header_len
        reader = _Reader(buffer, header_end + (-header_end) % _ALIGN, len(buffer) - _DIGEST_SIZE, header["tensors"],
                         True, None)
        nodes = [header["root"]]
        numpy_names = set()   # what torch's unpickler would meet for the arrays and scalars stored as such
        while nodes:
            node = nodes.pop()
            if isinstance(node, dict):
                if node.get("t") == "pickle":
                    pickles.append(bytes(reader.bytes_at(node["b"])))
                else:
                    if node.get("t") in ("ndarray", "npscalar"):
                        numpy_names.update(_NUMPY_ARRAY_GLOBALS if node["t"] == "ndarray" else _NUMPY_SCALAR_GLOBALS)
                    nodes.extend(node.values())
            elif isinstance(node, list):
                nodes.extend(node)
        allowed = set(_ARRAY_GLOBALS) | _NUMPY_GLOBAL_NAMES
        safe = {_NUMPY_OLD_NAMES.get(key, key) for key in _safe_global_entries()}
        numpy_refused = sorted(f"{m}.{n}" for m, n in numpy_names - safe)
    elif zipfile.is_zipfile(io.BytesIO(bytes(buffer))):
        with zipfile.ZipFile(io.BytesIO(bytes(buffer))) as zf:
            names = [n for n in zf.namelist() if n == "data.pkl" or n.endswith("/data.pkl")]
            if not names:
                raise ValueError("Expected input to be a checkpoint returned by torch.save")
            pickles.append(zf.read(names[0]))
        allowed = set(_torch_globals(types.SimpleNamespace(rebuild_tensor=None, rebuild_parameter=None)))
        numpy_refused = []
    else:
        raise ValueError("Expected input to be a checkpoint returned by torch.save")
    allowed |= set(_safe_global_entries())
    found = set()
    for data in pickles:
        strings = []
        for opcode, arg, _ in pickletools.genops(data):
            if opcode.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8"):
                strings.append(arg)
            elif opcode.name == "GLOBAL":
                found.add(tuple(arg.split(" ", 1)))
            elif opcode.name == "STACK_GLOBAL" and len(strings) >= 2:
                found.add((strings[-2], strings[-1]))
    return sorted(set(f"{m}.{n}" for m, n in found - allowed) | set(numpy_refused))


# NumPy arrays and scalars load under weights_only only once the user allows what torch's unpickler
# would meet for them, in the order it meets them: the rebuilding function, ndarray, dtype, then the
# dtype's own class (numpy.dtypes.Float64DType), whatever the checkpoint's format
_NUMPY_ARRAY_GLOBALS = (("numpy._core.multiarray", "_reconstruct"), ("numpy", "ndarray"), ("numpy", "dtype"))
_NUMPY_SCALAR_GLOBALS = (("numpy._core.multiarray", "scalar"), ("numpy", "dtype"))
_NUMPY_OLD_NAMES = {("numpy.core.multiarray", "_reconstruct"): ("numpy._core.multiarray", "_reconstruct"),
                    ("numpy.core.multiarray", "scalar"): ("numpy._core.multiarray", "scalar")}


def require_numpy_globals(needed, np_dtype) -> None:
    """torch's refusal of a NumPy array or scalar under ``weights_only`` unless its globals are allowed."""
    allowed = {_NUMPY_OLD_NAMES.get(key, key) for key in _safe_global_entries()}
    for module, name in needed:
        if (module, name) not in allowed:
            raise pickle.UnpicklingError(_weights_only_failure(_unsupported_global(module, name)))
    dtype_class = type(np.dtype(np_dtype))
    if (dtype_class.__module__, dtype_class.__qualname__) not in allowed:
        raise pickle.UnpicklingError(_weights_only_failure(
            "Can only build Tensor, Parameter, OrderedDict or types allowlisted via `add_safe_globals`, but got "
            f"{dtype_class}"))


_NUMPY_GLOBAL_NAMES = {("numpy._core.numeric", "_frombuffer"), ("numpy.core.numeric", "_frombuffer"),
                       ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
                       ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
                       ("numpy._core.multiarray", "scalar")}
_ARRAY_GLOBALS = {("hookgrad._tensor", "_rebuild_tensor"),
                  ("hookgrad._tensor", "Tensor"), ("hookgrad.nn.parameter", "Parameter"),
                  ("collections", "OrderedDict"), ("builtins", "set"), ("builtins", "frozenset"),
                  ("builtins", "complex"), ("builtins", "slice"), ("builtins", "bytearray")}


class _SafeUnpickler(pickle.Unpickler):
    """Reads an object stored as a pickle in a hookgrad checkpoint under ``weights_only``: any
    global outside the user's safe globals and the array/tensor rebuilders is refused."""

    def __init__(self, file, type_name):
        super().__init__(file)
        self.type_name = type_name
        self.safe = _safe_global_entries()

    def find_class(self, module, name):
        if (module, name) in self.safe:
            return self.safe[(module, name)]
        # hookgrad's tensors pickle as NumPy arrays inside an allowed object: the NumPy names stay allowed here
        if (module, name) in _ARRAY_GLOBALS or (module, name) in _NUMPY_GLOBAL_NAMES:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(_weights_only_failure(_unsupported_global(module, name)))


def _set_state(target, state) -> None:
    """What pickle's BUILD does: ``__setstate__``, else the instance dict (and slots) updated."""
    if getattr(type(target), "__setstate__", None) is not None:  # the class defines its own
        target.__setstate__(state)
        return
    slots = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slots = state
    if state:
        target.__dict__.update(state)
    for key, value in (slots or {}).items():
        setattr(target, key, value)


class skip_data:
    """torch's context for saving or loading without storage bytes (for fake tensors). hookgrad has
    no fake tensors; entering raises instead of writing or reading a checkpoint without its data."""

    def __init__(self, materialize_fake_tensors: bool = False):
        self.materialize_fake_tensors = materialize_fake_tensors

    def __enter__(self):
        raise NotImplementedError("torch.serialization.skip_data needs fake tensors, which hookgrad does not have")

    def __exit__(self, *exc):
        return False


# -- storage locations ------------------------------------------------------------------------------
_package_registry: list = []


def _cpu_tag(obj):
    return "cpu"


def _cpu_deserialize(obj, location):
    if location == "cpu":
        return obj
    return None


def register_package(priority: int, tagger, deserializer) -> None:
    """Register how storages of a device are tagged when saved and restored when loaded."""
    _package_registry.append((priority, tagger, deserializer))
    _package_registry.sort(key=lambda entry: entry[0])


register_package(10, _cpu_tag, _cpu_deserialize)


def location_tag(storage) -> str:
    for _, tagger, _ in _package_registry:
        location = tagger(storage)
        if location:
            return location
    raise RuntimeError(f"don't know how to determine data location of {type(storage).__name__}")


def default_restore_location(storage, location: str):
    for _, _, restore in _package_registry:
        result = restore(storage, location)
        if result is not None:
            return result
    raise RuntimeError(f"don't know how to restore data location of {type(storage).__name__} (tagged with "
                       f"{location})")


_NOT_AVAILABLE = ("Attempting to deserialize object on a {} device but torch.{}.is_available() is False. If you "
                  "are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') "
                  "to map your storages to the CPU.")


def validate_cuda_device(location):
    raise RuntimeError(_NOT_AVAILABLE.format("CUDA", "cuda"))


def validate_hpu_device(location):
    raise RuntimeError("Attempting to deserialize object on a HPU device but HPU is not available (hookgrad runs on "
                       "the CPU only)")


def normalize_storage_type(storage_type):
    import hookgrad
    return getattr(hookgrad, storage_type.__name__)


def storage_to_tensor_type(storage):
    import hookgrad
    return getattr(hookgrad, type(storage).__name__.replace("Storage", "Tensor"))


class StorageType:
    """The type of a storage named in a checkpoint (``torch.FloatStorage`` ...), by its dtype."""

    def __init__(self, name: str):
        from ._dtype import to_dtype
        self._dtype = to_dtype(name)

    @property
    def dtype(self):
        return self._dtype

    def __str__(self):
        return f"StorageType(dtype={self.dtype})"


def check_module_version_greater_or_equal(module, req_version_tuple, error_if_malformed: bool = True) -> bool:
    """Whether ``module.__version__`` is at least ``req_version_tuple`` (compared part by part)."""
    version = module.__version__.split(".")
    try:
        parts = tuple(type(req)(v) for req, v in zip(req_version_tuple, version))
        return parts >= tuple(req_version_tuple)
    except Exception as exc:  # noqa: BLE001 - a version string we cannot read
        message = (f"'{module.__name__}' module version string is malformed '{module.__version__}' and cannot be "
                   f"compared with tuple {req_version_tuple}")
        if error_if_malformed:
            raise RuntimeError(message) from exc
        _warnings.warn(message + ", but continuing assuming that requirement is met", stacklevel=2)
        return True


# torch.serialization's module constants and type aliases, which libraries import for annotations
# (pyro's ParamStore.load takes a ``MAP_LOCATION``) and for reading torch's legacy format's sizes
LONG_SIZE = struct.Struct("=l").size
INT_SIZE = struct.Struct("=i").size
SHORT_SIZE = struct.Struct("=h").size
MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001
STORAGE_KEY_SEPARATOR = ","
IS_WINDOWS = os.name == "nt"
UNSAFE_MESSAGE = _LOAD_DEFAULT_CHANGE
try:
    from mmap import MAP_PRIVATE, MAP_SHARED
except ImportError:  # no such flags on Windows
    MAP_SHARED = MAP_PRIVATE = None


def _type_aliases():
    import typing

    from . import _legacy, types
    from ._device import device
    storage = typing.Union[types.Storage, _legacy.TypedStorage, _legacy.UntypedStorage]
    map_location = typing.Optional[typing.Union[typing.Callable[[types.Storage, str], types.Storage], device, str,
                                                dict]]
    return storage, map_location, types.FileLike


STORAGE, MAP_LOCATION, FileLike = _type_aliases()
