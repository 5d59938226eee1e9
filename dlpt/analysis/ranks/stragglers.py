"""Stragglers: the rank the others wait for, how long they wait per step, and what it did then.

**Wait.** A rank waits for the others when the resource that paces its step sits idle until a
collective completes. That resource is its host or its GPU, so a rank's wait per step is the
smaller of the two:

- *host blocked*: host time in synchronising CUDA calls, plus CUDA API time beyond the least
  any rank spent in non-synchronising calls (a full launch queue blocks inside a launch; every
  rank pays the same launch overhead, so that part cancels);
- *GPU waiting*: where every rank's session has its collective kernels
  (``meta.gpu_collectives``), the time each of its collectives spun before the last rank's
  started, where its GPU had nothing else to run (:mod:`dlpt.analysis.ranks.arrivals`: matched
  across ranks by step and launch order, from durations, so no clock need be shared). Older
  sessions: communication kernels running with no other work on the device, which also holds
  the data's transfer (every rank's alike: the straggler's excess cancels it).

Both must be idle: a rank whose GPU waits while its host is still issuing the step's work
loses nothing, and one whose host blocks on a GPU that is computing is not waiting for peers.
A kernel's duration alone is no measure of waiting: a collective issued early spins until its
peers arrive, overlapped with compute.

On a CPU process group (gloo) the host waits inside the collective call itself
(``comm_wait_ns``, visible through :mod:`dlpt.capture.ranks.pycomm`): that is the wait.

**Straggler, or a slower rank.** The rank the others wait for waits least itself. It is a
candidate when the other ranks' median wait exceeds its own by ``MIN_STEP_FRACTION`` of the
median step time (and ``MIN_WAIT_NS``); when several are, those within ``MIN_OF_WORST`` of the
worst. Ranks doing the same work on a host-bound job differ by that much now and then, a
different rank from step to step. So a smaller excess, down to ``STEADY_STEP_FRACTION`` of the
step, makes a candidate too when the arrivals show it step by step (:func:`steady`): the
others' GPUs waited for this rank in at least ``STEADY_SHARE`` of ``STEADY_STEPS`` or more
steps, and its excess is at least half of theirs (so the wait the step-by-step figure speaks
of is the one that paces the ranks, not a GPU wait that their hosts hid). A 20 ms delay on one
rank of a GPU-bound 4-GPU FSDP2 job of 220 ms steps is 9% of the step and was in 19 of 19
steps; no rank of the symmetric runs was in more than 16 of 19. What it did meanwhile decides
what it is called:

- a **straggler** when work of its own explains the others' wait: lines whose cost on it
  exceeds the others' median by more than its pace explains (a ``time.sleep`` or a
  data-loading line that only it runs, a kernel on its own data), their excess together at
  least the same floor. Its *pace* is the median of its per-line cost ratios to the others,
  each line one vote, lines that wait in collectives left out (:func:`_pace`). A line's excess
  must also stand ``OWN_LINE_Z`` deviations out of its noise: sampled host time, of the samples
  behind it (:class:`Sampling`); CPU op time, of its spread from step to step (the variance of
  its per-step mean, from the second moments the session saved): one step's 20 ms preemption
  inside `y.sum().backward()` on a busy host named a symmetric rank for it. A line that stood
  out by less is ``unsure``, and the rank is neither named nor cleared ("straggler not
  decided", its lines said);
- a **slower rank** otherwise: it ran the same lines as the others, each longer by about its
  pace (a busier or slower CPU, a throttled GPU: the machine, not the program). Ranks that do
  the same work on an unevenly loaded machine are this: the report says how much slower, and
  names no straggler in the code. With no noticeable pace either, the delay is outside the
  recorded work (another process, the network): the report says the others waited for it and
  that no line of its own explains it.

Ranks within the floor differ by jitter: the report then says how close their waits are.

**Cause.** What the straggler did while the others waited: its lines whose own cost per step
(sampled host time, or GPU compute) exceeds the other ranks' median, scaled by its pace, by at
least ``CAUSE_SHARE`` of the wait; beside them, how much slower it ran the lines that every
rank ran alike (``Slowdown``).

**Where.** The collective call sites where the others spent longer than the straggler
(communication kernels on a GPU, waiting on a CPU): where the wait landed in their code.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from dlpt.analysis.ranks.arrivals import Arrivals, Lead
from dlpt.analysis.ranks.lines import LineTable, row_median
from dlpt.analysis.ranks.merge import Rank, RankSet, RankTotals, SpreadNode, median
from dlpt.model.comm_names import is_collective_op
from dlpt.model.metrics import COMM, CPU_FLOOR, METRICS, WAIT, Metric
from dlpt.model.tree import Node

__all__ = [
    "MIN_JUDGED_STEPS",
    "Site",
    "Cause",
    "Excess",
    "Slowdown",
    "Straggler",
    "Waits",
    "waits",
    "collective_sites",
    "find_stragglers",
    "explain",
    "classify",
    "MIN_STEP_FRACTION",
    "MIN_WAIT_NS",
    "MIN_OF_WORST",
    "STEADY_SHARE",
    "STEADY_STEPS",
    "STEADY_STEP_FRACTION",
    "steady",
    "Sampling",
    "host_sampling",
    "OWN_LINE_Z",
]

MIN_STEP_FRACTION = 0.1
MIN_WAIT_NS = 100_000.0
# A verdict across ranks compares each rank's per-step figures: a rank that counted fewer steps
# than this has no step median to compare (a symmetric gloo job on a busy host, one rank with 1
# counted step against the other's 9, had that rank named a straggler by its one step's
# `opt.step()`), so no verdict is given either way.
MIN_JUDGED_STEPS = 3
MIN_OF_WORST = 0.25
STEADY_STEP_FRACTION = 0.02
STEADY_SHARE = 0.9
STEADY_STEPS = 8
CAUSE_SHARE = 0.2  # a line is a cause when its excess is at least this share of the wait
MAX_CAUSES = 3
# A line is its own when it costs at least this many times the others' median, scaled by the
# rank's pace on its other lines: a busy CPU stretches a large line a little more than the rest
# (FSDP2's backward at 1.6x beside 1.3x on a lent H100 host), a line of its own (a sleep, extra
# data, a larger kernel) is absent elsewhere or a multiple of the others'.
OWN_LINE_RATIO = 1.5
# A line of its own must also stand out of the noise of sampled host time: its excess at least
# this many standard deviations of the samples behind it (Poisson: a count of c samples varies by
# sqrt(c)). On a symmetric 2-rank gloo job `opt.step()` had 3 samples in 11 steps on one rank and
# none on the other, and the rank was named a straggler for it; a 10 ms sleep over 37 steps
# stands 19 deviations out. 3: one-sided 0.13%, so a search over tens of lines stays near 5%.
OWN_LINE_Z = 3.0
NOTICEABLE_PACE = 1.05  # a slowdown on the shared lines below this is not worth a word
PACE_SHARE = 0.01  # a line votes on the pace when it holds at least this share of the others' work
PACE_LINES = 3  # lines that are not candidates needed to set the pace without the candidates
# A line votes on a pace of sampled host time only with this many samples behind the others'
# figure: a ratio to 1 sample is noise (Poisson: +-100%), to 10 within +-60% at 95%.
PACE_MIN_SAMPLES = 10

# The straggler's own GPU work at a line: kernels, copies and memsets outside communication.
GPU_COMPUTE = Metric(
    "gpu compute",
    "GPU time outside communication kernels",
    "ns",
    lambda m: METRICS["gpu"](m) - m.get("comm_ns", 0),
)
HOST = METRICS["host"]


def _at_least_0(v: Any) -> Any:
    return v.clamp(min=0) if isinstance(v, torch.Tensor) else max(0, v)


# The straggler's own host work at a line: sampled host time outside synchronising CUDA calls
# (a rank blocked in a sync is waiting, not working: counted as work, the waiting ranks' sync
# lines would look like lines they run slower, and its pace would read low), and outside the
# time its thread held the GIL without running (GIL time beyond its CPU time): a thread that
# holds the GIL has not chosen to wait (a sleep, a blocking call, a collective release it), so
# off the CPU it was kept off by the host. On a busy 2-core host a symmetric rank was named for
# `opt.step()`: 43 ms of samples in 24 steps, 16 ms of them in one `record_function.__init__`
# with 0.09 ms of CPU time. The price: a line that blocks while keeping the GIL (page faults of
# a memory-mapped file on a slow disk; CPython's own I/O releases it) is not a line of its own.
HOST_WORK = Metric(
    "host",
    "sampled host time outside synchronising CUDA calls and outside time held off the CPU",
    "ns",
    lambda m: _at_least_0(
        METRICS["host"](m)
        - m.get("sync_ns", 0)
        - _at_least_0(m.get("host_gil_ns", 0) - m.get("host_cpu_ns", 0))
    ),
)


@dataclass(frozen=True)
class Sampling:
    """How a rank's sampled host time was taken: the sampler's period and the steps its per-step
    figures are the mean of (a per-step figure of v ns rests on v * steps / period samples)."""

    period_ns: float
    steps: int

    def variance(self, per_step_ns: torch.Tensor) -> torch.Tensor:
        """The sampling variance (ns^2) of per-step figures of ``per_step_ns``: Poisson counts."""
        return per_step_ns.clamp(min=0) * self.period_ns / max(1, self.steps)


def host_sampling(rank: Rank) -> Sampling | None:
    """How ``rank`` sampled its host time; None when it did not (or its session does not say)."""
    h = rank.session.typed_meta.host
    if h is None or not h.sampling or not h.sample_hz or h.sample_hz <= 0:
        return None
    return Sampling(1e9 / h.sample_hz, rank.steps)


@dataclass
class Waits:
    """Each rank's wait per step (see the module's doc), with its two parts on a GPU job."""

    per_rank: dict[int, float]
    host_blocked: dict[int, float] = field(default_factory=dict)
    gpu_waiting: dict[int, float] = field(default_factory=dict)
    gpu: bool = True
    arrivals: Arrivals | None = None  # what the GPU part rests on (None: exposed communication)


def waits(per_rank: Mapping[int, RankTotals], arrivals: Arrivals | None = None) -> Waits:
    """Each rank's time per step spent waiting for the others; ``arrivals``: every rank's
    collectives matched (:func:`dlpt.analysis.ranks.arrivals.arrival_waits`), else the GPU part
    is exposed communication."""
    gpu = any(t.gpu for t in per_rank.values())
    if not gpu:
        return Waits({r: t.wait_ns for r, t in per_rank.items()}, gpu=False)
    launch_floor = min((max(0.0, t.api_ns - t.sync_ns) for t in per_rank.values()), default=0.0)
    host = {r: t.sync_ns + max(0.0, t.api_ns - t.sync_ns - launch_floor) for r, t in per_rank.items()}
    if arrivals is not None:
        device = {r: arrivals.per_rank.get(r, 0.0) for r in per_rank}
    else:
        device = {r: t.exposed_ns for r, t in per_rank.items()}
    return Waits({r: min(host[r], device[r]) for r in per_rank}, host, device, arrivals=arrivals)


@dataclass
class Site:
    """One collective call site: a collective op under the nearest line above it, with each
    rank's time inside it per step. The same op under the same line in several places of the
    tree (FSDP2's all-gather of each block, called from one ``x = block(x)``) is one site:
    ``paths`` counts them."""

    node: SpreadNode
    line: SpreadNode | None
    times: dict[int, float]
    paths: int = 1

    def waited_for(self, rank: int) -> float:
        """How much longer the other ranks spent here than ``rank`` (their median minus its)."""
        others = [t for r, t in self.times.items() if r != rank]
        return max(0.0, median(others) - self.times.get(rank, 0.0)) if others else 0.0


@dataclass
class Excess:
    """A rank's cost per step against the other ranks' median, in one metric."""

    metric: Metric
    own_ns: float
    others_ns: float

    @property
    def excess_ns(self) -> float:
        return self.own_ns - self.others_ns


@dataclass
class Cause(Excess):
    """A line where the straggler spent more per step than the others (their median)."""

    node: Node = field(kw_only=True)  # the line's label


@dataclass
class Slowdown(Excess):
    """How much longer a rank ran the lines every rank ran (its causes aside), per step: a
    busier or slower CPU (host) or GPU (gpu compute)."""

    @property
    def ratio(self) -> float:
        return self.own_ns / self.others_ns if self.others_ns > 0 else 1.0


@dataclass
class Straggler:
    rank: int
    waited_ns: float  # per step: the other ranks' median wait minus its own
    sites: list[Site] = field(default_factory=list)  # where the others waited, longest first
    causes: list[Cause] = field(default_factory=list)  # what it did meanwhile, largest first
    # Lines that would be causes but for the noise of host sampling: too few samples to tell.
    unsure: list[Cause] = field(default_factory=list)
    own_work_ns: float = 0.0  # its lines of its own: their excess over the others, per step
    slowdowns: list[Slowdown] = field(default_factory=list)  # the same lines, slower (host, GPU)
    unexplained: bool = False  # no work of its own explains the wait (slower, or outside the code): not named
    lead: Lead | None = None  # step by step, from arrivals: in how many steps the others' GPUs waited for it
    floor_ns: float = 0.0  # the least wait (and own work) that names it: steady ones have a lower one
    counted: int = 0  # the fewest steps any rank counted: what the per-step wait rests on

    @property
    def slowdown(self) -> Slowdown | None:
        """The larger of its slowdowns, where it ran the shared lines noticeably slower
        (``NOTICEABLE_PACE``)."""
        s = max(self.slowdowns, key=lambda d: d.excess_ns, default=None)
        return s if s is not None and s.ratio >= NOTICEABLE_PACE else None

    @property
    def unnamed_label(self) -> str:
        """The ranks tables' word for it when it is not named: what was slower, or only that
        the others waited for it."""
        d = self.slowdown
        if self.unsure:
            return "can't tell"  # a line of its own, perhaps: too few samples
        return "waited for" if d is None else "slower host" if d.metric.name == "host" else "slower GPU"

    def pace_text(self) -> str:
        """Its slowdown in words ('' when it has none): 'ran the shared lines 1.46x as long on
        its host (a busier or slower CPU)'."""
        d = self.slowdown
        if d is None:
            return ""
        what, device = ("host", "CPU") if d.metric.name == "host" else ("GPU", "GPU")
        return f"ran the shared lines {d.ratio:.2f}x as long on its {what} (a busier or slower {device})"

    def steps_text(self) -> str:
        """What the verdict rests on: in how many steps the other ranks' GPUs waited for it, from
        the arrivals ('in 19 of 19 steps'), else the counted steps its per-step wait is a mean of
        ('over 33 counted steps'; '' when not known)."""
        d = self.lead
        if d is not None:
            return f"in {d.waited_in} of {d.steps} steps"
        return f"over {self.counted} counted step{'s' if self.counted != 1 else ''}" if self.counted else ""

    def why_waited_for(self) -> str:
        """Why the others waited for it, when no line of its own explains it: its pace, or
        that nothing it ran was slower."""
        said = [t for t in (self.pace_text(), self.unsure_text()) if t]
        return "; ".join(said) or (
            "ran no line longer than the others (its delay is outside the recorded work: "
            "another process, the network)"
        )

    def unsure_text(self) -> str:
        """Its lines that stood out on too few host samples, or on too uneven steps, to tell
        ('' when none)."""
        if not self.unsure:
            return ""
        where = ", ".join(f"{os.path.basename(c.node.file)}:{c.node.line}" for c in self.unsure)
        why = []
        if any(c.metric is HOST_WORK for c in self.unsure):
            why.append("too few host samples")
        if any(c.metric is not HOST_WORK for c in self.unsure):  # CPU op time: its step-to-step spread
            why.append("steps too uneven")
        return f"ran {where} longer than the others, on {' and '.join(why)} to tell whether that is its own"


def collective_sites(rs: RankSet, root: SpreadNode, gpu: bool) -> list[Site]:
    """The outermost collective nodes of the merged tree, with each rank's time inside them
    (communication kernels on a GPU, waiting on a CPU), per step; the same op under the same
    line is one site, its times summed."""
    metric = COMM if gpu else WAIT
    ranks = rs.by_rank()
    by_label: dict[tuple[object, object], Site] = {}
    stack: list[tuple[SpreadNode, SpreadNode | None]] = [(root, None)]
    while stack:
        n, line = stack.pop()
        if n.node.kind == "op" and is_collective_op(n.node.name):
            # Only the ranks that made this call.
            times = {r: v for r, v in n.values(metric, ranks).items() if r in n.inclusive}
            if not any(times.values()):
                continue
            key = (line.node.key if line is not None else None, n.node.key)
            site = by_label.get(key)
            if site is None:
                by_label[key] = Site(n, line, times)
            else:
                for r, v in times.items():
                    site.times[r] = site.times.get(r, 0.0) + v
                site.paths += 1
            continue
        here = n if n.node.kind == "frame" else line
        stack.extend((c, here) for c in n.children.values())
    return [s for s in by_label.values() if len(s.times) >= 2]


def find_stragglers(
    w: Waits, totals: Mapping[int, RankTotals], sites: list[Site] | None = None
) -> list[Straggler]:
    """The ranks the others waited for long enough to matter, the longest wait first."""
    named: list[Straggler] = []
    for r, own in w.per_rank.items():
        others = [v for o, v in w.per_rank.items() if o != r]
        if others:
            named.append(Straggler(r, max(0.0, median(others) - own)))
    step = median([t.step_wall_ns for t in totals.values() if t.step_wall_ns > 0])
    worst = max((s.waited_ns for s in named), default=0.0)
    for s in named:
        s.lead = w.arrivals.lead(s.rank) if w.arrivals is not None else None
        s.floor_ns = max(MIN_WAIT_NS, (STEADY_STEP_FRACTION if steady(s) else MIN_STEP_FRACTION) * step)
    named = [s for s in named if s.waited_ns >= max(s.floor_ns, MIN_OF_WORST * worst)]
    for s in named:
        s.sites = sorted(
            (x for x in sites or [] if x.waited_for(s.rank) > 0), key=lambda x: -x.waited_for(s.rank)
        )
    return sorted(named, key=lambda s: (-s.waited_ns, s.rank))


def steady(s: Straggler) -> bool:
    """Whether the others waited for ``s`` step by step (see the module's doc): in at least
    ``STEADY_SHARE`` of ``STEADY_STEPS`` or more steps, with its wait at least half of what the
    step-by-step arrivals say."""
    d = s.lead
    return (
        d is not None
        and d.steps >= STEADY_STEPS
        and d.waited_in >= STEADY_SHARE * d.steps
        and s.waited_ns >= 0.5 * d.median_ns
    )


def explain(
    s: Straggler, lines: LineTable, gpu: bool, sampling: Mapping[int, Sampling] | None = None
) -> None:
    """Fill ``s``'s causes (its lines of its own, largest first), ``own_work_ns`` (their excess
    per step; a line's larger excess of the two metrics) and its slowdowns on the shared lines.
    ``sampling``: each rank's host sampling, for the noise a sampled line's excess must stand out
    of (none: taken as exact)."""
    col = lines.column.get(s.rank)
    if col is None or len(lines) == 0 or len(lines.order) < 2:
        return
    others = [i for i in range(len(lines.order)) if i != col]
    found: list[Cause] = []
    own_work = torch.zeros(len(lines), dtype=torch.float64)
    # Lines where any rank waited for a collective measure waiting, not work: never a pace.
    waiting = (lines.values(WAIT) > 0).any(dim=1) | (lines.values(COMM) > 0).any(dim=1)
    floor = max(CAUSE_SHARE * s.waited_ns, 1.0)
    per_metric = []
    for metric in [HOST_WORK, GPU_COMPUTE] if gpu else [HOST_WORK, METRICS["cpu"]]:
        v = lines.values(metric).to(torch.float64)
        own, rest = v[:, col], row_median(v[:, others]).to(torch.float64)
        candidate = own - rest >= floor
        measured = ~waiting
        if metric is HOST_WORK and sampling:
            measured &= _others_samples(v, others, lines.order, sampling) >= PACE_MIN_SAMPLES
        per_metric.append((metric, v, candidate, _pace(own, rest, candidate, measured)))
    # One pace for the rank: a busier host slows everything it does, and each metric sees that
    # with noise of its own (CPU op time of short ops hardly at all); a line of its own must
    # stand out above the larger of the two.
    k = max(p for *_, p in per_metric)
    for metric, v, candidate, _ in per_metric:
        own, rest = v[:, col], row_median(v[:, others]).to(torch.float64)
        beyond = own - k * rest  # what the same lines, run at its pace, do not explain
        mine = candidate & (beyond >= floor) & (own >= OWN_LINE_RATIO * k * rest)
        if metric is METRICS["cpu"]:
            mine &= ~_same_work_at_fastest(lines, col, others)
        sd = _noise_sd(metric, v, col, others, k, lines, sampling)
        if sd is not None:
            noisy = mine & (beyond < OWN_LINE_Z * sd)
            s.unsure += [
                Cause(metric, float(own[i]), float(rest[i]), node=lines.labels[i]) for i in _indices(noisy)
            ]
            mine &= ~noisy
        own_work = torch.maximum(own_work, torch.where(mine, beyond, torch.zeros_like(beyond)))
        for i in _indices(mine):
            found.append(Cause(metric, float(own[i]), float(rest[i]), node=lines.labels[i]))
        shared = (rest > 0) & ~mine
        s.slowdowns.append(Slowdown(metric, float(own[shared].sum()), float(rest[shared].sum())))
    found.sort(key=lambda c: -c.excess_ns)
    s.causes = found[:MAX_CAUSES]
    s.unsure = sorted(s.unsure, key=lambda c: -c.excess_ns)[:MAX_CAUSES]
    s.own_work_ns = float(own_work.sum())


def _same_work_at_fastest(lines: LineTable, col: int, others: list[int]) -> torch.Tensor:
    """Per line, whether its CPU ops' floor (calls x each op's fastest call, ``cpu_floor_ns``)
    on the rank is within OWN_LINE_RATIO of the others' median: the same work, which a busy host
    stretched by preempting its calls (a preemption lengthens the call it lands in, not the
    fastest one). A symmetric gloo job on a busy host had one rank's LINE-WORK at 2.2x the
    other's CPU op time, steady over its 7 steps, and named it a straggler; its floor was 1.01x
    the other's (bench/verdicts.py ranks). False where either side has no floor (sessions from
    before floors, lines without CPU ops)."""
    fv = lines.values(CPU_FLOOR).to(torch.float64)
    own = fv[:, col]
    rest = row_median(fv[:, others]).to(torch.float64) if others else torch.zeros_like(own)
    return (own > 0) & (rest > 0) & (own < OWN_LINE_RATIO * rest)


def _indices(mask: torch.Tensor) -> list[int]:
    return [int(i) for i in torch.nonzero(mask).flatten().tolist()]


def _noise_sd(
    metric: Metric,
    v: torch.Tensor,
    col: int,
    others: list[int],
    k: float,
    lines: LineTable,
    sampling: Mapping[int, Sampling] | None,
) -> torch.Tensor | None:
    """Per line, the standard deviation of ``own - k * rest`` in ``metric`` that a line of its
    own must stand out of (None: the metric is taken as exact): sampled host time varies with
    its samples (:func:`_sampling_sd`); CPU op time, measured on every op, varies from step to
    step, and a burst in one step (the rank's thread preempted inside a line for 20 ms on a busy
    host) moves its mean by the burst over the steps (:func:`_spread_sd`)."""
    if metric is HOST_WORK:
        return _sampling_sd(v, col, others, k, lines.order, sampling) if sampling else None
    if metric is METRICS["cpu"]:
        return _spread_sd(lines.mean_variance("cpu_ns"), col, others, k)
    return None


def _spread_sd(var: torch.Tensor, col: int, others: list[int], k: float) -> torch.Tensor:
    """From each line's variance of its per-step mean on every rank ([lines, ranks]): the
    rank's own plus k^2 times a typical other rank's (their median, as :func:`_sampling_sd`)."""
    rest = (
        row_median(var[:, others]).to(torch.float64)
        if others
        else torch.zeros(var.shape[0], dtype=torch.float64)
    )
    return (var[:, col] + k * k * rest).sqrt()


def _sampling_sd(
    v: torch.Tensor, col: int, others: list[int], k: float, order: list[int], sampling: Mapping[int, Sampling]
) -> torch.Tensor:
    """Per line, the standard deviation of ``own - k * rest`` from host sampling alone, where the
    line is not the rank's own (the hypothesis its excess is tested against): the rank's own
    variance plus k^2 times a typical other rank's (the median of theirs: the others' median
    varies less than one rank, so this errs wide). Each side's Poisson variance is taken at the
    larger of its level and the other side's, scaled by the pace: a count of 1 estimates a
    variance of 1 however high the true rate may be, and one rank's line at 1 ms a step against
    another's single sample over 5 steps stood 3.2 deviations out that way (1.7 here). Ranks
    without sampling add none."""
    zero = torch.zeros(v.shape[0], dtype=torch.float64)
    own = v[:, col]
    levels = torch.maximum(v, (own / max(k, 1e-9)).unsqueeze(1))  # the others' at the larger
    levels[:, col] = torch.maximum(own, k * row_median(v[:, others]).to(torch.float64)) if others else own
    var = torch.stack(
        [
            how.variance(levels[:, c]) if (how := sampling.get(rank)) is not None else zero
            for c, rank in enumerate(order)
        ],
        dim=1,
    )
    return _spread_sd(var, col, others, k)


def _others_samples(
    v: torch.Tensor, others: list[int], order: list[int], sampling: Mapping[int, Sampling]
) -> torch.Tensor:
    """Per line, the host samples behind a typical other rank's figure (their median; a rank
    without sampling counts as exact: unlimited)."""
    counts = [
        v[:, c] * how.steps / how.period_ns
        if (how := sampling.get(order[c])) is not None
        else torch.full_like(v[:, c], math.inf)
        for c in others
    ]
    return (
        row_median(torch.stack(counts, dim=1)).to(torch.float64)
        if counts
        else torch.zeros(v.shape[0], dtype=torch.float64)
    )


def _pace(own: torch.Tensor, rest: torch.Tensor, candidate: torch.Tensor, measured: torch.Tensor) -> float:
    """The rank's pace on the lines every rank runs: the median of its per-line cost ratios to
    the others, each line one vote (at least 1: a rank faster on the shared lines has none of its
    wait to explain by pace). A uniformly busier CPU or a throttled GPU stretches every line by
    about this; a line of its own stands out above it. The lines that vote: run by every rank,
    at least ``PACE_SHARE`` of the others' work, not waiting in collectives; the candidates left
    out when :data:`PACE_LINES` others remain (a line of its own must not set the pace it is
    measured against), all of them otherwise (a busier host makes every line a candidate: it is
    then the pace, not a line of its own; with two lines the two cannot be told apart). Only
    ``measured`` lines vote: not waiting in collectives, and in sampled host time with at least
    ``PACE_MIN_SAMPLES`` behind the others' figure (a 30 ms sleep line that the other rank's
    sampler caught once, evaluating the `if`, set a pace of 279x and hid the sleep)."""
    shared = (rest > 0) & (own > 0) & measured
    if bool(shared.any()):
        shared &= rest >= PACE_SHARE * float(rest[shared].sum())
    votes = shared & ~candidate
    if int(votes.sum()) < PACE_LINES:
        votes = shared
    if not bool(votes.any()):
        return 1.0
    return max(1.0, float(torch.median(own[votes] / rest[votes])))


def classify(
    s: Straggler, lines: LineTable, gpu: bool, step_ns: float, sampling: Mapping[int, Sampling] | None = None
) -> None:
    """Explain ``s`` and decide what it is: a straggler when its own work accounts for its
    floor (``s.floor_ns``: ``MIN_STEP_FRACTION`` of the step, less when steady); otherwise not
    named (``unexplained``): it ran the shared lines slower (its pace says how much), or its
    delay is outside the recorded work (another process, the network) and no line of the
    program is to blame. With no lines to compare (sessions without them) it stays a
    straggler, causes unknown."""
    explain(s, lines, gpu, sampling)
    if s.rank not in lines.column or len(lines) == 0:
        return
    floor = s.floor_ns or max(MIN_WAIT_NS, MIN_STEP_FRACTION * step_ns)
    # Ranks doing the same work differ by a few lines' worth of jitter, which can put one of
    # them a tenth of a step behind the others now and then with nothing of its own to show:
    # naming it would send its user looking for a line that is not there.
    s.unexplained = s.own_work_ns < floor
