"""The ranks' summaries travel to rank 0 through the job's own rendezvous store.

torchrun (torch >= 2.2) hosts a ``TCPStore`` in its agent on the first node and tells every
worker where (``MASTER_ADDR``/``MASTER_PORT``, ``TORCHELASTIC_USE_AGENT_STORE=True``). dlpt opens
its own client connection to it: never the user's process group (which may be gone, or busy in a
collective), never a second rendezvous, and no shared filesystem. Keys live under ``dlpt/`` and
the run's id, so the user's own keys are never touched.

Each rank ``publish``-es its summary (:func:`dlpt.views.ranks.for_rank_zero`) under a key numbered by how
many times that rank finished a profile in this run (a store counter), so that a program that
profiles several windows pairs each rank's n-th summary with rank 0's n-th report. Rank 0
``collect``-s: it polls which keys are there until each rank's is or its time is up (bounded:
a rank that died is named missing, never waited on forever), reads and deletes them.

Without a reachable agent store (torch older than 2.2, a launcher other than torchrun, a store
that stopped answering: a plain connection tried first, for at most :data:`PROBE_TIMEOUT_S`)
:func:`connect` returns None and the CLI gathers files instead
(:mod:`dlpt.cli.gather`). Nothing here raises into the program: every failure becomes a reason.
"""

from __future__ import annotations

import datetime
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dlpt.errors import DlptError
from dlpt.model.session import Session
from dlpt.views.ranks import Summary, for_rank_zero, received

__all__ = ["RankStore", "connect", "Collected"]

CONNECT_TIMEOUT_S = 10.0
# How long a first plain connection may take before the store counts as unreachable. TCPStore's
# own client retries for its whole timeout and prints a C++ stack per try (a rank took 28 s and
# 38 lines of stderr for a store that was gone).
PROBE_TIMEOUT_S = 2.0


@dataclass
class Collected:
    summaries: dict[int, Summary] = field(default_factory=dict)
    missing: dict[int, str] = field(default_factory=dict)
    waited_s: float = 0.0


class RankStore:
    """dlpt's keys in the job's store (see the module's doc)."""

    def __init__(self, store: Any, run: str) -> None:
        self.store, self.prefix = store, f"dlpt/{run}"

    def _key(self, rank: int, n: int) -> str:
        return f"{self.prefix}/{n}/rank{rank}"

    def finish_number(self, rank: int) -> int:
        """How many profiles this rank has finished in this run, this one included."""
        return int(self.store.add(f"{self.prefix}/finished/rank{rank}", 1))

    def publish(self, rank: int, session: Session, world_size: int = 1) -> int:
        """Puts ``rank``'s summary in the store; returns its size in bytes."""
        data = for_rank_zero(session, world_size)
        self.store.set(self._key(rank, self.finish_number(rank)), data)
        return len(data)

    def collect(
        self,
        ranks: list[int],
        n: int,
        timeout_s: float,
        *,
        on_wait: Callable[[list[int]], None] | None = None,
        stop: Callable[[], bool] = lambda: False,
        poll_s: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
    ) -> Collected:
        """The summaries of ``ranks`` for their ``n``-th profile, waiting at most ``timeout_s``
        (less once ``stop`` says so: a signal arrived)."""
        out = Collected()
        pending = set(ranks)
        labels: dict[bytes, list[tuple[str, str, int]]] = {}  # ranks of the same code: read once
        start = clock()
        told = False
        while pending:
            self._take(pending, n, out, labels)
            elapsed = clock() - start
            if not pending or elapsed >= timeout_s or stop():
                break
            if not told and on_wait is not None:
                on_wait(sorted(pending))
                told = True
            time.sleep(min(poll_s, max(0.0, timeout_s - elapsed)))
        out.waited_s = clock() - start
        for r in pending:
            out.missing[r] = (
                f"no summary arrived in {out.waited_s:.0f} s (the rank ended early or is still running)"
            )
        return out

    def _take(
        self, pending: set[int], n: int, out: Collected, labels: dict[bytes, list[tuple[str, str, int]]]
    ) -> None:
        """Reads (and deletes) the summaries of ``pending`` ranks that are there."""
        for r in [r for r in sorted(pending) if self.store.check([self._key(r, n)])]:
            key = self._key(r, n)
            try:
                out.summaries[r] = received(self.store.get(key), f"rank {r}'s summary", labels)
            except DlptError as e:
                out.missing[r] = f"unreadable summary: {e}"
            self.store.delete_key(key)
            pending.discard(r)


def _reachable(host: str, port: int, timeout_s: float) -> bool:
    """Whether something accepts a TCP connection at ``host:port`` within ``timeout_s``."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except (OSError, ValueError, OverflowError):  # refused, unroutable, a port past 65535
        return False


def connect(env: dict[str, str] | None = None, timeout_s: float = CONNECT_TIMEOUT_S) -> RankStore | None:
    """The job's agent store, or None where there is none to reach."""
    e = os.environ if env is None else env
    if e.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() != "true":
        return None
    host, port = e.get("MASTER_ADDR"), e.get("MASTER_PORT", "")
    if not host or not port.isdigit():
        return None
    run = "{}/{}".format(e.get("TORCHELASTIC_RUN_ID", "run"), e.get("TORCHELASTIC_RESTART_COUNT", "0"))
    if not _reachable(host, int(port), min(PROBE_TIMEOUT_S, timeout_s)):
        return None
    try:
        from torch.distributed import TCPStore

        store = TCPStore(
            host,
            int(port),
            is_master=False,
            timeout=datetime.timedelta(seconds=timeout_s),
            wait_for_workers=False,
        )
    except Exception:  # noqa: BLE001 - no store to reach: the files are the fallback
        return None
    return RankStore(store, run)
