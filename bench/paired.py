"""What profiling costs a training or decoding loop, measured paired in one process.

    python bench/paired.py [--workloads small_gpt decode ...] [--modes dlpt aa ...]
                           [--rounds 12] [--chunk N] [--long] [--out DIR]

Single-process ratios on shared machines move by 15-70% between two unprofiled runs, more than
what is measured. Here each round runs, for every mode, an unprofiled chunk of steps and right
after it a profiled chunk; the ratio of the two is that round's ratio, and the table shows the
median over rounds with min and max. The `aa` mode profiles nothing in its second chunk: its
spread is the noise floor. The profiler is started before and stopped after its chunk's timer.

Modes
  aa           A/A: both chunks unprofiled (noise floor)
  dlpt         dlpt.profile(): lines, ops, forward/backward, kernels, copies, syncs, and the host
               sampler at its default 1 kHz; its op mode is the default (lean on the GPU unless
               DLPT_OPS says otherwise: the table's mode column says which ran)
  dlpt_lean    dlpt.profile(exact_ops=False): lean op starts named (issue 50: no walk of the Python
               stack at an op's start; its line is found at its first launch)
  dlpt_exact   dlpt.profile(exact_ops=True): every op start walks (--exact-ops, the old default)
  dlpt_sampler the same, the sampler named explicitly (sample_hz=1000)
  dlpt_nosampler  dlpt.profile(sample_hz=0): dlpt without the host sampler; dlpt_sampler over it
               is what the sampler costs (csrc/host/sampler.h)
  dlpt_noanchors  dlpt with every walk of the Python stack going to the root (DLPT_FRAME_ANCHORS=0;
               CPython 3.12+ has frame anchors: dlpt/capture/frame_anchors.py); dlpt over it is what
               the anchors save
  dlpt_nomemo  dlpt with outermost ops finding their op and phase nodes in the tree cache only
               (DLPT_OP_MEMO=0; csrc/context/op_node_memo.h): dlpt over it is what the memo saves
  dlpt_inner0  dlpt with frame anchors allowed at the innermost frame (DLPT_ANCHOR_MIN_INNER=0; the
               default keeps two frames inward of an anchor: csrc/context/frame_anchors.h)
  dlpt_timeline   dlpt.profile(timeline=1000): a timeline window kept throughout the chunk (its
               event budget permitting): what recording every op, call, kernel and sample costs
  dlpt_nogpu   dlpt.profile(gpu=False): the CPU-side op path alone (no CUPTI)
  dlpt_nested  dlpt.profile(nested_ops=True): every nested op recorded too
  dlpt_nopy    dlpt's native core without Python-frame capture (ops, CUPTI)
  dlpt_memory  dlpt.profile(memory=True): dlpt plus memory per line (every CUDA allocation and
               free reported to dlpt's tracker); calibrate=False where the profile has it
  rf_floor     an empty global RecordFunction callback with dlpt's settings (torch's own cost)
  cupti_floor  an empty CUPTI subscriber with dlpt's callbacks and activity kinds (CUPTI's)
  dlpt_w4, dlpt_w16, dlpt_nowin   dlpt with RecordFunction windows for ops with >= 4 / >= 16
               nested records, or none (the default is 8; see csrc/context/aten_ops.cpp)
  dlpt_bwkept  dlpt with aten-op records kept in backward passes (the default pauses them;
               dlpt/capture/backward_records.py)
  dlpt_flush0, cupti_floor_flush0   dlpt / the CUPTI floor with CUPTI's own flush heuristics
               instead of dlpt's 100 ms flush period (DLPT_CUPTI_EXPERIMENT=no_flush_period)
  cupti_floor_kernel_only, _launch_only, _big_buffers, _proton_like, dlpt_proton_like
               CUPTI with kernel activity only / launch callbacks only / 64 MiB buffers / all
               three and no flush period (Proton's settings): what each costs
               (DLPT_CUPTI_EXPERIMENT; the latter drop copies, memsets and syncs)
  cupti_floor_no_callbacks, cupti_floor_no_activity   the CUPTI floor with activity records only
               / API callbacks only: what each half of CUPTI costs
  dlpt_suspended, dlpt_suspended_detach   dlpt.profile() started before the chunk's timer and
               suspended (set_tracing(False), after a synchronize) for the whole profiled chunk,
               resumed and stopped after it: what a suspended profile costs against no profiler
               (must be ~1.00x). CUPTI stays subscribed with every callback and activity kind
               disabled, or (_detach, DLPT_SUSPEND=detach) is unsubscribed and detached
  torchprof    torch.profiler, CPU + CUDA activities, no stacks
  proton       Triton Proton, shadow context (kernels only), started and finalized around each
               profiled chunk as dlpt is: CUPTI is attached during profiled chunks only
  proton_active  Proton started once, activated around each profiled chunk: deactivating keeps
               CUPTI attached (Proton's Session::deactivate only flushes), so the unprofiled
               chunks pay CUPTI too and the ratio is Proton's recording alone, not CUPTI's cost

  dlpt_pcs     dlpt.profile(pc_sampling=3) (calibrate=False): the profile starts, its first 3
               steps are PC-sampled and read back (untimed), then the chunk is timed: what the
               steps after the sampled window cost. Beside `dlpt` (the same profile without the
               mode) the two ratios should agree: the mode must leave the other steps as they were
  dlpt_pcs_window  the same profile, timing the 3 sampled steps themselves (from the end of the
               first step, where sampling starts, to the end of the third sampled step, whose
               boundary stops sampling and reads the samples back): what a sampled step costs.
               The ratio is per step against the unprofiled chunk. Both modes fail the block when
               PC sampling did not run (a profile without it would flatter the mode)

  dlpt_calibrated  not a ratio of chunk times: dlpt's own report of the step time. Each round
               times an unprofiled chunk step by step (median of the intervals between steps), then
               runs a dlpt profile with its default schedule over a chunk long enough for its warm-up
               and one untraced window, and compares the session's untraced median step
               (meta.step_time.untraced) and traced one with the unprofiled median: the first ratio
               is the calibration's error (1.00x: dlpt reports the program's own step time), the
               second dlpt's cost per traced step as dlpt itself reports it

The overhead modes (dlpt, dlpt_*) trace every step of their chunk (calibrate=False): they measure
what a traced step costs. dlpt's default schedule runs some steps untraced (dlpt_calibrated).

Main-thread CPU time: each chunk is also timed by the main thread's CPU clock
(time.thread_time), and the table gives that ratio's median and spread beside the wall one. Time
the thread spent off its core is not in it, nor is dlpt's work on other threads (CUPTI's buffer
thread, the host sampler); a wait on the GPU counts as far as the CPU spins in it. On the H100
hosts it spread as much as the wall ratio (docs/overhead.md, 2026-11-27): the rounds' spread
there is contention, not descheduling. The wall ratio stays the figure that counts.

Issue 32's targets, per round (bench/comparisons.py): when both modes of a comparison ran, their
ratios of the same round are divided (dlpt over cupti_floor, over torchprof and over
dlpt_nosampler; dlpt_memory over dlpt). Each row gives the median of those quotients with its
distribution-free 95% interval and a verdict against the target: "meets" (the whole interval at or
under it), "misses" (the whole interval above it) or "can't tell" (it straddles the target). Dividing
two medians instead compounds two rounds' noise. Eight rounds give a 95% interval of min-max:
verdicts need more (--rounds 16 or so). torch.profiler's rounds run after every other mode of
every workload (it keeps CUPTI), so its quotient pairs rounds minutes apart.

--long (small_gpt): an unprofiled chunk of 300 steps, one dlpt session over 10 chunks of 300
steps, another unprofiled chunk: the first and last profiled chunks against the unprofiled mean
(does the cost per step grow with run length?), and host RSS at both.

Writes <out>/paired-<gpu>-<date>.json and .md; the table is printed last.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import statistics
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if REPO not in sys.path:
    sys.path.append(REPO)

import torch  # noqa: E402
from comparisons import compare_all, is_comparison  # noqa: E402
from comparisons import row as comparison_row  # noqa: E402
from paired_workloads import BUILDERS as PAIRED  # noqa: E402
from paired_workloads import LAUNCHES_PER_STEP  # noqa: E402

import dlpt  # noqa: E402

from workloads import BUILDERS as SHARED  # noqa: E402

DLPT_MODES = ("aa", "dlpt", "dlpt_lean", "dlpt_exact", "dlpt_memory", "dlpt_sampler", "dlpt_nosampler", "dlpt_noanchors", "dlpt_nomemo",
              "dlpt_inner0", "dlpt_timeline", "dlpt_nogpu", "dlpt_nested", "dlpt_nopy", "rf_floor", "cupti_floor",
              "dlpt_w4", "dlpt_w16", "dlpt_nowin", "dlpt_bwkept", "dlpt_flush0", "cupti_floor_flush0",
              "cupti_floor_kernel_only", "cupti_floor_launch_only", "cupti_floor_big_buffers", "cupti_floor_proton_like",
              "dlpt_proton_like", "cupti_floor_no_callbacks", "cupti_floor_no_activity", "dlpt_suspended",
              "dlpt_suspended_detach")
PROTON_MODES = ("proton", "proton_active")
#: PC sampling (docs/pc-sampling.md): the steps after the sampled window, and the window itself.
PCS_MODES = ("dlpt_pcs", "dlpt_pcs_window")
PCS_STEPS = 3
ALL_MODES = DLPT_MODES + PCS_MODES + ("dlpt_calibrated", "torchprof") + PROTON_MODES
#: Workloads without an optimizer step: dlpt_calibrated marks their steps with prof.step().
MANUAL_STEPS = ("decode",)
DEFAULT_WORKLOADS = ("small_gpt", "small_gpt_compiled", "decode", "small_mlp", "resnet50", "gpt2")



def native():
    from dlpt.capture.native import core, cupti_candidates

    return core(), cupti_candidates()


def build(name: str):
    if name in PAIRED:
        return PAIRED[name]()
    label, step = SHARED[name]()
    return label, step, {"small_mlp": 40, "resnet50": 10, "gpt2": 10}.get(name, 20)


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def chunk(step, n: int) -> float:
    return timed_chunk(step, n)[0]


def timed_chunk(step, n: int) -> tuple[float, float]:
    """Seconds per step of ``n`` steps: wall, and the main thread's CPU time (see the docstring)."""
    torch.cuda.synchronize()
    t, c = time.perf_counter(), time.thread_time()
    for _ in range(n):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n, (time.thread_time() - c) / n


