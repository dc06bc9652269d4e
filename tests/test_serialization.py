"""save/load: round trips against torch (values, dtypes, shapes, key order, requires_grad,
Parameters, identity of repeated tensors, containers), optimizer state dicts, warnings for hooks,
and hookgrad's own guarantees: corrupt, truncated or foreign files raise a clear error, and
weights_only loading never unpickles."""
import collections
import io
import os
import pickle

import numpy as np
import pytest

from difftest import catch, differential, warns

RNG = np.random.default_rng(3)
A23 = RNG.standard_normal((2, 3)).astype(np.float32)
A32 = RNG.standard_normal((3, 2)).astype(np.float32)
A4 = [RNG.standard_normal(4).astype(np.float32) for _ in range(2)]
A88 = RNG.standard_normal((8, 8)).astype(np.float32)


def round_trip(T, obj, **load_kwargs):
    buf = io.BytesIO()
    T.save(obj, buf)
    buf.seek(0)
    return T.load(buf, **load_kwargs)


def describe(x):
    """Type names through a loaded structure (so containers' exact types are compared)."""
    if isinstance(x, dict):
        return [type(x).__name__, [(k, describe(v)) for k, v in x.items()]]
    if isinstance(x, (list, tuple)):
        return [type(x).__name__, [describe(v) for v in x]]
    return type(x).__name__


@differential(rtol=0, atol=0)
def test_tensor_round_trip(T):
    arrays = [A23, np.arange(5, dtype=np.int64),
              np.array(2.5, dtype=np.float64), np.array([True, False]), np.zeros((0, 3), dtype=np.float32),
              np.arange(6, dtype=np.int32).reshape(3, 2).T, np.array([1, 255], dtype=np.uint8),
              np.array([1.5, -2.25], dtype=np.float16),
              np.array([-1, 2], dtype=np.int8), np.array([7, -7], dtype=np.int16)]
    tensors = [T.tensor(a) for a in arrays]
    loaded = round_trip(T, tensors)
    return loaded, [t.requires_grad for t in loaded], [t.is_contiguous() for t in loaded]


@differential(rtol=0, atol=0)
def test_state_dict_like_structures(T):
    w = T.tensor(A32, requires_grad=True)
    b = T.nn.Parameter(T.tensor(np.ones(2, dtype=np.float32)))
    frozen = T.nn.Parameter(T.tensor(np.zeros(1, dtype=np.float32)), requires_grad=False)
    nonleaf = w * 2
    obj = collections.OrderedDict([
        ("zeta", w), ("alpha", b), ("frozen", frozen), ("nonleaf", nonleaf),
        ("meta", {3: "three", "nested": [1, 2.5, None, True, ("t", -4)], (1, 2): b"raw", 0.5: 1 + 2j}),
        ("size", T.Size([4, 5])), ("dtype", T.float16), ("big", 2 ** 70), ("inf", float("inf")),
        ("empty", {}), ("empty_list", []), ("empty_tuple", ()),
    ])
    out = round_trip(T, obj)
    return (out, describe(out), [out[k].requires_grad for k in ("zeta", "alpha", "frozen", "nonleaf")],
            out["nonleaf"].is_leaf, type(out["size"]).__name__, out["dtype"])


@differential
def test_repeated_tensor_loads_as_one_object(T):
    x = T.tensor(np.arange(3, dtype=np.float32))
    y = T.tensor(np.arange(3, dtype=np.float32))
    out = round_trip(T, {"a": x, "b": [x, y], "c": (y,)})
    return out["a"] is out["b"][0], out["b"][1] is out["c"][0], out["a"] is out["b"][1]


@differential
def test_file_path_and_nan_values(T, tmp_path):
    path = tmp_path / f"ckpt_{T.__name__}.pt"
    t = T.tensor(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], dtype=np.float32))
    T.save({"t": t, "nan": float("nan")}, str(path))
    out = T.load(str(path))
    T.save([1, 2], path)  # a PathLike works as well
    return out["t"], np.signbit(out["t"].numpy()).tolist(), str(out["nan"]), T.load(path)


