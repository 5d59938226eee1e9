"""Step wall times kept in bounded memory, however long the run.

A run of two million steps must not keep two million numbers: each kind of step (traced, untraced)
keeps its count, sum, minimum and maximum exactly, and a sample of at most :data:`SAMPLE` wall
times for its median and quantiles: every step while there are fewer, then a uniform reservoir
sample (seeded, so a run's summary does not depend on chance). Thread contract: the profile
serialises step boundaries (its step lock); nothing here locks.
"""

from __future__ import annotations

import random
import statistics
from typing import Any

from dlpt.model.stats import median_interval

__all__ = ["StepTimes", "SAMPLE"]

#: Wall times kept for the quantiles; the session saves the first :data:`SAVED` of them in order.
SAMPLE = 4096
SAVED = 256


class StepTimes:
    """Wall times of one kind of step."""

    def __init__(self, seed: int = 0) -> None:
        self.n = 0
        self.total_ns = 0
        self.min_ns = 0
        self.max_ns = 0
        self.first: list[int] = []  # the first SAVED, in order (what meta.step_wall_ns keeps)
        self._sample: list[int] = []
        self._rng = random.Random(seed)

    def add(self, ns: int) -> None:
        self.n += 1
        self.total_ns += ns
        self.min_ns = ns if self.n == 1 else min(self.min_ns, ns)
        self.max_ns = max(self.max_ns, ns)
        if len(self.first) < SAVED:
            self.first.append(ns)
        if len(self._sample) < SAMPLE:
            self._sample.append(ns)
        else:  # reservoir: each of the n steps is in the sample with probability SAMPLE / n
            j = self._rng.randrange(self.n)
            if j < SAMPLE:
                self._sample[j] = ns

    def median(self) -> float:
        return float(statistics.median(self._sample)) if self._sample else 0.0

    def summary(self) -> dict[str, Any] | None:
        """``meta.step_time.<kind>``: count, mean, median, min, max, the 10th/90th percentiles and
        the median's interval (ns; 95% from 6 steps on, else min-max: docs/numbers.md); None
        without steps."""
        if not self.n:
            return None
        q = statistics.quantiles(self._sample, n=10, method="inclusive") if len(self._sample) > 1 else []
        lo, hi, _how = median_interval(self._sample)
        return {
            "n": self.n,
            "mean_ns": round(self.total_ns / self.n),
            "median_ns": round(self.median()),
            "min_ns": self.min_ns,
            "max_ns": self.max_ns,
            "p10_ns": round(q[0]) if q else self.min_ns,
            "p90_ns": round(q[-1]) if q else self.max_ns,
            "median_lo_ns": round(lo),
            "median_hi_ns": round(hi),
        }
