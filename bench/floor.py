"""Where profiling time goes, per record, on the CPU: a report, not a timed test.

    python bench/floor.py [--rounds 15] [--out DIR]

Runs small CPU workloads (one intra-op thread) in alternating chunks, one chunk per mode per
round, in one process, and reports the median over rounds of each mode's time per iteration and
what it adds per RecordFunction record:

  plain         no profiler
  aa            no profiler again: its row is the noise (how quiet the CPU was); a figure for
                another mode that is not well above it says nothing
  rf_floor      torch's own machinery: a global RecordFunction callback with dlpt's settings
                (FUNCTION, BACKWARD_FUNCTION, USER_SCOPE; no inputs) that only counts records
  dlpt_nopy     dlpt without Python-frame capture (ops, forward/backward, scopes), no CUPTI
  dlpt          dlpt, CPU side (what runs on every op with or without a GPU), no CUPTI; exact op
                starts (the CPU default: every outermost op walks the Python stack)
  dlpt_lean     the same with lean op starts (exact_ops=False, the GPU default: no walk at an op's
                start; on the CPU nothing launches, so no op walks, none gets a node; issue 50)
  dlpt_nested   dlpt with nested_ops=True (every nested op recorded), no CUPTI

Workloads:
  gpt           examples/gpu_gpt.py's GPT at a tiny size: forward, backward, AdamW
  decode        the same GPT's forward without autograd, one token longer each call (8 calls):
                the op mix of a decode loop (views, reshapes, small ops in nested modules)
  fwd_d5/d50    a chain of 64 tiny forward ops (no autograd) called at Python depth 5 / 50
  bwd           16 tiny ops with autograd, then backward (backward records dominate)
  sites_1/100   the 64 forward ops from 1 call site / spread over 100 distinct call sites

"records" is what the rf_floor callback counted per iteration (start callbacks: every op,
nested and backward ones included). "ns/record over plain" = (mode - plain) / records;
"over floor" = (mode - rf_floor) / records: dlpt's own cost on top of torch's machinery.

The dlpt modes' rows also give what dlpt's own self-timer measured (meta.capture, median over
rounds; steadier than the wall time on a shared machine, since it times dlpt's code only): its
time per record, its op starts' time per outermost op, and the walks of the Python stack per
outermost op (1 in the exact mode, 0 in the lean mode on the CPU, where nothing launches).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "examples"))

import torch  # noqa: E402

import dlpt  # noqa: E402

MODES = ("plain", "aa", "rf_floor", "dlpt_nopy", "dlpt", "dlpt_lean", "dlpt_nested")


def native():
    from dlpt.capture.native import core

    return core()


class Floor:
    """The empty-callback floor: dlpt's native core in floor mode (no capture at all)."""

    def __enter__(self):
        os.environ["DLPT_FLOOR"] = "op_callback"  # a benchmark switch (csrc/options.h), read at start
        try:
            native().start(False, [], True)
        finally:
            del os.environ["DLPT_FLOOR"]
        return self

    def __exit__(self, *exc):
        native().stop()


def profiler(mode: str):
    if mode == "rf_floor":
        return Floor()
    if mode == "dlpt_nopy":

        class NoPy:
            def __enter__(self):
                native().start(False, [], True, python_frames=False)

            def __exit__(self, *exc):
                native().stop()

        return NoPy()
    return dlpt.profile(gpu=False, nested_ops=(mode == "dlpt_nested"), exact_ops=mode != "dlpt_lean")


# -- workloads ------------------------------------------------------------------------------


def at_depth(depth: int, fn: Callable[[], None]) -> Callable[[], None]:
    def call(d: int) -> None:
        if d <= 0:
            fn()
        else:
            call(d - 1)

    return lambda: call(depth - 3)  # the harness and lambdas account for ~3 frames


def fwd_chain() -> Callable[[], None]:
    x = torch.ones(4)

    def run() -> None:
        y = x
        for _ in range(64):
            y = torch.add(y, 1.0)

    return run


def spread_sites(n_sites: int) -> Callable[[], None]:
    """64 ops per iteration, from `n_sites` distinct call sites (one generated function each)."""
    x = torch.ones(4)
    fns = []
    for i in range(n_sites):
        ns: dict = {"torch": torch}
        exec(f"def site_{i}(y):\n    return torch.add(y, 1.0)\n", ns)  # a distinct code object
        fns.append(ns[f"site_{i}"])
    order = [fns[i % n_sites] for i in range(64)]

    def run() -> None:
        y = x
        for f in order:
            y = f(y)

    return run


def backward_chain() -> Callable[[], None]:
    w = torch.ones(4, requires_grad=True)

    def run() -> None:
        y = w
        for _ in range(16):
            y = torch.mul(y, 1.01)
        y.sum().backward()

    return run


def decode_calls() -> Callable[[], None]:
    import gpu_gpt

    torch.manual_seed(0)
    model = gpu_gpt.GPT(vocab=512, seq=32, layers=2, width=64, heads=1).eval()
    ids = torch.randint(0, 512, (1, 10))

    def run() -> None:
        with torch.no_grad():
            for t in range(1, 9):
                model(ids[:, :t], ids[:, 1 : t + 1])

    return run


