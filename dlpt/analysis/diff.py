"""Compare two profiles line by line: ``dlpt diff A.json B.json``.

The unit of comparison is a source line's own cost: what the line caused itself (its ops,
kernels, copies, syncs, CUDA API time), with work under deeper user lines counted at those
lines. That is the ``self`` of :func:`dlpt.trees.processors.flatten_by_line` on the report tree
(library frames folded), so the lines' costs plus the work on no line add up to the total,
and a change shows up at the line that caused it rather than at every caller above it.

Matching: lines are matched by (file name, function, line text), so edits that shift line
numbers, and different checkouts of the same code, still match. Function names are compared
without their class prefix (eager frames are ``Block.forward``, Inductor-mapped frames
``forward``) and Dynamo's resume functions (``torch_dynamo_resume_in_forward_at_44``) as the
function they continue, so an eager run and a compiled run of the same script match line for
line. A text that occurs more than once in a function is told apart by its order. When either
session has no stored source text (``meta.sources``), lines are matched by (file name,
function, line number) instead, and the result says so.

Values are per profiled step when both sessions detected steps (runs of different lengths
compare), else totals.

Verdicts (docs/numbers.md): when both sessions saved per-step second moments (format 3), each
line's change is judged by :mod:`dlpt.analysis.diff_test`: against what the whole run shares
(the run shift, from the lines' median ratio), with per-step and run-to-run noise, Holm-corrected
over the lines; "can't tell" where one pair of runs cannot separate a line from the host. In CPU
op time, a line the mean cannot tell is judged again on its ops' fastest calls (its floor,
``cpu_floor_ns``), which a busy host's preemptions do not stretch (SessionDiff._on_floors),
and so is the whole run where its means cannot tell (diff_test.on_fastest_calls).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

from dlpt.analysis.cpu_wait import CpuWait, cpu_wait
from dlpt.analysis.diff_test import (
    CANT_TELL,
    FASTER,
    FASTEST,
    MIN_EFFECT,
    SAME,
    SLOWER,
    LineSample,
    RunShift,
    Verdict,
    judge_lines,
    on_fastest_calls,
)
from dlpt.model.calibration import Calibration, calibration
from dlpt.model.meta import StepTime, program_argv, step_time
from dlpt.model.metrics import CPU_FLOOR, METRICS, Metric
from dlpt.model.resume_names import parse_resume_name
from dlpt.model.session import Session
from dlpt.model.source_text import session_sources
from dlpt.model.tree import Node, add_metrics, walk
from dlpt.trees.folding import report_tree
from dlpt.trees.node_contexts import CTX, context_of
from dlpt.trees.processors import flatten_by_line
from dlpt.trees.spread import SpreadTable, has_moments

__all__ = [
    "Leaf",
    "LineCost",
    "LineDiff",
    "Side",
    "SessionDiff",
    "Change",
    "FASTEST",
    "diff_sessions",
    "function_key",
]

LEAF_KINDS = ("kernel", "memcpy", "memset", "sync")
_TIME_KEY = {"kernel": "gpu_ns", "memcpy": "copy_ns", "memset": "memset_ns", "sync": "sync_ns"}
_COUNT_KEY = {"kernel": "kernels", "memcpy": "copies", "memset": "memsets", "sync": "syncs"}


def function_key(name: str) -> str:
    """The function part of a line's identity: last dotted component (``Block.forward`` and
    ``forward`` are the same function seen eagerly and through Inductor's line maps), with a
    Dynamo resume function read as the function it continues."""
    last = name.rsplit(".", 1)[-1]
    resumed = parse_resume_name(last)
    return resumed[0] if resumed is not None else last


#: How a line is matched between two sessions: (file name, function, ("text", source) or
#: ("line", number)); a line key adds its rank among equal identities (repeats told apart).
LineIdent = tuple[str, str, tuple[str, Any]]
LineKey = tuple[str, str, tuple[str, Any], int]


@dataclass
class Leaf:
    """Kernels (or copies, memsets, syncs) of one name under one line, summed."""

    kind: str
    name: str
    detail: str
    metrics: dict[str, int] = field(default_factory=dict)
    forward_ns: int = 0
    backward_ns: int = 0
    other_ns: int = 0

    @property
    def time_ns(self) -> int:
        return self.metrics.get(_TIME_KEY[self.kind], 0)

    @property
    def count(self) -> int:
        return self.metrics.get(_COUNT_KEY[self.kind], 0)


@dataclass
class LineCost:
    """One line of one session: where it is, its text, its own and inclusive metrics and the
    kernels, copies, memsets and syncs it caused itself."""

    file: str
    line: int
    function: str
    text: str | None
    self: dict[str, int]
    inclusive: dict[str, int]
    leaves: dict[tuple[str, str], Leaf] = field(default_factory=dict)
    # Per metric: the line's own per-step variance times the steps squared (its nodes' summed,
    # dlpt.trees.spread); None when the session saved no second moments.
    spread: dict[str, int] | None = None

    @property
    def where(self) -> str:
        return f"{os.path.basename(self.file) or self.file}:{self.line}"


@dataclass
class LineDiff:
    """A matched line: ``a`` or ``b`` is None for a line that occurs in one session only."""

    key: LineKey
    a: LineCost | None
    b: LineCost | None


@dataclass
class Side:
    """What the diff needs from one session."""

    label: str  # how the session is named (its file)
    program: str  # its argv
    steps: int  # profiled steps (0: none detected)
    scale: int  # what values are divided by (steps when both sides have them, else 1)
    has_sources: bool
    total: dict[str, int]  # the root's inclusive metrics
    off_lines: dict[str, int]  # work not under any user line
    step_ns: float = 0.0  # a step's wall time: untraced when the run measured it, else traced
    step_kind: str = ""  # "untraced", "traced" or "" (no steps)
    step: StepTime | None = None  # that step's figures (its median's interval among them)
    cost: Calibration | None = None  # dlpt's cost in the run
    moments: bool = False  # per-step second moments saved (significance can be tested)
    wait: CpuWait | None = None  # its step thread's wait for a CPU (None: not measured)

    @property
    def host_text(self) -> str:
        """ "busy host: waited for a CPU 51% of its steps", "quiet host (0.1%)", "" (unknown)."""
        if self.wait is None:
            return ""
        if self.wait.busy:
            return f"busy host: waited for a CPU {self.wait.share:.0%} of its steps"
        return f"quiet host ({self.wait.share:.1%} waiting for a CPU)"


@dataclass(frozen=True)
class Change:
    """A line's change, judged (:mod:`dlpt.analysis.diff_test`): per-step means and spreads of
    both sides, its ratio after the run shift, the p-value and the verdict."""

    a: float
    b: float
    sd_a: float
    sd_b: float
    ratio: float
    p: float
    verdict: str  # diff_test.SLOWER, FASTER, SAME or CANT_TELL
    lo: float = 0.0  # the ratio's 95% interval
    hi: float = math.inf
    why: str = ""  # what a CANT_TELL rests on: "host", "noise", "runs", "steps" or "fastest"
    # What the verdict was judged on: "" the line's mean per step; FASTEST its ops' floors
    # (calls x each op's fastest call), where the mean could not tell (SessionDiff.judge).
    basis: str = ""

    @property
    def significant(self) -> bool:
        return self.verdict in (SLOWER, FASTER)


#: The run-to-run noise of one line's floor (log scale) that the floors' scatter is pooled with
#: (diff_test.PRIOR_LINE_NOISE for means). Measured on the busy 2-core machine (docs/numbers.md):
#: the floors of lines.py's lines scattered 2-6% (sd) between runs of one program, with tails to
#: 25%; with 5% two such runs flagged a line in 7 of 66 pairs (without FLOOR_MIN_CALLS), with
#: 8% and it in none.
FLOOR_NOISE = 0.08
#: The op calls a line's floor must rest on in each run (its ops' calls over the counted steps):
#: the fastest of 40 calls of a small op moved 0.5-2x between runs of one program there.
FLOOR_MIN_CALLS = 200


def _agree_on_a_change(mean: Verdict, floor: Verdict) -> bool:
    """Whether a mean's interval holds a change that the floor's does too, of at least
    MIN_EFFECT in the floor's direction: both estimates fit such a change. (A mean whose narrow
    interval rules out 10% says the line's cost did not move, whatever its fastest calls did.)"""
    lo, hi = max(mean.lo, floor.lo), min(mean.hi, floor.hi)
    if lo > hi:
        return False
    return hi >= 1 + MIN_EFFECT if floor.ratio > 1 else lo <= 1 / (1 + MIN_EFFECT)


