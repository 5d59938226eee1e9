"""Type stub of the native core (csrc/bindings.cpp). Only dlpt.capture.native imports it.

Keep in step with bindings.cpp: the node tuple's fields are named by
dlpt.capture.native.RawNode / RawMetrics, which unpack it.
"""

from typing import Any, TypedDict

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
    counters: dict[str, Any]
    gpu: bool
    flush_s: float

def start(
    gpu: bool,
    cupti_candidates: list[str],
    collecting: bool = True,
    python_frames: bool = True,
    nested_ops: bool = False,
    floor: int = 0,
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
def scope_pop() -> None: ...
def floor_records() -> int: ...
