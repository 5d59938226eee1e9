"""The recorders of a profile (:class:`dlpt.capture.recorder.Recorder`), in the
order the profile drives them (``Profile._make_recorders``, dlpt/capture/profiler.py):

- hooks into the program, started before the native core, undone first at stop:
  :class:`OptimizerSteps`, :class:`Collectives`, :class:`BackwardRecords`, :class:`StepCalls`,
  :class:`CompileEvents` (Dynamo's callbacks; stopped after the core, which may still report
  compiled code);
- capture beside the core, started once it runs and stopped before it exports its tree:
  :class:`Memory` (its last step closes first), :class:`PcSamples` (CUPTI is still ours),
  :class:`HostSamples` (the sampler is joined before the tree is exported; its result is taken
  after the core's stop, once the final flush classified every epoch), :class:`FrameAnchors`
  (a ``sys.monitoring`` tool id lent to the core's frame walks, given back at unhook).

Each wraps the module that does the work; what it contributes to the session is written here,
beside how it starts and stops.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

from dlpt.capture import frame_anchors, native
from dlpt.capture.backward_records import BackwardRecordsPause
from dlpt.capture.compile import dynamo, failures
from dlpt.capture.host import HostCapture
from dlpt.capture.host_session import add_host_metrics, host_meta
from dlpt.capture.memory import MemoryCapture, MemoryExport, merge_into
from dlpt.capture.pc_annotate import annotate_session
from dlpt.capture.pc_sampling import PcSampling
from dlpt.capture.ranks.annotate import annotate_comm
from dlpt.capture.ranks.env import current as current_rank
from dlpt.capture.ranks.env import distributed_meta
from dlpt.capture.ranks.pycomm import CollectiveHooks
from dlpt.capture.recorder import Recorder, StopContext
from dlpt.capture.schedule import StepSchedule
from dlpt.capture.step_on import StepOn
from dlpt.capture.steps import OptimizerHook
from dlpt.capture.timeline import timeline_meta
from dlpt.model.session import Session

__all__ = [
    "BackwardRecords",
    "Collectives",
    "CompileEvents",
    "FrameAnchors",
    "HostSamples",
    "Memory",
    "OptimizerSteps",
    "PcSamples",
    "StepCalls",
    "backward_ops",
]


class FrameAnchors(Recorder):
    """The core's walks of Python frames may stop at an outer frame whose activation has not
    changed (dlpt/capture/frame_anchors.py): a ``sys.monitoring`` tool id, lent once the core
    runs, given back first at stop (the events switched off, every anchor void)."""

    def __init__(self, core: ModuleType) -> None:
        self._core = core
        self._tool: int | None = None

    def began(self, gpu: bool) -> None:
        try:
            self._tool = frame_anchors.enable(self._core)
        except Exception as e:  # noqa: BLE001 - never the program's failure: walks go to the root
            warnings.warn(f"dlpt: frame anchors off ({type(e).__name__}: {e})", RuntimeWarning, stacklevel=2)

    def unhook(self) -> None:
        tool, self._tool = self._tool, None
        frame_anchors.disable(self._core, tool)


class OptimizerSteps(Recorder):
    """Every ``torch.optim`` step is a step boundary (``callback``)."""

    def __init__(self, callback: Callable[[], None]) -> None:
        self._callback = callback
        self._hook: OptimizerHook | None = None

    def start(self) -> None:
        self._hook = OptimizerHook(self._callback)

    def unhook(self) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None


class Collectives(Recorder):
    """Python-level collectives on CPU process groups, wrapped (what each call moved), and the
    communication in the tree marked (``comm_ns``, ``comm_wait_ns``, bytes); ``meta.distributed``
    for one of several ranks."""

    def __init__(self) -> None:
        self.hooks = CollectiveHooks()

    def start(self) -> None:
        self.hooks.install()

    def unhook(self) -> None:
        self.hooks.remove()

    def into_nodes(self, nodes: list[dict[str, Any]]) -> None:
        annotate_comm(nodes, self.hooks.table())

    def into_meta(self, meta: dict[str, Any]) -> None:
        distributed = distributed_meta(current_rank() or self.hooks.rank, self.hooks.backends)
        if distributed is not None:
            meta["distributed"] = distributed


def backward_ops(nested_ops: bool, flops: bool) -> str:
    """Whether backward passes make aten-op records: "paused" (no: backward nodes alone, see
    dlpt/capture/backward_records.py) or "kept" (nested ops or FLOPs asked for, or one of
    several ranks: collectives in backward hooks are c10d ops)."""
    rank = current_rank()
    if nested_ops or flops or (rank is not None and rank.distributed):
        return "kept"
    return "paused"


class BackwardRecords(Recorder):
    """``mode`` "paused": backward passes record no aten ops (the core splits them off:
    ``split_backward``); ``meta.capture.backward_ops`` says which."""

    def __init__(self, core: ModuleType, mode: str) -> None:
        self.mode = mode
        self._core = core
        self._pause: BackwardRecordsPause | None = None

    def start(self) -> None:
        if self.mode == "paused":
            self._pause = BackwardRecordsPause(
                self._core.pause_function_records, self._core.resume_function_records
            )
            self._pause.install()

    def unhook(self) -> None:
        if self._pause is not None:
            self._pause.remove()
            self._pause = None

    def into_meta(self, meta: dict[str, Any]) -> None:
        meta["capture"]["backward_ops"] = self.mode


class StepCalls(Recorder):
    """``step_on``: each outermost call of ``spec`` is a step (``begin``/``end`` at its edges);
    ``meta.steps.step_on*`` say what was wrapped and which made the steps."""

    def __init__(self, spec: str, begin: Callable[[], None], end: Callable[[int], None]) -> None:
        self.spec = spec
        self._begin, self._end = begin, end
        self._step_on: StepOn | None = None
        self._matched: list[str] = []
        self._choice: dict[str, Any] = {}

    def start(self) -> None:
        self._step_on = StepOn(self.spec, self._begin, self._end)
        self._step_on.start()

    def unhook(self) -> None:
        if self._step_on is not None:
            self._step_on.stop()
            self._matched = self._step_on.matched
            self._choice = {"step_on_chosen": self._step_on.chosen, "step_on_ignored": self._step_on.ignored}
            self._step_on = None

    def into_meta(self, meta: dict[str, Any]) -> None:
        steps = meta["steps"]
        steps["step_on"] = self.spec
        steps.update(self._choice)
        steps["step_on_matched"] = list(self._matched)


class CompileEvents(Recorder):
    """torch.compile's events (``meta.compile``) and the failures of dlpt's compile integration
    while the profile ran (``meta.capture.compile_failures``, the line map's at assembly
    included)."""

    def __init__(self) -> None:
        self.events = dynamo.CompileEvents()
        self._before: dict[str, int] = {}
        self._compile: list[dict[str, Any]] = []

    def start(self) -> None:
        self._before = failures.snapshot()
        self.events.start()

    def ended(self) -> None:
        self._compile = self.events.stop()

    def into_meta(self, meta: dict[str, Any]) -> None:
        meta["compile"] = self._compile
        meta["capture"]["compile_failures"] = failures.since(self._before)


class Memory(Recorder):
    """``memory=True``: what each line allocates and holds (:mod:`dlpt.capture.memory`)."""

    def __init__(self, core: ModuleType) -> None:
        self._core = core
        self._capture: MemoryCapture | None = None
        self._export: MemoryExport | None = None
        self._live = False  # between began and stop: steps reach the capture (never after its stop)

    def began(self, gpu: bool) -> None:
        self._capture = MemoryCapture.start(self._core)
        self._live = True
        if not self._capture.enabled:
            # stacklevel: the program's call of start() (began <- _start <- start <- program).
            warnings.warn(
                f"dlpt: memory capture is off: {self._capture.reason}", RuntimeWarning, stacklevel=4
            )

    def on_call_begin(self) -> None:
        if self._live and self._capture is not None:
            self._capture.step_begin()

    def on_step(self, schedule: StepSchedule) -> None:
        if self._live and self._capture is not None:
            self._capture.on_step(schedule)

    def stop(self, ctx: StopContext) -> None:
        self._live = False
        if self._capture is not None:
            # A run without step boundaries is one counted step (as the native core counts it).
            self._export = self._capture.stop(
                run_as_step=ctx.schedule.source is None, restored_cut=ctx.schedule.restored_cut
            )

    def into_table(self, table: list[dict[str, Any]], raw: dict[str, Any]) -> None:
        if self._capture is not None:
            merge_into(table, self._export)  # by the core's node ids, before line mapping renumbers

    def into_meta(self, meta: dict[str, Any]) -> None:
        if self._capture is not None:
            meta["memory"] = self._capture.meta(self._export)


class PcSamples(Recorder):
    """``pc_sampling=N``: CUPTI PC sampling for ``steps`` steps after the warm-up, when the core
    captures the GPU (``meta.pc_sampling``; the samples put beside the kernel and line nodes)."""

    def __init__(
        self, steps: int, core: ModuleType, synchronize: Callable[[], None], keep_source_text: bool
    ) -> None:
        self.steps = steps
        self._core, self._sync, self._text = core, synchronize, keep_source_text
        self._pcs: PcSampling | None = None
        self._meta: dict[str, Any] = {}

    def began(self, gpu: bool) -> None:
        if gpu:
            self._pcs = PcSampling(self.steps, self._core, native.cupti_candidates(), self._sync)
            self._pcs.start()

    def on_step(self, schedule: StepSchedule) -> None:
        if self._pcs is not None:
            self._pcs.on_step(schedule)

    def stop(self, ctx: StopContext) -> None:
        if self._pcs is not None:  # before the core's stop: CUPTI is still ours
            self._pcs.stop()
            self._meta = self._pcs.meta()
            self._pcs = None
        else:
            self._meta = {"steps": self.steps, "reason": "GPU capture is off"}

    def into_meta(self, meta: dict[str, Any]) -> None:
        if self._meta:
            meta["pc_sampling"] = self._meta

    def into_session(self, session: Session) -> None:
        """PC samples beside the kernel and model-line nodes (dlpt.capture.pc_annotate); a
        failure is said in ``meta.pc_sampling.reason``, never raised (the samples stay in the
        meta block)."""
        if not session.meta.get("pc_sampling"):
            return
        try:
            annotate_session(session.nodes, session.meta, self._text)
        except Exception as e:  # noqa: BLE001 - the profile stands without the node extras
            pcs = session.meta["pc_sampling"]
            pcs["reason"] = pcs.get("reason") or f"PC samples not put on the tree: {type(e).__name__}: {e}"


class HostSamples(Recorder):
    """The host sampler and the timeline window (:mod:`dlpt.capture.host`): host time per line
    (``meta.host``), the timeline (``meta.timeline``)."""

    def __init__(self, sample_hz: int, timeline: int, schedule: StepSchedule) -> None:
        self.capture = HostCapture(sample_hz, timeline)
        self.timeline = timeline
        self._schedule = schedule
        self._began = False
        self._result: dict[str, Any] | None = None
        self._host: dict[str, Any] | None = None
        self._timeline: dict[str, Any] | None = None
        # The run's number of the window's first step: the window opens at the boundary where
        # the warm-up ended (or at the start, when there is none), so it is the step after it.
        self._first_step: int | None = None

    def began(self, gpu: bool) -> None:
        self._began = True
        if self._schedule.warmup.over:
            self._first_step = self._schedule.seen + 1
        try:
            self.capture.start(timeline_armed=self._schedule.warmup.over)
        except Exception as e:  # noqa: BLE001 - the rest of the profile does not need it: said, not raised
            warnings.warn(f"dlpt: host sampling could not start: {e}", RuntimeWarning, stacklevel=4)

    def before_step(self) -> None:
        if self.timeline:
            self.capture.note_threads()

    def on_warm(self) -> None:
        """The timeline keeps the counted steps from the next boundary on: the first of them is
        the step after the one that just ended (the schedule counted it in ``seen``)."""
        self._first_step = self._schedule.seen + 1
        try:
            self.capture.arm_timeline()
        except Exception as e:  # noqa: BLE001 - a timeline that cannot open must not stop the program
            warnings.warn(f"dlpt: the timeline could not start: {e}", RuntimeWarning, stacklevel=3)

    def stop(self, ctx: StopContext) -> None:
        if self._began:
            self.capture.stop()  # the sampler is joined before the core exports the tree

    def ended(self) -> None:
        if self._began:
            self._result = self.capture.result()  # after the core's stop: its epochs are all classified

    def into_table(self, table: list[dict[str, Any]], raw: dict[str, Any]) -> None:
        # Host time and the timeline name the core's node ids: taken in before renumbering.
        host = self._result
        if host is None:
            return
        add_host_metrics(table, host.get("cells") or [], host.get("cells_outside") or [])
        self._host = host_meta(table, host)
        if host.get("timeline"):
            self._timeline = timeline_meta(
                table, host["timeline"], host.get("thread_names") or {}, bool(raw.get("gpu"))
            )

    def into_meta(self, meta: dict[str, Any]) -> None:
        if self._host is not None:
            meta["host"] = self._host
        if self._timeline is not None:
            if self._first_step is not None:
                self._timeline["first_step"] = self._first_step
            meta["timeline"] = self._timeline
