"""Console reports of a Session: :func:`render` returns a rich renderable, :func:`print_report`
prints it. This is the stable name the API, the CLI and users import.

A report is assembled here from the views in :mod:`dlpt.renderers` (which never print by
themselves). Every render builds a fresh tree from the session (:func:`report_tree`), so
rendering twice with different options gives independent results. The other outputs (the HTML
report, the exports, ``dlpt diff``) start from the same :func:`report_tree`, so they agree with
the terminal report on what a row is.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console, Group, RenderableType
from rich.text import Text

from dlpt.compile.events import line_markers
from dlpt.errors import UsageError
from dlpt.insights.analysis import analyze
from dlpt.insights.suggest import findings
from dlpt.insights.view import SuggestionsView, header_lines
from dlpt.insights.work_view import WorkView
from dlpt.processors import (
    METRICS,
    Metric,
    collapse_library,
    collapse_lone_forward,
    default_metric,
    flatten_by_kind,
    flatten_by_line,
    get_metric,
    invert,
    limit_depth,
    mark_lines,
    prune,
)
from dlpt.renderers.compile_view import CompileView
from dlpt.renderers.format import Fmt
from dlpt.renderers.header import Header
from dlpt.renderers.summary import ApiTable, CopyTable, KernelTable, SyncTable
from dlpt.renderers.tree_view import FlatView, TreeView
from dlpt.session import Session
from dlpt.tree import Node, build_tree

__all__ = ["render", "print_report", "report_tree", "VIEWS"]

VIEWS = ("tree", "bottom-up", "flat", "kernels", "summary", "suggestions", "all")
#: Suggestions shown in the default tree view (``--view suggestions`` lists them all).
TREE_SUGGESTIONS = 5


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building trees: tens of thousands of new nodes would trigger
    full collections that also traverse everything torch allocated (measured: ~2x render
    time with torch imported). The trees are garbage-collected normally afterwards."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


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
    session: Session,
    view: str = "tree",
    metric: str | Metric | None = None,
    threshold: float = 0.01,
    depth: int | None = None,
    show_all: bool = False,
    ascii: bool = False,
    peak_tflops: float | None = None,
) -> RenderableType:
    """Render ``session`` as a rich renderable.

    view: "tree" (header, top-down tree and, with GPU data, kernel and copy summaries),
        "bottom-up", "flat" (by source line, op, kernel), "kernels", "summary" or "all".
    metric: a name in ``dlpt.processors.METRICS``; default "gpu" if the session has GPU time,
        else "cpu".
    threshold: hide tree nodes / flat rows below this fraction of the total.
    depth: show at most this many levels below the root.
    show_all: keep library frames (torch, site-packages, stdlib, dlpt) instead of folding them
        into their callers.
    ascii: ASCII output even on a UTF-8 console (it is automatic on other encodings).
    peak_tflops: the GPU's dense peak in TFLOP/s for MFU and % of peak, instead of the
        datasheet table's (dlpt.insights.peaks).
    Raises UsageError on an unknown view or metric or out-of-range option.
    """
    _check(view, threshold, depth, peak_tflops)
    with _gc_paused():
        return _render(session, view, metric, threshold, depth, show_all, ascii, peak_tflops)


def report_tree(
    session: Session, show_all: bool = False, before_lone_forward: Callable[[Node], None] | None = None
) -> Node:
    """``session``'s tree as every report shows it: library frames folded into their callers
    (unless ``show_all``), a ``<forward>`` phase that is its op's only phase dropped, compile-event
    markers (graph break, recompiled xN) on the frames where they happened.

    ``before_lone_forward`` is called on the tree while every op still has its ``<forward>``
    phase, for callers that need to know which work ran in the forward pass (the phase row is
    then dropped where it is the op's only phase).
    """
    root = build_tree(session)
    if not show_all:
        root = collapse_library(root)
    if before_lone_forward is not None:
        before_lone_forward(root)
    # After library collapse: merging can give an op both phases, which must then stay.
    root = collapse_lone_forward(root)
    compiled = session.meta.get("compile")
    if isinstance(compiled, list) and compiled:
        root = mark_lines(root, line_markers(compiled))
    return root


def _render(
    session: Session,
    view: str,
    metric: str | Metric | None,
    threshold: float,
    depth: int | None,
    show_all: bool,
    ascii: bool,
    peak_tflops: float | None = None,
) -> RenderableType:
    root = report_tree(session, show_all)
    compiled = session.meta.get("compile")
    m = get_metric(metric) if metric is not None else default_metric(root)
    steps = session.meta.get("steps")
    n_steps = steps.get("profiled", 0) if isinstance(steps, dict) else 0
    fmt = Fmt(steps=n_steps if isinstance(n_steps, int) and n_steps > 0 else 0, ascii=ascii)
    gpu = METRICS["gpu"](root.inclusive) > 0 or root.inclusive.get("kernels", 0) > 0
    total = m(root.inclusive)

    insight = analyze(session, root, peak_tflops)
    found = findings(insight)
    parts: list[RenderableType] = [
        Header(
            session.meta,
            root,
            m,
            fmt,
            [_note(m, fmt, threshold, depth, show_all)],
            header_lines(insight, fmt),
        )
    ]
    if view in ("tree", "suggestions", "all"):
        parts.append(SuggestionsView(found, fmt, TREE_SUGGESTIONS if view == "tree" else None))

    def tree() -> RenderableType:
        return TreeView(
            limit_depth(prune(root, m, threshold), depth),
            m,
            fmt,
            "Top-down (callees below their callers)",
            gpu,
        )

    def bottom_up() -> RenderableType:
        inv = invert(root, m)
        return TreeView(
            limit_depth(prune(inv, m, threshold), depth), m, fmt, "Bottom-up (callers below)", gpu
        )

    def flat() -> list[RenderableType]:
        out: list[RenderableType] = [
            FlatView(flatten_by_line(root), m, fmt, "By source line", gpu, total, threshold),
            FlatView(flatten_by_kind(root, "op"), m, fmt, "By op", gpu, total, threshold),
        ]
        if gpu:
            out.append(FlatView(flatten_by_kind(root, "kernel"), m, fmt, "By kernel", gpu, total, threshold))
        return out

    wall = session.meta.get("wall_ns")
    syncs = SyncTable(root, fmt, wall if isinstance(wall, int) else 0)
    gpu_tables: list[RenderableType] = [KernelTable(session, fmt), CopyTable(session, fmt)]
    if isinstance(compiled, list) and compiled and view in ("tree", "summary", "all"):
        parts.append(CompileView(compiled, fmt))
    if view == "tree":
        parts.append(tree())
        parts.extend([*gpu_tables, syncs] if gpu else [syncs])
    elif view == "bottom-up":
        parts.append(bottom_up())
    elif view == "flat":
        parts.extend(flat())
    elif view == "kernels":
        parts.append(KernelTable(session, fmt) if gpu else _no_gpu(session))
    elif view == "suggestions":
        if not found:
            parts.append(Text("\nNo suggestions: no rule found a measured gain in this run.", "dim"))
        parts.append(WorkView(insight, fmt))
    elif view == "summary":
        parts.extend([*gpu_tables, syncs] if gpu else [_no_gpu(session), syncs])
        parts.append(ApiTable(session, fmt))
    else:  # all
        parts.extend(
            [tree(), bottom_up(), *flat(), *gpu_tables, syncs, ApiTable(session, fmt), WorkView(insight, fmt)]
        )
    return Group(*parts)


def _note(m: Metric, fmt: Fmt, threshold: float, depth: int | None, show_all: bool) -> str:
    """What the numbers are and what is hidden, for the header."""
    shown = f"rows >= {threshold * 100:g}% of the total" if threshold > 0 else "all rows"
    lib = "shown" if show_all else "folded into their callers"
    note = f"values: {m.label}{' per step' if fmt.steps else ''}; {shown}; library frames {lib}"
    return note + (f"; depth <= {depth}" if depth else "")


def _no_gpu(session: Session) -> Text:
    gpu = session.meta.get("gpu")
    reason = gpu.get("reason") if isinstance(gpu, dict) else None
    return Text("\nNo GPU activity recorded" + (f" ({reason})." if reason else "."), "yellow")


def print_report(
    session: Session,
    console: Console | None = None,
    *,
    view: str = "tree",
    metric: str | Metric | None = None,
    threshold: float = 0.01,
    depth: int | None = None,
    show_all: bool = False,
    ascii: bool = False,
    peak_tflops: float | None = None,
) -> None:
    """Print :func:`render`'s report to ``console`` (a default rich Console if None)."""
    renderable = render(
        session,
        view=view,
        metric=metric,
        threshold=threshold,
        depth=depth,
        show_all=show_all,
        ascii=ascii,
        peak_tflops=peak_tflops,
    )
    with _gc_paused():  # the views lay out their rows while printing
        (console or Console()).print(renderable)
