"""torch.backends, deterministic mode and thread counts: what torch answers where hookgrad must
answer the same, hookgrad's own truthful answers where a NumPy library differs, and torch's
errors for bad values."""
import importlib

import numpy as np
import pytest

from difftest import catch, differential


@differential
def test_flags_settable_like_torch(T):
    backends = importlib.import_module(T.__name__ + ".backends")
    cudnn = backends.cudnn
    before = (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32)
    log = [before, cudnn.is_available(), backends.mps.is_available(), backends.mps.is_built(),
           backends.mkldnn.enabled]
    cudnn.benchmark = True
    cudnn.deterministic = True
    log.append((cudnn.benchmark, cudnn.deterministic))
    with cudnn.flags(enabled=False, benchmark=False, deterministic=True):
        log.append((cudnn.enabled, cudnn.benchmark, cudnn.deterministic))
    log.append((cudnn.enabled, cudnn.benchmark, cudnn.deterministic))
    log.append(catch(setattr, cudnn, "enabled", "yes"))
    log.append(catch(setattr, cudnn, "benchmark", 1))
    log.append(cudnn.enabled)
    cudnn.benchmark, cudnn.deterministic = before[1], before[2]
    backends.cuda.matmul.allow_tf32 = True
    log.append(backends.cuda.matmul.allow_tf32)
    backends.cuda.matmul.allow_tf32 = False
    log.append(catch(setattr, backends.cuda.matmul, "allow_tf33", True))
    log.append(backends.cuda.is_built())
    return log


@differential
def test_deterministic_mode(T):
    log = [T.are_deterministic_algorithms_enabled(), T.get_deterministic_debug_mode()]
    T.use_deterministic_algorithms(True)
    log.append((T.are_deterministic_algorithms_enabled(), T.is_deterministic_algorithms_warn_only_enabled(),
                T.get_deterministic_debug_mode()))
    T.use_deterministic_algorithms(True, warn_only=True)
    log.append((T.is_deterministic_algorithms_warn_only_enabled(), T.get_deterministic_debug_mode()))
    T.set_deterministic_debug_mode("error")
    log.append((T.are_deterministic_algorithms_enabled(), T.get_deterministic_debug_mode()))
    T.set_deterministic_debug_mode(0)
    log.append((T.are_deterministic_algorithms_enabled(), T.get_deterministic_debug_mode()))
    log.append(catch(T.use_deterministic_algorithms, "yes"))
    log.append(catch(T.set_deterministic_debug_mode, "sometimes"))
    log.append(catch(T.set_deterministic_debug_mode, 5))
    log.append(T.are_deterministic_algorithms_enabled())
    T.use_deterministic_algorithms(False)
    return log


@differential
def test_num_threads_errors(T):
    return [catch(T.set_num_threads, 0), catch(T.set_num_threads, -2), catch(T.set_num_threads, 1.5),
            catch(T.set_num_threads, "4"), isinstance(T.get_num_threads(), int), T.get_num_threads() >= 1]


def test_num_threads_limit_blas():
    import hookgrad
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = hookgrad.get_num_threads()
    try:
        hookgrad.set_num_threads(1)
        assert hookgrad.get_num_threads() == 1
        blas = [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
        assert blas and all(n == 1 for n in blas)
    finally:
        hookgrad.set_num_threads(before)
    assert hookgrad.get_num_interop_threads() == 1


def test_truthful_answers_for_numpy():
    import hookgrad
    backends = hookgrad.backends
    assert backends.mkldnn.is_available() is False  # no oneDNN in hookgrad
    assert backends.cudnn.version() is None and backends.cudnn.is_available() is False
    blas = np.__config__.CONFIG["Build Dependencies"]["blas"]
    assert backends.mkl.is_available() == ("mkl" in blas["name"].lower())
    assert backends.openmp.is_available() == ("openmp" in str(blas.get("openblas configuration", "")).lower())
    from numpy._core._multiarray_umath import __cpu_features__ as features
    expected = ("AVX512" if features.get("AVX512F") and features.get("AVX512_SKX")
                else "AVX2" if features.get("AVX2") else "DEFAULT")
    assert backends.cpu.get_cpu_capability() == expected


def test_backends_under_hookgrad_run(tmp_path):
    import subprocess
    import sys
    script = tmp_path / "s.py"
    script.write_text("import torch\nimport torch.backends.cudnn as cudnn\ncudnn.benchmark = True\n"
                      "print(torch.backends.mps.is_available(), cudnn.benchmark, torch.backends.cpu.get_cpu_capability() "
                      "in ('AVX512', 'AVX2', 'DEFAULT'), torch.testing.assert_close(torch.ones(2), torch.ones(2)))\n")
    out = subprocess.run([sys.executable, "-m", "hookgrad", "run", str(script)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True", "True", "None"]
