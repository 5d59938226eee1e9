"""Type stub of the native core (csrc/bindings.cpp). Only dlpt.capture.native imports it.

Keep in step with bindings.cpp: the node tuple's fields are named by
dlpt.capture.native.RawNode / RawMetrics, which unpack it.
"""

from collections.abc import Callable, Sequence
from signal import Handlers
from types import CodeType, FrameType
from typing import NotRequired, TypedDict

class NodeExtras(TypedDict, total=False):
    """A node's extras as the core exports them (csrc/bindings.cpp, to_dict; csrc/export/nodes.h,
    NodeExtras), each only for the kinds that have it. dlpt.capture.native saves them as the
    node's ``x`` (tuples as lists), which dlpt.model.meta.Extras types;
    tests/native/test_native_fields.py holds the three to each other."""

    direction: str  # memcpy: "HtoD", ...
    host_mem: str  # memcpy: the host side's memory kind, when known
    device: int  # kernel, memcpy, memset
    grid: tuple[int, int, int]  # kernel
    block: tuple[int, int, int]  # kernel
    regs: int  # kernel
    smem_static: int  # kernel
    smem_dynamic: int  # kernel

# id, parent, kind, name, file, line, metrics of counted epochs, metrics of the others, extras,
# per-step second moments (cpu, gpu, sync; ns^2) (see dlpt.capture.native.RawNode; csrc/cct/epochs.h)
RawMetricsTuple = tuple[int, int, int, int, int, int, int, int, int]
RawNodeTuple = tuple[
    int, int, str, str, str, int, RawMetricsTuple, RawMetricsTuple, NodeExtras, tuple[float, float, float]
]
# What signal.signal takes and returns.
SignalHandler = Callable[[int, FrameType | None], object] | int | Handlers | None

class StartInfo(TypedDict):
    gpu: bool
    reason: str | None
    cupti_path: str
    op_mode: str  # "lean" (op starts walk no Python stack) or "exact"

class Collective(TypedDict):
    collective: str
    dtype: str
    pg_name: str
    pg_desc: str
    world_size: int
    calls: int
    in_bytes: int
    out_bytes: int

class Counters(TypedDict):
    """stop()'s counters, saved as meta.capture. Generated from one list in csrc/counters.h
    (DLPT_COUNTERS); tests/native/test_counters.py holds this class to it, field by field."""

    activity_records: int  # CUPTI activity records processed
    delivered_gpu_ns: int  # kernel+copy+memset time CUPTI delivered for launches in the window
    dropped_records: int  # activity records CUPTI reported dropped
    unknown_correlation: int  # activity records whose launch context was unknown
    unknown_gpu_ns: int  # GPU time of those records
    submitted: int  # launches mapped while recording and awaiting activity
    completed: int  # distinct correlation ids of mapped launches seen in activity
    outside_window: int  # activity records of launches made while not collecting
    backward_unresolved: int  # backward ops whose forward op was not found
    code_lost: int  # frames whose code object was freed before it could be described
    graph_nodes_captured: int  # CUDA graph nodes whose capture context is known
    graph_replay_ns: int  # GPU time of replayed graph kernels, copies and memsets
    graph_unmapped_ns: int  # ... of graph nodes captured before profiling started
    tree_overflow: int  # new paths charged to their parent after the node limit was hit
    unmatched_op_ends: int  # op ends whose start was not seen (or overflowed the record stack)
    rf_windows: int  # outermost ops run with RecordFunction off inside (windows opened)
    op_records: int  # RecordFunction start callbacks run
    api_callbacks: int  # CUPTI API enter callbacks run
    self_ns: int  # sampled time inside dlpt's callbacks, scaled to all calls
    self_python_ns: int  # ... of which walking Python frames
    self_window_ns: int  # ... of which switching RecordFunction off and on
    self_api_ns: int  # ... of which in CUDA API callbacks (the rest: op and memory callbacks)
    python_walks: int  # walks of a thread's Python frames for a path from the root (per-thread sums)
    python_frames_walked: int  # ... the frames they read
    anchored_walks: int  # ... of them that stopped at an anchor, a frame whose activation had not changed
    self_op_end_ns: int  # sampled time in op end callbacks (part of self_ns)
    walk_read_ns: int  # sampled time of all walks (op starts and launches) reading frames
    walk_site_ns: int  # ... finding or building their chains' paths (site and path caches, tree)
    walk_anchor_ns: int  # ... choosing and taking anchors
    site_misses: int  # walks whose frame chain no site cache held (its path was built)
    anchors_taken: int  # anchors taken: frames a later walk may stop at
    self_op_start_ns: int  # sampled time in op start callbacks (part of self_ns; their walks included)
    outermost_ops: int  # outermost forward ops started (each walks the Python stack if exact)
    op_start_name_ns: int  # sampled: outermost records finding their name's id and flags
    op_start_nodes_ns: int  # ... outermost forward ops finding their op and forward phase nodes
    op_start_rest_ns: int  # ... the rest of their start: record stack, sequence ranges, windows
    deferred_ops: int  # outermost forward ops started without a walk (lean op mode)
    deferred_at_launch: int  # ... walked at a launch, allocation or recorded nested op inside them
    deferred_at_end: int  # ... walked at their end: they launched nothing but made an autograd node
    tracing_switches: int  # set_tracing calls that switched tracing off or on
    tracing_switch_ns: int  # time those switches took, in all (flushing CUPTI's records included)
    tsc: bool  # host ticks are TSC cycles (else steady_clock nanoseconds)
    cupti_unsubscribe_error: NotRequired[str]  # why CUPTI could not be released (absent: it was)
    tracing_error: NotRequired[str]  # why GPU tracing could not be resumed (absent: it was)

