"""Backward passes without aten-op records: the one hook on torch's autograd entry point.

By default (see csrc/context/aten_ops.cpp) dlpt's aten-op (FUNCTION-scope) RecordFunction
callback is its own, and each backward pass started from Python is bracketed by
``pause_function_records`` / ``resume_function_records``, which disable it meanwhile: torch then
skips those records on every thread as cheaply as with no callback. Backward nodes are still
recorded (the BACKWARD_FUNCTION callback) and grafted under their forward ops; only the records
nobody reads (the engine's per-node wrapper, the aten ops inside each node) are gone. Ops that
another thread runs during a backward pass lose their op nodes (their kernels keep their lines).
Not while a torch.distributed process group exists: DDP's and FSDP's collectives run in
backward hooks as c10d ops, which are FUNCTION records.

Private torch API used: ``torch.autograd._engine_run_backward``, the function that
``torch.autograd.backward``, ``Tensor.backward`` and ``torch.autograd.grad`` call to enter the
C++ engine (looked up as a module global of ``torch.autograd`` at each call; torch >= 2.3).
Checked against torch 2.11 (+cu130, GPU machine) and 2.13 (CPU build). Without it (older or
newer torch that changed it) nothing is patched and backward passes are recorded as before, at
the old cost; a backward pass entered from C++ (not through that function) likewise.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from typing import Any

log = logging.getLogger("dlpt")

_ATTR = "_engine_run_backward"


def _process_group_exists() -> bool:
    dist = sys.modules.get("torch.distributed")  # never imported here: no import, no group
    try:
        return dist is not None and dist.is_available() and dist.is_initialized()
    except Exception:  # noqa: BLE001 - a broken torch.distributed must not break backward()
        return True


class BackwardRecordsPause:
    """Wraps ``torch.autograd._engine_run_backward`` until :meth:`remove`. ``pause`` and
    ``resume`` are the native calls: pause returns a token for resume, 0 if it paused nothing
    (one process-wide capture, so one wrapper at a time)."""

    def __init__(self, pause: Callable[[], int], resume: Callable[[int], None]) -> None:
        self._pause, self._resume = pause, resume
        self._original: Callable[..., Any] | None = None
        self._wrapper: Callable[..., Any] | None = None

    def install(self) -> bool:
        import torch.autograd as autograd

        original = getattr(autograd, _ATTR, None)
        if not callable(original):
            log.debug("torch.autograd.%s not found: backward passes keep their op records", _ATTR)
            return False
        pause, resume = self._pause, self._resume

        @functools.wraps(original)
        def run_backward(*args: Any, **kwargs: Any) -> Any:
            token = 0 if _process_group_exists() else pause()
            try:
                return original(*args, **kwargs)
            finally:
                if token:
                    resume(token)

        setattr(autograd, _ATTR, run_backward)
        self._original, self._wrapper = original, run_backward
        return True

    def remove(self) -> None:
        if self._original is None:
            return
        import torch.autograd as autograd

        # Someone who wrapped it after us keeps their wrapper (ours then stays inside it, and
        # pauses nothing once no capture runs).
        if getattr(autograd, _ATTR, None) is self._wrapper:
            setattr(autograd, _ATTR, self._original)
        self._original = self._wrapper = None
