"""The timeline's steps carry the run's step numbers (issue 48), as the header counts steps seen,
not "step 1..N" of the window. Checked against the program's own clock: it writes the
wall-clock time (CLOCK_REALTIME, the CPU timeline's clock) around each optimizer step (where the
step's boundary is marked), so the step the window's first mark ended is known by construction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dlpt.model.session import Session
from dlpt.views.run import build_view

from .helpers import Job, run, write

PROGRAM = """\
import json, sys, time, torch
w = torch.ones(64, 64, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.001)
ends = []
for i in range(1, int(sys.argv[1]) + 1):
    (w @ w).sum().backward()
    before = time.time_ns()
    opt.step()  # the step's boundary (the optimizer's hook): a timeline mark inside this call
    ends.append([i, before, time.time_ns()])
json.dump(ends, open("ends.json", "w"))
"""


@pytest.mark.parametrize(
    ("warmup", "steps"),
    # A warm-up given (the window opens where it ends), and none (it opens at the start). A
    # detected warm-up ends where the machine's load lets it: not a test that can say when.
    [(["--skip-first", "3"], 12), (["--skip-first", "0"], 8)],
    ids=["skip-first-3", "skip-first-0"],
)
def test_timeline_steps_are_numbered_as_the_run_counts_them(
    tmp_path: Path, warmup: list[str], steps: int
) -> None:
    write(tmp_path / "prog.py", PROGRAM)
    args = [*warmup, "--timeline", "2", "--no-report", "-o", "t.json", "prog.py", str(steps)]
    r = run(Job(args, tmp_path))
    assert r.rc == 0, r.err
    session = Session.load(tmp_path / "t.json")
    tl = session.meta["timeline"]
    assert tl["clock"] == "realtime"
    # The window's first mark: before the first step's optimizer call (the start of the run:
    # the window starts at step 1) or inside step i's (its boundary: the window starts at i + 1).
    view = build_view(session).timeline
    assert view is not None and view.steps, "the window kept steps"
    mark = tl["start_ns"] + view.steps[0][0]
    ends = json.loads((tmp_path / "ends.json").read_text())
    inside = [i for i, before, after in ends if before <= mark <= after]
    first = 1 if mark < ends[0][1] else inside[0] + 1
    assert tl["first_step"] == first
    names = [s.name for s in view.slices if s.kind == "step"]
    assert names == [f"step {first + k}" for k in range(len(names))]
