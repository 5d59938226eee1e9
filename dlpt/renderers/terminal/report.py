"""Console reports of a Session: :func:`render` returns a rich renderable, :func:`print_report`
prints it. This is the stable name the API, the CLI and users import.

A report is assembled here from the views in :mod:`dlpt.renderers.terminal` (which never print by
themselves). It formats a :class:`~dlpt.views.run.RunView`: the session folded and
analysed once per run, which the HTML report and the exports of the same run format too, so they
agree on what a row is, and nothing is folded or analysed twice. Given a session, :func:`render`
views it first (with its ``show_all`` and ``peak_tflops``); given a view made with other options
than those asked for, it views the view's session afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO

from rich.console import Console, Group, RenderableType
from rich.text import Text

from dlpt.errors import UsageError
from dlpt.model.gc_pause import gc_paused
from dlpt.model.metrics import Metric
from dlpt.model.session import Session
from dlpt.renderers.terminal.base import View
from dlpt.renderers.terminal.communication import CollectivesTable
from dlpt.renderers.terminal.compile_view import CompileView
from dlpt.renderers.terminal.format import Fmt
from dlpt.renderers.terminal.grid import LazyGrid
from dlpt.renderers.terminal.header import CompactHeader, Header
from dlpt.renderers.terminal.hot_lines import HOT_LINES, HotLinesView
from dlpt.renderers.terminal.intervals import intervals_table
from dlpt.renderers.terminal.output import print_to
from dlpt.renderers.terminal.suggestions import SuggestionsView
from dlpt.renderers.terminal.summary import ApiTable, CopyTable, KernelTable, SyncTable
from dlpt.renderers.terminal.tree_view import MAX_DEPTH, FlatView, TreeView
from dlpt.renderers.terminal.work_tables import WorkView
from dlpt.views.run import Report, RunView, view_of

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
    session: Session | RunView,
    view: str = "tree",
    metric: str | Metric | None = None,
    threshold: float = 0.01,
    depth: int | None = None,
    show_all: bool | None = None,
    ascii: bool = False,
    peak_tflops: float | None = None,
    verbose: bool = False,
) -> RenderableType:
    """Render ``session`` (or the run's view of it: :mod:`dlpt.views.run`) as a rich renderable.

    view: "tree" (header; the work outside steps, folded; with GPU data, kernel and copy
        summaries; the first suggestions; the top-down tree, then the hottest lines by own cost
        last, so that a terminal shows them when the report ends), "bottom-up", "flat" (by
        source line, op, kernel), "kernels", "summary", "suggestions" (every suggestion and the
        work tables) or "all".
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


@dataclass(frozen=True)
class _Report:
    """What every section of one report reads: the view, the metric it chose, the options."""

    sv: RunView
    view: str
    asked: str | Metric | None  # the metric asked for (None: the view's choice)
    m: Metric
    fmt: Fmt
    threshold: float
    depth: int | None
    ascii: bool
    verbose: bool
    report: Report

    @property
    def total(self) -> int:
        return self.m(self.sv.totals)

    @property
    def note(self) -> str:
        return _note(self.m, self.fmt, self.threshold, self.depth, self.sv.options.show_all)


def _render(
    sv: RunView,
    view: str,
    metric: str | Metric | None,
    threshold: float,
    depth: int | None,
    ascii: bool,
    verbose: bool = False,
) -> RenderableType:
    # Suggestions are looked up (or derived) only for the views that show them.
    shows_suggestions = view in ("tree", "suggestions", "all")
    r = _Report(
        sv,
        view,
        metric,
        sv.metric(metric),
        Fmt(steps=sv.session.typed_meta.profiled_steps, ascii=ascii, sources=sv.sources),
        threshold,
        depth,
        ascii,
        verbose,
        sv.report(ascii, suggestions=shows_suggestions),
    )
    header = Header(r.report, r.fmt, [r.note]) if verbose else CompactHeader(r.report, r.fmt)
    parts: list[RenderableType] = [header]
    if shows_suggestions and view != "tree":
        parts.append(_suggestions(r))
    if r.report.compile is not None and view in ("tree", "summary", "all"):
        parts.append(CompileView(r.report.compile, r.fmt))
    parts.extend(_SECTIONS[view](r))
    return Group(*parts)


def _suggestions(r: _Report) -> RenderableType:
    return SuggestionsView(r.report.suggestions, r.fmt, TREE_SUGGESTIONS if r.view == "tree" else None)


def _tree(r: _Report) -> RenderableType:
    title = "Top-down (callees below their callers)"
    if r.total == 0:
        outside = r.report.outside is not None and not r.report.steps
        return _nothing(r.m, title, r.sv.session, r.fmt, outside=outside)
    capped = None if r.depth else MAX_DEPTH  # --depth given: that is the limit, as asked
    tree = r.sv.top_down(r.m, r.threshold, r.depth)
    return TreeView(tree, r.m, r.fmt, title, r.sv.has_gpu, max_depth=capped, extra=r.sv.comm_columns)


def _outside(r: _Report) -> list[RenderableType]:
    """The work outside counted steps, as totals (once-work, never per step)."""
    shaped = r.sv.outside_tree(r.asked, r.threshold, r.depth)
    if shaped is None:
        return []
    tree, m = shaped
    fmt = Fmt(steps=0, ascii=r.ascii, sources=r.fmt.sources)
    title = "Outside steps (once: set-up, warm-up and the end of the run; totals, not per step)"
    rows = None if r.verbose or r.view == "all" else OUTSIDE_ROWS
    depth = None if r.depth else MAX_DEPTH
    return [TreeView(tree, m, fmt, title, r.sv.has_gpu, max_depth=depth, max_rows=rows)]


def _bottom_up(r: _Report) -> RenderableType:
    title = "Bottom-up (callers below)"
    if r.total == 0:
        return _nothing(r.m, title, r.sv.session, r.fmt)
    return TreeView(r.sv.bottom_up(r.m, r.threshold, r.depth), r.m, r.fmt, title, r.sv.has_gpu)


def _flat(r: _Report) -> list[RenderableType]:
    flats, m, fmt, gpu, total, threshold = r.sv.flats, r.m, r.fmt, r.sv.has_gpu, r.total, r.threshold
    out: list[RenderableType] = [
        FlatView(flats["line"], m, fmt, "By source line", gpu, total, threshold),
        FlatView(flats["op"], m, fmt, "By op", gpu, total, threshold),
    ]
    if gpu:
        out.append(FlatView(flats["kernel"], m, fmt, "By kernel", gpu, total, threshold))
    halves = r.sv.line_halves  # per-step spreads saved (format 3)
    if halves is not None:
        out.extend(intervals_table(flats["line"], halves, m, fmt, total, threshold))
    return out


# Only the tables a view shows read their rows from the view (each computed once per run).
def _syncs(r: _Report) -> RenderableType:
    return SyncTable(r.sv.syncs, r.fmt, r.sv.session.typed_meta.wall)


def _kernels(r: _Report) -> RenderableType:
    return KernelTable(r.sv.kernels, r.fmt, r.sv.gpu_total)


def _gpu_tables(r: _Report) -> list[RenderableType]:
    return [_kernels(r), CopyTable(r.sv.copies, r.fmt)]


def _collectives(r: _Report) -> RenderableType:
    return CollectivesTable(r.sv.collectives, r.fmt)


def _api(r: _Report) -> RenderableType:
    return ApiTable(r.sv.api, r.fmt)


def _work(r: _Report) -> RenderableType:
    return WorkView(r.sv.work, r.fmt)


def _hot_lines(r: _Report) -> list[RenderableType]:
    """The few hottest lines by own cost (none when the tree has nothing to show)."""
    if r.total == 0:
        return []
    rows = r.sv.hottest_lines(r.m, HOT_LINES, r.threshold)
    return [HotLinesView(rows, r.m, r.fmt, r.total, r.sv.line_halves)]


def _tree_view(r: _Report) -> list[RenderableType]:
    """What matters last: a terminal keeps the end of the report on screen when the run ends,
    so the tree ends with the hottest lines (which line costs most, whatever the tree's shape)."""
    gpu = [*_gpu_tables(r), _syncs(r)] if r.sv.has_gpu else [_syncs(r)]
    note = [] if r.verbose else [Text(f"\n{r.note}", "dim")]  # the verbose header says it
    return [*_outside(r), *gpu, _collectives(r), _suggestions(r), *note, _tree(r), *_hot_lines(r)]


def _kernels_view(r: _Report) -> list[RenderableType]:
    return [_kernels(r) if r.sv.has_gpu else _no_gpu(r.sv.session, r.fmt)]


def _suggestions_view(r: _Report) -> list[RenderableType]:
    none = Text("\nNo suggestions: no rule found a measured gain in this run.", "dim")
    return [*([] if r.report.suggestions else [none]), _work(r)]


def _summary_view(r: _Report) -> list[RenderableType]:
    gpu = [*_gpu_tables(r), _syncs(r)] if r.sv.has_gpu else [_no_gpu(r.sv.session, r.fmt), _syncs(r)]
    return [*gpu, _collectives(r), _api(r)]


def _all_view(r: _Report) -> list[RenderableType]:
    return [
        _tree(r),
        *_outside(r),
        _bottom_up(r),
        *_flat(r),
        *_gpu_tables(r),
        _syncs(r),
        _collectives(r),
        _api(r),
        _work(r),
    ]


#: Each view's sections after the header (and the suggestions, the compile summary: _render).
_SECTIONS: dict[str, Callable[[_Report], list[RenderableType]]] = {
    "tree": _tree_view,
    "bottom-up": lambda r: [_bottom_up(r)],
    "flat": _flat,
    "kernels": _kernels_view,
    "suggestions": _suggestions_view,
    "summary": _summary_view,
    "all": _all_view,
}


def _nothing(m: Metric, title: str, session: Session, fmt: Fmt, outside: bool = False) -> Text:
    """Instead of a tree of zeros: the metric has no value anywhere in the session (or in its
    counted steps, when work ran outside them: the outside section has it)."""
    if outside:
        return Text(
            f'\n{title}: no {m.label} in counted steps (no step was counted: the work is under "Outside '
            'steps"; --skip-first 0 counts every step)',
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
    session: Session | RunView,
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
