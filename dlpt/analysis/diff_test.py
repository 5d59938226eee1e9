"""Which lines changed between two runs, beyond what the whole run shares: ``dlpt diff``'s
verdicts (docs/numbers.md, "dlpt diff: what is significant", has the rule and its measured rates).

Each line's change is read on a log scale: ``l = log(B / A)`` of its own cost per step. A line's
``l`` is what every line shares (the host got busier, another clock, another GPU: the *run
shift*) plus its own change plus noise, and the noise has two parts:

- per-step noise, which the run itself measures: the line's per-step spread over its steps
  (:mod:`dlpt.trees.spread`), ``s`` on the log scale;
- run-to-run noise, which one pair of runs cannot see from inside either run (a shared host is
  busier in one run's stretch of time than in the other's and the load lands unevenly on the
  lines): estimated from how far the lines' ``l`` scatter around their median beyond their
  per-step noise, pooled with a prior (:data:`PRIOR_LINE_NOISE`, worth :data:`PRIOR_LINES`
  lines): ``tau``.

The run shift is the median of the ``l`` of the *measurable* lines (present in both runs, at
least :data:`MIN_SHARE` of a run's total), each line one vote, not weighted by its cost: a line
that changed is an outlier among them, even when it holds most of the step (a cost-weighted
median *is* such a line). It takes :data:`MIN_LINES` measurable lines; with fewer, what the run
shares cannot be told from what one line did, and every line whose raw change would count is
"can't tell". Its own verdict: slower or faster when its 95% interval is clear of 1, "the run
as a whole did not change" only when no :data:`RUN_RESOLVE`-fold change fits the interval,
"can't tell" otherwise; in CPU op time, where the means cannot tell, the ops' fastest calls
decide (:func:`on_fastest_calls`).

A line's test: ``z = (l - shift) / sqrt(s^2 + tau^2 + var(shift) + (SHIFT_NOISE * shift)^2)``,
the shift and tau taken from the other lines (a line that changed must not widen the noise it is
tested against; from all of them when there are only three),
against Student's t with ``PRIOR_LINES + lines - 1`` degrees of freedom, the p-values
Holm-corrected over the lines tested (family-wise 5%), and a change must also be at least
:data:`MIN_EFFECT` of the line and :data:`MIN_SHARE` of the larger run's total. A line that did
not change is "within noise" only when its 95% interval rules out a :data:`RESOLVE`-fold change;
otherwise "can't tell" (lines under :data:`MIN_SHARE` of the total are not news either way). Two
runs whose shift is itself :data:`RESOLVE`-fold or more are compared line by line only when the
measurable lines agree on it (their robust scatter about it at most :data:`AGREE`): a host that
ran the whole program slower (a clock, a steady neighbour) moves every line alike, a host whose
load swung between the runs moves them unevenly. Otherwise every line is "can't tell".
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from dlpt.model.stats import holm, t_cdf, t_quantile

__all__ = [
    "LineSample",
    "Verdict",
    "RunShift",
    "judge_lines",
    "on_fastest_calls",
    "FASTEST",
    "MIN_EFFECT",
    "MIN_SHARE",
    "MIN_LINES",
    "MIN_STEPS",
    "RESOLVE",
    "RUN_RESOLVE",
    "AGREE",
    "SHIFT_NOISE",
    "PRIOR_LINE_NOISE",
    "PRIOR_LINES",
    "SLOWER",
    "FASTER",
    "SAME",
    "CANT_TELL",
]

#: The smallest change called significant, relative to the line (a line 10% slower is worth a
#: look; smaller ones on a shared host are mostly the host)...
MIN_EFFECT = 0.10
#: ...and relative to the larger run's total of the metric (a 1 us line that doubled is not news).
#: Also the share a line needs to vote on the run shift.
MIN_SHARE = 0.01
#: Measurable lines needed to tell what the whole run shares from what one line did.
MIN_LINES = 3
#: Counted steps each run needs for a line to be judged on its mean: a per-step spread from n
#: steps is uncertain by about 1/sqrt(2(n-1)) of itself (71% from 2 steps). A busy-host run
#: whose warm-up left 2 of its 20 steps called an unchanged line 0.14x "faster" beside a host
#: that stretched the other two 7x (bench/verdicts.py's cross pairs).
MIN_STEPS = 5
#: "Within noise" is said only when no change of this factor or more fits the line's interval;
#: otherwise, when no change is found, it is "can't tell" (no evidence of a change is not
#: evidence of none: on a host whose load swings between runs, a 2x line can hide).
RESOLVE = 1.5
#: "The run as a whole did not change" is said only when no change of this factor or more either
#: way fits the run shift's interval; otherwise, with an interval that holds 1, "can't tell". (The
#: shift rests on a handful of lines: with 5 lines its interval is about +-7% on a quiet host.)
RUN_RESOLVE = 1.2
#: Two runs whose whole run moved RESOLVE-fold or more are compared line by line only when the
#: measurable lines' log ratios scatter about the shift by at most this (1.4826 x their median
#: absolute deviation): ~9%. Measured (docs/numbers.md, "dlpt diff"): between runs of one program
#: on the quiet 2-core machine the whole run moved 1.5-1.9x in 12 of 60 pairs while the lines
#: agreed within 0.01-0.08; on the busy one, runs 1.5-5x apart mostly scattered 0.15-1.4.
AGREE = 0.09
#: How unevenly the lines may follow a whole run that moved: a further noise of SHIFT_NOISE x
#: |log shift| on every line's test (a run 1.8x slower leaves each line's own change +-6% less
#: certain than a run that did not move). With AGREE, chosen on tests/diff_cases.py's runs: lines
#: that follow a 2.5x host +-10-40% each are flagged wrongly in at most ~5% of pairs, a line made
#: 1.5x heavier under a 1.8x host that every line follows is found alone in ~85%.
SHIFT_NOISE = 0.1
#: What the lines' scatter is pooled with: a run-to-run noise of PRIOR_LINE_NOISE (log scale)
#: worth PRIOR_LINES lines. A handful of lines gives a scatter estimate that swings from near
#: zero to several times the truth; pooled, a few lines cannot talk it down to nothing or up
#: past every real change, and many lines outweigh it (docs/numbers.md: measured on
#: bench/verdicts.py's runs).
PRIOR_LINE_NOISE = 0.05
PRIOR_LINES = 6

SLOWER, FASTER, SAME, CANT_TELL = "slower", "faster", "same", "can't tell"
#: What a verdict judged on the ops' fastest calls rests on (Change.basis, RunShift.basis): calls
#: x each op's fastest call over the counted steps, which a busy host's preemptions do not stretch
#: (CPU op time only; dlpt.analysis.diff).
FASTEST = "fastest calls"


@dataclass(frozen=True)
class LineSample:
    """One line in both runs: per-step means and per-step standard deviations of its own cost,
    and the counted steps on each side (``sd`` None: the session saved no per-step spreads)."""

    a: float
    b: float
    sd_a: float | None
    sd_b: float | None
    n_a: int
    n_b: int

    def log_se(self) -> float | None:
        """The per-step noise of ``log(b / a)`` (delta method); None without spreads."""
        if self.sd_a is None or self.sd_b is None or self.a <= 0 or self.b <= 0:
            return None
        va = (self.sd_a / self.a) ** 2 / max(1, self.n_a)
        vb = (self.sd_b / self.b) ** 2 / max(1, self.n_b)
        return math.sqrt(va + vb)


@dataclass(frozen=True)
class RunShift:
    """What every line shares between A and B: ``factor`` (B over A; 1.0 when it cannot be
    told), its 95% interval, the measurable lines it rests on, their scatter beyond per-step
    noise (``tau``, log scale) and its verdict: SLOWER/FASTER (the interval is clear of 1), SAME
    (no RUN_RESOLVE-fold change either way fits the interval) or CANT_TELL,
    ``why`` saying on what: "host" (fewer than MIN_LINES measurable lines: the shift itself
    cannot be told, every line is judged without it) or "noise" (the interval holds both no
    change and a RUN_RESOLVE-fold one; the lines are still judged against the factor) or
    "fastest" (the means and the ops' fastest calls disagree: see on_fastest_calls).

    ``fastest`` holds the ops' fastest calls' shift and interval where they were measured (CPU
    op time), ``basis`` FASTEST where the verdict is theirs; ``factor`` and its interval stay
    the means' either way (the lines are judged after it)."""

    factor: float
    lo: float
    hi: float
    lines: int
    tau: float
    verdict: str
    scatter: float = 0.0  # the measurable lines' robust scatter about the shift (log scale)
    why: str = ""
    fastest: tuple[float, float, float] | None = None  # the fastest calls' factor, lo, hi
    basis: str = ""  # "" the verdict is the means'; FASTEST: the fastest calls'

    @property
    def known(self) -> bool:
        """Whether the shift could be estimated (MIN_LINES measurable lines): the lines are
        judged against it, whether or not the whole run's own change could be told."""
        return self.lines >= MIN_LINES

    @property
    def comparable(self) -> bool:
        """Whether the runs can be compared line by line: when the whole run moved by RESOLVE or
        more and the lines moved unevenly (a host whose load changed several-fold between the
        runs), their responses to it differ by as much as a real change (measured: 2x to 5x on
        lines of one pair); when they all moved alike (scatter within AGREE), they can."""
        return 1 / RESOLVE < self.factor < RESOLVE or self.scatter <= AGREE


@dataclass(frozen=True)
class Verdict:
    """One line's change: its ratio after the run shift with a 95% interval, the p-value and
    the verdict. ``why`` says what a CANT_TELL rests on: "host" (too few lines to tell the host
    by), "noise" (the interval holds both no change and a RESOLVE-fold one), "runs" (the whole
    run moved RESOLVE-fold: not comparable line by line) or "steps" (a run counted fewer than
    MIN_STEPS steps: its per-step noise is not measured)."""

    ratio: float  # (B / A) / shift; inf for a line new in B
    p: float
    verdict: str  # SLOWER, FASTER, SAME or CANT_TELL
    lo: float = 0.0
    hi: float = math.inf
    why: str = ""

    @property
    def significant(self) -> bool:
        return self.verdict in (SLOWER, FASTER)


def _measurable(x: LineSample, total: float) -> bool:
    return x.a > 0 and x.b > 0 and max(x.a, x.b) >= MIN_SHARE * total


def _robust_sd(values: Sequence[float], centre: float) -> float:
    """1.4826 x the median absolute deviation: a standard deviation that outliers (the lines
    that changed) do not move."""
    return 1.4826 * statistics.median(abs(v - centre) for v in values) if values else 0.0


def _shift_of(logs: Sequence[float], per_step: Sequence[float], prior: float) -> tuple[float, float, float]:
    """(shift, tau, standard error of the shift) of lines with log ratios ``logs`` and per-step
    variances ``per_step`` (log scale); tau pooled with the prior ``prior`` (see PRIOR_LINE_NOISE)."""
    shift = statistics.median(logs)
    noise = statistics.median(per_step) if per_step else 0.0
    scatter = _robust_sd(logs, shift)
    seen = max(0.0, scatter * scatter - noise)
    n = len(logs) - 1  # degrees of freedom of the scatter
    tau = math.sqrt((PRIOR_LINES * prior**2 + n * seen) / (PRIOR_LINES + n))
    # The median of n values of spread sigma has a standard error of about sqrt(pi/2) sigma/sqrt(n).
    return shift, tau, math.sqrt(math.pi / 2 * (noise + tau * tau) / len(logs))


def _df(lines: int) -> int:
    """Degrees of freedom of a noise estimated from ``lines`` lines pooled with the prior."""
    return PRIOR_LINES + max(0, lines - 1)


def _votes(lines: Sequence[LineSample], total: float) -> list[int]:
    return [i for i, x in enumerate(lines) if _measurable(x, total)]


def run_shift(lines: Sequence[LineSample], total: float, prior: float = PRIOR_LINE_NOISE) -> RunShift:
    """The run shift of ``lines`` (see the module docstring); ``total``: the larger run's total;
    ``prior``: the run-to-run noise of one line that the lines' scatter is pooled with."""
    votes = _votes(lines, total)
    if len(votes) < MIN_LINES:
        return RunShift(1.0, 1.0, 1.0, len(votes), prior, CANT_TELL, why="host")
    logs = [math.log(lines[i].b / lines[i].a) for i in votes]
    per_step = [se * se for i in votes if (se := lines[i].log_se()) is not None]
    shift, tau, se = _shift_of(logs, per_step, prior)
    half = t_quantile(0.975, _df(len(votes))) * se
    lo, hi = math.exp(shift - half), math.exp(shift + half)
    verdict = _shift_verdict(lo, hi)
    why = "noise" if verdict == CANT_TELL else ""
    return RunShift(math.exp(shift), lo, hi, len(votes), tau, verdict, _robust_sd(logs, shift), why)


def _shift_verdict(lo: float, hi: float) -> str:
    """The whole run's verdict from its 95% interval. "The run as a whole did not change" only
    when no RUN_RESOLVE-fold change either way fits, as a line is "within noise" only when no
    RESOLVE-fold change fits: between runs of one program on the busy 2-core machine the whole
    run moved 0.5x-2.5x, and "unchanged" for an interval that held 1 was said of B/A 1.87x, and
    of a slower host (every line 1.3x) in 36 of 72 cross pairs; with RUN_RESOLVE, in none
    (bench/verdicts.py judge-cross, docs/numbers.md)."""
    if lo > 1.0:
        return SLOWER
    if hi < 1.0:
        return FASTER
    if lo > 1 / RUN_RESOLVE and hi < RUN_RESOLVE:
        return SAME
    return CANT_TELL


def _against_the_others(
    lines: Sequence[LineSample], votes: list[int], i: int, prior: float
) -> tuple[float, float, float, int]:
    """(shift, tau, shift's standard error, lines) from the measurable lines other than ``i``:
    a line that changed must not widen the noise it is tested against (with a handful of
    lines, it would be a fifth of the scatter estimate). With two others, all the measurable
    lines instead: the median of two is their mean, so beside a line that changed, an unchanged
    one read as changed by the square root of it, with an interval as wide as the change; the
    median and robust scatter of three hold while one of them changed."""
    others = [j for j in votes if j != i]
    if len(others) < MIN_LINES:
        others = votes
    logs = [math.log(lines[j].b / lines[j].a) for j in others]
    per_step = [se * se for j in others if (se := lines[j].log_se()) is not None]
    shift, tau, se = _shift_of(logs, per_step, prior)
    return shift, tau, se, len(others)


@dataclass(frozen=True)
class _Test:
    ratio: float  # after the shift
    lo: float  # its 95% interval
    hi: float
    p: float
    big: bool  # at least MIN_EFFECT of the line and MIN_SHARE of the total


def _test_line(x: LineSample, against: tuple[float, float, float, int], floor: float) -> _Test:
    """``x`` against the shift of the other lines (``against``: log shift, tau, the shift's
    standard error, the lines it rests on)."""
    if x.a <= 0 or x.b <= 0:  # a line in one run only: its whole cost is the change
        big = max(x.a, x.b) >= floor
        ratio = math.inf if x.b > 0 else 0.0
        return _Test(ratio, ratio, ratio, 0.0 if big else 1.0, big)
    log_shift, tau, se_shift, n = against
    l_line = math.log(x.b / x.a) - log_shift
    se = x.log_se()
    uneven = SHIFT_NOISE * log_shift
    sd = math.sqrt((se * se if se is not None else 0.0) + tau * tau + se_shift * se_shift + uneven * uneven)
    p = max(min(1.0, 2.0 * t_cdf(-abs(l_line) / sd, _df(n))), _linear_p(x, math.exp(log_shift), n))
    half = t_quantile(0.975, _df(n)) * sd
    b_adj = x.b / math.exp(log_shift)
    d = abs(b_adj - x.a)
    # At least MIN_EFFECT of the line after the shift and MIN_SHARE of the total, of a line that
    # holds MIN_SHARE of the total in one run at least: a line of a few tenths of a percent (the
    # backward call's own engine time) is moved by a busy host in its own way, and dividing by a
    # large shift would blow its change up to a share. (The change before the shift is not
    # asked for: a line made 1.5x heavier in a run 0.66x as a whole did not move raw.)
    big = d >= MIN_EFFECT * max(x.a, b_adj) and d >= floor and max(x.a, x.b) >= floor
    return _Test(math.exp(l_line), math.exp(l_line - half), math.exp(l_line + half), p, big)


def _linear_p(x: LineSample, shift: float, n: int) -> float:
    """The p-value of the line's change on the linear scale, per-step noise alone (0 without
    spreads). The log scale's normal approximation (the delta method) holds only while each
    side's standard error is small beside its mean. A line whose cost in a run is mostly one
    step's (a busy host preempted the program inside it once: ``opt.step()`` at 2.1 µs a step,
    then 50 µs, one step of 1 ms among 21) has a log ratio of 24x whose interval the delta
    method draws far too narrow, while its mean could be anywhere from 0 to twice that. A change
    must be real on both scales; where the standard errors are small the two agree."""
    if x.sd_a is None or x.sd_b is None:
        return 0.0
    se = math.sqrt(x.sd_a**2 / max(1, x.n_a) + (x.sd_b / shift) ** 2 / max(1, x.n_b))
    if se <= 0:
        return 0.0
    return min(1.0, 2.0 * t_cdf(-abs(x.b / shift - x.a) / se, _df(n)))


def _verdict(t: _Test, passed: bool, shift: RunShift, x: LineSample, floor: float) -> Verdict:
    host_known = shift.known
    if max(x.a, x.b) >= floor and host_known and not shift.comparable:
        return Verdict(t.ratio, t.p, CANT_TELL, t.lo, t.hi, "runs")
    if max(x.a, x.b) >= floor and x.log_se() is not None and min(x.n_a, x.n_b) < MIN_STEPS:
        return Verdict(t.ratio, t.p, CANT_TELL, t.lo, t.hi, "steps")
    if passed and t.big:
        if not host_known and math.isfinite(t.ratio) and t.ratio > 0:
            return Verdict(t.ratio, t.p, CANT_TELL, t.lo, t.hi, "host")
        return Verdict(t.ratio, t.p, SLOWER if t.ratio > 1 else FASTER, t.lo, t.hi)
    if max(x.a, x.b) < floor or (1 / RESOLVE < t.lo < t.hi < RESOLVE):
        return Verdict(t.ratio, t.p, SAME, t.lo, t.hi)  # not news, or no RESOLVE-fold change fits
    return Verdict(t.ratio, t.p, CANT_TELL, t.lo, t.hi, "noise")


def judge_lines(
    lines: Sequence[LineSample], total: float, prior: float = PRIOR_LINE_NOISE
) -> tuple[RunShift, list[Verdict]]:
    """The run shift and every line's verdict, in the order of ``lines`` (see the module
    docstring). ``total``: the larger run's total of the metric, per step; ``prior``: the
    run-to-run noise of one line that the lines' scatter is pooled with (PRIOR_LINE_NOISE for
    means; dlpt.analysis.diff's floors have their own)."""
    shift = run_shift(lines, total, prior)
    votes = _votes(lines, total)
    floor = MIN_SHARE * total
    tests = [
        _test_line(
            x,
            _against_the_others(lines, votes, i, prior) if shift.known else (0.0, prior, 0.0, 1),
            floor,
        )
        for i, x in enumerate(lines)
    ]
    passed = holm([t.p for t in tests])
    return shift, [_verdict(t, ok, shift, x, floor) for t, ok, x in zip(tests, passed, lines, strict=True)]


def on_fastest_calls(means: RunShift, fastest: RunShift) -> RunShift:
    """The whole run's verdict with its ops' fastest calls beside its means (CPU op time:
    ``fastest`` is judge_lines' shift of the lines' floors). A busy host adds to the means
    wherever its preemptions land, and its load swings between runs: between runs of lines.py
    on the busy 2-core machine the means' shift of a slower host (every line 1.3x the work)
    said "slower" in 26 and 52 of 72 cross pairs of two batches and "faster" in 18 and 9, while
    the floors moved with the work (docs/numbers.md, "The whole run on its fastest calls"). The
    floors miss a change that slowed calls only some of the time, so they decide only what the
    means could not tell, and never "unchanged". Where the floors changed:

    - the means can't tell: the floors' verdict (``basis`` FASTEST);
    - the means changed the other way, or did not change: "can't tell", why "fastest";
    - the means changed the same way: the means' verdict.

    The floors' figures go beside the means' verdict whatever it is."""
    if not fastest.known:
        return means
    figures = replace(means, fastest=(fastest.factor, fastest.lo, fastest.hi))
    if not means.known or fastest.verdict not in (SLOWER, FASTER):
        return figures
    if means.verdict == CANT_TELL:
        return replace(figures, verdict=fastest.verdict, why="", basis=FASTEST)
    if means.verdict != fastest.verdict:
        return replace(figures, verdict=CANT_TELL, why="fastest")
    return figures
