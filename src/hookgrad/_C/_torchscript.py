"""TorchScript's C++ types as ``torch._C`` names them. hookgrad has no TorchScript compiler or tracer,
so no object of these classes ever exists: ``isinstance(x, torch._C.ScriptMethod)`` is False for
everything (which is what libraries that special-case scripted code ask), and constructing one raises
a TypeError, as torch's classes without a Python constructor do."""
from __future__ import annotations

__all__ = ["ScriptMethod", "ScriptObject", "ScriptModule", "ScriptClass", "Graph", "Value",
           "Node", "Block", "CompilationUnit", "FunctionSchema", "TracingState"]


class _NeverMade:
    def __new__(cls, *args, **kwargs):
        raise TypeError(f"torch._C.{cls.__name__}: No constructor defined! (hookgrad has no TorchScript, so "
                        f"there are no {cls.__name__} objects)")


def _never_made(name: str) -> type:
    return type(name, (_NeverMade,), {"__module__": __name__, "__doc__": f"TorchScript's {name}; never made."})


ScriptMethod = _never_made("ScriptMethod")
ScriptObject = _never_made("ScriptObject")
ScriptModule = _never_made("ScriptModule")
ScriptClass = _never_made("ScriptClass")
Graph = _never_made("Graph")
Value = _never_made("Value")
Node = _never_made("Node")
Block = _never_made("Block")
CompilationUnit = _never_made("CompilationUnit")
FunctionSchema = _never_made("FunctionSchema")
TracingState = _never_made("TracingState")
