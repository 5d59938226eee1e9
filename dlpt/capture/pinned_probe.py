"""One measurement dlpt makes itself, after the profile: how fast a pinned host-to-device copy
of a given size runs on this machine, so that the pinned-memory suggestion rests on a measured
bandwidth rather than a datasheet figure when the run made no pinned copy of its own.

Made only when the run copied from pageable memory, after capture stopped (the copies are not
in the profile), with a warm-up copy first and the median of a few timed copies (CUDA events on
the current stream of the copies' device). Memory is pinned for the probe only (at most
256 MiB) and freed afterwards. No probe where CUDA is unusable or unused: no GPU, a forked child
of a process that initialised CUDA, or a process that never initialised CUDA itself (the run made
no copy then, and the probe would pay for creating a context). Any failure (out of memory, a
broken context) leaves the result out: the rule then falls back to the datasheet and says so.
"""

from __future__ import annotations

import logging
import statistics
from typing import Any

__all__ = ["pinned_htod", "MAX_PROBE_BYTES"]

MAX_PROBE_BYTES = 256 * 1024 * 1024
_MIN_PROBE_BYTES = 64 * 1024
_log = logging.getLogger(__name__)


def pinned_htod(nbytes: int, device: int, reps: int = 5) -> dict[str, Any] | None:
    """``{"device", "bytes", "ns", "copies"}``: the median time of one pinned HtoD copy of
    ``nbytes`` (clamped to 64 KiB .. 256 MiB) to ``device``; None when it cannot be measured."""
    try:
        import torch

        cuda = torch.cuda
        # _is_in_bad_fork: a child forked after its parent initialised CUDA, where any CUDA call
        # raises (it is what torch.cuda's own lazy init checks).
        initialized = cuda.is_initialized()  # type: ignore[no-untyped-call]  # untyped in torch's stubs
        if cuda._is_in_bad_fork() or not initialized or not cuda.is_available():
            return None
        if not 0 <= device < cuda.device_count():
            return None
        n = max(_MIN_PROBE_BYTES, min(int(nbytes), MAX_PROBE_BYTES))
        with torch.cuda.device(device):
            src = torch.empty(n, dtype=torch.uint8, pin_memory=True)
            dst = torch.empty(n, dtype=torch.uint8, device=f"cuda:{device}")
            dst.copy_(src, non_blocking=True)  # warm-up: first-touch and DMA setup
            times = []
            for _ in range(reps):
                # torch.cuda.Event's constructor is untyped in torch's stubs.
                start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
                end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
                start.record()
                dst.copy_(src, non_blocking=True)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))  # milliseconds
            del src, dst
        ns = round(statistics.median(times) * 1e6)
    except Exception:  # noqa: BLE001 - a probe must never fail the profile; the rule falls back
        _log.debug("pinned HtoD probe failed", exc_info=True)
        return None
    return {"device": str(device), "bytes": n, "ns": ns, "copies": reps} if ns > 0 else None
