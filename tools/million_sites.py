"""A program with a million distinct call sites, and what dlpt costs on it end to end.

usage:
  python tools/million_sites.py gen SCRIPT [--outer N] [--inner M]
  python tools/million_sites.py measure DIR [--outer N] [--inner M] [--skip STAGE,...]

``gen`` writes a script with N x M distinct call sites (default 1000 x 1000 = one million),
each taken once. ``--shape lines`` (default): ``main`` calls N functions, each calling
``torch.add`` on M lines of its own (a file of about N x M lines: python itself then spends
seconds and hundreds of MB compiling it). ``--shape paths``: ``main`` calls one function from N
lines, which calls ``torch.add`` on M lines (N x M distinct call paths in N + M lines). Either
way the session holds a frame node per (caller line, callee line) and an op node below each:
about 2 million nodes.

``measure`` generates it in DIR and runs, each in a fresh process, timing the wall clock and
reading the CPU time and the peak RSS (``/usr/bin/time``): plain ``python``; ``python -m dlpt
-o run.json`` (the default report printed); ``--load run.json``; ``--load run.json --view all
--threshold 0``; ``dlpt diff run.json copy.json``; ``--load run.json --html run.html``; then the
HTML report's size and how long the OS's Chromium (``$DLPT_CHROMIUM``, default
/usr/bin/chromium, driven by Playwright) takes to show it. Stages time out after ``--timeout``
seconds (600 by default; reported as such). Run it on a quiet machine: on a
shared one, time follows the load average (printed with the results).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT_S = 600


def script(outer: int, inner: int, shape: str = "lines") -> str:
    """The program. ``lines``: ``main`` calls ``outer`` functions, each calling torch.add on
    ``inner`` lines of its own (outer x inner distinct lines). ``paths``: ``main`` calls one
    function ``work`` from ``outer`` lines, ``work`` calls torch.add on ``inner`` lines (outer x
    inner distinct call paths through outer + inner lines)."""
    lines = ["import torch", "", ""]
    functions = outer if shape == "lines" else 1
    for f in range(functions):
        lines += [f"def work{f}(x):"] + ["    torch.add(x, 1)"] * inner + [""]
    lines += ["", "def main():", "    x = torch.ones(1)"]
    lines += [f"    work{f if shape == 'lines' else 0}(x)" for f in range(outer)]
    lines += ["", "", "main()", ""]
    return "\n".join(lines)


def _timed(cmd: list[str], cwd: str) -> tuple[str, str, str, str]:
    """(wall seconds, CPU seconds (user + system), peak RSS in MB, note) of ``cmd``. CPU time is
    the number to compare on a shared machine: wall time there follows the load."""
    env = dict(os.environ, PYTHONPATH=REPO, COLUMNS="120", OMP_NUM_THREADS="1")
    t = time.perf_counter()
    p = subprocess.Popen(
        ["/usr/bin/time", "-f", "%U %S %M", *cmd],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a timeout ends the measured process too, not only `time`
    )
    try:
        _, err = p.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return f">{TIMEOUT_S}", "?", "?", "timed out"
    secs = time.perf_counter() - t
    tail = err.strip().splitlines()
    fields = tail[-1].split() if tail else []
    if len(fields) == 3:
        cpu, rss = f"{float(fields[0]) + float(fields[1]):.1f}", f"{int(fields[2]) / 1024:.0f}"
    else:
        cpu = rss = "?"
    note = "" if p.returncode == 0 else f"status {p.returncode}: {' | '.join(tail[-4:-1])}"
    return f"{secs:.1f}", cpu, rss, note


BROWSER = """
import sys, time
from playwright.sync_api import sync_playwright
path, chromium = sys.argv[1], sys.argv[2]
args = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
with sync_playwright() as p:
    b = p.chromium.launch(executable_path=chromium, headless=True, args=args)
    page = b.new_page(viewport={"width": 1440, "height": 1000})
    page.set_default_timeout(300_000)
    t = time.perf_counter()
    page.goto("file://" + path, wait_until="commit")
    page.wait_for_selector(".pane[data-pane=topdown] tbody tr")
    print(f"{time.perf_counter() - t:.1f}")
    b.close()
