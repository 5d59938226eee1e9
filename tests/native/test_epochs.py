"""Step epochs (csrc/cct/epochs.h): every cost is classified, after the fact, as per-step work
(counted epochs) or work outside the steps. Real capture on the CPU, GPU records fed through the
testing seams (dlpt._C._testing.launch / kernel_record): no GPU needed."""

from __future__ import annotations

import threading

import pytest
import torch

from dlpt.capture.native import RawNode, core, node_table
from tests.query import line_of

C = core()
T = C._testing
X = torch.ones(2)


def ops(n: int) -> None:
    for _ in range(n):
        torch.add(X, 1)  # @add


def launch(corr: int) -> None:
    T.launch(corr)  # @launch


def nodes(raw) -> list[RawNode]:
    return [RawNode.of(t) for t in raw["nodes"]]


def under_line(raw, fn, tag: str, kind: str, file: str = __file__) -> RawNode:
    """The one node of `kind` under the frame of the line tagged `tag` in `fn` (of `file`)."""
    ns = nodes(raw)
    line = line_of(tag, fn)
    frames = {n.id for n in ns if n.kind == "frame" and n.file == file and n.line == line}
    assert len(frames) == 1
    found = []
    for n in ns:
        p = n.parent
        while p >= 0 and p not in frames:
            p = ns[p].parent
        if p in frames and n.kind == kind:
            found.append(n)
    assert len(found) == 1, found
    return found[0]


def run_epochs(plan) -> list[int]:
    """Ops from one call site (one path), then end the epoch as planned (None: leave it); the
    numbers end_epoch returned."""
    started = []
    for n, counted in plan:
        ops(n)
        if counted is not None:
            started.append(C.end_epoch(counted))
    return started


def test_costs_land_in_the_class_of_the_epoch_they_were_added_in():
    C.start(False, [], True)
    # epochs 0 counted, 1 outside, 2 counted, 3 running at stop: outside (the tail)
    assert run_epochs([(3, True), (5, False), (7, True), (11, None)]) == [1, 2, 3]
    raw = C.stop()
    add = under_line(raw, ops, "add", "op")
    assert add.name == "aten::add"
    assert add.counted.calls == 3 + 7 and add.outside.calls == 5 + 11
    forward = under_line(raw, ops, "add", "phase")  # the op's CPU self time is on its <forward>
    assert forward.counted.cpu_ns > 0 and forward.outside.cpu_ns > 0


def test_the_tail_counts_when_stop_says_so():
    C.start(False, [], True)
    run_epochs([(2, False), (4, None)])
    raw = C.stop(last_counted=True)
    add = under_line(raw, ops, "add", "op")
    assert (add.counted.calls, add.outside.calls) == (4, 2)


def test_without_end_epoch_everything_counts_as_before():
    # One epoch, never ended by end_epoch: today's result, whatever stop's default says.
    C.start(False, [], True)
    ops(6)
    raw = C.stop()
    add = under_line(raw, ops, "add", "op")
    assert (add.counted.calls, add.outside.calls) == (6, 0)
    assert all(not any(n.outside) for n in nodes(raw))
    table = node_table(raw["nodes"])
    assert not table.outside and not any("o" in n for n in table.nodes)  # no work outside steps


def test_epochs_are_orthogonal_to_collecting():
    C.start(False, [], True)
    # epoch 0: 2 ops, counted; 1: not collecting, 50 ops, outside; 2 (tail, counted): 50 ops
    # not collected, then 3 collected
    for n, end, collecting in [(2, True, False), (50, False, None), (50, None, True), (3, None, None)]:
        ops(n)  # not collecting: nothing recorded, in any epoch
        if end is not None:
            C.end_epoch(end)
        if collecting is not None:
            C.set_collecting(collecting)
    raw = C.stop(last_counted=True)
    add = under_line(raw, ops, "add", "op")
    assert (add.counted.calls, add.outside.calls) == (2 + 3, 0)


def test_outside_work_sits_on_the_same_nodes_in_their_o_metrics():
    C.start(False, [], True)
    run_epochs([(3, True), (5, None)])
    raw = C.stop()
    add = under_line(raw, ops, "add", "op")  # before node_table converts the tuples in place
    count = len(raw["nodes"])
    outside = {n.id for n in nodes(raw) if any(n.outside)}
    table = node_table(raw["nodes"])
    assert table.outside and len(table.nodes) == count  # the same calling contexts
    node = table.nodes[add.id]
    assert node["m"]["calls"] == 3 and node["o"]["calls"] == 5
    # every node with work outside steps has it in "o", and only those
    with_o = {n["id"] for n in table.nodes if n.get("o")}
    assert with_o == outside


