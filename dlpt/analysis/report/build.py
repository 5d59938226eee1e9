"""Build a session's :class:`~dlpt.analysis.report.model.Report` (see :mod:`dlpt.analysis.report`)."""

from __future__ import annotations

from collections.abc import Sequence

from dlpt.analysis.communication import comm_facts
from dlpt.analysis.finding import Finding
from dlpt.analysis.inputs import Analysis, analyze
from dlpt.analysis.report.busy_host import busy_host_facts
from dlpt.analysis.report.compile_summary import attribution_facts, compile_summary
from dlpt.analysis.report.gpu import (
    capture_facts,
    device_facts,
    graph_facts,
    mean_step_wall,
    record_facts,
    self_cost,
    totals,
)
from dlpt.analysis.report.headlines import flops_headline, memory_headline, pc_sampling_facts
from dlpt.analysis.report.host_facts import host_facts, sampler_facts
from dlpt.analysis.report.measures import coverage_facts, idle_facts, mfu_facts
from dlpt.analysis.report.memory_facts import memory_facts, oom_facts
from dlpt.analysis.report.model import Fact, Report
from dlpt.analysis.report.op_mode import op_mode_facts
from dlpt.analysis.report.outside import one_outside_line, outside_facts, outside_tree
from dlpt.analysis.report.run import (
    folded_notes,
    once_facts,
    rank_label,
    run_facts,
    step_notes,
    thread_notes,
    title,
    versions,
)
from dlpt.analysis.report.suggestions import suggestion
from dlpt.analysis.suggest import findings
from dlpt.model.session import Session
from dlpt.model.tree import Node
from dlpt.model.units import Units, separator

__all__ = ["build_report", "assemble_report"]


def build_report(
    session: Session,
    *,
    peak_tflops: float | None = None,
    ascii: bool = False,
    suggestions: bool = True,
    show_all: bool = False,
) -> Report:
    """The report of ``session`` on its own, analysed and folded here (a run's reports come from
    its :class:`~dlpt.views.run.RunView`, analysed once for all of them).

    ``peak_tflops`` replaces the datasheet peak for MFU; ``ascii`` keeps every text ASCII (``us``,
    `` - ``); ``suggestions`` False skips them; ``show_all`` keeps library frames in the tree of
    the work outside steps."""
    a = analyze(session, None, peak_tflops)
    found = findings(a) if suggestions else None
    return assemble_report(session, a, outside_tree(session, show_all), found, ascii=ascii)


def assemble_report(
    session: Session,
    a: Analysis,
    outside: Node | None,
    found: Sequence[Finding] | None,
    *,
    ascii: bool = False,
) -> Report:
    """The report of ``session`` from its analysis ``a``, the folded tree of its work outside
    counted steps (None: there was none) and its findings (None: no suggestions asked for);
    ``ascii`` keeps every text ASCII. Nothing here folds or analyses: it words what was found."""
    meta = session.typed_meta
    steps = session.typed_meta.profiled_steps
    units = Units(steps=steps, ascii=ascii)
    sep = separator(ascii)
    inc = a.totals
    total_facts = totals(inc, units, sum((session.typed_meta.gpu_busy_ns or {}).values()) or None)
    if total_facts:  # the mean step wall beside the means it compares with
        total_facts = [*mean_step_wall(meta, steps, units), *total_facts]
    per = f"per step (mean of {steps})" if steps else "totals"
    empty = "nothing in counted steps" if outside is not None else "nothing recorded"
    pc = pc_sampling_facts(session.typed_meta)
    line = sep.join(f.text for f in total_facts) if total_facts else empty
    header: list[Fact] = [
        *oom_facts(a, units),  # an allocation failure leads: it is what ended the run
        *run_facts(meta, units, sep),
        *busy_host_facts(meta, units),
        *one_outside_line([*once_facts(meta, units), *outside_facts(outside)]),
        *step_notes(meta),
        Fact("totals", f"{per}: {line}" if steps else f"totals: {line}"),
        *capture_facts(meta),
        *op_mode_facts(meta),
        *device_facts(meta, units),
        *memory_facts(a, units),
        *pc,
        *mfu_facts(a, units),
        *idle_facts(a, units),
        *host_facts(a, units),
        *coverage_facts(a),
        *(
            Fact("communication", text, "bad" if bad else "info", "communication", text)
            for text, bad in comm_facts(meta, inc, units)
        ),
        *graph_facts(meta, units),
        *record_facts(meta, units),
        *attribution_facts(meta),
        *thread_notes(meta),
        *folded_notes(meta),
        *self_cost(meta, units),
        *sampler_facts(a, units),
        *versions(meta, sep),
    ]
    return Report(
        title=title(meta),
        rank=rank_label(meta),
        steps=steps,
        header=tuple(header),
        totals_label=per,
        totals=tuple(total_facts),
        compile=compile_summary(meta),
        suggestions=tuple(suggestion(f, units) for f in found) if found is not None else (),
        analysis=a,
        outside=outside,
        headlines=(*flops_headline(a, units), *memory_headline(a, units), *pc),
    )
