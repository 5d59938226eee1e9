"""How the report across ranks scales: N synthetic rank summaries of a model with L distinct
lines, merged (ranks_view) and rendered (terminal text and the HTML page's model) in one
process, with the wall time and peak memory of each stage.

    python bench/rank_merge.py [--ranks 1024] [--lines 10000] [--out bench/results]

A rank's session is built as dlpt would record it (a frame per line under a module frame, a
GEMM kernel and an NCCL all-reduce under them, per-step GPU time lines, the all-reduces' kernels
in meta.gpu_collectives: one per 100 lines and step) for a waiting rank and
for the straggler, and cut to the summary a rank sends rank 0 (dlpt.analysis.ranks.summary.encode:
its lines flattened, its tree folded to the job's budget). Every rank's summary is then that
template with its own rank and its own values (the template's, with per-rank jitter), packed as
the rank would send it, and decoded as rank 0 decodes it. The summaries are made before the clock starts: what is timed is rank 0's
work. Memory is the peak resident set (ru_maxrss) after each stage.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dlpt.analysis.ranks.lines import one_thread  # noqa: E402
from dlpt.analysis.ranks.merge import rank_set  # noqa: E402
from dlpt.cli.rank_finish import with_lines  # noqa: E402
from dlpt.views.ranks import ranks_view  # noqa: E402
from dlpt.analysis.ranks import summary as rank_summary  # noqa: E402
from dlpt.model.session import VERSION, Session  # noqa: E402
from dlpt.renderers.html.ranks_page import build_ranks_model  # noqa: E402
from dlpt.renderers.terminal.ranks import render_ranks  # noqa: E402

STEPS = 10


def rank_session(rank: int, world: int, lines: int, slow: int) -> Session:
    nodes: list[dict] = [{"id": 0, "parent": -1, "kind": "root", "name": "<root>", "file": "", "line": 0, "m": {}}]

    def add(parent: int, kind: str, name: str, file: str = "", line: int = 0, **m: int) -> int:
        nodes.append({"id": len(nodes), "parent": parent, "kind": kind, "name": name, "file": file, "line": line, "m": m})
        return len(nodes) - 1

    main = add(0, "frame", "<module>", "/job/train.py", 10)
    wait = 8_000_000 if rank != slow else 0
    for i in range(lines):
        f = add(main, "frame", f"Layer{i // 10}.forward", f"/job/model_{i // 500}.py", 1 + i % 500)
        k = 40_000 + (i * 7919 + rank * 104729) % 20_000  # a little per-rank jitter
        add(f, "kernel", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", gpu_ns=k * STEPS, kernels=STEPS)
        if i % 100 == 0:
            op = add(f, "op", "c10d::allreduce_", calls=STEPS, comm_calls=STEPS)
            c = 200_000 + wait // (lines // 100)
            add(op, "kernel", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", gpu_ns=c * STEPS, comm_ns=c * STEPS, kernels=STEPS)
    add(main, "sync", "cudaStreamSynchronize", sync_ns=(300_000 + wait) * STEPS, api_ns=(300_000 + wait) * STEPS, count=STEPS)
    if rank == slow:
        add(main, "frame", "main", "/job/train.py", 42, host_ns=8_000_000 * STEPS)
    per_step = lines // 100
    n = STEPS * per_step
    collectives = {
        "names": ["ncclDevKernel_AllReduce_Sum_bf16_RING_LL"], "device": [0] * n,
        "epoch": [3 + i // per_step for i in range(n)], "name": [0] * n,
        "start_ns": [10**15 + (i // per_step) * 60_000_000 + (i % per_step) * (50_000_000 // per_step) for i in range(n)],
        "dur_ns": [200_000 + wait // per_step] * n, "exposed": ["ff" * 16] * n,
    }
    row = {"span_ns": 60_000_000, "busy_ns": 40_000_000, "idle_before_ns": 0, "idle_after_ns": 20_000_000,
           "comm_ns": 2_000_000 + wait, "exposed_ns": 500_000 + wait}
    meta = {
        "argv": ["train.py"], "dlpt": "bench", "torch": "bench", "wall_ns": 60_000_000 * STEPS,
        "gpu": {"enabled": True}, "steps": {"profiled": STEPS, "seen": STEPS, "source": "optimizer"},
        "step_wall_ns": [60_000_000] * STEPS, "gpu_steps": {"0": [row] * STEPS}, "gpu_collectives": collectives,
        "distributed": {"rank": rank, "world_size": world, "local_rank": rank % 8, "hostname": f"node{rank // 8}",
                        "device": rank % 8, "backends": ["nccl"], "source": "env", "run_id": "bench"},
    }
    return Session.from_dict({"format": "dlpt-session", "version": VERSION, "meta": meta, "nodes": nodes})


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--out")
    a = ap.parse_args()
    # One full session, then each rank's summary as it arrives at rank 0 (encoded bytes).
    t = time.perf_counter()
    import torch

    budget = rank_summary.tree_budget(a.ranks)
    slow = a.ranks // 2
    templates = {}
    for kind, r in (("waiting", 0), ("straggler", slow)):
        blob = rank_summary.encode(
            rank_session(r, a.ranks, a.lines, slow), budget, max_collectives=rank_summary.collective_budget(a.ranks)
        )
        t_ = rank_summary.decode(blob, kind)
        labels = json.dumps([list(x) for x in t_.labels], separators=(",", ":")).encode()
        templates[kind] = (t_, labels)
    blobs = []
    gen = torch.Generator().manual_seed(0)
    for r in range(a.ranks):
        t_, labels = templates["straggler" if r == slow else "waiting"]
        t_.session.meta["distributed"]["rank"] = r
        full = t_.full_values()
        jitter = torch.randint(0, 5_000, full.shape, generator=gen) * (full > 0)
        blobs.append(rank_summary.pack(t_.session, labels, full + jitter))
    made = time.perf_counter() - t
    sizes = sorted(len(b) for b in blobs)
    base = rss_mb()
    stages: dict[str, float] = {}
    t0 = time.perf_counter()
    seen: dict = {}
    with one_thread():  # as RankStore.collect decodes
        summaries = {r: rank_summary.decode(b, f"rank {r}", seen) for r, b in enumerate(blobs)}
    stages["decode"] = time.perf_counter() - t0
    del blobs
    t = time.perf_counter()
    rs = rank_set([(f"rank {r}", s.session) for r, s in summaries.items()])
    with_lines(rs, summaries)
    rep = ranks_view(rs)
    stages["merge"] = time.perf_counter() - t
    t = time.perf_counter()
    from rich.console import Console

    console = Console(width=160, record=True, color_system=None, file=open(os.devnull, "w"))
    console.print(render_ranks(rep))
    stages["terminal"] = time.perf_counter() - t
    t = time.perf_counter()
    model = build_ranks_model(rep)
    page = json.dumps(model)
    stages["html model"] = time.perf_counter() - t
    total = time.perf_counter() - t0
    peak = rss_mb()
    result = {
        "ranks": a.ranks, "lines": a.lines, "summary_bytes_median": sizes[len(sizes) // 2],
        "summary_bytes_max": sizes[-1], "stages_s": stages, "total_s": total, "peak_rss_mb": peak,
        "rss_before_mb": base, "straggler": [s.rank for s in rep.stragglers], "html_model_bytes": len(page),
        "wait_from_arrivals": rep.waits.arrivals is not None,
        "collectives_per_rank": rank_summary.collective_budget(a.ranks),
        "made_s": made, "python": platform.python_version(), "machine": platform.machine(),
        "cpus": os.cpu_count(), "date": datetime.date.today().isoformat(),
    }
    print(json.dumps(result, indent=1))
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        path = os.path.join(a.out, f"rank-merge-{a.ranks}x{a.lines}-{result['date']}.json")
        with open(path, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