def _line_calls(cost: LineCost | None) -> int:
    """The op calls under a line (its own, over the counted steps): what its floor rests on."""
    return cost.self.get("calls", 0) if cost is not None else 0


@dataclass
class SessionDiff:
    a: Side
    b: Side
    match_by: str  # "text" or "line"
    note: str  # how lines were matched and how values are scaled, for the output
    rows: list[LineDiff]

    def value(self, metric: Metric, row: LineDiff, side: str) -> float:
        """``metric`` of the row's ``side`` ("a"/"b"), self cost, scaled (0 if absent)."""
        cost = row.a if side == "a" else row.b
        s = self.a if side == "a" else self.b
        return metric(cost.self) / s.scale if cost is not None else 0.0

    def total(self, metric: Metric, side: str) -> float:
        s = self.a if side == "a" else self.b
        return metric(s.total) / s.scale

    @property
    def tested(self) -> bool:
        """Whether changes can be tested: both sessions saved per-step second moments."""
        return self.a.moments and self.b.moments

    def spread(self, metric: Metric, row: LineDiff, side: str) -> float:
        """The row's per-step standard deviation of ``metric`` on ``side`` (0 if absent)."""
        cost = row.a if side == "a" else row.b
        if cost is None or cost.spread is None:
            return 0.0
        s = self.a if side == "a" else self.b
        return math.sqrt(metric(cost.spread)) / s.scale

    def judge(self, metric: Metric) -> tuple[RunShift | None, dict[LineKey, Change]]:
        """The run shift and every row with a value of ``metric``, judged (see
        :mod:`dlpt.analysis.diff_test`); (None, {}) when the sessions cannot be tested."""
        if not self.tested:
            return None, {}
        rows = [r for r in self.rows if self.value(metric, r, "a") or self.value(metric, r, "b")]
        samples = [
            LineSample(
                self.value(metric, r, "a"),
                self.value(metric, r, "b"),
                self.spread(metric, r, "a"),
                self.spread(metric, r, "b"),
                self.a.steps,
                self.b.steps,
            )
            for r in rows
        ]
        total = max(self.total(metric, "a"), self.total(metric, "b"))
        shift, verdicts = judge_lines(samples, total)
        bases, floor_shift = self._on_floors(metric, rows, verdicts, shift)
        if floor_shift is not None:
            shift = on_fastest_calls(shift, floor_shift)
        out = {
            r.key: Change(
                x.a, x.b, x.sd_a or 0.0, x.sd_b or 0.0, v.ratio, v.p, v.verdict, v.lo, v.hi, v.why, basis
            )
            for r, x, v, basis in zip(rows, samples, verdicts, bases, strict=True)
        }
        return shift, out

    def _on_floors(
        self, metric: Metric, rows: list[LineDiff], verdicts: list[Verdict], shift: RunShift
    ) -> tuple[list[str], RunShift | None]:
        """Each verdict's basis (Change.basis) and the floors' run shift (None: no floors),
        replacing in ``verdicts`` a CPU line's "can't tell" or "within noise" by its floors'
        verdict where those changed and agree with the mean (:func:`_agree_on_a_change`), and a
        mean's verdict by "can't tell" where the floors contradict it (below).

        A host whose other work preempts the program stretches the calls it lands in by a
        scheduler slice each (milliseconds, on ops of microseconds), so a line's CPU op time per
        step swings with where those slices fell, and two runs of one program on a busy host
        differ by 0.4-3x as a whole and unevenly line by line (docs/numbers.md): the means
        cannot tell. An op's fastest call over the counted steps is one the host left alone;
        calls x that floor moves when the line does more work (more calls, or slower ones)
        and not when the host takes the CPU away. It misses a line whose calls became slower
        only some of the time, which is why it is only asked where the mean did not find a
        change and must agree with it, and why it only ever finds a change, never says
        "within noise". A mean's "within noise" says that no 1.5x change fits its interval
        (diff_test.RESOLVE); a busy host can draw that interval around 1 with a 1.35x change
        inside it, which the floors then find.

        The other way round, a mean's change is "can't tell" (why "fastest") when the floors
        judged the line unchanged, their ratio outside the mean's interval, and the host moved
        the means as a whole where it did not move the floors (the floors' shift outside the
        means' interval): there the floors are the better estimate. A busy host that stretched
        LINE-A 1.66x and LINE-C not at all drew the means' shift to 1.66x, and LINE-C,
        unchanged (its floor 1.08x), read 0.57x "faster". On a quiet host the two shifts agree,
        and a mean's change stands whatever the floors say.

        A mean's "within noise" beside a change of the floor outside its interval is "can't
        tell" (why "fastest") on any host: "no 1.5x change fits" cannot stand beside a floor that
        moved beyond what the other lines' floors share (more calls, or every call slower), and
        "can't tell" is never wrong. LINE-A made 2x heavier read 1.00x (0.68-1.48) "within
        noise" on its mean, against a base run whose LINE-A mean a busy host had stretched 1.35x
        past the other runs', and 1.95x on its floor."""
        bases = [""] * len(rows)
        open_ = (CANT_TELL, SAME)  # the mean's verdicts a floor may replace
        if metric.name != METRICS["cpu"].name:
            return bases, None
        if not (self.total(CPU_FLOOR, "a") and self.total(CPU_FLOOR, "b")):
            return bases, None  # a session from before floors, or of no CPU ops
        # Only lines whose floors rest on enough calls are judged, and only they count in the
        # Holm correction: a line left out cannot be found on its floor, and counting it would
        # only raise the bar for the others.
        judged: list[tuple[int, LineSample]] = []
        for i, r in enumerate(rows):
            a, b = self.value(CPU_FLOOR, r, "a"), self.value(CPU_FLOOR, r, "b")
            if a > 0 and b > 0 and min(_line_calls(r.a), _line_calls(r.b)) >= FLOOR_MIN_CALLS:
                judged.append((i, LineSample(a, b, None, None, 0, 0)))
        total = max(self.total(CPU_FLOOR, "a"), self.total(CPU_FLOOR, "b"))
        floor_shift, on_floors = judge_lines([x for _, x in judged], total, FLOOR_NOISE)
        host_moved_means = (
            shift.known and floor_shift.known and not shift.lo <= floor_shift.factor <= shift.hi
        )
        for (i, _), f in zip(judged, on_floors, strict=True):
            v = verdicts[i]
            if v.verdict in open_ and f.significant and math.isfinite(f.ratio) and _agree_on_a_change(v, f):
                verdicts[i], bases[i] = f, FASTEST
                continue
            if v.lo <= f.ratio <= v.hi:
                continue  # the floor's ratio fits the mean's interval: no contradiction
            change_beside_unchanged_floor = v.significant and f.verdict == SAME and host_moved_means
            no_change_beside_changed_floor = v.verdict == SAME and f.significant
            if change_beside_unchanged_floor or no_change_beside_changed_floor:
                verdicts[i] = Verdict(v.ratio, v.p, CANT_TELL, v.lo, v.hi, "fastest")
        return bases, floor_shift

    def changes(self, metric: Metric) -> dict[LineKey, Change]:
        """Every row with a value of ``metric``, judged; {} when the sessions cannot be tested."""
        return self.judge(metric)[1]

    def ranked(self, metric: Metric, changes: dict[LineKey, Change] | None = None) -> list[LineDiff]:
        """Rows with any value of ``metric``: significant changes first (when ``changes`` holds
        the tests), then by largest absolute change."""
        rows = [r for r in self.rows if self.value(metric, r, "a") or self.value(metric, r, "b")]
        tests = changes or {}

        def order(r: LineDiff) -> tuple[bool, float, float, LineKey]:
            a, b = self.value(metric, r, "a"), self.value(metric, r, "b")
            c = tests.get(r.key)
            return (not (c is not None and c.significant), -abs(b - a), -max(a, b), r.key)

        return sorted(rows, key=order)

    def step_change(self) -> str:
        """Whether the step times differ beyond their spread: "differs" when their medians'
        intervals do not overlap, "within noise" when they do, "" when either lacks one. Each
        interval is its own run's: a host busier in one run than the other moves the step beyond
        it, so "differs" says the runs differ (the host or the code), not that the code changed;
        the lines and the run shift say which."""
        sa, sb = self.a.step, self.b.step
        if sa is None or sb is None or sa.median_lo_ns is None or sb.median_lo_ns is None:
            return ""
        if sa.median_hi_ns is None or sb.median_hi_ns is None:
            return ""
        apart = sa.median_hi_ns < sb.median_lo_ns or sb.median_hi_ns < sa.median_lo_ns
        return "differs" if apart else "within noise"


