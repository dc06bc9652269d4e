"""torch.autocast and torch.amp.GradScaler against torch on a CPU machine: GradScaler with
device='cpu' scales, unscales, skips inf/NaN steps, updates and saves its state exactly as
torch's; autocast for CUDA disables itself with torch's warning; CPU autocast refuses loudly
here (documented) where torch would compute in bfloat16/float16."""
import importlib
import math
import pickle
import warnings

import numpy as np
import pytest

from difftest import catch, differential, warns

RNG = np.random.default_rng(5)
W = RNG.standard_normal((3, 4))
X = RNG.standard_normal((6, 4))


def _amp(T):
    return importlib.import_module(T.__name__ + ".amp")


@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
@differential(rtol=1e-12, atol=1e-14)
def test_grad_scaler_training(T, opt_name):
    amp = _amp(T)
    w = T.tensor(W, requires_grad=True)
    opt = getattr(T.optim, opt_name)([w], lr=0.01)
    scaler = amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=3)
    log = []
    for step in range(12):
        opt.zero_grad()
        loss = (T.tensor(X) @ w.t()).pow(2).mean()
        if step in (4, 5):  # poisoned steps: the scaled gradient overflows / is NaN
            loss = loss * (math.inf if step == 4 else math.nan)
        scaled = scaler.scale(loss)
        scaled.backward()
        if step % 3 == 0:
            scaler.unscale_(opt)
            log.append(("unscaled grad", w.grad.clone()))
        result = scaler.step(opt)
        scaler.update()
        log.append((step, scaler.get_scale(), scaler._get_growth_tracker(), result, scaled.item()))
    return w, log, scaler.state_dict()


@differential
def test_grad_scaler_scale_structures_and_errors(T):
    amp = _amp(T)
    scaler = amp.GradScaler("cpu", init_scale=4.0)
    a, b = T.tensor([1.0, 2.0]), T.tensor([3.0])
    nested = scaler.scale([a, (b, a)])
    generated = list(scaler.scale(iter([a, b])))
    w = T.tensor([1.0, 2.0], requires_grad=True)
    opt = T.optim.SGD([w], lr=0.1)
    fresh = amp.GradScaler("cpu")
    errors = [catch(fresh.unscale_, opt), catch(fresh.step, opt), catch(fresh.update),
              catch(scaler.scale, 3.0), catch(amp.GradScaler, "cpu", growth_factor=1.0),
              catch(amp.GradScaler, "cpu", backoff_factor=1.0)]
    (scaler.scale(w) * 1.0).sum().backward()
    scaler.unscale_(opt)
    errors.append(catch(scaler.unscale_, opt))
    errors.append(catch(scaler.step, opt, closure=lambda: None))
    scaler.step(opt)
    errors.append(catch(scaler.step, opt))
    errors.append(catch(scaler.unscale_, opt))
    scaler.update(new_scale=8.0)
    after_new_scale = scaler.get_scale()
    scaler.update(T.tensor(16.0))
    errors.append(catch(scaler.update, T.tensor([1.0, 2.0])))
    half = T.tensor([1.0], dtype=T.float16, requires_grad=True)
    half_opt = T.optim.SGD([half], lr=0.1)
    half.grad = T.tensor([1.0], dtype=T.float16)
    errors.append(catch(scaler.unscale_, half_opt))
    return nested, generated, errors, w, after_new_scale, scaler.get_scale()


@differential
def test_grad_scaler_state_dict_and_pickle(T):
    amp = _amp(T)
    scaler = amp.GradScaler("cpu", init_scale=512.0, growth_factor=3.0, backoff_factor=0.25, growth_interval=5)
    before = scaler.state_dict()
    w = T.tensor([1.0], requires_grad=True)
    opt = T.optim.SGD([w], lr=0.1)
    for _ in range(2):
        scaler.scale(w.sum()).backward()
        scaler.step(opt)
        scaler.update()
    sd = scaler.state_dict()
    other = amp.GradScaler("cpu")
    other.load_state_dict(sd)
    twin = pickle.loads(pickle.dumps(scaler))
    disabled = amp.GradScaler("cpu", enabled=False)
    return (before, sd, other.state_dict(), twin.state_dict(), disabled.state_dict(), disabled.get_scale(),
            disabled.is_enabled(), catch(amp.GradScaler("cpu").load_state_dict, {}),
            disabled.load_state_dict(sd), disabled.scale(T.tensor(2.0)), other.get_growth_interval(),
            other.get_backoff_factor(), other.get_growth_factor())


@differential
def test_grad_scaler_cuda_default_disables(T):
    amp = _amp(T)
    scaler, categories = warns(amp.GradScaler)
    w = T.tensor([1.0], requires_grad=True)
    opt = T.optim.SGD([w], lr=0.5)
    loss = scaler.scale((w * 3).sum())
    loss.backward()
    scaler.step(opt)
    scaler.update()
    legacy, legacy_categories = warns(T.cuda.amp.GradScaler)
    return categories, scaler.is_enabled(), scaler.state_dict(), w, legacy.is_enabled(), legacy_categories


@differential
def test_autocast_disabled_paths(T):
    out = []
    x = T.tensor(X)
    for kwargs in (dict(device_type="cuda"), dict(device_type="cpu", enabled=False),
                   dict(device_type="cpu", dtype=T.float64), dict(device_type="cuda", enabled=False)):
        def block():
            with T.autocast(**kwargs):
                return (x @ x.t()).dtype, T.is_autocast_enabled(), T.is_autocast_enabled("cpu")
        out.append(warns(block))

    @T.autocast("cuda", enabled=False)
    def decorated(v):
        return v * 2

    out.append(decorated(T.tensor([1.0])))
    out.append(catch(T.autocast, 3))
    out.append(catch(T.autocast, "gpu"))
    out.append(warns(T.cuda.amp.autocast)[1])
    out.append(T.amp.autocast is T.autocast)
    return out


def test_cuda_amp_importable_under_run(tmp_path):
    import subprocess
    import sys
    script = tmp_path / "s.py"
    script.write_text("import warnings\nwarnings.simplefilter('ignore')\nimport torch\n"
                      "from torch.cuda.amp import GradScaler, autocast\nfrom torch.amp import GradScaler as G\n"
                      "s = G('cpu')\nprint(s.get_scale(), GradScaler().is_enabled())\n")
    out = subprocess.run([sys.executable, "-m", "hookgrad", "run", str(script)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["65536.0", "False"]


@differential(rtol=1e-12, atol=1e-14)
def test_torch_cpu_namespace(T):
    w = T.tensor(W, requires_grad=True)
    opt = T.optim.SGD([w], lr=0.01)
    scaler, categories = warns(T.cpu.amp.GradScaler, init_scale=8.0)
    scaler.scale((T.tensor(X) @ w.t()).sum()).backward()
    scaler.step(opt)
    scaler.update()
    disabled, autocast_categories = warns(T.cpu.amp.autocast, enabled=False)
    with disabled:
        inside = (T.tensor(X) @ w.t()).dtype
    return (T.cpu.is_available(), T.cpu.device_count(), T.cpu.current_device(), T.cpu.synchronize(),
            categories, scaler.get_scale(), w, autocast_categories, inside)
