"""The memory tracker (csrc/memory/tracker.h) in isolation, through dlpt._C._testing.memory_events:
synthetic allocator events, exact expected output. The copy-on-write peak snapshot is held to a
brute-force one that copies every node's bytes at every new peak."""

from __future__ import annotations

import random
from collections import defaultdict

from dlpt.capture.native import core

T = core()._testing
CUDA, CPU = (1, 0), (0, -1)


def alloc(dev, ptr, nbytes, allocated, reserved=0, node=-1):
    return ("alloc", dev[0], dev[1], ptr, nbytes, allocated, reserved, node)


def free(dev, ptr, allocated, reserved=0):
    return ("free", dev[0], dev[1], ptr, 0, allocated, reserved, -1)


def step_end(counted=True):
    return ("step_end", 0, 0, 0, int(counted), 0, 0, -1)


STEP_BEGIN = ("step_begin", 0, 0, 0, 0, 0, 0, -1)


def by_node(out):
    return {n[0]: n[2:] for n in out["nodes"]}  # node -> (alloc, allocs, peak, oom)


def test_peak_holds_what_was_live_at_the_highest_point_not_at_the_end():
    out = T.memory_events(
        [
            STEP_BEGIN,
            alloc(CUDA, 0x100, 100, 100, 512, node=1),  # activation of line 1
            alloc(CUDA, 0x200, 300, 400, 512, node=2),  # peak: 1 holds 100, 2 holds 300
            free(CUDA, 0x200, 100, 512),
            alloc(CUDA, 0x300, 50, 150, 512, node=3),  # after the peak: not in it
            free(CUDA, 0x100, 50, 512),  # the activation freed in backward
            step_end(),
        ]
    )
    assert by_node(out) == {1: (100, 1, 100, 0), 2: (300, 1, 300, 0), 3: (50, 1, 0, 0)}
    (dev,) = out["devices"]
    assert (dev["type"], dev["index"]) == CUDA
    assert dev["steps"] == [(400, 512, 512, 400)]


def test_untraced_blocks_count_in_the_totals_only_and_missed_frees_heal():
    out = T.memory_events(
        [
            alloc(CUDA, 0x10, 1000, 1000),  # allocated while not recording: no node
            STEP_BEGIN,
            alloc(CUDA, 0x20, 10, 1010, node=7),
            # 0x20 comes back without its free having been seen: the old block is released
            alloc(CUDA, 0x20, 20, 1020, node=8),
            step_end(),
        ]
    )
    assert out["missed_frees"] == 1
    assert by_node(out) == {7: (10, 1, 0, 0), 8: (20, 1, 20, 0)}
    assert out["devices"][0]["steps"] == [(1020, 0, 0, 20)]


def test_uncounted_steps_add_nothing_and_restart_forgets():
    events = [STEP_BEGIN, alloc(CPU, 1, 64, 64, node=1), free(CPU, 1, 0), step_end(False)]
    out = T.memory_events(events)
    assert by_node(out) == {1: (64, 1, 0, 0)} and out["devices"][0]["steps"] == []
    out = T.memory_events([*events[:-1], step_end(True), ("restart", 0, 0, 0, 0, 0, 0, -1)])
    assert by_node(out) == {1: (64, 1, 0, 0)} and out["devices"][0]["steps"] == []


def test_a_restore_counts_the_forgotten_steps_again_before_the_later_ones():
    def step(n: int) -> list:
        return [STEP_BEGIN, alloc(CPU, n, n, n, node=n), free(CPU, n, 0), step_end(True)]

    events = [
        *step(10),
        ("restart", 0, 0, 0, 0, 0, 0, -1),
        *step(20),
        ("restart", 0, 0, 0, 0, 0, 0, -1),
        *step(30),
    ]
    forgot = T.memory_events(events)
    assert [s[0] for s in forgot["devices"][0]["steps"]] == [30]
    restored = T.memory_events([*events, ("restore", 0, 0, 0, 0, 0, 0, -1)])
    assert [s[0] for s in restored["devices"][0]["steps"]] == [20, 30]  # the first restart's stay out
    assert {n: v[2] for n, v in by_node(restored).items()} == {10: 0, 20: 20, 30: 30}
    extend = ("restart", 0, 0, 0, 1, 0, 0, -1)  # the second restart extends the first one's drop
    both = T.memory_events([*events[:9], extend, *events[10:], ("restore", 0, 0, 0, 0, 0, 0, -1)])
    assert [s[0] for s in both["devices"][0]["steps"]] == [10, 20, 30]