class Env:
    """Environment variables set while a profiler starts (its native options read them then)."""

    def __init__(self, **env: str) -> None:
        self.env = env

    def __enter__(self):
        os.environ.update(self.env)

    def __exit__(self, *exc) -> None:
        for k in self.env:
            os.environ.pop(k, None)


class Native:
    """A bare native-core session: a floor mode or dlpt without Python frames."""

    def __init__(self, floor: int = 0, python_frames: bool = True, gpu: bool = True, **env: str) -> None:
        self.python_frames, self.gpu, self.env = python_frames, gpu, env
        if floor:  # a benchmark switch of the native core (csrc/options.h, BenchSwitches)
            self.env["DLPT_FLOOR"] = {1: "op_callback", 2: "cupti"}[floor]

    def __enter__(self):
        C, cands = native()
        with Env(**self.env):
            info = C.start(self.gpu, cands if self.gpu else [], True, python_frames=self.python_frames)
        if self.gpu and not info["gpu"]:
            raise RuntimeError(f"CUPTI unavailable: {info['reason']}")
        return self

    def __exit__(self, *exc) -> None:
        torch.cuda.synchronize()
        native()[0].stop()


class Dlpt:
    def __init__(self, window_min_nested: int | None = None, backward_kept: bool = False, env: dict | None = None,
                 **kw) -> None:
        kw.setdefault("calibrate", False)  # every step of the chunk traced: the cost of a traced step
        self.prof = dlpt.profile(**kw)
        self.backward_kept = backward_kept  # backward passes keep their aten-op records
        self.capture: dict = {}
        self.env = dict(env or {})
        if window_min_nested is not None:
            self.env["DLPT_WINDOW_MIN_NESTED"] = str(window_min_nested)

    def __enter__(self):
        import contextlib
        from unittest import mock

        import dlpt.capture.profiler

        kept = (mock.patch.object(dlpt.capture.profiler, "backward_ops", lambda *_: "kept")
                if self.backward_kept else contextlib.nullcontext())
        with Env(**self.env), kept:
            self.prof.start()
        return self

    def __exit__(self, *exc) -> None:
        session = self.prof.stop()
        self.capture = dict(session.meta.get("capture", {}))
        self.op_mode = self.capture.get("op_mode")
        host = session.meta.get("host") or {}
        # The host sampler's own numbers: how many thread stacks it read and its CPU time.
        self.capture.update({f"host_{k}": host.get(k) for k in ("samples", "ticks", "max_threads", "sampler_cpu_ns",
                                                                 "safe_reads")})
        if self.prof.gpu and not session.meta["gpu"]["enabled"]:  # a CPU-only run would flatter dlpt
            raise RuntimeError(f"dlpt ran without GPU capture: {session.meta['gpu']['reason']}")
        memory = session.meta.get("memory")
        if self.prof.memory and not (memory or {}).get("enabled"):  # nor would a refused memory capture
            raise RuntimeError(f"dlpt ran without memory capture: {(memory or {}).get('reason')}")


