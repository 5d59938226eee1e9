"""Helpers for the CLI tests: run ``python -m dlpt`` and plain ``python`` as subprocesses.

Every dlpt subprocess imports torch (~2 s), so tests start their subprocesses in batches that run
in parallel (:func:`run_many`) instead of one after another.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 180
#: Compiled Python files of the subprocesses, outside the checkout (see env()).
PYCACHE = Path(tempfile.gettempdir()) / f"dlpt-tests-pycache-{os.getuid()}"

# Program text: stuck for good in a C wait that signals do not interrupt (a mutex locked twice),
# after printing "stuck": the main thread never returns to the interpreter, as in a hung
# rendezvous.
STUCK_IN_C = """\
import ctypes
libc = ctypes.CDLL(None)
mutex = ctypes.create_string_buffer(64)  # zeroed: PTHREAD_MUTEX_INITIALIZER (glibc)
libc.pthread_mutex_lock(mutex)
print("stuck", flush=True)
libc.pthread_mutex_lock(mutex)
"""

# A program with as many distinct call sites as its first argument: stopping and saving its
# profile takes seconds (50,000: a 15 MB session); it prints "done" at its end.
MANY_SITES = """\
import sys, torch
x = torch.ones(2)
src = "\\n".join(f"y = x + {i}" for i in range(int(sys.argv[1])))
exec(compile(src, "generated.py", "exec"))
print("done", flush=True)
"""


@dataclass
class Result:
    rc: int
    out: str  # stdout, or stdout and stderr interleaved when merged
    err: str


@dataclass
class Job:
    args: Sequence[str]  # after `python` (plain) or after `python -m dlpt`
    cwd: Path
    dlpt: bool = True
    merged: bool = False  # stderr into stdout, to check what comes before what
    env: dict[str, str | None] | None = None  # changes to env(): a value, or None to unset it


def env() -> dict[str, str]:
    e = dict(os.environ)
    # An existing PYTHONPATH goes first so a development stub can override; the repo makes the
    # in-tree dlpt importable from any working directory when it is not installed.
    e["PYTHONPATH"] = os.pathsep.join(p for p in (e.get("PYTHONPATH"), str(REPO)) if p)
    # One intra-op thread: on a busy 2-core machine torch's pool makes every op wait for it.
    e.update(COLUMNS="120", NO_COLOR="1", OMP_NUM_THREADS="1")
    e.pop("PYTHONSAFEPATH", None)
    # Where PYTHONDONTWRITEBYTECODE is set (the shared 2-core machine sets it), each of a run's
    # ~400 subprocesses compiled dlpt again (0.2-0.3 s of CPU each): they keep the compiled
    # files, in a folder of their own outside the checkout.
    if e.pop("PYTHONDONTWRITEBYTECODE", None):
        e.setdefault("PYTHONPYCACHEPREFIX", str(PYCACHE))
    return e


def run(job: Job) -> Result:
    cmd = [sys.executable, *(["-m", "dlpt"] if job.dlpt else []), *job.args]
    e = env()
    for k, v in (job.env or {}).items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    p = subprocess.run(
        cmd,
        cwd=job.cwd,
        env=e,
        capture_output=not job.merged,
        stdout=subprocess.PIPE if job.merged else None,
        stderr=subprocess.STDOUT if job.merged else None,
        text=True,
        timeout=TIMEOUT_S,
    )
    return Result(p.returncode, p.stdout, p.stderr or "")


def run_many(jobs: dict[str, Job]) -> dict[str, Result]:
    workers = max(2, min(len(jobs), os.cpu_count() or 2))
    with ThreadPoolExecutor(workers) as pool:
        futures = {k: pool.submit(run, j) for k, j in jobs.items()}
        return {k: f.result() for k, f in futures.items()}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def default_signals() -> None:
    """In a child before it execs: SIGHUP's default action back. A suite run under ``nohup``
    ignores SIGHUP, and an ignored signal stays ignored across exec, by plain python and dlpt
    alike; the signal tests send SIGHUP to a program started as from a terminal."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def popen(args: Sequence[str], cwd: Path, extra: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``python *args`` started in ``cwd`` (env() with ``extra``), stdout and stderr piped, with
    SIGHUP's default action (:func:`default_signals`)."""
    e = env()
    e.update(extra or {})
    return subprocess.Popen(
        [sys.executable, *args],
        cwd=cwd,
        env=e,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_signals,
    )


def finish(p: subprocess.Popen[str]) -> Result:
    """Wait (at most 180 s) for a :func:`popen` process; how it ended."""
    out, err = p.communicate(timeout=180)
    return Result(p.returncode, out, err)


def signal_after(
    p: subprocess.Popen[str], line: str, signum: int, delay: float = 0.0, stream: str = "out"
) -> tuple[Result, float]:
    """Send ``signum`` ``delay`` seconds after ``line`` appeared on stdout (``stream`` "err":
    stderr); how the process ended and how long after the signal (inf: killed after 90 s).
    What was read of ``stream`` before the signal leads that stream in the result."""
    pipe = p.stdout if stream == "out" else p.stderr
    assert pipe is not None
    seen = []
    while line not in (text := pipe.readline()):
        seen.append(text)
        assert text or p.poll() is None, "".join(seen)
    time.sleep(delay)
    t = time.monotonic()
    p.send_signal(signum)
    try:
        out, err = p.communicate(timeout=90)
        took = time.monotonic() - t
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        took = float("inf")
    before = "".join(seen)
    if stream == "out":
        return Result(p.returncode, before + out, err), took
    return Result(p.returncode, out, before + err), took
