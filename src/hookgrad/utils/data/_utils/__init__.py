"""``torch.utils.data._utils``: where torch keeps the collate functions (imported from there by libraries)."""
from . import collate  # noqa: F401
