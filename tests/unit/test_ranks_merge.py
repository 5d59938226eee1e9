"""The report across ranks: ranks lined up (missing ones named), totals per step, load imbalance,
the merged tree's min / median / max, each line's spread, and the straggler: the rank the others
wait for, from each rank's wait (GPU: its host blocked while its GPU sat idle in communication;
CPU: host time inside collectives), with its own line."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch

from dlpt.analysis.ranks.lines import line_table, rank_lines
from dlpt.analysis.ranks.merge import SpreadNode, imbalance, rank_set, report_trees, spread_tree, totals
from dlpt.analysis.ranks.stragglers import collective_sites
from dlpt.errors import UsageError
from dlpt.model.metrics import METRICS
from dlpt.model.session import Session
from dlpt.model.tree import Node
from dlpt.renderers.terminal.ranks import render_ranks
from dlpt.views.ranks import ranks_view
from tests import rank_sessions as R
from tests.rank_sessions import render_text_of

GPU = METRICS["gpu"]


def _ranks(sessions: list[Session]) -> Any:
    return rank_set([(f"run.rank{i}.json", s) for i, s in enumerate(sessions)])


def test_ranks_sorted_and_missing_ones_named() -> None:
    rs = rank_set(
        [("b.json", R.ddp_gpu(2)), ("a.json", R.ddp_gpu(0))], {1: "no session written at run.rank1.json"}
    )
    assert [r.rank for r in rs.ranks] == [0, 2] and rs.world_size == 4
    assert rs.missing == {1: "no session written at run.rank1.json", 3: "no session given"}


def test_two_sessions_of_one_rank_are_refused() -> None:
    with pytest.raises(UsageError, match="both rank 1"):
        rank_set([("x.json", R.ddp_gpu(1)), ("y.json", R.ddp_gpu(1))])


def test_sessions_without_ranks_are_numbered_in_order() -> None:
    a, b = R.ddp_gpu(0), R.ddp_gpu(1)
    for s in (a, b):  # a new mapping: the typed meta is read afresh
        s.meta = {k: v for k, v in s.meta.items() if k != "distributed"}
    rs = rank_set([("a.json", a), ("b.json", b)])
    assert [r.path for r in rs.ranks] == ["a.json", "b.json"] and rs.notes


def test_totals_per_step_and_load_imbalance() -> None:
    rs = _ranks([R.ddp_gpu(0, fc2_ns=6_000_000), R.ddp_gpu(1, fc2_ns=14_000_000)])
    t = {r.rank: totals(r, gpu=True) for r in rs.ranks}
    assert t[0].compute_ns == pytest.approx(27_000_000) and t[1].compute_ns == pytest.approx(35_000_000)
    assert t[0].communication_ns == pytest.approx(2_000_000) and t[0].exposed_ns == pytest.approx(1_000_000)
    imb = imbalance({r: x.compute_ns for r, x in t.items()})
    assert imb is not None and imb[1] == 1 and imb[0] == pytest.approx((35 - 31) / 31)
    assert imbalance({0: 1.0}) is None


def test_merged_tree_holds_every_rank_at_every_node() -> None:
    rs = _ranks([R.ddp_gpu(r, fc2_ns=ns) for r, ns in enumerate((6_000_000, 8_000_000, 7_000_000))])
    trees = report_trees(rs)
    root = spread_tree(rs, trees)
    ranks = rs.by_rank()
    main = next(iter(root.children.values()))
    fc2 = next(c for c in main.children.values() if c.node.line == 11)
    v = fc2.values(GPU, ranks)
    # fc2's line: its forward GEMM (fc2_ns) + backward 8 ms + the 2 ms all-reduce, per step
    assert v == {0: pytest.approx(16e6), 1: pytest.approx(18e6), 2: pytest.approx(17e6)}
    table = line_table({r: rank_lines(trees[r]) for r in ranks}, {r: rank.steps for r, rank in ranks.items()})
    (fc2_line,) = [i for i, n in enumerate(table.labels) if n.line == 11]
    assert table.row(fc2_line, GPU) == {
        0: pytest.approx(16e6),
        1: pytest.approx(18e6),
        2: pytest.approx(17e6),
    }


def _straggling(world: int, slow: int, wait_ns: int, sleep: bool = True) -> list[Session]:
    """``slow``'s host spends ``wait_ns`` more per step (a ``time.sleep`` line); every other rank
    waits for it: its host blocked in a sync and its NCCL kernel spinning, exposed."""
    return [
        R.ddp_gpu(r, world, comm_ns=1_000_000, exposed_ns=500_000, sleep_ns=wait_ns if sleep else 0)
        if r == slow
        else R.ddp_gpu(
            r, world, comm_ns=1_000_000 + wait_ns, blocked_ns=300_000 + wait_ns, exposed_ns=500_000 + wait_ns
        )
        for r in range(world)
    ]


def _report(sessions: list[Session]) -> Any:
    return ranks_view(_ranks(sessions))


def test_the_rank_the_others_wait_for_is_the_straggler_with_its_line() -> None:
    rep = _report(_straggling(4, slow=2, wait_ns=8_000_000))
    assert rep.waits.per_rank[2] == pytest.approx(300_000) and rep.waits.per_rank[0] == pytest.approx(
        8_300_000
    )
    assert [s.rank for s in rep.stragglers] == [2]
    s = rep.stragglers[0]
    assert s.waited_ns == pytest.approx(8_000_000)
    assert [(c.node.line, c.metric.name) for c in s.causes] == [(33, "host")]
    assert s.causes[0].excess_ns == pytest.approx(8_000_000)
    assert len(s.sites) == 1 and s.sites[0].waited_for(2) == pytest.approx(8_000_000)


def test_a_rank_whose_kernels_spin_while_its_host_is_busy_is_not_waiting() -> None:
    # Ranks in step with an offset (FSDP2's prefetch): rank 1's all-reduce spins 25 ms on an
    # otherwise idle GPU, but its host was never blocked: nobody waited, whatever the kernels say.
    sessions = [
        R.ddp_gpu(r, 2, comm_ns=1_000_000 + (25_000_000 if r else 0), exposed_ns=25_000_000 if r else 0)
        for r in (0, 1)
    ]
    rep = _report(sessions)
    assert rep.stragglers == []
    assert max(rep.waits.per_rank.values()) == pytest.approx(300_000)


def test_a_full_launch_queue_blocks_like_a_sync() -> None:
    # The waiting rank's host blocks inside launches (api time), not in a synchronising call.
    slow = R.ddp_gpu(1, 2, exposed_ns=500_000, sleep_ns=10_000_000)
    waiting = R.ddp_gpu(0, 2, comm_ns=11_000_000, exposed_ns=10_500_000)
    linear = next(n for n in waiting.nodes if n["kind"] == "op" and n["name"] == "aten::linear")
    linear["m"]["api_ns"] = linear["m"].get("api_ns", 0) + 10_000_000 * R.STEPS
    rep = _report([waiting, slow])
    assert [s.rank for s in rep.stragglers] == [1]
    assert rep.stragglers[0].waited_ns == pytest.approx(10_000_000)


def _paced(world: int, slow: int, pace: float, sleep_ns: int = 0) -> list[Session]:
    """Every rank does the same host work (25 ms per step on three lines); ``slow``'s CPU runs
    it ``pace`` times as long, plus a ``time.sleep`` of ``sleep_ns``: the others wait for both."""
    wait = int(25_000_000 * (pace - 1)) + sleep_ns
    return [
        R.ddp_gpu(r, world, comm_ns=1_000_000, exposed_ns=500_000, sleep_ns=sleep_ns, host_pace=pace)
        if r == slow
        else R.ddp_gpu(
            r,
            world,
            comm_ns=1_000_000 + wait,
            blocked_ns=300_000 + wait,
            exposed_ns=500_000 + wait,
            host_pace=1.0,
        )
        for r in range(world)
    ]


def test_a_rank_running_the_same_lines_slower_is_a_slower_rank_not_a_straggler() -> None:
    # Ranks doing the same work on an unevenly loaded host: rank 2's CPU takes 1.4x as long on
    # every line. The others wait 10 ms per step for it, but no line of the program is its own.
    rep = _report(_paced(4, slow=2, pace=1.4))
    assert rep.stragglers == [] and [s.rank for s in rep.unnamed] == [2]
    (s,) = rep.unnamed
    assert s.waited_ns == pytest.approx(10_000_000) and s.own_work_ns == 0
    assert s.slowdown is not None and s.slowdown.ratio == pytest.approx(1.4)
    text = render_text_of(rep)
    assert "no straggler in the code: rank 2 ran the shared lines 1.40x as long on its host" in text
    assert "straggler: rank" not in text.replace("no straggler in the code", "")
    assert "GPU 0, nccl  slower host" in text  # its row in the ranks table


def test_a_line_of_its_own_on_a_slower_host_is_named_with_its_pace() -> None:
    # An 8 ms sleep on a rank whose CPU is also 1.2x slower: the others wait 13 ms per step;
    # the sleep is its own line (8 ms), the rest its pace.
    rep = _report(_paced(4, slow=1, pace=1.2, sleep_ns=8_000_000))
    assert [s.rank for s in rep.stragglers] == [1] and rep.unnamed == []
    (s,) = rep.stragglers
    assert s.waited_ns == pytest.approx(13_000_000)
    assert s.own_work_ns == pytest.approx(8_000_000)
    assert [(c.node.line, c.excess_ns) for c in s.causes] == [(33, pytest.approx(8_000_000))]
    assert s.slowdown is not None and s.slowdown.ratio == pytest.approx(1.2)
    assert "it also ran the shared lines 1.20x as long on its host" in render_text_of(rep)


def test_equal_ranks_have_no_straggler() -> None:
    rep = _report(_straggling(4, slow=0, wait_ns=50_000))  # 0.1% of a 40 ms step: jitter
    assert rep.stragglers == []
    text = render_text_of(rep)
    assert "no straggler: ranks' waits per step within 0.1% of the step" in text


def test_a_slower_kernel_names_its_line() -> None:
    slow = R.ddp_gpu(1, 2, fc2_ns=14_000_000, blocked_ns=20_000_000, exposed_ns=500_000)
    waiting = R.ddp_gpu(
        0, 2, fc2_ns=6_000_000, comm_ns=9_000_000, blocked_ns=20_000_000, exposed_ns=8_500_000
    )
    rep = _report([waiting, slow])
    assert [s.rank for s in rep.stragglers] == [1] and rep.stragglers[0].waited_ns == pytest.approx(8_000_000)
    (cause,) = rep.stragglers[0].causes
    assert (cause.node.line, cause.metric.name, cause.excess_ns) == (
        11,
        "gpu compute",
        pytest.approx(8_000_000),
    )


def test_cpu_ranks_wait_inside_the_collective() -> None:
    # On gloo the wait is the host's time inside the collective call: rank 0 waited 5 ms per
    # step for rank 1, which ran every line as long as rank 0 did.
    rep = _report([R.gloo_cpu(0, wait_ns=5_000_000), R.gloo_cpu(1, wait_ns=10_000)])
    assert rep.waits.per_rank == {0: pytest.approx(5_000_000), 1: pytest.approx(10_000)}
    assert rep.stragglers == [] and [s.rank for s in rep.unnamed] == [1]
    assert rep.unnamed[0].waited_ns == pytest.approx(4_990_000)


@pytest.mark.parametrize("hz", [1000, 100])
def test_a_line_of_its_own_must_stand_out_of_the_sampling_noise(hz: int) -> None:
    # Known by construction: rank 1's sleep line holds 8 ms a step over 4 steps, 32 ms of
    # sampled host time in all: 32 samples at 1 kHz (5.7 deviations: named), 3 at 100 Hz (1.8:
    # a symmetric job's rank had `opt.step()` 3 samples to none and was named for it). With
    # too few samples the verdict is not given either way, and the report says why.
    sessions = _straggling(2, slow=1, wait_ns=8_000_000)
    for s in sessions:
        s.set_meta("host", {"sampling": True, "sample_hz": hz})
    rep = _report(sessions)
    if hz == 1000:
        assert [s.rank for s in rep.stragglers] == [1] and rep.unnamed == []
        assert [c.node.line for c in rep.stragglers[0].causes] == [33] and rep.stragglers[0].unsure == []
        return
    assert rep.stragglers == [] and [s.rank for s in rep.unnamed] == [1]
    (s,) = rep.unnamed
    assert s.causes == [] and [c.node.line for c in s.unsure] == [33] and s.unnamed_label == "can't tell"
    text = " ".join(render_text_of(rep).replace("│", " ").split())
    said = "straggler not decided: rank 1 ran train.py:33 longer than the others, on too few host samples"
    assert said in text
    assert "no straggler in the code" not in text


def test_a_rank_waited_for_with_no_line_of_its_own_is_not_named() -> None:
    # Rank 1 is 8 ms late every step, but nothing it ran took longer than on the others (a
    # delay outside the program: another process, the network): the others' wait is reported,
    # no line of the program is blamed.
    rep = _report(_straggling(2, slow=1, wait_ns=8_000_000, sleep=False))
    assert rep.stragglers == [] and [s.rank for s in rep.unnamed] == [1]
    (s,) = rep.unnamed
    assert s.waited_ns == pytest.approx(8_000_000) and s.causes == [] and s.slowdown is None
    text = " ".join(render_text_of(rep).replace("│", " ").split())  # the header's lines wrap
    assert "no straggler in the code: rank 1 ran no line longer than the others" in text
    assert "the others waited 8.00ms per step for it" in text
    assert "straggler: rank" not in text.replace("no straggler in the code", "")
    assert "GPU 1, nccl waited for" in text  # its row: not "slower", nothing of it was


def test_report_across_ranks_golden(h: Any) -> None:
    sessions = _straggling(4, slow=2, wait_ns=8_000_000)
    rs = rank_set(
        [(f"run.rank{r}.json", s) for r, s in enumerate(sessions) if r != 3], {3: "no session written"}
    )
    text = h.render_text(render_ranks(ranks_view(rs), threshold=0.0), width=120)
    h.check_golden("ranks_across", text)
    assert "straggler: rank 2" in text and "rank 3 missing: no session written" in text
    assert "3 of 4 ranks" in text and "load imbalance" in text


def test_one_collective_under_one_line_in_several_places_is_one_site() -> None:
    # FSDP2 all-gathers each block's parameters from one `x = block(x)`: the tree holds one
    # all-gather per block under that line, and "where the wait landed" must list the line once.
    rs = _ranks([R.ddp_gpu(0, 2), R.ddp_gpu(1, 2)])
    steps = {r.rank: r.steps for r in rs.ranks}

    def op(block: int, ns: dict[int, int]) -> SpreadNode:
        gather = SpreadNode(
            Node("op", "c10d::_allgather_base_"), {r: {"comm_ns": v * steps[r]} for r, v in ns.items()}
        )
        scope = SpreadNode(Node("scope", f"block{block}"), {r: {} for r in ns})
        scope.children[gather.node.key] = gather
        return scope

    line = SpreadNode(Node("frame", "forward", "gpt.py", 80), {0: {}, 1: {}})
    for b in range(3):
        s = op(b, {0: 1_000_000, 1: 4_000_000})
        line.children[s.node.key] = s
    root = SpreadNode(Node("root", "total"), {0: {}, 1: {}})
    root.children[line.node.key] = line
    (site,) = collective_sites(rs, root, gpu=True)
    assert site.paths == 3 and site.line is line
    assert site.times == {0: pytest.approx(3_000_000), 1: pytest.approx(12_000_000)}
    assert site.waited_for(0) == pytest.approx(9_000_000)


def _with_step_times(s: Session, traced_ms: float, untraced_ms: float) -> Session:
    d = copy.deepcopy(s.to_dict())
    d["meta"]["step_time"] = {
        kind: {k: int(ms * 1e6) for k in ("median_ns", "mean_ns", "min_ns", "max_ns", "p10_ns", "p90_ns")}
        | {"n": 8}
        for kind, ms in (("traced", traced_ms), ("untraced", untraced_ms))
    }
    return Session.from_dict(d)


def test_the_header_gives_each_ranks_step_as_a_range_not_a_median_no_rank_had(h: Any) -> None:
    # Two ranks whose untraced steps differ 3x (a host that ran ahead, a straggler): the median
    # of two ranks would be a figure neither had.
    sessions = [_with_step_times(R.ddp_gpu(0, 2), 17.0, 9.5), _with_step_times(R.ddp_gpu(1, 2), 37.0, 30.4)]
    text = " ".join(
        h.render_text(render_ranks(ranks_view(_ranks(sessions)), threshold=0.0), width=200).split()
    )
    assert "step time per rank: min 17.00ms (rank 0), max 37.00ms (rank 1)" in text, text
    assert "measured without dlpt's cost): min 9.50ms (rank 0), max 30.40ms (rank 1)" in text, text
    assert ", median " not in text.split("load imbalance")[0]
    three = [_with_step_times(R.ddp_gpu(r, 3), 20.0 + r, 10.0 + r) for r in range(3)]
    text = " ".join(h.render_text(render_ranks(ranks_view(_ranks(three)), threshold=0.0), width=200).split())
    assert "min 10.00ms (rank 0), median 11.00ms, max 12.00ms (rank 2)" in text, text


def test_the_largest_counts_a_session_holds_add_up_without_a_crash() -> None:
    """Every count at the largest a session holds (below 2**63): a line's sum passes what an
    int64 holds and saturates (--load A B crashed: "Overflow when unpacking long long")."""
    sessions = [R.gloo_cpu(r) for r in range(2)]
    for s in sessions:
        for n in s.nodes:
            n["m"] = {k: 2**63 - 1 for k in n["m"]}
    text = render_text_of(ranks_view(_ranks(sessions), "cpu"))
    assert "rank 1" in text


def _counting(session: Session, steps: int) -> Session:
    """``session`` as if it had counted only ``steps`` steps (its totals are the same)."""
    d = session.to_dict()
    d["meta"]["steps"]["profiled"] = steps
    d["meta"]["step_wall_ns"] = d["meta"]["step_wall_ns"][:steps]
    return Session.from_dict(d)


@pytest.mark.parametrize("steps", [1, 2])
def test_a_rank_with_too_few_counted_steps_gets_no_verdict(steps: int) -> None:
    # A symmetric gloo job on a busy host once had rank 0, with 1 counted step against rank 1's
    # 9, named a straggler by that step's opt.step(): one or two steps are no step median.
    sessions = _straggling(2, slow=1, wait_ns=8_000_000)
    assert [s.rank for s in _report(sessions).stragglers] == [1]  # judged with every step
    rep = _report([_counting(sessions[0], steps), sessions[1]])
    assert rep.lacking == [0] and not rep.judged and rep.stragglers == [] and rep.unnamed == []
    text = " ".join(render_text_of(rep).replace("\u2502", " ").split())
    assert f"stragglers not judged: counted steps: rank 0 {steps}, fewer than the 3" in text, text
    assert "no straggler" not in text


def test_a_rank_with_no_counted_step_is_said_apart_from_one_with_few() -> None:
    sessions = [
        _counting(s, n) for s, n in zip(_straggling(3, slow=1, wait_ns=8_000_000), (0, 2, 4), strict=True)
    ]
    rep = _report(sessions)
    assert rep.lacking == [0, 1]
    assert rep.not_judged_why() == (
        "rank 0 counted no step (all its steps were warm-up or skipped): the ranks' waits per step "
        "are not a step's; counted steps: rank 1 2, fewer than the 3 a rank's step median needs to "
        "be compared"
    )


@pytest.mark.parametrize("in_one_step", [False, True])
def test_a_line_of_its_own_must_stand_out_of_its_step_to_step_spread(in_one_step: bool) -> None:
    # Known by construction: rank 1's optimizer line holds 4 ms of op time a step more than
    # rank 0's (which has none there), and rank 0 waits 4 ms a step for it. Spent evenly, every
    # step, the line is rank 1's own. Spent in one step of four (its thread preempted there once
    # on a busy host, as `y.sum().backward()` of a symmetric gloo job was), the mean's spread
    # (sd 3.5 ms) is as large as the excess: not decided, and the report says why.
    sessions = [
        R.gloo_cpu(0, wait_ns=4_000_000),
        R.gloo_cpu(1, wait_ns=10_000, step_ns=4_000_000, in_one_step=in_one_step),
    ]
    rep = _report(sessions)
    if not in_one_step:
        assert [s.rank for s in rep.stragglers] == [1] and rep.stragglers[0].unsure == []
        assert [(c.node.line, c.metric.name) for c in rep.stragglers[0].causes] == [(32, "cpu")]
        return
    assert rep.stragglers == [] and [s.rank for s in rep.unnamed] == [1]
    (s,) = rep.unnamed
    assert s.causes == [] and [c.node.line for c in s.unsure] == [32] and s.unnamed_label == "can't tell"
    text = " ".join(render_text_of(rep).replace("│", " ").split())
    assert "straggler not decided: rank 1 ran train.py:32 longer than the others, on steps too uneven" in text


@pytest.mark.parametrize("work", [1.0, 5.0])
def test_a_line_the_host_stretched_is_not_its_own_where_its_fastest_calls_match(work: float) -> None:
    # Both ranks run the optimizer line; rank 1's took 5 ms of op time a step against rank 0's
    # 1 ms, every step alike, and rank 0 waited 4 ms a step for it. Its floor (calls x the
    # fastest call) says whether it did more work: 5x the floor, its own line, named; the same
    # floor, a busy host that preempted its calls (a symmetric gloo job on the busy 2-core
    # machine had one rank's line at 2.2x the other's, its floor at 1.01x), not named.
    sessions = [
        R.gloo_cpu(0, wait_ns=4_000_000, step_ns=1_000_000, floor_ns=900_000),
        R.gloo_cpu(1, wait_ns=10_000, step_ns=5_000_000, floor_ns=round(900_000 * work)),
    ]
    rep = _report(sessions)
    if work > 1:
        assert [s.rank for s in rep.stragglers] == [1]
        assert [c.node.line for c in rep.stragglers[0].causes] == [32]
        return
    assert rep.stragglers == [] and [s.rank for s in rep.unnamed] == [1]
    assert rep.unnamed[0].causes == [] and rep.unnamed[0].unsure == []


@pytest.mark.parametrize("held_gil", [False, True])
def test_a_line_held_off_the_cpu_while_holding_the_gil_is_not_its_own(held_gil: bool) -> None:
    # Rank 1's line 33 holds 8 ms of sampled host time a step, the others' wait. A sleep
    # releases the GIL: its own line, named. The same wall time with the GIL held and 2% of it
    # on the CPU is a thread the host kept off the CPU (a symmetric rank on a busy host had
    # 16 ms of `record_function.__init__` with 0.09 ms of CPU): no line of its own.
    sessions = [
        R.ddp_gpu(r, 2, comm_ns=1_000_000, exposed_ns=500_000, sleep_ns=8_000_000, sleep_held_gil=held_gil)
        if r == 1
        else R.ddp_gpu(r, 2, comm_ns=9_000_000, blocked_ns=8_300_000, exposed_ns=8_500_000)
        for r in (0, 1)
    ]
    rep = _report(sessions)
    if not held_gil:
        assert [s.rank for s in rep.stragglers] == [1] and [
            c.node.line for c in rep.stragglers[0].causes
        ] == [33]
        return
    assert rep.stragglers == [] and [s.rank for s in rep.unnamed] == [1]
    assert rep.unnamed[0].causes == [] and rep.unnamed[0].unsure == []


def test_a_line_the_others_were_sampled_at_once_sets_no_pace() -> None:
    # Rank 1 sleeps 8 ms a step on line 33; rank 0's sampler caught line 33 once in 4 steps
    # (its `if rank == sleeper:`). A ratio to one sample is no pace: as a 279x pace it hid a
    # gloo job's 30 ms sleep on a busy host. The sleep is rank 1's own line.
    sessions = [
        R.ddp_gpu(0, 2, comm_ns=9_000_000, blocked_ns=8_300_000, exposed_ns=8_500_000, sleep_ns=250_000),
        R.ddp_gpu(1, 2, comm_ns=1_000_000, exposed_ns=500_000, sleep_ns=8_000_000),
    ]
    for s in sessions:
        s.set_meta("host", {"sampling": True, "sample_hz": 1000})
    rep = _report(sessions)
    assert [s.rank for s in rep.stragglers] == [1]
    assert [c.node.line for c in rep.stragglers[0].causes] == [33]


@pytest.mark.parametrize(
    ("own_ms", "own_steps", "rest_ms", "rest_steps", "own_line"),
    [
        # 35 samples in 33 steps against 1 in 5 (a symmetric gloo job's `y.sum().backward()` on
        # a busy host): a count of 1 says little about the other rank's rate. Not decided.
        (1.056, 33, 0.2, 5, False),
        # A 10 ms sleep over 33 steps against 1 sample in 33: its own line, far out of the noise.
        (10.0, 33, 0.03, 33, True),
    ],
)
def test_a_line_against_a_handful_of_samples_is_judged_at_the_larger_rate(
    own_ms: float, own_steps: int, rest_ms: float, rest_steps: int, own_line: bool
) -> None:
    from dlpt.analysis.ranks.lines import LineTable
    from dlpt.analysis.ranks.stragglers import Sampling, Straggler, explain

    line = Node("frame", "main", R.TRAIN, 21)
    lines = LineTable(
        [line],
        [0, 1],
        ["host_ns"],
        torch.tensor([[[rest_ms * 1e6]], [[own_ms * 1e6]]], dtype=torch.float32),
        torch.tensor([rest_steps, own_steps], dtype=torch.float64),
    )
    sampling = {0: Sampling(1e6, rest_steps), 1: Sampling(1e6, own_steps)}
    s = Straggler(rank=1, waited_ns=own_ms * 1e6)
    explain(s, lines, gpu=False, sampling=sampling)
    assert [c.node.line for c in s.causes] == ([21] if own_line else [])
    assert [c.node.line for c in s.unsure] == ([] if own_line else [21])
