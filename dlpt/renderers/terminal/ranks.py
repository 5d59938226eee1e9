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

from dlpt.model.units import separator
from dlpt.renderers.terminal.base import View
from dlpt.renderers.terminal.format import Fmt, label_parts
from dlpt.renderers.terminal.output import print_to
from dlpt.renderers.terminal.rank_spread import LinesView, SpreadTreeView
from dlpt.renderers.terminal.tables import Row, add_rows, make_table
from dlpt.views.ranks import RanksView, Site, Spread, Straggler, rank_ranges

__all__ = ["render_ranks", "print_ranks"]


MISSING_LINES = 16  # lines naming missing ranks and why; the rest are counted


def _across(s: Spread, fmt: Fmt) -> str:
    """A spread across ranks in words (the page's ranks.js words it alike)."""
    if s.ranks == 1:
        return fmt.time(s.high)
    if s.low == s.high:
        return f"{fmt.time(s.high)} on every rank"
    mid = f", median {fmt.time(s.median)}" if s.median is not None else ""
    return f"min {fmt.time(s.low)} (rank {s.low_rank}){mid}, max {fmt.time(s.high)} (rank {s.high_rank})"


class RanksHeader(View):
    """The job in a few lines: which ranks, which are missing, step time, imbalance, stragglers."""

    gap_before = False

    def __init__(self, view: RanksView, fmt: Fmt) -> None:
        super().__init__(fmt)
        self.view = view

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        v = self.view
        sep = separator(fmt.ascii)
        lines = [_title(v, fmt), _ranks_line(v, fmt, sep), *_missing_lines(v, fmt)]
        lines += [Text(fmt.clean(note), "bold yellow") for note in v.rs.notes]
        lines += _step_lines(v, fmt, sep)
        imb = v.imbalance()
        if imb is not None:
            t = Text(f"load imbalance ({imb.what} per step, (max - mean) / mean): ")
            t.append(f"{100 * imb.share:.1f}%", "bold red" if imb.share >= 0.1 else "bold")
            if imb.share >= 0.0005:
                t.append(f", most on rank {imb.rank} ({fmt.time(imb.rank_ns)})")
            lines.append(t)
        lines += [_straggler_line(s, fmt) for s in v.stragglers]
        if not v.judged:
            lines.append(_no_verdict(v))
        elif not v.stragglers and not v.unnamed and len(v.per_rank) > 1:
            lines.append(_no_straggler(v, fmt))
        lines += [_unnamed(s, fmt) for s in v.unnamed]
        versions = [f"{k} {fmt.clean(version)}" for k, version in v.versions]
        if versions:
            lines.append(Text(sep.join(versions), "dim"))
        lines.append(Text(f"values: {v.metric.label} per step of each rank", "dim"))
        yield Panel(Text("\n").join(lines), box=box.ASCII if fmt.ascii else box.ROUNDED, expand=True)


def _title(v: RanksView, fmt: Fmt) -> Text:
    title = Text("dlpt  across ranks  ", "bold")
    title.append(fmt.clean(shlex.join(str(a) for a in v.argv)) if v.argv else "(no argv)", "bold cyan")
    return title


def _ranks_line(v: RanksView, fmt: Fmt, sep: str) -> Text:
    rs = v.rs
    where = "; ".join(f"{fmt.clean(h)} ({rank_ranges(rr)})" for h, rr in v.hosts)
    return Text(
        f"{len(rs.ranks)} of {rs.world_size} rank{'s' if rs.world_size != 1 else ''}: "
        f"{rank_ranges(r.rank for r in rs.ranks)}{sep}hosts: {where}"
    )


def _missing_lines(v: RanksView, fmt: Fmt) -> list[Text]:
    lines = []
    by_reason = v.missing_by_reason
    for i, (why, gone_ranks) in enumerate(by_reason.items()):
        if i == MISSING_LINES:
            rest = sum(len(g) for g in list(by_reason.values())[i:])
            lines.append(Text(f"... and {rest:,} more ranks missing", "bold red"))
            break
        which = f"rank {gone_ranks[0]}" if len(gone_ranks) == 1 else f"ranks {rank_ranges(gone_ranks)}"
        lines.append(Text(f"{which} missing: {fmt.clean(why)}", "bold red"))
    return lines


