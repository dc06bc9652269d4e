"""``torch.utils.collect_env``: describe the environment for a bug report (``python -m
torch.utils.collect_env`` under ``hookgrad run``)."""
from __future__ import annotations

import locale
import os
import platform
import sys
from typing import NamedTuple

__all__ = ["SystemEnv", "get_env_info", "get_pretty_env_info", "pretty_str", "main"]

class SystemEnv(NamedTuple):
    """What ``get_env_info`` found: the fields a bug report shows."""

    torch_version: str
    hookgrad_version: str
    is_debug_build: bool
    os: str
    python_version: str
    python_platform: str
    is_cuda_available: bool
    cuda_runtime_version: str | None
    cpu_count: int | None
    numpy_version: str
    scipy_version: str | None
    pip_packages: str


def _version_of(name: str):
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:  # noqa: BLE001 - not installed or not a distribution
        return None


def get_env_info() -> SystemEnv:
    from ..version import __version__
    import numpy
    try:
        import scipy
        scipy_version = scipy.__version__
    except ImportError:
        scipy_version = None
    packages = [f"{name}=={v}" for name in ("hookgrad", "numpy", "scipy", "ml_dtypes", "safetensors")
                if (v := _version_of(name))]
    return SystemEnv(torch_version=__version__, hookgrad_version=_version_of("hookgrad") or __version__,
                     is_debug_build=False, os=platform.platform(),
                     python_version=f"{sys.version.split()[0]} ({platform.architecture()[0]} runtime)",
                     python_platform=platform.platform(), is_cuda_available=False, cuda_runtime_version=None,
                     cpu_count=os.cpu_count(), numpy_version=numpy.__version__, scipy_version=scipy_version,
                     pip_packages="\n".join(packages))


def pretty_str(env: SystemEnv) -> str:
    lines = [
        f"PyTorch version: {env.torch_version}",
        f"hookgrad version: {env.hookgrad_version}",
        f"Is debug build: {env.is_debug_build}",
        "CUDA used to build PyTorch: None",
        "",
        f"OS: {env.os}",
        f"Python version: {env.python_version}",
        f"Python platform: {env.python_platform}",
        f"Is CUDA available: {env.is_cuda_available}",
        f"CUDA runtime version: {env.cuda_runtime_version}",
        f"CPU count: {env.cpu_count}",
        f"Locale: {locale.getlocale()}",
        "",
        "Versions of relevant libraries:",
        env.pip_packages,
    ]
    return "\n".join(lines)


def get_pretty_env_info() -> str:
    return pretty_str(get_env_info())


def main() -> None:
    print("Collecting environment information...")
    print(get_pretty_env_info())


if __name__ == "__main__":
    main()
