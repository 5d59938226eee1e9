"""Suggestions of a session: saved ones when the session has them (``meta.suggestions``, written
at stop), else derived now by running every rule (sessions saved before dlpt had rules).

Ranking: per-step gains first, largest first; then one-off gains (compile time), largest first.
A rule that fails is logged and skipped: a report never breaks over a suggestion.

A run with no counted step has no step to claim a gain per: its per-step findings are left out
(derived or saved), and only one-off ones remain. Without steps a rule's "per step" figures are
the whole run's, so "-6.02s/step" would be a claim about a step that never was.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from dlpt.analysis.finding import Finding
from dlpt.analysis.inputs import Analysis
from dlpt.analysis.rules import RULES
from dlpt.model.meta import saved_dict
from dlpt.model.metrics import METRICS

__all__ = ["derive", "bounded", "rank", "findings", "to_meta", "with_steps"]

_log = logging.getLogger(__name__)


def rank(found: list[Finding]) -> list[Finding]:
    return sorted(found, key=lambda f: (not f.per_step, -f.gain_ns, f.rule, f.file, f.line))


def bounded(f: Finding, a: Analysis) -> Finding:
    """``f`` with its per-step gain at most the step itself: no change saves more than a whole
    step, and the step is the untraced one when the run measured it (a traced step holds dlpt's
    own cost, which no change to the program removes), or the GPU time of the work a step
    launched when that is longer."""
    # The host's step time undercounts a step whose GPU work queues up behind it (no sync in the
    # loop): the GPU time of the work each step launched bounds the step from below as well.
    gpu = METRICS["gpu"](a.totals)
    cap = max(a.step_wall_ns, gpu / a.steps if a.steps > 0 else 0)
    if not f.per_step or a.steps <= 0 or cap <= 0 or f.gain_ns <= cap:
        return f
    what = "untraced step" if a.untraced_step is not None else "step"
    return replace(
        f,
        gain_ns=round(cap),
        basis=f"{f.basis}; at most the whole {what}",
        numbers={**f.numbers, "unbounded_gain_ns": f.gain_ns},
    )


def with_steps(found: list[Finding], a: Analysis) -> list[Finding]:
    """``found`` without its per-step findings when ``a`` counted no step (module docstring)."""
    return found if a.steps > 0 else [f for f in found if not f.per_step]


def derive(a: Analysis) -> list[Finding]:
    """Run every rule on ``a``; each gain bounded (:func:`bounded`); ranked; per-step ones only
    when the run counted steps."""
    out: list[Finding] = []
    for rule in RULES:
        try:
            out.extend(bounded(f, a) for f in rule(a))
        except Exception:  # noqa: BLE001 - a broken rule must not break the report; logged
            _log.debug("suggestion rule %s failed", getattr(rule, "__name__", rule), exc_info=True)
    return rank(with_steps(out, a))


def findings(a: Analysis) -> list[Finding]:
    """The session's saved suggestions if it has any list of them, else :func:`derive`'s."""
    saved = a.meta.suggestions
    if saved is not None:
        found = [f for f in (Finding.from_dict(saved_dict(d)) for d in saved) if f is not None]
        return rank(with_steps(found, a))
    return derive(a)


def to_meta(found: list[Finding]) -> list[dict[str, Any]]:
    """``meta.suggestions`` of a session."""
    return [f.to_dict() for f in found]
