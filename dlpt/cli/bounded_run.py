"""Run a command under dlpt within bounds, as a child process: ``python -m dlpt -q --no-report
-o SESSION [options] PROGRAM...``, ended after ``steps`` counted steps (:mod:`dlpt.cli.step_bound`)
or ``time_limit`` seconds, whichever comes first. Used by ``dlpt verify`` and the MCP server's
``profile`` tool, whose caller must get an answer, not a hang.

Past the time limit the child gets SIGTERM: dlpt stops the profile and saves what it captured,
then the child dies of the signal (its grace is ``grace`` seconds, ``--signal-grace``); a child
still running after that is killed with its whole process group (data-loader workers too). The
program's own output is kept apart (its last lines are in the result): the caller's stdout may
be a protocol stream.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dlpt.cli.step_bound import STOP_LINE

__all__ = ["Bounded", "run_bounded", "OUTPUT_TAIL"]

#: How much of the program's output a result keeps (its end).
OUTPUT_TAIL = 4000


@dataclass(frozen=True)
class Bounded:
    """How a bounded run went: the child's exit status (negative: the signal it died of),
    whether the session was saved, what stopped it early ("steps", "time limit" or None: it
    ended by itself), how long it took and the end of its output."""

    status: int
    session: str
    saved: bool
    stopped: str | None
    seconds: float
    output: str


def _env() -> dict[str, str]:
    """The child imports this dlpt (a checkout's, not another one installed)."""
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
    return env


def _command(session: str, flags: Sequence[str], program: Sequence[str], steps: int | None) -> list[str]:
    head = (
        [sys.executable, "-m", "dlpt.cli.step_bound", str(steps)] if steps else [sys.executable, "-m", "dlpt"]
    )
    bound = ["--active", str(steps)] if steps and "--active" not in flags else []
    return [*head, "-q", "--no-report", "--force", "-o", session, *flags, *bound, *program]


def _stop(child: subprocess.Popen[bytes], grace: float) -> bytes:
    """SIGTERM (dlpt saves, then dies of it), then SIGKILL to the group after ``grace`` seconds."""
    with contextlib.suppress(ProcessLookupError):
        child.send_signal(signal.SIGTERM)
    try:
        out, _ = child.communicate(timeout=grace + 5)
        return out
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        out, _ = child.communicate()
        return out


def run_bounded(
    program: Sequence[str],
    session: str,
    flags: Sequence[str] = (),
    *,
    steps: int | None = None,
    time_limit: float | None = None,
    grace: float = 30.0,
    cwd: str | None = None,
) -> Bounded:
    """Run ``program`` (``script.py args``, ``-m module``, ``-c code``) under dlpt with ``flags``,
    saving to ``session``; see the module docstring. Raises OSError when it cannot start."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(session)  # a stale file must not pass for this run's
    cmd = _command(session, [*flags, "--signal-grace", f"{grace:g}"], program, steps)
    t0 = time.monotonic()
    child = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    stopped = None
    try:
        out, _ = child.communicate(timeout=time_limit)
    except subprocess.TimeoutExpired:
        stopped, out = "time limit", _stop(child, grace)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)  # what the program left behind
    text = out.decode("utf-8", "replace")
    if stopped is None and STOP_LINE in text:
        stopped = "steps"
    return Bounded(
        child.returncode,
        session,
        os.path.exists(session),
        stopped,
        time.monotonic() - t0,
        text[-OUTPUT_TAIL:],
    )
