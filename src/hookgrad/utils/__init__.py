"""Utilities: hook handles and the module backward-hook machinery (hooks), data loading (data)."""
from . import hooks  # noqa: F401
from . import data  # noqa: F401,E402
from . import checkpoint  # noqa: F401,E402
