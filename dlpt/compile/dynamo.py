"""Collect Dynamo's compilation records while a profile runs.

Dynamo keeps per-compilation metrics (compile times, graph-break restart reasons, the failed
guard of a recompilation) in a queue that holds only the most recent entries, so they are read at
the end of every compilation, through Dynamo's compile-end callback, rather than once at stop.
The compile-start callback is where Inductor is known to be in use: that is when the partition
line-map patch (:mod:`dlpt.compile.inductor_partitions`) goes in.
"""

from __future__ import annotations

from typing import Any

from dlpt.compile import inductor_partitions
from dlpt.compile.events import events_from_metrics

__all__ = ["CompileEvents"]


class CompileEvents:
    """Collects compile events between :meth:`start` and :meth:`stop`. Never raises: without
    Dynamo (or with an incompatible one) the list is simply empty."""

    def __init__(self) -> None:
        self._seen: set[tuple] = set()
        self._metrics: list[Any] = []
        self._callback: Any = None
        self._start_callback: Any = None
        self._handler: Any = None

    @staticmethod
    def _key(m: Any) -> tuple:
        return (getattr(m, "compile_id", None), getattr(m, "frame_key", None), getattr(m, "start_time", None))

    def _collect(self, *_args: Any) -> None:
        try:
            from torch._dynamo.utils import get_compilation_metrics

            for m in get_compilation_metrics():
                k = self._key(m)
                if k not in self._seen:
                    self._seen.add(k)
                    self._metrics.append(m)
        except Exception:  # a profiler must not break the program over bookkeeping
            pass

    def start(self) -> None:
        self._metrics = []  # a profile may run again (``@dlpt.profile()`` runs at every call)
        try:
            from torch._dynamo.callback import callback_handler
            from torch._dynamo.utils import get_compilation_metrics
        except Exception:
            return
        self._seen = {self._key(m) for m in get_compilation_metrics()}  # earlier compiles are not ours
        self._callback = self._collect
        callback_handler.register_end_callback(self._callback)
        self._start_callback = self._on_compile_start
        callback_handler.register_start_callback(self._start_callback)
        self._handler = callback_handler

    @staticmethod
    def _on_compile_start(*_args: Any) -> None:
        # Inductor is being used: make sure its graph partitions keep their line maps.
        inductor_partitions.install()

    def stop(self) -> list[dict[str, Any]]:
        if self._handler is None:
            return []
        self._collect()
        try:
            self._handler.remove_end_callback(self._callback)
            self._handler.remove_start_callback(self._start_callback)
        except Exception:
            pass
        self._handler = None
        return events_from_metrics(self._metrics)
