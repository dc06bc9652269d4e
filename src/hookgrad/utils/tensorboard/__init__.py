"""``torch.utils.tensorboard``: ``SummaryWriter`` writing TensorBoard event files.

The event-file format and its protocol buffers come from the ``tensorboard`` package (the optional
extra ``hookgrad[tensorboard]``); hookgrad itself needs only NumPy and SciPy.
"""
try:
    import tensorboard as _tensorboard
except ModuleNotFoundError as error:
    raise ModuleNotFoundError(
        "TensorBoard logging requires TensorBoard version 1.15 or above: the `tensorboard` package is "
        "not installed (pip install 'hookgrad[tensorboard]' or pip install tensorboard)",
        name="tensorboard") from error


def _version_tuple(text: str) -> tuple:
    parts = []
    for piece in text.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


if _version_tuple(getattr(_tensorboard, "__version__", "0")) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above")
del _tensorboard

from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
