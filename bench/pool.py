"""Pools the paired bench's rounds over several calls into one verdict per target (issue 50).

    python bench/pool.py paired-A.json paired-B.json ... [--workloads decode ...] [--all-workloads]
                         [--out FILE.md]

One call of bench/paired.py rarely has enough rounds to tell 5% on the lent hosts (16 rounds leave
intervals 15-60% wide: docs/overhead.md). Every call saves each round's ratios (its JSON's
`results[].raw`), so calls add up: for each workload and each comparison of bench/comparisons.py
this takes every call's per-round quotients (a mode's ratio over the other's *of the same round*:
rounds of different calls are never paired) and judges them together, with the same median and
distribution-free 95% interval as one call: "meets", "misses" or "can't tell". `--all-workloads`
adds a row per comparison pooling the workloads given (as issue 32's "four workloads pooled").

It also pools dlpt's own time from its self-timer, per launch and per op start (the median over
every round of the round's self_ns over its launches or op records, with its 95% interval, and
each call's median beside it: the self-timer should agree between calls within a few percent).
Pure Python, no torch: tests/unit/test_bench_pool.py runs it on the CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
if os.path.dirname(HERE) not in sys.path:
    sys.path.append(os.path.dirname(HERE))

from comparisons import COMPARISONS, quotients, summary  # noqa: E402

from dlpt.model.stats import median_interval  # noqa: E402

#: dlpt's self time per launch / per op start: (name, the capture key it divides self_ns by).
PER = (("launch", "submitted"), ("op", "op_records"))


def load(paths: list[str]) -> list[dict]:
    """Each call's results: [{"file", "gpu", "workloads": {workload: raw}}]."""
    calls = []
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        raws = {r["workload"]: r["raw"] for r in d.get("results", []) if r.get("raw")}
        calls.append({"file": os.path.basename(p), "gpu": d.get("meta", {}).get("gpu"), "workloads": raws})
    return calls


def pooled_comparisons(calls: list[dict], workloads: list[str]) -> dict[str, dict]:
    """Comparison key -> its summary over every call's rounds of ``workloads``."""
    out = {}
    for c in COMPARISONS:
        q = [x for call in calls for w in workloads for x in quotients(call["workloads"].get(w, {}), c)]
        s = summary(q, c)
        if s is not None:
            s["calls"] = sum(1 for call in calls if any(quotients(call["workloads"].get(w, {}), c) for w in workloads))
            out[c.key] = s
    return out


def self_time(calls: list[dict], workload: str, mode: str, den: str) -> dict | None:
    """dlpt's self ns per ``den`` of ``mode`` on ``workload``: pooled median, interval, per call."""
    per_call, pooled = [], []
    for call in calls:
        rounds = (call["workloads"].get(workload, {}).get(mode) or {}).get("capture") or []
        vals = [r["self_ns"] / r[den] for r in rounds if r.get(den) and r.get("self_ns") is not None]
        if vals:
            per_call.append(statistics.median(vals))
            pooled += vals
    if not pooled:
        return None
    lo, hi, how = median_interval(pooled)
    return {"median": statistics.median(pooled), "lo": lo, "hi": hi, "interval": how, "rounds": len(pooled),
            "per_call": per_call}


def report(calls: list[dict], workloads: list[str], all_workloads: bool) -> str:
    gpus = sorted({c["gpu"] for c in calls if c["gpu"]})
    lines = [f"Pooled over {len(calls)} calls ({', '.join(c['file'] for c in calls)}; {', '.join(gpus) or '?'})", "",
             "| workload | comparison | rounds (calls) | median | 95% interval | target | verdict |",
             "|---|---|---|---|---|---|---|"]
    groups = [[w] for w in workloads] + ([workloads] if all_workloads and len(workloads) > 1 else [])
    for group in groups:
        for key, s in pooled_comparisons(calls, group).items():
            name = group[0] if len(group) == 1 else f"{len(group)} workloads pooled"
            lines.append(f"| {name} | {key}: {s['meaning']} | {s['rounds']} ({s['calls']}) | {s['ratio']:.3f}x "
                         f"| {s['interval']} {s['lo']:.3f}–{s['hi']:.3f} | ≤ {s['target']:.2f}x | **{s['verdict']}** |")
    lines += ["", "| workload | mode | dlpt's self time per | pooled median (95% interval) | rounds | per call |",
              "|---|---|---|---|---|---|"]
    modes = sorted({m for c in calls for w in workloads for m, r in c["workloads"].get(w, {}).items()
                    if isinstance(r, dict) and r.get("capture")})
    for w in workloads:
        for m in modes:
            for what, den in PER:
                s = self_time(calls, w, m, den)
                if s is None:
                    continue
                calls_text = ", ".join(f"{x:.0f}" for x in s["per_call"])
                lines.append(f"| {w} | {m} | {what} | {s['median']:.0f} ns ({s['lo']:.0f}–{s['hi']:.0f}) "
                             f"| {s['rounds']} | {calls_text} ns |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--workloads", nargs="+", help="default: every workload of the calls")
    ap.add_argument("--all-workloads", action="store_true", help="also pool the workloads together")
    ap.add_argument("--out", help="also write the report to this file")
    args = ap.parse_args()
    calls = load(args.files)
    workloads = args.workloads or sorted({w for c in calls for w in c["workloads"]})
    text = report(calls, workloads, args.all_workloads)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
