"""Rank 0 waits for the other ranks' sessions, on the filesystem only and for a bounded time.

dlpt has no network code: the ranks of a job write their sessions to one path template
(``-o run.json`` -> ``run.rank{N}.json``, :mod:`dlpt.files.rank_paths`), a shared directory when the
job spans nodes. Rank 0, once its own session is saved, polls for the others' files until each
is there or ``timeout_s`` has passed; no other rank ever waits. A file counts once it belongs to
this run: sessions are written atomically (dlpt.files.safe_files), so one that exists is complete, but
a file left by an earlier run with the same ``-o`` must not pass for this run's. It must name
the rank it should hold (``meta.distributed.rank``), the same launch when both know it
(``meta.distributed.run_id``: torchrun's run id, SLURM's job and step), and be written after
this run started (allowing for clocks of other nodes that run behind).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from dlpt.errors import DlptError
from dlpt.files.rank_paths import rank_path
from dlpt.model.session import Session

__all__ = ["Gathered", "gather", "CLOCK_SLACK_S"]

#: How far behind another node's clock may run for its fresh file still to count as this run's.
CLOCK_SLACK_S = 120.0


@dataclass
class Gathered:
    """What rank 0 found: ``sessions`` by rank (path, session), and why each missing rank is."""

    sessions: dict[int, tuple[str, Session]] = field(default_factory=dict)
    missing: dict[int, str] = field(default_factory=dict)
    waited_s: float = 0.0


def _mtime(path: str) -> float | str:
    """The file's modification time, or why it cannot be read."""
    try:
        return os.stat(path).st_mtime
    except FileNotFoundError:
        return "no session written"
    except OSError as e:
        return f"cannot read it ({e.strerror or e})"


def _why_not(path: str, rank: int, run_id: str | None, since: float) -> tuple[Session | None, str]:
    """The session at ``path`` if it is ``rank``'s of this run, else (None, why not)."""
    mtime = _mtime(path)
    if isinstance(mtime, str):
        return None, mtime
    if mtime < since - CLOCK_SLACK_S:
        return None, "only a session of an earlier run is there"
    try:
        session = Session.load(path)
    except DlptError as e:
        return None, f"unreadable: {e}"
    d = session.typed_meta.distributed
    if d is None or d.rank != rank:
        return None, f"the session there is of rank {d.rank if d is not None else None!r}, not {rank}"
    other = d.run_id
    if run_id and other is not None and other != run_id:
        return None, "only a session of another run is there"
    return session, ""


def gather(
    template: str,
    world_size: int,
    own: tuple[int, str, Session],
    timeout_s: float,
    since: float,
    run_id: str | None,
    *,
    on_wait: Callable[[list[int]], None] | None = None,
    stop: Callable[[], bool] = lambda: False,
    poll_s: float = 0.25,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Gathered:
    """Every rank's session of this run, waiting at most ``timeout_s`` for the missing ones.

    ``template`` is the ``-o`` path every rank applied the per-rank rule to; ``own`` is rank 0's
    (rank, path, session), not re-read; ``since`` the wall-clock time (``time.time()``) this
    rank started profiling; ``on_wait`` is told which ranks are awaited before the first wait;
    ``stop`` ends the wait early (a signal arrived: what is there is reported)."""
    out = Gathered()
    rank0, path0, session0 = own
    out.sessions[rank0] = (path0, session0)
    pending = {r: rank_path(template, r, world_size) for r in range(world_size) if r != rank0}
    start = clock()
    told = False
    rejected: dict[int, float] = {}  # modification time of a file already read and refused
    while True:
        for r, path in list(pending.items()):
            mtime = _mtime(path)
            if isinstance(mtime, float) and rejected.get(r) == mtime:
                continue  # the same refused file: read it again only once it changes
            session, why = _why_not(path, r, run_id, since)
            if session is None and isinstance(mtime, float) and why != "no session written":
                rejected[r] = mtime
            if session is not None:
                out.sessions[r] = (path, session)
                del pending[r]
                out.missing.pop(r, None)
            else:
                out.missing[r] = f"{why} at {path}"
        elapsed = clock() - start
        if not pending or elapsed >= timeout_s or stop():
            break
        if not told and on_wait is not None:
            on_wait(sorted(pending))
            told = True
        sleep(min(poll_s, max(timeout_s - elapsed, 0.0)))
    out.waited_s = clock() - start
    for r in pending:
        out.missing[r] = f"{out.missing[r]} after {out.waited_s:.0f} s"
    return out
