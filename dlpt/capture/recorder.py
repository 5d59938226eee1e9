"""One interface for everything a profile records besides the native core's tree: a
:class:`Recorder` (the optimizer-step hook, the ``step_on`` wrappers, the backward-records
pause, the collective wrappers, Dynamo's compile events, memory, the host sampler, PC sampling:
:mod:`dlpt.capture.recorders`).

:class:`dlpt.capture.profiler.Profile` drives every recorder through the same steps, each one
in the order of its list, and :func:`dlpt.capture.assemble.build_session` takes what they
contribute; a new recorder is one class, no edit to the profile's lifecycle. A recorder implements
the steps it needs (the others do nothing):

At start (set-up; the profile's clock has not started):

- :meth:`start`: before the native core starts: hooks into the program (wrapped functions,
  callbacks). A failure here or in the core's start undoes every started recorder
  (:meth:`unhook`, then :meth:`ended`) and raises.
- :meth:`began`: once the core runs: capture beside it (memory, the sampler, PC sampling).

While the program runs (step lock held):

- :meth:`before_step` and :meth:`on_step`: a step boundary, before and after the schedule
  classified it; :meth:`on_call_begin`: an outermost ``step_on`` call begins;
  :meth:`on_warm`: the warm-up is over.

At stop, in this order:

- :meth:`unhook`: first (the program's calls after this cost nothing); also in a forked child,
  whose parent's profile is not its own.
- :meth:`stop`: the last step closed, before the core exports its tree (its data is complete).
- :meth:`ended`: after the core stopped (what arrives in its final flush is in).

Into the session (:func:`dlpt.capture.assemble.build_session`), in this order:

- :meth:`into_table`: the core's node table, indexed by the core's node ids (before line
  mapping renumbers them).
- :meth:`into_nodes`: the session's nodes, after line mapping.
- :meth:`into_meta`: the session's meta keys of this recorder.
- :meth:`into_session`: the built session (what needs all of it).

Thread contract: every step is called with the GIL held; the step callbacks under the
profile's step lock, from whatever thread ended the step; the others on the thread that starts
or stops the profile.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dlpt.capture.schedule import StepSchedule
    from dlpt.model.session import Session

__all__ = ["Recorder", "StopContext"]


class StopContext:
    """What recorders may read while the profile stops and the session is built: the step
    schedule and whether the core's capture had the GPU."""

    def __init__(self, schedule: StepSchedule, gpu: bool) -> None:
        self.schedule = schedule
        self.gpu = gpu


class Recorder:
    """Base of every recorder: each step does nothing unless the recorder needs it."""

    def start(self) -> None:
        """Before the native core starts."""

    def began(self, gpu: bool) -> None:
        """The native core runs; ``gpu``: whether it captures the GPU."""

    def before_step(self) -> None:
        """A step boundary, before the schedule handles it."""

    def on_step(self, schedule: StepSchedule) -> None:
        """A step boundary, after ``schedule`` handled it."""

    def on_call_begin(self) -> None:
        """An outermost call of the ``step_on`` function begins (a step starts)."""

    def on_warm(self) -> None:
        """The warm-up is over."""

    def unhook(self) -> None:
        """First at stop: undo hooks into the program (safe to call again, or unstarted)."""

    def stop(self, ctx: StopContext) -> None:
        """Before the native core exports its tree."""

    def ended(self) -> None:
        """After the native core stopped."""

    def into_table(self, table: list[dict[str, Any]], raw: dict[str, Any]) -> None:
        """Add to the core's node table (by the core's node ids); ``raw``: the core's stop()."""

    def into_nodes(self, nodes: list[dict[str, Any]]) -> None:
        """Add to the session's nodes, after line mapping (in place)."""

    def into_meta(self, meta: dict[str, Any]) -> None:
        """Write this recorder's meta keys."""

    def into_session(self, session: Session) -> None:
        """Complete the built session (what needs all of it)."""
