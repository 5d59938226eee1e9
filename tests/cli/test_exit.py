"""Exit status and traceback are the program's; the profile is saved and shown first."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .helpers import Job, Result, run, run_many, write

SCRIPT = """\
import os, pathlib, sys
mode, marker = sys.argv[1], sys.argv[2]
pathlib.Path(marker).write_text("ran")
print("script ran", flush=True)
if mode == "ok":  # -o FILE is relative to where dlpt was started, not where the program went
    elsewhere = pathlib.Path(marker).parent / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    os.chdir(elsewhere)

def inner():
    if mode == "raise":
        raise ValueError("boom from the script")
    if mode == "kbint":
        raise KeyboardInterrupt

inner()
if mode == "exit3":
    sys.exit(3)
if mode == "exitmsg":
    sys.exit("bye from the script")
"""

MODES = {"ok": 0, "exit3": 3, "exitmsg": 1, "raise": 1, "kbint": -2}
# Profiler options the CLI must hand on (checked in the saved session's meta).
OK_OPTIONS = ["--skip-first", "1", "--active", "2", "--no-gpu"]
FRAME = re.compile(r'^  File "(.*)", line \d+, in (.*)$', re.M)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("exit")
    write(root / "modes.py", SCRIPT)
    jobs = {}
    for mode in MODES:
        args = ["modes.py", mode, str(root / f"{mode}.ran")]
        jobs[mode + "/python"] = Job(args, root, dlpt=False)
        # Merged output: what dlpt prints must come before the program's traceback/message.
        extra = {"exit3": ["--no-report"], "ok": OK_OPTIONS}.get(mode, [])
        jobs[mode] = Job(["-o", f"{mode}.json", *extra, *args], root, merged=True)
        if mode != "ok":  # stdout and stderr apart: what each stream holds
            jobs[mode + "/split"] = Job(["-o", f"split-{mode}.json", *extra, *args], root)
    return {"root": root, "results": run_many(jobs)}


@pytest.mark.parametrize("mode", MODES)
def test_exit_status_is_the_programs(env: dict, mode: str) -> None:
    r: Result = env["results"][mode]
    assert r.rc == MODES[mode], r.out
    assert r.rc == env["results"][mode + "/python"].rc  # kbint: both die of SIGINT


@pytest.mark.parametrize("mode", MODES)
def test_profile_saved_whatever_the_ending(env: dict, mode: str) -> None:
    root: Path = env["root"]
    r: Result = env["results"][mode]
    data = json.loads((root / f"{mode}.json").read_text())
    assert data["meta"]["argv"] == ["modes.py", mode, str(root / f"{mode}.ran")]
    saved = r.out.index(f"dlpt: saved profile to {mode}.json")
    assert r.out.index("script ran") < saved
    for tail in ("Traceback", "bye from the script"):
        if tail in r.out:
            assert saved < r.out.index(tail)


def test_profiler_options_reach_the_profiler(env: dict) -> None:
    meta = json.loads((env["root"] / "ok.json").read_text())["meta"]
    assert (meta["steps"]["skip_first"], meta["steps"]["active"]) == (1, 2)
    assert meta["gpu"]["enabled"] is False and "no-gpu" in meta["gpu"]["reason"]


@pytest.mark.parametrize("mode", ["raise", "kbint", "exitmsg"])
def test_stderr_is_what_python_prints(env: dict, mode: str) -> None:
    """The traceback (or sys.exit message) is python's own: same frames, all of them the
    script's, none of dlpt or runpy; it ends stderr."""
    plain = env["results"][mode + "/python"].err
    err = env["results"][mode + "/split"].err
    assert plain and err.endswith(plain)
    frames = FRAME.findall(plain)
    if mode != "exitmsg":
        root: Path = env["root"]
        assert frames == [(str(root / "modes.py"), "<module>"), (str(root / "modes.py"), "inner")]


def test_no_report_prints_only_the_programs_output(env: dict) -> None:
    r: Result = env["results"]["exit3/split"]
    assert r.out == "script ran\n"
    assert "dlpt: saved profile to split-exit3.json" in r.err


def test_report_comes_before_traceback_and_load_rerenders_it(env: dict) -> None:
    """`--load` renders the saved session without running the program, and it is the very
    report the run printed, before the traceback."""
    root: Path = env["root"]
    marker = root / "raise.ran"
    assert marker.exists()
    marker.unlink()
    loaded = run(Job(["--load", "raise.json"], root))
    assert loaded.rc == 0 and loaded.err == "", loaded.err
    assert not marker.exists(), "--load ran the program"
    report = loaded.out.strip()
    assert report
    out = env["results"]["raise"].out
    assert report in out[: out.index("Traceback")]
    # Run apart, the report is on stdout (its header: the other run's timings differ).
    split = env["results"]["raise/split"].out
    head = "\n".join(report.splitlines()[:2])
    assert split.startswith("script ran\n" + head), split
