"""Signals and forks never lose a run or change how it ends: SIGTERM and a storm of Ctrl-Cs still
save the profile and the process dies of the signal, as plain python does; a forked child exits
with its own status and reports nothing; ``@dlpt.profile()`` on a script's main joins the CLI's profile."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from dlpt.model.session import Session

from .helpers import Job, Result, finish, popen, run_many, write

# Works until told to stop: the test signals it once it is running.
LOOP = """\
import pathlib, sys, time, torch
x = torch.ones(32, 32)
print("running", flush=True)
t0 = time.time()
while time.time() - t0 < 60:
    x = (x @ x).clamp(-1, 1)  # @loop
"""

# A Ctrl-C storm: a thread sends SIGINT every few ms until the profile file exists, so that
# signals keep arriving while dlpt stops and saves.
STORM = """\
import os, pathlib, signal, threading, time, torch
out = pathlib.Path("storm.json")
# Ctrl-C raises KeyboardInterrupt as in a terminal, also where the test runs as a background job
# of a non-interactive shell, which starts it with SIGINT ignored (inherited by this process).
signal.signal(signal.SIGINT, signal.default_int_handler)
def storm():
    for _ in range(3000):
        if out.exists():
            return
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.002)
x = torch.ones(16, 16)
threading.Thread(target=storm, daemon=True).start()
while True:
    x = x @ x
"""

FORK = """\
import os, sys, torch
import dlpt
x = torch.ones(8, 8)
pid = os.fork()
if pid == 0:
    y = x + 1
    if len(sys.argv) > 1:  # the child profiles itself
        with dlpt.profile(gpu=False) as p:
            z = x * 3  # @child
        p.save("child.json")
    print("child done", flush=True)
else:
    _, status = os.waitpid(pid, 0)
    print("child status", os.waitstatus_to_exitcode(status), flush=True)
    y = x - 1
"""

DECORATED = """\
import torch
import dlpt

@dlpt.profile()
def main():
    x = torch.ones(8, 8)
    for _ in range(3):
        x = x @ x  # @work
    print("main done", flush=True)

main()
with dlpt.profile() as prof:
    for _ in range(2):
        torch.ones(4).sum()
        prof.step()
prof.save("inner.json")
prof.print()
"""


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("signals")
    write(root / "loop.py", LOOP)
    write(root / "storm.py", STORM)
    write(root / "fork.py", FORK)
    write(root / "decorated.py", DECORATED)
    return root


def test_sigterm_saves_reports_and_dies_of_it(root: Path) -> None:
    p = popen(["-m", "dlpt", "-o", "term.json", "loop.py"], root)
    assert p.stdout is not None and p.stdout.readline() == "running\n"
    time.sleep(0.5)
    p.send_signal(signal.SIGTERM)
    r = finish(p)
    assert r.rc == -signal.SIGTERM, r.err
    assert "dlpt: saved profile to term.json" in r.err and "Traceback" not in r.err
    assert "Top-down" in r.out  # the report was printed
    session = Session.load(root / "term.json")
    assert any(n["name"] == "aten::matmul" for n in session.nodes)


def test_a_storm_of_ctrl_c_saves_and_dies_of_sigint(root: Path) -> None:
    r = finish(popen(["-m", "dlpt", "-o", "storm.json", "--no-report", "storm.py"], root))
    assert r.rc == -signal.SIGINT, r.err
    assert "dlpt: saved profile to storm.json" in r.err
    assert "dlpt/" not in r.err.replace("dlpt: saved", "")  # no traceback line inside dlpt
    assert r.err.rstrip().endswith("KeyboardInterrupt")  # the program's own traceback
    Session.load(root / "storm.json")


def test_a_forked_child_keeps_its_status_and_reports_nothing(root: Path) -> None:
    jobs = {
        "plain": Job(["fork.py"], root, dlpt=False),
        "dlpt": Job(["-o", "fork.json", "fork.py"], root),
        "child profiles": Job(["--no-report", "-o", "fork2.json", "fork.py", "profile"], root),
    }
    results = run_many(jobs)
    plain, profiled = results["plain"], results["dlpt"]
    assert plain.rc == profiled.rc == 0, profiled.err
    assert "child status 0" in profiled.out and "child done" in profiled.out
    assert "failed" not in profiled.err and profiled.err.count("saved profile") == 1
    assert profiled.out.count("Top-down") == 1  # the parent's report only
    child = results["child profiles"]
    assert child.rc == 0 and "child status 0" in child.out, child.err
    names = {n["name"] for n in Session.load(root / "child.json").nodes}
    assert "aten::mul" in names  # the child's own profile, recorded in the child


def test_a_decorated_main_joins_the_clis_profile(root: Path) -> None:
    (r,) = run_many({"x": Job(["-o", "decorated.json", "decorated.py"], root)}).values()
    assert r.rc == 0, r.err
    assert "ProfilerBusyError" not in r.err and "main done" in r.out
    assert r.out.count("Top-down") == 1  # the CLI's report, once, at the end
    assert "its report comes when that one stops" in r.err
    saved = json.loads((root / "decorated.json").read_text())
    inner = json.loads((root / "inner.json").read_text())  # saved when the CLI's profile stopped
    assert inner["nodes"] == saved["nodes"]
    assert saved["meta"]["steps"]["source"] == "manual" and saved["meta"]["steps"]["seen"] == 2


# The program ends while a non-daemon thread still runs: the interpreter waits for it, and
# Ctrl-C must end that wait as it does under plain python.
THREAD = """\
import threading, time, torch
threading.Thread(target=time.sleep, args=(60,), name="sleeper").start()
x = torch.ones(4) + 1
print("main done", flush=True)
"""

# dlpt's own finishing, slowed down: a session written slowly through the real atomic writer
# while signals arrive (what a million-node save looks like to the signal handling).
SLOW_SAVE = """\
import os, signal, sys, time
from dlpt.cli.signals import Signals
from dlpt.files.safe_files import atomic_text_writer
say = lambda msg: print(f"dlpt: {msg}", file=sys.stderr, flush=True)
signals = Signals(say, grace=1.0)
signals.remaining = ["the session (slow.json)", "the report"]
with signals.deferred():
    with atomic_text_writer("slow.json") as f:
        print("writing", flush=True)
        f.write('{"format":"dlpt-session"')
        for _ in range(300):
            time.sleep(0.1)
