"""Profiler overhead, side by side: one (workload, mode) per process.

usage: python bench/overhead.py WORKLOAD MODE [STEPS]

Prints exactly one line `RESULT {json}`: per-step time while profiling (`step_s`), finalize time
(stop + build and render a report, `finalize_s`), peak host RSS (`peak_rss_mb`), and `error` /
`trace` when anything failed. Failures are recorded, never raised: a tool that cannot run here is
a finding, and the runner must still get its row.

Modes
  base              no profiler
  base_long         no profiler, 10x steps, RSS growth (a control for dlpt_long)
  torchprof         torch.profiler, CPU + CUDA activities
  torchprof_stack   same, with_stack=True
  proton_shadow     Triton Proton, no Python context
  proton_python     Triton Proton, Python stack per launch
  dlpt              dlpt.profile()            (GPU capture on)
  dlpt_nogpu        dlpt.profile(gpu=False)   (CPU-only attribution)
  dlpt_long         dlpt.profile(), 10x steps; RSS after a warm-up window vs after the run

Derived from the anchor benchmark's overhead.py (same warm-up and timing; not part of this
repository), extended with the dlpt modes, RSS measurement and CPU-only workloads.
"""
import gc
import importlib
import io
import json
import os
import resource
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
LONG_FACTOR = 10
WARMUP_STEPS = 10


