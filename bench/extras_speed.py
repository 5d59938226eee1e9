"""What reading node extras costs the reports on a large session: Session.load, the terminal
report rendered to a string, the HTML page's model, each timed (CPU time of the process: a
busy machine's waits left out) in a fresh process, the code
trees given alternating round by round (paired: a busy machine's drift falls on both alike).

usage:
  python bench/extras_speed.py gen FILE [--lines N]      # ~3 nodes and one kernel per line
  python bench/extras_speed.py measure FILE              # one process: "load render html" (s)
  python bench/extras_speed.py paired FILE TREE... [--rounds R]

``gen`` writes a session of N user lines (default 74,000: about 222,000 nodes), each a frame
with an op and a kernel below it; every kernel has a name of its own and the extras the native
core writes (csrc/bindings.cpp: device, grid, block, regs, smem_static, smem_dynamic; the
capture adds full_name), every 25th line a host-to-device copy (direction, host_mem). No op
carries FLOPs and one kernel name in 10 reads as an fp32 GEMM: the fp32-matmul rule then reads
every kernel's name. ``paired`` runs ``measure`` with PYTHONPATH set to each TREE in turn
(a checkout of dlpt with its native extension), ``--rounds`` times (default 7), and prints each
stage's median per tree and the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from typing import Any

MEASURE = """
import io, sys, time
from rich.console import Console
from dlpt.model.session import Session
from dlpt.renderers.terminal.report import render
from dlpt.renderers.html.data import build_model
t = [time.process_time()]
s = Session.load(sys.argv[1])
t.append(time.process_time())
out = io.StringIO()
Console(file=out, width=120, color_system=None).print(render(s))
t.append(time.process_time())
build_model(s)
t.append(time.process_time())
print(" ".join(f"{b - a:.3f}" for a, b in zip(t, t[1:])))
"""

_FAMILIES = (
    "ampere_sgemm_128x64_nn_v{i}",
    "triton_poi_fused_add_mul_{i}",
    "void at::native::vectorized_elementwise_kernel<4, at::native::Functor{i}>",
    "triton_red_fused_native_layer_norm_{i}",
    "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_{i}>",
    "triton_per_fused__softmax_{i}",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, Sum{i}>>",
    "triton_poi_fused_gelu_{i}",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize{i}",
    "void at::native::unrolled_elementwise_kernel<copy{i}>",
)


def session(lines: int, seed: int = 0) -> dict[str, Any]:
    rng = random.Random(seed)
    nodes: list[dict[str, Any]] = [{"id": 0, "parent": -1, "kind": "root", "name": "<root>", "m": {}}]

    def add(parent: int, kind: str, name: str, file: str = "", line: int = 0, **kw: Any) -> int:
        nodes.append({"id": len(nodes), "parent": parent, "kind": kind, "name": name, "file": file, "line": line, **kw})
        return len(nodes) - 1

    top = add(0, "frame", "<module>", "/home/user/proj/train.py", 1, m={})
    for i in range(lines):
        heavy = i % 5_000 == 0
        ns = rng.randint(50_000_000, 90_000_000) if heavy else rng.randint(1_000, 40_000)
        frame = add(top, "frame", f"step{i % 1000}", f"/home/user/proj/pkg{i % 97}/mod{i % 499}.py", 10 + i, m={})
        op = add(frame, "op", "aten::mm" if i % 10 == 0 else "aten::add", m={"calls": 3, "cpu_ns": ns // 8})
        name = _FAMILIES[i % len(_FAMILIES)].format(i=i)
        x: dict[str, Any] = {
            "device": 0,
            "grid": [rng.randint(1, 4096), rng.choice((1, 2, 8)), 1],
            "block": [rng.choice((128, 256, 384, 512)), 1, 1],
            "regs": rng.choice((32, 64, 96, 128, 168)),
            "full_name": name,
        }
        if i % 3:
            x["smem_static"] = rng.choice((0, 4096, 16384)) or 1024
        if i % 4 == 0:
            x["smem_dynamic"] = 49152
        short = name.split("<")[0].removeprefix("void ")
        short = short if "{i}" in _FAMILIES[i % len(_FAMILIES)].split("<")[0] else f"{short}<{i}>"
        add(op, "kernel", short, m={"kernels": 3, "gpu_ns": ns, "min_ns": ns // 4, "max_ns": ns // 2}, x=x)
        if i % 25 == 0:
            copy = {"direction": "HtoD", "host_mem": "pageable" if i % 50 else "pinned", "device": 0}
            add(op, "memcpy", "[memcpy HtoD]", m={"copies": 1, "copy_ns": 3_000, "copy_bytes": 65_536}, x=copy)
    meta = {
        "argv": ["train.py"],
        "wall_ns": 30 * 10**9,
        "gpu": {"enabled": True, "reason": None},
        "devices": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "capability": "9.0"}],
    }
    return {"format": "dlpt-session", "version": 3, "meta": meta, "nodes": nodes}


def _measure(path: str, tree: str) -> list[float]:
    env = dict(os.environ, PYTHONPATH=tree, COLUMNS="120")
    here = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run(
        [sys.executable, "-c", MEASURE, path], env=env, capture_output=True, text=True, check=True, cwd=here
    )
    return [float(v) for v in r.stdout.split()]


def paired(path: str, trees: list[str], rounds: int) -> None:
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())} on {os.cpu_count()} CPUs")
    times: dict[str, list[list[float]]] = {t: [] for t in trees}
    for r in range(rounds):
        order = trees if r % 2 == 0 else trees[::-1]
        for t in order:
            times[t].append(_measure(path, t))
            print(f"round {r} {t}: {times[t][-1]}", flush=True)
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    for t in trees:
        med = [statistics.median(row[k] for row in times[t]) for k in range(3)]
        print(f"{t}: median CPU s: load {med[0]:.3f}, terminal {med[1]:.3f}, html model {med[2]:.3f}")


def main() -> None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("file")
    g.add_argument("--lines", type=int, default=74_000)
    m = sub.add_parser("measure")
    m.add_argument("file")
    q = sub.add_parser("paired")
    q.add_argument("file")
    q.add_argument("trees", nargs="+")
    q.add_argument("--rounds", type=int, default=7)
    a = p.parse_args()
    if a.cmd == "gen":
        s = session(a.lines)
        with open(a.file, "w") as f:
            json.dump(s, f, separators=(",", ":"))
        kernels = sum(n["kind"] == "kernel" for n in s["nodes"])
        print(f"{len(s['nodes']):,} nodes, {kernels:,} kernels, {os.path.getsize(a.file) / 1e6:.0f} MB")
    elif a.cmd == "measure":
        print(" ".join(f"{v:.3f}" for v in _measure(a.file, os.environ.get("PYTHONPATH", "."))))
    else:
        paired(a.file, [os.path.abspath(t) for t in a.trees], a.rounds)


if __name__ == "__main__":
    main()
