"""The warm-up's trend statistics in the native core (csrc/trend.h) against their definitions
written out in Python: the warm-up's cuts and ends (dlpt/capture/warmup.py) rest on them being
the same numbers, bit for bit."""

from __future__ import annotations

import random
import statistics

import pytest

from dlpt.capture.native import core
from dlpt.capture.warmup import falls, theil_sen_slope

C = core()


def slope_by_definition(values: list[float]) -> float:
    n = len(values)
    slopes = [(values[j] - values[i]) / (j - i) for i in range(n) for j in range(i + 1, n)]
    return float(statistics.median(slopes)) if slopes else 0.0


def kendall_s_by_definition(values: list[float]) -> int:
    n = len(values)
    return sum((values[j] > values[i]) - (values[j] < values[i]) for i in range(n) for j in range(i + 1, n))


def series(rng: random.Random, n: int, kind: str) -> list[float]:
    if kind == "ns":  # step walls in ns, with ties and a slow step now and then
        out = [int(2_300_000 * (1 + rng.gauss(0, 0.05))) // 1000 * 1000 for _ in range(n)]
        return [v * 3 if rng.random() < 0.1 else v for v in out]
    if kind == "falling":
        return [16e6 - 2e5 * i + rng.gauss(0, 3e5) for i in range(n)]
    return [rng.choice([1.0, 2.0, 2.0, 3.5]) for _ in range(n)]  # "ties": many equal pairs


@pytest.mark.parametrize("kind", ["ns", "falling", "ties"])
def test_native_trend_is_the_definition(kind: str) -> None:
    rng = random.Random(kind)
    for n in [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 31, 32, 33, 50]:  # odd and even pair counts
        for _ in range(20):
            values = series(rng, n, kind)
            slope, s = C.pairwise_trend(values)
            assert slope == slope_by_definition(values), (n, values)
            assert s == kendall_s_by_definition(values), (n, values)
            assert theil_sen_slope(values) == slope


def test_falls_needs_both_a_material_and_a_real_fall() -> None:
    assert falls([16e6 - 2e5 * i for i in range(16)])  # a clean 19% fall
    assert not falls([10e6 - 1e4 * i for i in range(16)])  # real but 1.5%: not material
    # Material (the median slope) but not real: half the steps jump up and down by 40%.
    zigzag = [10e6 * (1.2 if i % 2 else 0.8) - 4e4 * i for i in range(16)]
    assert not falls(zigzag)
    assert slope_by_definition(zigzag) * 15 <= -0.05 * statistics.median(zigzag)