def _step_lines(v: RanksView, fmt: Fmt, sep: str) -> list[Text]:
    lines = []
    walls, untraced = v.step_spread, v.untraced_spread
    steps = ", ".join(map(str, v.steps_counted))  # said also when a rank counted none
    step_time = f"{sep}step time per rank: {_across(walls, fmt)}" if walls is not None else ""
    lines.append(Text(f"steps profiled: {steps}{step_time}"))
    if untraced is not None:
        lines.append(
            Text(
                f"untraced step (each rank's median, measured without dlpt's cost): "
                f"{_across(untraced, fmt)}; the traced step above includes it"
            )
        )
    return lines


def _straggler_line(s: Straggler, fmt: Fmt) -> Text:
    t = Text(f"straggler: rank {s.rank}", "bold red")
    t.append(f" - the other ranks waited {fmt.time(s.waited_ns)} per step for it{_steps(s)}")
    if s.causes:
        main, _ = label_parts(s.causes[0].node, fmt)
        t.append("; its line: ")
        t.append_text(main)
        t.append(f" (+{fmt.time(s.causes[0].excess_ns)} {s.causes[0].metric.name})")
    if s.pace_text():
        t.append(f"; it also {s.pace_text()}")
    return t


class RankTable(View):
    """One row per rank: step time, compute and communication per step, exposed communication."""

    def __init__(self, view: RanksView, fmt: Fmt) -> None:
        super().__init__(fmt)
        self.view, self.rs, self.per_rank, self.waits = view, view.rs, view.per_rank, view.waits.per_rank
        self.stragglers = {s.rank for s in view.stragglers}
        self.unnamed = {s.rank: s.unnamed_label for s in view.unnamed}

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
            "waited",
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
            cells.append(fmt.time(self.waits.get(r.rank, 0.0)))
            label = Text(fmt.clean(self.view.where(r)))
            if r.rank in self.stragglers:
                label.append("  straggler", "bold red")
            elif r.rank in self.unnamed:  # not named: slower, or delayed outside the recorded work
                label.append("  " + self.unnamed[r.rank], "yellow")
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
    if site.paths > 1:
        where.append(f"  ({site.paths} call paths)", "dim")
    return where


def _no_straggler(report: RanksView, fmt: Fmt) -> Text:
    """The header's line when no rank is named: how close the ranks' waits are."""
    low, high = report.wait_spread
    step = report.step_ns
    t = Text("no straggler: ", "bold green")
    share = f"{100 * (high - low) / step:.1f}% of the step" if step > 0 else fmt.time(high - low)
    t.append(f"ranks' waits per step within {share} ({fmt.time(low)} to {fmt.time(high)})")
    n = report.fewest_steps
    t.append(f", over {n} counted step{'s' if n != 1 else ''} per rank or more", "dim")
    return t


def _no_verdict(report: RanksView) -> Text:
    """The header's line when some rank counted too few steps: no straggler verdict either way."""
    t = Text("stragglers not judged: ", "bold yellow")
    t.append(report.not_judged_why())
    return t


def _unnamed(s: Straggler, fmt: Fmt) -> Text:
    """A rank the others waited for with no line of its own to blame: it ran the same lines as
    they did, only slower, or its delay is outside the recorded work."""
    # With lines that stood out on too few samples, whether it is one cannot be told.
    t = Text("straggler not decided: " if s.unsure else "no straggler in the code: ", "bold yellow")
    t.append(f"rank {s.rank} {s.why_waited_for()}")
    t.append(f"; the others waited {fmt.time(s.waited_ns)} per step for it{_steps(s)}")
    return t


def _steps(s: Straggler) -> str:
    """' (in 19 of 19 steps)' where the arrivals say step by step, else ''."""
    text = s.steps_text()
    return f" ({text})" if text else ""