def _program(session: Session) -> str:
    return " ".join(program_argv(session.typed_meta))


def _steps(session: Session) -> int:
    return session.typed_meta.profiled_steps


def _line_leaves(root: Node) -> dict[tuple[str, int], dict[tuple[str, str], Leaf]]:
    """Leaves grouped by their nearest frame's (file, line): what each line caused itself."""
    out: dict[tuple[str, int], dict[tuple[str, str], Leaf]] = {}
    near: dict[int, tuple[str, int] | None] = {id(root): None}
    for node, _ in walk(root):
        if node.parent is not None:
            near[id(node)] = (node.file, node.line) if node.kind == "frame" else near[id(node.parent)]
        where = near[id(node)]
        if node.kind not in LEAF_KINDS or where is None:
            continue
        leaves = out.setdefault(where, {})
        leaf = leaves.get((node.kind, node.name))
        if leaf is None:
            fuses = node.typed_extras.fuses
            detail = f"fuses {'+'.join(fuses)}" if fuses else ""
            leaf = leaves[(node.kind, node.name)] = Leaf(node.kind, node.name, detail)
        add_metrics(leaf.metrics, {k: v for k, v in node.metrics.items() if k not in ("min_ns", "max_ns")})
        t, ctx = node.metrics.get(_TIME_KEY[node.kind], 0), context_of(node)
        if ctx & CTX["backward"]:
            leaf.backward_ns += t
        elif ctx & CTX["forward"]:
            leaf.forward_ns += t
        else:
            leaf.other_ns += t
    return out


