"""Memory per line on the CPU (``dlpt.profile(memory=True)``): real allocations through torch's
CPU allocator and its memory-reporting hook, with known sizes, so that the bytes on each line are
exact: a block held to the peak shows its size on its line, a saved activation on its forward
line, per-step peaks per step, and a failed allocation (a real one: more than the machine has)
leaves what was live then."""

from __future__ import annotations

import contextlib
import warnings

import pytest
import torch

import dlpt
from dlpt.model.session import Session
from tests.query import Q, line_of

HERE = __file__
MIB = 1 << 20


def node_of(q: Q, fn, tag: str, op: str, phase: str | None = "<forward>") -> dict:
    """The ``phase`` node (or the op itself, for phase None) of op ``op`` on the tagged line."""
    for n in q.under_line(HERE, line_of(tag, fn)):
        if n["kind"] == "op" and n["name"] == op:
            if phase is None:
                return n
            for c in q.children[n["id"]]:
                if q.nodes[c]["kind"] == "phase" and q.nodes[c]["name"] == phase:
                    return q.nodes[c]
    raise AssertionError(f"no {op} {phase} on the line tagged {tag}")


def total(q: Q, key: str) -> int:
    return sum(n["m"].get(key, 0) for n in q.nodes)


def held_to_peak(n: int, steps: int, prof):
    for i in range(steps):
        keep = torch.empty(n * (i + 1), dtype=torch.uint8)  # @keep
        tmp = torch.empty(MIB, dtype=torch.uint8)  # @tmp
        del tmp  # freed before the peak: it is not held there
        big = torch.empty(4 * MIB, dtype=torch.uint8)  # @big
        del big, keep
        prof.step()


def test_a_block_held_to_the_peak_shows_its_exact_size_on_its_line():
    n, steps = 3 * MIB, 3
    with dlpt.profile(memory=True, skip_first=0) as prof:  # every step counts
        held_to_peak(n, steps, prof)
    q = Q(prof.session)
    keep = node_of(q, held_to_peak, "keep", "aten::empty")
    big = node_of(q, held_to_peak, "big", "aten::empty")
    tmp = node_of(q, held_to_peak, "tmp", "aten::empty")
    # Summed over the steps (reports divide by 3): step i keeps n * (i + 1) bytes to its peak.
    assert keep["m"]["mem_peak_bytes"] == n * (1 + 2 + 3)
    assert big["m"]["mem_peak_bytes"] == 4 * MIB * steps
    assert tmp["m"].get("mem_peak_bytes", 0) == 0  # allocated and freed before the peak
    assert tmp["m"]["mem_alloc_bytes"] == MIB * steps and tmp["m"]["mem_allocs"] == steps
    assert keep["m"]["mem_alloc_bytes"] == n * 6 and keep["m"]["mem_allocs"] == steps
    # Per step: the device's peaks follow the kept size, and every traced byte at a peak is on
    # a line (the node metrics add up to the traced totals).
    mem = prof.session.meta["memory"]
    steps_cpu = mem["devices"]["cpu"]["steps"]
    assert len(steps_cpu) == steps == prof.session.meta["steps"]["profiled"]
    traced = [s["traced_at_peak"] for s in steps_cpu]
    assert traced[1] - traced[0] == n and traced[2] - traced[1] == n
    assert sum(traced) == total(q, "mem_peak_bytes")
    assert all(s["peak_allocated"] >= s["traced_at_peak"] for s in steps_cpu)
    assert mem["tracks_cpu"] is True and mem["events"] > 0


def saved_activation(a, steps, prof):
    for _ in range(steps):
        loss = a.exp().sum()  # @exp
        loss.backward()  # @backward
        a.grad = None
        prof.step()


def test_a_saved_activation_counts_on_its_forward_line_and_is_freed_in_backward():
    a = torch.randn(1 << 18, requires_grad=True)  # 1 MiB of float32
    steps, nbytes = 3, a.numel() * 4
    with dlpt.profile(memory=True, skip_first=0) as prof:  # every step counts
        saved_activation(a, steps, prof)
    q = Q(prof.session)
    fwd = node_of(q, saved_activation, "exp", "aten::exp")
    exp_op = node_of(q, saved_activation, "exp", "aten::exp", phase=None)
    bwd = [n for n in q.subtree(exp_op["id"]) if n["kind"] == "op" and n["name"] == "ExpBackward0"]
    assert len(bwd) == 1
    # The peak is in backward, while ExpBackward0 computes the gradient: exp's output (saved for
    # it, allocated in forward) and the gradient are both live then.
    assert fwd["m"]["mem_peak_bytes"] == nbytes * steps
    assert bwd[0]["m"]["mem_peak_bytes"] == nbytes * steps
    assert q.phase_of(bwd[0]["id"]) == "<backward>"
    # Freed in backward (the graph drops it after ExpBackward0 ran): no step's traced peak grows.
    traced = [s["traced_at_peak"] for s in prof.session.meta["memory"]["devices"]["cpu"]["steps"]]
    assert traced == [traced[0]] * steps
    assert traced[0] < 2 * nbytes + 64 * 1024  # the two blocks and a few scalars


def fails(n, prof):
    held = torch.empty(n, dtype=torch.uint8)  # @held
    with contextlib.suppress(RuntimeError):
        torch.empty(1 << 50, dtype=torch.uint8)  # @fail
    prof.step()
    return held


