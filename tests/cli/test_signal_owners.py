"""Whose a signal is, and that every one of dlpt's ends the process within the grace: a program
that holds the GIL in a C loop dies of SIGTERM; asyncio's loops (which take and drop the wakeup
fd, and give SIGTERM back as SIG_DFL) leave dlpt's ending working; a signal the program handles
(a preemption flag, a caught Ctrl-C) never becomes a death; a Ctrl-C at the instant the program
ends never costs the profile; no rank waits for the others once a signal came, at any phase; the
watchdog is not sampled as a program thread. Every wait here is bounded."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from dlpt.model.session import Session

from .helpers import MANY_SITES, STUCK_IN_C, Result, popen, signal_after, write

# Holds the GIL for minutes in one C call, after a few profiled steps: no Python handler runs,
# no other thread gets the GIL.
GIL_HOG = """\
import itertools, torch
x = torch.ones(16, 16)
for _ in range(5):
    x = (x @ x).clamp(-1, 1)  # @ops
print("stuck", flush=True)
print(sum(itertools.repeat(1, 10**11)))
"""

# An asyncio loop with a signal handler (for the signal named on the command line), closed,
# then a native wait that no signal interrupts (helpers.STUCK_IN_C).
ASYNCIO_THEN_STUCK = (
    """\
import asyncio, signal, sys, torch
x = torch.ones(16, 16)
for _ in range(5):
    x = (x @ x).clamp(-1, 1)  # @ops
async def main():
    asyncio.get_running_loop().add_signal_handler(getattr(signal, sys.argv[1]), lambda: None)
    await asyncio.sleep(0.01)
asyncio.run(main())
"""
    + STUCK_IN_C
)

# The preemption pattern, with the signal sent by the program itself just before it exits 0:
# its handler has run, and dlpt must not take it for one that arrived while it finishes. Nothing
# lets another thread run between the signal and the end (no output).
PREEMPTED = """\
import os, signal, sys, torch
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
x = torch.ones(8, 8) + 1
os.kill(os.getpid(), signal.SIGTERM)
while not stop:
    pass
sys.exit(0)
"""

CAUGHT_CTRL_C = """\
import os, signal, torch
signal.signal(signal.SIGINT, signal.default_int_handler)
x = torch.ones(8, 8) + 1
try:
    os.kill(os.getpid(), signal.SIGINT)
    while True:
        pass
except KeyboardInterrupt:
    pass
"""

# A Ctrl-C that arrives as the program ends: interrupt_main trips SIGINT from C and the program
# ends at once with an exception, so nothing of the program checks for it; dlpt's own code is
# the first to run with it pending.
CTRL_C_AT_THE_END = """\
import _thread, signal, torch
x = torch.ones(4) + 1  # @work
sorted([signal.SIGINT, "x"], key=_thread.interrupt_main)
"""

QUICK = "import torch\nx = torch.ones(4) + 1\nprint('done', flush=True)\n"

SLEEPY = """\
import time, torch
x = torch.ones(32, 32)
t0 = time.time()
while time.time() - t0 < 1.5:
    x = (x @ x).clamp(-1, 1)
