"""The native core's data structures in isolation, through dlpt._C._testing: synthetic input,
exact expected output (C++ unit tests driven by pytest; no GPU, no profile)."""

from __future__ import annotations

import itertools
import random

import pytest

from dlpt.capture.native import core

T = core()._testing


def test_busy_time_is_the_union_of_intervals_per_device():
    spans = [(0, 0, 10, False), (0, 5, 15, False), (0, 20, 30, False), (1, 0, 7, False)]
    assert T.busy(spans) == {0: (25, 0, 0), 1: (7, 0, 0)}


def test_exposed_communication_is_what_no_other_work_overlaps():
    # comm 0-100; compute 10-30 and 50-60 overlap 30 ns of it: 70 ns exposed.
    spans = [(0, 0, 100, True), (0, 10, 30, False), (0, 50, 60, False), (0, 200, 210, False)]
    assert T.busy(spans) == {0: (110, 100, 70)}
    assert T.busy([(0, 0, 50, False), (0, 10, 20, True)]) == {0: (50, 10, 0)}  # fully hidden


def reference_busy(spans):
    """Brute force over unit time slots (small coordinates only)."""
    work, comm = set(), set()
    for _, s, e, c in spans:
        (comm if c else work).update(range(s, e))
    return len(work | comm), len(comm), len(comm - work)


def test_busy_folding_keeps_totals_exact_over_many_spans():
    rng = random.Random(7)
    spans, t = [], 0
    for _ in range(140_000):  # over two folds' worth
        t += rng.randint(0, 3)
        d = rng.randint(1, 5)
        spans.append((0, t, t + d, rng.random() < 0.3))
    rng.shuffle(spans[-500:])  # late records arrive out of order within a buffer
    assert T.busy(spans)[0] == reference_busy(spans)


def test_a_collective_keeps_its_exposed_time_per_sixteenth_of_its_duration():
    # comm 0-160 (bins of 10 ns); other work 0-40 and 100-120 covers bins 0-3 and 10-11. A
    # second collective (another stream) is no "other work": bins 4-9 stay exposed under it.
    spans = [
        (0, 0, 40, False, 0, 0),
        (0, 100, 120, False, 0, 0),
        (0, 0, 160, True, 3, 7),
        (0, 50, 60, True, 3, 8),
    ]
    (first, second) = T.busy_collectives(spans)
    assert first == (0, 3, 7, 0, 160, [0] * 4 + [10] * 6 + [0] * 2 + [10] * 4)
    assert second[:5] == (0, 3, 8, 50, 60) and sum(second[5]) == 10
    assert T.busy_collectives([(0, 0, 10, True, 0, 0)]) == []  # untagged: no record


