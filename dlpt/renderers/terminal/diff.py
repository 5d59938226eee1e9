"""Terminal output of ``dlpt diff``: totals, the lines sorted by absolute change, and the
kernels of the most changed lines side by side (eager ATen kernels next to the fused Triton
kernels that replaced them, for example).

Every string from a session (file, function and kernel names, source text) goes through the
terminal report's escaping (:meth:`Fmt.clean`, :mod:`dlpt.model.safe_text`) before it reaches
the terminal, and into rich only as ``Text``: a session can come from anywhere, and an escape
sequence in a kernel name must not drive the terminal.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from dlpt.model.metrics import Metric
from dlpt.model.resume_names import display_name
from dlpt.renderers.terminal.format import Fmt
from dlpt.renderers.terminal.tables import make_table
from dlpt.views.diff import (
    CANT_TELL,
    FASTER,
    MIN_LINES,
    MIN_SHARE,
    MIN_STEPS,
    RESOLVE,
    RUN_RESOLVE,
    SAME,
    SLOWER,
    Change,
    DiffView,
    Leaf,
    LineDiff,
    RunShift,
    Side,
)

__all__ = ["render_diff", "short_kernel"]

ROW_LIMIT = 40
KERNEL_LINES = 5
KERNELS_PER_LINE = 6


def _value(fmt: Fmt, metric: Metric, v: float) -> str:
    return fmt.value(metric, v) if v else "-"


def _delta(fmt: Fmt, metric: Metric, a: float, b: float) -> Text:
    d = b - a
    if not d:
        return Text(fmt.value(metric, 0), "dim")
    sign = "+" if d > 0 else "-"
    return Text(sign + fmt.value(metric, abs(d)), "red" if d > 0 else "green")


def _ratio(a: float, b: float, row: LineDiff | None = None) -> Text:
    """B/A; a line missing from one run is "A only"/"B only", a zero cost "from 0"/"to 0"."""
    if a and b:
        return Text(f"{b / a:.2f}x", "red" if b > a else "green" if b < a else "")
    if b:
        return Text("B only" if row is not None and row.a is None else "from 0", "red")
    if a:
        return Text("A only" if row is not None and row.b is None else "to 0", "green")
    return Text("")


def _where(row: LineDiff, fmt: Fmt) -> Text:
    """``file.py:44 function  text``; ``file.py:44->47`` when the line moved between runs."""
    one = row.a or row.b
    assert one is not None
    t = Text(fmt.clean(one.where), "cyan")
    if row.a and row.b and row.a.line != row.b.line:
        t.append(f"{'->' if fmt.ascii else '→'}{row.b.line}", "cyan")
    t.append(" " + fmt.clean(display_name(one.function)), "bold")
    text = (row.a.text if row.a and row.a.text else None) or (row.b.text if row.b else None)
    if text:
        # Tabs would change the printed width after fitting (as in the terminal report).
        t.append("  " + fmt.clean(text.replace("\t", " ")), "dim")
    return t


#: A step's wall time, for its delta.
_STEP = Metric("step", "step wall time", "ns", lambda m: 0)


def _header(d: DiffView, fmt: Fmt) -> list[RenderableType]:
    metric = d.metric
    out: list[RenderableType] = [Text.assemble(("dlpt diff", "bold"), "  ", (metric.label, "dim"))]
    for tag, side in (("A", d.a), ("B", d.b)):
        steps = f", {side.steps} steps" if side.steps else ", no steps detected"
        if side.host_text:
            steps += f", {side.host_text}"
        out.append(
            Text.assemble(
                (f"  {tag}  ", "bold"),
                (fmt.clean(side.label), "cyan"),
                (f"  {fmt.clean(side.program)}{steps}", "dim"),
            )
        )
    out.append(Text(f"  {fmt.clean(d.note)}", "dim"))
    if d.a.step_ns and d.b.step_ns:  # the programs' own step time (untraced when measured)
        step = Text("  step  ")
        step.append(f"A {_step_text(fmt, d.a)}  B {_step_text(fmt, d.b)}  delta ")
        step.append_text(_delta(fmt, _STEP, d.a.step_ns, d.b.step_ns))
        verdict = d.step_change()
        if verdict:
            step.append(f"  {verdict}", "bold" if verdict == "differs" else "dim")
        out.append(step)
    shift = d.shift
    if shift is not None:
        out.append(
            Text(f"  run  {shift_text(shift)}", "bold" if shift.verdict in (SLOWER, FASTER) else "dim")
        )
        out.append(
            Text(
                "  change: each line against what the run shares, with per-step and run-to-run noise, "
                "Holm-corrected over the lines (5%), at least 10% and 1% of the total: * changed, "
                f"~ within noise (no {RESOLVE:g}x change fits), ? can't tell (the runs are too noisy, "
                f"a run counted fewer than {MIN_STEPS} steps, or too few lines to tell a line from the host)",
                "dim",
            )
        )
        floors = sum(1 for c in d.changes.values() if c.basis)
        if floors:
            lines = f"{floors} line{'' if floors == 1 else 's'}"
            out.append(
                Text(
                    f"  *f changed, judged on its ops' fastest calls ({lines}): "
                    "its mean per step was too noisy to tell (a busy host's delays), and calls x each op's "
                    "fastest call, which those delays do not stretch, changed, and the two agree on a change "
                    "of 10% or more",
                    "dim",
                )
            )
    else:
        out.append(
            Text("  change: not tested (a session without per-step spreads, saved before format 3)", "dim")
        )
    ta, tb = d.total("a"), d.total("b")
    total = Text("  total  ")
    total.append(f"A {_value(fmt, metric, ta)}  B {_value(fmt, metric, tb)}  delta ")
    total.append_text(_delta(fmt, metric, ta, tb))
    total.append("  ")
    total.append_text(_ratio(ta, tb))
    out.append(total)
    return out


def _step_text(fmt: Fmt, side: Side) -> str:
    """A side's step: "10.2ms (10.0-10.4ms) untraced"."""
    text = fmt.time(side.step_ns)
    st = side.step
    if st is not None and st.median_lo_ns is not None and st.median_hi_ns is not None and st.n > 1:
        text += f" ({fmt.time(st.median_lo_ns)}-{fmt.time(st.median_hi_ns)})"
    return f"{text} {side.step_kind}"


