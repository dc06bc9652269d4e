"""``torch.hub``: fetch checkpoints (``load_state_dict_from_url``) and models published with a
``hubconf.py`` (``load``, ``list``, ``help``), caching them under ``get_dir()`` as torch does
(``$TORCH_HOME/hub``, by default ``~/.cache/torch/hub``).

URLs are read with ``urllib``: ``file://`` URLs and files already in the cache need no network;
other downloads work where the network is reachable and otherwise raise urllib's ``URLError``.
Checkpoints are read with ``torch.load`` (hookgrad's, which reads torch's zip format).
"""
from __future__ import annotations

import errno
import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import uuid
import warnings
import zipfile
from urllib.error import HTTPError, URLError  # noqa: F401 - torch.hub re-exports them
from urllib.parse import urlparse
from urllib.request import Request, urlopen

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

ENV_GITHUB_TOKEN = "GITHUB_TOKEN"
ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
VAR_DEPENDENCY = "dependencies"
MODULE_HUBCONF = "hubconf.py"
READ_DATA_CHUNK = 128 * 1024
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")

_hub_dir: str | None = None
_builtin_list = list


def _get_torch_home() -> str:
    return os.path.expanduser(os.getenv(ENV_TORCH_HOME, os.path.join(os.getenv(ENV_XDG_CACHE_HOME,
                                                                                DEFAULT_CACHE_DIR), "torch")))


def get_dir() -> str:
    """The hub's cache folder: ``set_dir``'s, else ``$TORCH_HOME/hub``."""
    if os.getenv("TORCH_HUB"):
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_get_torch_home(), "hub")


def set_dir(d) -> None:
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None, progress: bool = True) -> None:
    """Copy ``url`` to the file ``dst`` (through a temporary file, so that a broken download never
    replaces a good file); with ``hash_prefix``, the SHA-256 of the content must start with it."""
    dst = os.path.expanduser(dst)
    for _ in range(tempfile.TMP_MAX):
        partial = f"{dst}.{uuid.uuid4().hex}.partial"
        try:
            f = open(partial, "w+b")  # noqa: SIM115 - closed in finally
        except FileExistsError:
            continue
        break
    else:
        raise FileExistsError(errno.EEXIST, "No usable temporary file name found")
    try:
        with urlopen(Request(url, headers={"User-Agent": "torch.hub"})) as response:
            lengths = response.info().get_all("Content-Length")
            total = int(lengths[0]) if lengths else None
            digest = hashlib.sha256() if hash_prefix is not None else None
            bar = _progress(total, progress)
            while True:
                chunk = response.read(READ_DATA_CHUNK)
                if not chunk:
                    break
                f.write(chunk)
                if digest is not None:
                    digest.update(chunk)
                bar.update(len(chunk))
            bar.close()
        f.close()
        if digest is not None:
            hexdigest = digest.hexdigest()
            if hexdigest[:len(hash_prefix)] != hash_prefix:
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{hexdigest}")')
        shutil.move(f.name, dst)
    finally:
        f.close()
        if os.path.exists(f.name):
            os.remove(f.name)


class _NoProgress:
    def update(self, n):
        pass

    def close(self):
        pass


def _progress(total, enabled: bool):
    if not enabled:
        return _NoProgress()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoProgress()
    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024)