"""


def _finish(p: subprocess.Popen[str]) -> Result:
    try:
        out, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    return Result(p.returncode, out, err)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("signal_owners")
    for name, text in {
        "hog.py": GIL_HOG,
        "aio.py": ASYNCIO_THEN_STUCK,
        "preempted.py": PREEMPTED,
        "caught.py": CAUGHT_CTRL_C,
        "edge.py": CTRL_C_AT_THE_END,
        "big.py": MANY_SITES,
        "quick.py": QUICK,
        "sleepy.py": SLEEPY,
    }.items():
        write(root / name, text)
    return root


def test_sigterm_ends_a_program_that_holds_the_gil_within_the_grace(root: Path) -> None:
    args = ["-m", "dlpt", "--signal-grace", "2", "-o", "hog.json", "hog.py"]
    r, took = signal_after(popen(args, root), "stuck", signal.SIGTERM, 0.2)
    assert r.rc == -signal.SIGTERM, (r.rc, r.err)
    assert took < 2 + 3, took  # the grace, and slack for a loaded machine
    skipped = "stopping the profile, the session (hog.json), the report"
    assert f"dlpt: SIGTERM: ending now, after 2 s; skipped: {skipped}" in r.err, r.err


@pytest.mark.parametrize("theirs", ["SIGINT", "SIGTERM"])
def test_sigterm_after_an_asyncio_loop_saves_and_dies(root: Path, theirs: str) -> None:
    name = f"aio-{theirs}.json"
    args = ["-m", "dlpt", "--signal-grace", "5", "-o", name, "aio.py", theirs]
    # asyncio gave SIGTERM back as SIG_DFL: dlpt takes it again within a quarter second.
    r, took = signal_after(popen(args, root), "stuck", signal.SIGTERM, 1.0)
    assert r.rc == -signal.SIGTERM, (r.rc, r.err)
    assert took < 5, (took, r.err)
    assert f"dlpt: saved profile to {name}" in r.err, r.err
    assert any(n["name"] == "aten::matmul" for n in Session.load(root / name).nodes)


@pytest.mark.parametrize("script", ["preempted.py", "caught.py"])
def test_a_signal_the_program_handled_is_not_a_death(root: Path, script: str) -> None:
    for i in range(3):
        r = _finish(popen(["-m", "dlpt", "--no-report", "-o", f"handled{i}.json", script], root))
        assert r.rc == 0, (i, r.rc, r.err)
        assert r.err.strip() == f"dlpt: saved profile to handled{i}.json", r.err


def test_a_ctrl_c_as_the_program_ends_keeps_the_profile(root: Path) -> None:
    r = _finish(popen(["-m", "dlpt", "--no-report", "-o", "edge.json", "edge.py"], root))
    assert r.rc == -signal.SIGINT, (r.rc, r.err)  # the Ctrl-C, noted: death by SIGINT after the save
    assert "dlpt: saved profile to edge.json" in r.err, r.err
    # The program's own ending: 3.11 raises the TypeError of the second interrupt_main call,
    # 3.12 the KeyboardInterrupt the first one scheduled. Never a traceback of dlpt's.
    assert "TypeError" in r.err or "KeyboardInterrupt" in r.err, r.err
    assert "dlpt/" not in r.err.replace("dlpt: saved", ""), r.err
    Session.load(root / "edge.json")


RANK0 = {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0"}


def test_rank_0_waits_for_no_rank_after_sigterm_during_the_save(root: Path) -> None:
    # SIGTERM just after the program's last line, while ~50k call sites are stopped and saved.
    args = ["-m", "dlpt", "-o", "ranked.json", "--rank-timeout", "60", "big.py", "50000"]
    r, took = signal_after(popen(args, root, RANK0), "done", signal.SIGTERM, 0.3)
    assert r.rc == -signal.SIGTERM, (r.rc, r.err)
    assert took < 20, (took, r.err)  # not the 60 s --rank-timeout
    assert "waiting up to" not in r.err, r.err


def test_a_signal_during_the_wait_for_ranks_ends_it_with_a_report(root: Path) -> None:
    args = ["-m", "dlpt", "-o", "waiting.json", "--rank-timeout", "60", "quick.py"]
    waiting = "waiting up to 60 s for rank 1"
    r, took = signal_after(popen(args, root, RANK0), waiting, signal.SIGTERM, 0.3, "err")
    assert r.rc == -signal.SIGTERM, (r.rc, r.err)
    assert took < 10, (took, r.err)
    assert "rank 1 missing" in r.out and "across ranks" in r.out, (r.out, r.err)
    assert "interrupted" not in r.err, r.err


def test_the_watchdog_is_not_sampled_as_a_program_thread(root: Path) -> None:
    r = _finish(popen(["-m", "dlpt", "--no-report", "-o", "sampled.json", "sleepy.py"], root))
    assert r.rc == 0, r.err
    nodes = Session.load(root / "sampled.json").nodes
    assert any(n.get("m", {}).get("host_ns") for n in nodes), "the program's thread was sampled"
    # The watchdog's thread would be a thread of its own under the root, waiting in dlpt's code.
    ours = [n for n in nodes if "/dlpt/cli/" in (n.get("file") or "") and n["parent"] == 0]
    assert not ours, ours
