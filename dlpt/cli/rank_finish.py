"""What the command line does at the end of one rank's run: where it saves, whether it prints,
and, on rank 0, the report across all ranks.

Every rank runs the same ``python -m dlpt ...`` under torchrun, so without care every rank
would print its full report to one terminal, interleaved, and save to one file. The policy:

- ``-o PATH``, ``--html`` and ``--export`` name one file per rank (:mod:`dlpt.files.rank_paths`).
- ``--report-ranks 0`` (default): only rank 0 prints: the report across ranks. Every other rank
  sends rank 0 a bounded summary of its session through torchrun's rendezvous store
  (:mod:`dlpt.cli.rank_store`: no shared filesystem needed); rank 0 waits for them at most
  ``--rank-timeout`` seconds, naming the ranks it did not get. Where there is no such store,
  rank 0 waits for the others' saved sessions instead (``-o``, :mod:`dlpt.cli.gather`), and
  without ``-o`` either it prints its own report.
- ``--report-ranks all``: every rank prints its own report; rank 0 also the one across ranks.
- ``--report-ranks none``: no rank prints (save with ``-o``, read later with ``--load``).

No rank other than 0 ever waits for anything. Messages of ranks other than 0 say their rank.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass

from dlpt.cli.gather import gather
from dlpt.cli.rank_store import RankStore
from dlpt.files.rank_paths import rank_path
from dlpt.frontend.options import ReportOptions
from dlpt.frontend.report_target import Where
from dlpt.model.rank_of import session_rank
from dlpt.model.session import Session
from dlpt.renderers.terminal.ranks import print_ranks
from dlpt.views.ranks import RankSet, RanksView, rank_set, with_lines

__all__ = [
    "Role",
    "role_of",
    "publish",
    "cross_rank_report",
    "gather_ranks",
]


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

    def gathers(self, saved: bool, store: bool = False) -> bool:
        """Whether this rank waits for the others and prints the report across ranks: rank 0,
        when the others send their summaries (``store``) or save their sessions (``saved``)."""
        return self.distributed and self.rank == 0 and (saved or store) and self.report_ranks != "none"

    @property
    def chatty(self) -> bool:
        """Whether this rank says what it saved (errors are always said)."""
        return self.report_ranks == "all" or not self.rank

    @property
    def prefix(self) -> str:
        return f"dlpt[rank {self.rank}]" if self.distributed and self.rank else "dlpt"


def role_of(session: Session, report_ranks: str) -> Role:
    """The role of the process that recorded ``session`` (``meta.distributed``)."""
    found = session_rank(session.typed_meta)
    if found is None:
        return Role(None, 1, report_ranks)
    return Role(found[0], found[1], report_ranks)


def _started(session: Session) -> float:
    """When the profile started, as ``time.time()`` would say (0 when unknown: no file is too
    old then, the run id and the rank still have to match)."""
    text = session.typed_meta.started_at
    try:
        return datetime.datetime.fromisoformat(str(text)).timestamp()
    except ValueError:
        return 0.0


def publish(store: RankStore, role: Role, session: Session, say: Callable[[str], None]) -> None:
    """A rank other than 0: its summary into the store for rank 0 (never raises)."""
    assert role.rank is not None
    try:
        store.publish(role.rank, session, role.world_size)
    except Exception as e:  # noqa: BLE001 - rank 0 names this rank missing; the program goes on
        say(f"could not send this rank's summary to rank 0: {type(e).__name__}: {e}")


def gather_ranks(
    template: str | None,
    role: Role,
    own_path: str,
    session: Session,
    timeout_s: float,
    say: Callable[[str], None],
    store: RankStore | None,
    stop: Callable[[], bool] = lambda: False,
) -> RankSet:
    """Rank 0: every rank's session (a summary, through the store) or saved file (``template``,
    the ``-o`` path), waiting at most ``timeout_s`` for the missing ones, and no longer once
    ``stop`` says so (a signal arrived)."""
    assert role.rank is not None

    def waiting(ranks: list[int]) -> None:
        which = ", ".join(map(str, ranks)) if len(ranks) <= 8 else f"{len(ranks)} ranks"
        say(f"waiting up to {timeout_s:g} s for rank{'s' if len(ranks) != 1 else ''} {which}")

    if store is not None:
        others = [r for r in range(role.world_size) if r != role.rank]
        got = store.collect(others, store.finish_number(role.rank), timeout_s, on_wait=waiting, stop=stop)
        loaded = [(own_path or f"rank {role.rank}", session)]
        loaded += [(f"rank {r} (summary)", s.session) for r, s in sorted(got.summaries.items())]
        rs = rank_set(loaded, got.missing)
        with_lines(rs, got.summaries)
        return rs
    assert template is not None
    d = session.typed_meta.distributed
    run_id = d.run_id if d is not None else None
    files = gather(
        template,
        role.world_size,
        (role.rank, own_path, session),
        timeout_s,
        _started(session),
        run_id,
        on_wait=waiting,
        stop=stop,
    )
    return rank_set([files.sessions[r] for r in sorted(files.sessions)], files.missing)


def cross_rank_report(view: RanksView, report: ReportOptions, where: Where | None = None) -> None:
    """Rank 0: print the report across the ranks gathered (``report``: threshold, depth, ASCII,
    as for one rank's; ``where``: the report file and width, as for one)."""
    print_ranks(
        view,
        threshold=report.threshold,
        depth=report.depth,
        ascii=report.ascii,
        file=where.file if where is not None else None,
        width=where.width if where is not None else None,
        color=where.color if where is not None else None,
    )
