"""``torch.distributed.elastic.multiprocessing.errors``: ``@record`` runs a process's entry point and,
when it raises, writes the exception as JSON to the file named by ``TORCHELASTIC_ERROR_FILE`` (when
set) before re-raising; ``SystemExit(0)`` counts as success. ``ChildFailedError`` carries a failed
child's error file up to its parent, which copies it into its own."""
from __future__ import annotations

import faulthandler
import json
import os
import time
import traceback
import warnings
from dataclasses import dataclass, field
from functools import wraps

__all__ = ["ProcessFailure", "ChildFailedError", "record", "ErrorHandler", "get_error_handler"]

_NOT_AVAILABLE = "<N/A>"


class ErrorHandler:
    """Writes an exception, with its traceback and a timestamp, to ``TORCHELASTIC_ERROR_FILE``."""

    def _get_error_file_path(self):
        return os.environ.get("TORCHELASTIC_ERROR_FILE", None)

    def initialize(self) -> None:
        try:
            faulthandler.enable(all_threads=True)
        except Exception as exc:  # noqa: BLE001 - a closed stderr must not stop the program
            warnings.warn(f"Unable to enable fault handler. {type(exc).__name__}: {exc}", stacklevel=2)

    def _write_error_file(self, file_path: str, error_msg: str) -> None:
        try:
            with open(file_path, "w") as fp:
                fp.write(error_msg)
        except Exception as exc:  # noqa: BLE001
            warnings.warn(f"Unable to write error to file. {type(exc).__name__}: {exc}", stacklevel=2)

    def record_exception(self, e: BaseException) -> None:
        path = self._get_error_file_path()
        if path:
            data = {"message": {"message": f"{type(e).__name__}: {e}",
                                "extraInfo": {"py_callstack": traceback.format_exc(),
                                              "timestamp": str(int(time.time()))}}}
            with open(path, "w") as fp:
                json.dump(data, fp)

    def dump_error_file(self, rootcause_error_file: str, error_code: int = 0) -> None:
        """Copy a child's error file into this process's own (its exit code filled in when missing)."""
        with open(rootcause_error_file) as fp:
            rootcause = json.load(fp)
        if error_code and isinstance(rootcause.get("message"), dict) and "errorCode" not in rootcause["message"]:
            rootcause["message"]["errorCode"] = error_code
        path = self._get_error_file_path()
        if path:
            self._write_error_file(path, json.dumps(rootcause))


def get_error_handler() -> ErrorHandler:
    return ErrorHandler()


@dataclass
class ProcessFailure:
    """One failed child: its local rank, process id, exit code and error file."""
    local_rank: int
    pid: int
    exitcode: int
    error_file: str
    message: str = field(init=False, default="")
    timestamp: int = field(init=False, default=0)

    def __post_init__(self):
        self.timestamp = int(time.time())
        if self.error_file and os.path.isfile(self.error_file):
            try:
                with open(self.error_file) as fp:
                    self.message = json.load(fp).get("message", {}).get("message", "")
                self.timestamp = int(os.path.getmtime(self.error_file))
            except (OSError, ValueError, AttributeError):
                self.message = ""
        else:
            self.message = f"exitcode: {self.exitcode}" if self.exitcode >= 0 else f"signal: {-self.exitcode}"

    def signal_name(self) -> str:
        import signal
        return signal.Signals(-self.exitcode).name if self.exitcode < 0 else _NOT_AVAILABLE


class ChildFailedError(Exception):
    """Raised by a parent whose children failed: ``failures`` maps global ranks to ``ProcessFailure``."""

    def __init__(self, name: str, failures: dict):
        self.name = name
        self.failures = failures
        if not self.failures:
            raise AssertionError
        super().__init__(self.format_msg())

    def get_first_failure(self):
        rank = min(self.failures, key=lambda r: self.failures[r].timestamp)
        return rank, self.failures[rank]

    def format_msg(self, boarder_delim="=", section_delim="-") -> str:
        lines = [f"{self.name} FAILED"]
        for rank, failure in sorted(self.failures.items()):
            lines.append(f"[{rank}] local_rank {failure.local_rank} (pid {failure.pid}) exitcode {failure.exitcode}: "
                         f"{failure.message}")
        return "\n".join(lines)


def record(fn, error_handler: ErrorHandler | None = None):
    """Decorate a process's entry point so that the exception ending it is written to the error file."""
    handler = error_handler if error_handler else get_error_handler()

    @wraps(fn)
    def wrapper(*args, **kwargs):
        handler.initialize()
        try:
            return fn(*args, **kwargs)
        except SystemExit as exit_:
            if exit_.code == 0:
                return None
            raise
        except ChildFailedError as exc:
            _, failure = exc.get_first_failure()
            if failure.error_file != _NOT_AVAILABLE:
                handler.dump_error_file(failure.error_file, failure.exitcode)
            raise
        except Exception as exc:
            handler.record_exception(exc)
            raise

    return wrapper
