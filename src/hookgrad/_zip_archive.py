"""``torch.PyTorchFileReader``: the reader of the zip archives ``torch.save`` writes (and
``hookgrad.save(format="torch")``, see ``_torch_format.py``), record by record.

An archive holds its records under one top-level folder (``archive/data.pkl``,
``archive/data/0``, ...); the reader names them without it, in the archive's order. Records are
stored uncompressed, so ``get_record_offset`` is where a record's bytes start in the file (what
torch's memory-mapped loading reads from). Errors are torch's RuntimeErrors with its wording.
"""
from __future__ import annotations

import io
import os
import struct
import zipfile

import numpy as np

_CORRUPT_HINT = (" This is an internal miniz error. If you are seeing this error, there is a high likelihood that "
                 "your checkpoint file is corrupted. This can happen if the checkpoint was not saved properly, was "
                 "transferred incorrectly, or the file was modified after saving.")
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")  # a zip local file header: 30 bytes before the name


def _stream_error(what: str) -> RuntimeError:
    return RuntimeError(f"PytorchStreamReader failed {what}.{_CORRUPT_HINT}")


class PyTorchFileReader:
    """Reads the records of one torch zip archive, from a path or a binary file object."""

    def __init__(self, file):
        if isinstance(file, (str, os.PathLike)):
            path = os.fspath(file)
            try:
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError as exc:
                raise RuntimeError(f"open file failed because of errno {exc.errno} on fopen: {exc.strerror}, "
                                   f"file path: {path}") from None
        elif hasattr(file, "read"):
            data = file.read()
            if isinstance(data, str):
                raise TypeError("PyTorchFileReader needs a file opened in binary mode")
        else:
            raise TypeError(f"__init__(): incompatible constructor arguments; got {type(file).__name__}")
        self._ndarray = bytes(data)
        try:
            self._zip = zipfile.ZipFile(io.BytesIO(self._ndarray))
        except zipfile.BadZipFile:
            raise _stream_error("reading zip archive: failed finding central directory") from None
        infos = self._zip.infolist()
        if not infos:
            raise _stream_error("reading zip archive: no records")
        first = infos[0].filename
        self._prefix = first[:first.index("/") + 1] if "/" in first else ""
        self._infos = {info.filename[len(self._prefix):]: info for info in infos
                       if info.filename.startswith(self._prefix)}

    def _info(self, name: str) -> zipfile.ZipInfo:
        info = self._infos.get(name)
        if info is None:
            raise _stream_error(f"locating file {name}: file not found")
        return info

    def get_all_records(self) -> list:
        return list(self._infos)

    def has_record(self, name: str) -> bool:
        return name in self._infos

    def get_record(self, name: str) -> bytes:
        return self._zip.read(self._info(name))

    def get_record_size(self, name: str) -> int:
        return self._info(name).file_size

    def get_record_header_offset(self, name: str) -> int:
        return self._info(name).header_offset

    def get_record_offset(self, name: str) -> int:
        info = self._info(name)
        fields = _LOCAL_HEADER.unpack_from(self._ndarray, info.header_offset)
        name_length, extra_length = fields[-2], fields[-1]
        return info.header_offset + _LOCAL_HEADER.size + name_length + extra_length

    def serialization_id(self) -> str:
        name = ".data/serialization_id"
        return self.get_record(name).decode("utf-8") if name in self._infos else ""

    def get_storage_from_record(self, name: str, numel: int, dtype):
        """A tensor over the record's first ``numel`` elements of ``dtype``. As torch's, it has no
        elements itself (size ``[0]``): the bytes are its storage (``_typed_storage()``,
        ``untyped_storage()``). A storage class for ``dtype`` reads bytes."""
        from ._dtype import dtype as dtype_class, uint8
        from ._tensor import wrap
        if not isinstance(dtype, dtype_class):
            dtype = getattr(dtype, "dtype", uint8) if isinstance(dtype, type) else uint8
            if not isinstance(dtype, dtype_class):  # a storage class: its elements are bytes
                dtype = uint8
        raw = self.get_record(name)
        nbytes = int(numel) * dtype.itemsize
        if nbytes > len(raw):
            raise RuntimeError(f"PytorchStreamReader: record {name} holds {len(raw)} bytes, fewer than the "
                               f"{nbytes} requested")
        elements = np.frombuffer(bytearray(raw[:nbytes]), dtype=dtype.np)
        return wrap(elements[:0])