class Suspended(Dlpt):
    """A dlpt profile with tracing suspended around the timed chunk (dlpt_suspended modes)."""

    def __enter__(self):
        super().__enter__()
        torch.cuda.synchronize()  # set_tracing's contract: the devices are synchronised first
        native()[0].set_tracing(False)
        return self

    def __exit__(self, *exc) -> None:
        torch.cuda.synchronize()
        native()[0].set_tracing(True)
        super().__exit__(*exc)


class TorchProf:
    def __enter__(self):
        from torch.profiler import ProfilerActivity, profile

        self.p = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        self.p.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.p.__exit__(None, None, None)


class ProtonChunk:
    """A Proton session per profiled chunk (start ... finalize)."""

    def __enter__(self):
        import triton.profiler as proton

        proton.start("/tmp/dlpt_paired_proton", context="shadow")
        return self

    def __exit__(self, *exc) -> None:
        import triton.profiler as proton

        torch.cuda.synchronize()
        proton.finalize()


class Proton:
    """One Proton session for the whole block; activated around each profiled chunk (CUPTI
    stays attached in between: see proton_active)."""

    session = None

    def __enter__(self):
        import triton.profiler as proton

        if Proton.session is None:
            Proton.session = proton.start("/tmp/dlpt_paired_proton", context="shadow")
        else:
            proton.activate(Proton.session)
        return self

    def __exit__(self, *exc) -> None:
        import triton.profiler as proton

        torch.cuda.synchronize()
        proton.deactivate(Proton.session)

    @staticmethod
    def finalize() -> None:
        if Proton.session is not None:
            import triton.profiler as proton

            proton.finalize()
            Proton.session = None


