"""What dlpt costs a step early in a session, while the warm-up is being decided, against later:
paired in one process (the pattern of bench/cpu_ab.py). The model is the README's example
(examples/mlp_train.py's step, on the CPU), warmed up first so that its own warm-up is over; each
round then runs an unprofiled chunk of STEPS steps, a second one (the A/A row), and a dlpt session
of STEPS steps (the defaults: optimizer steps end steps, warm-up detected, calibration windows, the
1 kHz sampler). Each step is timed alone; per band of steps, a round's ratio is the median of the
session's step times in the band over the median of the first unprofiled chunk's in the same band,
and the table gives the median over rounds with its distribution-free 95% interval. The
"step end" row is dlpt's own time at each step's end on the program's thread
(dlpt.capture.schedule.StepSchedule.on_step, timed around the call: the warm-up's tests, the
epoch's end, the tracing switch), the median of the band's steps in µs, median over rounds: the
wall ratios cannot tell tens of microseconds on a 2 ms step on a shared 2-core host, this can.

The warm-up's tests run at every step end until it is over (dlpt/capture/warmup.py): a band that
costs more than the later ones is dlpt's own per-step work settling. Compare two builds by running
this script with each on PYTHONPATH, alternately, on the same machine.

usage: python bench/step_cost_bands.py [--rounds 8] [--steps 120] [--out bench/results]
       python bench/step_cost_bands.py --pool RESULT.json ...   (one table over their rounds)
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "examples"))

import torch  # noqa: E402
from mlp_train import make_step  # noqa: E402

import dlpt  # noqa: E402
from dlpt.capture.schedule import StepSchedule  # noqa: E402
from dlpt.model.stats import median_interval  # noqa: E402

BANDS = [(1, 10), (10, 20), (20, 35), (35, 60), (60, 90), (90, 120)]


def chunk(step, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        step()
        out.append(time.perf_counter() - t)
    return out


class StepEnds:
    """Times StepSchedule.on_step, the step end's own work on the program's thread."""

    def __init__(self) -> None:
        self.ns: list[int] = []
        self._on_step = StepSchedule.on_step

    def __enter__(self) -> StepEnds:
        original = self._on_step

        def timed(schedule, *args, **kwargs):
            t = time.perf_counter_ns()
            try:
                return original(schedule, *args, **kwargs)
            finally:
                self.ns.append(time.perf_counter_ns() - t)

        StepSchedule.on_step = timed  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc) -> None:
        StepSchedule.on_step = self._on_step  # type: ignore[method-assign]


def band_ratios(num: list[float], den: list[float], bands) -> list[float]:
    return [statistics.median(num[a:b]) / statistics.median(den[a:b]) for a, b in bands]


def run(rounds: int, steps: int) -> dict:
    step = make_step(device="cpu")
    for _ in range(200):
        step()
    bands = [(a, min(b, steps)) for a, b in BANDS if a < steps]
    rows: dict[str, list[list[float]]] = {"A/A": [], "dlpt": []}
    ends: list[list[float]] = []
    for _ in range(rounds):
        plain, again = chunk(step, steps), chunk(step, steps)
        with StepEnds() as timed, dlpt.profile(gpu=False):
            profiled = chunk(step, steps)
        rows["A/A"].append(band_ratios(again, plain, bands))
        rows["dlpt"].append(band_ratios(profiled, plain, bands))
        ends.append([statistics.median(timed.ns[a:b]) / 1e3 for a, b in bands])
    return {"bands": bands, "rounds": rounds, "steps": steps, "ratios": rows, "step_end_us": ends}


def pooled(results: list[dict]) -> dict:
    """One result holding every round of ``results`` (the same bands)."""
    out = {"bands": results[0]["bands"], "ratios": {"A/A": [], "dlpt": []}, "step_end_us": []}
    for r in results:
        if r["bands"] != out["bands"]:
            raise SystemExit("step_cost_bands: results with different bands cannot be pooled")
        for name in out["ratios"]:
            out["ratios"][name] += r["ratios"][name]
        out["step_end_us"] += r["step_end_us"]
    out["rounds"] = len(out["step_end_us"])
    return out


def table(result: dict) -> str:
    head = "| row | " + " | ".join(f"steps {a}-{b - 1}" for a, b in result["bands"]) + " |"
    lines = [head, "|---" * (len(result["bands"]) + 1) + "|"]
    for name, per_round in result["ratios"].items():
        cells = []
        for i in range(len(result["bands"])):
            values = [r[i] for r in per_round]
            lo, hi, how = median_interval(values)
            cells.append(f"{statistics.median(values):.3f}x ({how} {lo:.3f}-{hi:.3f})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    cells = []
    for i in range(len(result["bands"])):
        values = [r[i] for r in result["step_end_us"]]
        lo, hi, how = median_interval(values)
        cells.append(f"{statistics.median(values):.0f} µs ({how} {lo:.0f}-{hi:.0f})")
    lines.append("| step end | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--out", default=None, help="write step-cost-bands-<date>.json/.md there")
    ap.add_argument("--pool", nargs="+", metavar="JSON", help="pool these results' rounds, run nothing")
    args = ap.parse_args()
    if args.pool:
        print(table(pooled([json.loads(Path(f).read_text()) for f in args.pool])))
        return
    result = run(args.rounds, args.steps)
    result.update(
        dlpt=str(Path(dlpt.__file__).resolve().parents[1]),
        torch=torch.__version__,
        cpus=os.cpu_count(),
        when=datetime.datetime.now().isoformat(timespec="seconds"),
    )
    text = table(result)
    if args.out:
        stem = (
            Path(args.out) / f"step-cost-bands-cpu{os.cpu_count()}-{datetime.datetime.now():%Y-%m-%d-%H%M%S}"
        )
        stem.with_suffix(".json").write_text(json.dumps(result, indent=1))
        stem.with_suffix(".md").write_text(
            f"`python bench/step_cost_bands.py --rounds {args.rounds} --steps {args.steps}` "
            f"(dlpt from {result['dlpt']}, torch {result['torch']}, {result['cpus']} CPUs, "
            f"{result['when']}): a round's ratio per band is the session's median step time over "
            "the unprofiled chunk's, median over rounds.\n\n" + text + "\n"
        )
    print(text)


if __name__ == "__main__":
    main()
