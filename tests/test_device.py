"""Devices: any device type torch knows can be named; only the CPU holds tensors, and asking for
another device raises torch's error class (as torch does on a machine without that device)."""
from __future__ import annotations

import pytest

import hookgrad
from difftest import catch, differential


@differential
def test_naming_devices(T):
    made = [T.device(name) for name in ("cpu", "mps", "cuda", "cuda:1", "meta")] + [T.device("cuda", 2)]
    return ([(d.type, d.index, str(d), repr(d)) for d in made], T.device("mps") == T.device("mps"),
            catch(T.device, "foo"), catch(T.device, "cuda:x"))


@differential
@pytest.mark.parametrize("name", ["cuda", "cuda:0", "xpu"])
def test_tensors_on_an_absent_accelerator(T, name):
    x = T.ones(2)
    return catch(T.zeros, 2, device=name), catch(x.to, name), catch(x.to, T.device(name)), x.tolist()


@pytest.mark.parametrize("make", [lambda T: T.ones(2).to("mps"), lambda T: T.ones(2).to(T.device("mps"), T.float64),
                                  lambda T: T.nn.Linear(2, 2).to("mps")])
def test_mps_device_is_refused_when_used(make):
    import torch
    with pytest.raises(RuntimeError, match="PyTorch is not linked with support for mps devices"):
        make(torch)
    with pytest.raises(RuntimeError, match="PyTorch is not linked with support for mps devices"):
        make(hookgrad)


def test_creating_on_mps_is_refused_clearly():
    with pytest.raises(RuntimeError, match="mps devices; hookgrad computes on the CPU only"):
        hookgrad.zeros(2, device="mps")
    assert hookgrad.zeros(2, device="cpu").device == hookgrad.device("cpu")
