"""Writing PyTorch's own checkpoint format (what ``torch.save`` writes), without torch.

A torch checkpoint is an uncompressed zip archive::

    archive/data.pkl                a pickle (protocol 2) of the saved object
    archive/data/<key>              the raw little-endian bytes of each storage
    archive/byteorder, archive/version, archive/.format_version, archive/.storage_alignment,
    archive/.data/serialization_id  small records torch writes beside them

In the pickle a tensor is ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
requires_grad, OrderedDict())`` whose storage is a persistent id ``("storage", torch.FloatStorage,
key, "cpu", numel)``, and a Parameter is ``torch._utils._rebuild_parameter(tensor, requires_grad,
OrderedDict())``. The pickle is written opcode by opcode here (the pickle module would have to
import torch to name its globals), and only with the globals that ``torch.load(weights_only=True)``
accepts: tensors, Parameters, dtypes, ``torch.Size``, ``torch.device``, OrderedDicts (with their
attributes, e.g. a state dict's ``_metadata``), dicts, lists, tuples, sets, numbers, strings, bytes
and None. Anything else raises :class:`NotTorchEncodable`.

Tensors that share memory (views of one base) share one storage in the archive, as in torch, and a
tensor object saved twice is one object when loaded.
"""
from __future__ import annotations

import collections
import io
import secrets
import struct
import sys
import zipfile

import numpy as np

_STORAGE_TYPES = {"float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
                  "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage", "int8": "CharStorage",
                  "uint8": "ByteStorage", "bool": "BoolStorage", "complex64": "ComplexFloatStorage",
                  "complex128": "ComplexDoubleStorage", "bfloat16": "BFloat16Storage"}
_ALIGNMENT = 64
_PADDING_FIELD = 0x4246  # the zip extra-field id torch pads local headers with ("FB")


class NotTorchEncodable(TypeError):
    """The object holds something PyTorch's weights-only checkpoint format cannot express."""


