"""The host sampler and the timeline through the command line: --sample-hz and --timeline,
--export perfetto from a run and from --load (the same trace), clear errors for bad values, and
the sampler stopped cleanly however the program ends (SIGTERM, an API profile never stopped)."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from dlpt.model.session import Session
from tests.trace_format import check_trace

from .helpers import Job, finish, popen, run_many, write

# A step: a Python loop that launches no op, then a matmul; five steps.
STEPS = """\
import time, torch
import dlpt
x = torch.ones(64, 64)
opt = torch.optim.SGD([torch.nn.Parameter(torch.ones(2))], lr=0.1)

def prepare():
    s = 0
    for i in range(150000):
        s += i  # @prepare
    return s

for _ in range(5):
    prepare()
    y = (x @ x).sum()
    opt.step()
"""

# Loops until told to stop (SIGTERM), in Python and in ops.
LOOP = """\
import time, torch
x = torch.ones(32, 32)
print("running", flush=True)
t0 = time.time()
while time.time() - t0 < 60:
    s = sum(range(2000))  # @python
    x = (x @ x).clamp(-1, 1)
"""

# An API profile started and never stopped: the process must still exit at once, status 0.
UNSTOPPED = """\
import dlpt, torch
prof = dlpt.profile(gpu=False)
prof.start()
s = sum(range(100000))
print("exiting", flush=True)
"""


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("host")
    write(root / "steps.py", STEPS)
    write(root / "loop.py", LOOP)
    write(root / "unstopped.py", UNSTOPPED)
    return root


def prepare_line(root: Path) -> int:
    return next(i for i, t in enumerate((root / "steps.py").read_text().splitlines(), 1) if "# @prepare" in t)


def test_timeline_export_from_a_run_and_from_load(root: Path) -> None:
    results = run_many(
        {
            "run": Job(
                [
                    "--sample-hz",
                    "1000",
                    "--skip-first",
                    "1",
                    "--timeline",
                    "2",
                    "--verbose",
                    "-o",
                    "s.json",
                    "--export",
                    "perfetto",
                    "t.json",
                    "steps.py",
                ],
                root,
            ),
            "off": Job(["--sample-hz", "0", "-o", "off.json", "--no-report", "steps.py"], root),
            # Five steps: shorter than the automatic warm-up (13 steps at the least), so one skipped.
            "default": Job(["--verbose", "--skip-first", "1", "-o", "default.json", "steps.py"], root),
        }
    )
    default = results["default"]
    assert default.rc == 0, default.err
    assert "host per step (sampled at 1,000 Hz)" in default.out, "the sampler is on by default, at 1 kHz"
    assert Session.load(root / "default.json").meta["host"]["sampling"] is True
    r = results["run"]
    assert r.rc == 0, r.err
    assert "wrote perfetto export to t.json" in r.err
    assert "host per step (sampled at 1,000 Hz)" in r.out
    trace = json.loads((root / "t.json").read_text())
    slices = check_trace(trace)
    xs = [e for evs in slices.values() for e in evs]
    # Named by the run's step numbers: --skip-first 1 leaves step 1 out, so the window is 2 and 3.
    first = Session.load(root / "s.json").meta["timeline"]["first_step"]
    assert first == 2 and [e["name"] for e in xs if e["cat"] == "step"] == ["step 2", "step 3"]
    ops = [e for e in xs if e["cat"] == "op"]
    assert any(e["name"] == "aten::matmul" and e["args"]["line"].startswith("steps.py:") for e in ops)
    frames = [e for e in xs if e["cat"] == "frame" and e["args"].get("lineno") == prepare_line(root)]
    assert frames, "the Python line that launches no op shows in the sampled stacks"
    s = Session.load(root / "s.json")
    assert s.meta["timeline"]["steps"] == 2 and s.meta["host"]["sampling"] is True
    # dlpt's own frames (its launcher, runpy's frames above the program) are in neither the
    # timeline's stacks nor the host lines (issue 33).
    tl = s.meta["timeline"]
    files = {tl["strings"][row[3]] for row in tl["frames"] if row[1] == 0}
    assert files and not any(f.endswith("runpy>") or "/dlpt/" in f for f in files), files
    assert any(f.endswith("steps.py") for f in files)
    host_files = {r["file"] for r in s.meta["host"]["step_thread"]["lines"]}
    assert host_files and not any("/dlpt/" in f for f in host_files), host_files
    again = run_many(
        {"load": Job(["--load", "s.json", "--export", "perfetto", "t2.json", "--no-report"], root)}
    )["load"]
    assert again.rc == 0, again.err
    assert json.loads((root / "t2.json").read_text())["traceEvents"] == trace["traceEvents"]
    off = Session.load(root / "off.json")
    assert not any(n["m"].get("host_ns") for n in off.nodes) and "timeline" not in off.meta


@pytest.mark.parametrize(
    "args,says",
    [
        (["--sample-hz", "-1", "steps.py"], "--sample-hz must be from 0 (off) to 10000"),
        (["--sample-hz", "20000", "steps.py"], "--sample-hz must be from 0 (off) to 10000"),
        (["--timeline", "0", "steps.py"], "--timeline must be a number of steps from 1"),
        (
            ["--export", "perfetto", "x.json", "steps.py"],
            "--export perfetto writes the timeline: give --timeline N",
        ),
        (["--load", "nothing.json", "--timeline", "2"], "--timeline applies when running a program"),
        (["--load", "off.json", "--export", "perfetto", "p.json"], "the session holds no timeline"),
    ],
)
def test_bad_values_are_one_line_and_status_2(root: Path, args: list[str], says: str) -> None:
    if "off.json" in args and not (root / "off.json").exists():
        run_many({"off": Job(["--sample-hz", "0", "-o", "off.json", "--no-report", "steps.py"], root)})
    (r,) = run_many({"x": Job(args, root)}).values()
    assert r.rc == 2 and says in r.err and "Traceback" not in r.err, r.err
    assert not (root / "x.json").exists() and not (root / "p.json").exists()


def test_sigterm_stops_the_sampler_and_keeps_its_samples(root: Path) -> None:
    p = popen(["-m", "dlpt", "--sample-hz", "1000", "-o", "term.json", "--no-report", "loop.py"], root)
    assert p.stdout is not None and p.stdout.readline() == "running\n"
    time.sleep(1.0)
    p.send_signal(signal.SIGTERM)
    r = finish(p)
    assert r.rc == -signal.SIGTERM, r.err
    s = Session.load(root / "term.json")
    python = next(i for i, t in enumerate(LOOP.splitlines(), 1) if "# @python" in t)
    assert sum(n["m"].get("host_ns", 0) for n in s.nodes if n["line"] == python) > 0
    assert s.meta["host"]["samples"] > 0


def test_an_unstopped_api_profile_exits_cleanly(root: Path) -> None:
    (r,) = run_many({"x": Job(["unstopped.py"], root, dlpt=False)}).values()
    assert r.rc == 0 and "exiting" in r.out and r.err == "", r.err
