"""``dlpt.profile``: start and stop capture, and turn what the native core collected into a
:class:`~dlpt.session.Session`.

Thread contract: start/stop/step are called from the profiled program's thread with the GIL held.
Capture itself happens in the native core on every thread (see csrc/).
"""

from __future__ import annotations

import datetime
import functools
import os
import platform
import sys
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from dlpt.capture import native
from dlpt.capture.exec_frames import mark_library_exec_frames
from dlpt.compile import failures
from dlpt.compile.dynamo import CompileEvents
from dlpt.compile.inductor_lines import map_generated_frames
from dlpt.errors import ProfilerBusyError, UsageError
from dlpt.insights.annotate import annotate, recorded_ops
from dlpt.insights.stop import finish_session
from dlpt.session import Session
from dlpt.steps import StepWindow, install_optimizer_hook

P = ParamSpec("P")
R = TypeVar("R")

_running_lock = threading.Lock()
_running: profile | None = None


def _dlpt_version() -> str:
    from dlpt import __version__

    return __version__


def _check_count(name: str, value: Any, allow_none: bool) -> None:
    if value is None and allow_none:
        return
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or value < 0
        or (name == "active" and value == 0)
    ):
        raise UsageError(
            f"{name} must be {'a positive' if name == 'active' else 'a non-negative'} integer, got {value!r}"
        )


def _cuda_devices() -> list[dict[str, Any]]:
    import torch

    if not torch.cuda.is_available():
        return []
    out = []
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        out.append({"index": i, "name": p.name, "capability": f"{p.major}.{p.minor}"})
    return out


def _synchronize_all() -> None:
    """Wait for all GPU work, so the window holds exactly what was launched inside it."""
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        for i in range(torch.cuda.device_count()):
            torch.cuda.synchronize(i)


