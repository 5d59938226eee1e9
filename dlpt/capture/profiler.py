"""A profile's capture: start and stop it, and turn what the native core collected into a
:class:`~dlpt.model.session.Session` (the public ``dlpt.profile`` adds to it: :mod:`dlpt.api`).

One profile records at a time in a process. A profile started while another runs raises
:class:`~dlpt.errors.ProfilerBusyError`, except when the running one is *joinable* (the one
``python -m dlpt`` starts): then the new profile joins it instead of recording on its own (see
:class:`Profile`), so ``@dlpt.profile()`` in a script still works under the CLI.

A forked child inherits no running profile (:mod:`dlpt.capture.forking`); a profile that joined
a running one records nothing of its own (:mod:`dlpt.capture.joining`).

Everything recorded beside the native core is a recorder
(:mod:`dlpt.capture.recorder`; the list: :meth:`Profile._make_recorders`), driven
through the same steps in one order: a new recorder is one class, not an edit to start and stop.

Thread contract: start/stop are called with the GIL held, normally from the program's main
thread; steps may arrive from any thread (optimizer steps, ``step_on`` calls, ``prof.step()``)
and are serialised here (the step lock: the recorders' step callbacks run under it). Capture
itself happens in the native core on every thread (csrc/). :meth:`Profile.status` may be called
from any thread at any time: it only reads attributes.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
import warnings
import weakref
from typing import Any, Self

from dlpt.capture import joining, native
from dlpt.capture import running as running_profile
from dlpt.capture.assemble import RawCapture, build_session, gpu_meta, start_meta
from dlpt.capture.cpu_wait import ThreadWaits
from dlpt.capture.flops.annotate import recorded_ops
from dlpt.capture.forking import in_forked_child, started_elsewhere
from dlpt.capture.host import DEFAULT_SAMPLE_HZ
from dlpt.capture.op_mode import requested_op_mode
from dlpt.capture.options import CaptureOptions
from dlpt.capture.recorder import Recorder, StopContext
from dlpt.capture.recorders import (
    BackwardRecords,
    Collectives,
    CompileEvents,
    FrameAnchors,
    HostSamples,
    Memory,
    OptimizerSteps,
    PcSamples,
    StepCalls,
    backward_ops,
)
from dlpt.capture.running import weak_method
from dlpt.capture.schedule import CALL, StepSchedule
from dlpt.capture.status import ProfileStatus, status_of
from dlpt.errors import ProfilerBusyError, UsageError
from dlpt.files.rank_paths import rank_path
from dlpt.model.rank_of import session_rank
from dlpt.model.session import Session


def _synchronize_all() -> None:
    """Wait for all GPU work, so the window holds exactly what was launched inside it."""
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        for i in range(torch.cuda.device_count()):
            torch.cuda.synchronize(i)


class Profile:
    """A profile's capture: start, steps, stop into a :class:`~dlpt.model.session.Session`.

    The public :class:`dlpt.profile` (:mod:`dlpt.api`) is this class plus what comes after
    capture (the suggestions saved with the session, the report, the decorator).

    Its arguments are :class:`dlpt.capture.options.CaptureOptions`'s.

    After the block, ``prof.session`` holds the result; ``prof.print()`` shows it and
    ``prof.save(path)`` writes it for ``python -m dlpt --load``.

    A profile that joined a running one records nothing itself: its ``step()`` marks steps of the
    running profile and its ``stop()`` leaves that profile running (and returns None). The
    session is the running profile's, so it exists once that one stops (under ``python -m dlpt``:
    when the program ends). Until then ``prof.session`` raises UsageError saying so,
    ``prof.print()`` prints a one-line note (the CLI prints the report at the end) and
    ``prof.save(path)`` writes the file when the running profile stops.
    """

    def __init__(
        self,
        skip_first: int | None = None,
        active: int | None = None,
        calibrate: bool = True,
        gpu: bool = True,
        nested_ops: bool = False,
        step_on: str | None = None,
        sources: bool = True,
        flops: bool = False,
        joinable: bool = False,
        memory: bool = False,
        sample_hz: int = DEFAULT_SAMPLE_HZ,
        timeline: int = 0,
        pc_sampling: int | bool = False,
        exact_ops: bool | None = None,
    ) -> None:
        o = CaptureOptions(
            skip_first,
            active,
            calibrate,
            gpu,
            nested_ops,
            step_on,
            sources,
            flops,
            joinable,
            memory,
            sample_hz,
            timeline,
            pc_sampling,
            exact_ops,
        )
        self.options = o
        self.skip_first, self.active, self.calibrate, self.gpu = o.skip_first, o.active, o.calibrate, o.gpu
        self.nested_ops, self.step_on, self.sources, self.flops = o.nested_ops, o.step_on, o.sources, o.flops
        self.memory, self.joinable, self.sample_hz, self.timeline = (
            o.memory,
            o.joinable,
            o.sample_hz,
            o.timeline,
        )
        self.pc_sampling: int = int(o.pc_sampling)
        self.exact_ops = o.exact_ops
        self._op_mode = requested_op_mode(self.exact_ops)  # a bad $DLPT_OPS fails here
        self._session: Session | None = None
        self._schedule: StepSchedule | None = None
        self._step_lock = threading.Lock()
        # What this run records besides the native core (dlpt.capture.recorder), in the
        # order they are driven; made afresh by each start.
        self._recorders: list[Recorder] = []
        self._compile: CompileEvents | None = None  # one of them, for status()
        self._start_info: dict[str, Any] = {}
        self._meta: dict[str, Any] = {}
        self._pid = 0  # the process that started this profile
        self._joined: joining.Joined | None = None  # the running profile this one joined, if it did
        self._saves = joining.SavesAtStop()  # where profiles that joined this one asked to save
        self.gpu_usable = False  # after stop: whether the GPU may be measured (see stop)
        self._started_s: float | None = None  # perf_counter() when start() began (status)
        self._clock_started = False  # the set-up is done, the program's time runs (status)
        self._stopping = False

    @classmethod
    def of(cls, options: CaptureOptions) -> Self:
        """A profile recording what ``options`` say (a front end's parsed options)."""
        return cls(**dataclasses.asdict(options))

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> Profile:
        lost = running_profile.lost(lambda host: host.joinable and host is not self)
        with running_profile.lock:
            if lost:  # started earlier, never stopped, unreachable now (dlpt.capture.running)
                running_profile.abandon()
            host = running_profile.current()
            if host is not None:
                if not host.joinable or host is self:
                    raise ProfilerBusyError(
                        "a dlpt profile is already running in this process; stop it before starting another"
                    )
                self._joined, self._session = joining.join(self._options(), Profile()._options(), host), None
                return self
            running_profile.record(running_profile.Running(weakref.ref(self), [], None, False))  # starting
        try:
            self._start()
        except BaseException:
            with running_profile.lock:
                running_profile.record(None)
            raise
        return self

    def _options(self) -> tuple[Any, ...]:
        return joining.options_of(self)

    def _start(self) -> None:
        """Set everything up, then start capture and the clock: dlpt's own set-up (imports,
        hooks, module scans) is never part of the profile's steps or wall time."""
        self._started_s, self._schedule = time.perf_counter(), None
        self._clock_started = self._stopping = False
        C = native.core()
        self._session, self._joined = None, None
        self._pid = os.getpid()
        self._saves = joining.SavesAtStop()
        self._meta = start_meta(self.gpu)
        want_gpu = bool(self.gpu and self._meta["devices"])
        _synchronize_all()
        schedule = self._schedule = StepSchedule(
            self.skip_first,
            self.active,
            self.calibrate,
            C.end_epoch,
            self._set_tracing,
            cut=C.cut_counted,
            restore=C.restore_last_cut,
            only=CALL if self.step_on else None,
            on_warm=weak_method(self, "_arm_timeline"),
            # The timeline's window closes when tracing stops: no untraced window inside it.
            first_window=self.timeline + 1,
            waits=ThreadWaits(),
        )
        backward = BackwardRecords(C, backward_ops(self.nested_ops, self.flops))
        self._recorders = self._make_recorders(C, schedule, backward)
        started: list[Recorder] = []
        try:
            for recorder in self._recorders:
                recorder.start()
                started.append(recorder)
            self._start_info = native.start(
                want_gpu,
                nested_ops=self.nested_ops,
                flops_ops=recorded_ops() if self.flops else [],
                split_backward=backward.mode == "paused",
                op_mode=self._op_mode,
            )
        except BaseException:
            for recorder in started:
                recorder.unhook()
            for recorder in started:
                recorder.ended()
            raise
        running_profile.record(
            running_profile.Running(
                weakref.ref(self), self._recorders, schedule, bool(self._start_info.get("gpu"))
            )
        )
        for recorder in self._recorders:
            recorder.began(bool(self._start_info.get("gpu")))
        schedule.start()
        self._clock_started = True
        self._meta["gpu"] = gpu_meta(self.gpu, bool(self._meta["devices"]), self._start_info)

    def _make_recorders(self, C: Any, schedule: StepSchedule, backward: BackwardRecords) -> list[Recorder]:
        """This run's recorders, in the order they start, step and stop (see
        dlpt/capture/recorders.py: the hooks first, then what runs beside the core)."""
        self._compile = CompileEvents()
        # Hooks in torch and in the program hold the profile weakly (dlpt.capture.running).
        recorders: list[Recorder] = [
            OptimizerSteps(weak_method(self, "_on_optimizer_step")),
            Collectives(),
        ]
        recorders.append(backward)
        if self.step_on is not None:
            begin, end = weak_method(self, "_on_call_begin"), weak_method(self, "_on_call_end")
            recorders.append(StepCalls(self.step_on, begin, end))
        recorders.append(self._compile)
        if self.memory:
            recorders.append(Memory(C))
        if self.pc_sampling:
            recorders.append(PcSamples(self.pc_sampling, C, _synchronize_all, self.sources))
        recorders.append(HostSamples(self.sample_hz, self.timeline, schedule))
        recorders.append(FrameAnchors(C))
        return recorders

    def _unhook(self) -> None:
        """Undo every recorder's hooks into the program (the originals are back)."""
        for recorder in self._recorders:
            recorder.unhook()

    def step(self) -> None:
        """Mark the end of a step (optional: optimizer steps are detected anyway)."""
        if self._joined is not None and self._joined.inside:
            self._joined.host.step()
        elif running_profile.current() is self:
            self._on_step("manual")

    def _on_optimizer_step(self) -> None:
        self._on_step("optimizer")

    def _on_step(self, source: str, began_ns: int | None = None) -> None:
        native.core().drain_code_refs()
        with self._step_lock:
            for s in self._recorders:
                s.before_step()
            if self._schedule is not None:
                self._schedule.on_step(source, began_ns)
                for s in self._recorders:
                    s.on_step(self._schedule)

    def _on_call_begin(self) -> None:
        with self._step_lock:
            if self._schedule is not None:
                self._schedule.begin_call()
            for s in self._recorders:
                s.on_call_begin()

    def _arm_timeline(self) -> None:
        """The warm-up is over (called by the schedule, step lock held): the timeline keeps the
        counted steps from the next boundary on."""
        for s in self._recorders:
            s.on_warm()

    @staticmethod
    def _set_tracing(on: bool) -> None:
        """Tracing on or off for the steps that follow (see dlpt.capture.schedule). Off waits for
        the GPU first, so the activity of the work launched while tracing is delivered."""
        if not on:
            _synchronize_all()
        native.core().set_tracing(on)

    def _on_call_end(self, began_ns: int) -> None:
        self._on_step(CALL, began_ns)

    def stop(self) -> Session | None:
        """Stop capture, flush all GPU activity and build the session.

        A profile that joined a running one only leaves it (see the class docstring) and
        returns None."""
        if self._joined is not None:  # joined: leave (again, harmlessly)
            self._joined.inside = False
            return None
        if running_profile.current() is not self:
            if started_elsewhere(self._pid):
                raise UsageError(
                    f"this dlpt profile belongs to process {self._pid}; "
                    "a forked child neither stops nor reports it"
                )
            raise UsageError("this dlpt profile is not running")
        t0 = time.perf_counter()
        gpu_usable = True
        self._stopping = True
        try:
            self._unhook()
            # Stop recording first: our own synchronisation below is not the program's.
            native.core().set_collecting(False)
            try:
                _synchronize_all()
            except Exception as e:  # noqa: BLE001 - a broken CUDA context must not lose the CPU-side profile
                gpu_usable = False
                warnings.warn(
                    f"dlpt: could not synchronise the GPU before stopping: {e}", RuntimeWarning, stacklevel=1
                )
            schedule = self._schedule
            assert schedule is not None
            schedule.close()
            ctx = StopContext(schedule, bool(self._start_info.get("gpu")))
            for recorder in self._recorders:  # memory, PC sampling, the sampler: before the core's stop
                recorder.stop(ctx)
            # The time since the last step boundary is outside steps; a run without steps is one
            # epoch, counted (its figures are per run).
            raw = native.core().stop(last_counted=schedule.source is None)
            for recorder in self._recorders:  # the sampler's result, compile events: after it
                recorder.ended()
        finally:
            with running_profile.lock:
                running_profile.record(None)
        capture = RawCapture(
            raw,
            self._meta,
            steps=schedule.meta(),
            step_time=schedule.times(),
            step_wall_ns=list(schedule.traced.first),
            wall_ns=schedule.stop_ns - schedule.start_ns,
            stop_s=time.perf_counter() - t0,
            keep_source_text=self.sources,
            flops=self.flops,
        )
        self._session = build_session(capture, self._recorders)
        # Whether a measurement on the GPU may follow (dlpt.api's pinned-copy probe): never in a
        # forked child (CUDA may be unusable there) or on a GPU that failed to synchronise.
        self.gpu_usable = gpu_usable and not in_forked_child()
        return self._session

    def status(self) -> ProfileStatus:
        """What the profile is doing now (:mod:`dlpt.capture.status`), from any thread, without
        locks. A profile that joined a running one reports that one's status."""
        if self._joined is not None:
            return self._joined.host.status()
        phase = "stopped" if self._session is not None else "stopping" if self._stopping else None
        if phase is None and self._clock_started and self._compile is not None:
            phase = "compiling" if self._compile.events.compiling else None
        return status_of(self._started_s, self._schedule, self._clock_started, phase)

    def save_for_joined(self) -> None:
        """Write the files joined profiles asked for; a failure is said, never raised
        (:class:`dlpt.capture.joining.SavesAtStop`)."""
        self._saves.write(self.save)

    def ask_to_save(self, path: str) -> None:
        """A profile that joined this one asks for the session in ``path`` once this one stops."""
        self._saves.paths.append(path)

    def forget_after_fork(self) -> None:
        """In a forked child (:mod:`dlpt.capture.forking`): this profile is not the child's to
        stop. Its hooks go, its step lock is new (another thread may have held it at fork())."""
        self._step_lock = threading.Lock()
        self._unhook()

    # -- context manager / decorator --------------------------------------------------------

    def __enter__(self) -> Profile:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if not self.forked:
            self.stop()

    @property
    def forked(self) -> bool:
        """Started by the process we forked from: not ours to stop or report."""
        return started_elsewhere(self._pid) and not self.joined

    @property
    def joined(self) -> bool:
        """Between start() and stop() of a profile that joined a running one."""
        return self._joined is not None and self._joined.inside

    @property
    def waiting_for_host(self) -> bool:
        """This profile joined a running one that has not stopped yet: no session exists."""
        return self._joined is not None and self._joined.waiting

    @property
    def stopped_session(self) -> Session | None:
        """The session this profile recorded, once it stopped (None before, and for a profile
        that joined a running one)."""
        return self._session

    # -- results -----------------------------------------------------------------------------

    @property
    def session(self) -> Session:
        """The recorded session (available once the profile stopped)."""
        if self._joined is not None:
            if self._joined.waiting:
                raise UsageError(
                    "this profile joined the one already running (python -m dlpt): the session is "
                    "that profile's and exists once it stops, when the program ends (-o FILE keeps it)"
                )
            return self._joined.host.session
        if self._session is None:
            raise UsageError("the profile has no session yet: it is still running or never ran")
        return self._session

    def save(self, path: str | os.PathLike[str], *, force: bool = False) -> str:
        """Write the session as JSON; re-render later with ``python -m dlpt --load PATH``.
        Returns the path written.

        One of several ranks (torchrun, SLURM, an initialised process group) writes its own
        file: ``{rank}`` in ``path`` is replaced by the rank, otherwise ``.rank<N>`` goes before
        the extension (dlpt.files.rank_paths), so ranks never replace each other's sessions.

        An existing file is replaced only if dlpt wrote it (a session, an HTML report, an
        export) or it is empty, unless ``force`` (dlpt.files.safe_files).

        For a profile that joined a running one, the file is written when that one stops."""
        if self._joined is not None and self._joined.waiting:
            self._joined.host.ask_to_save(os.path.abspath(path))
            return os.fspath(path)
        session = self.session
        where = os.fspath(path)
        rank = session_rank(session.meta)
        where = rank_path(where, *rank) if rank is not None else rank_path(where, 0, 1)
        session.save(where, force=force)
        return where


def running() -> Profile | None:
    """The profile running in this process, if any."""
    found: Profile | None = running_profile.current()
    return found
