"""How long rendering takes, and how much memory, for a session of a million nodes.

usage: python tools/render_scale.py [NODES] [--depth-chain N]

Generates the session of tests/big_sessions.py (NODES nodes, default 1,000,000: user lines over
many files, library frames between them, forward and backward kernels, a long tail of tiny
costs), writes it, then measures in fresh subprocesses: loading it (Session.load), rendering the
default view of the loaded session (report.render + printing), the whole ``python -m dlpt
--load FILE``, its HTML report (``--html``) and ``dlpt diff FILE FILE`` (what
dlpt.model.render_limit's bound per node comes from). Memory is the peak resident set size of
each subprocess. Run it on a quiet machine: on a shared one, time follows the load average
(printed with the results).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from tests.big_sessions import deep_session, wide_session  # noqa: E402

# Peak RSS from /proc (VmHWM): getrusage's ru_maxrss survives exec on Linux, so a child would
# report the generating parent's peak.
MEASURE = """
import io, sys, time
from rich.console import Console
from dlpt.renderers.terminal.report import render
from dlpt.model.session import Session
def peak_mb():
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM")) / 1024
t0 = time.perf_counter()
s = Session.load(sys.argv[1])
t1 = time.perf_counter()
rss_loaded = peak_mb()
out = io.StringIO()
Console(file=out, width=120, color_system=None).print(render(s))
t2 = time.perf_counter()
rss = peak_mb()
print(f"{t1 - t0:.2f} {t2 - t1:.2f} {rss_loaded:.0f} {rss:.0f} {len(out.getvalue().splitlines())}")
"""


def _measure(path: str) -> str:
    env = dict(os.environ, PYTHONPATH=REPO, COLUMNS="120")
    r = subprocess.run(
        [sys.executable, "-c", MEASURE, path], env=env, capture_output=True, text=True, check=True
    )
    load_s, render_s, rss_loaded, rss, lines = r.stdout.split()
    t = time.perf_counter()
    cli = subprocess.run(
        ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "dlpt", "--load", path],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    cli_s = time.perf_counter() - t
    cli_mb = int(cli.stderr.strip().splitlines()[-1]) / 1024
    more = []
    for what, args in (
        ("--html", ["--load", path, "--no-report", "--html", path + ".html"]),
        ("diff", ["diff", path, path]),
    ):
        t = time.perf_counter()
        run = subprocess.run(
            ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "dlpt", *args],
            env=env,
            capture_output=True,
            text=True,
        )
        mb = int(run.stderr.strip().splitlines()[-1]) / 1024
        took = time.perf_counter() - t
        more.append(f"{what}: {took:.2f} s, peak RSS {mb:.0f} MB (status {run.returncode})")
    return (
        f"load {load_s} s (peak RSS {rss_loaded} MB); render default view {render_s} s "
        f"(peak RSS {rss} MB, {lines} lines); "
        f"python -m dlpt --load: {cli_s:.2f} s, peak RSS {cli_mb:.0f} MB; " + "; ".join(more)
    )


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 1_000_000
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        for name, session in (("wide", wide_session(n)), ("deep 100,000", deep_session(100_000))):
            path = os.path.join(tmp, "s.json")
            with open(path, "w") as f:
                json.dump(session, f, separators=(",", ":"))
            size = os.path.getsize(path) / 1e6
            print(f"{name}: {len(session['nodes']):,} nodes, {size:.0f} MB: {_measure(path)}")


if __name__ == "__main__":
    main()
