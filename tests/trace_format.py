"""A checker of the Chrome trace-event JSON format (what ui.perfetto.dev and chrome://tracing
open), for the Perfetto export's tests: the phases used, their required fields and units, slices
that nest within each thread, and flows whose ends bind to slices."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

PHASES = {"X", "M", "s", "f", "i"}


def check_trace(trace: Any) -> dict[tuple[int, int], list[dict[str, Any]]]:
    """Raise AssertionError naming the first violation; return the X events per (pid, tid)."""
    assert isinstance(trace, dict) and isinstance(trace.get("traceEvents"), list), "no traceEvents list"
    assert trace.get("displayTimeUnit") in (None, "ms", "ns")
    slices: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    flows: dict[Any, dict[str, dict[str, Any]]] = defaultdict(dict)
    named: set[tuple[int, int]] = set()
    for e in trace["traceEvents"]:
        ph = e.get("ph")
        assert ph in PHASES, f"unknown phase {ph!r}: {e}"
        assert isinstance(e.get("pid"), int), f"pid must be an int: {e}"
        if ph == "M":
            assert e["name"] in ("process_name", "thread_name", "process_sort_index", "thread_sort_index"), e
            assert isinstance(e.get("args"), dict), e
            if e["name"] == "thread_name":
                assert isinstance(e.get("tid"), int) and isinstance(e["args"].get("name"), str), e
                named.add((e["pid"], e["tid"]))
            continue
        assert isinstance(e.get("tid"), int), f"tid must be an int: {e}"
        assert isinstance(e.get("name"), str), e
        ts = e.get("ts")
        assert isinstance(ts, (int, float)) and ts >= 0, f"ts (µs) must be a non-negative number: {e}"
        if ph == "X":
            assert isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0, f"X needs dur (µs): {e}"
            slices[(e["pid"], e["tid"])].append(e)
        elif ph in ("s", "f"):
            assert "id" in e and e.get("cat"), f"flow events need an id and a category: {e}"
            if ph == "f":
                assert e.get("bp") == "e", f"flow ends bind to the enclosing slice: {e}"
            assert ph not in flows[e["id"]], f"flow {e['id']} has two {ph} events"
            flows[e["id"]][ph] = e
    for key, evs in slices.items():
        assert key in named, f"track {key} has slices but no thread_name"
        stack: list[float] = []
        for e in sorted(evs, key=lambda e: (e["ts"], -e["dur"])):
            end = e["ts"] + e["dur"]
            while stack and stack[-1] <= e["ts"] + 1e-6:
                stack.pop()
            assert not stack or end <= stack[-1] + 1e-6, (
                f"slice {e['name']!r} at {e['ts']} overlaps its parent on {key}"
            )
            stack.append(end)
    for fid, ends in flows.items():
        assert set(ends) == {"s", "f"}, f"flow {fid} lacks an end: {sorted(ends)}"
        for ph, e in ends.items():
            host = slices[(e["pid"], e["tid"])]
            assert any(x["ts"] - 1e-6 <= e["ts"] <= x["ts"] + x["dur"] + 1e-6 for x in host), (
                f"flow {fid} {ph} at {e['ts']} is inside no slice of its track"
            )
    return slices