def shift_text(shift: RunShift) -> str:
    """What the whole run shares, in words: "B/A 1.31x (1.22-1.41) shared by the 5 lines
    compared: the whole run is slower ..." or why it cannot be told (diff.js says the same)."""
    if not shift.known:
        return (
            f"can't tell what the whole run shares from what one line did: {shift.lines} "
            f"line{'s' if shift.lines != 1 else ''} of at least {MIN_SHARE:.0%} of the total in both runs "
            f"({MIN_LINES} needed)"
        )
    basis = f"B/A {_range(shift.factor, shift.lo, shift.hi)} shared by the {shift.lines} lines compared"
    if shift.fastest is not None:
        basis += f", {_range(*shift.fastest)} at their ops' fastest calls"
    lines = "lines are judged after its factor"
    if shift.basis:
        lines = "lines are judged after the first factor (their means')"
    if not shift.comparable:
        lines = (
            f"the whole run moved by {RESOLVE:g}x or more and its lines moved unevenly "
            "(the host's load changed several-fold between the runs?): too different to compare line by line"
        )
    return f"{basis}: {_run_verdict_text(shift)}; {lines}"


def _range(factor: float, lo: float, hi: float) -> str:
    return f"{factor:.2f}x ({lo:.2f}-{hi:.2f})"


def _run_verdict_text(shift: RunShift) -> str:
    if shift.verdict == SAME:
        return "the run as a whole did not change"
    if shift.verdict == CANT_TELL and shift.why == "fastest":
        return (
            "can't tell whether the run as a whole changed: its means and its ops' fastest calls disagree "
            "(a busy host stretches the means, not the fastest calls)"
        )
    if shift.verdict == CANT_TELL:
        return (
            "can't tell whether the run as a whole changed (its interval holds both no change "
            f"and one of {RUN_RESOLVE:g}x)"
        )
    if shift.basis:
        return (
            f"the whole run is {shift.verdict} at its ops' fastest calls, which preemptions do not stretch "
            "(more work on every line, a clock, or every call waiting on a busy host, as ops with worker "
            "threads do; its means could not tell)"
        )
    return f"the whole run is {shift.verdict} (the host, a clock, the input, or a change on every line)"


def _change(c: Change | None) -> Text:
    if c is None:
        return Text("")
    if c.verdict == CANT_TELL:
        return Text("?", "bold yellow")
    if c.significant:
        return Text("*f" if c.basis else "*", "bold red")
    return Text("~", "dim")