def test_oom_snapshot_is_what_was_live_then_on_that_device():
    out = T.memory_events(
        [
            alloc(CUDA, 1, 100, 100, 200, node=1),
            alloc(CPU, 2, 7, 7, node=1),
            alloc(CUDA, 3, 50, 150, 200, node=2),
            free(CUDA, 3, 100, 200),
            ("oom", *CUDA, 0, 4096, 100, 200, 5),
            alloc(CUDA, 4, 80, 180, 200, node=2),
            ("oom", *CUDA, 0, 8192, 180, 200, 6),  # counted; the first one is explained
        ]
    )
    assert out["oom"] == {
        "device": 0,
        "requested": 4096,
        "allocated": 100,
        "reserved": 200,
        "node": 5,
        "count": 2,
    }
    rows = {(n[0], n[1]): n[5] for n in out["nodes"]}
    assert rows[(1, 0)] == 100 and rows.get((2, 0), 0) == 0 and rows[(1, 1)] == 0


def brute_force(events):
    """Per node the sum over counted steps of its live bytes at each step's peak, copying every
    node's bytes at every new peak; per device the step list."""
    live = {}  # ptr -> (node, dev, bytes)
    node_live = defaultdict(int)  # (node, dev) -> bytes
    totals = {}  # dev -> (allocated, reserved)
    traced = defaultdict(int)
    step = {}  # dev -> [peak, reserved_at_peak, peak_reserved, traced_at_peak, snapshot]
    sums = defaultdict(int)
    steps = defaultdict(list)

    def begin():
        for d, (a, r) in totals.items():
            step[d] = [a, r, r, traced[d], {k: v for k, v in node_live.items() if k[1] == d}]

    for what, t, i, ptr, nbytes, allocated, reserved, node in events:
        d = (t, i)
        if what == "step_begin":
            begin()
            continue
        if what == "step_end":
            if nbytes:
                for dd, s in step.items():
                    steps[dd].append(tuple(s[:4]))
                    for k, v in s[4].items():
                        sums[k] += v
            begin()
            continue
        if d not in step:
            step[d] = [0, 0, 0, 0, {}]
        if ptr in live:
            n0, d0, b0 = live.pop(ptr)
            node_live[(n0, d0)] -= b0
            traced[d0] -= b0
        if what == "alloc" and node >= 0:
            live[ptr] = (node, d, nbytes)
            node_live[(node, d)] += nbytes
            traced[d] += nbytes
        totals[d] = (allocated, reserved)
        s = step[d]
        s[2] = max(s[2], reserved)
        if allocated > s[0]:
            s[0], s[1], s[3] = allocated, reserved, traced[d]
            s[4] = {k: v for k, v in node_live.items() if k[1] == d}
    return {k: v for k, v in sums.items() if v}, dict(steps)


def test_copy_on_write_snapshot_equals_brute_force_on_random_runs():
    rng = random.Random(11)
    for _ in range(20):
        events, live, allocated, reserved, ptr = [], {}, {CUDA: 0, (1, 1): 0}, {CUDA: 0, (1, 1): 0}, 0
        events.append(STEP_BEGIN)
        for _ in range(rng.randint(50, 400)):
            r = rng.random()
            if r < 0.04:
                events.append(step_end(rng.random() < 0.8))
                continue
            dev = CUDA if rng.random() < 0.7 else (1, 1)
            if r < 0.55 or not live:
                ptr += 1
                nbytes = rng.randint(1, 1000)
                node = rng.choice([-1, 1, 2, 3, 4, 5, 6])
                allocated[dev] += nbytes
                reserved[dev] = max(reserved[dev], allocated[dev] + rng.randint(0, 500))
                live[ptr] = (dev, nbytes)
                events.append(alloc(dev, ptr, nbytes, allocated[dev], reserved[dev], node))
            else:
                p = rng.choice(list(live))
                d, nbytes = live.pop(p)
                allocated[d] -= nbytes
                events.append(free(d, p, allocated[d], reserved[d]))
        events.append(step_end())
        out = T.memory_events(events)
        expected_sums, expected_steps = brute_force(events)
        labels = [(d["type"], d["index"]) for d in out["devices"]]
        got = {(n[0], labels[n[1]]): n[4] for n in out["nodes"] if n[4]}
        assert got == expected_sums
        assert {lab: d["steps"] for lab, d in zip(labels, out["devices"], strict=True)} == {
            lab: expected_steps.get(lab, []) for lab in labels
        }
