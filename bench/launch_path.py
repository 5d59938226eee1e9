"""What dlpt's own code costs per GPU launch, on the CPU: a report, not a timed test.

    python bench/launch_path.py [--rounds 15] [--depths 5 25 50 100] [--out DIR]

Drives the very CUPTI driver-API callback dlpt installs (cupti/tracer.cpp `on_api`, enter and
exit of a cuLaunchKernel, with synthetic callback records instead of CUPTI's) through the
`dlpt._C._testing.launch_path_ns` seam, from a real Python stack of the given depth, inside a
CPU-only dlpt session (no GPU needed: the API callback path is the same code). No op is open, so
every launch takes its context from the Python stack, as a bare launch, or an outermost op, does.

Rows, per depth (median over rounds, each round alternating the modes):

  same_site      N launches in one native loop: the Python stack does not change between them
                 (a kernel-per-op loop's launches inside one op see this)
  two_sites      one launch per Python call, alternating between two lines of the innermost
                 frame (the stack changes every launch, as between HF decode's ops); the cost of
                 the Python call itself is measured without a session and subtracted, paired
  same_site_nopy same_site with Python-frame capture off (what the frame path costs is the
                 difference)
  aa             same_site measured twice in a round: the ratio of the two is the noise

`--distinct` builds each depth from distinct functions (a real program's stack) instead of one
recursive function: frame anchors (csrc/context/frame_anchors.h) only take a frame whose code
appears once on the stack, so the recursive stack never has one. On CPython 3.12+ a profile
lends them sys.monitoring; `--anchors-seam` counts starts with the test seam's C profile function
instead (any version; it runs on every Python call, so only the same_site rows are clean).

`--callgrind same_site|two_sites [--n N] [--nopy|--nosession]`: one counted run of N launches,
for instruction counts: `valgrind --tool=callgrind --toggle-collect=map_next python
bench/launch_path.py --callgrind ...` counts only inside the map() that runs it (the release
build is stripped; libpython's symbols are not). Per launch = Ir / N; for two_sites subtract the
`--nosession` run (the Python loop and the seam's call without a session).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

import dlpt  # noqa: E402
from dlpt.capture.native import core  # noqa: E402

C = core()
T = C._testing
N_SAME = 20_000  # launches per native loop
N_SITES = 4_000  # Python calls per two_sites chunk
DISTINCT = False  # --distinct
ANCHORS_SEAM = False  # --anchors-seam


def at_depth(depth: int, fn):
    """fn() called `depth` Python frames below this one (the harness adds ~3): through one
    recursive function, or (--distinct) through as many distinct ones."""
    if DISTINCT:
        k = max(1, depth - 3)
        src = "def f0():\n    return fn()\n" + "".join(
            f"def f{i}():\n    return f{i - 1}()\n" for i in range(1, k)
        )
        ns = {"fn": fn}
        exec(compile(src, f"<stack of {k} functions>", "exec"), ns)
        return ns[f"f{k - 1}"]

    def call(d: int):
        if d <= 0:
            return fn()
        return call(d - 1)

    return lambda: call(max(0, depth - 3))


def same_site(n: int = N_SAME) -> float:
    return T.launch_path_ns(n)


def two_sites(n: int = N_SITES) -> float:
    t0 = time.perf_counter_ns()
    for _ in range(n // 2):
        T.launch_path_ns(1)  # one line
        T.launch_path_ns(1)  # another line: the innermost frame's position changes
    return (time.perf_counter_ns() - t0) / n


class NoPy:
    def __enter__(self):
        C.start(False, [], True, python_frames=False)

    def __exit__(self, *exc):
        C.stop()


@contextlib.contextmanager
def session(nopy: bool = False):
    if nopy:
        with NoPy():
            yield
        return
    with dlpt.profile(gpu=False, sample_hz=0):
        if ANCHORS_SEAM:
            C.anchors_enable(4, None, None, 1)
            T.count_starts_by_profile(True)
        try:
            yield
        finally:
            if ANCHORS_SEAM:
                T.count_starts_by_profile(False)
                C.anchors_disable()


def measure(depth: int, rounds: int) -> dict:
    same, same2, nopy, sites = [], [], [], []
    run_same = at_depth(depth, same_site)
    run_sites = at_depth(depth, two_sites)
    for _ in range(rounds):
        with session():
            run_same()  # warm: the path's nodes exist
            same.append(run_same())
            sites_prof = run_sites()
            same2.append(run_same())
        sites_plain = run_sites()  # no session: the seam returns at once; the Python call's cost
        sites.append(sites_prof - sites_plain)
        with session(nopy=True):
            run_same()
            nopy.append(run_same())
    aa = [b / a for a, b in zip(same, same2, strict=True)]
    return {
        "depth": depth,
        "same_site_ns": statistics.median(same),
        "same_site_min_max": [min(same), max(same)],
        "two_sites_ns": statistics.median(sites),
        "two_sites_min_max": [min(sites), max(sites)],
        "same_site_nopy_ns": statistics.median(nopy),
        "aa_ratio": statistics.median(aa),
        "aa_min_max": [min(aa), max(aa)],
    }


def table(results: list[dict]) -> str:
    lines = [
        "| Python depth | same site ns/launch (min-max) | two sites ns/launch (min-max)"
        " | no frames ns/launch | A/A (min-max) |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        same, sites, aa = r["same_site_min_max"], r["two_sites_min_max"], r["aa_min_max"]
        lines.append(
            f"| {r['depth']} | {r['same_site_ns']:.0f} ({same[0]:.0f}-{same[1]:.0f})"
            f" | {r['two_sites_ns']:.0f} ({sites[0]:.0f}-{sites[1]:.0f})"
            f" | {r['same_site_nopy_ns']:.0f} | {r['aa_ratio']:.3f}x ({aa[0]:.2f}-{aa[1]:.2f}) |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--depths", type=int, nargs="+", default=[5, 25, 50, 100])
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--tag", default="", help="added to the result file names")
    ap.add_argument("--callgrind", choices=["same_site", "two_sites"], help="one run (under callgrind)")
    ap.add_argument("--n", type=int, default=None, help="launches in the --callgrind run")
    ap.add_argument("--nopy", action="store_true", help="--callgrind run without Python-frame capture")
    ap.add_argument("--nosession", action="store_true", help="--callgrind run without a session")
    ap.add_argument("--distinct", action="store_true", help="stacks of distinct functions (see above)")
    ap.add_argument("--anchors-seam", action="store_true", help="frame anchors by the test seam (see above)")
    args = ap.parse_args()
    global DISTINCT, ANCHORS_SEAM
    DISTINCT, ANCHORS_SEAM = args.distinct, args.anchors_seam
    if args.callgrind:
        fn = same_site if args.callgrind == "same_site" else two_sites
        launches = args.n if args.n is not None else (N_SAME if fn is same_site else N_SITES)
        for d in args.depths:
            ctx = contextlib.nullcontext() if args.nosession else session(nopy=args.nopy)
            with ctx:
                at_depth(d, lambda: fn(2))()  # the path's nodes exist before the counted part
                # Counted: only what runs inside map_next (the harness is outside it).
                list(map(lambda _: at_depth(d, lambda: fn(launches))(), [0]))
            print(f"depth {d}: {launches} launches ({args.callgrind})")
        return
    results = [measure(d, args.rounds) for d in args.depths]
    meta = {
        "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "loadavg": os.getloadavg(),
        "python": platform.python_version(),
        "rounds": args.rounds,
        "launches_per_same_site_loop": N_SAME,
        "calls_per_two_sites_chunk": N_SITES,
        "distinct": DISTINCT,
        "anchors_seam": ANCHORS_SEAM,
    }
    text = table(results)
    os.makedirs(args.out, exist_ok=True)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d-%H%M%S")
    base = os.path.join(args.out, f"launch-path{('-' + args.tag) if args.tag else ''}-{stamp}")
    with open(base + ".json", "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    with open(base + ".md", "w") as f:
        where = f"{meta['machine']}, {meta['cpus']} CPUs, load {meta['loadavg']}"
        f.write(f"# Per-launch path, CPU ({where})\n\n")
        f.write("`python bench/launch_path.py " + " ".join(sys.argv[1:]) + "`\n\n" + text + "\n")
    print(text)
    print(f"wrote {base}.md / .json")


if __name__ == "__main__":
    main()
