"""How often a verdict was right, with a 95% interval: the rows of bench/verdicts.py's tables.

A rate is hits out of n runs (or pairs of runs) whose truth was set by construction; its interval
is Wilson's score interval (it stays inside [0, 1] and is honest at 0/n and n/n, where the normal
approximation says "exactly 0%"). A target is met only when the whole interval is on its side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

Z95 = 1.959964


def wilson(hits: int, n: int) -> tuple[float, float]:
    """Wilson's 95% score interval for a proportion of ``hits`` out of ``n`` ((0, 1) for n = 0)."""
    if n <= 0:
        return 0.0, 1.0
    p = hits / n
    denom = 1 + Z95 * Z95 / n
    centre = (p + Z95 * Z95 / (2 * n)) / denom
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95 * Z95 / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Rate:
    """``hits`` of ``n`` for one verdict on one case; ``target``: (">=", 0.95) or ("<=", 0.05)."""

    case: str
    verdict: str
    hits: int
    n: int
    target: tuple[str, float] | None = None

    @property
    def rate(self) -> float:
        return self.hits / self.n if self.n else float("nan")

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.hits, self.n)

    def judged(self) -> str:
        """"meets" / "misses" when the interval is on one side of the target, "can't tell" when
        it straddles it (more runs would tell), "" without a target."""
        if self.target is None or not self.n:
            return ""
        op, t = self.target
        lo, hi = self.interval
        if op == ">=":
            return "meets" if lo >= t else "misses" if hi < t else "can't tell"
        return "meets" if hi <= t else "misses" if lo > t else "can't tell"

    def judged_point(self) -> str:
        """The target read on the observed rate alone (what a table of counts shows at a glance)."""
        if self.target is None or not self.n:
            return ""
        op, t = self.target
        ok = self.rate >= t if op == ">=" else self.rate <= t
        return "yes" if ok else "no"

    def row(self) -> str:
        lo, hi = self.interval
        target = f"{self.target[0]} {self.target[1]:.0%}" if self.target else ""
        return (
            f"| {self.case} | {self.verdict} | {self.hits}/{self.n} | {self.rate:.0%} ({lo:.0%}-{hi:.0%}) | "
            f"{target} | {self.judged_point()} | {self.judged()} |"
        )

    def as_dict(self) -> dict:
        lo, hi = self.interval
        return {
            "case": self.case, "verdict": self.verdict, "hits": self.hits, "n": self.n,
            "rate": self.rate, "lo": lo, "hi": hi,
            "target": list(self.target) if self.target else None,
            "point": self.judged_point(), "judged": self.judged(),
        }


HEADER = (
    "| case | verdict | right | rate (95%) | target | on the rate | on the interval |\n"
    "|---|---|---|---|---|---|---|"
)


def table(rates: list[Rate]) -> str:
    return "\n".join([HEADER, *(r.row() for r in rates)])