def _no_calibration() -> dict:
    """calibrate=False when this dlpt's profile takes it (a self-cost calibration would be timed
    with the chunk); nothing otherwise."""
    import inspect

    return {"calibrate": False} if "calibrate" in inspect.signature(dlpt.profile).parameters else {}


def profiler(mode: str):
    return {
        "dlpt": lambda: Dlpt(),
        "dlpt_lean": lambda: Dlpt(exact_ops=False),
        "dlpt_exact": lambda: Dlpt(exact_ops=True),
        "dlpt_sampler": lambda: Dlpt(sample_hz=1000),
        "dlpt_nosampler": lambda: Dlpt(sample_hz=0),
        "dlpt_noanchors": lambda: Dlpt(env={"DLPT_FRAME_ANCHORS": "0"}),
        "dlpt_nomemo": lambda: Dlpt(env={"DLPT_OP_MEMO": "0"}),
        "dlpt_inner0": lambda: Dlpt(env={"DLPT_ANCHOR_MIN_INNER": "0"}),
        "dlpt_timeline": lambda: Dlpt(timeline=1000),
        "dlpt_nogpu": lambda: Dlpt(gpu=False),
        "dlpt_memory": lambda: Dlpt(memory=True, **_no_calibration()),
        "dlpt_nested": lambda: Dlpt(nested_ops=True),
        "dlpt_w4": lambda: Dlpt(window_min_nested=4),
        "dlpt_w16": lambda: Dlpt(window_min_nested=16),
        "dlpt_nowin": lambda: Dlpt(window_min_nested=1 << 30),
        "dlpt_bwkept": lambda: Dlpt(backward_kept=True),
        "dlpt_flush0": lambda: Dlpt(env={"DLPT_CUPTI_EXPERIMENT": "no_flush_period"}),
        "cupti_floor_flush0": lambda: Native(floor=2, DLPT_CUPTI_EXPERIMENT="no_flush_period"),
        "cupti_floor_kernel_only": lambda: Native(floor=2, DLPT_CUPTI_EXPERIMENT="kernel_only"),
        "cupti_floor_launch_only": lambda: Native(floor=2, DLPT_CUPTI_EXPERIMENT="launch_only"),
        "cupti_floor_big_buffers": lambda: Native(floor=2, DLPT_CUPTI_EXPERIMENT="big_buffers"),
        "cupti_floor_proton_like": lambda: Native(
            floor=2, DLPT_CUPTI_EXPERIMENT="kernel_only,launch_only,big_buffers,no_flush_period"
        ),
        "cupti_floor_no_callbacks": lambda: Native(floor=2, DLPT_CUPTI_EXPERIMENT="no_callbacks"),
        "cupti_floor_no_activity": lambda: Native(floor=2, DLPT_CUPTI_EXPERIMENT="no_activity"),
        "dlpt_proton_like": lambda: Dlpt(
            env={"DLPT_CUPTI_EXPERIMENT": "kernel_only,launch_only,big_buffers,no_flush_period"}
        ),
        "dlpt_nopy": lambda: Native(python_frames=False),
        "dlpt_suspended": lambda: Suspended(),
        "dlpt_suspended_detach": lambda: Suspended(env={"DLPT_SUSPEND": "detach"}),
        "rf_floor": lambda: Native(floor=1, gpu=False),
        "cupti_floor": lambda: Native(floor=2),
        "torchprof": TorchProf,
        "proton": ProtonChunk,
        "proton_active": Proton,
    }[mode]()


