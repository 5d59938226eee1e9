"""Running programs of known truth under dlpt for bench/verdicts.py: a busy host on demand
(processes that spin on every core they are given), each profile saved to a session file, the
host's load beside it."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
KNOWN = HERE / "known_answers"


@contextlib.contextmanager
def busy_host(spinners: int) -> Iterator[None]:
    """``spinners`` processes that each keep a core busy for as long as the block runs."""
    procs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdout=subprocess.DEVNULL)
        for _ in range(spinners)
    ]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def profile(args: list[str], session: Path, dlpt_args: list[str] | None = None, timeout: float = 600) -> dict:
    """Runs ``python -m dlpt -q --no-report -o SESSION [dlpt_args] ARGS`` from the checkout;
    returns what the run looked like (status, seconds, load average before it)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "dlpt", "-q", "--no-report", "--force", "-o", str(session), *(dlpt_args or []), *args],
        cwd=str(KNOWN), env=env, capture_output=True, text=True, timeout=timeout,
    )
    if r.returncode != 0:
        sys.stderr.write(f"verdicts: {' '.join(args)} exited {r.returncode}: {r.stderr[-2000:]}\n")
    return {"rc": r.returncode, "seconds": time.perf_counter() - t0, "load": load, "session": str(session)}