class StopResult(TypedDict):
    nodes: list[RawNodeTuple]
    collectives: dict[int, Collective]  # calls in counted epochs
    collectives_outside: dict[int, Collective]  # ... in the others
    op_inputs: list[tuple[int, str, int]]  # node id, input signature (JSON text), calls (counted)
    op_inputs_outside: list[tuple[int, str, int]]  # ... calls in the other epochs
    api: list[tuple[str, int, int, int, int]]  # name, calls, total_ns, min_ns, max_ns
    gpu_busy_ns: dict[str, int]  # in counted epochs' step intervals (all of it without epochs)
    gpu_busy_outside_ns: dict[str, int]  # the rest
    gpu_comm_ns: dict[str, int]
    gpu_comm_exposed_ns: dict[str, int]
    # per device: (start, end, recorded, busy_ns, first, last) between step marks, CUPTI time;
    # recorded: the interval's epoch was counted (once end_epoch was called)
    gpu_steps: dict[str, list[tuple[int, int, bool, int, int, int, int, int]]]
    # collective kernels of counted epochs, by epoch and launch order: (device, epoch, corr, name,
    # start, end, exposed ns in each of 16 equal parts of the kernel) (csrc/cct/collectives.h)
    gpu_collectives: list[tuple[int, int, int, str, int, int, tuple[int, ...]]]
    gpu_collectives_over_limit: int  # collective kernels past the core's limit, not kept
    counters: Counters
    tracing_switches: list[tuple[bool, int]]  # each set_tracing switch: (on, ns it took)
    gpu: bool
    op_mode: str  # "lean" or "exact" (csrc/options.h, OpMode)
    flush_s: float
    # numbered op and scope names folded into their pattern ("batch_#"), by pattern: how many
    # (past csrc/cct/tree.h's kNamesBeforeFolding kept as they are)
    folded_names: dict[str, int]

def start(
    gpu: bool,
    cupti_candidates: list[str],
    collecting: bool = True,
    python_frames: bool = True,
    nested_ops: bool = False,
    flops_ops: list[str] = ...,
    split_backward: bool = False,
    op_mode: str = "auto",
) -> StartInfo: ...
def pause_function_records() -> int: ...
def resume_function_records(token: int) -> None: ...
def stop(last_counted: bool = False) -> StopResult: ...
def end_epoch(counted: bool) -> int: ...
def cut_counted(extend: bool = False) -> None: ...
def restore_last_cut() -> None: ...
def set_collecting(on: bool) -> None: ...
def set_tracing(on: bool) -> None: ...
def mark_step() -> None: ...
def drain_code_refs() -> None: ...
def running() -> bool: ...
def scope_push(name: str, skip_frames: int) -> None: ...

# -- host capture (csrc/host/bindings.cpp): the sampler, the idle blame, the timeline window --

class HostStart(TypedDict):
    sampling: bool
    reason: str | None  # why the sampler is off, when it was asked for
    method: str  # how frames are read: "process_vm_readv", "/proc/self/mem" or "none"

class HostBlame(TypedDict):
    steps: int
    gpu: bool
    host: list[tuple[int, int, int]]  # (node id, ns, gil ns): the step thread's samples
    devices: dict[str, dict[str, list[tuple[int, int, int]]]]  # device -> before/between/after/busy
    samples_dropped: int
    spans_dropped: int
    resolved_early: int
    late_spans: int

class HostTimeline(TypedDict):
    steps_requested: int
    steps_kept: int
    start_ns: int
    end_ns: int
    dropped: int
    # (kind, start, end, track, node or -1, detail, corr, flags); see csrc/host/timeline.h
    events: list[tuple[int, int, int, int, int, int, int, int]]
    api_names: dict[int, str]

class SamplerStats(TypedDict):
    """The sampler's numbers, defined once in csrc/host/sampler.h (DLPT_SAMPLER_STATS);
    tests/native/test_native_fields.py holds this class to it, field by field."""

    ticks: int
    samples: int
    torn: int
    missed: int
    scope_retries: int
    codes_lost: int
    max_threads: int
    sampler_cpu_ns: int
    sampled_wall_ns: int
    safe_reads: int

class HostResult(TypedDict):
    sampled: bool
    hz: int
    method: str
    stats: SamplerStats
    cells: list[tuple[int, int, int, int, int]]  # node id, wall ns, GIL ns, CPU ns, samples (counted steps)
    cells_outside: list[tuple[int, int, int, int, int]]  # the same outside counted steps
    blame: HostBlame | None
    timeline: HostTimeline | None

