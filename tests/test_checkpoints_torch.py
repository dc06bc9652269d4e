"""Checkpoints both ways: hookgrad writes PyTorch's zip format (``save(..., format="torch")``, the
default under ``hookgrad run``), real ``torch.load(weights_only=True)`` opens it, torch writes it
back and hookgrad reads it: state dicts of every layer type, optimizer state dicts, nested containers."""
from __future__ import annotations

import collections
import io
import os
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest
import torch

import hookgrad
from hookgrad.serialization import CheckpointError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def to_torch(obj):
    """hookgrad -> bytes in torch's format -> real torch.load(weights_only=True)."""
    buf = io.BytesIO()
    hookgrad.save(obj, buf, format="torch")
    assert buf.getvalue()[:4] == b"PK\x03\x04"
    return torch.load(io.BytesIO(buf.getvalue()), weights_only=True)


def to_hookgrad(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    return hookgrad.load(io.BytesIO(buf.getvalue()))


def assert_same_tensor(got, want):
    assert type(got).__name__ == type(want).__name__, (type(got), type(want))
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert tuple(got.shape) == tuple(want.shape)
    assert got.requires_grad == want.requires_grad
    np.testing.assert_array_equal(np.asarray(got.detach().tolist()), np.asarray(want.detach().tolist()))


def assert_same(got, want, path="obj"):
    if isinstance(want, (torch.Tensor, hookgrad.Tensor)):
        assert_same_tensor(got, want)
    elif isinstance(want, dict):
        assert type(got).__name__ == type(want).__name__, path
        assert list(got) == list(want), path
        for k in want:
            assert_same(got[k], want[k], f"{path}[{k!r}]")
        assert getattr(got, "_metadata", None) == getattr(want, "_metadata", None), path
    elif isinstance(want, (list, tuple, set)) and not isinstance(want, (torch.Size, hookgrad.Size)):
        assert type(got) is type(want), path
        if isinstance(want, set):
            assert got == want, path
        else:
            assert len(got) == len(want), path
            for i, (g, w) in enumerate(zip(got, want)):
                assert_same(g, w, f"{path}[{i}]")
    elif isinstance(want, (torch.dtype, hookgrad.dtype, torch.device, hookgrad.device)):
        assert str(got).split(".")[-1] == str(want).split(".")[-1], path
    elif isinstance(want, (torch.Size, hookgrad.Size)):
        assert type(got).__name__ == "Size" and tuple(got) == tuple(want), path
    else:
        assert type(got) is type(want) and got == want, (path, got, want)


# every layer type with state, built the same way in both frameworks
LAYERS = {
    "Linear": lambda nn: nn.Linear(4, 3),
    "Linear_nobias": lambda nn: nn.Linear(4, 3, bias=False),
    "Bilinear": lambda nn: nn.Bilinear(2, 3, 4),
    "Conv1d": lambda nn: nn.Conv1d(2, 3, 3),
    "Conv2d": lambda nn: nn.Conv2d(2, 3, (3, 2), groups=1),
    "ConvTranspose1d": lambda nn: nn.ConvTranspose1d(2, 3, 3),
    "ConvTranspose2d": lambda nn: nn.ConvTranspose2d(2, 4, 3, groups=2),
    "BatchNorm1d": lambda nn: nn.BatchNorm1d(3),
    "BatchNorm2d": lambda nn: nn.BatchNorm2d(3, affine=False),
    "GroupNorm": lambda nn: nn.GroupNorm(2, 4),
    "LayerNorm": lambda nn: nn.LayerNorm((3, 4)),
    "Embedding": lambda nn: nn.Embedding(5, 3, padding_idx=0),
    "RNN": lambda nn: nn.RNN(3, 4, num_layers=2),
    "LSTM": lambda nn: nn.LSTM(3, 4, bidirectional=True),
    "GRU": lambda nn: nn.GRU(3, 4, batch_first=True),
    "RNNCell": lambda nn: nn.RNNCell(3, 4),
    "LSTMCell": lambda nn: nn.LSTMCell(3, 4),
    "GRUCell": lambda nn: nn.GRUCell(3, 4),
    "MultiheadAttention": lambda nn: nn.MultiheadAttention(4, 2),
    "TransformerEncoderLayer": lambda nn: nn.TransformerEncoderLayer(4, 2, dim_feedforward=8),
    "TransformerDecoderLayer": lambda nn: nn.TransformerDecoderLayer(4, 2, dim_feedforward=8),
    "Transformer": lambda nn: nn.Transformer(4, 2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8),
    "Sequential": lambda nn: nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(),
                                           nn.Linear(8, 2)),
    "ModuleList": lambda nn: nn.ModuleList([nn.Linear(2, 2), nn.LayerNorm(2)]),
    "ModuleDict": lambda nn: nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.GRUCell(2, 2)}),
    "ParameterList": lambda nn: nn.ParameterList([nn.Parameter(hookgrad_or_torch(nn).ones(2))]),
    "ParameterDict": lambda nn: nn.ParameterDict({"w": nn.Parameter(hookgrad_or_torch(nn).ones(2, 2))}),
    "stateless": lambda nn: nn.Sequential(nn.ReLU(), nn.MaxPool2d(2), nn.Dropout(0.1), nn.Identity()),
}


