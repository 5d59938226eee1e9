"""Failures of the torch.compile integration: caught, logged and counted, never silent.

dlpt calls into torch internals that change between releases (see :mod:`dlpt.capture.compile`). A
profiler must not break the program it profiles, so those calls catch every exception; but each
one is logged at debug on the ``dlpt`` logger (with its traceback: ``DLPT_LOG=debug``) and
counted under a reason. A profile stores the counts of its own window in
``meta.capture.compile_failures`` and the report header says that attribution is incomplete.

The counts are process-wide because the partition patch outlives a profile; a profile takes the
difference between its start and its stop (only one profile runs at a time). Compilations may
run on any thread, hence the lock.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Mapping
from typing import Literal

__all__ = ["Reason", "record", "snapshot", "since"]

Reason = Literal[
    "dynamo_callbacks",  # Dynamo's compile start/end callbacks could not be registered or removed
    "compile_metrics",  # Dynamo's compilation metrics could not be read: compile events lost
    "line_map",  # Inductor's line map could not be read: kernels stay on generated code
    "wrapper_source",  # a generated wrapper could not be read: kernels lack graph/fused-op labels
    "partition_patch",  # the partition line-map patch does not fit this torch: not installed
    "partition_line_map",  # one partition's line map could not be kept (Inductor's splice used)
    "step_skip",  # the --step-on wrapper could not be kept out of Dynamo: compiled calls not counted
    "provenance",  # Inductor's kernel provenance could not be recorded or read: the line map serves
]

_log = logging.getLogger(__name__)
_lock = threading.Lock()
_counts: Counter[str] = Counter()


def record(reason: Reason, exc: BaseException | None = None, detail: str = "") -> None:
    """Count one failure under ``reason`` and log it at debug with ``exc``'s traceback."""
    with _lock:
        _counts[reason] += 1
    what = detail or (f"{type(exc).__name__}: {exc}" if exc is not None else "")
    _log.debug("torch.compile integration: %s failed: %s", reason, what, exc_info=exc)


def snapshot() -> dict[str, int]:
    """The counts so far, to pass to :func:`since` later."""
    with _lock:
        return dict(_counts)


def since(before: Mapping[str, int]) -> dict[str, int]:
    """Failures counted after ``before`` was taken, by reason (reasons with none left out)."""
    with _lock:
        return {k: v - before.get(k, 0) for k, v in sorted(_counts.items()) if v > before.get(k, 0)}