def _lines(
    session: Session, use_text: bool
) -> tuple[dict[LineKey, LineCost], dict[str, int], dict[str, int]]:
    """Lines of ``session`` keyed for matching, its totals, and the work under no line. The
    tree is gone when this returns: two sessions' whole trees are never held at once."""
    root = report_tree(session, contexts=True)
    sources = session_sources(session.typed_meta)
    leaves = _line_leaves(root)
    spreads: dict[tuple[str, int, str], dict[str, int]] | None = None
    if has_moments(session):
        spreads = {}
        for row in flatten_by_line(SpreadTable(session).tree()):
            n = row.node
            add_metrics(spreads.setdefault((n.file, n.line, n.name), {}), row.self)
    costs: list[LineCost] = []
    on_lines: dict[str, int] = {}
    for row in flatten_by_line(root):
        node = row.node
        text = sources.get(node.file, {}).get(node.line) if use_text else None
        costs.append(
            LineCost(
                node.file,
                node.line,
                node.name,
                text.strip() if text is not None else None,
                dict(row.self),
                dict(row.inclusive),
                leaves.get((node.file, node.line), {}),
                spreads.get((node.file, node.line, node.name), {}) if spreads is not None else None,
            )
        )
        add_metrics(on_lines, row.self)
    off = {k: v - on_lines.get(k, 0) for k, v in root.inclusive.items() if k not in ("min_ns", "max_ns")}
    # Identity: (file name, function, text or line number); repeats told apart by their order.
    groups: dict[LineIdent, list[LineCost]] = {}
    for c in costs:
        ident: LineIdent = (
            os.path.basename(c.file),
            function_key(c.function),
            ("text", c.text) if c.text is not None else ("line", c.line),
        )
        groups.setdefault(ident, []).append(c)
    keyed: dict[LineKey, LineCost] = {}
    for ident, group in groups.items():
        group.sort(key=lambda c: (c.file, c.line))
        for i, c in enumerate(group):
            keyed[(*ident, i)] = c
    return keyed, {k: v for k, v in root.inclusive.items() if k not in ("min_ns", "max_ns")}, off


