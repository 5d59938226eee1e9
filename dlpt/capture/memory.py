"""Memory per line (``dlpt.profile(memory=True)``, ``--memory``): what each context allocated,
what it held at each step's peak of allocated memory, and what it held when an allocation failed.

The native side (csrc/memory/) receives torch's allocator reports (the hook torch.profiler's
``profile_memory`` uses; csrc/memory/torch_reporter.cpp says which torch internals and versions)
and attributes each allocation to the node a kernel launched at that moment would get. This
module steers it at the profile's step boundaries and turns its export into session data:

- node metrics (docs/session-format.md): ``mem_alloc_bytes`` and ``mem_allocs`` (allocated while
  recording), ``mem_peak_bytes`` (bytes of the node's blocks live at each counted step's peak of
  allocated memory, summed over those steps, so per step it is the mean), ``mem_oom_bytes`` (its
  bytes live when the first allocation failed) and ``mem_oom_request_bytes`` (on the context of
  that failed allocation: what it asked for);
- ``meta.memory``: per device the per-step peaks (allocated, reserved at that moment, peak
  reserved, the part traced to lines), the allocation failure, and what capture saw.

A block allocated in a forward op and freed in backward (a saved activation) stays on the forward
op's ``<forward>`` phase, under its forward line. Blocks allocated before recording started
(parameters, optimizer state of skipped steps) count in the allocator's totals but on no line.

Which allocator: the CUDA caching allocator reports always; the CPU allocator is followed only
when the program has no CUDA device (it reports only when asked, at a cost per CPU allocation), so
a GPU run's lines hold GPU memory and a CPU run's CPU memory. On the CPU torch logs one warning
the first time a tensor allocated before the profile is freed ("Memory block of unknown size was
allocated before the profiling started"): that is torch's CPU allocator, and harmless.

torch internals used here (checked against torch 2.11, 2.13 and 2.15): torch.profiler refuses to
start on a thread whose debug info holds any profiler state, dlpt's reporter included, so while
memory capture runs the module globals through which torch's profile classes enable and disable
themselves (``torch.autograd.profiler._enable_profiler`` / ``_disable_profiler``,
``torch.autograd.profiler_legacy._enable_profiler_legacy`` / ``_disable_profiler_legacy``) are
wrapped: the reporter steps aside before torch's state goes in and comes back after it left (see
:class:`TorchProfilerHandoff`). Allocations made while torch.profiler runs are torch.profiler's.

Thread contract: start, the step calls and stop run with the GIL held, serialised by the
profile's step lock (as the other step work is); the native side takes allocator events on any
thread (csrc/memory/tracker.h).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from dlpt.model.meta import MEMORY_STEP_PEAK

if TYPE_CHECKING:
    from dlpt.capture.schedule import StepSchedule

#: What the core's memory_stop() returns (typed in dlpt/_C.pyi, MemoryExport).
MemoryExport = dict[str, Any]

__all__ = ["MemoryCapture", "TorchProfilerHandoff", "device_label", "merge_into"]

#: c10::DeviceType values of the devices torch's allocators report, as torch prints them.
_DEVICE_TYPES = {0: "cpu", 1: "cuda", 12: "xpu", 13: "mps", 20: "privateuseone"}


def device_label(type_: int, index: int) -> str:
    """``cuda:0``, ``cpu`` (c10's device type value and index)."""
    name = _DEVICE_TYPES.get(type_, f"device{type_}")
    return name if index < 0 else f"{name}:{index}"


#: (module, enable, disable): the functions torch's profile classes push and pop their thread-local
#: profiler state with, called through these module globals.
_TORCH_PROFILER_SWITCHES = (
    ("torch.autograd.profiler", "_enable_profiler", "_disable_profiler"),
    ("torch.autograd.profiler_legacy", "_enable_profiler_legacy", "_disable_profiler_legacy"),
)


class TorchProfilerHandoff:
    """While installed, torch.profiler starting on the thread that runs memory capture takes
    dlpt's reporter out of the way first (``suspend``), and puts it back once it stopped
    (``resume``). A torch without one of these functions is left as it is (torch.profiler then
    refuses to start there, as it would with any other profiler running)."""

    def __init__(self, suspend: Callable[[], None], resume: Callable[[], None]) -> None:
        self._suspend, self._resume = suspend, resume
        self._patched: list[tuple[ModuleType, str, Any, Any]] = []  # module, name, original, wrapper

    def install(self) -> None:
        for module_name, enable, disable in _TORCH_PROFILER_SWITCHES:
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                continue
            on, off = getattr(module, enable, None), getattr(module, disable, None)
            if callable(on) and callable(off):
                self._patch(module, enable, self._enabling(on))
                self._patch(module, disable, self._disabling(off))

    def _patch(self, module: ModuleType, name: str, wrapper: Any) -> None:
        self._patched.append((module, name, getattr(module, name), wrapper))
        setattr(module, name, wrapper)

    def _enabling(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def enable(*args: Any, **kwargs: Any) -> Any:
            self._suspend()
            try:
                return original(*args, **kwargs)
            except BaseException:
                self._resume()  # it did not start: nothing of torch's is in the way
                raise

        return enable

    def _disabling(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def disable(*args: Any, **kwargs: Any) -> Any:
            try:
                return original(*args, **kwargs)
            finally:
                self._resume()

        return disable

    def remove(self) -> None:
        """Put torch's functions back (unless someone replaced ours since)."""
        for module, name, original, wrapper in reversed(self._patched):
            if getattr(module, name, None) is wrapper:
                setattr(module, name, original)
        self._patched = []


class MemoryCapture:
    """The memory side of one running profile: started after the native session, stopped before
    it (see :class:`dlpt.capture.profiler.Profile`)."""

    def __init__(self, core: ModuleType, track_cpu: bool) -> None:
        self._core = core
        self.track_cpu = track_cpu
        self._handoff = TorchProfilerHandoff(core.memory_suspend, core.memory_resume)
        self.enabled = False
        self.reason: str | None = None
        try:
            info = core.memory_start(track_cpu)
        except Exception as e:  # noqa: BLE001 - the profile goes on without memory, saying why
            self.reason = f"could not start: {e}"
            return
        self.enabled = bool(info["enabled"])
        self.reason = info["reason"]
        if self.enabled:
            self._handoff.install()

    @classmethod
    def start(cls, core: ModuleType) -> MemoryCapture:
        import torch

        return cls(core, track_cpu=not torch.cuda.is_available())

    def step_begin(self) -> None:
        """A step starts here (an outermost call of a ``step_on`` function): its peak starts now."""
        if self.enabled:
            self._core.memory_step_begin()

    def on_step(self, schedule: StepSchedule) -> None:
        """After ``schedule`` handled a step boundary: close the step (its peak counts when the
        schedule counted the step), unless the schedule ignored the boundary."""
        if not self.enabled or schedule.last_counted is None:
            return
        if schedule.last_cut:  # the warm-up dropped every step so far: their peaks too (kept apart)
            self._core.memory_restart_steps(schedule.last_cut_extends)
        self._core.memory_step_end(schedule.last_counted)

    def stop(self, run_as_step: bool, restored_cut: bool = False) -> MemoryExport | None:
        """Stop reporting and return what was recorded (None when capture never started).
        ``run_as_step``: no step was counted, so the recorded window is the run's one step;
        ``restored_cut``: the schedule undid its last cut, so the peaks it dropped count again."""
        if not self.enabled:
            return None
        self._handoff.remove()
        if restored_cut:
            self._core.memory_restore_steps()
        return self._core.memory_stop(run_as_step)

    def meta(self, raw: MemoryExport | None) -> dict[str, Any]:
        """``meta.memory`` (docs/session-format.md)."""
        out: dict[str, Any] = {"enabled": self.enabled, "reason": self.reason, "tracks_cpu": self.track_cpu}
        if raw is None:
            return out
        labels = [device_label(d["type"], d["index"]) for d in raw["devices"]]
        out["devices"] = {
            label: {
                "allocated": d["allocated"],
                "reserved": d["reserved"],
                "steps": [dict(zip(MEMORY_STEP_PEAK, row, strict=True)) for row in d["steps"]],
            }
            for label, d in zip(labels, raw["devices"], strict=True)
        }
        oom = raw["oom"]
        if oom is not None:
            out["oom"] = {
                "device": labels[oom["device"]] if oom["device"] < len(labels) else "",
                "requested": oom["requested"],
                "allocated": oom["allocated"],
                "reserved": oom["reserved"],
                "count": oom["count"],
            }
        out["events"] = raw["events"]
        out["missed_frees"] = raw["missed_frees"]
        return out


def merge_into(nodes: list[dict[str, Any]], raw: MemoryExport | None) -> None:
    """Add the memory metrics to the session nodes ``nodes`` (indexed by the core's node ids, as
    :func:`dlpt.capture.native.to_nodes` returns them). Devices are summed per node: a GPU run
    reports only its GPUs (one per rank, normally), a CPU run only the CPU."""
    if raw is None:
        return
    for node, _device, alloc_bytes, allocs, peak_bytes, oom_bytes in raw["nodes"]:
        if not 0 <= node < len(nodes):
            continue
        m = nodes[node]["m"]
        for key, value in (
            ("mem_alloc_bytes", alloc_bytes),
            ("mem_allocs", allocs),
            ("mem_peak_bytes", peak_bytes),
            ("mem_oom_bytes", oom_bytes),
        ):
            if value:
                m[key] = m.get(key, 0) + value
    oom = raw["oom"]
    if oom is not None and 0 <= oom["node"] < len(nodes) and oom["requested"]:
        m = nodes[oom["node"]]["m"]
        m["mem_oom_request_bytes"] = m.get("mem_oom_request_bytes", 0) + oom["requested"]