print("finished", flush=True)
"""


def test_sighup_saves_reports_and_dies_of_it(root: Path) -> None:
    p = popen(["-m", "dlpt", "-o", "hup.json", "loop.py"], root)
    assert p.stdout is not None and p.stdout.readline() == "running\n"
    time.sleep(0.5)
    p.send_signal(signal.SIGHUP)
    r = finish(p)
    assert r.rc == -signal.SIGHUP, r.err
    assert "dlpt: saved profile to hup.json" in r.err and "Traceback" not in r.err
    assert "Top-down" in r.out
    assert any(n["name"] == "aten::matmul" for n in Session.load(root / "hup.json").nodes)


def _after_main(args: list[str], cwd: Path) -> tuple[Result, float]:
    """Run until "main done", Ctrl-C 2 s later, then how it ends and how long that took."""
    p = popen(args, cwd)
    assert p.stdout is not None
    while "main done" not in p.stdout.readline():
        pass
    time.sleep(2)
    t = time.monotonic()
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
        return Result(p.returncode, out, err), float("inf")
    return Result(p.returncode, out, err), time.monotonic() - t


def test_ctrl_c_after_main_ends_the_wait_for_threads_as_python_does(root: Path) -> None:
    write(root / "thread.py", THREAD)
    plain, plain_s = _after_main(["thread.py"], root)
    profiled, profiled_s = _after_main(["-m", "dlpt", "--no-report", "-o", "thread.json", "thread.py"], root)
    assert plain_s < 10 and profiled_s < 10, (plain_s, profiled_s, profiled.err)
    assert profiled.rc == plain.rc, (profiled.rc, plain.rc, profiled.err)
    assert "dlpt: saved profile to thread.json" in profiled.err
    assert "failed to stop" not in profiled.err
    assert "KeyboardInterrupt" in profiled.err and "KeyboardInterrupt" in plain.err


def test_a_signal_is_held_at_most_the_grace_while_dlpt_saves(root: Path) -> None:
    write(root / "slow_save.py", SLOW_SAVE)
    Session().save(root / "slow.json")  # an earlier session there: it must survive intact
    before = (root / "slow.json").read_text()
    p = popen(["slow_save.py"], root)
    assert p.stdout is not None and p.stdout.readline() == "writing\n"
    t = time.monotonic()
    p.send_signal(signal.SIGINT)
    time.sleep(0.2)
    p.send_signal(signal.SIGINT)  # a second Ctrl-C during the long save
    r = finish(p)
    waited = time.monotonic() - t
    assert r.rc == -signal.SIGINT and "finished" not in r.out, (r.rc, r.err)
    assert waited < 5, waited  # held for the grace (1 s here), not for the 30 s the save would take
    skipped = "the session (slow.json), the report"
    assert r.err.strip() == f"dlpt: SIGINT: ending now, after 1 s; skipped: {skipped}"
    assert (root / "slow.json").read_text() == before
    assert not list(root.glob(".slow.json.*")), "the temporary file is removed"
