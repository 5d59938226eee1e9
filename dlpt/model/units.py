"""How dlpt writes numbers: durations, counts, bytes and shares, per profiled step or per run.

One place for every front-end: the terminal report (whose :class:`~dlpt.renderers.terminal.format.Fmt`
adds escaping and source text), the report model's sentences (:mod:`dlpt.analysis.report`), the
suggestions' evidence and the HTML page (which gets the same rules as data), so a number reads the
same wherever it is shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["Units", "PLAIN"]


class _HasUnit(Protocol):
    @property
    def unit(self) -> str: ...


@dataclass(frozen=True)
class Units:
    """``steps`` > 0 divides totals by the number of profiled steps (``per_step=False`` formats a
    value as given); ``ascii`` writes ``us`` instead of ``µs``."""

    steps: int = 0
    ascii: bool = False

    def scale(self, v: float) -> float:
        return v / self.steps if self.steps > 0 else v

    def time(self, ns: float, per_step: bool = True) -> str:
        """Nanoseconds as ``1.23s``, ``12.35ms``, ``123.4µs`` or ``850ns``; zero as ``0s`` (a
        zero has a unit too: ``wall 0s``, never a bare ``0``)."""
        v = self.scale(ns) if per_step else ns
        a = abs(v)
        if a >= 1e9:
            return f"{v / 1e9:.2f}s"
        if a >= 1e6:
            return f"{v / 1e6:.2f}ms"
        if a >= 1e3:
            return f"{v / 1e3:.1f}{'us' if self.ascii else 'µs'}"
        if a == 0:
            return "0s"
        return f"{v:.0f}ns"

    def count(self, n: float, per_step: bool = True) -> str:
        """An event count; per step it may be fractional (one decimal: ``6.1``), and a value that
        is whole at that precision is written whole (``1``, never ``1.0``); a count too small
        for one decimal is ``<0.1``, never a ``0`` that hides it."""
        v = self.scale(n) if per_step else n
        r = round(v, 1)
        if r == 0 and v != 0:
            return "<0.1"
        if r == int(r):
            return f"{int(r):,}"
        return f"{r:,.1f}"

    def bytes(self, b: float, per_step: bool = True) -> str:
        """Bytes in binary units: ``512 B``, ``12.0 KiB``, ``3.50 GiB``."""
        v = self.scale(b) if per_step else b
        for unit in ("B", "KiB", "MiB", "GiB"):
            if abs(v) < 1024 or unit == "GiB":
                return f"{v:.0f} {unit}" if unit == "B" else f"{v:.1f} {unit}"
            v /= 1024
        return f"{v:.1f} TiB"  # pragma: no cover - loop always returns

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
