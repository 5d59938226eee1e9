"""Recorders behind one interface (:mod:`dlpt.capture.recorder`): a profile drives
every recorder through the same steps, in the documented order, and the session takes what each
contributes; a recorder added to a profile is one class, no edit to the profile's lifecycle. Real
capture on the CPU."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch

from dlpt.capture.profiler import Profile
from dlpt.capture.recorder import Recorder, StopContext
from dlpt.capture.recorders import Collectives, CompileEvents, HostSamples, OptimizerSteps
from dlpt.capture.schedule import StepSchedule
from dlpt.model.session import Session


class Logging(Recorder):
    """Records each step it is driven through, and contributes to every part of the session."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def start(self) -> None:
        self.log.append("start")

    def began(self, gpu: bool) -> None:
        self.log.append("began")

    def before_step(self) -> None:
        self.log.append("before_step")

    def on_step(self, schedule: StepSchedule) -> None:
        self.log.append(f"on_step {schedule.seen}")

    def unhook(self) -> None:
        self.log.append("unhook")

    def stop(self, ctx: StopContext) -> None:
        self.log.append(f"stop (steps seen {ctx.schedule.seen})")

    def ended(self) -> None:
        self.log.append("ended")

    def into_table(self, table: list[dict[str, Any]], raw: dict[str, Any]) -> None:
        self.log.append("into_table")
        table[0]["x"] = {"recorded_by": "test"}

    def into_nodes(self, nodes: list[dict[str, Any]]) -> None:
        self.log.append("into_nodes")

    def into_meta(self, meta: dict[str, Any]) -> None:
        self.log.append("into_meta")
        meta["steps"]["recorder_saw"] = True

    def into_session(self, session: Session) -> None:
        self.log.append("into_session")


class Recorded(Profile):
    """A profile with one more recorder: the profile's own list, plus the logging one."""

    def __init__(self, log: list[str], **kw: Any) -> None:
        super().__init__(**kw)
        self.log = log

    def _make_recorders(self, *args: Any) -> list[Recorder]:
        sources = super()._make_recorders(*args)
        self.kinds = [type(s).__name__ for s in sources]
        return [*sources, Logging(self.log)]


def test_a_profile_drives_every_source_through_the_same_steps_in_order() -> None:
    log: list[str] = []
    prof = Recorded(log, gpu=False, calibrate=False, skip_first=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prof.start()
        for _ in range(2):
            torch.ones(8, 8) @ torch.ones(8, 8)
            prof.step()
        session = prof.stop()
    assert session is not None
    assert log == [
        "start",
        "began",
        "before_step",
        "on_step 1",
        "before_step",
        "on_step 2",
        "unhook",
        "stop (steps seen 2)",
        "ended",
        "into_table",
        "into_nodes",
        "into_meta",
        "into_session",
    ]
    # What it contributed is in the session: on the core's table (the root), and in the meta.
    assert session.nodes[0]["x"]["recorded_by"] == "test" and session.meta["steps"]["recorder_saw"]
    # The profile's own sources, hooks first: memory, PC sampling and step_on only when asked for.
    assert prof.kinds == [
        "OptimizerSteps",
        "Collectives",
        "BackwardRecords",
        "CompileEvents",
        "HostSamples",
        "FrameAnchors",
    ]


def test_a_source_that_fails_to_start_undoes_the_started_ones() -> None:
    log: list[str] = []

    class Broken(Recorder):
        def start(self) -> None:
            raise RuntimeError("cannot hook")

    class WithBroken(Recorded):
        def _make_recorders(self, *args: Any) -> list[Recorder]:
            return [Logging(self.log), Broken()]

    prof = WithBroken(log, gpu=False)
    with pytest.raises(RuntimeError, match="cannot hook"):
        prof.start()
    assert log == ["start", "unhook", "ended"]  # the started one undone; nothing else ran
    again = Profile(gpu=False)  # and the process may profile again
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again.start()
        assert again.stop() is not None


def one_step(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x @ x)


def test_the_profile_sources_keep_their_meta_keys() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Profile(gpu=False, calibrate=False, skip_first=0, sample_hz=1000, step_on="one_step") as prof:
            for _ in range(3):
                one_step(torch.ones(16, 16))
    meta = prof.session.meta
    assert meta["capture"]["backward_ops"] == "paused" and "compile_failures" in meta["capture"]
    assert meta["compile"] == [] and meta["host"]["sampling"] is True
    steps = meta["steps"]
    assert steps["step_on"] == "one_step" and steps["step_on_matched"] == [f"{__name__}:one_step"]
    assert steps["profiled"] == 3 and steps["source"] == "call"
    assert isinstance(OptimizerSteps(lambda: None), Recorder)
    assert all(issubclass(c, Recorder) for c in (Collectives, CompileEvents, HostSamples))
