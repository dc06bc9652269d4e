"""The malloc setting that ``import hookgrad`` applies (glibc), and its opt-out."""
import os
import platform
import subprocess
import sys

import pytest

glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


def _run(code, **env):
    full = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, check=True).stdout


@pytest.mark.skipif(not glibc, reason="the setting exists only for glibc's malloc")
def test_import_keeps_freed_memory_by_default():
    assert _run("import hookgrad, hookgrad._heap as h; print(h._applied)", HOOKGRAD_KEEP_HEAP="1").strip() == "True"


@pytest.mark.parametrize("value", ["0", "off", "False"])
def test_opt_out_leaves_malloc_alone(value):
    assert _run("import hookgrad, hookgrad._heap as h; print(h._applied)", HOOKGRAD_KEEP_HEAP=value).strip() == "False"


@pytest.mark.skipif(not glibc, reason="the setting exists only for glibc's malloc")
def test_large_buffers_are_reused_not_refaulted():
    # with the heap kept, freeing and reallocating a 4 MiB buffer costs no new page faults
    code = ("import resource, numpy as np, hookgrad\n"
            "a = np.ones(1 << 20, np.float32); del a\n"
            "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
            "for _ in range(20):\n    a = np.ones(1 << 20, np.float32); del a\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)")
    kept = int(_run(code, HOOKGRAD_KEEP_HEAP="1"))
    unmapped = int(_run(code, HOOKGRAD_KEEP_HEAP="0"))
    assert kept < 100 <= unmapped