def reference_exposure(coll, work):
    """Exposed ns per bin of ``coll`` (start, end) against unit-slot ``work``."""
    s, e = coll
    bounds = [s + (e - s) * i // 16 for i in range(16)] + [e]
    return [sum(1 for t in range(a, b) if t not in work) for a, b in itertools.pairwise(bounds)]


def test_collective_exposure_is_exact_across_folds_and_late_records():
    rng = random.Random(11)
    spans, colls, t = [], [], 0
    for i in range(140_000):  # over two folds' worth: kernels spanning the cut points too
        t += rng.randint(0, 3)
        if i % 997 == 0:
            d = rng.randint(200, 3000)
            spans.append((0, t, t + d, True, i // 997, i + 1))
            colls.append((t, t + d))
        else:
            spans.append((0, t, t + rng.randint(1, 5), False, 0, 0))
    rng.shuffle(spans[-300:])
    work = set()
    for _, a, b, comm, _, _ in spans:
        if not comm:
            work.update(range(a, b))
    got = T.busy_collectives(spans)
    assert [(r[3], r[4]) for r in got] == colls  # in launch order
    assert [r[5] for r in got] == [reference_exposure(c, work) for c in colls]


def test_gpu_work_is_split_into_steps_at_the_marks():
    marks = [(100, True, 0), (200, True, 0), (300, False, 0), (400, True, 0), (500, False, 0)]
    spans = [(0, 50, 120, False, 0), (0, 150, 250, False, 0), (0, 260, 270, True, 0), (0, 350, 360, False, 0)]
    steps = T.busy_steps(marks, spans)[0]
    assert steps == [
        # 100-120 and 150-200 (first/last: spans starting inside; 100-120 carried in from before)
        (100, 200, True, 70, 150, 250, 120),
        (200, 300, True, 60, 260, 270, 250),  # 200-250 (carried) and 260-270
        (300, 400, False, 10, 350, 360, 0),
        (400, 500, True, 0, 0, 0, 0),
    ]
    from dlpt.capture.native import gpu_steps

    rows = gpu_steps({"0": steps})["0"]
    assert [r["span_ns"] for r in rows] == [100, 100, 100]  # recorded intervals only
    # Idle before the first work: from where the carried work ends (120, 250), not the mark.
    assert rows[0] == {"span_ns": 100, "busy_ns": 70, "idle_before_ns": 30, "idle_after_ns": 0}
    assert rows[1] == {"span_ns": 100, "busy_ns": 60, "idle_before_ns": 10, "idle_after_ns": 30}
    assert rows[2] == {"span_ns": 100, "busy_ns": 0, "idle_before_ns": 100, "idle_after_ns": 0}


def test_a_gpu_still_running_the_last_steps_work_is_not_waiting_for_the_next():
    # A loader that prepares the next batch while the GPU works: the host starts step 2 at 100,
    # the GPU runs step 1's work (launches 1-3) until 170, then idles until step 2's copy
    # (launch 4) at 180. Launch 3 was queued: it starts at 120, after the mark.
    marks = [(0, True, 0), (100, True, 3), (200, True, 4), (300, False, 4)]
    spans = [(0, 20, 90, False, 1), (0, 90, 120, False, 2), (0, 120, 170, False, 3), (0, 180, 290, False, 4)]
    steps = T.busy_steps(marks, spans)[0]
    # Step 2's first work is its own (180), not launch 3's (120): the GPU was busy until 170.
    assert [(s[4], s[6]) for s in steps] == [(20, 0), (180, 170), (0, 290)]
    from dlpt.capture.native import gpu_steps

    rows = gpu_steps({"0": steps})["0"]
    assert [r["idle_before_ns"] for r in rows] == [20, 10, 10]  # step 3: no work of its own, idle after 290
    assert [r["busy_ns"] + r["idle_before_ns"] + r["idle_after_ns"] for r in rows] == [100, 100, 100]
    # Work launched before the first mark (set-up) is no step's first work either.
    set_up, own = (0, 110, 130, False, 5), (0, 150, 160, False, 6)
    (first,) = T.busy_steps([(100, True, 5), (200, False, 6)], [set_up, own])[0]
    assert (first[4], first[6]) == (150, 130)
    # Without launch ids (0: unknown) the queued launch reads as step 2's first work, as before.
    unknown = T.busy_steps([(t, r, 0) for t, r, _ in marks], [(*s[:4], 0) for s in spans])[0]
    assert unknown[1][4] == 120


def test_step_edges_are_the_records_whole_across_folds():
    # Over two folds' worth of records, some running across marks, some arriving thousands of
    # records late (after a fold cut their start): each step's first/last and carried_until are
    # those of the records themselves, wherever a fold cut them.
    rng = random.Random(5)
    marks = [(m, True, 0) for m in range(1000, 600_000, 1000)]
    spans, t = [], 0
    for i in range(140_000):
        t += rng.randint(3, 5)  # gaps between most records: the folds cut between them
        spans.append((0, t, t + (rng.randint(500, 2500) if i % 500 == 0 else rng.randint(1, 2)), False, 0))
    for i in range(50_000, 120_000, 3_001):
        spans.insert(i + 20_000, spans.pop(i))
    got = T.busy_steps(marks, spans)[0]
    first, last, carried = {}, {}, {}
    for _, a, b, _, _ in spans:
        k = a // 1000  # the interval after mark k (marks at 1000, 2000, ...)
        if k >= 1:
            first[k], last[k] = min(first.get(k, a), a), max(last.get(k, b), b)
        for j in range(k + 1, b // 1000 + (b % 1000 > 0)):
            carried[j] = max(carried.get(j, 0), b)
    assert [(s[4], s[5], s[6]) for s in got] == [
        (first.get(k, 0), last.get(k, 0), carried.get(k, 0)) for k in range(1, len(got) + 1)
    ]


def test_sequence_ranges_answer_the_op_that_created_a_node():
    adds = [(10, 1), (13, 2), (13, 3), (20, 4)]  # equal numbers: the last op wins
    assert T.seq_ranges(adds, [9, 10, 12, 13, 19, 20, 99]) == [-1, 1, 1, 3, 3, 4, 4]
    assert T.seq_ranges([(5, 1), (3, 2)], [4, 5]) == [-1, 1]  # numbers never go back


def test_sequence_ranges_forget_only_the_oldest_entries():
    n = (1 << 15) + 5000
    found = T.seq_ranges([(i * 2, i) for i in range(n)], [0, 2 * (n - 1), 2 * (n - 100) + 1])
    assert found[0] == -1 and found[1] == n - 1 and found[2] == n - 100


def test_correlations_map_ids_and_say_first_sighting():
    puts = [(7, 3, False), (8, 4, True)]
    # (the first-sighting flag only matters for ids found in the window)
    assert T.correlations(puts, [7, 7, 8, 9]) == [(0, 3, True), (0, 3, False), (1, -1, True), (2, -1, False)]
    # A slot is reused only 2^20 ids later: the old id then reads as unknown.
    assert T.correlations([(5, 1, False), (5 + (1 << 20), 2, False)], [5, 5 + (1 << 20)]) == [
        (2, -1, False),
        (0, 2, True),
    ]


def test_graph_node_contexts_follow_clones():
    ops = [("put", 100, 7), ("clone", 100, 200), ("clone", 999, 300)]
    assert T.graph_nodes(ops, [100, 200, 300]) == [7, 7, -1]


@pytest.mark.parametrize("order", ["forward", "shuffled"])
def test_tree_gives_one_id_per_distinct_child(order):
    keys = [(0, 2, code, line) for code in range(50) for line in range(20)]  # 1,000 frames under root
    if order == "shuffled":
        random.Random(1).shuffle(keys)
    ids = T.tree_children(keys + keys[:300])  # the repeats come from the thread's cache
    assert len(set(ids[:1000])) == 1000 and min(ids) == 1
    assert ids[1000:] == ids[:300]
    nested = T.tree_children([(0, 4, 1, 0), (1, 5, 0, 0), (1, 5, 1, 0), (2, 4, 9, 0)])
    assert nested == [1, 2, 3, 4]  # parents before children, ids in creation order


def test_op_names_survive_pointer_reuse_and_fresh_strings():
    # Slot 0 is one buffer: the same pointer first holds "aten::mm", then "aten::add".
    ids = T.op_name_ids(
        [(0, "aten::mm"), (0, "aten::mm"), (0, "aten::add"), (1, "aten::mm"), (2, "aten::add")]
    )
    assert ids[0] == ids[1] == ids[3] and ids[2] == ids[4] and ids[0] != ids[2]
    # Long names: the same checks, and a reused pointer whose text differs only at its end.
    long_a, long_b = "aten::" + "a" * 60, "aten::" + "a" * 59 + "b"
    longs = T.op_name_ids(
        [(5, long_a), (5, long_a), (5, long_b), (6, long_a), (7, "aten::mm"), (5, "aten::mm")]
    )
    assert longs[0] == longs[1] == longs[3] and longs[2] != longs[0]
    assert longs[4] == longs[5] and longs[4] not in (longs[0], longs[2])  # (each call interns afresh)
