"""safetensors files (through the safetensors package's NumPy API) and DLPack exchange with NumPy
and torch, both ways, checked against safetensors.torch and torch themselves."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import hookgrad
from difftest import catch, differential

pytest.importorskip("safetensors")
import safetensors.torch as st  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DTYPES = ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]


def _tensors(T):
    rng = np.random.default_rng(1)
    out = {d: T.tensor(rng.standard_normal((2, 3)) * 50).to(getattr(T, d)) for d in DTYPES}
    out["scalar"] = T.tensor(2.5)
    out["empty"] = T.zeros(0, 4)
    out["transposed"] = T.arange(6.0).reshape(2, 3).t().contiguous()
    return out


def _same(got, want):
    assert list(got) == list(want) or sorted(got) == sorted(want)
    for k in want:
        assert str(got[k].dtype).split(".")[-1] == str(want[k].dtype).split(".")[-1], k
        assert tuple(got[k].shape) == tuple(want[k].shape), k
        np.testing.assert_array_equal(np.asarray(got[k].tolist()), np.asarray(want[k].tolist()), err_msg=k)


def test_hookgrad_file_read_by_safetensors_torch_and_back(tmp_path):
    path = tmp_path / "w.safetensors"
    hookgrad.save_safetensors(_tensors(hookgrad), path, metadata={"format": "pt"})
    theirs = st.load_file(path)
    _same(theirs, _tensors(torch))
    path2 = tmp_path / "t.safetensors"
    st.save_file(theirs, path2)
    ours = hookgrad.load_safetensors(path2)
    _same(ours, _tensors(hookgrad))
    ours["float32"].add_(1.0)  # loaded tensors are ordinary writable tensors
    from hookgrad import _safetensors
    _same(_safetensors.load(_safetensors.save(_tensors(hookgrad))), _tensors(hookgrad))
    _same(_safetensors.load(st.save(_tensors(torch))), _tensors(hookgrad))


def test_bad_input_gets_safetensors_errors():
    from hookgrad import _safetensors

    def cases(T):
        base = T.arange(6.0)
        return [{"a": np.ones(2)}, [T.ones(1)], {"a": base, "b": base[2:]}]

    for ours, theirs in zip(cases(hookgrad), cases(torch)):
        raised = []
        for save, obj in ((_safetensors.save, ours), (st.save, theirs)):
            try:
                save(obj)
                raised.append(None)
            except Exception as exc:  # noqa: BLE001 - the class is compared
                raised.append(type(exc))
        assert raised[0] is not None and raised[0] is raised[1], raised


def test_save_model_and_load_model_handle_tied_weights(tmp_path):
    def model(T):
        T.manual_seed(0)
        m = T.nn.Sequential(T.nn.Embedding(5, 3), T.nn.Linear(3, 5, bias=False))
        m[1].weight = m[0].weight  # tied
        return m
    ours, theirs = model(hookgrad), model(torch)
    with torch.no_grad():
        theirs[0].weight.copy_(torch.from_dlpack(ours[0].weight.detach()))
    path = tmp_path / "tied.safetensors"
    from hookgrad import _safetensors
    _safetensors.save_model(ours, path)
    fresh = model(torch)
    assert st.load_model(fresh, path) == (set(), set()) or st.load_model(fresh, path)
    np.testing.assert_array_equal(fresh[1].weight.detach().numpy(), ours[1].weight.detach().numpy())
    path2 = tmp_path / "tied_torch.safetensors"
    st.save_model(theirs, path2)
    again = model(hookgrad)
    missing, unexpected = _safetensors.load_model(again, path2)
    assert (list(missing), list(unexpected)) == ([], [])
    np.testing.assert_array_equal(again[1].weight.detach().numpy(), ours[0].weight.detach().numpy())


def test_safetensors_torch_under_hookgrad_run(tmp_path):
    script = tmp_path / "s.py"
    script.write_text(textwrap.dedent("""
        import sys
        import torch
        from safetensors import safe_open
        from safetensors.torch import load_file, save_file
        save_file({"w": torch.arange(6.0).reshape(2, 3)}, sys.argv[1])
        back = load_file(sys.argv[1])
        assert isinstance(back["w"], torch.Tensor) and back["w"].tolist() == [[0, 1, 2], [3, 4, 5]]
        with safe_open(sys.argv[1], framework="pt") as f:
            assert list(f.keys()) == ["w"] and f.get_tensor("w").tolist() == [[0, 1, 2], [3, 4, 5]]
            assert f.get_slice("w")[1:].tolist() == [[3, 4, 5]]
        print("ok")
    """))
    path = tmp_path / "w.safetensors"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (os.path.join(ROOT, "src"),
                                                                  os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run([sys.executable, "-m", "hookgrad", "run", str(script), str(path)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-3000:]
    assert st.load_file(path)["w"].tolist() == [[0, 1, 2], [3, 4, 5]]


@pytest.mark.parametrize("dtype", DTYPES)
def test_dlpack_shares_memory_with_numpy_and_torch(dtype):
    x = hookgrad.tensor(np.arange(6).reshape(2, 3)).to(getattr(hookgrad, dtype))
    # hookgrad -> torch and numpy, zero copy
    t = torch.from_dlpack(x)
    n = np.from_dlpack(x)
    assert t.data_ptr() == x.data_ptr() == n.__array_interface__["data"][0]
    assert str(t.dtype) == f"torch.{dtype}" and tuple(t.shape) == (2, 3)
    # torch and numpy -> hookgrad, zero copy
    src = torch.arange(6).reshape(2, 3).to(getattr(torch, dtype))
    y = hookgrad.from_dlpack(src)
    assert y.data_ptr() == src.data_ptr() and y.dtype == getattr(hookgrad, dtype)
    arr = np.arange(6).reshape(2, 3).astype(dtype)
    z = hookgrad.utils.dlpack.from_dlpack(arr)
    assert z.data_ptr() == arr.__array_interface__["data"][0]
    capsule = hookgrad.utils.dlpack.to_dlpack(x)
    assert torch.utils.dlpack.from_dlpack(capsule).data_ptr() == x.data_ptr()
    assert hookgrad.from_dlpack(torch.utils.dlpack.to_dlpack(src)).data_ptr() == src.data_ptr()


def test_dlpack_writes_are_visible_and_strides_kept():
    x = hookgrad.zeros(2, 3)
    torch.from_dlpack(x)[1, 2] = 7.0
    assert x[1, 2].item() == 7.0
    v = hookgrad.arange(6.0).reshape(2, 3).t()
    assert torch.from_dlpack(v).stride() == v.stride() == (1, 3)
    assert x.__dlpack_device__() == torch.zeros(1).__dlpack_device__() == (1, 0)


def test_dlpack_refusals_match_torch():
    for T in (torch, hookgrad):
        with pytest.raises(BufferError):
            T.ones(2, requires_grad=True).__dlpack__()
        with pytest.raises(TypeError):
            T.ones(2).__dlpack__(stream="default")
    with pytest.raises(TypeError):
        hookgrad.from_dlpack([1, 2])


@differential
def test_frombuffer(T):
    raw = bytearray(np.arange(4, dtype=np.float32).tobytes())
    shared = T.frombuffer(raw, dtype=T.float32)
    shared[0] = 7.0  # writes go to the buffer
    out = [shared, np.frombuffer(raw, dtype=np.float32).copy(), T.frombuffer(raw, dtype=T.int32, count=2, offset=4),
           T.frombuffer(raw, dtype=T.float32, requires_grad=True).requires_grad]
    for kwargs in (dict(count=0), dict(offset=16), dict(count=5)):
        out.append(catch(T.frombuffer, raw, dtype=T.float32, **kwargs))
    out += [catch(T.frombuffer, [1, 2], dtype=T.float32), catch(T.frombuffer, bytearray(6), dtype=T.float32),
            T.frombuffer(b"abcd", dtype=T.uint8)]
    return out
