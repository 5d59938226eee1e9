"""The cross-rank report: ``dlpt --load 'run.rank*.json'``, and what rank 0 prints at the end of a
job whose ranks saved their sessions on a shared path.

It reads like one rank's report, for the whole job: a header (the ranks, those missing and why,
the step time and the load imbalance across ranks, the stragglers), a table of the ranks, the
stragglers' evidence, the lines with the largest cost on any rank, and the merged tree, every
row with its min / median / max across ranks and the slowest rank.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from typing import IO

from rich import box
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from dlpt.analysis.communication import COMM, WAIT
from dlpt.analysis.ranks.merge import (
    RankSet,
    RankTotals,
    imbalance,
    line_spread,
    median,
    report_trees,
    spread_tree,
    totals,
)
from dlpt.analysis.ranks.stragglers import Site, Straggler, collective_sites, find_stragglers
from dlpt.analysis.report.run import rank_label
from dlpt.model.gc_pause import gc_paused
from dlpt.model.meta import program_argv
from dlpt.model.processors import METRICS, Metric, get_metric
from dlpt.renderers.terminal.base import View
from dlpt.renderers.terminal.format import Fmt, label_parts
from dlpt.renderers.terminal.output import print_to
from dlpt.renderers.terminal.rank_spread import LinesView, SpreadTreeView
from dlpt.renderers.terminal.tables import Row, add_rows, make_table

__all__ = ["render_ranks", "print_ranks"]


MISSING_LINES = 16  # lines naming missing ranks and why; the rest are counted


def _ranges(ranks: Iterable[int]) -> str:
    """0,1,2,5 -> "0-2, 5"."""
    out: list[str] = []
    run: list[int] = []
    for r in sorted(ranks):
        if run and r == run[-1] + 1:
            run.append(r)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)))
        run = [r]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)))
    return ", ".join(out)


class RanksHeader(View):
    """The job in a few lines: which ranks, which are missing, step time, imbalance, stragglers."""

    gap_before = False

    def __init__(
        self,
        rs: RankSet,
        per_rank: dict[int, RankTotals],
        stragglers: list[Straggler],
        metric: Metric,
        fmt: Fmt,
    ) -> None:
        super().__init__(fmt)
        self.rs, self.per_rank, self.stragglers, self.metric = rs, per_rank, stragglers, metric

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        rs, per_rank = self.rs, self.per_rank
        sep = " - " if fmt.ascii else " \u00b7 "
        first = rs.ranks[0].session.meta if rs.ranks else {}
        argv = program_argv(first)
        title = Text("dlpt  across ranks  ", "bold")
        title.append(fmt.clean(shlex.join(str(a) for a in argv)) if argv else "(no argv)", "bold cyan")
        lines = [title]
        hosts: dict[str, list[int]] = {}
        for r in rs.ranks:
            hosts.setdefault(r.host or "?", []).append(r.rank)
        where = "; ".join(f"{fmt.clean(h)} ({_ranges(rr)})" for h, rr in sorted(hosts.items()))
        lines.append(
            Text(
                f"{len(rs.ranks)} of {rs.world_size} rank{'s' if rs.world_size != 1 else ''}: "
                f"{_ranges(r.rank for r in rs.ranks)}{sep}hosts: {where}"
            )
        )
        by_reason: dict[str, list[int]] = {}  # thousands of ranks may be missing for one reason
        for gone, why in rs.missing.items():
            by_reason.setdefault(why, []).append(gone)
        for i, (why, gone_ranks) in enumerate(by_reason.items()):
            if i == MISSING_LINES:
                rest = sum(len(g) for g in list(by_reason.values())[i:])
                lines.append(Text(f"... and {rest:,} more ranks missing", "bold red"))
                break
            which = f"rank {gone_ranks[0]}" if len(gone_ranks) == 1 else f"ranks {_ranges(gone_ranks)}"
            lines.append(Text(f"{which} missing: {fmt.clean(why)}", "bold red"))
        for note in rs.notes:
            lines.append(Text(fmt.clean(note), "bold yellow"))
        steps = sorted({t.steps for t in per_rank.values()})
        walls = {r: t.step_wall_ns for r, t in per_rank.items() if t.step_wall_ns > 0}
        if walls:
            slow = max(walls, key=lambda r: (walls[r], -r))
            mid = fmt.time(median(list(walls.values())))
            lines.append(
                Text(
                    f"steps profiled: {', '.join(map(str, steps))}{sep}step time (each rank's mean): "
                    f"median {mid}, max {fmt.time(walls[slow])} (rank {slow})"
                )
            )
        untraced = {r: t.untraced_step_ns for r, t in per_rank.items() if t.untraced_step_ns}
        if untraced:
            slow = max(untraced, key=lambda r: (untraced[r] or 0, -r))
            mid = fmt.time(median([v for v in untraced.values() if v]))
            lines.append(
                Text(
                    f"untraced step (each rank's median, measured without dlpt's cost): median {mid}, "
                    f"max {fmt.time(untraced[slow] or 0)} (rank {slow}); the traced step above includes it"
                )
            )
        work = {r: t.compute_ns for r, t in per_rank.items()}
        imb = imbalance(work)
        if imb is not None:
            what = "GPU compute" if any(t.gpu for t in per_rank.values()) else "CPU op time outside waits"
            t = Text(f"load imbalance ({what} per step, (max - mean) / mean): ")
            t.append(f"{100 * imb[0]:.1f}%", "bold red" if imb[0] >= 0.1 else "bold")
            if imb[0] >= 0.0005:
                t.append(f", most on rank {imb[1]} ({fmt.time(work[imb[1]])})")
            lines.append(t)
        for s in self.stragglers:
            t = Text(f"straggler: rank {s.rank}", "bold red")
            t.append(f" - the other ranks waited {fmt.time(s.waited_ns)} per step for it")
            lines.append(t)
        first_versions = [f"{k} {fmt.clean(str(first[k]))}" for k in ("torch", "dlpt") if first.get(k)]
        if first_versions:
            lines.append(Text(sep.join(first_versions), "dim"))
        lines.append(Text(f"values: {self.metric.label} per step of each rank", "dim"))
        yield Panel(Text("\n").join(lines), box=box.ASCII if fmt.ascii else box.ROUNDED, expand=True)


class RankTable(View):
    """One row per rank: step time, compute and communication per step, exposed communication."""

    def __init__(self, rs: RankSet, per_rank: dict[int, RankTotals], stragglers: set[int], fmt: Fmt) -> None:
        super().__init__(fmt)
        self.rs, self.per_rank, self.stragglers = rs, per_rank, stragglers

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        gpu = any(t.gpu for t in self.per_rank.values())
        exposed = any(t.exposed_ns for t in self.per_rank.values())
        untraced = any(t.untraced_step_ns for t in self.per_rank.values())
        t = make_table("Ranks", fmt, "  per step")
        cols = [
            "rank",
            "step",
            *(["untraced"] if untraced else []),
            "compute",
            "comm" if gpu else "wait",
            *(["exposed"] if exposed else []),
        ]
        for col in cols:
            t.add_column(col, justify="right", no_wrap=True)
        t.add_column("where", no_wrap=True, overflow="ellipsis")
        rows = []
        for r in self.rs.ranks:
            tot = self.per_rank[r.rank]
            cells: list[str | Text] = [
                str(r.rank),
                fmt.time(tot.step_wall_ns),
                *([fmt.time(tot.untraced_step_ns) if tot.untraced_step_ns else ""] if untraced else []),
                fmt.time(tot.compute_ns),
                fmt.time(tot.communication_ns) if tot.communication_ns else "",
            ]
            if exposed:
                cells.append(fmt.time(tot.exposed_ns) if tot.exposed_ns else "")
            label = Text(fmt.clean(rank_label(r.session.meta) or r.path))
            if r.rank in self.stragglers:
                label.append("  straggler", "bold red")
            rows.append(Row(cells, label))
        add_rows(t, rows, width, fmt.ascii)
        yield t


def _site_label(site: Site, fmt: Fmt) -> Text:
    where = Text("")
    if site.line is not None:
        main, detail = label_parts(site.line.node, fmt)
        where.append_text(main)
        if detail:
            where.append("  " + detail, "dim")
        where.append("  ")
    where.append(fmt.clean(site.node.node.name), "yellow")
    return where


class StragglerView(View):
    """Each straggler's evidence: where the others waited for it, and whether its own work is
    longer (a slower rank) or not (its delay is outside the recorded work)."""

    def __init__(self, stragglers: list[Straggler], sites: list[Site], fmt: Fmt, limit: int = 5) -> None:
        super().__init__(fmt)
        self.stragglers, self.sites, self.limit = stragglers, sites, limit

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        if not self.sites:
            return
        if not self.stragglers:
            top = max(self.sites, key=lambda s: s.waited)
            yield Text("Stragglers", "bold")
            yield Text(
                f"  none: the longest any rank was waited for at a collective is {fmt.time(top.waited)} "
                f"per step (rank {top.last}), under the threshold",
                "dim",
            )
            return
        for s in self.stragglers:
            yield Text(f"Straggler: rank {s.rank}", "bold red")
            yield Text(
                f"  the other ranks waited for it {fmt.time(s.waited_ns)} per step, at "
                f"{len(s.sites)} collective{'s' if len(s.sites) != 1 else ''} where it arrived last:"
            )
            t = make_table("", fmt)
            for col in (f"rank {s.rank}", "others (median)", "waited"):
                t.add_column(col, justify="right", no_wrap=True)
            t.add_column("collective", no_wrap=True, overflow="ellipsis")
            rows = []
            for site in s.sites[: self.limit]:
                others = [v for r, v in site.times.items() if r != s.rank]
                rows.append(
                    Row(
                        (fmt.time(site.times[s.rank]), fmt.time(median(others)), fmt.time(site.waited)),
                        _site_label(site, fmt),
                    )
                )
            add_rows(t, rows, width, fmt.ascii)
            yield t
            longer = s.compute_ns - s.others_compute_ns
            work = f"{fmt.time(s.compute_ns)} per step, the others {fmt.time(s.others_compute_ns)} (median)"
            outside = (
                "outside the recorded work (host-side Python, data loading, I/O, another process on "
                "its CPU or GPU)"
            )
            if s.others_compute_ns > 0 and longer >= 0.5 * s.waited_ns:
                why = f"  its own work is longer ({work}): it computes more, or slower"
            elif longer > 0:
                why = (
                    f"  its own recorded work ({work}) explains {fmt.time(longer)} of the wait; "
                    f"the rest of its delay is {outside}"
                )
            else:
                why = f"  its own recorded work is not longer ({work}): its delay is {outside}"
            yield Text(why, "dim")


def render_ranks(
    rs: RankSet,
    metric: str | Metric | None = None,
    threshold: float = 0.01,
    depth: int | None = None,
    show_all: bool = False,
    ascii: bool = False,
) -> RenderableType:
    """The cross-rank report of ``rs`` as a rich renderable (options as :func:`.report.render`'s)."""
    with gc_paused():
        gpu = any(
            METRICS["gpu"](n["m"]) > 0 for r in rs.ranks for n in r.session.nodes if n["kind"] == "kernel"
        )
        m = get_metric(metric) if metric is not None else METRICS["gpu" if gpu else "cpu"]
        fmt = Fmt(steps=0, ascii=ascii, sources=_sources(rs))
        per_rank = {r.rank: totals(r, gpu) for r in rs.ranks}
        trees = report_trees(rs, show_all)
        root = spread_tree(rs, trees)
        sites = collective_sites(rs, root, gpu)
        stragglers = find_stragglers(rs, sites, per_rank)
        comm = COMM if gpu else WAIT
        ranks = rs.by_rank()
        has_comm = any(t.communication_ns for t in per_rank.values())
        total = median(list(root.values(m, ranks).values()))
        return Group(
            RanksHeader(rs, per_rank, stragglers, m, fmt),
            RankTable(rs, per_rank, {s.rank for s in stragglers}, fmt),
            StragglerView(stragglers, sites, fmt),
            LinesView(line_spread(rs, trees), ranks, m, fmt, threshold, total, comm if has_comm else None),
            SpreadTreeView(root, ranks, m, fmt, threshold, depth, comm if has_comm else None),
        )


def _sources(rs: RankSet) -> dict[str, dict[str, str]]:
    """The ranks' saved source text, merged (the same code; the first rank's text wins)."""
    out: dict[str, dict[str, str]] = {}
    for r in reversed(rs.ranks):
        src = r.session.meta.get("sources")
        if isinstance(src, dict):
            for file, lines in src.items():
                if isinstance(lines, dict):
                    out.setdefault(file, {}).update(lines)
    return out


def print_ranks(
    rs: RankSet,
    console: Console | None = None,
    *,
    metric: str | Metric | None = None,
    threshold: float = 0.01,
    depth: int | None = None,
    show_all: bool = False,
    ascii: bool = False,
    file: IO[str] | None = None,
    width: int | None = None,
    color: bool | None = None,
) -> None:
    """Print :func:`render_ranks`'s report to ``console``, or else to ``file`` by
    :mod:`dlpt.renderers.terminal.output`'s rules (width, colour), as one session's report."""
    renderable = render_ranks(rs, metric, threshold, depth, show_all, ascii)
    print_to(renderable, console, file=file, width=width, color=color)