class StragglerView(View):
    """Each straggler: how long the others waited for it, what it did meanwhile (its lines that
    cost more than on the other ranks) and where the others waited."""

    def __init__(self, report: RanksView, fmt: Fmt, limit: int = 5) -> None:
        super().__init__(fmt)
        self.report, self.limit = report, limit

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        for s in self.report.stragglers:
            yield Text(f"Straggler: rank {s.rank}", "bold red")
            yield Text(f"  the other ranks waited for it {fmt.time(s.waited_ns)} per step{_steps(s)}")
            yield Text(f"  ({self.report.wait_rule})", "dim")
            if s.causes:
                own = f"  its lines of their own took {fmt.time(s.own_work_ns)} per step more than on others"
                pace = s.pace_text()
                yield Text(own + (f"; it also {pace}" if pace else ""))
            yield from self._causes(s, fmt, width)
            yield from self._sites(s, fmt, width)

    def _causes(self, s: Straggler, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        if not s.causes:
            yield Text(
                "  no line of its own costs more than on the others: its delay is outside the recorded work "
                "(another process on its CPU or GPU, a slower device, the network)",
                "dim",
            )
            return
        yield Text(f"  what rank {s.rank} did meanwhile (its own cost per step above the others' median):")
        t = make_table("", fmt)
        for col in (f"rank {s.rank}", "others", "more"):
            t.add_column(col, justify="right", no_wrap=True)
        t.add_column("line", no_wrap=True, overflow="ellipsis")
        rows = []
        for c in s.causes:
            main, detail = label_parts(c.node, fmt)
            label = Text("").append_text(main)
            if detail:
                label.append("  " + detail, "dim")
            label.append(f"  ({c.metric.name})", "dim")
            rows.append(Row((fmt.time(c.own_ns), fmt.time(c.others_ns), fmt.time(c.excess_ns)), label))
        add_rows(t, rows, width, fmt.ascii)
        yield t

    def _sites(self, s: Straggler, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        if not s.sites:
            return
        n = len(s.sites)
        # On a GPU a collective's kernel time includes spin overlapped with compute: the table
        # says where the wait landed, the header above says how long it was.
        overlap = ", overlap included" if self.report.gpu else ""
        yield Text(f"  where the wait landed ({n} collective{'s' if n != 1 else ''}; time inside{overlap}):")
        t = make_table("", fmt)
        for col in (f"rank {s.rank}", "others (median)", "longer"):
            t.add_column(col, justify="right", no_wrap=True)
        t.add_column("collective", no_wrap=True, overflow="ellipsis")
        rows = []
        for site in s.sites[: self.limit]:
            rows.append(
                Row(
                    (
                        fmt.time(site.times.get(s.rank, 0.0)),
                        fmt.time(RanksView.others_median(site, s.rank)),
                        fmt.time(site.waited_for(s.rank)),
                    ),
                    _site_label(site, fmt),
                )
            )
        add_rows(t, rows, width, fmt.ascii)
        yield t


def render_ranks(
    view: RanksView, threshold: float = 0.01, depth: int | None = None, ascii: bool = False
) -> RenderableType:
    """The cross-rank report of ``view`` (:func:`dlpt.views.ranks.ranks_view`) as a rich
    renderable (options as :func:`.report.render`'s)."""
    fmt = Fmt(steps=0, ascii=ascii, sources=view.sources)
    return Group(
        RanksHeader(view, fmt),
        RankTable(view, fmt),
        StragglerView(view, fmt),
        LinesView(view, fmt, threshold),
        SpreadTreeView(view, fmt, threshold, depth),
    )


def print_ranks(
    view: RanksView,
    console: Console | None = None,
    *,
    threshold: float = 0.01,
    depth: int | None = None,
    ascii: bool = False,
    file: IO[str] | None = None,
    width: int | None = None,
    color: bool | None = None,
) -> None:
    """Print :func:`render_ranks`'s report to ``console``, or else to ``file`` by
    :mod:`dlpt.renderers.terminal.output`'s rules (width, colour), as one session's report."""
    print_to(render_ranks(view, threshold, depth, ascii), console, file=file, width=width, color=color)
