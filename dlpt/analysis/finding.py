"""A suggestion: one finding from this run, at a line, with the evidence, what to change, the
estimated gain per step and the basis of that estimate.

Findings are saved in the session (``meta.suggestions``, docs/session-format.md) as plain dicts
so that a report of a saved run shows what was found when it was recorded, even after the
rules change; :meth:`Finding.from_dict` reads them back and drops malformed entries.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Finding"]


@dataclass(frozen=True)
class Finding:
    """One suggestion.

    rule: the rule's id ("pinned_memory", ...); title: what was found, one line;
    evidence: the measured numbers, as a sentence; action: what to change;
    basis: how the gain was estimated, naming the numbers' source;
    gain_ns: estimated saving per step (per run when ``per_step`` is false);
    file/line/function: where (the user's line; empty file when the finding is about the whole
    step); numbers: the inputs of the estimate, for tools and tests.
    """

    rule: str
    title: str
    evidence: str
    action: str
    basis: str
    gain_ns: int
    per_step: bool = True
    file: str = ""
    line: int = 0
    function: str = ""
    numbers: dict[str, float | int | str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Finding | None:
        """The finding a saved dict describes; None when a field is missing or mistyped."""
        text = ("rule", "title", "evidence", "action", "basis", "file", "function")
        if not all(isinstance(d.get(k, ""), str) for k in text) or not all(
            isinstance(d.get(k), str) for k in ("rule", "title")
        ):
            return None
        gain, line = d.get("gain_ns"), d.get("line", 0)
        if not isinstance(gain, int) or isinstance(gain, bool) or not isinstance(line, int):
            return None
        numbers = d.get("numbers", {})
        return cls(
            rule=d["rule"],
            title=d["title"],
            evidence=d.get("evidence", ""),
            action=d.get("action", ""),
            basis=d.get("basis", ""),
            gain_ns=gain,
            per_step=bool(d.get("per_step", True)),
            file=d.get("file", ""),
            line=line,
            function=d.get("function", ""),
            numbers=dict(numbers) if isinstance(numbers, Mapping) else {},
        )