def hookgrad_or_torch(nn):
    return hookgrad if nn is hookgrad.nn else torch


def _trained(nn, name):
    model = LAYERS[name](nn)
    # move the running statistics off their initial values, so that buffers carry information
    for module in model.modules():
        if hasattr(module, "running_mean") and module.running_mean is not None:
            module.running_mean.add_(0.25)
            module.running_var.mul_(1.5)
            module.num_batches_tracked.add_(3)
    return model


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_state_dict_round_trip(name):
    ours = _trained(hookgrad.nn, name)
    sd = ours.state_dict()
    loaded = to_torch(sd)
    assert_same(loaded, sd)
    theirs = LAYERS[name](torch.nn)
    theirs.load_state_dict(loaded, strict=True)  # torch's own layer takes our keys, shapes and dtypes
    back = to_hookgrad(theirs.state_dict())
    assert_same(back, sd)
    fresh = LAYERS[name](hookgrad.nn)
    fresh.load_state_dict(back, strict=True)
    assert_same(fresh.state_dict(), sd)


OPTIMIZERS = {
    "SGD": lambda optim, params: optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True),
    "Adam": lambda optim, params: optim.Adam(params, lr=0.01, amsgrad=True),
    "AdamW": lambda optim, params: optim.AdamW(params, lr=0.01, weight_decay=0.1),
    "RMSprop": lambda optim, params: optim.RMSprop(params, lr=0.01, momentum=0.5, centered=True),
    "Adagrad": lambda optim, params: optim.Adagrad(params, lr=0.1),
}
X = np.random.default_rng(0).standard_normal((5, 4))


def _model_and_optimizer(T, name):
    T.manual_seed(0)
    model = T.nn.Sequential(T.nn.Linear(4, 3), T.nn.Tanh(), T.nn.Linear(3, 1)).double()
    with T.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(T.tensor(np.linspace(-1, 1, p.numel()).reshape(tuple(p.shape)) * (i + 1)))
    return model, OPTIMIZERS[name](T.optim, model.parameters())


