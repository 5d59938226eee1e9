"""Collect Dynamo's compilation records while a profile runs.

Dynamo keeps per-compilation metrics (compile times, graph-break restart reasons, the failed
guard of a recompilation) in a queue that holds only the most recent entries, so they are read at
the end of every compilation, through Dynamo's compile-end callback, rather than once at stop.
The compile-start callback is where Inductor is known to be in use: that is when the partition
line-map patch (:mod:`dlpt.capture.compile.inductor_partitions`) goes in, and Inductor's kernel
provenance is recorded from then on (:mod:`dlpt.capture.compile.provenance`; its tracking level is
the program's again at stop). Between the start and
the end callbacks :attr:`CompileEvents.compiling` is true (a status line shows the phase).

Importing ``torch._dynamo`` takes about two seconds, so dlpt never does it: the callbacks are
registered when the program imports Dynamo (at once if it already has, else through
:mod:`dlpt.capture.import_hooks`), which it must do before anything can be compiled.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from dlpt.capture.compile import failures, inductor_partitions, provenance
from dlpt.capture.compile.events import events_from_metrics
from dlpt.capture.import_hooks import when_imported

__all__ = ["CompileEvents"]


class CompileEvents:
    """Collects compile events between :meth:`start` and :meth:`stop`. Never raises: what fails
    is counted (:mod:`dlpt.capture.compile.failures`) and the events seen so far are kept."""

    def __init__(self) -> None:
        self._seen: set[tuple[Any, ...]] = set()
        self._metrics: list[Any] = []
        # (Dynamo's remove function, our callback) for each callback registered, to undo at stop
        self._registered: list[tuple[Callable[[Any], None], Callable[..., None]]] = []
        # Registration may happen on whichever thread imports Dynamo, while stop() runs.
        self._lock = threading.Lock()
        self._active = False
        self._cancel_wait: Callable[[], None] | None = None
        # Compilations under way: Dynamo runs its start callbacks when the first of nested
        # compilations begins and its end callbacks when the last ends. A plain int, read
        # without a lock from a status thread.
        self._compiling = 0

    @property
    def compiling(self) -> bool:
        """Whether a Dynamo compilation is running now."""
        return self._compiling > 0

    @staticmethod
    def _key(m: Any) -> tuple[Any, ...]:
        return (getattr(m, "compile_id", None), getattr(m, "frame_key", None), getattr(m, "start_time", None))

    def _collect(self, *_args: Any) -> None:
        try:
            from torch._dynamo.utils import get_compilation_metrics

            for m in get_compilation_metrics():
                k = self._key(m)
                if k not in self._seen:
                    self._seen.add(k)
                    self._metrics.append(m)
        except Exception as e:  # noqa: BLE001 - never break the program over bookkeeping; counted
            failures.record("compile_metrics", e)

    def start(self) -> None:
        """Collect the compilations that end from now on: register Dynamo's callbacks now if the
        program has imported Dynamo, else as soon as it does."""
        self._metrics = []  # a profile may run again (``@dlpt.profile()`` runs at every call)
        self._active = True
        self._cancel_wait = when_imported("torch._dynamo", lambda _module: self._register())

    def _register(self) -> None:
        with self._lock:
            if not self._active or self._registered:
                return
            try:
                from torch._dynamo.callback import callback_handler
                from torch._dynamo.utils import get_compilation_metrics

                self._seen = {self._key(m) for m in get_compilation_metrics()}  # earlier ones are not ours
                callback_handler.register_end_callback(self._on_compile_end)
                self._registered.append((callback_handler.remove_end_callback, self._on_compile_end))
                callback_handler.register_start_callback(self._on_compile_start)
                self._registered.append((callback_handler.remove_start_callback, self._on_compile_start))
            except Exception as e:  # noqa: BLE001 - another Dynamo: no compile events; counted
                failures.record("dynamo_callbacks", e)

    def _on_compile_start(self, *_args: Any) -> None:
        self._compiling += 1
        # Inductor is being used: make sure its graph partitions keep their line maps, and that
        # its kernels' provenance is recorded.
        inductor_partitions.install()
        if provenance.install():
            provenance.enable()

    def _on_compile_end(self, *args: Any) -> None:
        self._compiling = max(0, self._compiling - 1)
        self._collect(*args)

    def stop(self) -> list[dict[str, Any]]:
        """Unregister and return the events of the compilations that ended since :meth:`start`."""
        with self._lock:
            self._active = False
        self._compiling = 0
        provenance.restore()
        if self._cancel_wait is not None:
            self._cancel_wait()
            self._cancel_wait = None
        if not self._registered:
            return []
        self._collect()
        for remove, callback in self._registered:
            try:
                remove(callback)
            except Exception as e:  # noqa: BLE001 - stop must finish; counted
                failures.record("dynamo_callbacks", e)
        self._registered.clear()
        return events_from_metrics(self._metrics)
