"""The statistics dlpt's figures carry their spread with (docs/numbers.md): a distribution-free
interval for a median, Student's t for a mean's interval, Welch's test for the difference of two
means and Holm's correction for many of them. Pure Python (no SciPy): the t distribution's CDF
from the regularised incomplete beta function (continued fraction, Numerical Recipes 6.4)."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["median_interval", "t_cdf", "t_quantile", "mean_interval", "welch", "holm"]

#: Coverage of every interval dlpt prints.
LEVEL = 0.95


def median_interval(values: Sequence[float]) -> tuple[float, float, str]:
    """(lo, hi, how) around the median of ``values``: the order statistics that cover the median
    with at least 95% probability (binomial, distribution-free) when there are 6 or more values;
    below that no pair reaches 95%, and the min-max range is given instead (``how`` says which:
    "95%" or "min-max")."""
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        return 0.0, 0.0, "min-max"
    if n < 6:
        return xs[0], xs[-1], "min-max"
    # Largest k with P(X < k) <= 2.5%, X ~ Binomial(n, 1/2): then [x_(k), x_(n-k+1)] covers >= 95%.
    cdf, k = 0.0, 0
    for j in range(n + 1):
        p = math.comb(n, j) / 2**n
        if cdf + p > (1 - LEVEL) / 2:
            break
        cdf += p
        k = j + 1
    k = max(1, k)
    return xs[k - 1], xs[n - k], "95%"


def _betacf(a: float, b: float, x: float) -> float:
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
        c = 1.0 + aa / c if abs(c) > 1e-300 else 1e300
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
        c = 1.0 + aa / c if abs(c) > 1e-300 else 1e300
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-12:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(lbeta) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lbeta) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom (df may be fractional: Welch)."""
    if df <= 0 or math.isnan(t):
        return float("nan")
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The t such that P(T <= t) = p (bisection on :func:`t_cdf`)."""
    lo, hi = -1e3, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def mean_interval(mean: float, sd: float, n: int) -> tuple[float, float]:
    """The 95% interval of a mean of ``n`` values with standard deviation ``sd`` (Student's t);
    (mean, mean) when it cannot be computed (n < 2)."""
    if n < 2 or sd <= 0:
        return mean, mean
    half = t_quantile(1 - (1 - LEVEL) / 2, n - 1) * sd / math.sqrt(n)
    return mean - half, mean + half


def welch(mean_a: float, sd_a: float, n_a: int, mean_b: float, sd_b: float, n_b: int) -> float:
    """Two-sided p-value of Welch's t-test that two means are equal (1.0 when it cannot be
    computed: fewer than 2 values on a side; 0.0 for a difference between two exact values)."""
    if n_a < 2 or n_b < 2:
        return 1.0
    va, vb = sd_a * sd_a / n_a, sd_b * sd_b / n_b
    se2 = va + vb
    diff = mean_b - mean_a
    if se2 <= 0:
        return 1.0 if diff == 0 else 0.0
    t = diff / math.sqrt(se2)
    df = se2 * se2 / ((va * va / (n_a - 1) if va else 0.0) + (vb * vb / (n_b - 1) if vb else 0.0))
    return min(1.0, 2.0 * t_cdf(-abs(t), df))


def holm(p_values: Sequence[float], alpha: float = 1 - LEVEL) -> list[bool]:
    """Which of ``p_values`` are significant at family-wise error rate ``alpha`` (Holm-Bonferroni:
    the k-th smallest is compared with alpha / (m - k), stopping at the first that is not)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    out = [False] * m
    for rank, i in enumerate(order):
        if p_values[i] > alpha / (m - rank):
            break
        out[i] = True
    return out