def pcs_chunk(step, n: int, window: bool, manual: bool) -> float:
    """dlpt_pcs / dlpt_pcs_window (see the module docstring): seconds per step of the steps after
    the PC-sampled window (``window`` False) or of the sampled steps themselves (True)."""
    prof = dlpt.profile(pc_sampling=PCS_STEPS, calibrate=False, skip_first=0)
    prof.start()
    try:
        mark = prof.step if manual else None

        def steps(k: int) -> None:
            for _ in range(k):
                step()
                if mark is not None:
                    mark()

        steps(1)  # its boundary starts sampling (no warm-up: skip_first=0)
        if window:
            torch.cuda.synchronize()
            t = time.perf_counter()
            steps(PCS_STEPS)  # the last boundary stops sampling and reads the samples back
            torch.cuda.synchronize()
            per_step = (time.perf_counter() - t) / PCS_STEPS
        else:
            steps(PCS_STEPS)  # the sampled window, untimed
            torch.cuda.synchronize()
            t = time.perf_counter()
            steps(n)
            torch.cuda.synchronize()
            per_step = (time.perf_counter() - t) / n
    finally:
        session = prof.stop()
    pcs = session.meta.get("pc_sampling") or {}
    if pcs.get("reason") or not pcs.get("total_samples") or pcs.get("last_step") != 1 + PCS_STEPS:
        raise RuntimeError(f"PC sampling did not run as the mode needs: {pcs.get('reason')!r}, "
                           f"steps {pcs.get('first_step')}-{pcs.get('last_step')}")
    return per_step


#: What each profiled chunk's session says of dlpt's own work, per step in the table's JSON.
CAPTURE_KEYS = ("op_records", "api_callbacks", "self_ns", "rf_windows", "self_python_ns", "self_window_ns",
                "self_api_ns", "tracing_switch_ns", "host_samples", "host_ticks", "host_max_threads", "host_sampler_cpu_ns",
                "host_safe_reads",
                "python_walks", "python_frames_walked", "anchored_walks", "self_op_end_ns", "walk_read_ns",
                "walk_site_ns", "walk_anchor_ns", "site_misses", "anchors_taken", "self_op_start_ns",
                "outermost_ops", "op_start_name_ns", "op_start_nodes_ns", "op_start_rest_ns", "submitted",
                "deferred_ops", "deferred_at_launch", "deferred_at_end")


def run_pairs(step, n: int, modes: list[str], rounds: int, manual: bool = False, after_round=None) -> dict:
    """``after_round(out)``, if given, sees the rounds done so far after each round."""
    out: dict = {m: {"ratios": [], "base_s": [], "prof_s": [], "capture": [], "cpu_ratios": []} for m in modes}
    for _ in range(rounds):
        for m in modes:
            a, a_cpu = timed_chunk(step, n)
            b_cpu = None
            if m == "aa":
                b, b_cpu = timed_chunk(step, n)
                cap = None
            elif m in PCS_MODES:
                b = pcs_chunk(step, n, m == "dlpt_pcs_window", manual)
                cap = None
            else:
                with profiler(m) as p:
                    b, b_cpu = timed_chunk(step, n)
                cap = getattr(p, "capture", None)
            r = out[m]
            r["ratios"].append(b / a)
            if b_cpu is not None and a_cpu > 0:
                r["cpu_ratios"].append(b_cpu / a_cpu)
            r["base_s"].append(a)
            r["prof_s"].append(b)
            if cap:
                r["capture"].append({k: cap.get(k) for k in CAPTURE_KEYS})
                r["op_mode"] = getattr(p, "op_mode", None)
        if after_round is not None:
            after_round(out)
    return out


