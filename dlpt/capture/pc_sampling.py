"""CUPTI PC sampling for a few steps after the warm-up: which line inside each kernel is hot, and why.

Opt-in (``dlpt.profile(pc_sampling=N)``, ``--pc-sampling``). At the first step boundary after
the warm-up, the GPU is synchronised and CUPTI PC sampling starts on the current CUDA context in
continuous mode (kernels keep running concurrently; csrc/pcsampling/collector.cpp); after ``N``
steps it is synchronised again, stopped and its records read back, each PC resolved to its
source line through the cubin kept at module load (csrc/pcsampling/cubins.cpp). The ``N`` steps
are held by the step schedule (:meth:`StepSchedule.hold`): outside steps, neither counted nor
timed, so the report's per-step figures and step times never hold sampled (slow) kernels or the
read-back. The other steps run as without this mode: nothing is added per launch (module loads
are watched, once each).

What it gives (``meta.pc_sampling``, docs/pc-sampling.md): per kernel, its samples and stall
reasons, and its source lines with theirs (Triton kernels: the ``@triton.jit`` function's lines;
Inductor kernels: the generated kernel file's lines, and the model lines they came from as
sampled shares, :mod:`dlpt.capture.compile.fused_split`). Library kernels without line info keep
their totals and stall reasons.

Degrades, never fails: no CUPTI PC sampling API, no permission (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES),
another tool holding it, or an unsupported GPU leave a one-line ``reason`` and the rest of the
profile.

Thread contract: ``start``/``on_step``/``stop`` are called by the profile with its step lock
held and the GIL (step boundaries are serialised); the native calls run on that thread.
"""

from __future__ import annotations

import contextlib
import warnings
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

from dlpt.capture.compile.fused_split import ProvenanceRecorder, split_kernel_lines
from dlpt.capture.schedule import StepSchedule

__all__ = ["PcSampling", "DEFAULT_STEPS", "PERIOD_LOG2", "MAX_STEPS", "pc_sampling_steps"]

#: Steps sampled when the mode is on without a count.
DEFAULT_STEPS = 3
MAX_STEPS = 100
#: Sampling period: one sample per SM sub-partition every 2^10 cycles (~0.6 us at 1.7 GHz).
#: Proton's default, checked to work on the H100 (driver 580) with a 128 MiB hardware buffer;
#: finer periods fill the buffer (dropped samples) on long steps. The diagnostic
#: tools/pc_sampling_check.py --period N tries others.
PERIOD_LOG2 = 10
#: Lines kept per kernel in the session (the most sampled), and kernels kept.
MAX_LINES_PER_KERNEL = 200
MAX_KERNELS = 500


def pc_sampling_steps(value: object) -> int:
    """The number of steps to sample from ``pc_sampling=`` (False/0: off, True: DEFAULT_STEPS);
    UsageError (one line) for anything else."""
    from dlpt.errors import UsageError

    if value is True:
        return DEFAULT_STEPS
    if value is False or value is None:
        return 0
    if not isinstance(value, int) or not 0 <= value <= MAX_STEPS:
        raise UsageError(
            f"pc_sampling must be True/False or a number of steps from 0 to {MAX_STEPS}, got {value!r}"
        )
    return value