def host_start(
    sample_hz: int, timeline_steps: int = 0, timeline_events: int = 500000, timeline_armed: bool = True
) -> HostStart: ...
def host_arm_timeline() -> None: ...
def host_stop() -> None: ...
def host_result() -> HostResult: ...
def host_running() -> bool: ...
def scope_pop() -> None: ...
def activation_started(code: CodeType, offset: int) -> None: ...
def anchors_enable(
    tool_id: int,
    set_local_events: Callable[[int, CodeType, int], object],  # sys.monitoring's
    get_local_events: Callable[[int, CodeType], int],
    py_start: int,
) -> None: ...
def anchors_disable() -> None: ...
def anchors_stats() -> dict[str, int]: ...
def pairwise_trend(values: Sequence[float]) -> tuple[float, int]: ...
def floor_records() -> int: ...

# Memory capture (csrc/memory/memory_bindings.cpp; read by dlpt.capture.memory).
class MemoryStartInfo(TypedDict):
    enabled: bool
    reason: str | None

MemoryStepPeak = tuple[int, int, int, int]

class MemoryDevice(TypedDict):
    type: int  # c10::DeviceType's value (0 CPU, 1 CUDA)
    index: int  # -1 for the CPU
    allocated: int  # the allocator's last totals
    reserved: int
    # per counted step: peak allocated, reserved at that peak, peak reserved, traced at the peak
    # (csrc/memory/tracker.h, DLPT_MEMORY_STEP_PEAK)
    steps: list[MemoryStepPeak]

class MemoryOom(TypedDict):
    device: int  # index into MemoryExport.devices
    requested: int
    allocated: int
    reserved: int
    node: int  # the failing allocation's context (-1: unknown)
    count: int

class MemoryExport(TypedDict):
    devices: list[MemoryDevice]
    # node id, device (index into devices), bytes allocated, allocations, sum over counted steps of
    # bytes live at the step's peak, bytes live at the first failed allocation
    nodes: list[tuple[int, int, int, int, int, int]]
    oom: MemoryOom | None
    events: int
    missed_frees: int

def memory_start(track_cpu: bool) -> MemoryStartInfo: ...
def memory_step_begin() -> None: ...
def memory_step_end(counted: bool) -> None: ...
def memory_restart_steps(extend: bool = False) -> None: ...
def memory_restore_steps() -> None: ...
def memory_stop(run_as_step: bool) -> MemoryExport: ...
def memory_suspend() -> None: ...
def memory_resume() -> None: ...

# ---- CUPTI PC sampling (csrc/pcsampling/bindings.cpp; dlpt/capture/pc_sampling.py) -----------

class PcInfo(TypedDict):
    ok: bool  # CUPTI's PC sampling API found
    reason: str  # why not
    cupti_path: str
    cupti_version: int
    built_with: int  # CUPTI_API_VERSION of the headers

class PcCall(TypedDict):
    ok: bool
    error: str

class PcWatch(PcCall):
    how: str  # how module loads are watched

class PcStarted(PcCall):
    log: list[str]

class PcLine(TypedDict):
    function: str  # the kernel, demangled as the tracer names it
    file: str
    line: int
    samples: int
    stalls: dict[str, int]  # stall reason -> samples (reasons with none left out)

class PcStopped(PcCall):
    log: list[str]
    lines: list[PcLine]
    total_samples: int
    dropped_samples: int
    non_user_samples: int
    hardware_buffer_full: bool
    pcs: int
    pcs_resolved: int
    pcs_without_cubin: int
    unresolved: dict[str, str]  # kernel -> why its PCs got no line
    cubins: int
    cubin_bytes: int

class PcReasons(TypedDict):
    names: list[str]
    error: str
    log: list[str]

def pc_sampling_info(candidates: list[str]) -> PcInfo: ...
def pc_sampling_watch(candidates: list[str]) -> PcWatch: ...
def pc_sampling_start(candidates: list[str], period_log2: int) -> PcStarted: ...
def pc_sampling_stop(candidates: list[str]) -> PcStopped: ...
def pc_sampling_disable(candidates: list[str]) -> list[str]: ...
def pc_sampling_stall_reasons(candidates: list[str]) -> PcReasons: ...

# ---- The end of the process after a signal (csrc/ending/; dlpt/capture/signal_end.py) ----------

def end_watch(signum: int, ends: bool, take_default: bool) -> bool: ...
def end_set_handler(
    set_fn: Callable[[int, SignalHandler], SignalHandler], signum: int, handler: SignalHandler
) -> tuple[SignalHandler, int]: ...
def end_unwatch(signum: int) -> None: ...
def end_watching(signum: int) -> bool: ...
def end_grace(seconds: float) -> None: ...
def end_arm(signum: int) -> None: ...
def end_disarm() -> None: ...
def end_armed() -> int: ...
def end_text(prefix: str, tail: str) -> None: ...
def end_partial(paths: list[str]) -> None: ...
def end_open_queue() -> int: ...
def end_close_queue() -> None: ...
def end_next_signal(generation: int, timeout_s: float) -> int: ...
def run_own_thread(fn: Callable[[], object]) -> None: ...