def test_a_failed_allocation_records_what_was_live_by_line(tmp_path):
    n = 5 * MIB
    with dlpt.profile(memory=True) as prof:
        fails(n, prof)
    session = Session.load(prof.save(tmp_path / "oom.json"))  # what a saved file holds, validated
    q = Q(session)
    oom = session.meta["memory"]["oom"]
    assert oom["device"] == "cpu" and oom["requested"] == 1 << 50 and oom["count"] == 1
    assert oom["allocated"] >= n
    held = node_of(q, fails, "held", "aten::empty")
    assert held["m"]["mem_oom_bytes"] == n
    site = [nd for nd in q.under_line(HERE, line_of("fail", fails)) if nd["m"].get("mem_oom_request_bytes")]
    assert [nd["m"]["mem_oom_request_bytes"] for nd in site] == [1 << 50]
    from dlpt.analysis.report import build_report

    report = build_report(session)
    first = next(f for f in report.header if f.kind not in ("run", "steps"))
    assert first.kind == "oom" and first.level == "error"
    assert f"test_memory.py:{line_of('fail', fails)} fails" in first.text
    live = report.facts("oom")[1].text
    assert (
        live.startswith("live at the failure: ")
        and f"test_memory.py:{line_of('held', fails)} fails 5.0 MiB" in live
    )


def skipped_then_recorded(prof):
    persistent = torch.empty(2 * MIB, dtype=torch.uint8)  # @persistent
    prof.step()  # skipped step: what it allocated is on no line
    for _ in range(2):
        t = torch.empty(MIB, dtype=torch.uint8)  # @t
        del t
        prof.step()
    return persistent


def test_memory_held_from_a_warm_up_step_shows_on_its_line_at_the_counted_peaks():
    """A warm-up step is traced (its costs are filed outside the steps): a block it allocates and
    keeps (optimizer state made at the first step) is on its line, held at every counted peak."""
    with dlpt.profile(memory=True, skip_first=1) as prof:
        skipped_then_recorded(prof)
    q = Q(prof.session)
    held = sum(
        n["m"].get("mem_peak_bytes", 0)
        for n in q.under_line(HERE, line_of("persistent", skipped_then_recorded))
    )
    steps = prof.session.meta["memory"]["devices"]["cpu"]["steps"]
    assert len(steps) == 2
    assert held >= 2 * 2 * MIB  # held at both counted peaks
    assert node_of(q, skipped_then_recorded, "t", "aten::empty")["m"]["mem_peak_bytes"] == 2 * MIB


def test_memory_is_off_by_default_and_leaves_no_trace():
    with dlpt.profile() as prof:
        torch.empty(MIB, dtype=torch.uint8)
    assert "memory" not in prof.session.meta
    assert not any(k.startswith("mem_") for n in prof.session.nodes for k in n["m"])


def test_no_steps_the_run_is_one_step():
    with dlpt.profile(memory=True) as prof:
        keep = torch.empty(3 * MIB, dtype=torch.uint8)  # noqa: F841
    steps = prof.session.meta["memory"]["devices"]["cpu"]["steps"]
    assert len(steps) == 1 and steps[0]["traced_at_peak"] >= 3 * MIB
    assert total(Q(prof.session), "mem_peak_bytes") == steps[0]["traced_at_peak"]


def test_refused_inside_torch_profiler_which_keeps_working():
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as tp:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with dlpt.profile(memory=True, gpu=False) as prof:
                torch.empty(MIB, dtype=torch.uint8).add_(1)
        assert any("memory capture is off" in str(x.message) for x in w)
    assert prof.session.meta["memory"]["enabled"] is False
    assert "torch.profiler" in prof.session.meta["memory"]["reason"]
    assert any(e.name == "aten::add_" for e in tp.events())


def test_torch_profiler_inside_a_memory_profile_works_and_dlpt_goes_on():
    with dlpt.profile(memory=True, gpu=False) as prof:
        before = torch.empty(MIB, dtype=torch.uint8)  # @before
        with torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True
        ) as tp:
            torch.empty(2 * MIB, dtype=torch.uint8).add_(1)
        after = torch.empty(3 * MIB, dtype=torch.uint8)  # noqa: F841
        del before
    # torch.profiler got the allocations made while it ran (its memory events are its own)...
    assert any(e.cpu_memory_usage > 0 for e in tp.events())
    # ...and dlpt the ones before and after it.
    allocs = sorted(n["m"]["mem_alloc_bytes"] for n in prof.session.nodes if n["m"].get("mem_alloc_bytes"))
    assert MIB in allocs and 3 * MIB in allocs and 2 * MIB not in allocs
    # torch's own profiler state is intact afterwards: another profile_memory run works.
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as tp2:
        torch.empty(MIB, dtype=torch.uint8).add_(1)
    assert any(e.cpu_memory_usage > 0 for e in tp2.events())
    assert not torch.autograd._profiler_enabled()


def test_allocations_of_other_threads_with_and_without_the_reporter():
    """The autograd engine inherits the starting thread's reporter; a plain Python thread does
    not: its allocations are not recorded, and nothing breaks."""
    import threading

    out: list[int] = []

    def worker():
        out.append(torch.empty(MIB, dtype=torch.uint8).numel())

    with dlpt.profile(memory=True) as prof:
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        torch.empty(2 * MIB, dtype=torch.uint8)
    assert out == [MIB]
    allocs = [n["m"].get("mem_alloc_bytes", 0) for n in prof.session.nodes]
    assert 2 * MIB in allocs and MIB not in allocs


@pytest.mark.parametrize("rounds", [2])
def test_repeated_profiles_each_start_fresh(rounds):
    for _ in range(rounds):
        with dlpt.profile(memory=True) as prof:
            x = torch.empty(MIB, dtype=torch.uint8)  # noqa: F841
        allocs = [n["m"].get("mem_alloc_bytes", 0) for n in prof.session.nodes]
        assert sum(a == MIB for a in allocs) == 1
