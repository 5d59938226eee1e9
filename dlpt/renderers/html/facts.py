"""The header of an HTML report, from the report model (:mod:`dlpt.analysis.report`): the same
facts as the terminal header, laid out as key/value facts, per-step totals, a busy meter per GPU,
the MFU and idle lines, the warnings, the suggestions and the torch.compile summary. Nothing is
computed here: strings come from the model as both reports print them, with control characters
escaped as the terminal shows them (:mod:`dlpt.model.safe_text`; the page sets them as text, never
markup).
"""

from __future__ import annotations

from typing import Any

from dlpt.model.safe_text import escape_control as clean
from dlpt.views.run import Fact, Located, Report

__all__ = ["header_facts"]

#: Facts the page shows as key/value pairs (in the header's order).
#: Kinds the page shows in places of their own (totals, devices, insight lines, versions).
_PLACED = ("totals", "device", "measure", "versions")
_FACT_KINDS = (
    "headline",
    "run",
    "steps",
    "step_wall",
    "warmup",
    "outside",
    "outside_work",
    "communication",
    "graphs",
    "memory",
    "pc_sampling",
    "ops",
    "cost",
)


def _is_fact(f: Fact) -> bool:
    return f.kind in _FACT_KINDS and bool(f.label) and not f.warning


def _is_notice(f: Fact) -> bool:
    """Shown in the page's notice box: warnings, and what the page has no other place for."""
    if f.warning:
        return True
    return not _is_fact(f) and f.kind not in _PLACED and not (f.kind == "capture" and f.level == "dim")


def _located(rows: tuple[Located, ...]) -> list[dict[str, Any]]:
    # ``file`` stays as recorded: it is the key the source view looks the line up by.
    return [
        {"file": r.file, "line": r.line, "function": clean(r.function), "reason": clean(r.reason)}
        for r in rows
    ]


def header_facts(report: Report) -> dict[str, Any]:
    """The page's ``header`` object (read by ``assets/header.js``)."""
    # What a flag asked for leads, as in the compact terminal header (issue 48).
    rest = [f for f in report.header if f not in report.headlines]
    facts = [[clean(f.label), clean(f.value)] for f in [*report.headlines, *rest] if _is_fact(f)]
    if report.rank:
        facts.insert(0, ["rank", clean(report.rank)])
    versions = report.facts("versions")
    compiled = report.compile
    return {
        "title": clean(report.title),
        "facts": facts,
        "totals_label": report.totals_label,
        "totals": [[f.label, clean(f.value)] for f in report.totals],
        "devices": [
            {
                "name": clean(f.label),
                "busy_pct": round(100 * f.share, 1) if f.share is not None else None,
                "text": clean(f.value),
            }
            for f in report.facts("device")
        ],
        "compile": None
        if compiled is None
        else {
            "summary": compiled.text,
            "breaks": _located(compiled.breaks),
            "recompiles": _located(compiled.recompiles),
        },
        # Every other statement: warnings, and notes that have no place of their own.
        "warnings": [{"level": f.level, "text": clean(f.text)} for f in report.header if _is_notice(f)],
        "insights": {
            "lines": [clean(f.text) for f in report.facts("measure")],
            "suggestions": [
                {
                    "gain": clean(s.gain),
                    "where": clean(s.where),
                    "file": s.finding.file,
                    "line": s.finding.line,
                    "title": clean(s.finding.title),
                    "evidence": clean(s.finding.evidence),
                    "action": clean(s.finding.action),
                    "basis": clean(s.finding.basis),
                }
                for s in report.suggestions
            ],
        },
        "versions": clean(versions[0].text) if versions else "",
    }