def test_gpu_records_are_filed_by_the_epoch_of_their_launch_whenever_they_arrive():
    C.start(False, [], True)
    for corr, end in [(100, False), (101, True), (102, None)]:  # epochs 0, 1, 2 (the tail)
        launch(corr)
        if end is not None:
            C.end_epoch(end)
    # All three arrive in epoch 2, out of launch order: 101 first moves the kernel node on to
    # epoch 1, then 100 (epoch 0, ended) goes straight to its class, then 102 rolls it to epoch 2.
    T.kernel_record(101, 1_000, 3_000, 0, "gemm")
    T.kernel_record(100, 0, 1_000, 0, "gemm")
    T.kernel_record(102, 3_000, 7_000, 0, "gemm")
    T.kernel_record(999, 7_000, 7_500, 0, "gemm")  # unknown launch: the epoch it arrives in
    raw = C.stop(last_counted=False)
    k = under_line(raw, launch, "launch", "kernel")
    assert (k.counted.gpu_ns, k.counted.completed) == (2_000, 1)
    assert (k.outside.gpu_ns, k.outside.completed) == (1_000 + 4_000, 2)
    assert (k.counted.min_ns, k.counted.max_ns) == (2_000, 2_000)
    assert (k.outside.min_ns, k.outside.max_ns) == (1_000, 4_000)
    unknown = [n for n in nodes(raw) if n.kind == "kernel" and n.parent != k.parent]
    assert len(unknown) == 1 and unknown[0].outside.gpu_ns == 500 and unknown[0].counted.gpu_ns == 0
    # the launch's own CUDA API time is CPU-side: the epoch it was spent in
    frame_api = next(n for n in nodes(raw) if n.id == k.parent)
    assert frame_api.counted.api_ns > 0 and frame_api.outside.api_ns > 0


def test_nothing_recorded_is_lost_or_counted_twice():
    C.start(False, [], True)
    total_ns = 0
    for i in range(40):
        ops(i % 3 + 1)
        launch(1_000 + i)
        T.kernel_record(1_000 + i, 10 * i, 10 * i + i + 1, 0, "k")
        total_ns += i + 1
        C.end_epoch(i % 2 == 0)
    raw = C.stop()
    ns = nodes(raw)
    calls = sum(n.counted.calls + n.outside.calls for n in ns if n.name == "aten::add")
    assert calls == sum(i % 3 + 1 for i in range(40))
    gpu = sum(n.counted.gpu_ns + n.outside.gpu_ns for n in ns)
    assert gpu == total_ns == raw["counters"]["delivered_gpu_ns"]
    assert 0 < sum(n.counted.gpu_ns for n in ns) < gpu


def test_concurrent_writers_across_boundaries_never_lose_or_double_an_add():
    """Threads add to the same nodes (one code line) while epochs end as fast as they can: every
    op call is filed exactly once (in some epoch's class; a boundary may move one by one epoch)."""
    per_thread, threads = 3_000, 3

    def work() -> None:
        ops(per_thread)

    C.start(False, [], True)
    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    ended = 0
    while any(t.is_alive() for t in ts):
        C.end_epoch(ended % 2 == 0)
        ended += 1
    for t in ts:
        t.join()
    raw = C.stop()
    ns = nodes(raw)
    adds = [n for n in ns if n.name == "aten::add"]
    assert sum(n.counted.calls + n.outside.calls for n in adds) == per_thread * threads
    assert ended > 10
    assert sum(n.counted.calls for n in adds) > 0 and sum(n.outside.calls for n in adds) > 0


def test_lock_free_epoch_metrics_conserve_every_add_under_contention():
    # Native threads, no GIL: four writers on one node while epochs end back to back.
    counted, outside, gpu, ended = T.epoch_contention(4, 100_000)
    assert counted + outside == gpu == 4 * 100_000
    assert ended > 100 and counted > 0 and outside > 0


def test_flop_signatures_are_split_by_epoch_too():
    a, b = torch.ones(4, 8), torch.ones(8, 16)
    C.start(False, [], True, flops_ops=["aten::mm"])
    for i in range(5):
        torch.mm(a, b)  # one op node: 3 calls in epoch 0 (outside), 2 in the tail (counted)
        if i == 2:
            C.end_epoch(False)
    raw = C.stop(last_counted=True)
    counted = {(n, s): c for n, s, c in raw["op_inputs"]}
    outside = {(n, s): c for n, s, c in raw["op_inputs_outside"]}
    assert list(counted.values()) == [2] and list(outside.values()) == [3]
    assert set(counted) == set(outside)  # one op node, one signature


def test_gpu_busy_is_split_by_the_intervals_of_counted_epochs():
    # epochs 0 (outside), 1 (counted), 2 (outside); 3 runs at stop: counted.
    marks = [(100, 1), (200, 2), (300, 3)]
    spans = [(0, 0, 150, False), (0, 180, 220, False), (0, 250, 260, False), (0, 310, 330, False)]
    busy, outside, steps = T.busy_epochs([False, True, False], True, marks, spans)[0]
    # in epoch 1's interval [100, 200): 50 + 20; epoch 3's [300, ...): 20; the rest outside
    assert (busy, outside) == (50 + 20 + 20, 100 + 20 + 10)
    assert [s[2] for s in steps] == [True, False]  # recorded: by the class of the interval's epoch
    # without epochs ended, the recorded flags are the marks' own and all busy time counts
    busy, outside, _ = T.busy_epochs([], False, marks, spans)[0]
    assert (busy, outside) == (220, 0)


def test_the_class_table_stays_small_over_millions_of_epochs():
    def rss_kib() -> int:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))

    before = rss_kib()
    C.start(False, [], True)
    for i in range(2_000_000):
        C.end_epoch(i % 3 == 0)
    grown = rss_kib() - before
    ops(1)
    raw = C.stop()
    assert C.end_epoch(True) == 0  # no profile running: nothing to end
    assert grown < 4 * 1024  # 2M epochs: 256 KiB of classes
    add = under_line(raw, ops, "add", "op")
    assert add.outside.calls == 1  # epoch 2,000,000, the tail


@pytest.fixture(autouse=True)
def _no_profile_left():
    yield
    if C.running():
        C.stop()
