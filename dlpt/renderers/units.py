"""The units numbers are written in, as one table: the terminal report's :class:`~dlpt.renderers.format.Fmt`
formats with it, and the HTML report gets it as data (:func:`units_model`, the page model's
``units``) and formats with the same steps in ``assets/util.js``, so the two cannot drift.

A value takes the first step, from the largest, whose size is at most its magnitude (the
smallest step below that), and is written as ``value / size`` with the step's decimals, rounded
half to even as Python's ``format`` does; an exact zero is written as ``zero`` where the scale
has one (``0`` rather than ``0ns``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Step", "Scale", "TIME", "BYTES", "COUNT_DECIMALS", "COUNT_GROUP", "units_model"]


@dataclass(frozen=True)
class Step:
    """One unit of a scale: ``size`` base units make one ``label``; ``ascii`` replaces the
    label on an ASCII console."""

    size: float
    label: str
    decimals: int
    ascii: str | None = None

    def name(self, ascii: bool) -> str:
        return self.ascii if ascii and self.ascii is not None else self.label


@dataclass(frozen=True)
class Scale:
    """Units of one quantity, largest first; ``sep`` goes between number and unit."""

    steps: tuple[Step, ...]
    sep: str
    zero: str | None = None

    def format(self, v: float, ascii: bool = False) -> str:
        if v == 0 and self.zero is not None:
            return self.zero
        a = abs(v)
        step = next((s for s in self.steps if a >= s.size), self.steps[-1])
        return f"{v / step.size:.{step.decimals}f}{self.sep}{step.name(ascii)}"


#: Nanoseconds: ``1.23s``, ``12.35ms``, ``123.4µs``, ``850ns``, ``0``.
TIME = Scale(
    (Step(1e9, "s", 2), Step(1e6, "ms", 2), Step(1e3, "µs", 1, ascii="us"), Step(1, "ns", 0)),
    sep="",
    zero="0",
)
#: Bytes in binary units: ``512 B``, ``12.0 KiB``, ``3.5 GiB`` (GiB is the largest).
BYTES = Scale(
    (Step(1024**3, "GiB", 1), Step(1024**2, "MiB", 1), Step(1024, "KiB", 1), Step(1, "B", 0)),
    sep=" ",
)
#: Counts: whole numbers as they are, fractional ones (per step) with one decimal, grouped.
COUNT_DECIMALS = 1
COUNT_GROUP = ","


def _scale_model(s: Scale, ascii: bool) -> dict[str, Any]:
    return {
        "steps": [[st.size, st.name(ascii), st.decimals] for st in s.steps],
        "sep": s.sep,
        "zero": s.zero,
    }


def units_model(ascii: bool = False) -> dict[str, Any]:
    """The table as JSON-ready data, keyed by :class:`~dlpt.processors.Metric` unit (``ns``,
    ``bytes``, ``count``): what ``assets/util.js`` formats with (``D.setUnits``)."""
    return {
        "ns": _scale_model(TIME, ascii),
        "bytes": _scale_model(BYTES, ascii),
        "count": {"decimals": COUNT_DECIMALS, "group": COUNT_GROUP},
    }