def rss_mb() -> float:
    """Current resident set size. Peak (ru_maxrss) cannot show growth after a high-water mark."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:  # not Linux: fall back to the peak, the best we have
        return peak_rss_mb()


def peak_rss_mb() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 2**20 if sys.platform == "darwin" else r / 2**10  # bytes on macOS, KiB on Linux


def import_dlpt():
    """Import dlpt as installed, else from this checkout (an in-place build)."""
    try:
        return importlib.import_module("dlpt")
    except ImportError:
        if REPO not in sys.path:
            sys.path.insert(0, REPO)
        return importlib.import_module("dlpt")


def session_stats(session) -> dict:
    """Best-effort size and totals of a dlpt session (docs/session-format.md); never raises.

    gpu_kernel_ns can be compared with torchprof's cuda_time_total_us for fidelity.
    """
    out = {}
    try:
        nodes = getattr(session, "nodes", None)
        if nodes is None and isinstance(session, dict):
            nodes = session.get("nodes")
        if nodes is None:
            return out
        out["nodes"] = len(nodes)
        tot = {"gpu_ns": 0, "kernels": 0, "copy_ns": 0, "memset_ns": 0, "sync_ns": 0}
        for n in nodes:
            m = n.get("m", {}) if isinstance(n, dict) else getattr(n, "m", {}) or {}
            for k in tot:
                tot[k] += int(m.get(k, 0))
        out.update(("sum_" + k, v) for k, v in tot.items())
        meta = getattr(session, "meta", None)
        if meta is None and isinstance(session, dict):
            meta = session.get("meta")
        if isinstance(meta, dict):
            for k in ("gpu", "dropped", "unattributed", "cuda_graphs"):
                if k in meta:
                    out[k] = meta[k]
    except Exception as e:  # stats are extra; a format change must not lose the timing
        out["stats_error"] = repr(e)[:200]
    return out


def main(argv) -> dict:
    wl, mode = argv[1], argv[2]
    res = {"workload": wl, "mode": mode, "pid": os.getpid()}
    try:
        import torch
        sys.path.insert(0, HERE)
        from workloads import BUILDERS, CPU_ONLY, STEPS_SCALE
        steps = (int(argv[3]) if len(argv) > 3 else 30) * STEPS_SCALE.get(wl, 1)
        res["steps"] = steps
        # CPU-only workloads and GPU-less machines: never touch torch.cuda (it would
        # initialise CUDA, or fail, and either way is not what is being measured).
        cuda = wl not in CPU_ONLY and torch.cuda.is_available()
        sync = torch.cuda.synchronize if cuda else (lambda: None)
        res["device"] = torch.cuda.get_device_name(0) if cuda else "cpu"
        res["torch"] = torch.__version__
        name, step = BUILDERS[wl]()
        res["name"] = name
        for _ in range(WARMUP_STEPS):
            step()
        sync()
        res["rss_start_mb"] = rss_mb()
    except Exception as e:
        res["error"] = "setup: " + repr(e)[:300]
        res["trace"] = traceback.format_exc()[-1200:]
        return res

    def timed_loop(n=steps):
        sync()
        t = time.perf_counter()
        for _ in range(n):
            step()
        sync()
        return (time.perf_counter() - t) / n

    try:
        run_mode(mode, wl, steps, cuda, timed_loop, res)
    except Exception as e:  # record, don't die: a missing tool is a finding
        res["error"] = repr(e)[:300]
        res["trace"] = traceback.format_exc()[-1200:]
    res["peak_rss_mb"] = peak_rss_mb()
    return res


def run_mode(mode, wl, steps, cuda, timed_loop, res) -> None:
    if mode in ("base", "prime"):  # prime: an unprofiled run that only warms caches
        res["step_s"] = timed_loop()
    elif mode == "base_long":
        long_run(res, steps, timed_loop)
    elif mode.startswith("torchprof"):
        import torch
        from torch.profiler import ProfilerActivity, profile
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        p = profile(activities=acts, with_stack=mode.endswith("stack"))
        p.__enter__()
        res["step_s"] = timed_loop()
        t = time.perf_counter()
        p.__exit__(None, None, None)
        p.key_averages().table(sort_by="cuda_time_total" if cuda else "cpu_time_total",
                               row_limit=20)
        res["finalize_s"] = time.perf_counter() - t
        evs = [e for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        res["cuda_events"] = len(evs)
        res["cuda_time_total_us"] = sum(e.device_time for e in evs) if evs else None
    elif mode.startswith("proton"):
        import triton.profiler as proton
        proton.start("/tmp/proton_" + wl, context=mode.split("_", 1)[1])
        res["step_s"] = timed_loop()
        t = time.perf_counter()
        proton.finalize()
        res["finalize_s"] = time.perf_counter() - t
    elif mode in ("dlpt", "dlpt_nogpu", "dlpt_long"):
        run_dlpt(mode, steps, timed_loop, res)
    else:
        raise ValueError(f"unknown mode {mode!r}")


def long_run(res, steps, timed_loop) -> None:
    """10x steps; RSS once the first `steps` have run (every distinct path seen) and at the end.

    Growth between the two is what a longer run costs; it must stay ~0 for dlpt, whose memory
    is bounded by distinct calling-context paths, not by run length.
    """
    res["steps"] = steps * LONG_FACTOR
    # Both windows run from this one call line: two call sites would be two sets of calling
    # contexts, and the second window would "grow" by the new paths it alone creates.
    for key, n in (("warm", steps), ("end", steps * (LONG_FACTOR - 1))):
        res["step_s_" + key] = timed_loop(n)
        gc.collect()
        res[f"rss_{key}_mb"] = rss_mb()
    res["step_s"] = res.pop("step_s_end")
    res["rss_growth_mb"] = res["rss_end_mb"] - res["rss_warm_mb"]


def run_dlpt(mode, steps, timed_loop, res) -> None:
    t = time.perf_counter()
    dlpt = import_dlpt()
    report = getattr(dlpt, "report", None) or importlib.import_module("dlpt.renderers.terminal.report")
    res["import_s"] = time.perf_counter() - t
    from rich.console import Console

    t = time.perf_counter()
    prof = dlpt.profile(gpu=(mode != "dlpt_nogpu"))
    prof.start()
    res["start_s"] = time.perf_counter() - t
    try:
        if mode == "dlpt_long":
            long_run(res, steps, timed_loop)
        else:
            res["step_s"] = timed_loop()
    finally:
        # Stop even when the loop failed: a profiler left running would skew what follows
        # and leave CUPTI subscribed.
        t = time.perf_counter()
        prof.stop()
        res["stop_s"] = time.perf_counter() - t
    t2 = time.perf_counter()
    renderable = report.render(prof.session, view="tree")
    buf = io.StringIO()
    Console(file=buf, width=120).print(renderable)
    res["render_s"] = time.perf_counter() - t2
    res["finalize_s"] = res["stop_s"] + res["render_s"]
    res["render_chars"] = len(buf.getvalue())
    res.update(session_stats(prof.session))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    print("RESULT " + json.dumps(main(sys.argv), default=str), flush=True)
