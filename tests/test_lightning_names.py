"""The torch names that Lightning and torchmetrics reach beyond everyday use, against torch:
torch.PyTorchFileReader over torch.save archives, torch._C._TensorMeta, torch._C._nn._parse_to,
torch._C._log_api_usage_once, Tensor._typed_storage and the back-end flags, ``with torch.device``,
autograd.profiler.emit_nvtx/emit_itt, autograd._profiler_enabled and EventList.key_averages."""
from __future__ import annotations

import functools
import io

import pytest

from difftest import catch, differential


def _archive(T, tmp_path, name):
    path = tmp_path / f"{name}.pt"
    state = {"w": T.arange(6.0).reshape(2, 3), "i": T.tensor([1, 2, 3]), "h": T.tensor([0.5, -1.5], dtype=T.float16)}
    state["view"] = state["w"][1]  # shares the first storage
    # outside ``hookgrad run`` hookgrad.save writes its own format unless asked for torch's
    save = functools.partial(T.save, format="torch") if T.__name__ == "hookgrad" else T.save
    save(state, str(path))
    return path


@differential
def test_file_reader_records(T, tmp_path):
    path = _archive(T, tmp_path, "records")
    reader = T.PyTorchFileReader(str(path))
    records = reader.get_all_records()
    pickle_bytes = reader.get_record("data.pkl")
    data_records = sorted(r for r in records if r.startswith("data/"))
    sizes = [reader.get_record_size(r) for r in data_records]
    # a record's bytes start where get_record_offset says (what memory-mapped loading reads)
    raw = path.read_bytes()
    at_offset = [raw[reader.get_record_offset(r):reader.get_record_offset(r) + size] == reader.get_record(r)
                 for r, size in zip(data_records, sizes)]
    same_from_file_object = T.PyTorchFileReader(io.BytesIO(raw)).get_all_records() == records
    return (sorted(records), type(pickle_bytes).__name__, pickle_bytes[:2], data_records, sizes, at_offset,
            same_from_file_object, reader.has_record("data.pkl"), reader.has_record("missing"),
            len(reader.serialization_id()), T.PyTorchFileReader is T._C.PyTorchFileReader)


@differential
def test_file_reader_storages(T, tmp_path):
    path = _archive(T, tmp_path, "storages")
    reader = T.PyTorchFileReader(str(path))
    floats = reader.get_storage_from_record("data/0", 6, T.float32)
    as_bytes = reader.get_storage_from_record("data/0", 24, T.UntypedStorage)  # torch.load's way: bytes
    typed = floats._typed_storage()
    untyped = as_bytes._typed_storage()._untyped_storage
    halves = reader.get_storage_from_record("data/2", 2, T.float16)._typed_storage()
    return (floats.shape, floats.dtype, typed.dtype, typed.size(), typed.tolist(), as_bytes.dtype, as_bytes.shape,
            type(untyped).__name__, untyped.nbytes(), halves.dtype, halves.tolist())


@differential
def test_file_reader_errors(T, tmp_path):
    path = _archive(T, tmp_path, "errors")
    not_zip = tmp_path / "plain.txt"
    not_zip.write_text("not an archive")
    reader = T.PyTorchFileReader(str(path))
    return (catch(T.PyTorchFileReader, str(tmp_path / "absent.pt")), catch(T.PyTorchFileReader, str(not_zip)),
            catch(reader.get_record, "absent"), catch(reader.get_record_offset, "absent"),
            # the reader stays usable after a bad request
            reader.has_record("data/0"))


def test_file_reader_error_wording(tmp_path):
    import hookgrad
    with pytest.raises(RuntimeError, match=r"PytorchStreamReader failed locating file absent: file not found"):
        hookgrad.PyTorchFileReader(str(_archive(hookgrad, tmp_path, "wording"))).get_record("absent")
    with pytest.raises(RuntimeError, match=r"open file failed because of errno 2 on fopen"):
        hookgrad.PyTorchFileReader(str(tmp_path / "absent.pt"))


@differential
def test_tensor_meta(T):
    meta = T._C._TensorMeta

    class Sub(T.Tensor):
        pass
    return (isinstance(T.Tensor, meta), isinstance(T.nn.Parameter, meta), isinstance(Sub, meta),
            isinstance(int, meta), isinstance(T.zeros(1), meta), issubclass(meta, type))


@differential
def test_parse_to_and_usage_log(T):
    parse = T._C._nn._parse_to
    def parsed(*args, **kwargs):
        device, dtype, non_blocking, _ = parse(*args, **kwargs)
        return str(device), dtype, non_blocking
    return (parsed("cpu"), parsed(T.float64), parsed(T.zeros(1, dtype=T.float16)),
            parsed(device="cpu", dtype=T.int32, non_blocking=True), T._C._log_api_usage_once("event"),
            catch(T._C._log_api_usage_once, 3))


@differential
def test_backend_flags_and_typed_storage(T):
    t = T.arange(4.0)
    flags = [getattr(t, name) for name in ("is_mps", "is_xpu", "is_xla", "is_ipu", "is_mtia", "is_maia",
                                           "is_vulkan", "is_mkldnn", "is_nested", "is_sparse_csr", "is_cpu")]
    storage = t[1:]._typed_storage()
    return flags, type(storage).__name__, storage.dtype, storage.size(), storage.tolist()


@differential
def test_device_as_context(T):
    with T.device("cpu") as entered:
        made = T.zeros(2)
    def on_cuda():
        with T.device("cuda"):  # torch refuses at the first tensor made, hookgrad already on entering
            return T.zeros(1)
    return str(entered), str(made.device), str(T.get_default_device()), catch(on_cuda), str(T.ones(1).device)


@differential
def test_emit_nvtx_and_itt(T):
    nvtx = T.autograd.profiler.emit_nvtx()
    with T.autograd.profiler.emit_nvtx(enabled=False) as off:
        pass
    itt = T.autograd.profiler.emit_itt(record_shapes=True)
    with itt as entered:
        inside = entered is itt
    return (catch(nvtx.__enter__), nvtx.entered, off, inside, itt.record_shapes, catch(itt.__enter__),
            catch(T.autograd.profiler.emit_itt(enabled=False).__enter__))


@differential
def test_profiler_enabled_and_key_averages_keyword(T):
    before = T.autograd._profiler_enabled()
    x = T.ones(3, 3)
    with T.autograd.profiler.profile(record_shapes=True) as prof:
        during = T.autograd._profiler_enabled()
        x.mm(x)
        T.ones(2, 2).mm(T.ones(2, 2))
    grouped = prof.function_events.key_averages(group_by_input_shapes=True)
    plain = prof.function_events.key_averages()
    mm_rows = lambda events: sorted(str(e.input_shapes) for e in events if e.key == "aten::mm")  # noqa: E731
    return before, during, T.autograd._profiler_enabled(), mm_rows(grouped), mm_rows(plain)


@differential
def test_distributed_constants(T):
    """Lightning imports the default process-group timeout whenever torch.distributed is available."""
    import importlib
    constants = importlib.import_module(T.__name__ + ".distributed.constants")
    return str(constants.default_pg_timeout), constants.default_pg_nccl_timeout
