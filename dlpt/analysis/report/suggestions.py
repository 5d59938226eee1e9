"""The wording of a suggestion: its gain (``-1.20ms/step``, ``-9.10s once``) and where it is
(``train.py:40 train_step``, or ``the whole step``)."""

from __future__ import annotations

import os

from dlpt.analysis.finding import Finding
from dlpt.analysis.report.model import Suggestion
from dlpt.model.units import Units

__all__ = ["gain_text", "where_text", "suggestion"]


def gain_text(f: Finding, units: Units) -> str:
    """The gain, and the traced one beside it when it was calibrated to the untraced step and
    differs: ``-5.10ms/step (-7.00ms traced)``; a memory finding's bytes off the peak."""
    freed = f.numbers.get("freed_bytes")  # a memory finding: bytes off the peak, not time
    if isinstance(freed, int) and not f.gain_ns:
        b = units.bytes(freed, per_step=False)
        return f"-{b} peak" if f.per_step else f"-{b} at the failure"
    t = units.time(f.gain_ns, per_step=False)
    text = f"-{t}/step" if f.per_step else f"-{t} once"
    traced = f.numbers.get("traced_gain_ns")
    if isinstance(traced, int) and not isinstance(traced, bool) and traced != f.gain_ns:
        text += f" (-{units.time(traced, per_step=False)} traced)"
    return text


def where_text(f: Finding) -> str:
    if not f.file:
        return "the whole step"
    return f"{os.path.basename(f.file) or f.file}:{f.line} {f.function}".rstrip()


def suggestion(f: Finding, units: Units) -> Suggestion:
    return Suggestion(f, gain_text(f, units), where_text(f))
