"""The view of one run: a session folded and analysed once, for every output of the run.

A run's outputs (the terminal report, the HTML report, the exports, the suggestions saved with
the session) show the same session folded the same way (library frames folded into their
callers unless ``show_all``) and analysed the same way (one peak for MFU, one set of
suggestions). :func:`build_view` makes that once, as a :class:`RunView`: the session's
:class:`~dlpt.trees.folding.FoldedTable` (the one folding of the run: the work outside steps and
the per-step spreads reuse it), its whole tree, the :class:`~dlpt.analysis.inputs.Analysis` every
fact and rule reads, the findings, the summary tables' rows (kernels, copies, CUDA API calls,
syncs, collectives), the work tables' rows, the timeline's layout, the flat profiles and the
report model in each wording asked for (ASCII or not).

Renderers take a view and only format it: the view chooses the metric (:meth:`RunView.metric`,
the one place the default is chosen) and shapes the trees each report shows (top-down,
bottom-up, outside steps: pruned, depth-limited, compile markers on their frames). They import
this module and the model, never the analysis: the types of what a view hands out are named
here (``__all__``).

What changes the numbers is in :class:`ViewOptions`; what only changes how they are shown (the
metric ranked by, the threshold, the depth, ASCII, the width) is the renderer's.

Each part is computed on first use and kept: a view of a million-node session that prints only
the summary tables never builds the whole tree, and saved suggestions need no tree at all.
Not thread-safe: one thread builds and reads a view (the one that finishes the run).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from dlpt.analysis.communication import CollectiveRow, collective_rows, tree_columns
from dlpt.analysis.finding import Finding
from dlpt.analysis.inputs import Analysis, analyze
from dlpt.analysis.intervals import LineHalfWidths, line_half_widths
from dlpt.analysis.report import CompileSummary, Fact, Level, Located, Report, Suggestion, assemble_report
from dlpt.analysis.report.outside import outside_metric
from dlpt.analysis.roofline import Bound
from dlpt.analysis.suggest import derive, findings, to_meta
from dlpt.analysis.summary_tables import ApiRow, CopyRow, KernelRow, api_rows, copy_rows, kernel_rows
from dlpt.analysis.timeline import TimelineView, frame_label, timeline_view
from dlpt.analysis.work_tables import WorkTables, work_tables
from dlpt.model.gc_pause import gc_paused
from dlpt.model.metrics import METRICS, Metric, default_metric_of, get_metric
from dlpt.model.session import Session
from dlpt.model.tree import Node
from dlpt.trees.folding import FoldedTable, SyncSite, compile_markers, has_outside, session_totals, whole_tree
from dlpt.trees.node_contexts import CTX, context_of
from dlpt.trees.processors import (
    FlatRow,
    flatten_by_kind,
    flatten_by_line,
    invert,
    limit_depth,
    mark_lines,
    prune,
)

__all__ = [
    "FLAT_TABLES",
    "ViewOptions",
    "RunView",
    "SessionView",
    "build_view",
    "view_of",
    # what a run's view hands out
    "ApiRow",
    "Bound",
    "CollectiveRow",
    "CompileSummary",
    "CopyRow",
    "Fact",
    "FlatRow",
    "KernelRow",
    "Level",
    "LineHalfWidths",
    "Located",
    "Report",
    "Suggestion",
    "SyncSite",
    "TimelineView",
    "WorkTables",
    "CONTEXT_BITS",
    "frame_label",
]

#: The flat profiles, in the order the reports show them.
FLAT_TABLES = ("line", "op", "kernel")
#: The bits of a node's context (forward, backward, optimizer, ...), as :meth:`RunView.context`
#: gives them.
CONTEXT_BITS: Mapping[str, int] = CTX


@dataclass(frozen=True)
class ViewOptions:
    """What changes a view's numbers: ``show_all`` keeps library frames instead of folding them
    into their callers; ``peak_tflops`` replaces the datasheet peak for MFU (and the rules that
    use it)."""

    show_all: bool = False
    peak_tflops: float | None = None


@dataclass(eq=False)
class RunView:
    """A session folded and analysed once (see the module docstring). ``totals`` are the
    session's summed metrics (the root of every tree holds them); ``analysis`` is the one
    analysis of the run."""

    session: Session
    options: ViewOptions = ViewOptions()
    totals: dict[str, int] = field(init=False)
    analysis: Analysis = field(init=False)

    def __post_init__(self) -> None:
        self.totals = session_totals(self.session)
        # The analysis walks the whole tree only if a rule or a measure needs it.
        self.analysis = analyze(
            self.session, lambda: self.whole, self.options.peak_tflops, totals=self.totals
        )
        self._reports: dict[tuple[bool, bool], Report] = {}

    # -- the metric ----------------------------------------------------------------------------

    def metric(self, name: str | Metric | None = None) -> Metric:
        """The metric ``name`` asks for; None: GPU time if the session has any, else CPU op time
        (the one place every output of a run chooses it). UsageError naming the choices for an
        unknown name."""
        return get_metric(name) if name is not None else default_metric_of(self.totals)

    @property
    def has_gpu(self) -> bool:
        """Whether the session holds GPU work (time, or kernels launched): the reports then show
        the GPU's columns and tables."""
        return METRICS["gpu"](self.totals) > 0 or self.totals.get("kernels", 0) > 0

    @property
    def sources(self) -> Mapping[str, Mapping[str, str]]:
        """The session's saved source text (file -> line number -> text), the only place a report
        takes source text from (it never opens the files a session names)."""
        return self.session.typed_meta.sources or {}

    @cached_property
    def comm_columns(self) -> list[Metric]:
        """The communication columns beside compute worth showing for this session."""
        return tree_columns(self.totals)

    # -- the folding ---------------------------------------------------------------------------

    @cached_property
    def folded(self) -> FoldedTable:
        """The session's node table folded (once; contexts included, for the HTML page)."""
        with gc_paused():
            return FoldedTable(self.session, self.options.show_all, contexts=True)

    @cached_property
    def markers(self) -> dict[tuple[str, int], str]:
        """torch.compile markers (graph break, recompiled xN) by (file, line)."""
        return compile_markers(self.session)

    @cached_property
    def whole(self) -> Node:
        """The whole folded tree (nothing pruned), compile markers on their frames."""
        with gc_paused():
            return whole_tree(self.folded, self.markers)

    def shown_tree(self, metric: Metric, threshold: float) -> Node:
        """The folded tree without the nodes below ``threshold`` of ``metric``'s total (built
        from the same folding: only what is shown becomes a node)."""
        with gc_paused():
            return self.folded.tree(metric, threshold)

    @cached_property
    def outside(self) -> Node | None:
        """The folded tree of the work outside counted steps (None: there was none)."""
        if not has_outside(self.session):
            return None
        with gc_paused():
            return self.folded.with_field("o").tree()

    @property
    def counted_nothing(self) -> bool:
        """Whether every recorded cost ran outside counted steps (none was counted): the HTML page
        then shows the work outside steps where the per-step tree would be."""
        return self.outside is not None and not any(self.totals.values())

    @cached_property
    def outside_flats(self) -> dict[str, list[FlatRow]]:
        """The flat profiles of the work outside counted steps (none without it)."""
        root = self.outside
        if root is None:
            return {table: [] for table in FLAT_TABLES}
        return {
            "line": flatten_by_line(root),
            "op": flatten_by_kind(root, "op"),
            "kernel": flatten_by_kind(root, "kernel"),
        }

    @staticmethod
    def context(node: Node) -> int:
        """``node``'s context bits (:data:`CONTEXT_BITS`: forward, backward, optimizer, ...)."""
        return context_of(node)

    # -- the trees the reports show --------------------------------------------------------------

    def top_down(self, metric: Metric, threshold: float, depth: int | None) -> Node:
        """The top-down tree: nodes below ``threshold`` of ``metric``'s total left out, compile
        markers on their frames, at most ``depth`` levels below the root."""
        return limit_depth(mark_lines(self.shown_tree(metric, threshold), self.markers), depth)

    def bottom_up(self, metric: Metric, threshold: float, depth: int | None) -> Node:
        """The bottom-up tree of ``metric`` (callers below), pruned and depth-limited as
        :meth:`top_down`."""
        return limit_depth(prune(invert(self.whole, metric), metric, threshold), depth)

    def outside_tree(
        self, asked: str | Metric | None, threshold: float, depth: int | None
    ) -> tuple[Node, Metric] | None:
        """The tree of the work outside counted steps and its metric: the one ``asked`` for, else
        GPU time if that work used the GPU, else CPU op time (its own choice: set-up may use
        the GPU when the steps do not). None when there was no such work, or none of it in
        that metric."""
        root = self.outside
        if root is None:
            return None
        m = self.metric(asked) if asked is not None else outside_metric(root)
        if m(root.inclusive) == 0:
            return None
        return limit_depth(mark_lines(prune(root, m, threshold), self.markers), depth), m

    # -- what the analysis found ---------------------------------------------------------------

    @cached_property
    def findings(self) -> list[Finding]:
        """The suggestions' findings: the saved ones, else derived once from the analysis."""
        return findings(self.analysis)

    def suggestions_to_save(self) -> list[dict[str, Any]]:
        """``meta.suggestions`` as the run found them: every rule run on this view's analysis
        (never the ones a session may hold already)."""
        return to_meta(derive(self.analysis))

    def report(self, ascii: bool = False, suggestions: bool = True) -> Report:
        """The report model, worded for ASCII or not; ``suggestions`` False leaves them out (a
        report that does not show them need not derive them)."""
        key = (ascii, suggestions)
        if key not in self._reports:
            found = self.findings if suggestions else None
            self._reports[key] = assemble_report(
                self.session, self.analysis, self.outside, found, ascii=ascii
            )
        return self._reports[key]

    # -- tables ----------------------------------------------------------------------------------

    @property
    def gpu_total(self) -> int:
        """All GPU time: kernels, copies and memsets."""
        return METRICS["gpu"](self.totals)

    @cached_property
    def kernels(self) -> list[KernelRow]:
        return kernel_rows(self.folded.leaf_nodes("kernel"), self.session.held_extras)

    @cached_property
    def copies(self) -> list[CopyRow]:
        return copy_rows(self.folded.leaf_nodes("memcpy", "memset"))

    @cached_property
    def api(self) -> list[ApiRow]:
        return api_rows(self.session.typed_meta)

    @cached_property
    def syncs(self) -> list[SyncSite]:
        """Where the host waited on the GPU, by sync call and nearest frame (compile markers on
        the frames)."""
        sites = self.folded.sync_sites()
        for site in sites:
            if site.site is not None and (site.site.file, site.site.line) in self.markers:
                site.site.marker = self.markers[(site.site.file, site.site.line)]
        return sites

    @cached_property
    def collectives(self) -> list[CollectiveRow]:
        return collective_rows(self.session.nodes)

    @cached_property
    def work(self) -> WorkTables:
        """Lines and ops with recorded work (``--flops``), ranked, with their roofline bounds."""
        return work_tables(self.analysis)

    @cached_property
    def timeline(self) -> TimelineView | None:
        """The timeline window's lanes, slices and flows (``--timeline N``; None: none kept)."""
        return timeline_view(self.session.typed_meta)

    @cached_property
    def flats(self) -> dict[str, list[FlatRow]]:
        """The flat profiles of the whole tree: by source line, op and kernel."""
        root = self.whole
        return {
            "line": flatten_by_line(root),
            "op": flatten_by_kind(root, "op"),
            "kernel": flatten_by_kind(root, "kernel"),
        }

    def hottest_lines(self, metric: Metric, n: int, threshold: float = 0.0) -> list[FlatRow]:
        """The ``n`` lines with the largest own cost in ``metric`` (what the line's own ops,
        kernels and copies took, not its callee lines'), none below ``threshold`` of the total,
        largest first: the report's last section answers "which line" from them."""
        floor = max(threshold * metric(self.totals), 1e-9)
        rows = [r for r in self.flats["line"] if metric(r.self) >= floor]
        return sorted(rows, key=lambda r: -metric(r.self))[:n]

    @cached_property
    def line_halves(self) -> LineHalfWidths | None:
        """Each line's 95% half-widths (sessions with per-step spreads), from the same folding."""
        return line_half_widths(self.session, self.options.show_all, self.folded)


#: The name the view had before there were other views (dlpt.views.run.SessionView).
SessionView = RunView


def build_view(session: Session, options: ViewOptions | None = None) -> RunView:
    """The view of ``session`` with ``options`` (default: library frames folded, datasheet
    peaks)."""
    return RunView(session, options or ViewOptions())


def view_of(
    source: Session | RunView, show_all: bool | None = None, peak_tflops: float | None = None
) -> RunView:
    """The view a renderer formats: ``source`` itself when it is a view whose options are those
    asked for (None: the view's own), else a view built for them (a session given alone is
    viewed with library frames folded and datasheet peaks unless asked otherwise)."""
    if isinstance(source, RunView):
        wanted = ViewOptions(
            source.options.show_all if show_all is None else show_all,
            source.options.peak_tflops if peak_tflops is None else peak_tflops,
        )
        return source if wanted == source.options else build_view(source.session, wanted)
    return build_view(source, ViewOptions(bool(show_all), peak_tflops))