def _lines_table(d: DiffView, fmt: Fmt, threshold: float) -> list[RenderableType]:
    metric, changes = d.metric, d.changes
    shown, hidden = d.shown(threshold, ROW_LIMIT)
    rows: list[tuple[Any, ...]] = []
    for r in shown:
        a, b = d.value(r, "a"), d.value(r, "b")
        rows.append(
            (
                _value(fmt, metric, a),
                _value(fmt, metric, b),
                _delta(fmt, metric, a, b),
                _ratio(a, b, r),
                *([_change(changes.get(r.key))] if d.tested else []),
                _where(r, fmt),
            )
        )
    oa, ob = d.off_lines
    if oa or ob:
        rows.append(
            (
                _value(fmt, metric, oa),
                _value(fmt, metric, ob),
                _delta(fmt, metric, oa, ob),
                _ratio(oa, ob),
                *([Text("")] if d.tested else []),
                Text("(not on any user line)", "dim"),
            )
        )
    title = (
        "Lines, significant changes first, then by absolute change"
        if d.tested
        else "Lines, by absolute change"
    )
    t = make_table(title, fmt)
    for i, col in enumerate(("A", "B", "delta", "ratio", *(["change"] if d.tested else []))):
        # Numbers keep their full width; the line text is what gets cut.
        t.add_column(
            col,
            justify="right",
            no_wrap=True,
            min_width=max(
                [len(col), *(Text(r[i]).cell_len if isinstance(r[i], str) else r[i].cell_len for r in rows)]
            ),
        )
    t.add_column(
        "line (its own cost; lines it calls count at their own rows)", no_wrap=True, overflow="ellipsis"
    )
    for row in rows:
        t.add_row(*row)
    out: list[RenderableType] = [Text(""), t]
    if hidden:
        out.append(
            Text(f"  ... {hidden} more lines below {threshold * 100:g}% of the total or the row limit", "dim")
        )
    if not shown and not hidden:
        out.append(Text("  (no line has any of this metric)", "dim"))
    return out


def short_kernel(name: str) -> str:
    """A kernel name without ``void`` and the ``at::native::``/``(anonymous namespace)::``
    qualifiers, which fill half a column before the part that names the kernel."""
    name = name.removeprefix("void ")
    for noise in ("at::native::", "(anonymous namespace)::"):
        name = name.replace(noise, "")
    return name


def _leaf_cells(fmt: Fmt, leaf: Leaf | None, scale: int) -> tuple[str, str, Text]:
    if leaf is None:
        return "", "", Text("")
    name = Text(
        fmt.clean(short_kernel(leaf.name)),
        "green" if leaf.kind == "kernel" else "blue" if leaf.kind != "sync" else "red",
    )
    if leaf.detail:
        name.append("  " + fmt.clean(leaf.detail), "dim")
    return fmt.time(leaf.time_ns / scale), fmt.count(leaf.count / scale), name


def _kernels(d: DiffView, fmt: Fmt, threshold: float) -> list[RenderableType]:
    metric = d.metric
    shown, _ = d.shown(threshold, ROW_LIMIT, judged=False)  # by the size of the change alone
    rows = [
        r
        for r in shown
        if ((r.a and r.a.leaves) or (r.b and r.b.leaves)) and d.value(r, "a") != d.value(r, "b")
    ][:KERNEL_LINES]
    if not rows:
        return []
    out: list[RenderableType] = [
        Text(""),
        Text("Kernels, copies and syncs of the lines that changed most, A | B", "bold"),
    ]
    for r in rows:
        head = _where(r, fmt)
        a, b = d.value(r, "a"), d.value(r, "b")
        head.append(f"   A {_value(fmt, metric, a)} {'->' if fmt.ascii else '→'} B {_value(fmt, metric, b)}")
        t = Table(
            box=None,
            show_header=True,
            show_edge=False,
            pad_edge=False,
            header_style="dim",
            title=head,
            title_justify="left",
            expand=True,
        )
        for side in ("A", "B"):
            t.add_column(f"{side} time", justify="right", no_wrap=True)
            t.add_column("n", justify="right", no_wrap=True)
            t.add_column("", overflow="fold", ratio=1)
        la = sorted((r.a.leaves.values() if r.a else []), key=lambda x: -x.time_ns)
        lb = sorted((r.b.leaves.values() if r.b else []), key=lambda x: -x.time_ns)
        for i in range(min(max(len(la), len(lb)), KERNELS_PER_LINE)):
            t.add_row(
                *_leaf_cells(fmt, la[i] if i < len(la) else None, d.a.scale),
                *_leaf_cells(fmt, lb[i] if i < len(lb) else None, d.b.scale),
            )
        more = max(len(la), len(lb)) - KERNELS_PER_LINE
        out.append(Text(""))
        out.append(t)
        if more > 0:
            out.append(Text(f"  ... {more} more", "dim"))
    return out


def render_diff(d: DiffView, threshold: float = 0.01, ascii: bool = False) -> RenderableType:
    """The terminal output of ``d`` (:func:`dlpt.views.diff.diff_view`) in its metric: rows under
    ``threshold`` times the larger total are left out (and counted)."""
    fmt = Fmt(steps=0, ascii=ascii)
    return Group(*_header(d, fmt), *_lines_table(d, fmt, threshold), *_kernels(d, fmt, threshold))
