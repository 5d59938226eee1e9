"""What ``--flops`` costs on this CPU: per step and per recorded op, against the default capture
and against ``--nested-ops`` (which ``--flops`` implies), as an interleaved A/B in one process.

With ``flops=True`` torch packs every op's inputs for RecordFunction (needsInputs), dlpt records
every nested op, and for the ops with a work formula it writes their input signature. Chunks of
each mode alternate in one process (one intra-op thread) so that drift on a shared machine hits
all modes alike; medians of the per-chunk times are reported.

usage: PYTHONPATH=. python tools/flops_cost.py [ROUNDS] [STEPS_PER_CHUNK]    (CPU only)
"""

from __future__ import annotations

import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

import torch

import dlpt

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _example(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def workloads():
    yield "mlp_train (CPU)", _example("mlp_train").make_step()
    step, _ = _example("gpu_gpt").make_step("cpu", amp=False)
    yield "gpu_gpt CPU config", step


def measure(name: str, step, rounds: int, n: int) -> dict:
    for _ in range(5):
        step()

    def chunk() -> float:
        t = time.perf_counter()
        for _ in range(n):
            step()
        return (time.perf_counter() - t) / n

    modes = {"base": None, "default": {}, "nested_ops": {"nested_ops": True}, "flops": {"flops": True}}
    times: dict[str, list[float]] = {m: [] for m in modes}
    ops_per_step = 0.0
    for _ in range(rounds):
        for mode, kw in modes.items():
            if kw is None:
                times[mode].append(chunk())
                continue
            with dlpt.profile(gpu=False, **kw) as prof:
                times[mode].append(chunk())
            if mode == "flops":
                calls = sum(nd["m"].get("calls", 0) for nd in prof.session.nodes if nd["kind"] == "op")
                ops_per_step = calls / n
    med = {m: statistics.median(v) * 1e3 for m, v in times.items()}
    return {
        "workload": name,
        "ms_per_step": {m: round(v, 3) for m, v in med.items()},
        "ops_per_step": round(ops_per_step),
        "flops_vs_default_us_per_op": round((med["flops"] - med["default"]) * 1e3 / ops_per_step, 2),
        "flops_vs_nested_us_per_op": round((med["flops"] - med["nested_ops"]) * 1e3 / ops_per_step, 2),
        "ratio_flops_to_default": round(med["flops"] / med["default"], 3),
        "ratio_default_to_base": round(med["default"] / med["base"], 3),
    }


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    torch.set_num_threads(1)
    for name, step in workloads():
        print("RESULT " + json.dumps(measure(name, step, rounds, n)), flush=True)


if __name__ == "__main__":
    main()
