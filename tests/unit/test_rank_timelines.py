"""The ranks' timeline windows side by side on one clock (dlpt/analysis/ranks/timelines.py):
each rank's GPU streams as lanes of their own under the job's steps, placed by each window's
start on one host and by the first step across hosts; the store carries only the GPU part, and
only for small jobs; the page across ranks draws them."""

from __future__ import annotations

import copy
import json
from typing import Any

from dlpt.analysis.ranks import summary as rank_summary
from dlpt.analysis.ranks.merge import rank_set
from dlpt.analysis.ranks.timelines import MAX_EVENTS, gpu_part, side_by_side, timeline_note
from dlpt.model.meta import typed_field
from dlpt.model.session import Session
from dlpt.renderers.html.ranks_page import build_ranks_model
from dlpt.views.ranks import ranks_view
from tests import rank_sessions as R
from tests.timeline_sessions import timeline_meta

MS = 1_000_000


def _with_timeline(rank: int, start_shift_ns: int, host: str | None = None) -> Session:
    s = R.ddp_gpu(rank, 2)
    tl = timeline_meta()
    tl["start_ns"] += start_shift_ns
    s.set_meta("timeline", tl)
    if host is not None:
        s.set_meta("distributed", dict(s.meta["distributed"], hostname=host))
    return s


def _ranks(sessions: list[Session]) -> Any:
    return rank_set([(f"run.rank{i}.json", s) for i, s in enumerate(sessions)])


def test_one_host_places_each_window_at_its_own_start() -> None:
    # Rank 1's window started 0.5 ms after rank 0's, on the same host's clock.
    t = side_by_side(_ranks([_with_timeline(0, 0, "node0"), _with_timeline(1, MS // 2, "node0")]))
    assert t is not None and t.ranks == [0, 1] and t.clock == "one host's clock"
    names = [ln.name for ln in t.view.lanes]
    assert names == ["steps (every rank)", "rank 0 · GPU 0 stream 7", "rank 1 · GPU 0 stream 7"]
    kernels = {s.lane: s.start_ns for s in t.view.slices if s.kind == "kernel"}
    assert kernels == {1: 200_000, 2: 200_000 + MS // 2}
    # Host threads stay on each rank's own page.
    assert not any(s.kind in ("op", "api", "sync", "frame") for s in t.view.slices)
    # Step k spans the earliest start to the latest end of it on any rank.
    assert t.view.steps == [(0, 2 * MS + MS // 2), (2 * MS, 4 * MS + MS // 2)]


def test_across_hosts_the_first_steps_are_lined_up() -> None:
    # Another host's clock is 7 s off: its window start says nothing about when it ran.
    t = side_by_side(_ranks([_with_timeline(0, 0, "node0"), _with_timeline(1, 7 * 10**9, "node1")]))
    assert t is not None and "several hosts" in t.clock
    kernels = sorted(s.start_ns for s in t.view.slices if s.kind == "kernel")
    assert kernels == [200_000, 200_000]


def test_no_timeline_no_lanes() -> None:
    assert side_by_side(_ranks([R.ddp_gpu(0, 2), R.ddp_gpu(1, 2)])) is None


def test_the_store_carries_the_gpu_part_only_and_bounded() -> None:
    s = _with_timeline(0, 0)
    part = gpu_part(s.typed_meta.timeline)
    assert part is not None
    kinds = {part["tracks"][e[3]][0] for e in part["events"]}
    assert kinds == {1, 2}  # GPU streams and steps; no host thread
    big = copy.deepcopy(s.meta["timeline"])
    big["events"] += [[4, 0, 1, 2, 0, -1, 0, 0]] * MAX_EVENTS
    assert gpu_part(typed_field({"timeline": big}, "timeline")) is None
    with_tl = rank_summary.decode(rank_summary.encode(s, timeline=True), "rank 0").session
    without = rank_summary.decode(rank_summary.encode(s), "rank 0").session
    assert with_tl.meta["timeline"]["events"] == part["events"] and "timeline" not in without.meta


def test_the_page_across_ranks_draws_the_lanes() -> None:
    rep = ranks_view(_ranks([_with_timeline(0, 0, "node0"), _with_timeline(1, MS // 2, "node0")]))
    model = json.loads(json.dumps(build_ranks_model(rep)))
    tl = model["timeline"]
    assert tl["title"] == "GPU timelines across ranks" and "ranks 0, 1: one host's clock" in tl["note"]
    assert [ln[0] for ln in tl["lanes"]][1:] == ["rank 0 · GPU 0 stream 7", "rank 1 · GPU 0 stream 7"]
    assert {tl["strings"][row[4]] for row in tl["slices"]} >= {"gemm_kernel", "step 1", "step 2"}
    assert build_ranks_model(ranks_view(_ranks([R.ddp_gpu(0, 2), R.ddp_gpu(1, 2)])))["timeline"] is None


def test_more_ranks_than_lanes_are_counted_not_drawn() -> None:
    from dlpt.analysis.ranks.timelines import MAX_RANKS

    n = MAX_RANKS + 2
    sessions = []
    for r in range(n):
        s = R.ddp_gpu(r, n)
        s.set_meta("timeline", timeline_meta())
        sessions.append(s)
    t = side_by_side(_ranks(sessions))
    assert t is not None and t.ranks == list(range(MAX_RANKS)) and t.left_out == 2
    assert "2 more ranks with a timeline not shown" in timeline_note(t)