class PcSampling:
    """The PC sampling window of one profile. ``core``: dlpt._C; ``candidates``: where CUPTI is;
    ``synchronize``: waits for the GPU."""

    def __init__(self, steps: int, core: Any, candidates: list[str], synchronize: Callable[[], None]) -> None:
        self.steps = steps
        self._C = core
        self._cands = candidates
        self._sync = synchronize
        self.reason: str | None = None  # why nothing was (or will be) sampled
        self.state = "off"  # off -> waiting -> sampling -> done
        self.first_step: int | None = None
        self.last_step: int | None = None
        self._schedule: StepSchedule | None = None
        self._raw: dict[str, Any] | None = None
        self._log: list[str] = []
        self._provenance_set: dict[str, Any] = {}  # Inductor settings dlpt changed (undone at stop)
        self._recorder = ProvenanceRecorder()

    def start(self) -> None:
        """At profile start: module loads watched (so later-loaded kernels have their cubins),
        Inductor's provenance tracking on (kernel -> model lines) unless the user set it."""
        try:
            info = self._C.pc_sampling_info(self._cands)
            if not info["ok"]:
                return self._off(info["reason"])
            watch = self._C.pc_sampling_watch(self._cands)
            if not watch["ok"]:
                return self._off(watch["error"])
        except Exception as e:  # noqa: BLE001 - never fail the profile over PC sampling
            return self._off(f"{type(e).__name__}: {e}")
        self._provenance_set = _inductor_provenance_on()
        self._recorder.install()
        self.state = "waiting"
        return None

    def on_step(self, schedule: StepSchedule) -> None:
        """A step boundary, after ``schedule`` classified the step that ended. Once the warm-up
        is over and the next step is traced: synchronise, start sampling, and have the schedule
        hold the next ``steps`` steps (outside steps: not counted, not timed; sampled kernels
        are slow). The window closes at the boundary that ends the last of them, inside that
        step (:meth:`StepSchedule.hold`), so the counted steps never hold sampling or its
        read-back and the untraced calibration windows come after it."""
        if self.state != "waiting" or not schedule.warmup.over or not schedule.tracing or schedule.holding:
            return None
        self._sync()
        started = self._call("pc_sampling_start", self._cands, PERIOD_LOG2)
        if started is None or not started["ok"]:
            return self._off(started["error"] if started else self.reason or "could not start")
        self._log += started["log"]
        self.state = "sampling"
        self._schedule = schedule
        self.first_step = schedule.seen + 1
        schedule.hold(self.steps, self._window_end)
        return None

    def _window_end(self) -> None:
        """The schedule's hold ended (the last sampled step just ended): stop and read back."""
        if self.state == "sampling":
            self._finish(sync=True)

    def stop(self) -> None:
        """Profile stop (the GPU was synchronised): a window still open is closed and read; PC
        sampling is disabled so other tools can use it."""
        if self.state == "sampling":
            self._finish(sync=False)
        elif self.state == "waiting":
            self.reason = self.reason or "the profile ended before the warm-up did: no step was sampled"
        if self.state != "off" or self._raw is not None:
            with contextlib.suppress(Exception):  # disabling is best effort at the end
                self._C.pc_sampling_disable(self._cands)
        self._recorder.remove()
        _inductor_provenance_off(self._provenance_set)
        self._provenance_set = {}

    def _finish(self, sync: bool) -> None:
        if self._schedule is not None:
            self.last_step = self._schedule.seen  # the steps ended so far: the window's last
        if sync:
            self._sync()
        res = self._call("pc_sampling_stop", self._cands)
        self.state = "done"
        if res is None:
            return
        self._log += res["log"]
        if not res["ok"]:
            self.reason = res["error"]
        self._raw = res

    def _call(self, name: str, *args: Any) -> dict[str, Any] | None:
        try:
            out: dict[str, Any] = getattr(self._C, name)(*args)
            return out
        except Exception as e:  # noqa: BLE001 - never fail the profile over PC sampling
            self._off(f"{name}: {type(e).__name__}: {e}")
            return None

    def _off(self, reason: str) -> None:
        if self.state != "off" or self.reason is None:
            warnings.warn(f"dlpt: PC sampling is off: {reason}", RuntimeWarning, stacklevel=4)
        self.state = "off"
        self.reason = reason

    # -- what the session says ---------------------------------------------------------------

    def meta(self) -> dict[str, Any]:
        """``meta.pc_sampling`` (dlpt.model.meta.PcSampling)."""
        out: dict[str, Any] = {"steps": self.steps, "period_log2": PERIOD_LOG2, "reason": self.reason}
        if self.first_step is not None:
            out["first_step"] = self.first_step
            out["last_step"] = self.last_step if self.last_step is not None else self.first_step
        raw = self._raw
        if raw is None:
            return out
        for key in (
            "total_samples",
            "dropped_samples",
            "non_user_samples",
            "pcs",
            "pcs_resolved",
            "pcs_without_cubin",
        ):
            out[key] = int(raw[key])
        out["hardware_buffer_full"] = bool(raw["hardware_buffer_full"])
        # Why a kernel's PCs got no line (CUPTI's answer): library kernels have no line info; a
        # Triton kernel without lines is worth a look (phase 1 saw one on the H100).
        out["unresolved"] = {str(k): str(v) for k, v in dict(raw.get("unresolved") or {}).items()}
        rows = normalize_rows(raw["lines"])
        out["kernels"] = summarize(rows)
        try:
            out["model_lines"] = [
                {"kernel": s.kernel, "samples": s.samples, "unassigned": s.unassigned, "lines": s.shares()}
                for s in split_kernel_lines(rows)
            ]
        except Exception as e:  # noqa: BLE001 - the per-kernel lines stand without the split
            out["model_lines"] = []
            out["reason"] = f"the model-line split failed: {type(e).__name__}: {e}"
        return out