class _PickleWriter:
    def __init__(self):
        from ._tensor import Tensor
        from ._dtype import Size, dtype
        from ._device import device
        from .nn.parameter import Parameter
        self.out = bytearray()
        self.memo: dict[int, int] = {}  # id(tensor) -> memo slot
        self.keepalive: list = []
        self.active: set[int] = set()
        self.storages: dict[tuple, str] = {}  # (root address, nbytes, dtype) -> key
        self.storage_data: list[tuple[str, bytes]] = []
        self.Tensor, self.Parameter, self.Size, self.dtype, self.device = Tensor, Parameter, Size, dtype, device

    # -- opcodes ---------------------------------------------------------------------------
    def op(self, code: bytes, payload: bytes = b"") -> None:
        self.out += code + payload

    def global_(self, module: str, name: str) -> None:
        self.op(b"c", f"{module}\n{name}\n".encode("ascii"))

    def int_(self, value: int) -> None:
        if 0 <= value < 256:
            self.op(b"K", bytes([value]))
        elif 0 <= value < 65536:
            self.op(b"M", struct.pack("<H", value))
        elif -(2 ** 31) <= value < 2 ** 31:
            self.op(b"J", struct.pack("<i", value))
        else:
            raw = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
            if len(raw) > 255:
                raise NotTorchEncodable("integer too large for a checkpoint")
            self.op(b"\x8a", bytes([len(raw)]) + raw)

    def str_(self, value: str) -> None:
        raw = value.encode("utf-8", "surrogatepass")
        self.op(b"X", struct.pack("<I", len(raw)) + raw)

    def tuple_(self, items) -> None:
        items = list(items)
        if not items:
            self.op(b")")
            return
        if len(items) > 3:
            self.op(b"(")
        for item in items:
            self.value(item)
        self.op({1: b"\x85", 2: b"\x86", 3: b"\x87"}.get(len(items), b"t"))

    def call(self, module: str, name: str, args) -> None:
        self.global_(module, name)
        self.tuple_(args)
        self.op(b"R")

    def empty_ordered_dict(self) -> None:
        self.global_("collections", "OrderedDict")
        self.op(b")R")

    # -- values ----------------------------------------------------------------------------
    def value(self, obj) -> None:
        if obj is None:
            self.op(b"N")
        elif obj is True or obj is False:
            self.op(b"\x88" if obj else b"\x89")
        elif type(obj) is int:
            self.int_(obj)
        elif type(obj) is float:
            self.op(b"G", struct.pack(">d", obj))
        elif type(obj) is str:
            self.str_(obj)
        elif isinstance(obj, self.Tensor):
            self.tensor(obj)
        elif isinstance(obj, self.dtype):
            self.global_("torch", obj.name)
        elif isinstance(obj, self.device):
            if str(obj) != "cpu":
                raise NotTorchEncodable(f"device {obj}")
            self.call("torch", "device", ["cpu"])
        elif type(obj) is complex:
            self.call("builtins", "complex", [obj.real, obj.imag])
        elif type(obj) in (bytes, bytearray):
            if type(obj) is bytes:
                self.call("_codecs", "encode", [obj.decode("latin-1"), "latin1"])
            else:
                self.global_("builtins", "bytearray")
                self.tuple_([bytes(obj)])
                self.op(b"R")
        else:
            self.container(obj)

    def container(self, obj) -> None:
        key = id(obj)
        if key in self.active:
            raise ValueError("cannot save an object that contains itself")
        self.active.add(key)
        try:
            if self.Size is not None and type(obj) is self.Size:
                self.global_("torch", "Size")
                self.tuple_([tuple(int(v) for v in obj)])
                self.op(b"R")
            elif type(obj) is tuple:
                self.tuple_(obj)
            elif type(obj) is list:
                self.op(b"]")
                if obj:
                    self.op(b"(")
                    for item in obj:
                        self.value(item)
                    self.op(b"e")
            elif type(obj) is dict:
                self.op(b"}")
                self.items(obj)
            elif type(obj) is collections.OrderedDict:
                self.empty_ordered_dict()
                self.items(obj)
                attrs = vars(obj)
                if attrs:  # e.g. a module state dict's _metadata, set by BUILD as torch does
                    self.op(b"}")
                    self.items({str(k): v for k, v in attrs.items()})
                    self.op(b"b")
            elif type(obj) is set:
                self.global_("builtins", "set")
                self.value([*obj])
                self.op(b"\x85R")
            else:
                raise NotTorchEncodable(f"{type(obj).__module__}.{type(obj).__qualname__}")
        finally:
            self.active.discard(key)

    def items(self, mapping) -> None:
        if not mapping:
            return
        self.op(b"(")
        for k, v in mapping.items():
            self.value(k)
            self.value(v)
        self.op(b"u")

    # -- tensors -----------------------------------------------------------------------------
    def tensor(self, t) -> None:
        slot = self.memo.get(id(t))
        if slot is not None:
            self.op(b"j", struct.pack("<I", slot))
            return
        from .utils.hooks import warn_if_has_hooks
        warn_if_has_hooks(t)
        if isinstance(t, self.Parameter):
            self.global_("torch._utils", "_rebuild_parameter")
            self.op(b"(")
            self.plain_tensor(t, requires_grad=False)
            self.value(bool(t.requires_grad))
            self.empty_ordered_dict()
            self.op(b"tR")
        else:
            self.plain_tensor(t, requires_grad=bool(t.requires_grad))
        slot = len(self.memo)
        self.memo[id(t)] = slot
        self.keepalive.append(t)
        self.op(b"r", struct.pack("<I", slot))

    def plain_tensor(self, t, requires_grad: bool) -> None:
        data = t._ndarray
        dtype_name = data.dtype.name
        if dtype_name not in _STORAGE_TYPES:
            raise NotTorchEncodable(f"tensor of dtype {dtype_name}")
        key, numel, offset, stride = self.storage_of(data, is_view=t._base_value is not None)
        self.global_("torch._utils", "_rebuild_tensor_v2")
        self.op(b"(")
        self.op(b"(")
        self.str_("storage")
        self.global_("torch", _STORAGE_TYPES[dtype_name])
        self.str_(key)
        self.str_("cpu")
        self.int_(numel)
        self.op(b"tQ")
        self.int_(offset)
        self.tuple_([int(n) for n in data.shape])
        self.tuple_(stride)
        self.value(requires_grad)
        self.empty_ordered_dict()
        self.op(b"tR")

    def storage_of(self, data: np.ndarray, is_view: bool):
        """(key, numel, element offset, element strides) of ``data`` in a storage of the archive.
        A tensor that covers its whole buffer, and views (in torch's sense) of a buffer, share that
        buffer's storage; anything else (a tensor that merely sits inside a larger scratch array,
        or that torch could not describe with non-negative element strides over its buffer) gets
        a contiguous storage of its own, so that no unrelated bytes are written."""
        from ._legacy import UntypedStorage, _address
        item = data.itemsize
        storage = UntypedStorage._of(data)
        root_bytes = storage._bytes
        start = _address(data) - storage.data_ptr() if data.size else 0
        strides = data.strides
        whole = start == 0 and data.nbytes == root_bytes.size
        shareable = ((is_view or whole) and data.size and root_bytes.size % item == 0 and start % item == 0
                     and all(s >= 0 and s % item == 0 for s in strides) and sys.byteorder == "little"
                     and data.dtype.isnative)
        if shareable:
            ident = (storage.data_ptr(), root_bytes.size, data.dtype.str)
            key = self.storages.get(ident)
            if key is None:
                key = str(len(self.storage_data))
                self.storages[ident] = key
                self.storage_data.append((key, root_bytes.tobytes()))
                self.keepalive.append(storage)
            return key, root_bytes.size // item, start // item, tuple(s // item for s in strides)
        compact = data.astype(data.dtype.newbyteorder("<"), order="C")  # keeps 0-d arrays 0-d
        key = str(len(self.storage_data))
        self.storage_data.append((key, compact.tobytes()))
        contiguous, acc = [], 1
        for n in reversed(data.shape):
            contiguous.append(acc)
            acc *= int(n)
        return key, compact.size, 0, tuple(reversed(contiguous))


def _aligned_entry(zf: zipfile.ZipFile, name: str, payload: bytes) -> None:
    """Write ``payload`` as a stored entry whose data starts on a 64-byte boundary, as torch does."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    header = 30 + len(name.encode("utf-8"))
    offset = zf.fp.tell()
    pad = (-(offset + header + 4)) % _ALIGNMENT
    info.extra = struct.pack("<HH", _PADDING_FIELD, pad) + b"Z" * pad
    zf.writestr(info, payload)


def torch_checkpoint_bytes(obj) -> bytes:
    """The bytes ``torch.save(obj, f)`` would write (up to its random serialization id)."""
    writer = _PickleWriter()
    writer.op(b"\x80\x02")
    writer.value(obj)
    writer.op(b".")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        _aligned_entry(zf, "archive/data.pkl", bytes(writer.out))
        _aligned_entry(zf, "archive/.format_version", b"1")
        _aligned_entry(zf, "archive/.storage_alignment", b"64")
        _aligned_entry(zf, "archive/byteorder", b"little")
        for key, raw in writer.storage_data:
            _aligned_entry(zf, f"archive/data/{key}", raw)
        _aligned_entry(zf, "archive/version", b"3\n")
        _aligned_entry(zf, "archive/.data/serialization_id", str(secrets.randbits(128)).zfill(40).encode())
    return buffer.getvalue()