@differential(rtol=2e-5, atol=2e-6)
def test_optimizer_state_dict_round_trip(T):
    params = [T.tensor(a, requires_grad=True) for a in A4]
    opt = T.optim.Adam(params, lr=0.01, amsgrad=True)
    for step in range(5):
        for p in params:
            p.grad = T.tensor(np.full(4, step - 2.0, dtype=np.float32))
        opt.step()
    sd = round_trip(T, opt.state_dict())
    clones = [p.detach().clone().requires_grad_(True) for p in params]
    opt2 = T.optim.Adam(clones)
    opt2.load_state_dict(sd)
    for p, q in zip(params, clones):
        p.grad = T.tensor(np.ones(4, dtype=np.float32))
        q.grad = T.tensor(np.ones(4, dtype=np.float32))
    opt.step()
    opt2.step()
    return describe(sd), sd["param_groups"], params, clones


@differential
def test_module_state_dict_round_trip(T):
    T.manual_seed(0)
    lin = T.nn.Linear(3, 2)
    with T.no_grad():
        lin.weight.copy_(T.tensor(np.arange(6, dtype=np.float32).reshape(2, 3)))
        lin.bias.copy_(T.tensor(np.array([0.5, -0.5], dtype=np.float32)))
    sd = round_trip(T, lin.state_dict())
    other = T.nn.Linear(3, 2)
    result = other.load_state_dict(sd)
    return list(sd), describe(sd), other.weight, other.bias, list(result.missing_keys)


@differential
def test_hooked_tensor_warns(T):
    t = T.tensor([1.0, 2.0], requires_grad=True)
    t.register_hook(lambda g: g)
    result, kinds = warns(round_trip, T, {"t": t})
    quiet = T.tensor([1.0], requires_grad=True)
    quiet.register_hook(T.utils.hooks.unserializable_hook(lambda g: g))
    _, quiet_kinds = warns(round_trip, T, quiet)
    return result, kinds, quiet_kinds


class Custom:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, Custom) and other.v == self.v


@differential
def test_weights_only_refuses_arbitrary_objects(T):
    obj = {"x": Custom(3)}
    refused = catch(round_trip, T, obj)
    allowed = round_trip(T, obj, weights_only=False)
    return refused, allowed == obj


@differential
def test_map_location_cpu(T):
    t = T.tensor([1.0, 2.0])
    return (round_trip(T, t, map_location="cpu"), round_trip(T, t, map_location=T.device("cpu")),
            round_trip(T, t, map_location=lambda storage, loc: storage))


# -- hookgrad's own guarantees ------------------------------------------------------------------
def _saved_bytes(obj):
    import hookgrad
    buf = io.BytesIO()
    hookgrad.serialization.save(obj, buf)
    return buf.getvalue()


def _sample():
    import hookgrad
    return collections.OrderedDict(w=hookgrad.tensor(A88),
                                   b=hookgrad.tensor(np.arange(8)), step=3, name="layer")


