"""Console reports of a Session: :func:`render` returns a rich renderable, :func:`print_report`
prints it. This is the stable name the API, the CLI and users import.

A report is assembled here from the views in :mod:`dlpt.renderers.terminal` (which never print by
themselves). It formats a :class:`~dlpt.analysis.view.SessionView`: the session folded and
analysed once per run, which the HTML report and the exports of the same run format too, so they
agree on what a row is, and nothing is folded or analysed twice. Given a session, :func:`render`
views it first (with its ``show_all`` and ``peak_tflops``); given a view made with other options
than those asked for, it views the view's session afresh.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

from rich.console import Console, Group, RenderableType
from rich.text import Text

from dlpt.analysis.communication import tree_columns
from dlpt.analysis.report.outside import outside_metric
from dlpt.analysis.view import SessionView, view_of
from dlpt.errors import UsageError
from dlpt.model.gc_pause import gc_paused
from dlpt.model.metrics import METRICS, Metric, default_metric, get_metric
from dlpt.model.session import Session
from dlpt.model.tree import Node
from dlpt.renderers.terminal.base import View
from dlpt.renderers.terminal.communication import CollectivesTable
from dlpt.renderers.terminal.compile_view import CompileView
from dlpt.renderers.terminal.format import Fmt
from dlpt.renderers.terminal.grid import LazyGrid
from dlpt.renderers.terminal.header import CompactHeader, Header
from dlpt.renderers.terminal.intervals import intervals_table
from dlpt.renderers.terminal.output import print_to
from dlpt.renderers.terminal.suggestions import SuggestionsView
from dlpt.renderers.terminal.summary import ApiTable, CopyTable, KernelTable, SyncTable
from dlpt.renderers.terminal.tree_view import MAX_DEPTH, FlatView, TreeView
from dlpt.renderers.terminal.work_tables import WorkView
from dlpt.trees.processors import invert, limit_depth, mark_lines, prune

__all__ = ["render", "print_report", "VIEWS"]

VIEWS = ("tree", "bottom-up", "flat", "kernels", "summary", "suggestions", "all")
#: Suggestions shown in the default tree view (``--view suggestions`` lists them all).
TREE_SUGGESTIONS = 5
#: Rows of the work outside steps shown unless ``verbose`` (its hottest path first).
OUTSIDE_ROWS = 8


def _check(view: str, threshold: float, depth: int | None, peak_tflops: float | None = None) -> None:
    if view not in VIEWS:
        raise UsageError(f"unknown view {view!r}; choose one of: {', '.join(VIEWS)}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold < 1:
        raise UsageError(f"threshold must be a fraction in [0, 1), got {threshold!r}")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
        raise UsageError(f"depth must be a positive integer, got {depth!r}")
    if peak_tflops is not None and (
        isinstance(peak_tflops, bool)
        or not isinstance(peak_tflops, (int, float))
        or not 0 < peak_tflops < float("inf")
    ):
        raise UsageError(f"peak_tflops must be a positive number of TFLOP/s, got {peak_tflops!r}")


def render(
    session: Session | SessionView,
    view: str = "tree",
    metric: str | Metric | None = None,
    threshold: float = 0.01,
    depth: int | None = None,
    show_all: bool | None = None,
    ascii: bool = False,
    peak_tflops: float | None = None,
    verbose: bool = False,
) -> RenderableType:
    """Render ``session`` (or the run's view of it: :mod:`dlpt.analysis.view`) as a rich renderable.

    view: "tree" (header; the work outside steps, folded; with GPU data, kernel and copy
        summaries; the first suggestions; the top-down tree last, so that a terminal shows its
        hot lines when the report ends), "bottom-up", "flat" (by source line, op, kernel),
        "kernels", "summary", "suggestions" (every suggestion and the work tables) or "all".
    metric: a name in ``dlpt.model.metrics.METRICS``; default "gpu" if the session has GPU time,
        else "cpu".
    threshold: hide tree nodes / flat rows below this fraction of the total.
    depth: show at most this many levels below the root.
    show_all: keep library frames (torch, site-packages, stdlib, dlpt) instead of folding them
        into their callers (None: as the view given does; a session's are folded).
    ascii: ASCII output even on a UTF-8 console (it is automatic on other encodings).
    peak_tflops: the GPU's dense peak in TFLOP/s for MFU and % of peak, instead of the
        datasheet table's (dlpt.analysis.peaks); None: the view's, or the datasheet's.
    verbose: the whole header (every fact: sampler diagnostics, unused GPUs, versions, dlpt's
        cost) instead of the compact one, and the work outside steps unfolded.
    Raises UsageError on an unknown view or metric or out-of-range option.
    """
    _check(view, threshold, depth, peak_tflops)
    with gc_paused():
        return _render(
            view_of(session, show_all, peak_tflops), view, metric, threshold, depth, ascii, verbose
        )


def _render(
    sv: SessionView,
    view: str,
    metric: str | Metric | None,
    threshold: float,
    depth: int | None,
    ascii: bool,
    verbose: bool = False,
) -> RenderableType:
    session, show_all, markers = sv.session, sv.options.show_all, sv.markers
    totals = Node("root", "<root>")  # the whole session's totals, for the header
    totals.inclusive = sv.totals
    # The totals pick the default metric (GPU time if there is any, else CPU op time) before
    # the tree view's tree is built: pruned by a metric with no total, it would keep every node.
    m = get_metric(metric) if metric is not None else default_metric(totals)
    shown = sv.shown_tree(m, threshold) if view in ("tree", "all") else None
    sources = session.meta.get("sources")
    fmt = Fmt(
        steps=session.typed_meta.profiled_steps,
        ascii=ascii,
        sources=sources if isinstance(sources, dict) else {},
    )
    gpu = METRICS["gpu"](totals.inclusive) > 0 or totals.inclusive.get("kernels", 0) > 0
    total = m(totals.inclusive)
    # Suggestions are looked up (or derived) only for the views that show them.
    shows_suggestions = view in ("tree", "suggestions", "all")
    report = sv.report(ascii, suggestions=shows_suggestions)
    note = _note(m, fmt, threshold, depth, show_all)
    parts: list[RenderableType] = [Header(report, fmt, [note]) if verbose else CompactHeader(report, fmt)]
    comm_columns = tree_columns(totals.inclusive)  # communication beside compute, per row
    suggestions = SuggestionsView(report.suggestions, fmt, TREE_SUGGESTIONS if view == "tree" else None)
    if shows_suggestions and view != "tree":
        parts.append(suggestions)

    def tree() -> RenderableType:
        title = "Top-down (callees below their callers)"
        if total == 0:
            return _nothing(m, title, session, fmt, outside=report.outside is not None and not report.steps)
        assert shown is not None
        capped = None if depth else MAX_DEPTH  # --depth given: that is the limit, as asked
        return TreeView(
            limit_depth(mark_lines(shown, markers), depth),
            m,
            fmt,
            title,
            gpu,
            max_depth=capped,
            extra=comm_columns,
        )

    def outside() -> list[RenderableType]:
        """The work outside counted steps, as totals (once-work, never per step)."""
        root = report.outside
        if root is None:
            return []
        mo = m if metric is not None else outside_metric(root)
        if mo(root.inclusive) == 0:
            return []
        ofmt = Fmt(steps=0, ascii=ascii, sources=fmt.sources)
        title = "Outside steps (once: set-up, warm-up and the end of the run; totals, not per step)"
        tree = limit_depth(mark_lines(prune(root, mo, threshold), markers), depth)
        rows = None if verbose or view == "all" else OUTSIDE_ROWS
        return [TreeView(tree, mo, ofmt, title, gpu, max_depth=None if depth else MAX_DEPTH, max_rows=rows)]

    def bottom_up() -> RenderableType:
        title = "Bottom-up (callers below)"
        if total == 0:
            return _nothing(m, title, session, fmt)
        inv = invert(sv.whole, m)
        return TreeView(limit_depth(prune(inv, m, threshold), depth), m, fmt, title, gpu)

    def flat() -> list[RenderableType]:
        flats = sv.flats
        out: list[RenderableType] = [
            FlatView(flats["line"], m, fmt, "By source line", gpu, total, threshold),
            FlatView(flats["op"], m, fmt, "By op", gpu, total, threshold),
        ]
        if gpu:
            out.append(FlatView(flats["kernel"], m, fmt, "By kernel", gpu, total, threshold))
        halves = sv.line_halves  # per-step spreads saved (format 3)
        if halves is not None:
            out.extend(intervals_table(flats["line"], halves, m, fmt, total, threshold))
        return out

    # Only the tables a view shows read their rows from the view (each computed once per run).
    def syncs() -> RenderableType:
        return SyncTable(sv.syncs, fmt, session.typed_meta.wall)

    def kernels() -> RenderableType:
        return KernelTable(sv.kernels, fmt, sv.gpu_total)

    def gpu_tables() -> list[RenderableType]:
        return [kernels(), CopyTable(sv.copies, fmt)]

    def collectives() -> RenderableType:
        return CollectivesTable(sv.collectives, fmt)

    def api() -> RenderableType:
        return ApiTable(sv.api, fmt)

    if report.compile is not None and view in ("tree", "summary", "all"):
        parts.append(CompileView(report.compile, fmt))
    if view == "tree":
        # What matters last: a terminal keeps the end of the report on screen when the run ends.
        parts.extend(outside())
        parts.extend([*gpu_tables(), syncs()] if gpu else [syncs()])
        parts.append(collectives())
        parts.append(suggestions)
        if not verbose:  # the verbose header says it
            parts.append(Text(f"\n{note}", "dim"))
        parts.append(tree())
    elif view == "bottom-up":
        parts.append(bottom_up())
    elif view == "flat":
        parts.extend(flat())
    elif view == "kernels":
        parts.append(kernels() if gpu else _no_gpu(session, fmt))
    elif view == "suggestions":
        if not report.suggestions:
            parts.append(Text("\nNo suggestions: no rule found a measured gain in this run.", "dim"))
        parts.append(WorkView(sv.work, fmt))
    elif view == "summary":
        parts.extend([*gpu_tables(), syncs()] if gpu else [_no_gpu(session, fmt), syncs()])
        parts.extend([collectives(), api()])
    else:  # all
        parts.extend(
            [
                tree(),
                *outside(),
                bottom_up(),
                *flat(),
                *gpu_tables(),
                syncs(),
                collectives(),
                api(),
                WorkView(sv.work, fmt),
            ]
        )
    return Group(*parts)


def _nothing(m: Metric, title: str, session: Session, fmt: Fmt, outside: bool = False) -> Text:
    """Instead of a tree of zeros: the metric has no value anywhere in the session (or in its
    counted steps, when work ran outside them: then the outside section follows)."""
    if outside:
        return Text(
            f"\n{title}: no {m.label} in counted steps (no step was counted: see the work outside "
            "steps below; --skip-first 0 counts every step)",
            "yellow",
        )
    text = Text(f"\n{title}: no {m.label} recorded", "yellow")
    if m.name in ("gpu", "kernel", "copy", "memset", "kernels", "bytes"):
        gpu = session.typed_meta.gpu
        reason = gpu.reason if gpu is not None else None
        text.append(f" ({fmt.clean(reason)})" if reason else "")  # a session string
        text.append("; --metric cpu ranks by CPU op time")
    return text


def _note(m: Metric, fmt: Fmt, threshold: float, depth: int | None, show_all: bool) -> str:
    """What the numbers are and what is hidden, for the header."""
    shown = f"rows >= {threshold * 100:g}% of the total" if threshold > 0 else "all rows"
    lib = "shown" if show_all else "folded into their callers"
    note = f"values: {m.label}{' per step' if fmt.steps else ''}; {shown}; library frames {lib}"
    return note + (f"; depth <= {depth}" if depth else "")


def _no_gpu(session: Session, fmt: Fmt) -> Text:
    gpu = session.typed_meta.gpu
    reason = gpu.reason if gpu is not None else None
    return Text("\nNo GPU activity recorded" + (f" ({fmt.clean(reason)})." if reason else "."), "yellow")


def print_report(
    session: Session | SessionView,
    console: Console | None = None,
    *,
    view: str = "tree",
    metric: str | Metric | None = None,
    threshold: float = 0.01,
    depth: int | None = None,
    show_all: bool | None = None,
    ascii: bool = False,
    peak_tflops: float | None = None,
    verbose: bool = False,
    file: IO[str] | None = None,
    width: int | None = None,
    color: bool | None = None,
) -> None:
    """Print :func:`render`'s report to ``console``, or else to ``file`` (stdout when None)
    ``width`` columns wide and coloured by :mod:`dlpt.renderers.terminal.output`'s rules (off a
    terminal: as wide as its content; ``color=False``: never)."""
    renderable = render(
        session,
        view=view,
        metric=metric,
        threshold=threshold,
        depth=depth,
        show_all=show_all,
        ascii=ascii,
        peak_tflops=peak_tflops,
        verbose=verbose,
    )
    print_to(renderable, console, file=file, width=width, color=color, pieces=_pieces)


def _pieces(renderable: RenderableType, console: Console) -> Iterator[RenderableType]:
    """``renderable`` as pieces to print one after the other, with the same output as printing
    it whole: rich renders all of one ``print`` into memory before writing it, so a view of a
    million rows is printed a thousand lines at a time."""
    if isinstance(renderable, Group):
        for part in renderable.renderables:
            yield from _pieces(part, console)
    elif isinstance(renderable, View):
        for part in renderable.pieces(console.options):
            yield from _pieces(part, console)
    elif isinstance(renderable, LazyGrid):
        yield from renderable.chunks()
    else:
        yield renderable
