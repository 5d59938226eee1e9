"""What dlpt adds to a session at stop, after capture: the pinned-copy probe when the run copied
from pageable memory (``meta.host_link_probe``) and the suggestions (``meta.suggestions``), so
that a saved session shows what was found when it was recorded.

Called by :mod:`dlpt.profiler` with the GIL held, after the native core stopped and
:func:`dlpt.assemble.build_session` built the session; never raises (a failure is logged and
leaves the keys out: reports then derive the suggestions themselves). The profiler asks for no
probe in a forked child (its CUDA may be unusable) or after the GPU failed to synchronise; the
probe itself is skipped when the run's GPU capture was off or CUDA is not usable in this process
(:func:`dlpt.insights.probe.pinned_htod`). A profile that joined a running one never stops it,
so it never gets here.
"""

from __future__ import annotations

import logging

from dlpt.insights.analysis import analyze
from dlpt.insights.probe import pinned_htod
from dlpt.insights.suggest import derive, to_meta
from dlpt.session import Session

__all__ = ["finish_session"]

_log = logging.getLogger(__name__)


def _pageable_htod(session: Session) -> tuple[int, int] | None:
    """(device, average bytes per copy) of the run's largest pageable HtoD copies, if any."""
    best: tuple[int, int, int] | None = None  # (total bytes, device, average)
    for n in session.nodes:
        x = n.get("x") or {}
        if n["kind"] == "memcpy" and x.get("direction") == "HtoD" and x.get("host_mem") == "pageable":
            copies, nbytes = n["m"].get("copies", 0), n["m"].get("copy_bytes", 0)
            dev = x.get("device", 0)
            if copies and isinstance(dev, int) and (best is None or nbytes > best[0]):
                best = (nbytes, dev, nbytes // copies)
    return (best[1], best[2]) if best is not None else None


def finish_session(session: Session, probe: bool = True) -> None:
    """Add ``meta.host_link_probe`` (when useful and ``probe`` allows a measurement on the GPU)
    and ``meta.suggestions`` to ``session``."""
    try:
        gpu = session.meta.get("gpu")
        enabled = probe and isinstance(gpu, dict) and gpu.get("enabled") is True
        target = _pageable_htod(session) if enabled else None
        if target is not None:
            measured = pinned_htod(target[1], target[0])
            if measured is not None:
                session.meta["host_link_probe"] = measured
        session.meta["suggestions"] = to_meta(derive(analyze(session)))
    except Exception:  # noqa: BLE001 - suggestions must never cost the profile; logged
        _log.debug("could not derive suggestions at stop", exc_info=True)