def _is_legacy_zip_format(filename: str) -> bool:
    # torch 1.5's checkpoints zipped one pickle; the current format is a zip with a data.pkl
    if zipfile.is_zipfile(filename):
        with zipfile.ZipFile(filename) as archive:
            names = archive.infolist()
        return len(names) == 1 and not names[0].is_dir()
    return False


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location=None, progress: bool = True,
                             check_hash: bool = False, file_name: str | None = None, weights_only: bool = False):
    """The object saved at ``url`` (usually a state dict), downloaded once into
    ``<hub dir>/checkpoints`` and read from there afterwards."""
    import hookgrad
    if os.getenv("TORCH_MODEL_ZOO"):
        warnings.warn("TORCH_MODEL_ZOO is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stdout.write(f'Downloading: "{url}" to {cached_file}\n')
        hash_prefix = None
        if check_hash:
            match = HASH_REGEX.search(filename)
            hash_prefix = match.group(1) if match else None
        download_url_to_file(url, cached_file, hash_prefix, progress=progress)
    if _is_legacy_zip_format(cached_file):
        with zipfile.ZipFile(cached_file) as archive:
            member = archive.infolist()[0]
            archive.extractall(model_dir)
        cached_file = os.path.join(model_dir, member.filename)
    return hookgrad.load(cached_file, map_location=map_location, weights_only=weights_only)


# ------------------------------------------------------------------------------ hubconf models

def _parse_repo_info(github: str):
    owner_name, _, ref = github.partition(":")
    if owner_name.count("/") != 1:
        raise ValueError(f'Invalid input: repo_or_dir ("{github}") is not of the form "repo_owner/repo_name[:ref]"')
    owner, name = owner_name.split("/", 1)
    return owner, name, ref or "main"


def _fetch_github(github: str, force_reload: bool, verbose: bool) -> str:
    """The folder of the GitHub repository ``owner/name[:ref]``, downloaded into the hub dir once."""
    owner, name, ref = _parse_repo_info(github)
    hub_dir = get_dir()
    os.makedirs(hub_dir, exist_ok=True)
    folder = os.path.join(hub_dir, "_".join([owner, name, ref.replace("/", "_")]))
    if os.path.exists(folder) and not force_reload:
        if verbose:
            sys.stderr.write(f"Using cache found in {folder}\n")
        return folder
    archive_path = os.path.join(hub_dir, ref.replace("/", "_") + ".zip")
    url = f"https://github.com/{owner}/{name}/zipball/{ref}"
    sys.stderr.write(f'Downloading: "{url}" to {archive_path}\n')
    download_url_to_file(url, archive_path, progress=False)
    with zipfile.ZipFile(archive_path) as archive:
        root = archive.infolist()[0].filename.split("/")[0]
        for member in archive.namelist():  # refuse paths that would leave the hub dir
            if os.path.isabs(member) or ".." in member.split("/"):
                raise ValueError(f"unsafe path in the repository archive: {member}")
        archive.extractall(hub_dir)
    os.remove(archive_path)
    if os.path.exists(folder):
        shutil.rmtree(folder)
    shutil.move(os.path.join(hub_dir, root), folder)
    return folder


def _repo_folder(repo_or_dir: str, source: str, force_reload: bool, verbose: bool, trust_repo=None) -> str:
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "local":
        return repo_or_dir
    return _fetch_github(repo_or_dir, force_reload, verbose)


def _import_hubconf(folder: str):
    path = os.path.join(folder, MODULE_HUBCONF)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} not found")
    sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location("hubconf", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
    missing = [d for d in getattr(module, VAR_DEPENDENCY, []) if importlib.util.find_spec(d) is None]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    return module


def _entrypoint(module, model: str):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    func = getattr(module, model, None)
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def list(github, force_reload=False, skip_validation=False, trust_repo=None, verbose=True):  # noqa: A001
    """The entry points (public callables) of the repository's hubconf.py."""
    folder = _repo_folder(github, "github", force_reload, verbose)
    module = _import_hubconf(folder)
    return [f for f in dir(module) if callable(getattr(module, f)) and not f.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo=None):  # noqa: A001
    folder = _repo_folder(github, "github", force_reload, True)
    return _entrypoint(_import_hubconf(folder), model).__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo=None, force_reload=False, verbose=True,
         skip_validation=False, **kwargs):
    """``model(*args, **kwargs)`` from the repository's (or local folder's) hubconf.py."""
    folder = _repo_folder(repo_or_dir, source, force_reload, verbose, trust_repo)
    return _entrypoint(_import_hubconf(folder), model)(*args, **kwargs)


def _load_local(hubconf_dir, model, *args, **kwargs):
    return _entrypoint(_import_hubconf(hubconf_dir), model)(*args, **kwargs)
