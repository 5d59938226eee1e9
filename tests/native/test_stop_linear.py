"""stop() is linear in the number of nodes: line numbers come from one line table per code
object, built once and binary-searched (csrc/frames/code_registry.cpp). Counted, not timed:
the native core counts its lookups, the line-table entries it reads and its search steps."""

from __future__ import annotations

import torch

from dlpt.capture.native import core

C = core()
T = C._testing


def long_function(n: int):
    """One generated function of `n` one-op lines (line 2 to n + 1 of its file)."""
    src = "def f(x):\n" + "    x = torch.add(x, 1)\n" * n + "    return x\n"
    ns: dict = {"torch": torch}
    exec(compile(src, f"<long function {n}>", "exec"), ns)
    return ns["f"]


def profile_long_function(n: int) -> tuple[list[int], int, int]:
    """(the lines of its frame nodes, frame nodes in the export, line-lookup work at stop)."""
    f = long_function(n)
    C.start(False, [], True)
    f(torch.zeros(1))
    before = T.line_lookup_cost()
    raw = C.stop()
    lookups, entries, steps = (a - b for a, b in zip(T.line_lookup_cost(), before, strict=True))
    frames = [t for t in raw["nodes"] if t[2] == "frame"]
    assert lookups == len(frames)  # every frame node's line comes through the table, once
    lines = sorted(t[5] for t in frames if t[4] == f"<long function {n}>")
    return lines, len(frames), entries + steps


def test_every_line_of_a_long_function_is_found():
    lines, _, _ = profile_long_function(3000)
    assert lines == list(range(2, 3002))


def test_line_lookup_work_grows_linearly_with_the_function():
    _, frames_small, work_small = profile_long_function(2000)
    _, frames_big, work_big = profile_long_function(8000)
    assert frames_big > 3.9 * (frames_small - 100)
    # n log n at most: 4x the lines, ~4.6x the work. A scan of the code's line table per lookup
    # (PyCode_Addr2Line) grows 16x, and reads thousands of entries per lookup.
    assert work_big < 6 * work_small
    assert work_big / frames_big < 64
