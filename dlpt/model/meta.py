"""A session's ``meta``, typed: :class:`Meta` and the classes of its parts are the session
format's metadata (docs/session-format.md), checked all the way down when a session is loaded
(dlpt.model.shape says how an annotation reads) and built once per session
(:attr:`dlpt.model.session.Session.typed_meta`).

Renderers index into meta (``ev["break_reasons"]``, ``int(a["calls"])``, ``f"{v:.2f}"``), so a
loaded session is checked first: a key of the wrong type anywhere would otherwise surface as a
TypeError in the middle of a report. Keys no class names are kept untouched in the mapping
(producers may add metadata without a format bump); a top-level key set to ``null`` reads as
absent (older writers did that).

The readers at the bottom (:func:`profiled_steps`, :func:`step_time`, ...) read a mapping
defensively, for code that holds no session.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, get_type_hints

from dlpt.model.shape import (
    SchemaError,
    build_fields,
    build_present,
    builder,
    int_row,
    lenient_build,
    line_number,
    nullable,
    seconds,
    short,
    signed_int,
    str_or_num,
)

__all__ = [
    "Meta",
    "Extras",
    "typed",
    "saved_dict",
    "SAMPLER_STATS",
    "MEMORY_STEP_PEAK",
    "int_of",
    "obj",
    "profiled_steps",
    "gpu_enabled",
    "typed_field",
    "program_argv",
    "step_walls",
    "wall_ns",
    "StepTime",
    "step_time",
]

#: The host sampler's numbers as the native core exports them (csrc/host/sampler.h,
#: DLPT_SAMPLER_STATS) and as meta.host saves them; tests/native/test_native_fields.py holds the
#: two to each other and to dlpt/_C.pyi.
SAMPLER_STATS = (
    "ticks",
    "samples",
    "torn",
    "missed",
    "scope_retries",
    "codes_lost",
    "max_threads",
    "sampler_cpu_ns",
    "sampled_wall_ns",
    "safe_reads",
)
#: A counted step's memory peak: the native row's order (csrc/memory/tracker.h,
#: DLPT_MEMORY_STEP_PEAK) and meta.memory's keys.
MEMORY_STEP_PEAK = ("peak_allocated", "reserved_at_peak", "peak_reserved", "traced_at_peak")

Seconds = Annotated[float, seconds]
SignedInt = Annotated[int, signed_int]
LineNumber = Annotated[str, line_number]
StrOrNum = Annotated[Any, str_or_num]


def _pc_line(v: Any, where: str) -> None:
    """One sampled source line of a kernel: [file ("" without line info), line, samples, stalls]."""
    if not isinstance(v, list) or len(v) != 4:
        raise SchemaError(where, f"must be [file, line, samples, stalls], got {short(v)}")
    builder(str)(v[0], f"{where}[0]")
    builder(int)(v[1], f"{where}[1]")
    builder(int)(v[2], f"{where}[2]")
    builder(dict[str, int])(v[3], f"{where}[3]")


PcLine = Annotated[list[Any], _pc_line]


# -- the run -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Device:
    index: int | None = None
    name: str | None = None
    capability: str | None = None


@dataclass(frozen=True)
class Gpu:
    """Whether GPU capture ran (None: the session does not say), and why not."""

    enabled: bool | None = None
    reason: str | None = nullable()
    cupti: str | None = nullable()


@dataclass(frozen=True)
class Warmup:
    steps: int | None = None
    walls_ns: list[int] | None = None
    auto: bool | None = None
    reason: str | None = None
    settled: bool | None = None  # automatic warm-up: False when it ended at its bound


@dataclass(frozen=True)
class Outside:
    before_ns: int | None = None
    after_ns: int | None = None


@dataclass(frozen=True)
class Steps:
    profiled: int = 0  # the steps per-step figures are divided by (0: values per run)
    seen: int | None = None
    skip_first: int | None = nullable()  # None: the warm-up was detected
    active: int | None = nullable()
    source: str | None = nullable()
    step_on: str | None = nullable()
    step_on_matched: list[str] | None = None
    step_on_chosen: str | None = nullable()
    step_on_ignored: dict[str, int] | None = None
    untraced: int | None = None
    held: int | None = None  # steps PC sampling held: outside steps (dlpt.capture.schedule.hold)
    warmup: Warmup | None = None
    outside: Outside | None = None


@dataclass(frozen=True)
class SavedStepTime:
    n: int
    median_ns: int
    mean_ns: int
    min_ns: int | None = None
    max_ns: int | None = None
    p10_ns: int | None = None
    p90_ns: int | None = None
    median_lo_ns: int | None = None  # the median's interval (docs/numbers.md)
    median_hi_ns: int | None = None


@dataclass(frozen=True)
class PairedWindow:
    """An untraced window against its traced neighbours (dlpt's cost, docs/numbers.md)."""

    untraced_ns: int
    traced_ns: int
    steps: list[int] | None = None
    untraced_n: int | None = None
    traced_n: int | None = None


@dataclass(frozen=True)
class StepTimes:
    """Step wall times (dlpt.capture.schedule): traced (counted) and untraced steps."""

    calibrate: bool | None = None
    switches: int | None = None
    dropped: int | None = None
    counted_ns: int | None = None
    waited_ns: int | None = None  # of counted_ns, the step's thread waiting for a CPU
    windows: list[list[int]] | None = None
    traced: SavedStepTime | None = None
    untraced: SavedStepTime | None = None
    paired: list[PairedWindow] | None = None
    paired_n: int | None = None


@dataclass(frozen=True)
class ApiRow:
    name: str | None = None
    calls: int | None = None
    total_ns: int | None = None
    min_ns: int | None = None
    max_ns: int | None = None


@dataclass(frozen=True)
class ResumeOf:
    function: str
    line: int


@dataclass(frozen=True)
class CompileEvent:
    function: str
    file: str
    line: int
    break_reasons: list[str]
    compile_id: str | None = None
    compile_s: Seconds | None = None
    backend_s: Seconds | None = None
    inductor_s: Seconds | None = None
    graph_ops: int | None = None
    cache_hits: int | None = None  # graphs served from Inductor's or AOTAutograd's cache (dlpt 0.2 on)
    recompile_reason: str | None = nullable()
    fail: str | None = nullable()
    resume_of: ResumeOf | None = None


@dataclass(frozen=True)
class GpuStep:
    span_ns: int
    busy_ns: int
    idle_before_ns: int
    idle_after_ns: int
    # Communication inside the step and its exposed part (dlpt 0.2 on: absent without collectives).
    comm_ns: int | None = None
    exposed_ns: int | None = None


@dataclass(frozen=True)
class GpuCollectives:
    """Each collective kernel of the counted steps, as columns of one row per kernel, by epoch
    then launch order (csrc/cct/collectives.h; read by dlpt.analysis.ranks.arrivals)."""

    names: list[str]  # kernel names; ``name`` indexes them
    device: list[int]
    epoch: list[int]  # the step epoch of its launch: equal on every rank for the same step
    name: list[int]
    start_ns: list[int]  # CUPTI time (this rank's clock)
    dur_ns: list[int]
    exposed: list[str]  # 32 hex digits: each sixteenth of the kernel's share with no other work, /255
    over_limit: int | None = None  # kernels past the core's limit, not kept
    epochs: int | None = None  # epochs with collectives before a rank summary kept only the last


@dataclass(frozen=True)
class Capture:
    """The native core's counters (csrc/counters.h: integers, the tsc flag and two reasons aside;
    tests/native/test_counters.py holds this class to that list) and the times the profiler
    adds, in seconds."""

    activity_records: int | None = None
    delivered_gpu_ns: int | None = None
    dropped_records: int | None = None
    unknown_correlation: int | None = None
    unknown_gpu_ns: int | None = None
    submitted: int | None = None
    completed: int | None = None
    outside_window: int | None = None
    backward_unresolved: int | None = None
    code_lost: int | None = None
    graph_nodes_captured: int | None = None
    graph_replay_ns: int | None = None
    graph_unmapped_ns: int | None = None
    tree_overflow: int | None = None
    unmatched_op_ends: int | None = None
    rf_windows: int | None = None
    op_records: int | None = None
    api_callbacks: int | None = None
    self_ns: int | None = None
    self_python_ns: int | None = None
    self_window_ns: int | None = None
    self_api_ns: int | None = None
    python_walks: int | None = None
    python_frames_walked: int | None = None
    anchored_walks: int | None = None
    self_op_end_ns: int | None = None
    walk_read_ns: int | None = None
    walk_site_ns: int | None = None
    walk_anchor_ns: int | None = None
    site_misses: int | None = None
    anchors_taken: int | None = None
    self_op_start_ns: int | None = None
    outermost_ops: int | None = None
    op_start_name_ns: int | None = None
    op_start_nodes_ns: int | None = None
    op_start_rest_ns: int | None = None
    deferred_ops: int | None = None
    deferred_at_launch: int | None = None
    deferred_at_end: int | None = None
    tracing_switches: int | None = None
    tracing_switch_ns: int | None = None
    tsc: bool | None = None
    cupti_unsubscribe_error: str | None = nullable()
    tracing_error: str | None = nullable()
    flush_s: Seconds | None = None
    stop_s: Seconds | None = None
    pid: int | None = None
    compile_failures: dict[str, int] | None = None
    inductor_unmapped_frames: int | None = None
    inductor_unmapped_kernels: int | None = None
    backward_ops: str | None = None  # aten-op records in backward passes: "paused" or "kept"
    # "lean": op starts walked no Python stack (an op's line was found at its first launch; the
    # CPU time of ops that launched nothing reached lines through the host sampler); "exact"
    op_mode: str | None = None
    # numbered op and scope names folded into their pattern ("batch_#" for record_function
    # f"batch_{i}"), by pattern: how many, past the first 256 kept as they are
    folded_names: dict[str, int] | None = None


@dataclass(frozen=True)
class Distributed:
    """One of several ranks (dlpt.capture.ranks.env): renderers print these and index ranks by them."""

    rank: int
    world_size: int
    local_rank: int | None = nullable()
    hostname: str | None = None
    device: int | None = nullable()
    backends: list[str] | None = None
    source: str | None = None
    run_id: str | None = nullable()


@dataclass(frozen=True)
class Flops:
    ops: int | None = None
    flops: int | None = None
    unevaluated: dict[str, int] | None = None


@dataclass(frozen=True)
class HostLinkProbe:
    device: str
    bytes: int
    ns: int
    copies: int | None = None


@dataclass(frozen=True)
class Suggestion:
    """A suggestion saved at stop (dlpt.analysis.finding.Finding.to_dict): its text is shown as it
    is, so every field a report prints is typed (``numbers`` are the estimate's inputs)."""

    rule: str
    title: str
    gain_ns: int
    evidence: str | None = None
    action: str | None = None
    basis: str | None = None
    per_step: bool | None = None
    file: str | None = None
    line: int | None = None
    function: str | None = None
    numbers: dict[str, StrOrNum] | None = None


# -- --memory (dlpt.capture.memory): per device the counted steps' peaks, the allocation failure --


@dataclass(frozen=True)
class MemoryStep:  # the fields of MEMORY_STEP_PEAK, in that order
    peak_allocated: int
    reserved_at_peak: int
    peak_reserved: int
    traced_at_peak: int


@dataclass(frozen=True)
class MemoryDevice:
    allocated: int | None = None
    reserved: int | None = None
    steps: list[MemoryStep] | None = None


@dataclass(frozen=True)
class MemoryOom:
    device: str
    requested: int
    allocated: int
    reserved: int
    count: int | None = None


@dataclass(frozen=True)
class Memory:
    enabled: bool | None = None
    reason: str | None = nullable()
    tracks_cpu: bool | None = None
    devices: dict[str, MemoryDevice] | None = None
    oom: MemoryOom | None = None
    events: int | None = None
    missed_frees: int | None = None


# -- the host sampler (--sample-hz, dlpt.capture.host_session) -----------------------------------


@dataclass(frozen=True)
class HostLine:
    file: str
    line: int
    function: str
    ns: int
    gil_ns: int | None = None
    inner: str | None = None


@dataclass(frozen=True)
class HostShare:
    ns: int
    lines: list[HostLine]
    gil_ns: int | None = None
    other_ns: int | None = None


@dataclass(frozen=True)
class Host:
    sample_hz: int | None = None
    sampling: bool | None = None
    method: str | None = None
    off: str | None = None
    # SAMPLER_STATS, in that order
    ticks: int | None = None
    samples: int | None = None
    torn: int | None = None
    missed: int | None = None
    scope_retries: int | None = None
    codes_lost: int | None = None
    max_threads: int | None = None
    sampler_cpu_ns: int | None = None
    sampled_wall_ns: int | None = None
    safe_reads: int | None = None
    steps: int | None = None
    resolved_early: int | None = None
    step_thread: HostShare | None = None
    idle: dict[str, dict[str, HostShare]] | None = None
    dropped: dict[str, int] | None = None


# -- the timeline window (--timeline N; read by dlpt.model.timeline, which checks the indices) ----


@dataclass(frozen=True)
class Timeline:
    strings: list[str]
    frames: list[Annotated[list[int], int_row(5, signed=(0,))]]
    tracks: list[Annotated[list[int], int_row(4)]]
    events: list[Annotated[list[int], int_row(8, signed=(5,))]]
    steps: int | None = None
    steps_requested: int | None = None
    start_ns: int | None = None
    duration_ns: int | None = None
    dropped: int | None = None
    clock: str | None = None
    first_step: int | None = None  # the run's number of the window's first step (dlpt 0.2 on)


# -- PC sampling (--pc-sampling; dlpt/capture/pc_sampling.py, docs/pc-sampling.md) ---------------


@dataclass(frozen=True)
class PcKernel:
    name: str
    samples: int
    stalls: dict[str, int] | None = None
    lines: list[PcLine] | None = None


@dataclass(frozen=True)
class PcModelLineShare:
    file: str
    line: int
    samples: int
    share: float | None = None


@dataclass(frozen=True)
class PcModelLines:
    kernel: str
    samples: int
    unassigned: int | None = None
    lines: list[PcModelLineShare] | None = None


@dataclass(frozen=True)
class PcSampling:
    steps: int
    period_log2: int | None = None
    reason: str | None = nullable()
    first_step: int | None = None
    last_step: int | None = None
    total_samples: int | None = None
    dropped_samples: int | None = None
    non_user_samples: int | None = None
    pcs: int | None = None
    pcs_resolved: int | None = None
    pcs_without_cubin: int | None = None
    hardware_buffer_full: bool | None = None
    unresolved: dict[str, str] | None = None
    kernels: list[PcKernel] | None = None
    model_lines: list[PcModelLines] | None = None


# -- the whole ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Meta:
    """A session's metadata, typed. Every field may be absent (None): a session saved by an older
    dlpt, or made in memory by a test, holds only some."""

    argv: list[str] | None = None
    cwd: str | None = None
    python: str | None = None
    torch: str | None = None
    dlpt: str | None = None
    started_at: str | None = None
    wall_ns: int | None = None
    devices: list[Device] | None = None
    gpu: Gpu | None = None
    steps: Steps | None = None
    step_wall_ns: list[int] | None = None
    step_time: StepTimes | None = None
    gpu_busy_outside_ns: dict[str, int] | None = None
    gpu_busy_ns: dict[str, int] | None = None
    api: list[ApiRow] | None = None
    dropped: dict[str, int] | None = None
    unattributed: dict[str, int] | None = None
    compile: list[CompileEvent] | None = None
    cuda_graphs: dict[str, int] | None = None
    gpu_comm_ns: dict[str, int] | None = None
    gpu_comm_exposed_ns: dict[str, int] | None = None
    gpu_steps: dict[str, list[GpuStep]] | None = None
    gpu_collectives: GpuCollectives | None = None
    capture: Capture | None = None
    threads_running: list[str] | None = None
    distributed: Distributed | None = None
    sources: dict[str, dict[LineNumber, str]] | None = None
    flops: Flops | None = None  # --flops: the FLOPs summary
    host_link_probe: HostLinkProbe | None = None  # dlpt's pinned-copy measurement
    suggestions: list[Suggestion] | None = None
    memory: Memory | None = None
    host: Host | None = None
    timeline: Timeline | None = None
    pc_sampling: PcSampling | None = None

    @classmethod
    def parse(cls, meta: Mapping[str, Any]) -> Meta:
        """The typed meta of a loaded session; SchemaError names the first key (or nested value)
        of the wrong shape."""
        return build_fields(cls, meta, "meta", lenient=False)

    @classmethod
    def of(cls, meta: Mapping[str, Any]) -> Meta:
        """The typed meta of a session dlpt made in memory: a value of the wrong shape reads as
        absent, a list or a record keeps what of it reads (dlpt.model.shape.lenient_build; dlpt
        never refuses its own capture)."""
        return build_fields(cls, meta, "meta", lenient=True)

    # -- the reads every stage makes ---------------------------------------------------------

    @property
    def profiled_steps(self) -> int:
        """How many steps the per-step figures are divided by (0: no steps, values per run)."""
        return self.steps.profiled if self.steps is not None else 0

    @property
    def wall(self) -> int:
        """Wall time of the profiled window (ns; 0 when the session does not say)."""
        return self.wall_ns or 0

    @property
    def gpu_enabled(self) -> bool | None:
        """Whether GPU capture ran: True, False, or None when the session does not say."""
        return self.gpu.enabled if self.gpu is not None else None


# -- node extras (``x``) that reports read; the rest of ``x`` (ids, flags of other tools) passes --


@dataclass(frozen=True)
class PcExtras:
    samples: int
    stalls: dict[str, int] | None = None
    lines: list[PcLine] | None = None
    unassigned: int | None = None


@dataclass(frozen=True)
class PcFused:
    kernel: str
    samples: int
    share: float | None = None
    of: int | None = None
    unassigned: int | None = None


@dataclass(frozen=True)
class Extras:
    full_name: str | None = None
    device: int | None = None
    grid: list[int] | None = None
    block: list[int] | None = None
    regs: int | None = None
    smem_static: int | None = None
    smem_dynamic: int | None = None
    direction: str | None = nullable()
    host_mem: str | None = nullable()
    graph: str | None = None
    fuses: list[str] | None = None
    library: bool | None = None
    # Collectives (c10d ops): what they moved (docs/session-format.md).
    collective: str | None = None
    dtype: str | None = None
    pg_name: str | None = None
    pg_desc: str | None = None
    world_size: SignedInt | None = None
    # --flops: the dtype an op's FLOPs ran in, as the native core names it ("Float", "BFloat16").
    flop_dtype: str | None = None
    # Communication (dlpt.capture.ranks.annotate): NCCL's algorithm and protocol of a kernel, the
    # process group's backend of a collective call dlpt wrapped.
    algorithm: str | None = None
    protocol: str | None = None
    backend: str | None = None
    # --pc-sampling (dlpt.capture.pc_annotate): a kernel's samples, top stalls and lines; a model
    # line's sampled share of the fused kernels split onto it.
    pc: PcExtras | None = None
    pc_fused: list[PcFused] | None = None

    @classmethod
    def of(cls, x: Mapping[str, Any]) -> Extras:
        """A node's ``x``, typed. A loaded session's was checked when it was loaded; in one made
        in memory a key of the wrong shape reads as absent (as in :meth:`Meta.of`). The keys
        not named here stay in the mapping only."""
        return build_present(cls, x)


# -- reads of the typed meta (a mapping is typed first: code that holds no session) ---------------


def typed(meta: Meta | Mapping[str, Any]) -> Meta:
    """``meta`` typed: itself when it is (a session's :attr:`~dlpt.model.session.Session.typed_meta`:
    what dlpt's stages pass), else read as :meth:`Meta.of` reads a session made in memory (a key
    of the wrong shape reads as absent, a list or object keeps its items of the right shape)."""
    return meta if isinstance(meta, Meta) else Meta.of(meta)


def saved_dict(record: Any) -> dict[str, Any]:
    """A typed record (a compile event, a timeline) as the session saves it: its fields, those it
    does not have (None) left out, a nested record a dict too (lists are the record's own, not
    copies); for code that reads or writes the saved shape (dlpt.model.compile_events, a rank's
    summary)."""
    out = {}
    for f in dataclasses.fields(record):
        v = getattr(record, f.name)
        if v is not None:
            out[f.name] = saved_dict(v) if dataclasses.is_dataclass(v) else v
    return out


def int_of(v: object) -> int:
    """``v`` if it is an int (not a bool), else 0."""
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def obj(v: object) -> dict[str, Any]:
    """``v`` if it is a dict, else {} (an absent or malformed meta object)."""
    return v if isinstance(v, dict) else {}


def typed_field(meta: Mapping[str, Any], name: str) -> Any:
    """One top-level key of a meta mapping, typed as :class:`Meta` types it; None when it is
    absent or of the wrong shape (a list or object keeps its items of the right shape). For code
    that holds a mapping, not a session (a session's
    :attr:`~dlpt.model.session.Session.typed_meta` has them all)."""
    x = meta.get(name)
    return None if x is None else lenient_build(_META_TYPES[name], x, f"meta.{name}")


_META_TYPES = get_type_hints(Meta, include_extras=True)


def profiled_steps(meta: Meta | Mapping[str, Any]) -> int:
    """How many steps the per-step figures are divided by (0: no steps, values per run)."""
    steps: Steps | None = _field(meta, "steps")
    return steps.profiled if steps is not None else 0


def gpu_enabled(meta: Meta | Mapping[str, Any]) -> bool | None:
    """Whether GPU capture ran: True, False, or None when the session does not say."""
    gpu: Gpu | None = _field(meta, "gpu")
    return gpu.enabled if gpu is not None else None


def step_walls(meta: Meta | Mapping[str, Any]) -> list[int]:
    """Wall times of the profiled steps (ns), those that are positive integers."""
    walls: list[int] | None = _field(meta, "step_wall_ns")
    return [w for w in walls or [] if w > 0]


def program_argv(meta: Meta | Mapping[str, Any]) -> list[str]:
    """The profiled program's argv as reports name it: ``argv[0]`` relative to the directory the
    program ran in (``meta.cwd``) when it lies below it, as a script typed on the command line
    reads (``python -m pkg.run`` makes it absolute); [] when the session has no argv."""
    argv: list[str] | None = _field(meta, "argv")
    if not argv:
        return []
    out = list(argv)
    cwd: str | None = _field(meta, "cwd")
    if isinstance(cwd, str) and os.path.isabs(cwd) and os.path.isabs(out[0]):
        try:
            rel = os.path.relpath(out[0], cwd)
        except ValueError:  # another drive (Windows)
            return out
        if rel != os.curdir and not rel.startswith(os.pardir + os.sep) and rel != os.pardir:
            out[0] = rel
    return out


def wall_ns(meta: Meta | Mapping[str, Any]) -> int:
    """Wall time of the profiled window (ns; 0 when the session does not say)."""
    wall: int | None = _field(meta, "wall_ns")
    return wall or 0


def _field(meta: Meta | Mapping[str, Any], name: str) -> Any:
    """One field of the typed meta: a mapping's key alone is typed (not the whole of it)."""
    return getattr(meta, name) if isinstance(meta, Meta) else typed_field(meta, name)


@dataclass(frozen=True)
class StepTime:
    """Wall times of one kind of step (``meta.step_time.traced`` / ``.untraced``), in ns."""

    n: int
    median_ns: float
    mean_ns: float
    min_ns: float
    max_ns: float
    p10_ns: float
    p90_ns: float
    # The median's interval (95% from 6 steps on, else min-max); None in sessions saved before it.
    median_lo_ns: float | None = None
    median_hi_ns: float | None = None

    def spread(self) -> str:
        """How wide the median is known, as the text beside it: "9.98-10.4 ms" style is up to
        the caller; this gives the relative half-width, "+-1.9%", or "" without an interval."""
        if self.median_lo_ns is None or self.median_hi_ns is None or self.median_ns <= 0:
            return ""
        half = max(self.median_ns - self.median_lo_ns, self.median_hi_ns - self.median_ns)
        return f"\u00b1{100 * half / self.median_ns:.1f}%"


def _summary(s: SavedStepTime) -> StepTime | None:
    rest = (s.min_ns, s.max_ns, s.p10_ns, s.p90_ns)
    if s.n <= 0 or None in rest:
        return None
    lo, hi, p10, p90 = (float(v) for v in rest if v is not None)
    median, mean = float(s.median_ns), float(s.mean_ns)
    if s.median_lo_ns is not None and s.median_hi_ns is not None:
        return StepTime(s.n, median, mean, lo, hi, p10, p90, float(s.median_lo_ns), float(s.median_hi_ns))
    return StepTime(s.n, median, mean, lo, hi, p10, p90)


def step_time(meta: Meta | Mapping[str, Any], kind: str = "traced") -> StepTime | None:
    """The ``traced`` or ``untraced`` step times of a session; for a session saved before dlpt
    measured untraced steps, its traced ones from ``step_wall_ns`` (the mean as its median: what
    its figures used)."""
    times: StepTimes | None = _field(meta, "step_time")
    saved: SavedStepTime | None = getattr(times, kind) if times is not None else None
    if saved is not None:
        return _summary(saved)
    walls = step_walls(meta) if kind == "traced" else []
    if not walls:
        return None
    mean = sum(walls) / len(walls)
    return StepTime(len(walls), mean, mean, min(walls), max(walls), min(walls), max(walls))
