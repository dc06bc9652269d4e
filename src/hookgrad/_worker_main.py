"""The main module of a spawned (or forkserver) DataLoader worker whose parent runs a script under
``hookgrad run``.

A spawned worker re-imports the parent's main script before it can unpickle the dataset. Left to
itself it would import the real torch there; so the parent names this module as its main module
while it starts workers (see ``hookgrad.utils.data.dataloader``). Run as the worker's
``__mp_main__``, it makes ``torch`` mean hookgrad for the worker's whole life, then runs the
parent's script (or module) and takes over its globals, where the dataset's classes are found.
Imported in any other way, it does nothing.
"""
import os
import runpy

from hookgrad._run import torch_aliases
from hookgrad.utils.data import _spawn_main_key

if __name__ == "__mp_main__" and os.environ.get(_spawn_main_key):
    torch_aliases().__enter__()  # never left: the worker runs hookgrad as torch until it exits
    _kind, _, _where = os.environ[_spawn_main_key].partition(":")
    if _kind == "path":
        globals().update(runpy.run_path(_where, run_name="__mp_main__"))
    elif _kind == "module":
        globals().update(runpy.run_module(_where, run_name="__mp_main__"))
