"""The suggestions of an answer: each finding with its evidence, the change to make, the gain it
predicts and the basis of that prediction (docs/query-format.md, "suggestions"). ``dlpt verify``
checks a predicted gain against the measured change of its line (:mod:`dlpt.query.gate`)."""

from __future__ import annotations

import os
from typing import Any

from dlpt.analysis.report import Report, Suggestion

__all__ = ["suggestions", "suggestion_answer"]


def suggestion_answer(s: Suggestion) -> dict[str, Any]:
    f = s.finding
    out: dict[str, Any] = {
        "rule": f.rule,
        "title": f.title,
        "gain_ns": f.gain_ns,
        "per_step": f.per_step,
        "gain": s.gain,
        "where": s.where,
    }
    if f.file:
        out["at"] = {
            "file": f.file,
            "line": f.line,
            "function": f.function,
            "where": f"{os.path.basename(f.file)}:{f.line}",
        }
    out.update(evidence=f.evidence, action=f.action, basis=f.basis)
    return out


def suggestions(report: Report) -> list[dict[str, Any]]:
    """Every suggestion of the report, in its order (largest gain first)."""
    return [suggestion_answer(s) for s in report.suggestions]
