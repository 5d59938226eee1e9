"""What the command line does at the end of one rank's run: where it saves, whether it prints,
and, on rank 0, the report across all ranks.

Every rank runs the same ``python -m dlpt ...`` under torchrun, so without care every rank
would print its full report to one terminal, interleaved, and save to one file. The policy:

- ``-o PATH``, ``--html`` and ``--export`` name one file per rank (:mod:`dlpt.model.rank_paths`).
- ``--report-ranks 0`` (default): only rank 0 prints. When the ranks saved their sessions
  (``-o``), rank 0 waits for the others' files (:mod:`dlpt.cli.gather`, at most
  ``--rank-timeout`` seconds, after its own is saved) and prints the report across ranks,
  naming the ranks it did not get; without ``-o`` it prints its own report.
- ``--report-ranks all``: every rank prints its own report; rank 0 also the one across ranks.
- ``--report-ranks none``: no rank prints (save with ``-o``, read later with ``--load``).

No rank other than 0 ever waits for anything. Messages of ranks other than 0 say their rank.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dlpt.analysis.ranks.merge import rank_set
from dlpt.cli.gather import gather
from dlpt.model.rank_paths import rank_path, session_rank
from dlpt.model.session import Session
from dlpt.renderers.terminal.ranks import print_ranks

__all__ = ["REPORT_RANKS", "DEFAULT_TIMEOUT_S", "Role", "role_of", "cross_rank_report"]

REPORT_RANKS = ("0", "all", "none")
DEFAULT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Role:
    """This process's part in the end of a job: its rank (None: a single process)."""

    rank: int | None
    world_size: int
    report_ranks: str

    @property
    def distributed(self) -> bool:
        return self.rank is not None and self.world_size > 1

    def path(self, path: str) -> str:
        """This rank's file for ``path`` (a single process keeps it; ``{rank}`` becomes 0)."""
        if self.rank is None:
            return rank_path(path, 0, 1)
        return rank_path(path, self.rank, self.world_size)

    @property
    def prints_own(self) -> bool:
        """Whether this rank prints its own report. Under the default policy rank 0's report
        across ranks takes its place when the ranks saved their sessions (the CLI decides)."""
        if self.report_ranks == "none":
            return False
        return self.report_ranks == "all" or not self.rank

    def gathers(self, saved: bool) -> bool:
        """Whether this rank waits for the others and prints the report across ranks."""
        return self.distributed and self.rank == 0 and saved and self.report_ranks != "none"

    @property
    def chatty(self) -> bool:
        """Whether this rank says what it saved (errors are always said)."""
        return self.report_ranks == "all" or not self.rank

    @property
    def prefix(self) -> str:
        return f"dlpt[rank {self.rank}]" if self.distributed and self.rank else "dlpt"


def role_of(session: Session, report_ranks: str) -> Role:
    """The role of the process that recorded ``session`` (``meta.distributed``)."""
    found = session_rank(session.meta)
    if found is None:
        return Role(None, 1, report_ranks)
    return Role(found[0], found[1], report_ranks)


def _started(session: Session) -> float:
    """When the profile started, as ``time.time()`` would say (0 when unknown: no file is too
    old then, the run id and the rank still have to match)."""
    text = session.meta.get("started_at")
    try:
        return datetime.datetime.fromisoformat(str(text)).timestamp()
    except ValueError:
        return 0.0


def cross_rank_report(
    template: str,
    role: Role,
    own_path: str,
    session: Session,
    timeout_s: float,
    say: Callable[[str], None],
    render: dict[str, Any],
    where: dict[str, Any] | None = None,
) -> None:
    """Rank 0: wait for the other ranks' sessions saved from ``template`` (the ``-o`` path),
    then print the report across ranks (``render``: threshold, depth, metric, ... as for one;
    ``where``: the report file and width, as for one)."""
    d = session.meta.get("distributed")
    run_id = d.get("run_id") if isinstance(d, dict) and isinstance(d.get("run_id"), str) else None
    assert role.rank is not None

    def waiting(ranks: list[int]) -> None:
        which = ", ".join(map(str, ranks)) if len(ranks) <= 8 else f"{len(ranks)} ranks"
        say(f"waiting up to {timeout_s:g} s for the sessions of rank{'s' if len(ranks) != 1 else ''} {which}")

    got = gather(
        template,
        role.world_size,
        (role.rank, own_path, session),
        timeout_s,
        _started(session),
        run_id,
        on_wait=waiting,
    )
    rs = rank_set([got.sessions[r] for r in sorted(got.sessions)], got.missing)
    print_ranks(
        rs,
        metric=render.get("metric"),
        threshold=render.get("threshold", 0.01),
        depth=render.get("depth"),
        show_all=bool(render.get("show_all")),
        ascii=bool(render.get("ascii")),
        **(where or {}),
    )