def _side(label: str, session: Session, totals: dict[str, int], off: dict[str, int], scale: int) -> Side:
    cost = calibration(session.typed_meta)
    # The untraced step only when dlpt's cost was measured well enough (dlpt.model.calibration).
    untraced = step_time(session.typed_meta, "untraced") if cost.measured else None
    traced = step_time(session.typed_meta, "traced")
    step = untraced or traced
    has_steps = step is not None and _steps(session) > 0
    return Side(
        label,
        _program(session),
        _steps(session),
        scale,
        bool(session_sources(session.typed_meta)),
        totals,
        off,
        step.median_ns if step is not None and _steps(session) else 0.0,
        ("untraced" if untraced is not None else "traced") if step is not None and _steps(session) else "",
        step if has_steps else None,
        cost,
        has_moments(session),
        cpu_wait(session.typed_meta),
    )


def diff_sessions(a: Session, b: Session, a_label: str = "A", b_label: str = "B") -> SessionDiff:
    """Match the lines of ``a`` and ``b`` (see the module docstring)."""
    has_a, has_b = bool(session_sources(a.typed_meta)), bool(session_sources(b.typed_meta))
    use_text = has_a and has_b
    lines_a, totals_a, off_a = _lines(a, use_text)
    lines_b, totals_b, off_b = _lines(b, use_text)
    steps_a, steps_b = _steps(a), _steps(b)
    per_step = steps_a > 0 and steps_b > 0
    side_a = _side(a_label, a, totals_a, off_a, steps_a if per_step else 1)
    side_b = _side(b_label, b, totals_b, off_b, steps_b if per_step else 1)

    if use_text:
        note = "lines matched by (file name, function, line text)"
    else:
        lacking = " and ".join(tag for tag, has in (("A", has_a), ("B", has_b)) if not has)
        note = (
            f"lines matched by (file name, function, line number): {lacking} "
            f"{'holds' if ' and ' not in lacking else 'hold'} no source text, "
            "so lines that moved do not match"
        )
    if per_step:
        note += f"; values per step (A /{steps_a}, B /{steps_b})"
    else:
        missing = [tag for tag, n in (("A", steps_a), ("B", steps_b)) if not n]
        note += (
            f"; values are totals ({' and '.join(missing)}: no steps detected, "
            "runs of different length do not compare)"
        )
    keys = list(lines_a) + [k for k in lines_b if k not in lines_a]
    rows = [LineDiff(k, lines_a.get(k), lines_b.get(k)) for k in keys]
    return SessionDiff(side_a, side_b, "text" if use_text else "line", note, rows)


def default_diff_metric(d: SessionDiff) -> Metric:
    """GPU time when either side has any, else CPU op time (as the terminal report chooses)."""
    gpu = METRICS["gpu"]
    return gpu if gpu(d.a.total) > 0 or gpu(d.b.total) > 0 else METRICS["cpu"]
