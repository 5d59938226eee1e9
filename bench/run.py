"""Run the overhead matrix (workloads x modes), one subprocess per cell, and tabulate it.

    python bench/run.py                               # GPU machine: full default matrix
    python bench/run.py --workloads cpu_example       # CPU machine
    python bench/run.py --workloads gpt2 --modes base dlpt --steps 30 --out /tmp/r

Each (workload, mode) runs in its own process (bench/overhead.py) so that profilers cannot
interfere with each other (CUPTI has one subscriber per process) and each RSS is its own. After
each workload's modes a second `base` run is made, as the anchor benchmark does: how far
it lands from the first is the noise floor that every ratio must be read against.

`--prime` first runs one unprofiled, untabulated cell per workload: torch.compile workloads
compile from scratch in the first process and hit Inductor's caches afterwards, which changes
how kernels are launched (and so the host time per step); priming makes every measured cell
see the same warm caches. A mode listed twice (`--modes base dlpt base dlpt`) is run twice and
its ratio uses the mean of its runs against the mean of all base runs.

Writes bench/results/<gpu-or-cpu>-<date>.json (all RESULT records, rewritten after every cell so
a killed run keeps what it measured) and a markdown table beside it, printed last.
"""
import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OVERHEAD = os.path.join(HERE, "overhead.py")

GPU_WORKLOADS = ["small_mlp", "resnet50", "gpt2", "cpu_example"]
GPU_MODES = ["base", "torchprof", "torchprof_stack", "proton_shadow", "proton_python",
             "dlpt", "dlpt_nogpu", "dlpt_long"]
CPU_WORKLOADS = ["cpu_example"]
CPU_MODES = ["base", "dlpt", "dlpt_nogpu", "dlpt_long"]
RATIO_MODES = ["torchprof", "torchprof_stack", "proton_shadow", "proton_python",
               "dlpt", "dlpt_nogpu", "dlpt_long"]


def probe_gpu(python: str) -> str:
    """GPU name, or "" without one. Asked in a child so this process never initialises CUDA."""
    code = ("import torch; print(torch.cuda.get_device_name(0) "
            "if torch.cuda.is_available() else '')")
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120)
        return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    except (subprocess.SubprocessError, OSError):
        return ""