#: CUPTI's reasons that are not a sample's stall reason: counters it lists among them.
PSEUDO_REASONS = frozenset({"sample_count", "samples_data_dropped"})
NOT_ISSUED = "_not_issued"


def sample_reasons(stalls: Mapping[str, int]) -> dict[str, int]:
    """A PC's stall reasons as each sample has exactly one: CUPTI's ``X_not_issued`` counts are a
    subset of ``X``'s (the samples of ``X`` in which the warp issued nothing; Nsight Compute shows
    them as a second view), and ``sample_count``/``samples_data_dropped`` are counters, so both are
    left out. The reasons kept sum to the PC's samples: on the H100 log of phase 1 they summed to
    CUPTI's ``totalSamples`` minus its non-user-kernel samples exactly (391,346 + 27,476 =
    418,822), while summing every reason counted 1.9x the samples of a GEMM."""
    return {
        k: int(n) for k, n in stalls.items() if n and k not in PSEUDO_REASONS and not k.endswith(NOT_ISSUED)
    }


def normalize_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The native rows with ``stalls`` reduced to :func:`sample_reasons` and ``samples`` their
    sum (the native sum counts every reason CUPTI lists); rows left without samples dropped."""
    out = []
    for r in rows:
        stalls = sample_reasons(r.get("stalls") or {})
        n = sum(stalls.values())
        if n:
            out.append({**r, "stalls": stalls, "samples": n})
    return out


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per kernel (most sampled first): samples, stall reasons, and its source lines as
    ``[file, line, samples, {reason: samples}]`` (file "" for PCs without line info). ``rows``:
    :func:`normalize_rows`'s."""
    kernels: dict[str, dict[str, Any]] = {}
    for r in rows:
        k = kernels.setdefault(
            r["function"], {"name": r["function"], "samples": 0, "stalls": defaultdict(int), "lines": []}
        )
        k["samples"] += int(r["samples"])
        for reason, n in r["stalls"].items():
            k["stalls"][reason] += int(n)
        k["lines"].append(
            [r["file"], int(r["line"]), int(r["samples"]), {s: int(n) for s, n in r["stalls"].items()}]
        )
    out = sorted(kernels.values(), key=lambda k: -k["samples"])[:MAX_KERNELS]
    for k in out:
        k["stalls"] = dict(sorted(k["stalls"].items(), key=lambda kv: -kv[1]))
        k["lines"] = sorted(k["lines"], key=lambda ln: -ln[2])[:MAX_LINES_PER_KERNEL]
    return out


def _inductor_provenance_on() -> dict[str, Any]:
    """Inductor records kernel -> FX stack traces (provenance tracking) for kernels compiled from
    now on, unless the user chose a level; its compile caches are bypassed meanwhile (a cached
    compile runs no codegen, so records nothing). Compile-time cost only. Returns what was
    changed, to undo at stop."""
    changed: dict[str, Any] = {}
    try:
        import torch._functorch.config as functorch_config
        import torch._inductor.config as inductor_config

        if inductor_config.trace.provenance_tracking_level == 0:
            inductor_config.trace.provenance_tracking_level = 1
            changed["provenance"] = 0
            for mod, key in (
                (inductor_config, "fx_graph_cache"),
                (functorch_config, "enable_autograd_cache"),
            ):
                if getattr(mod, key, False):
                    changed[key] = True
                    setattr(mod, key, False)
    except Exception:  # noqa: BLE001 - no Inductor: no model-line split, the rest holds
        pass
    return changed


def _inductor_provenance_off(changed: dict[str, Any]) -> None:
    try:
        import torch._functorch.config as functorch_config
        import torch._inductor.config as inductor_config

        if "provenance" in changed:
            inductor_config.trace.provenance_tracking_level = changed["provenance"]
        if "fx_graph_cache" in changed:
            inductor_config.fx_graph_cache = changed["fx_graph_cache"]
        if "enable_autograd_cache" in changed:
            functorch_config.enable_autograd_cache = changed["enable_autograd_cache"]
    except Exception:  # noqa: BLE001 - best effort, as when it was set
        pass
