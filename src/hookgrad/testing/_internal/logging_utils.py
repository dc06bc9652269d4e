"""``torch.testing._internal.logging_utils`` for the logging artifacts hookgrad has.

``make_logging_test(autograd=logging.DEBUG)`` runs a test with the named artifacts' loggers at the
given level and hands it the records they emitted. The only artifact hookgrad logs is ``autograd``
(each node of a backward pass, on the ``torch.autograd`` loggers); naming another one raises
NotImplementedError. torch runs such a test twice, once configured through ``TORCH_LOGS`` and once
through ``torch._logging.set_logs``; both configure the same loggers, and this runs it twice too.
"""
from __future__ import annotations

import contextlib
import functools
import logging

from .common_utils import TestCase

_ARTIFACT_LOGGERS = {"autograd": "torch.autograd"}


class _RecordCollector(logging.Handler):
    def __init__(self, records):
        super().__init__(logging.DEBUG)
        self.records = records

    def emit(self, record):
        self.records.append(record)


@contextlib.contextmanager
def _artifacts_logged(settings, records):
    loggers = []
    for name, level in settings.items():
        if name not in _ARTIFACT_LOGGERS:
            raise NotImplementedError(f"hookgrad logs no '{name}' artifact; the only one it has is 'autograd'")
        if isinstance(level, bool):
            level = logging.DEBUG if level else logging.WARNING
        loggers.append((logging.getLogger(_ARTIFACT_LOGGERS[name]), level))
    saved = [(lg, lg.level, lg.propagate) for lg, _ in loggers]
    collector = _RecordCollector(records)
    for lg, level in loggers:
        lg.setLevel(level)
        lg.propagate = False
        lg.addHandler(collector)
    try:
        yield
    finally:
        for lg, level, propagate in saved:
            lg.removeHandler(collector)
            lg.setLevel(level)
            lg.propagate = propagate


def make_logging_test(**settings):
    """Decorate ``test(self, records)``: run it with the artifacts' loggers set as given, twice."""
    def decorate(fn):
        @functools.wraps(fn)
        def test(self):
            for _ in range(2):
                records = []
                with _artifacts_logged(settings, records):
                    fn(self, records)
        return test
    return decorate


class LoggingTestCase(TestCase):
    def hasRecord(self, records, message):
        return any(message in r.getMessage() for r in records)

    def getRecord(self, records, message):
        found = [r for r in records if message in r.getMessage()]
        if not found:
            raise AssertionError(f"no record contains {message!r}")
        return found[0]