def run_cell(python, wl, mode, steps, timeout) -> dict:
    """One overhead.py process. Whatever happens, return a record (errors are findings)."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run([python, OVERHEAD, wl, mode, str(steps)], capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else e.stderr
        return {"workload": wl, "mode": mode, "error": f"timeout after {timeout}s",
                "stderr_tail": (err or "")[-800:], "wall_s": time.perf_counter() - t0}
    rec = None
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            try:
                rec = json.loads(line[len("RESULT "):])
            except ValueError as e:
                rec = {"error": f"bad RESULT line: {e}"}
    if rec is None:  # crashed hard (segfault, abort) before it could print
        rec = {"error": f"no RESULT line, exit code {p.returncode}"}
    if p.returncode != 0:
        rec["returncode"] = p.returncode
    if p.returncode != 0 or "error" in rec:
        rec["stderr_tail"] = p.stderr[-800:]
    rec.update(workload=wl, mode=mode, wall_s=time.perf_counter() - t0)
    return rec


def fmt(v, spec):
    return "—" if v is None else format(v, spec)


def table(records, modes) -> str:
    """Markdown: base ms/step, each tool's ratio vs the first base, dlpt finalize/RSS/growth."""
    shown = [m for m in RATIO_MODES if m in modes]
    head = (["workload", "base ms/step", "base spread (noise)"] + shown
            + ["dlpt finalize s", "dlpt peak RSS MB (base)", "dlpt long-run RSS growth MB"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    by_wl = {}
    for r in records:
        by_wl.setdefault(r["workload"], []).append(r)
    for wl, rs in by_wl.items():
        bases = [r for r in rs if r["mode"] == "base" and r.get("step_s")]
        base = sum(r["step_s"] for r in bases) / len(bases) if bases else None
        cell = {}
        for r in rs:
            if r["mode"] in ("base", "prime"):
                continue
            if r["mode"] in cell and "error" not in r and "error" not in cell[r["mode"]]:
                # Repeated mode: keep one record whose step time is the mean of the runs.
                runs = cell[r["mode"]].get("runs", [cell[r["mode"]]["step_s"]]) + [r["step_s"]]
                r = dict(r, runs=runs, step_s=sum(runs) / len(runs))
            cell[r["mode"]] = r

        def ratio(r):
            if r is None:
                return "—"
            if "error" in r or not r.get("step_s"):
                return "error"
            return f"{r['step_s'] / base:.2f}x" if base else f"{r['step_s'] * 1e3:.2f} ms"

        # Noise floor: the spread of the unprofiled runs (slowest / fastest).
        spread = max(r["step_s"] for r in bases) / min(r["step_s"] for r in bases) if len(bases) > 1 else None
        row = [wl, fmt(base and base * 1e3, ".2f"), fmt(spread, ".2f") + ("x" if spread else "")]
        row += [ratio(cell.get(m)) for m in shown]
        # An errored dlpt run has no meaningful finalize/RSS: show "—", not the setup's numbers.
        ok = {m: r for m, r in cell.items() if "error" not in r}
        d, dl = ok.get("dlpt", {}), ok.get("dlpt_long", {})
        row.append(fmt(d.get("finalize_s"), ".3f"))
        rss = fmt(d.get("peak_rss_mb"), ".0f")
        if d and bases and bases[0].get("peak_rss_mb"):
            rss += f" ({bases[0]['peak_rss_mb']:.0f})"
        row.append(rss)
        row.append(fmt(dl.get("rss_growth_mb"), "+.1f"))
        lines.append("| " + " | ".join(row) + " |")
    errs = [r for r in records if "error" in r]
    if errs:
        lines += ["", "Errors (full records in the JSON):"]
        lines += [f"- {r['workload']}/{r['mode']}: {str(r['error'])[:160]}" for r in errs]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", nargs="+", help="default: GPU set, or cpu_example without GPU")
    ap.add_argument("--modes", nargs="+", help="default: all modes (GPU) or base/dlpt* (CPU); "
                    "a second base is always added at the end of each workload")
    ap.add_argument("--steps", type=int, default=30, help="timed steps per cell (x10 for *_long)")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--timeout", type=int, default=300, help="seconds per process")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--prime", action="store_true",
                    help="run one untabulated unprofiled cell per workload first (warm caches)")
    args = ap.parse_args(argv)

    gpu = probe_gpu(args.python)
    workloads = [w for ws in (args.workloads or (GPU_WORKLOADS if gpu else CPU_WORKLOADS))
                 for w in ws.split(",") if w]
    modes = [m for ms in (args.modes or (GPU_MODES if gpu else CPU_MODES))
             for m in ms.split(",") if m]
    if "base" not in modes:
        modes.insert(0, "base")  # every ratio needs its reference
    plan = (["prime"] if args.prime else []) + modes + ["base"]  # a second base: the noise floor

    os.makedirs(args.out, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y-%m-%d-%H%M%S")
    tag = re.sub(r"[^A-Za-z0-9]+", "-", gpu).strip("-") if gpu else "cpu"
    stem = os.path.join(args.out, f"{tag}-{stamp}")
    meta = {"gpu": gpu or None, "date": stamp, "steps": args.steps, "host": platform.node(),
            "python": platform.python_version(), "argv": sys.argv, "workloads": workloads,
            "modes": plan}
    records = []
    for wl in workloads:
        for mode in plan:
            rec = run_cell(args.python, wl, mode, args.steps, args.timeout)
            records.append(rec)
            state = ("ERROR " + str(rec["error"])[:100] if "error" in rec
                     else f"{rec.get('step_s', 0) * 1e3:.2f} ms/step")
            print(f"[bench] {wl:<14} {mode:<16} {state}  ({rec['wall_s']:.0f}s)",
                  file=sys.stderr, flush=True)
            with open(stem + ".json", "w") as f:
                json.dump({"meta": meta, "results": records}, f, indent=1, default=str)

    md = table(records, plan)
    title = (f"# dlpt overhead: {gpu or 'CPU only'}, {stamp}, {args.steps} steps per cell\n\n"
             "Ratios are per-step time while profiling / mean of the unprofiled runs, same call "
             "(a mode run several times: the mean of its runs). `base spread` is slowest / "
             "fastest unprofiled run: the noise floor.\n\n")
    with open(stem + ".md", "w") as f:
        f.write(title + md + "\n")
    print(f"[bench] wrote {stem}.json and {stem}.md", file=sys.stderr)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
