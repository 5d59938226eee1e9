"""Type stub of the native core (csrc/bindings.cpp). Only dlpt.capture.native imports it.

Keep in step with bindings.cpp: the node tuple's fields are named by
dlpt.capture.native.RawNode / RawMetrics, which unpack it.
"""

from typing import Any, NotRequired, TypedDict

# id, parent, kind, name, file, line, metrics, extras (see dlpt.capture.native.RawNode)
RawMetricsTuple = tuple[int, int, int, int, int, int, int, int, int]
RawNodeTuple = tuple[int, int, str, str, str, int, RawMetricsTuple, dict[str, Any]]

class StartInfo(TypedDict):
    gpu: bool
    reason: str | None
    cupti_path: str

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
    tsc: bool  # host ticks are TSC cycles (else steady_clock nanoseconds)
    cupti_unsubscribe_error: NotRequired[str]  # why CUPTI could not be released (absent: it was)

class StopResult(TypedDict):
    nodes: list[RawNodeTuple]
    collectives: dict[int, Collective]
    op_inputs: list[tuple[int, str, int]]  # node id, input signature (JSON text), calls
    api: list[tuple[str, int, int, int, int]]  # name, calls, total_ns, min_ns, max_ns
    gpu_busy_ns: dict[str, int]
    gpu_comm_ns: dict[str, int]
    gpu_comm_exposed_ns: dict[str, int]
    # per device: (start, end, recorded, busy_ns, first, last) between step marks, CUPTI time
    gpu_steps: dict[str, list[tuple[int, int, bool, int, int, int]]]
    counters: Counters
    gpu: bool
    flush_s: float

def start(
    gpu: bool,
    cupti_candidates: list[str],
    collecting: bool = True,
    python_frames: bool = True,
    nested_ops: bool = False,
    flops_ops: list[str] = ...,
    split_backward: bool = False,
) -> StartInfo: ...
def pause_function_records() -> int: ...
def resume_function_records(token: int) -> None: ...
def stop() -> StopResult: ...
def set_collecting(on: bool) -> None: ...
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

class HostResult(TypedDict):
    sampled: bool
    hz: int
    method: str
    stats: dict[str, int]
    cells: list[tuple[int, int, int, int, int]]  # node id, wall ns, GIL ns, CPU ns, samples
    blame: HostBlame | None
    timeline: HostTimeline | None

def host_start(sample_hz: int, timeline_steps: int = 0, timeline_events: int = 500000) -> HostStart: ...
def host_stop() -> None: ...
def host_result() -> HostResult: ...
def host_running() -> bool: ...
def scope_pop() -> None: ...
def floor_records() -> int: ...