class profile:
    """Profile the code inside: ``with dlpt.profile() as prof: ...`` or ``@dlpt.profile()``.

    Args:
        skip_first: steps to leave out before recording (warm-up, torch.compile).
        active: steps to record after those (default: all the rest).
        gpu: capture GPU kernels, copies, memsets and syncs through CUPTI. Without a GPU, or if
            another profiler holds CUPTI, dlpt says so and records CPU-side attribution only.
        nested_ops: also record the ops that run inside other ops (``aten::mm`` under
            ``aten::matmul``, ``aten::mm`` under ``MmBackward0``). Off by default: kernels land on
            the same lines either way, and recording every nested op costs several times more
            per step on launch-bound work.
        flops: record the input shapes of the ops with a FLOP formula in torch's registry (and of
            elementwise ops, for their bytes), for FLOPs and TFLOP/s per line, MFU and the
            roofline bound. Off by default: torch then packs every op's arguments, which costs
            time on every op (README: "Why is this line slow").

    After the block, ``prof.session`` holds the result; ``prof.print()`` shows it and
    ``prof.save(path)`` writes it for ``python -m dlpt --load``.
    """

    def __init__(
        self,
        skip_first: int = 0,
        active: int | None = None,
        gpu: bool = True,
        nested_ops: bool = False,
        flops: bool = False,
    ) -> None:
        _check_count("skip_first", skip_first, allow_none=False)
        _check_count("active", active, allow_none=True)
        self.skip_first = skip_first
        self.active = active
        self.gpu = gpu
        self.nested_ops = bool(nested_ops)
        self.flops = bool(flops)
        self._session: Session | None = None
        self._window: StepWindow | None = None
        self._hook: Any = None
        self._start_info: dict[str, Any] = {}
        self._compile_events = CompileEvents()
        self._failures_before: dict[str, int] = {}
        self._meta: dict[str, Any] = {}

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> profile:
        global _running
        with _running_lock:
            if _running is not None:
                raise ProfilerBusyError(
                    "a dlpt profile is already running in this process; stop it before starting another"
                )
            _running = self
        try:
            self._start()
        except BaseException:
            with _running_lock:
                _running = None
            raise
        return self

    def _start(self) -> None:
        import torch

        C = native.core()
        self._session = None
        devices = _cuda_devices() if self.gpu else []
        want_gpu = bool(self.gpu and devices)
        _synchronize_all()
        self._meta = {
            "argv": list(sys.argv),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "dlpt": _dlpt_version(),
            "started_at": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "devices": devices,
        }
        self._window = StepWindow(self.skip_first, self.active, C.set_collecting)
        self._start_info = C.start(
            want_gpu,
            native.cupti_candidates() if want_gpu else [],
            self._window.collecting,
            nested_ops=self.nested_ops,
            flops_ops=recorded_ops() if self.flops else [],
        )
        if not self.gpu:
            reason = "GPU capture disabled (gpu=False / --no-gpu)"
        elif not devices:
            reason = "no CUDA GPU available"
        else:
            reason = self._start_info["reason"]
            if reason:
                warnings.warn(
                    f"dlpt: GPU capture is off, CPU-side attribution only: {reason}",
                    RuntimeWarning,
                    stacklevel=3,
                )
        self._meta["gpu"] = {
            "enabled": bool(self._start_info["gpu"]),
            "reason": reason,
            "cupti": self._start_info.get("cupti_path") or None,
        }
        self._hook = install_optimizer_hook(lambda: self._on_step("optimizer"))
        self._failures_before = failures.snapshot()
        self._compile_events.start()

    def step(self) -> None:
        """Mark the end of a training step (optional: optimizer steps are detected anyway)."""
        if _running is self:
            self._on_step("manual")

    def _on_step(self, source: str) -> None:
        C = native.core()
        C.drain_code_refs()
        if self._window is not None:
            self._window.on_step(source)
        C.mark_step()  # after the window decided: the mark says whether the next step is recorded

    def stop(self) -> Session:
        """Stop capture, flush all GPU activity and build the session."""
        global _running
        if _running is not self:
            raise UsageError("this dlpt profile is not running")
        t0 = time.perf_counter()
        try:
            if self._hook is not None:
                self._hook.remove()
                self._hook = None
            # Stop recording first: our own synchronisation below is not the program's.
            native.core().set_collecting(False)
            try:
                _synchronize_all()
            except Exception as e:  # noqa: BLE001 - a broken CUDA context must not lose the CPU-side profile
                warnings.warn(
                    f"dlpt: could not synchronise the GPU before stopping: {e}", RuntimeWarning, stacklevel=1
                )
            assert self._window is not None
            wall_ns = self._window.close()
            raw = native.core().stop()
            self._meta["compile"] = self._compile_events.stop()
        finally:
            with _running_lock:
                _running = None
        self._session = self._build_session(raw, wall_ns, time.perf_counter() - t0)
        return self._session

    def _build_session(self, raw: dict[str, Any], wall_ns: int, stop_s: float) -> Session:
        assert self._window is not None
        c = raw["counters"]
        table = native.to_nodes(raw["nodes"], raw.get("collectives"))
        # Before line mapping renumbers the nodes: op_inputs name nodes by the core's ids.
        flops = annotate(table, raw.get("op_inputs") or []) if self.flops else None
        mapped = map_generated_frames(table)
        nodes = mark_library_exec_frames(mapped.nodes)
        meta = dict(self._meta)
        if flops is not None:
            meta["flops"] = flops
        if raw.get("gpu_steps"):
            meta["gpu_steps"] = native.gpu_steps(raw["gpu_steps"])
        if raw.get("gpu_comm_ns"):
            # Collective-communication kernels (NCCL): their busy time per device, and the part of
            # it with no other GPU work running on that device (exposed).
            meta["gpu_comm_ns"] = dict(raw["gpu_comm_ns"])
            meta["gpu_comm_exposed_ns"] = dict(raw["gpu_comm_exposed_ns"])
        meta.update(
            {
                "wall_ns": wall_ns,
                "steps": self._window.meta(),
                "step_wall_ns": list(self._window.step_wall_ns),
                "gpu_busy_ns": dict(raw["gpu_busy_ns"]),
                "api": native.api_table(raw["api"]),
                "dropped": {
                    "activity_records": c["dropped_records"],
                    "correlations_missing": max(0, c["submitted"] - c["completed"]),
                    "tree_overflow": c["tree_overflow"],
                },
                "unattributed": {"gpu_ns": c["unknown_gpu_ns"], "records": c["unknown_correlation"]},
                "cuda_graphs": {
                    "replay_gpu_ns": c.get("graph_replay_ns", 0),
                    "uncaptured_gpu_ns": c.get("graph_unmapped_ns", 0),
                    "nodes_captured": c.get("graph_nodes_captured", 0),
                },
                "capture": dict(
                    c,
                    flush_s=raw["flush_s"],
                    stop_s=stop_s,
                    pid=os.getpid(),
                    compile_failures=failures.since(self._failures_before),
                    inductor_unmapped_frames=mapped.unmapped_frames,
                    inductor_unmapped_kernels=mapped.unmapped_kernels,
                ),
            }
        )
        session = Session(nodes, meta)
        finish_session(session)  # meta.suggestions (and the pinned-copy probe they may need)
        return session

    # -- context manager / decorator --------------------------------------------------------

    def __enter__(self) -> profile:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __call__(self, fn: Callable[P, R]) -> Callable[P, R]:
        """``@dlpt.profile(...)``: profile each call of ``fn`` and print the report after it."""

        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            self.start()
            try:
                return fn(*args, **kwargs)
            finally:
                self.stop()
                self.print()

        return wrapper

    # -- results -----------------------------------------------------------------------------

    @property
    def session(self) -> Session:
        """The recorded session (available once the profile stopped)."""
        if self._session is None:
            raise UsageError("the profile has no session yet: it is still running or never ran")
        return self._session

    def print(self, view: str = "tree", **options: Any) -> None:
        """Print the report (see :func:`dlpt.report.print_report` for ``options``)."""
        from dlpt.report import print_report

        print_report(self.session, view=view, **options)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the session as JSON; re-render later with ``python -m dlpt --load PATH``."""
        self.session.save(path)


def running() -> profile | None:
    """The profile running in this process, if any."""
    return _running