def step_intervals(step, n: int, mark=None) -> list[float]:
    """Run ``n`` steps and return the host intervals between their ends (s), as dlpt times steps
    (no synchronisation inside the chunk); ``mark`` is called after each step (prof.step())."""
    torch.cuda.synchronize()
    last = time.perf_counter()
    out = []
    for _ in range(n):
        step()
        if mark is not None:
            mark()
        now = time.perf_counter()
        out.append(now - last)
        last = now
    torch.cuda.synchronize()
    return out


def calibration_pairs(step, n: int, rounds: int, manual: bool) -> dict:
    """dlpt_calibrated (see the module docstring). ``manual``: the workload has no optimizer step,
    so the profiled chunk marks its steps with prof.step()."""
    from dlpt.capture.schedule import FIRST_WINDOW, WINDOW
    from dlpt.capture.warmup import MAX_WARMUP

    n = max(n, MAX_WARMUP + FIRST_WINDOW + WINDOW + 4)
    out: dict = {"untraced_ratios": [], "traced_ratios": [], "base_ms": [], "untraced_ms": [], "traced_ms": [],
                 "steps_per_chunk": n}
    for _ in range(rounds):
        base = statistics.median(step_intervals(step, n))
        prof = dlpt.profile()
        prof.start()
        try:
            step_intervals(step, n, prof.step if manual else None)
        finally:
            session = prof.stop()
        times = session.meta.get("step_time", {})
        untraced, traced = times.get("untraced"), times.get("traced")
        if not untraced or not traced:
            raise RuntimeError(f"no untraced or traced steps in a {n}-step chunk: {session.meta.get('steps')}")
        out["base_ms"].append(base * 1e3)
        out["untraced_ms"].append(untraced["median_ns"] / 1e6)
        out["traced_ms"].append(traced["median_ns"] / 1e6)
        out["untraced_ratios"].append(untraced["median_ns"] / 1e9 / base)
        out["traced_ratios"].append(traced["median_ns"] / 1e9 / base)
        # dlpt's cost as the report states it: each window against its traced neighbours.
        from dlpt.model.calibration import calibration

        cal = calibration(session.meta)
        if cal.windows:
            out.setdefault("paired_costs", []).append(cal.ratio)
    return out


def summarise(raw: dict, steps: int) -> dict:
    out = {}
    for m, r in raw.items():
        if m == "dlpt_calibrated":
            if r.get("untraced_ratios"):
                out[m] = {"ratio": statistics.median(r["untraced_ratios"]), "min": min(r["untraced_ratios"]),
                          "max": max(r["untraced_ratios"]), "base_ms": statistics.median(r["base_ms"]),
                          "untraced_ms": statistics.median(r["untraced_ms"]),
                          "traced_ms": statistics.median(r["traced_ms"]),
                          "traced_ratio": statistics.median(r["traced_ratios"]), "rounds": len(r["untraced_ratios"])}
                if r.get("paired_costs"):
                    out[m]["paired_cost"] = statistics.median(r["paired_costs"])
            continue
        if not r["ratios"]:
            continue
        s = {"ratio": statistics.median(r["ratios"]), "min": min(r["ratios"]), "max": max(r["ratios"]),
             "base_ms": statistics.median(r["base_s"]) * 1e3, "prof_ms": statistics.median(r["prof_s"]) * 1e3,
             "rounds": len(r["ratios"])}
        if r.get("cpu_ratios"):
            s.update(cpu_ratio=statistics.median(r["cpu_ratios"]), cpu_min=min(r["cpu_ratios"]),
                     cpu_max=max(r["cpu_ratios"]))
        if r["capture"]:
            c = r["capture"]
            for k in CAPTURE_KEYS:
                vals = [x[k] for x in c if x.get(k) is not None]
                if vals and k == "host_max_threads":  # a count of threads, not per step
                    s[k] = statistics.median(vals)
                elif vals:
                    s[k + "_per_step"] = statistics.median(vals) / steps
            s.update(self_per(c))
            if r.get("op_mode"):
                s["op_mode"] = r["op_mode"]
        out[m] = s
    out.update(compare_all(raw))
    return out


