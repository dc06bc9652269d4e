"""``hookgrad.nn``: Module and its hooks, Parameter, containers, layers, init, functional."""
from .parameter import Buffer, Parameter  # noqa: F401
from .parameter import UninitializedBuffer, UninitializedParameter  # noqa: F401
from .modules import *  # noqa: F401,F403
from . import modules as _modules_pkg

# Every public class that nn/modules/__init__.py imports (layers included, whether or not the
# layer files extend its __all__) is part of hookgrad.nn.
_modules_all = [_n for _n, _v in vars(_modules_pkg).items() if not _n.startswith("_") and isinstance(_v, type)]
globals().update({_n: getattr(_modules_pkg, _n) for _n in _modules_all})
from . import init, modules, parameter  # noqa: F401
from .modules.module import (  # noqa: F401
    register_module_backward_hook,
    register_module_buffer_registration_hook,
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
    register_module_module_registration_hook,
    register_module_parameter_registration_hook,
)

# PyTorch keeps the global ``register_module_*`` functions in torch.nn.modules.module only;
# hookgrad also exposes them here, so that ``hookgrad.nn.register_module_full_backward_hook``
# works (user documents call them that way).

# The layers' functional API and nn.utils live in their own files; import them when present.
import importlib.util as _util

for _name in ("functional", "utils"):
    if _util.find_spec(f"{__name__}.{_name}") is not None:
        globals()[_name] = __import__(f"{__name__}.{_name}", fromlist=["_"])
del _util, _name

__all__ = ["Parameter", "Buffer", "init", "modules", "parameter", *_modules_all,
           "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_backward_hook", "register_module_full_backward_pre_hook",
           "register_module_full_backward_hook", "register_module_buffer_registration_hook",
           "register_module_module_registration_hook", "register_module_parameter_registration_hook"]
__all__ += [_n for _n in ("functional", "utils") if _n in globals()]

from . import parallel  # noqa: E402
from .parallel import DataParallel  # noqa: E402

__all__ += ["parallel", "DataParallel"]


def factory_kwargs(kwargs):
    """The ``device``/``dtype``/``memory_format`` keywords of ``kwargs`` merged with its ``factory_kwargs``
    entry (torch's helper for module constructors); any other keyword is a TypeError."""
    if kwargs is None:
        return {}
    simple = {"device", "dtype", "memory_format"}
    unexpected = kwargs.keys() - (simple | {"factory_kwargs"})
    if unexpected:
        raise TypeError(f"unexpected kwargs {unexpected}")
    merged = dict(kwargs.get("factory_kwargs", {}))
    for key in simple & kwargs.keys():
        if key in merged:
            raise TypeError(f"{key} specified twice, in **kwargs and in factory_kwargs")
        merged[key] = kwargs[key]
    return merged
