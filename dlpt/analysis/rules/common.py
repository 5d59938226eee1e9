"""What the rules share: where a finding is (the user's line), when a gain is worth reporting,
and number formatting for evidence sentences (per-step values, already divided)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

from dlpt.analysis.inputs import Analysis
from dlpt.model.tree import Node
from dlpt.model.units import PLAIN

__all__ = [
    "Location",
    "MIN_GAIN_SHARE",
    "MIN_GAIN_NS",
    "significant",
    "where",
    "ms",
    "size",
    "gbs",
    "lines_of",
    "per_step_text",
    "CALIBRATED_BASIS",
    "with_traced",
    "own_cost_on",
]

#: Added to a basis when the numbers were rescaled to the untraced step (dlpt.analysis.idle).
CALIBRATED_BASIS = (
    "; times of the traced step scaled to the step time measured untraced in the same run "
    "(dlpt's own cost taken out)"
)

#: A finding is reported when its gain is at least this share of the mean step wall time...
MIN_GAIN_SHARE = 0.005
#: ...and at least this many nanoseconds per step.
MIN_GAIN_NS = 1_000


def significant(a: Analysis, gain_ns: float) -> bool:
    """Whether a gain (per step) is worth a suggestion: not lost in the step's noise."""
    wall = a.step_wall_ns
    return gain_ns >= MIN_GAIN_NS and (wall <= 0 or gain_ns >= MIN_GAIN_SHARE * wall)


class Location(TypedDict):
    """The location fields of a :class:`~dlpt.analysis.finding.Finding`."""

    file: str
    line: int
    function: str


def where(line: Node | None) -> Location:
    """The location of a finding at a frame node (empty for None: about the whole step)."""
    if line is None:
        return {"file": "", "line": 0, "function": ""}
    return {"file": line.file, "line": line.line, "function": line.name}


def ms(ns: float) -> str:
    """A duration as the reports print it ("1.20ms", "35.0µs")."""
    return PLAIN.time(ns, per_step=False)


def size(nbytes: float) -> str:
    return PLAIN.bytes(nbytes, per_step=False)


def gbs(nbytes: float, ns: float) -> str:
    """Bytes per nanosecond is GB/s."""
    return f"{nbytes / ns:.1f} GB/s" if ns > 0 else "-"


def per_step_text(a: Analysis) -> str:
    return "per step" if a.steps > 0 else "in the run"


def lines_of(a: Analysis, kinds: tuple[str, ...]) -> Iterator[tuple[Node, Node | None]]:
    """(node, its user line) for every node of one of ``kinds`` in ``a``'s tree."""
    for node, line in a.lines:
        if node.kind in kinds:
            yield node, line


def with_traced(value_ns: float, traced_ns: float | None) -> str:
    """``5.10ms``, or ``5.10ms (7.00ms traced)`` when a calibrated value differs from the traced
    one it came from."""
    if traced_ns is None or round(traced_ns) == round(value_ns):
        return ms(value_ns)
    return f"{ms(value_ns)} ({ms(traced_ns)} traced)"


def own_cost_on(a: Analysis, calls_per_step: float) -> float | None:
    """dlpt's own cost per step on ``calls_per_step`` op calls: the traced step's excess over the
    untraced one, shared out over the step's op calls, since the op callbacks are what tracing
    adds per call. The excess is the calibration's where it is measured well enough, else the
    largest of the untraced windows' against their traced neighbours (fewer than the header
    needs; the largest, since a gain is then the smaller); None without an untraced window."""
    step_calls = a.totals.get("calls", 0) / a.per
    if step_calls <= 0 or a.steps <= 0:
        return None
    untraced = a.untraced_step
    if untraced is not None:
        excess = a.traced_step_ns - untraced.median_ns
    else:
        windows = a.meta.step_time.paired if a.meta.step_time is not None else None
        if not windows:
            return None
        excess = max(w.traced_ns - w.untraced_ns for w in windows)
    return max(0.0, excess) * min(1.0, calls_per_step / step_calls)
