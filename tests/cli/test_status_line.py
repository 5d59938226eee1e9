"""The live status line: drawn on stderr only when it is a terminal (here a real pseudo-terminal),
with the phase and the steps, cleared before the report and before dlpt's own lines, kept off the
rows of a program that prints, and never drawn with ``--quiet`` or when stderr is a pipe."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from dlpt.capture.status import ProfileStatus
from dlpt.frontend.status_line import format_status
from dlpt.model.session import Session

from .helpers import TIMEOUT_S, Job, env, run_many, write

STEPS = """\
import time, torch
m = torch.nn.Linear(8, 8)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for i in range(8):
    m(torch.ones(2, 8)).sum().backward()
    opt.step()
    time.sleep(0.3)
"""
# Silent long enough for the status line to show, then a line every 0.2 s: never drawn over.
CHATTY = """\
import time, torch
x = torch.ones(8, 8)
time.sleep(1.5)
for i in range(10):
    x = x @ x
    print(f"tick {i}", flush=True)
    time.sleep(0.2)
"""
FAILS = """\
import time, torch
print("hello", flush=True)
time.sleep(1.5)
x = torch.ones(2) @ torch.ones(2)
1 / 0
"""
STATUS = re.compile(r"dlpt \d+(?:\.\d)?s · ([\w-]+) · ")


def run_on_terminal(args: list[str], cwd: Path) -> tuple[int, str]:
    """``python -m dlpt ARGS`` with stdin, stdout and stderr on one pseudo-terminal 100 columns
    wide, as in an interactive shell; returns the exit status and everything it showed."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    e = env()
    for k in ("COLUMNS", "NO_COLOR", "FORCE_COLOR"):
        e.pop(k, None)
    p = subprocess.Popen(
        [sys.executable, "-m", "dlpt", *args], cwd=cwd, env=e, stdin=slave, stdout=slave, stderr=slave
    )
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        elif p.poll() is not None:
            break
    os.close(master)
    return p.wait(timeout=30), out.decode("utf-8", "replace")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("status_line")
    write(root / "steps.py", STEPS)
    write(root / "chatty.py", CHATTY)
    write(root / "fails.py", FAILS)
    # Terminal runs one after the other (each reads its own terminal); the pipe run beside them.
    piped = run_many({"pipe": Job(["--skip-first", "2", "steps.py"], root, env={"NO_COLOR": None})})
    return {
        "steps": run_on_terminal(["--skip-first", "2", "-o", "run.json", "steps.py"], root),
        "chatty": run_on_terminal(["chatty.py"], root),
        "quiet": run_on_terminal(["--quiet", "-o", "q.json", "fails.py"], root),
        "pipe": piped["pipe"],
        "root": root,
    }


def test_status_line_shows_phase_and_steps_then_clears(runs: dict) -> None:
    rc, out = runs["steps"]
    assert rc == 0, out[-2000:]
    phases = STATUS.findall(out)
    assert "warm-up" in phases and "tracing" in phases, out[:2000]
    assert re.search(r"tracing · \d+ steps seen, [1-9]\d* profiled", out)
    # Every draw is one in-place rewrite of the row: carriage return, erase, dim text.
    assert out.count("\r\x1b[K\x1b[2mdlpt ") == len(phases)
    # Cleared before dlpt's own line and before the report: they start at the row's beginning.
    saved = out.index("dlpt: saved profile to run.json")
    assert out[:saved].endswith("\r\x1b[K"), repr(out[saved - 80 : saved])
    report = out.index("╭")
    assert out.rfind("\x1b[2mdlpt ", 0, report) < out.rfind("\r\x1b[K", 0, report)
    assert "\x1b[2mdlpt " not in out[report:]  # nothing drawn once the report began
    # The line's thread is dlpt's own: never sampled as the program's.
    nodes = Session.load(runs["root"] / "run.json").nodes
    assert any(n["m"].get("host_ns") for n in nodes), "the program was sampled"
    assert not [n for n in nodes if str(n.get("file")).endswith("status_line.py")]


def test_a_printing_program_is_never_drawn_over(runs: dict) -> None:
    rc, out = runs["chatty"]
    assert rc == 0, out[-2000:]
    first, last = out.index("tick 0"), out.index("tick 9")
    assert STATUS.search(out[:first]), "the status line shows while the program is silent"
    # The program's first line starts a row of its own: the status line was erased first.
    assert out[:first].endswith(("\r\x1b[K", "\n")), repr(out[first - 80 : first])
    assert not STATUS.search(out[first:last]), repr(out[first:last])
    assert [f"tick {i}" for i in range(10)] == re.findall(r"tick \d", out)


def test_quiet_draws_nothing_and_says_nothing_but_errors(runs: dict) -> None:
    rc, out = runs["quiet"]
    assert rc == 1  # the program's status
    assert "hello" in out and "ZeroDivisionError: division by zero" in out and "╭" in out
    assert "\x1b[K" not in out and not STATUS.search(out)
    assert "saved profile" not in out


def test_no_status_line_when_stderr_is_not_a_terminal(runs: dict) -> None:
    r = runs["pipe"]
    assert r.rc == 0, r.err
    assert "\x1b" not in r.err and "\r" not in r.err and not STATUS.search(r.err)


def test_unknown_phases_are_shown_as_they_are() -> None:
    assert format_status(ProfileStatus(3.25, 0, 0, "calibrating")) == "dlpt 3.2s · calibrating · no step yet"
    assert (
        format_status(ProfileStatus(125.0, 1, 1, "tracing"), ascii=True)
        == "dlpt 2m05s - tracing - 1 step seen, 1 profiled"
    )