def gpt_step() -> Callable[[], None]:
    import gpu_gpt

    step, _ = gpu_gpt.make_step(device="cpu")
    return step


WORKLOADS: dict[str, Callable[[], Callable[[], None]]] = {
    "gpt": gpt_step,
    "decode": decode_calls,
    "fwd_d5": lambda: at_depth(5, fwd_chain()),
    "fwd_d50": lambda: at_depth(50, fwd_chain()),
    "bwd": backward_chain,
    "sites_1": lambda: spread_sites(1),
    "sites_100": lambda: spread_sites(100),
}


# -- measurement -----------------------------------------------------------------------------


def chunk(fn: Callable[[], None], n: int) -> float:
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n


def records_per_iter(fn: Callable[[], None], n: int = 20) -> float:
    C = native()
    with Floor():
        before = C.floor_records()
        for _ in range(n):
            fn()
        return (C.floor_records() - before) / n


def measure(name: str, rounds: int, target_s: float) -> dict:
    fn = WORKLOADS[name]()
    for _ in range(3):
        fn()
    # Size chunks to ~target_s of plain time each.
    per = chunk(fn, 5)
    n = max(5, int(target_s / max(per, 1e-6)))
    times: dict[str, list[float]] = {m: [] for m in MODES}
    own: dict[str, list[dict]] = {m: [] for m in MODES}  # the dlpt modes' meta.capture per chunk
    for _ in range(rounds):
        for m in MODES:
            if m in ("plain", "aa"):  # aa: a second unprofiled chunk, the noise of the pairing
                times[m].append(chunk(fn, n))
            else:
                with profiler(m) as p:
                    times[m].append(chunk(fn, n))
                if isinstance(p, dlpt.profile):
                    own[m].append(p.session.meta["capture"])
    recs = records_per_iter(fn)
    plain = [t for t in times["plain"]]
    floor = times["rf_floor"]
    out = {"workload": name, "iters_per_chunk": n, "records": recs, "modes": {}}
    for m in MODES:
        ratios = [t / p for t, p in zip(times[m], plain)]
        added = [(t - p) / recs * 1e9 for t, p in zip(times[m], plain)] if recs else []
        over_floor = [(t - f) / recs * 1e9 for t, f in zip(times[m], floor)] if recs else []
        out["modes"][m] = {
            "us_per_iter": statistics.median(times[m]) * 1e6,
            "ratio": statistics.median(ratios),
            "ratio_min": min(ratios),
            "ratio_max": max(ratios),
            "ns_per_record": statistics.median(added) if added else None,
            "ns_over_floor": statistics.median(over_floor) if over_floor else None,
            **self_time(own[m]),
        }
    return out


def self_time(chunks: list[dict]) -> dict:
    """dlpt's self-timer over its chunks (medians): ns per record, op-start ns per outermost op,
    walks of the Python stack per outermost op."""

    def median(num: str, den: str) -> float | None:
        vals = [c[num] / c[den] for c in chunks if c.get(den)]
        return statistics.median(vals) if vals else None

    if not chunks:
        return {}
    return {"self_ns_per_record": median("self_ns", "op_records"),
            "op_start_ns_per_outermost": median("self_op_start_ns", "outermost_ops"),
            "walks_per_outermost": median("python_walks", "outermost_ops")}


def table(results: list[dict]) -> str:
    lines = [
        "| workload | records/iter | plain µs/iter | mode | ratio (min–max) | ns/record over plain | over floor "
        "| dlpt's self ns/record | op start ns/outermost op | walks/outermost op |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        plain = r["modes"]["plain"]["us_per_iter"]
        for m in MODES[1:]:
            d = r["modes"][m]
            own = [d.get(k) for k in ("self_ns_per_record", "op_start_ns_per_outermost", "walks_per_outermost")]
            lines.append(
                f"| {r['workload']} | {r['records']:.0f} | {plain:.1f} | {m} | "
                f"{d['ratio']:.3f}x ({d['ratio_min']:.2f}–{d['ratio_max']:.2f}) | "
                f"{d['ns_per_record']:.0f} | {d['ns_over_floor']:.0f} | "
                + " | ".join("" if v is None else f"{v:.2f}" if k == 2 else f"{v:.0f}" for k, v in enumerate(own))
                + " |"
            )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--chunk-s", type=float, default=0.05, help="plain time per chunk")
    ap.add_argument("--workloads", nargs="+", default=list(WORKLOADS))
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    results = []
    for w in args.workloads:
        print(f"# {w} ...", file=sys.stderr, flush=True)
        results.append(measure(w, args.rounds, args.chunk_s))
    meta = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "torch": torch.__version__, "rounds": args.rounds,
            "date": datetime.datetime.now().isoformat(timespec="seconds")}
    md = table(results)
    os.makedirs(args.out, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y-%m-%d-%H%M%S")
    with open(os.path.join(args.out, f"floor-cpu-{stamp}.json"), "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    with open(os.path.join(args.out, f"floor-cpu-{stamp}.md"), "w") as f:
        f.write(f"CPU floor benchmark ({meta['machine']}, {meta['cpus']} CPUs, torch {meta['torch']}, "
                f"{args.rounds} rounds, `python bench/floor.py`)\n\n{md}\n")
    print(md)


if __name__ == "__main__":
    main()