def test_truncated_files_raise_and_never_return_partial_results():
    from hookgrad.serialization import CheckpointError, load
    data = _saved_bytes(_sample())
    for cut in sorted({0, 1, 10, 20, 27, 28, 40, len(data) // 2, len(data) - 33, len(data) - 1}):
        with pytest.raises(CheckpointError):
            load(io.BytesIO(data[:cut]))
    assert issubclass(CheckpointError, RuntimeError)


def test_corrupted_bytes_are_detected():
    from hookgrad.serialization import CheckpointError, load
    data = bytearray(_saved_bytes(_sample()))
    for pos in (0, 17, 30, len(data) // 2, len(data) - 40, len(data) - 1):
        bad = bytearray(data)
        bad[pos] ^= 0x41
        with pytest.raises(CheckpointError):
            load(io.BytesIO(bytes(bad)))
    with pytest.raises(CheckpointError, match="zip"):
        load(io.BytesIO(b"PK\x03\x04" + b"\0" * 100))
    with pytest.raises(CheckpointError, match="magic"):
        load(io.BytesIO(b"not a checkpoint at all, just some text" * 3))


def test_forged_header_with_valid_checksum_is_rejected():
    """A header rewritten by hand (checksum recomputed) still cannot smuggle in bad arrays."""
    import hashlib
    import json
    import struct
    from hookgrad.serialization import MAGIC, CheckpointError, load
    data = _saved_bytes(_sample())
    head = len(MAGIC) + 12
    version, hlen = struct.unpack_from("<IQ", data, len(MAGIC))
    header = json.loads(data[head:head + hlen])
    body = data[head + hlen:-32]

    def forge(mutate):
        h = json.loads(json.dumps(header))
        mutate(h)
        raw = json.dumps(h).encode()
        pad = (-(head + len(raw))) % 64
        blob = body[(-(head + hlen)) % 64:]  # drop the old padding
        content = MAGIC + struct.pack("<IQ", version, len(raw)) + raw + b"\0" * pad + blob
        return content + hashlib.sha256(content).digest()

    def set_tensor(key, value):
        return lambda h: h["tensors"][0].__setitem__(key, value)

    for mutate in (set_tensor("dtype", "|O"), set_tensor("dtype", "<U4"), set_tensor("shape", [1000, 1000]),
                   set_tensor("shape", [-1]), set_tensor("offset", 10 ** 9), set_tensor("nbytes", -3),
                   lambda h: h.__setitem__("root", {"t": "exec", "v": "print(1)"}),
                   lambda h: h.__setitem__("root", {"t": "tensor", "i": 99}),
                   lambda h: h.__setitem__("root", {"t": "dict", "k": [1, 2], "v": [3]})):
        with pytest.raises(CheckpointError):
            load(io.BytesIO(forge(mutate)))
    ok = load(io.BytesIO(forge(lambda h: None)))
    assert list(ok) == ["w", "b", "step", "name"]


def test_weights_only_never_unpickles(monkeypatch):
    from hookgrad.serialization import load
    data = _saved_bytes({"x": Custom(1)})
    monkeypatch.setattr(pickle, "loads", lambda *a, **k: (_ for _ in ()).throw(AssertionError("unpickled")))
    with pytest.raises(pickle.UnpicklingError):
        load(io.BytesIO(data))


def test_round_trip_is_exact_and_save_to_path_is_atomic(tmp_path):
    import hookgrad
    from hookgrad.serialization import load, save
    obj = _sample()
    path = tmp_path / "model.ckpt"
    save(obj, path)
    out = load(path)
    assert list(out) == list(obj) and isinstance(out, collections.OrderedDict)
    for key in ("w", "b"):
        assert out[key].dtype == obj[key].dtype
        assert np.array_equal(out[key].numpy(), obj[key].numpy())
    assert out["step"] == 3 and out["name"] == "layer"
    assert os.listdir(tmp_path) == ["model.ckpt"]
    loaded = out["w"]
    loaded.add_(1.0)  # loaded tensors are writable and independent of the file
    assert np.array_equal(load(path)["w"].numpy(), obj["w"].numpy())
    assert isinstance(hookgrad.load(path)["w"], hookgrad.Tensor)
    z = hookgrad.tensor(np.array([1 + 2j, -0.5j], dtype=np.complex64))
    save({"z": z, "c": 3 - 1j, "n": np.float32(2.5), "a": np.arange(3)}, path)
    with pytest.raises(pickle.UnpicklingError):   # NumPy values need allowlisting, as in torch
        load(path)
    back = load(path, weights_only=False)
    assert back["z"].dtype == hookgrad.complex64 and np.array_equal(back["z"].numpy(), z.numpy())
    assert back["c"] == 3 - 1j and back["n"] == np.float32(2.5) and type(back["n"]) is np.float32
    assert np.array_equal(back["a"], np.arange(3)) and back["a"].dtype == np.arange(3).dtype


def test_map_location_to_other_device_is_refused():
    from hookgrad.serialization import load
    with pytest.raises(RuntimeError):
        load(io.BytesIO(_saved_bytes([1])), map_location="cuda:0")


# -- checkpoints written by PyTorch -------------------------------------------------------------
def _torch_checkpoint(path):
    """A file written by torch.save itself: a module state dict, an optimizer state dict, a
    transposed (non-contiguous) tensor, views of one storage, a Parameter and plain values."""
    import torch
    lin = torch.nn.Linear(3, 2)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor(A32.T.copy()))
        lin.bias.copy_(torch.tensor([0.5, -0.5]))
    opt = torch.optim.Adam(lin.parameters(), lr=0.01)
    lin(torch.tensor(A23)).sum().backward()
    opt.step()
    base = torch.arange(12, dtype=torch.float64).reshape(3, 4)
    obj = {"model": lin.state_dict(), "optim": opt.state_dict(), "t": base.t(), "row": base[1],
           "p": torch.nn.Parameter(torch.ones(2)), "sizes": torch.Size([2, 3]), "dtype": torch.int16,
           "ints": torch.tensor([1, -2], dtype=torch.int32), "flags": torch.tensor([True, False]),
           "half": torch.tensor([1.5, 2.0], dtype=torch.float16), "meta": ("epoch", 3, 0.25, None, b"\x00x")}
    torch.save(obj, path)


@differential
def test_load_a_checkpoint_written_by_torch(T, tmp_path):
    path = tmp_path / "from_torch.pt"
    _torch_checkpoint(path)
    out = T.load(path)
    return (out, describe(out), out["t"].stride(), out["row"].is_contiguous(), out["p"].requires_grad,
            type(out["p"]).__name__, list(out["model"]._metadata), out["model"]._metadata[""])


@differential(rtol=2e-5, atol=2e-6)
def test_torch_checkpoint_resumes_training(T, tmp_path):
    path = tmp_path / "resume.pt"
    _torch_checkpoint(path)
    ckpt = T.load(path)
    w = T.tensor(np.zeros((2, 3), dtype=np.float32), requires_grad=True)
    b = T.tensor(np.zeros(2, dtype=np.float32), requires_grad=True)
    with T.no_grad():
        w.copy_(ckpt["model"]["weight"])
        b.copy_(ckpt["model"]["bias"])
    opt = T.optim.Adam([w, b], lr=1.0)
    opt.load_state_dict(ckpt["optim"])
    for _ in range(5):
        opt.zero_grad()
        ((T.tensor(A23) @ w.t() + b) ** 2).sum().backward()
        opt.step()
    return w, b, opt.state_dict()["param_groups"], opt.state[w]["step"]


@differential
def test_torch_checkpoint_with_arbitrary_object_is_refused(T, tmp_path):
    import torch
    path = tmp_path / "unsafe.pt"
    torch.save({"obj": Custom(1), "t": torch.ones(1)}, path)
    return catch(T.load, path)


def test_corrupt_torch_checkpoint_raises(tmp_path):
    import hookgrad
    from hookgrad.serialization import CheckpointError
    path = tmp_path / "ok.pt"
    _torch_checkpoint(path)
    data = path.read_bytes()
    for cut in (10, len(data) // 3, len(data) - 10):
        with pytest.raises(CheckpointError):
            hookgrad.load(io.BytesIO(data[:cut]))
    # flip bytes inside a stored tensor: the zip CRC check catches it
    import zipfile
    with zipfile.ZipFile(path) as zf:
        info = [i for i in zf.infolist() if "/data/" in i.filename][0]
    import struct
    name_len, extra_len = struct.unpack_from("<HH", data, info.header_offset + 26)
    start = info.header_offset + 30 + name_len + extra_len  # first byte of the stored tensor
    bad = bytearray(data)
    bad[start] ^= 0xFF
    with pytest.raises(CheckpointError):
        hookgrad.load(io.BytesIO(bytes(bad)))


from hypothesis import given, settings, strategies as st  # noqa: E402

_leaves = (st.none() | st.booleans() | st.integers(-2 ** 80, 2 ** 80) | st.floats(allow_nan=False)
           | st.text(max_size=8) | st.binary(max_size=8) | st.complex_numbers(allow_nan=False)
           | st.builds(lambda v, dt: np.asarray(v).astype(dt), st.lists(st.integers(-100, 100), max_size=5),
                       st.sampled_from(["float32", "float64", "int64", "int8", "uint8", "bool"])))
_keys = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4) | st.tuples(st.integers(0, 3))
_trees = st.recursive(_leaves, lambda kids: st.lists(kids, max_size=4) | st.tuples(kids, kids)
                      | st.dictionaries(_keys, kids, max_size=4), max_leaves=20)


def _same(a, b):
    assert type(a) is type(b), (a, b)
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a == b or (a != a and b != b)


@settings(max_examples=60, deadline=None)
@given(tree=_trees)
def test_round_trip_of_random_structures(tree):
    from hookgrad.serialization import load, save
    buf = io.BytesIO()
    save(tree, buf)
    buf.seek(0)
    _same(load(buf, weights_only=False), tree)   # NumPy values in the tree need weights_only=False


@differential
def test_mapping_attributes_survive(T):
    sd = collections.OrderedDict(w=T.tensor([1.0]))
    sd._metadata = collections.OrderedDict([("", {"version": 1}), ("sub", {"version": 2})])
    out = round_trip(T, sd)
    return out, out._metadata
