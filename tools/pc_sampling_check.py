"""Step-by-step check of CUPTI PC sampling on this GPU, with dlpt's native code and nothing else.

Run on a GPU machine (no profile is started; dlpt's extension is used directly):

    PYTHONPATH=. python tools/pc_sampling_check.py [--period 10] [--only triton,compiled,gemm]

For (a) a @triton.jit kernel with a light prologue and a heavy loop, (b) a torch.compile'd
function fusing two model lines (one ~20x the math of the other) and (c) a cuBLAS GEMM it prints:
CUPTI's version and stall reasons, every PC sampling call with its result, the samples collected,
how many PCs resolved to a file:line through the module's cubin, and the top lines with their
top stall reasons. Each case is independent: a failure is printed and the next one runs. Exit
status 0 when every case collected samples, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def say(msg: str) -> None:
    print(msg, flush=True)


def top_lines(result: dict[str, Any], n: int = 12) -> None:
    lines = result["lines"]
    total = sum(r["samples"] for r in lines) or 1
    by_fn: Counter[str] = Counter()
    for r in lines:
        by_fn[r["function"]] += r["samples"]
    say(f"  kernels sampled: {len(by_fn)}")
    for fn, n_fn in by_fn.most_common(5):
        say(f"    {n_fn:>9} {100 * n_fn / total:5.1f}%  {fn[:100]}")
    say("  top lines:")
    for r in sorted(lines, key=lambda r: -r["samples"])[:n]:
        stalls = sorted(r["stalls"].items(), key=lambda kv: -kv[1])[:3]
        where = f"{r['file']}:{r['line']}" if r["file"] else "(no line info)"
        stall_text = ", ".join(f"{k} {100 * v / max(1, r['samples']):.0f}%" for k, v in stalls)
        say(f"    {r['samples']:>9} {100 * r['samples'] / total:5.1f}%  {where}  [{stall_text}]")


def per_file_lines(result: dict[str, Any], path_end: str) -> dict[int, int]:
    out: dict[int, int] = defaultdict(int)
    for r in result["lines"]:
        if r["file"].endswith(path_end):
            out[r["line"]] += r["samples"]
    return dict(out)


def sample(
    C: Any, cands: list[str], period: int, run: Callable[[], None], label: str
) -> dict[str, Any] | None:
    import torch

    say(f"\n=== {label} ===")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    started = C.pc_sampling_start(cands, period)
    for line in started["log"]:
        say(f"  {line}")
    if not started["ok"]:
        say(f"  START FAILED: {started['error']}")
        return None
    run()
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    res = C.pc_sampling_stop(cands)
    t2 = time.perf_counter()
    for line in res["log"]:
        say(f"  {line}")
    if not res["ok"]:
        say(f"  STOP FAILED: {res['error']}")
    say(
        f"  total_samples={res['total_samples']} dropped={res['dropped_samples']} "
        f"non_user={res['non_user_samples']} hw_buffer_full={res['hardware_buffer_full']}"
    )
    from dlpt.capture.pc_sampling import normalize_rows

    summed = sum(r["samples"] for r in res["lines"])
    res["lines"] = normalize_rows(res["lines"])  # a sample counts once (docs/pc-sampling.md)
    once = sum(r["samples"] for r in res["lines"])
    say(
        f"  samples over PC records: {once} counted once (+ non_user = {once + res['non_user_samples']}, "
        f"compare with total_samples); {summed} summing every reason CUPTI lists"
    )
    for fn, why in list(res.get("unresolved", {}).items())[:8]:
        say(f"  no line for PCs of {fn[:80]}: {why}")
    say(
        f"  PC records={res['pcs']} resolved to file:line={res['pcs_resolved']} "
        f"without a kept cubin={res['pcs_without_cubin']}; "
        f"cubins kept={res['cubins']} ({res['cubin_bytes']} bytes)"
    )
    say(f"  sampled run {1e3 * (t1 - t0):.1f} ms, stop+read+resolve {1e3 * (t2 - t1):.1f} ms")
    top_lines(res)
    return res


def case_triton(C: Any, cands: list[str], period: int) -> bool:
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def heavy_loop_kernel(x_ptr, out_ptr, n, ITERS: tl.constexpr, BLOCK: tl.constexpr):
        pid = tl.program_id(0)  # prologue: light
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        acc = x
        for _ in range(ITERS):  # the loop: heavy
            acc = tl.sin(acc) * 1.0001 + tl.cos(acc)
        tl.store(out_ptr + offs, acc, mask=mask)

    x = torch.randn(1 << 22, device="cuda")
    out = torch.empty_like(x)
    grid = (triton.cdiv(x.numel(), 1024),)

    def run() -> None:
        for _ in range(20):
            heavy_loop_kernel[grid](x, out, x.numel(), ITERS=256, BLOCK=1024)

    heavy_loop_kernel[grid](x, out, x.numel(), ITERS=256, BLOCK=1024)  # compile + module load
    res = sample(C, cands, period, run, "(a) @triton.jit heavy loop")
    if res is None:
        return False
    import inspect

    src, first = inspect.getsourcelines(heavy_loop_kernel.fn)
    loop = [first + i for i, t in enumerate(src) if "for _ in range" in t or "tl.sin(acc)" in t]
    here = per_file_lines(res, os.path.basename(__file__))
    total = sum(here.values())
    on_loop = sum(n for ln, n in here.items() if ln in loop)
    say(f"  kernel lines in this file: {dict(sorted(here.items()))}; loop lines {loop}")
    say(
        f"  samples on the loop's lines: {on_loop}/{total} = "
        f"{100 * on_loop / max(1, total):.1f}% (want >= 80%)"
    )
    return total > 0


def case_compiled(C: Any, cands: list[str], period: int) -> bool:
    import torch

    def fused(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        y = x.sin().exp().cos().sin().exp().cos().sin().exp().cos().sin().exp().cos().sin().exp().cos().sin().exp().cos()  # noqa: E501  # fmt: skip
        return y * w  # the light line

    import torch._inductor.config as inductor_config

    # Kernel -> model lines with their code (what dlpt's pc-sampling mode turns on).
    inductor_config.trace.provenance_tracking_level = 1
    inductor_config.fx_graph_cache = False  # a cached compile records no provenance
    import torch._functorch.config as functorch_config

    functorch_config.enable_autograd_cache = False
    from dlpt.capture.compile.fused_split import ProvenanceRecorder, kernel_model_lines

    ProvenanceRecorder().install()
    f = torch.compile(fused)
    x = torch.randn(1 << 24, device="cuda")
    w = torch.randn(1 << 24, device="cuda")
    f(x, w)
    torch.cuda.synchronize()
    say(f"  provenance (kernel -> model lines): {kernel_model_lines()}")

    def run() -> None:
        for _ in range(20):
            f(x, w)

    res = sample(C, cands, period, run, "(b) torch.compile fused two lines")
    if res is None:
        return False
    gen = [r for r in res["lines"] if "torchinductor" in r["file"] or "triton_" in r["function"]]
    say(f"  Inductor kernel lines: {len(gen)}")
    for r in sorted(gen, key=lambda r: -r["samples"])[:15]:
        text = ""
        try:
            with open(r["file"], encoding="utf-8") as fh:
                text = fh.readlines()[r["line"] - 1].strip()
        except (OSError, IndexError):
            pass
        say(f"    {r['samples']:>9}  {os.path.basename(r['file'])}:{r['line']}  {text[:90]}")
    try:
        from dlpt.capture.compile.fused_split import split_kernel_lines

        split = split_kernel_lines(res["lines"])
        say("  model-line split (dlpt.capture.compile.fused_split):")
        for k in split:
            say(f"    {k}")
    except Exception:  # noqa: BLE001 - a diagnostic: print and go on
        say("  model-line split failed:\n" + traceback.format_exc())
    return bool(gen)


def case_gemm(C: Any, cands: list[str], period: int) -> bool:
    import torch

    a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    a @ b

    def run() -> None:
        for _ in range(20):
            a @ b

    res = sample(C, cands, period, run, "(c) cuBLAS GEMM")
    if res is None:
        return False
    stalls: Counter[str] = Counter()
    for r in res["lines"]:
        stalls.update(r["stalls"])
    say(f"  GEMM stall reasons: {stalls.most_common(6)}")
    return sum(stalls.values()) > 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--period", type=int, default=10, help="sampling period: 2^N cycles (CUPTI: 5..31)")
    ap.add_argument("--only", default="triton,compiled,gemm")
    args = ap.parse_args()

    import torch

    from dlpt.capture import native

    if not torch.cuda.is_available():
        say(f"torch {torch.__version__}: no CUDA GPU here; run this on a GPU machine")
        return 1
    say(f"torch {torch.__version__}, cuda {torch.version.cuda}, device {torch.cuda.get_device_name(0)}")
    torch.zeros(1, device="cuda")  # a current context; libcuda and torch's CUPTI copy loaded
    C = native.core()
    cands = native.cupti_candidates()
    info = C.pc_sampling_info(cands)
    say(f"pc_sampling_info: {info}")
    if not info["ok"]:
        say(f"PC sampling unavailable: {info['reason']}")
        return 1
    watch = C.pc_sampling_watch(cands)
    say(f"pc_sampling_watch (module loads from now on): {watch}")
    reasons = C.pc_sampling_stall_reasons(cands)
    say(f"stall reasons before enable: {len(reasons['names'])} {reasons['error']} {reasons['log']}")
    cases = {"triton": case_triton, "compiled": case_compiled, "gemm": case_gemm}
    ok = True
    for name in args.only.split(","):
        try:
            ok &= cases[name](C, cands, args.period)
        except Exception:  # noqa: BLE001 - one case failing must not hide the others
            say(f"case {name} raised:\n{traceback.format_exc()}")
            ok = False
    reasons = C.pc_sampling_stall_reasons(cands)
    say(f"\nstall reasons after enable ({len(reasons['names'])}): {reasons['names']}")
    say(f"disable: {C.pc_sampling_disable(cands)}")
    say("RESULT: " + ("every case collected samples" if ok else "some case collected nothing (see above)"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