"""


def _browser_s(path: str) -> str:
    chromium = os.environ.get("DLPT_CHROMIUM", "/usr/bin/chromium")
    if not shutil.which(chromium):
        return "no chromium"
    try:
        p = subprocess.run(
            [sys.executable, "-c", BROWSER, os.path.abspath(path), chromium],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return f">{TIMEOUT_S}"
    return p.stdout.strip() or f"failed: {p.stderr.strip().splitlines()[-1:]}"


def measure(d: str, outer: int, inner: int, shape: str, skip: set[str]) -> None:
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "sites.py"), "w") as f:
        f.write(script(outer, inner, shape))
    py = sys.executable
    print(
        f"{outer} x {inner} = {outer * inner:,} call sites ({shape}); dlpt from {REPO}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(f"{'stage':<28} {'wall s':>8} {'CPU s':>8} {'peak MB':>8}  note")
    stages = [
        ("plain python", [py, "sites.py"]),
        ("dlpt run (-o)", [py, "-m", "dlpt", "-o", "run.json", "sites.py"]),
        ("--load", [py, "-m", "dlpt", "--load", "run.json"]),
        (
            "--load --view all -t 0",
            [py, "-m", "dlpt", "--load", "run.json", "--view", "all", "--threshold", "0"],
        ),
        ("diff", [py, "-m", "dlpt", "diff", "run.json", "copy.json"]),
        (
            "html (--load --html)",
            [py, "-m", "dlpt", "--load", "run.json", "--html", "run.html", "--no-report"],
        ),
    ]
    for name, cmd in stages:
        if name.split()[0].strip("-") in skip or (name.startswith("--load --view") and "all" in skip):
            continue
        if name == "diff" and os.path.exists(os.path.join(d, "run.json")):
            shutil.copyfile(os.path.join(d, "run.json"), os.path.join(d, "copy.json"))
        secs, cpu, rss, note = _timed(cmd, d)
        print(f"{name:<28} {secs:>8} {cpu:>8} {rss:>8}  {note}", flush=True)
    for name in ("run.json", "run.html"):
        p = os.path.join(d, name)
        if os.path.exists(p):
            print(f"{name:<28} {os.path.getsize(p) / 1e6:>7.1f} MB")
    if "browser" not in skip and os.path.exists(os.path.join(d, "run.html")):
        print(f"{'Chromium shows run.html':<28} {_browser_s(os.path.join(d, 'run.html')):>8} s", flush=True)


def main() -> None:
    global REPO, TIMEOUT_S
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=("gen", "measure"))
    ap.add_argument("path", help="the script to write (gen) or the directory to work in (measure)")
    ap.add_argument("--outer", type=int, default=1000, help="lines in main that call work (N)")
    ap.add_argument("--inner", type=int, default=1000, help="torch.add lines in work (M)")
    ap.add_argument("--shape", choices=("lines", "paths"), default="lines", help="see above")
    ap.add_argument("--skip", default="", help="stages to leave out: plain,dlpt,load,all,diff,html,browser")
    ap.add_argument("--repo", help="the dlpt checkout to measure (default: this one)")
    ap.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds per stage (default 600)")
    a = ap.parse_args()
    REPO = os.path.abspath(a.repo) if a.repo else REPO
    TIMEOUT_S = a.timeout
    if a.action == "gen":
        with open(a.path, "w") as f:
            f.write(script(a.outer, a.inner, a.shape))
    else:
        measure(a.path, a.outer, a.inner, a.shape, set(filter(None, a.skip.split(","))))


if __name__ == "__main__":
    main()
