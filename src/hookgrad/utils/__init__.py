"""Utilities: hook handles and the module backward-hook machinery (hooks), data loading (data)."""
from . import hooks  # noqa: F401