def self_per(rounds: list[dict]) -> dict:
    """dlpt's own time (its self-timer) per launch and per op start: the median over rounds of
    each round's quotient (issue 50's target is per launch on decode)."""
    out = {}
    for key, den in (("self_ns_per_launch", "submitted"), ("self_ns_per_op", "op_records")):
        vals = [x["self_ns"] / x[den] for x in rounds if x.get(den) and x.get("self_ns") is not None]
        if vals:
            out[key] = statistics.median(vals)
    return out


def long_run(step, steps: int = 300, chunks: int = 10) -> dict:
    res: dict = {"steps_per_chunk": steps, "chunks": chunks}
    base = [chunk(step, steps)]
    prof = dlpt.profile()
    prof.start()
    times, rss = [], []
    try:
        for i in range(chunks):
            times.append(chunk(step, steps))
            if i in (0, chunks - 1):
                gc.collect()
                rss.append(rss_mb())
    finally:
        prof.stop()
    if not prof.session.meta["gpu"].get("enabled", True):
        raise RuntimeError(f"dlpt ran without GPU capture: {prof.session.meta['gpu'].get('reason')}")
    base.append(chunk(step, steps))
    b = statistics.mean(base)
    res.update(base_ms=[x * 1e3 for x in base], chunk_ms=[x * 1e3 for x in times],
               first_ratio=times[0] / b, last_ratio=times[-1] / b, rss_first_mb=rss[0], rss_last_mb=rss[-1],
               nodes=len(prof.session.nodes))
    return res


def table(results: list[dict]) -> str:
    lines = ["| workload | base ms/step | mode | ratio (median) | min–max | rounds | dlpt self µs/step "
             "| self ns/launch | self ns/op | main thread's CPU time: ratio (min–max) | added µs/launch |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['workload']} | error: {r['error'][:80]} |||||")
            continue
        for m, s in r["modes"].items():
            if m == "dlpt_calibrated":
                lines.append(f"| {r['workload']} | {s['base_ms']:.2f} | dlpt's untraced step {s['untraced_ms']:.2f} ms "
                             f"/ unprofiled (calibration error) | **{s['ratio']:.3f}x** | {s['min']:.2f}–{s['max']:.2f} "
                             f"| {s['rounds']} | traced step {s['traced_ms']:.2f} ms = {s['traced_ratio']:.2f}x"
                             + (f"; dlpt's paired cost {s['paired_cost']:.2f}x" if "paired_cost" in s else "") + " |")
                continue
            if is_comparison(m):
                lines.append(comparison_row(r["workload"], m, s))
                continue
            self_ns = s.get("self_ns_per_step")
            cpu = (f"{s['cpu_ratio']:.3f}x ({s['cpu_min']:.2f}–{s['cpu_max']:.2f})" if "cpu_ratio" in s else "")
            per = [s.get("self_ns_per_launch"), s.get("self_ns_per_op")]
            name = f"{m} ({s['op_mode']})" if s.get("op_mode") else m
            lines.append(f"| {r['workload']} | {s['base_ms']:.2f} | {name} | **{s['ratio']:.3f}x** | "
                         f"{s['min']:.2f}–{s['max']:.2f} | {s['rounds']} | "
                         f"{'' if self_ns is None else f'{self_ns / 1e3:.0f} µs'} | "
                         + " | ".join("" if v is None else f"{v:.0f}" for v in per)
                         + f" | {cpu} | {added_per_launch(r, m)} |")
        if "long" in r:
            lg = r["long"]
            lines.append(f"| {r['workload']} | long run ({lg['chunks']}x{lg['steps_per_chunk']} steps) | dlpt | "
                         f"first {lg['first_ratio']:.3f}x, last {lg['last_ratio']:.3f}x | "
                         f"RSS {lg['rss_first_mb']:.0f} → {lg['rss_last_mb']:.0f} MB ||||")
    return "\n".join(lines)


