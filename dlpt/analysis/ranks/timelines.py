"""The ranks' timeline windows (``--timeline N``) side by side on one clock, for the page across
ranks: each rank's GPU streams, one lane each, under the steps of the job.

What a rank keeps. Its host threads, ops and sampled stacks stay on its own page: beside other
ranks what matters is where each GPU computed, communicated or sat idle, step by step. Through
the rendezvous store a rank sends only that part (:func:`gpu_part`), at most ``MAX_EVENTS``
events and only in jobs of at most ``MAX_RANKS`` ranks (more lanes than a page can show).

One clock. On one host every rank's window is timed by the same clock (CUPTI's timestamps, the
host's), so each window is placed at its own start. Across hosts those clocks are not one: each
rank's first step mark is then placed at the earliest rank's, and the page says so.

The job's steps: step k spans from the earliest rank's start of step k to the latest rank's end
of it (the same step indices on every rank: the windows cover the same counted steps).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dlpt.analysis.ranks.merge import RankSet
from dlpt.analysis.timeline import Lane, Slice, TimelineView, timeline_view
from dlpt.model.meta import Timeline, saved_dict
from dlpt.model.timeline import TRACK_KINDS

__all__ = ["MAX_RANKS", "MAX_EVENTS", "RankTimelines", "gpu_part", "side_by_side", "timeline_note"]

MAX_RANKS = 16
MAX_EVENTS = 50_000
_KEPT_TRACKS = (TRACK_KINDS.index("stream"), TRACK_KINDS.index("steps"))


def gpu_part(tl: Timeline | None) -> dict[str, Any] | None:
    """A session's ``meta.timeline`` (as saved) with only its GPU streams' and steps' events
    (None: it has none, or more than ``MAX_EVENTS`` of them)."""
    if tl is None or not tl.tracks:
        return None
    kept = {i for i, t in enumerate(tl.tracks) if t[0] in _KEPT_TRACKS}
    events = [e for e in tl.events if e[3] in kept]
    if not events or len(events) > MAX_EVENTS:
        return None
    return dict(saved_dict(tl), events=events)


@dataclass
class RankTimelines:
    """The ranks' GPU lanes on one clock (``view``), which ranks they are, and how their clocks
    were lined up ("one host's clock" or "first steps lined up: several hosts")."""

    view: TimelineView
    ranks: list[int]
    clock: str
    left_out: int = 0  # ranks with a timeline beyond MAX_RANKS


def side_by_side(rs: RankSet) -> RankTimelines | None:
    """The ranks' timelines side by side (see the module's doc); None when no rank has one."""
    shown: list[tuple[int, int, TimelineView, str]] = []  # rank, window start, view, host
    left_out = 0
    for r in rs.ranks:
        meta = r.session.typed_meta
        if meta.timeline is None:
            continue
        if len(shown) == MAX_RANKS:  # counted, not laid out: a window is up to 500,000 events
            left_out += 1
            continue
        view = timeline_view(meta)
        if view is None or not any(ln.kind == "stream" for ln in view.lanes):
            continue
        start = meta.timeline.start_ns or 0
        host = (meta.distributed.hostname if meta.distributed is not None else None) or ""
        shown.append((r.rank, start, view, host))
    if not shown:
        return None
    one_host = len({host for *_, host in shown}) == 1
    if one_host:
        t0 = min(start for _, start, _, _ in shown)
        offsets = [start - t0 for _, start, _, _ in shown]
        clock = "one host's clock"
    else:
        # Line the first step marks up: each rank's first step starts at the latest of them.
        firsts = [v.steps[0][0] if v.steps else 0 for _, _, v, _ in shown]
        offsets = [max(firsts) - f for f in firsts]
        clock = "first steps lined up (several hosts: no common clock)"
    out = TimelineView(
        dropped=sum(v.dropped for _, _, v, _ in shown),
        steps_kept=min(v.steps_kept for _, _, v, _ in shown),
        steps_requested=max(v.steps_requested for _, _, v, _ in shown),
    )
    out.lanes.append(Lane("steps (every rank)", "steps"))
    for (rank, _, view, _), off in zip(shown, offsets, strict=True):
        lane_of: dict[int, int] = {}
        for i, ln in enumerate(view.lanes):
            if ln.kind == "stream":
                lane_of[i] = len(out.lanes)
                out.lanes.append(
                    Lane(f"rank {rank} · {ln.name}", "stream", device=ln.device, stream=ln.stream)
                )
        for s in view.slices:
            lane = lane_of.get(s.lane)
            if lane is not None:
                out.slices.append(
                    Slice(lane, s.depth, s.start_ns + off, s.dur_ns, s.name, s.kind, s.line, s.corr)
                )
        out.duration_ns = max(out.duration_ns, view.duration_ns + off)
    out.steps = _job_steps(
        [[(a + off, b + off) for a, b in v.steps] for (_, _, v, _), off in zip(shown, offsets, strict=True)]
    )
    # The run's step numbers where every rank's window began at the same step (else the window's).
    started = {v.first_step for _, _, v, _ in shown}
    out.first_step = started.pop() if len(started) == 1 else 1
    for k, (a, b) in enumerate(out.steps):
        out.slices.append(Slice(0, 0, a, b - a, f"step {out.first_step + k}", "step", None))
    return RankTimelines(out, [r for r, *_ in shown], clock, left_out)


def _job_steps(per_rank: list[list[tuple[int, int]]]) -> list[tuple[int, int]]:
    """Step k from the earliest rank's start of it to the latest rank's end (the steps every
    rank's window holds)."""
    n = min((len(s) for s in per_rank), default=0)
    return [(min(s[k][0] for s in per_rank), max(s[k][1] for s in per_rank)) for k in range(n)]


def timeline_note(t: RankTimelines) -> str:
    """What the page says above the lanes."""
    more = (
        f"; {t.left_out} more rank{'s' if t.left_out != 1 else ''} with a timeline not shown"
        if t.left_out
        else ""
    )
    ranks = ", ".join(map(str, t.ranks))
    return f"GPU streams of rank{'s' if len(t.ranks) != 1 else ''} {ranks}: {t.clock}{more}"
