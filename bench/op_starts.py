"""What an op start costs in instructions, exact against lean (issue 50): a report, not a test.

    valgrind --tool=callgrind --collect-atstart=no --toggle-collect=map_next \\
        python bench/op_starts.py MODE [--workload decode] [--iters N]
    python bench/op_starts.py --all [--workload decode] [--iters N]   # runs the four, prints a table

MODE: plain (no profiler), floor (torch's RecordFunction machinery with an empty callback),
exact (dlpt, every outermost op walks the Python stack), lean (dlpt, no walk at an op's start).
On a shared machine wall times of a few hundred ns an op are noise (bench/floor.py's A/A rows
spread by 2x here); instruction counts are exact. Only the workload's iterations are counted:
they run inside one `map()` (its C function `map_next` toggles the collection), after a warm-up
and with the profile already started, so set-up and stop are left out.

Per record = (Ir of the mode - Ir of floor) / the records the floor saw: dlpt's own instructions
on top of torch's machinery, per op record; per outermost op likewise. The workloads are
bench/floor.py's (`decode`: a tiny GPT's forward without autograd, the op mix of a decode loop).
No op launches on the CPU, so lean op starts never walk here: on the GPU an op that launches pays
its walk at the launch, as the exact mode pays it at the start (bench/launch_path.py has the walk).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, REPO)

MODES = ("plain", "floor", "exact", "lean")


def run(mode: str, workload: str, iters: int) -> dict:
    """Runs ``iters`` iterations of the workload in ``mode`` (under callgrind, only they count)."""
    import torch
    from floor import WORKLOADS

    import dlpt
    from dlpt.capture.native import core

    torch.set_num_threads(1)
    fn = WORKLOADS[workload]()
    for _ in range(3):
        fn()
    C = core()
    if mode == "floor":
        os.environ["DLPT_FLOOR"] = "op_callback"
        C.start(False, [], True)
        del os.environ["DLPT_FLOOR"]
        before = C.floor_records()
    elif mode in ("exact", "lean"):
        prof = dlpt.profile(gpu=False, exact_ops=mode == "exact", sample_hz=0, calibrate=False).start()
    list(map(lambda _: fn(), range(iters)))  # the counted part (map_next)
    out: dict = {}
    if mode == "floor":
        out["records"] = (C.floor_records() - before) / iters
        C.stop()
    elif mode in ("exact", "lean"):
        c = prof.stop().meta["capture"]
        out.update({k: c[k] / iters for k in ("op_records", "outermost_ops", "python_walks", "deferred_ops")})
    return out


def counted(mode: str, workload: str, iters: int) -> tuple[int, dict]:
    """Ir of one mode's counted part, and what the run printed of itself."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=map_next",
               f"--callgrind-out-file={out}", sys.executable, __file__, mode, "--workload", workload,
               "--iters", str(iters)]
        p = subprocess.run(cmd, capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONPATH": REPO})
        with open(out) as f:
            ir = int(re.search(r"^summary:\s*(\d+)", f.read(), re.M).group(1))
        info = eval(p.stdout.strip().splitlines()[-1])  # noqa: S307 - our own repr
        return ir, info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", nargs="?", choices=MODES)
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--workload", default="decode")
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args()
    if not args.all:
        print(run(args.mode, args.workload, args.iters))
        return
    ir, info = {}, {}
    for m in MODES:
        ir[m], info[m] = counted(m, args.workload, args.iters)
        print(f"# {m}: {ir[m] / args.iters:,.0f} Ir an iteration", file=sys.stderr, flush=True)
    recs = info["floor"]["records"]
    print(f"{args.workload}, {args.iters} iterations counted, {recs:.0f} records an iteration (floor's count)\n")
    print("| mode | Ir / iteration | over floor, per record | outermost ops | per outermost op | walks / outermost op |")
    print("|---|---|---|---|---|---|")
    for m in MODES:
        per_iter = ir[m] / args.iters
        over = (ir[m] - ir["floor"]) / args.iters
        outer = info[m].get("outermost_ops")
        walks = info[m].get("python_walks")
        print(f"| {m} | {per_iter:,.0f} | {over / recs:,.0f} | {'' if outer is None else f'{outer:.0f}'} | "
              f"{'' if not outer else f'{over / outer:,.0f}'} | {'' if not outer else f'{walks / outer:.2f}'} |")


if __name__ == "__main__":
    main()
