"""A profile's capture: start and stop it, and turn what the native core collected into a
:class:`~dlpt.model.session.Session` (the public ``dlpt.profile`` adds to it: :mod:`dlpt.api`).

One profile records at a time in a process. A profile started while another runs raises
:class:`~dlpt.errors.ProfilerBusyError`, except when the running one is *joinable* (the one
``python -m dlpt`` starts): then the new profile joins it instead of recording on its own (see
:class:`Profile`), so ``@dlpt.profile()`` in a script still works under the CLI.

A forked child inherits no running profile (the native core stops capturing in the child): the
child neither stops nor reports its parent's profile, and may start one of its own (which then
makes no measurement of its own on the GPU at stop: see :mod:`dlpt.api`).

Everything recorded beside the native core is a capture source
(:mod:`dlpt.capture.capture_source`; the list: :meth:`Profile._make_capture_sources`), driven
through the same steps in one order: a new source is one class, not an edit to start and stop.

Thread contract: start/stop are called with the GIL held, normally from the program's main
thread; steps may arrive from any thread (optimizer steps, ``step_on`` calls, ``prof.step()``)
and are serialised here (the step lock: the sources' step callbacks run under it). Capture
itself happens in the native core on every thread (csrc/). :meth:`Profile.status` may be called
from any thread at any time: it only reads attributes.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
import weakref
from typing import Any

from dlpt.capture import native
from dlpt.capture import running as running_profile
from dlpt.capture.assemble import RawCapture, build_session, start_meta
from dlpt.capture.capture_source import CaptureSource, StopContext
from dlpt.capture.flops.annotate import recorded_ops
from dlpt.capture.host import DEFAULT_SAMPLE_HZ, check_options
from dlpt.capture.op_mode import requested_op_mode
from dlpt.capture.pc_sampling import pc_sampling_steps
from dlpt.capture.profile_sources import (
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
from dlpt.capture.status import ProfileStatus
from dlpt.capture.step_on import parse_spec
from dlpt.errors import DlptError, ProfilerBusyError, UsageError
from dlpt.files.rank_paths import rank_path, session_rank
from dlpt.model.safe_text import escape_control
from dlpt.model.session import Session

_in_forked_child = False  # this process was fork()ed from the one that imported dlpt


def _forget_in_child() -> None:
    """After fork(), in the child: the parent's profile is not this process's to stop. Its hooks
    go (the child's optimizer steps and step_on calls cost nothing), its locks are new (another
    thread may have held one at fork())."""
    global _in_forked_child
    parent = running_profile.forget()
    _in_forked_child = True  # CUDA may be unusable here: stop() makes no GPU measurement
    if parent is not None:
        parent._step_lock = threading.Lock()
        parent._unhook()


os.register_at_fork(after_in_child=_forget_in_child)


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


def _synchronize_all() -> None:
    """Wait for all GPU work, so the window holds exactly what was launched inside it."""
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        for i in range(torch.cuda.device_count()):
            torch.cuda.synchronize(i)


class Profile:
    """A profile's capture: start, steps, stop into a :class:`~dlpt.model.session.Session`.

    The public :class:`dlpt.profile` (:mod:`dlpt.api`) is this class plus what comes after
    capture (the suggestions saved with the session, the report, the decorator). Its arguments:

    Args:
        skip_first: steps to leave out as warm-up before counting (default None: until two steps
            in a row take the same time, see :mod:`dlpt.capture.warmup`); their work, like
            everything outside counted steps, is reported apart as once-work.
        active: steps to count after those (default: all the rest); the steps after them run
            untraced and measure the program's own step time.
        calibrate: run some steps untraced in the same run (windows of a few steps, see
            :mod:`dlpt.capture.schedule`) to measure the step time without dlpt's cost, which
            every derived figure (GPU idle share, MFU, suggested gains) then uses. False: every
            counted step is traced.
        gpu: capture GPU kernels, copies, memsets and syncs through CUPTI. Without a GPU, or if
            another profiler holds CUPTI, dlpt says so and records CPU-side attribution only.
        nested_ops: also record the ops that run inside other ops (``aten::mm`` under
            ``aten::matmul``, ``aten::mm`` under ``MmBackward0``). Off by default: kernels land on
            the same lines either way, and recording every nested op costs several times more
            per step on launch-bound work.
        step_on: the function whose outermost calls are the steps (``"generate"``,
            ``"GPT2LMHeadModel.forward"``, ``"pkg.mod:serve"``; see :mod:`dlpt.capture.step_on`), for
            inference loops, which have no optimizer step. Optimizer steps and ``prof.step()``
            are then ignored.
        sources: save the text of the profiled lines of your files (and 2 lines around each) in
            the session, so reports show the code as it was when it ran.
        flops: record the input shapes of the ops with a FLOP formula in torch's registry (and of
            elementwise ops, for their bytes), for FLOPs and TFLOP/s per line, MFU and the
            roofline bound. Off by default: torch then packs every op's arguments, which costs
            time on every op (README: "Why is this line slow").
        memory: record memory per line: what each line allocates, what it holds at each step's
            peak of allocated memory (a saved activation on its forward line) and what it held
            when an allocation failed (:mod:`dlpt.capture.memory`). Off by default: it costs
            time on every allocation.
        joinable: a ``dlpt.profile()`` started while this one runs joins it instead of raising
            ProfilerBusyError (``python -m dlpt`` starts its profile this way).
        sample_hz: how often the host sampler records the Python stack of every thread (host
            time per line, and which lines the host was in while the GPU idled); 0 turns it off.
        timeline: keep the events of this many counted steps, after the warm-up (ops, kernels, copies,
            syncs, host samples) for a timeline: ``meta.timeline``, the HTML report's timeline
            view and ``--export perfetto``. 0 (the default) keeps none.
        pc_sampling: CUPTI PC sampling for this many counted steps after the warm-up (True: 3):
            which source line inside each kernel is hot and why it stalls, and a fused Inductor
            kernel's samples shared among the model lines it fused (``meta.pc_sampling``;
            docs/pc-sampling.md). Off by default; the other steps run as without it.
        exact_ops: True: every op's start walks the Python stack, so every op's CPU time and
            calls land on its line. False: *lean*, op starts walk nothing; an op's line is found
            at its first launch (every kernel, copy, memset and sync keeps its exact line and
            op) or, if it made an autograd node, at its end; the CPU time of ops that launch
            nothing reaches lines through the host sampler (``sample_hz``). None (the default):
            ``$DLPT_OPS`` if set, else lean with GPU capture and exact without
            (:mod:`dlpt.capture.op_mode`; ``meta.capture.op_mode`` says which ran).

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
        _check_count("skip_first", skip_first, allow_none=True)
        check_options(sample_hz, timeline)
        _check_count("active", active, allow_none=True)
        if step_on is not None:
            parse_spec(step_on)  # a malformed name fails here, not at the end of the run
        self.skip_first = skip_first
        self.active = active
        self.calibrate = bool(calibrate)
        self.gpu = gpu
        self.nested_ops = bool(nested_ops)
        self.step_on = step_on
        self.sources = bool(sources)
        self.flops = bool(flops)
        self.memory = bool(memory)
        self.joinable = bool(joinable)
        self.sample_hz = sample_hz
        self.timeline = timeline
        self.pc_sampling = pc_sampling_steps(pc_sampling)
        self.exact_ops = None if exact_ops is None else bool(exact_ops)
        self._op_mode = requested_op_mode(self.exact_ops)  # a bad $DLPT_OPS fails here
        self._session: Session | None = None
        self._schedule: StepSchedule | None = None
        self._step_lock = threading.Lock()
        # What this run records besides the native core (dlpt.capture.capture_source), in the
        # order they are driven; made afresh by each start.
        self._capture_sources: list[CaptureSource] = []
        self._compile: CompileEvents | None = None  # one of them, for status()
        self._start_info: dict[str, Any] = {}
        self._meta: dict[str, Any] = {}
        self._pid = 0  # the process that started this profile
        self._host: Profile | None = None  # the running profile this one joined, if it did
        self._inside_host = False  # between start() and stop() of a joined profile
        self._save_at_stop: list[str] = []  # paths joined profiles asked to save to
        self.gpu_usable = False  # after stop: whether the GPU may be measured (see stop)
        self._started_s: float | None = None  # perf_counter() when start() began (status)
        self._clock_started = False  # the set-up is done, the program's time runs (status)
        self._stopping = False

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
                self._join(host)
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
        return (
            self.skip_first,
            self.active,
            self.calibrate,
            self.step_on,
            self.gpu,
            self.nested_ops,
            self.sources,
            self.flops,
            self.memory,
            self.sample_hz,
            self.timeline,
            self.exact_ops,
        )

    def _join(self, host: Profile) -> None:
        own = self._options()
        if own != Profile()._options() and own != host._options():
            warnings.warn(
                "dlpt: this profile joins the one already running (python -m dlpt); its options "
                "(skip_first, active, calibrate, step_on, gpu, nested_ops, sources, flops, memory, "
                "sample_hz, timeline, exact_ops) are ignored: give them on the command line instead",
                RuntimeWarning,
                stacklevel=3,
            )
        self._host, self._inside_host = host, True
        self._session = None

    def _start(self) -> None:
        """Set everything up, then start capture and the clock: dlpt's own set-up (imports,
        hooks, module scans) is never part of the profile's steps or wall time."""
        self._started_s, self._schedule = time.perf_counter(), None
        self._clock_started = self._stopping = False
        C = native.core()
        self._session, self._host = None, None
        self._pid = os.getpid()
        self._save_at_stop = []
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
            only=CALL if self.step_on else None,
            on_warm=weak_method(self, "_arm_timeline"),
            # The timeline's window closes when tracing stops: no untraced window inside it.
            first_window=self.timeline + 1,
        )
        backward = BackwardRecords(C, backward_ops(self.nested_ops, self.flops))
        self._capture_sources = self._make_capture_sources(C, schedule, backward)
        started: list[CaptureSource] = []
        try:
            for source in self._capture_sources:
                source.start()
                started.append(source)
            self._start_info = native.start(
                want_gpu,
                nested_ops=self.nested_ops,
                flops_ops=recorded_ops() if self.flops else [],
                split_backward=backward.mode == "paused",
                op_mode=self._op_mode,
            )
        except BaseException:
            for source in started:
                source.unhook()
            for source in started:
                source.ended()
            raise
        running_profile.record(
            running_profile.Running(
                weakref.ref(self), self._capture_sources, schedule, bool(self._start_info.get("gpu"))
            )
        )
        for source in self._capture_sources:
            source.began(bool(self._start_info.get("gpu")))
        schedule.start()
        self._clock_started = True
        self._meta["gpu"] = self._gpu_meta(bool(self._meta["devices"]))

    def _make_capture_sources(
        self, C: Any, schedule: StepSchedule, backward: BackwardRecords
    ) -> list[CaptureSource]:
        """This run's capture sources, in the order they start, step and stop (see
        dlpt/capture/profile_sources.py: the hooks first, then what runs beside the core)."""
        self._compile = CompileEvents()
        # Hooks in torch and in the program hold the profile weakly (dlpt.capture.running).
        sources: list[CaptureSource] = [
            OptimizerSteps(weak_method(self, "_on_optimizer_step")),
            Collectives(),
        ]
        sources.append(backward)
        if self.step_on is not None:
            begin, end = weak_method(self, "_on_call_begin"), weak_method(self, "_on_call_end")
            sources.append(StepCalls(self.step_on, begin, end))
        sources.append(self._compile)
        if self.memory:
            sources.append(Memory(C))
        if self.pc_sampling:
            sources.append(PcSamples(self.pc_sampling, C, _synchronize_all, self.sources))
        sources.append(HostSamples(self.sample_hz, self.timeline, schedule))
        sources.append(FrameAnchors(C))
        return sources

    def _unhook(self) -> None:
        """Undo every source's hooks into the program (the originals are back)."""
        for source in self._capture_sources:
            source.unhook()

    def _gpu_meta(self, have_devices: bool) -> dict[str, Any]:
        if not self.gpu:
            reason = "GPU capture disabled (gpu=False / --no-gpu)"
        elif not have_devices:
            reason = "no CUDA GPU available"
        else:
            reason = self._start_info["reason"]
            if reason:
                warnings.warn(
                    f"dlpt: GPU capture is off, CPU-side attribution only: {reason}",
                    RuntimeWarning,
                    stacklevel=4,
                )
        return {
            "enabled": bool(self._start_info["gpu"]),
            "reason": reason,
            "cupti": self._start_info.get("cupti_path") or None,
        }

    def step(self) -> None:
        """Mark the end of a step (optional: optimizer steps are detected anyway)."""
        if self._inside_host and self._host is not None:
            self._host.step()
        elif running_profile.current() is self:
            self._on_step("manual")

    def _on_optimizer_step(self) -> None:
        self._on_step("optimizer")

    def _on_step(self, source: str, began_ns: int | None = None) -> None:
        native.core().drain_code_refs()
        with self._step_lock:
            for s in self._capture_sources:
                s.before_step()
            if self._schedule is not None:
                self._schedule.on_step(source, began_ns)
                for s in self._capture_sources:
                    s.on_step(self._schedule)

    def _on_call_begin(self) -> None:
        with self._step_lock:
            if self._schedule is not None:
                self._schedule.begin_call()
            for s in self._capture_sources:
                s.on_call_begin()

    def _arm_timeline(self) -> None:
        """The warm-up is over (called by the schedule, step lock held): the timeline keeps the
        counted steps from the next boundary on."""
        for s in self._capture_sources:
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
        if self._host is not None:  # joined: leave (again, harmlessly)
            self._inside_host = False
            return None
        if running_profile.current() is not self:
            if self._pid and self._pid != os.getpid():
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
            for source in self._capture_sources:  # memory, PC sampling, the sampler: before the core's stop
                source.stop(ctx)
            # The time since the last step boundary is outside steps; a run without steps is one
            # epoch, counted (its figures are per run).
            raw = native.core().stop(last_counted=schedule.source is None)
            for source in self._capture_sources:  # the sampler's result, compile events: after it
                source.ended()
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
        self._session = build_session(capture, self._capture_sources)
        # Whether a measurement on the GPU may follow (dlpt.api's pinned-copy probe): never in a
        # forked child (CUDA may be unusable there) or on a GPU that failed to synchronise.
        self.gpu_usable = gpu_usable and not _in_forked_child
        return self._session

    def status(self) -> ProfileStatus:
        """What the profile is doing now (:mod:`dlpt.capture.status`), from any thread, without
        locks. A profile that joined a running one reports that one's status."""
        if self._host is not None:
            return self._host.status()
        started, schedule = self._started_s, self._schedule
        elapsed = time.perf_counter() - started if started is not None else 0.0
        if self._session is not None:
            phase = "stopped"
        elif self._stopping:
            phase = "stopping"
        elif schedule is None or not self._clock_started:
            phase = "starting"
        elif self._compile is not None and self._compile.events.compiling:
            phase = "compiling"
        else:
            phase = schedule.phase
        seen, profiled = (schedule.seen, schedule.counted) if schedule is not None else (0, 0)
        return ProfileStatus(elapsed, seen, profiled, phase)

    def save_for_joined(self) -> None:
        """Write the files joined profiles asked for; a failure is said, never raised (the
        profile itself is safe in memory, and the CLI saves its own copy)."""
        for path in self._save_at_stop:
            try:
                self.save(path)
            except (OSError, DlptError) as e:
                warnings.warn(
                    f"dlpt: could not save the profile to {escape_control(path)}: {e}",
                    RuntimeWarning,
                    stacklevel=2,
                )
        self._save_at_stop = []

    # -- context manager / decorator --------------------------------------------------------

    def __enter__(self) -> Profile:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if not self.forked:
            self.stop()

    @property
    def forked(self) -> bool:
        """Started by the process we forked from: not ours to stop or report."""
        return bool(self._pid) and self._pid != os.getpid() and not self._inside_host

    @property
    def joined(self) -> bool:
        """Between start() and stop() of a profile that joined a running one."""
        return self._inside_host

    @property
    def waiting_for_host(self) -> bool:
        """This profile joined a running one that has not stopped yet: no session exists."""
        return self._host is not None and self._host._session is None

    # -- results -----------------------------------------------------------------------------

    @property
    def session(self) -> Session:
        """The recorded session (available once the profile stopped)."""
        host = self._host
        if host is not None:
            if host._session is None:
                raise UsageError(
                    "this profile joined the one already running (python -m dlpt): the session is "
                    "that profile's and exists once it stops, when the program ends (-o FILE keeps it)"
                )
            return host._session
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
        if self._host is not None and self._host._session is None:
            self._host._save_at_stop.append(os.path.abspath(path))
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