def added_per_launch(r: dict, m: str) -> str:
    """A launch microbenchmark's added wall time per launch, µs: the median over rounds of the
    profiled chunk's step time minus the unprofiled one's, over the launches of a step. What the
    tiny-launch target compares (a mode's against cupti_floor's)."""
    launches = LAUNCHES_PER_STEP.get(r["workload"])
    raw = (r.get("raw") or {}).get(m) or {}
    if not launches or not raw.get("prof_s"):
        return ""
    added = [(b - a) / launches for a, b in zip(raw["base_s"], raw["prof_s"], strict=False)]
    return f"{statistics.median(added) * 1e6:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", nargs="+", default=list(DEFAULT_WORKLOADS))
    ap.add_argument("--modes", nargs="+", default=list(ALL_MODES), choices=ALL_MODES)
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--chunk", type=int, default=None, help="steps per chunk (default: per workload)")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--long", action="store_true", help="also the long run (small_gpt)")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    args = ap.parse_args()
    gpu = torch.cuda.get_device_name(0)
    stamp = datetime.datetime.now().strftime("%Y-%m-%d-%H%M%S")
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, f"paired-{gpu.replace(' ', '-')}-{stamp}")
    results: list[dict] = []
    meta = {"gpu": gpu, "torch": torch.__version__, "python": sys.version.split()[0], "rounds": args.rounds,
            "argv": sys.argv, "date": stamp}
    def save(partial: dict | None = None) -> None:
        """Writes the results; ``partial``: a workload under way, saved quietly with them."""
        rows = results + ([partial] if partial is not None and all(r is not partial for r in results) else [])
        with open(base + ".json", "w") as f:
            json.dump({"meta": meta, "results": rows}, f, indent=1, default=str)
        md = table(rows)
        with open(base + ".md", "w") as f:
            f.write(f"Paired in-process overhead, {gpu}, torch {meta['torch']}, {args.rounds} rounds "
                    f"(`{' '.join(sys.argv)}`)\n\n{md}\n")
        if partial is None:
            print(md, flush=True)

    def run_block(res: dict, raw: dict, step, n: int, block: list[str], manual: bool = False) -> None:
        def checkpoint(done: dict) -> None:
            # Saved after every round: a call cut off at its deadline keeps the rounds it ran.
            res["modes"] = summarise({**raw, **done}, n)
            res["raw"] = {**raw, **done}
            save(res)

        try:
            raw.update(run_pairs(step, n, block, args.rounds, manual, after_round=checkpoint))
        except Exception as e:  # a tool that cannot run here is a finding, not the end
            res.setdefault("block_errors", {})[",".join(block)] = repr(e)[:300]
            print(traceback.format_exc(), file=sys.stderr)
        finally:
            Proton.finalize()
        res["modes"] = summarise(raw, n)
        res["raw"] = raw

    # CUPTI has one subscriber. Proton's finalize and dlpt's stop release it for the next tool;
    # torch.profiler (torch 2.11's Kineto) keeps it subscribed for the rest of the process, so its
    # blocks run last, after every workload's other modes (the built workloads are kept for them).
    later: list[tuple[dict, dict, object, int]] = []
    for w in args.workloads:
        print(f"# {w}", file=sys.stderr, flush=True)
        res: dict = {"workload": w}
        try:
            label, step, n = build(w)
            n = args.chunk or n
            res.update(name=label, steps_per_chunk=n)
            for _ in range(args.warmup):
                step()
            torch.cuda.synchronize()
            raw: dict = {}
            # Each Proton mode in a block of its own (proton_active keeps a session across rounds).
            blocks = [[m] for m in PROTON_MODES if m in args.modes] + [
                [m for m in args.modes if m in DLPT_MODES or m in PCS_MODES]]
            for block in blocks:
                if block:
                    run_block(res, raw, step, n, block, manual=w in MANUAL_STEPS)
            if "dlpt_calibrated" in args.modes:
                try:
                    raw["dlpt_calibrated"] = calibration_pairs(step, n, args.rounds, manual=w in MANUAL_STEPS)
                except Exception as e:  # noqa: BLE001 - recorded, the other modes stand
                    res.setdefault("block_errors", {})["dlpt_calibrated"] = repr(e)[:300]
                    print(traceback.format_exc(), file=sys.stderr)
                res["modes"] = summarise(raw, n)
                res["raw"] = raw
            if args.long and w == "small_gpt":
                res["long"] = long_run(step)
            if "torchprof" in args.modes:
                later.append((res, raw, step, n))
        except Exception as e:  # record and go on: one broken workload must not lose the others
            res["error"] = repr(e)[:300]
            res["trace"] = traceback.format_exc()[-1500:]
            print(res["trace"], file=sys.stderr)
        results.append(res)
        save()
    for res, raw, step, n in later:
        print(f"# {res['workload']}: torchprof", file=sys.stderr, flush=True)
        run_block(res, raw, step, n, ["torchprof"])
        save()

if __name__ == "__main__":
    main()
