"""How dlpt writes numbers: durations, counts, bytes and shares, per profiled step or per run.

One table for every front-end. The terminal report (whose :class:`~dlpt.renderers.terminal.format.Fmt`
adds escaping and source text), the report model's sentences (:mod:`dlpt.analysis.report`) and the
suggestions' evidence format with :class:`Units`; the HTML report gets the same table as data
(:func:`units_model`, the page model's ``units``) and formats with it in ``assets/util.js``, so the
two cannot drift (``tests/html/test_js_format.py`` runs both over the same values).

A scaled value takes the first step, from the largest, whose size is at most its magnitude (the
smallest step below that), and is written as ``value / size`` with the step's decimals, rounded
half to even as Python's ``format`` does; an exact zero is written as the scale's ``zero`` (a zero
has a unit too: ``wall 0s``, never a bare ``0``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "Units",
    "PLAIN",
    "Step",
    "Scale",
    "TIME",
    "BYTES",
    "COUNT",
    "Counts",
    "units_model",
    "flops_text",
    "rate_text",
    "separator",
]


class _HasUnit(Protocol):
    @property
    def unit(self) -> str: ...


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


@dataclass(frozen=True)
class Counts:
    """Counts: per step they may be fractional, written with ``decimals``; a value whole at that
    precision is written whole (``1``, never ``1.0``); one too small to show is ``below``, never a
    ``0`` that hides it; ``group`` separates thousands."""

    decimals: int
    group: str
    below: str

    def format(self, v: float) -> str:
        r = round(v, self.decimals)
        if r == 0 and v != 0:
            return self.below
        if r == int(r):
            return f"{int(r):{self.group}}"
        return f"{r:{self.group}.{self.decimals}f}"


#: Nanoseconds: ``1.23s``, ``12.35ms``, ``123.4µs``, ``850ns``, ``0s``.
TIME = Scale(
    (Step(1e9, "s", 2), Step(1e6, "ms", 2), Step(1e3, "µs", 1, ascii="us"), Step(1, "ns", 0)),
    sep="",
    zero="0s",
)
#: Bytes in binary units: ``512 B``, ``12.0 KiB``, ``3.5 GiB`` (GiB is the largest).
BYTES = Scale(
    (Step(1024**3, "GiB", 1), Step(1024**2, "MiB", 1), Step(1024, "KiB", 1), Step(1, "B", 0)),
    sep=" ",
)
#: Counts: ``6.1`` events per step, ``1``, ``<0.1``, ``12,000``.
COUNT = Counts(decimals=1, group=",", below="<0.1")


@dataclass(frozen=True)
class Units:
    """``steps`` > 0 divides totals by the number of profiled steps (``per_step=False`` formats a
    value as given); ``ascii`` writes ``us`` instead of ``µs``."""

    steps: int = 0
    ascii: bool = False

    def scale(self, v: float) -> float:
        return v / self.steps if self.steps > 0 else v

    def time(self, ns: float, per_step: bool = True) -> str:
        """Nanoseconds as ``1.23s``, ``12.35ms``, ``123.4µs``, ``850ns`` or ``0s``."""
        return TIME.format(self.scale(ns) if per_step else ns, self.ascii)

    def count(self, n: float, per_step: bool = True) -> str:
        """An event count (:data:`COUNT`)."""
        return COUNT.format(self.scale(n) if per_step else n)

    def bytes(self, b: float, per_step: bool = True) -> str:
        """Bytes in binary units: ``512 B``, ``12.0 KiB``, ``3.5 GiB``."""
        return BYTES.format(self.scale(b) if per_step else b)

    def value(self, metric: _HasUnit, v: float) -> str:
        """``v`` formatted in ``metric``'s unit (``ns``, ``bytes`` or a count)."""
        if metric.unit == "ns":
            return self.time(v)
        if metric.unit == "bytes":
            return self.bytes(v)
        return self.count(v)

    @staticmethod
    def pct(part: float, total: float) -> str:
        return f"{100.0 * part / total:.1f}%" if total > 0 else "-"


#: Values as given (not per step), with µs.
PLAIN = Units()


def _scale_model(s: Scale, ascii: bool) -> dict[str, Any]:
    return {"steps": [[st.size, st.name(ascii), st.decimals] for st in s.steps], "sep": s.sep, "zero": s.zero}


def units_model(ascii: bool = False) -> dict[str, Any]:
    """The table as JSON-ready data, keyed by :class:`~dlpt.model.metrics.Metric` unit
    (``ns``, ``bytes``, ``count``): what ``assets/util.js`` formats with (``D.setUnits``)."""
    return {
        "ns": _scale_model(TIME, ascii),
        "bytes": _scale_model(BYTES, ascii),
        "count": {"decimals": COUNT.decimals, "group": COUNT.group, "below": COUNT.below},
    }


def flops_text(v: float) -> str:
    """FLOPs in decimal units: ``1.18 TFLOP``, ``35.2 GFLOP``."""
    for unit, scale in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.3g} {unit}"
    return f"{v:.0f} FLOP"


def rate_text(tflops: float) -> str:
    """FLOP/s in decimal units: ``412 TFLOP/s``, ``4.81 MFLOP/s``."""
    return flops_text(tflops * 1e12) + "/s"


def separator(ascii: bool) -> str:
    """What joins the parts of one header line."""
    return " - " if ascii else " \u00b7 "