def _step(T, model, opt):
    opt.zero_grad()
    model(T.tensor(X)).pow(2).sum().backward()
    opt.step()


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_state_dict_round_trip(name):
    model_h, opt_h = _model_and_optimizer(hookgrad, name)
    model_t, opt_t = _model_and_optimizer(torch, name)
    for _ in range(2):
        _step(hookgrad, model_h, opt_h)
    # torch continues from hookgrad's checkpoint (model and optimizer)...
    ckpt = to_torch({"model": model_h.state_dict(), "optim": opt_h.state_dict(), "epoch": 2})
    model_t.load_state_dict(ckpt["model"])
    opt_t.load_state_dict(ckpt["optim"])
    _step(torch, model_t, opt_t)
    _step(hookgrad, model_h, opt_h)
    for p_h, p_t in zip(model_h.parameters(), model_t.parameters()):
        np.testing.assert_allclose(p_h.detach().numpy(), p_t.detach().numpy(), rtol=1e-10, atol=1e-12)
    # ... and hookgrad continues from torch's
    back = to_hookgrad({"model": model_t.state_dict(), "optim": opt_t.state_dict(), "epoch": 3})
    model_2, opt_2 = _model_and_optimizer(hookgrad, name)
    model_2.load_state_dict(back["model"])
    opt_2.load_state_dict(back["optim"])
    _step(hookgrad, model_2, opt_2)
    _step(torch, model_t, opt_t)
    for p_h, p_t in zip(model_2.parameters(), model_t.parameters()):
        np.testing.assert_allclose(p_h.detach().numpy(), p_t.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert back["epoch"] == 3 and opt_2.state_dict()["param_groups"] == opt_t.state_dict()["param_groups"]


def _nested(T):
    base = T.arange(12.0).reshape(3, 4)
    param = T.nn.Parameter(T.ones(2, 2))
    return {
        "tensors": [T.tensor([1, 2], dtype=T.int32), T.tensor([True, False]), T.zeros(2, dtype=T.float16),
                    T.tensor(3.5, dtype=T.float64), T.tensor([1 + 2j, 3j], dtype=T.complex64),
                    T.zeros(0, 3), T.tensor([1, 2], dtype=T.uint8), T.tensor([-1], dtype=T.int8),
                    T.tensor([7], dtype=T.int16), T.ones(2, requires_grad=True)],
        "views": (base, base[1:, 2:], base.t(), base[:, 1]),
        "param": param,
        "same param": param,
        "nested": collections.OrderedDict(a={"b": [1, 2.5, -3, 2 ** 70, "s", None, True, b"\x00\xff"]}),
        "meta": (T.Size([2, 3]), T.float64, T.int64, T.device("cpu"), {1, 2}, 1 - 2j, bytearray(b"ab")),
        "empty": ({}, [], (), collections.OrderedDict()),
    }


def test_nested_containers_round_trip_both_ways():
    ours = _nested(hookgrad)
    theirs = to_torch(ours)
    assert_same(theirs, _nested(torch))
    # shared memory and identity survive as torch keeps them
    views = theirs["views"]
    assert all(v.untyped_storage().data_ptr() == views[0].untyped_storage().data_ptr() for v in views)
    assert [v.storage_offset() for v in views] == [0, 6, 0, 1] and views[2].stride() == (1, 4)
    assert theirs["param"] is theirs["same param"] and isinstance(theirs["param"], torch.nn.Parameter)
    back = to_hookgrad(theirs)
    assert_same(back, ours)
    assert back["param"] is back["same param"]
    views = back["views"]
    views[0][2, 3] = -1.0  # the views still share the base's memory
    assert views[1][1, 1].item() == -1.0


def test_state_dict_metadata_survives():
    model = hookgrad.nn.Sequential(hookgrad.nn.Linear(2, 2), hookgrad.nn.BatchNorm1d(2))
    sd = model.state_dict()
    loaded = to_torch(sd)
    assert loaded._metadata == sd._metadata and loaded._metadata["1"]["version"] == 2


def test_what_torch_weights_only_cannot_hold_keeps_hookgrad_format():
    """Whole modules and NumPy arrays: a torch checkpoint would need torch's own classes; such an
    object is written in hookgrad's format (hookgrad.load reads both)."""
    for obj in ({"model": hookgrad.nn.Linear(2, 2)}, {"array": np.arange(3)}, {"scalar": np.float32(1.5)}):
        buf = io.BytesIO()
        hookgrad.save(obj, buf, format="torch")
        assert buf.getvalue()[:4] != b"PK\x03\x04"
        out = hookgrad.load(io.BytesIO(buf.getvalue()), weights_only=False)
        assert list(out) == list(obj)
    with pytest.raises(ValueError):
        hookgrad.save({}, io.BytesIO(), format="zip")


def test_default_format_outside_hookgrad_run_is_hookgrads():
    buf = io.BytesIO()
    hookgrad.save({"w": hookgrad.ones(2)}, buf)
    assert buf.getvalue()[:4] != b"PK\x03\x04"


def test_corrupt_or_truncated_torch_format_raises(tmp_path):
    buf = io.BytesIO()
    hookgrad.save({"w": hookgrad.arange(64.0), "b": hookgrad.ones(3)}, buf, format="torch")
    data = buf.getvalue()
    for cut in (3, 10, len(data) // 2, len(data) - 30):
        with pytest.raises(CheckpointError):
            hookgrad.load(io.BytesIO(data[:cut]))
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        info = zf.getinfo("archive/data/0")
        start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    bad = bytearray(data)
    bad[start + 5] ^= 0x55
    with pytest.raises(CheckpointError):
        hookgrad.load(io.BytesIO(bytes(bad)))
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert all(i.compress_type == zipfile.ZIP_STORED for i in zf.infolist())
        for info in zf.infolist():  # data aligned as torch aligns it
            assert (info.header_offset + 30 + len(info.filename) + len(info.extra)) % 64 == 0


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.join(ROOT, "src"), env.get("PYTHONPATH")) if p)
    return env


def test_torch_save_under_hookgrad_run_writes_torch_format(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""
        import sys
        import torch
        import torch.nn as nn
        model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
        opt = torch.optim.Adam(model.parameters(), lr=0.1)
        model(torch.ones(4, 3)).sum().backward()
        opt.step()
        torch.save({"model": model.state_dict(), "optim": opt.state_dict()}, sys.argv[1])
        back = torch.load(sys.argv[1])
        assert list(back["model"]) == list(model.state_dict())
        print("saved")
    """))
    path = tmp_path / "ckpt.pt"
    proc = subprocess.run([sys.executable, "-m", "hookgrad", "run", str(script), str(path)], cwd=tmp_path,
                          env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "saved" in proc.stdout, proc.stderr[-3000:]
    ckpt = torch.load(path, weights_only=True)
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    model.load_state_dict(ckpt["model"])
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    opt.load_state_dict(ckpt["optim"])
    assert float(ckpt["model"]["1.num_batches_tracked"]) == 1.0


def test_a_tensor_inside_a_larger_scratch_buffer_is_written_alone():
    """A tensor that is not a view in torch's sense but whose NumPy array sits inside a larger
    array gets a storage of its own: the checkpoint holds no unrelated bytes."""
    big = np.arange(1000.0)
    inner = hookgrad.from_numpy(big[10:14])  # from_numpy of a slice: a tensor, not a view of one
    theirs = to_torch({"t": inner})
    assert theirs["t"].tolist() == [10.0, 11.0, 12.0, 13.0]
    assert theirs["t"].untyped_storage().nbytes() == 4 * 8 and theirs["t"].storage_offset() == 0
