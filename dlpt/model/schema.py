"""The shape of the loosely typed parts of a session: every typed meta key, and the node extras
(``x``) that reports read (docs/session-format.md).

Renderers index into meta (``ev["break_reasons"]``, ``int(a["calls"])``, ``f"{v:.2f}"``), so a
loaded session is checked here first, all the way down: a key of the wrong type anywhere would
otherwise surface as a TypeError in the middle of a report. Integers are bounded (non-negative,
below 2**64, what the native core counts in) so that formatting them can never overflow a float.

Keys not listed here (in meta or in ``x``) are kept untouched: producers may add metadata without
a format bump. A listed meta key set to ``null`` reads as absent (older writers did that).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dlpt.model.safe_text import escape_control

__all__ = ["SchemaError", "check_meta", "check_extras", "check_int", "MAX_INT"]

MAX_INT = 2**64  # exclusive bound of every count and time in a session

Check = Callable[[Any, str], None]


class SchemaError(Exception):
    """``where`` (e.g. ``meta.compile[0].line``) and what is wrong with it."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where} {problem}")


def check_int(v: object) -> bool:
    """A count or a time in ns: an int (not a bool) in [0, 2**64)."""
    return type(v) is int and 0 <= v < MAX_INT


def _int(v: Any, where: str) -> None:
    if not check_int(v):
        raise SchemaError(where, f"must be a non-negative integer below 2**64, got {_short(v)}")


def _signed_int(v: Any, where: str) -> None:
    if type(v) is not int or not -MAX_INT < v < MAX_INT:
        raise SchemaError(where, f"must be an integer, got {_short(v)}")


def _str(v: Any, where: str) -> None:
    if type(v) is not str:
        raise SchemaError(where, f"must be a string, got {_short(v)}")


def _bool(v: Any, where: str) -> None:
    if type(v) is not bool:
        raise SchemaError(where, f"must be true or false, got {_short(v)}")


def _num(v: Any, where: str) -> None:
    if type(v) not in (int, float):
        raise SchemaError(where, f"must be a number, got {_short(v)}")


def _seconds(v: Any, where: str) -> None:
    """A duration in seconds: a finite number >= 0 (NaN, infinities and negative times are what
    a broken clock or a hostile file holds, never a measurement)."""
    if type(v) not in (int, float) or not 0 <= v < float("inf"):
        raise SchemaError(where, f"must be a duration in seconds (a finite number >= 0), got {_short(v)}")


def _short(v: object) -> str:
    text = type(v).__name__ if isinstance(v, (dict, list)) else repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _optional(check: Check) -> Check:
    def run(v: Any, where: str) -> None:
        if v is not None:
            check(v, where)

    return run


def _quick(check: Check) -> Callable[[Any], bool]:
    """A predicate that is true for values ``check`` accepts, false for some it also accepts:
    what a container checks first, so that the message naming the item (a string built per
    item: seconds for the 100,000 lines of ``meta.sources``) is built only to say what is wrong."""
    return _QUICK.get(check, lambda _v: False)


def _list_of(check: Check) -> Check:
    ok = _quick(check)

    def run(v: Any, where: str) -> None:
        if type(v) is not list:
            raise SchemaError(where, f"must be a list, got {_short(v)}")
        for i, item in enumerate(v):
            if not ok(item):
                check(item, f"{where}[{i}]")

    return run


def _dict_of(check: Check, key: Check = _str) -> Check:
    ok, key_ok = _quick(check), _quick(key)

    def run(v: Any, where: str) -> None:
        if type(v) is not dict:
            raise SchemaError(where, f"must be an object, got {_short(v)}")
        for k, item in v.items():
            if not key_ok(k):
                key(k, f"{where} key {_short(k)}:")
            if not ok(item):
                check(item, f"{where}.{escape_control(k)}")

    return run


def _obj(required: Mapping[str, Check] | None = None, optional: Mapping[str, Check] | None = None) -> Check:
    """An object with these keys (others allowed and kept)."""

    def run(v: Any, where: str) -> None:
        if type(v) is not dict:
            raise SchemaError(where, f"must be an object, got {_short(v)}")
        for k, check in (required or {}).items():
            if k not in v:
                raise SchemaError(where, f"lacks the key {k!r}")
            check(v[k], f"{where}.{k}")
        for k, check in (optional or {}).items():
            if k in v:
                check(v[k], f"{where}.{k}")

    return run


def _line_number(k: Any, where: str) -> None:
    if type(k) is not str or not k.isdigit() or not k.isascii():
        raise SchemaError(where, "must be a line number written as a decimal string")


_QUICK: dict[Check, Callable[[Any], bool]] = {
    _str: lambda v: type(v) is str,
    _int: check_int,
    _line_number: lambda k: type(k) is str and k.isdigit() and k.isascii(),
}

_COMPILE_EVENT = _obj(
    required={"function": _str, "file": _str, "line": _int, "break_reasons": _list_of(_str)},
    optional={
        "compile_id": _str,
        "compile_s": _seconds,
        "backend_s": _seconds,
        "inductor_s": _seconds,
        "graph_ops": _int,
        "recompile_reason": _optional(_str),
        "fail": _optional(_str),
        "resume_of": _obj(required={"function": _str, "line": _int}),
    },
)


def _str_or_num(v: Any, where: str) -> None:
    if type(v) not in (str, int, float):
        raise SchemaError(where, f"must be a string or a number, got {_short(v)}")


# A suggestion saved at stop (dlpt.analysis.finding.Finding.to_dict): its text is shown as it is,
# so every field a report prints is typed (``numbers`` are the estimate's inputs, for tools).
_SUGGESTION = _obj(
    required={"rule": _str, "title": _str, "gain_ns": _int},
    optional={
        "evidence": _str,
        "action": _str,
        "basis": _str,
        "per_step": _bool,
        "file": _str,
        "line": _int,
        "function": _str,
        "numbers": _dict_of(_str_or_num),
    },
)

# --memory (dlpt.capture.memory): per device the counted steps' peaks, and the allocation failure.
_MEMORY_STEP = _obj(
    required=dict.fromkeys(("peak_allocated", "reserved_at_peak", "peak_reserved", "traced_at_peak"), _int)
)
_MEMORY = _obj(
    optional={
        "enabled": _bool,
        "reason": _optional(_str),
        "tracks_cpu": _bool,
        "devices": _dict_of(
            _obj(optional={"allocated": _int, "reserved": _int, "steps": _list_of(_MEMORY_STEP)})
        ),
        "oom": _obj(
            required={"device": _str, "requested": _int, "allocated": _int, "reserved": _int},
            optional={"count": _int},
        ),
        "events": _int,
        "missed_frees": _int,
    }
)


def _int_row(width: int, signed: tuple[int, ...] = ()) -> Check:
    """A list of ``width`` integers, non-negative but for the positions in ``signed`` (>= -1)."""

    def run(v: Any, where: str) -> None:
        if type(v) is not list or len(v) != width or not all(type(x) is int for x in v):
            raise SchemaError(where, f"must be a list of {width} integers, got {_short(v)}")
        for i, x in enumerate(v):
            if not (-1 if i in signed else 0) <= x < MAX_INT:
                raise SchemaError(f"{where}[{i}]", f"is out of range: {x}")

    return run


# meta.host (dlpt.capture.host_session): the sampler's numbers and the lines of the step's thread.
_HOST_LINE = _obj(
    required={"file": _str, "line": _int, "function": _str, "ns": _int},
    optional={"gil_ns": _int, "inner": _str},
)
_HOST_SHARE = _obj(
    required={"ns": _int, "lines": _list_of(_HOST_LINE)}, optional={"gil_ns": _int, "other_ns": _int}
)
_HOST = _obj(
    optional={
        "sample_hz": _int,
        "sampling": _bool,
        "method": _str,
        "off": _str,
        **dict.fromkeys(
            (
                "ticks",
                "samples",
                "torn",
                "missed",
                "scope_retries",
                "codes_lost",
                "max_threads",
                "sampler_cpu_ns",
                "sampled_wall_ns",
                "steps",
                "resolved_early",
            ),
            _int,
        ),
        "step_thread": _HOST_SHARE,
        "idle": _dict_of(_dict_of(_HOST_SHARE)),
        "dropped": _dict_of(_int),
    }
)

# meta.timeline (dlpt.capture.timeline, read by dlpt.model.timeline, which checks the indices).
# PC sampling (--pc-sampling; dlpt/capture/pc_sampling.py, docs/pc-sampling.md). Optional: sessions
# without it (every older one) load as before.


def _pc_line(v: Any, where: str) -> None:
    """One sampled source line of a kernel: [file ("" without line info), line, samples, stalls]."""
    if not isinstance(v, list) or len(v) != 4:
        raise SchemaError(where, f"must be [file, line, samples, stalls], got {_short(v)}")
    _str(v[0], f"{where}[0]")
    _int(v[1], f"{where}[1]")
    _int(v[2], f"{where}[2]")
    _dict_of(_int)(v[3], f"{where}[3]")


_PC_SAMPLING = _obj(
    required={"steps": _int},
    optional={
        "period_log2": _int,
        "reason": _optional(_str),
        "first_step": _int,
        "last_step": _int,
        "total_samples": _int,
        "dropped_samples": _int,
        "non_user_samples": _int,
        "pcs": _int,
        "pcs_resolved": _int,
        "pcs_without_cubin": _int,
        "hardware_buffer_full": _bool,
        "unresolved": _dict_of(_str),
        "kernels": _list_of(
            _obj(
                required={"name": _str, "samples": _int},
                optional={"stalls": _dict_of(_int), "lines": _list_of(_pc_line)},
            )
        ),
        "model_lines": _list_of(
            _obj(
                required={"kernel": _str, "samples": _int},
                optional={
                    "unassigned": _int,
                    "lines": _list_of(
                        _obj(required={"file": _str, "line": _int, "samples": _int}, optional={"share": _num})
                    ),
                },
            )
        ),
    },
)

_TIMELINE = _obj(
    required={
        "strings": _list_of(_str),
        "frames": _list_of(_int_row(5, signed=(0,))),
        "tracks": _list_of(_int_row(4)),
        "events": _list_of(_int_row(8, signed=(5,))),
    },
    optional=dict.fromkeys(("steps", "steps_requested", "start_ns", "duration_ns", "dropped"), _int)
    | {"clock": _str},
)

_GPU_STEP = _obj(
    required=dict.fromkeys(("span_ns", "busy_ns", "idle_before_ns", "idle_after_ns"), _int),
    # Communication inside the step and its exposed part (dlpt 0.2 on: absent without collectives).
    optional=dict.fromkeys(("comm_ns", "exposed_ns"), _int),
)

# meta.capture's counters from the native core (csrc/bindings.cpp, stop()).
_CAPTURE_COUNTERS = (
    "activity_records",
    "delivered_gpu_ns",
    "dropped_records",
    "unknown_correlation",
    "unknown_gpu_ns",
    "submitted",
    "completed",
    "outside_window",
    "backward_unresolved",
    "code_lost",
    "graph_nodes_captured",
    "graph_replay_ns",
    "graph_unmapped_ns",
    "tree_overflow",
    "unmatched_op_ends",
    "rf_windows",
    "op_records",
    "api_callbacks",
    "self_ns",
    "self_python_ns",
    "self_window_ns",
    "tracing_switches",
    "tracing_switch_ns",
)

_STEP_TIMES = _obj(
    required={"n": _int, "median_ns": _int, "mean_ns": _int},
    optional={
        "min_ns": _int,
        "max_ns": _int,
        "p10_ns": _int,
        "p90_ns": _int,
        "median_lo_ns": _int,  # the median's interval (docs/numbers.md)
        "median_hi_ns": _int,
    },
)

SCHEMA: dict[str, Check] = {
    "argv": _list_of(_str),
    "cwd": _str,
    "python": _str,
    "torch": _str,
    "dlpt": _str,
    "started_at": _str,
    "wall_ns": _int,
    "devices": _list_of(_obj(optional={"index": _int, "name": _str, "capability": _str})),
    "gpu": _obj(optional={"enabled": _bool, "reason": _optional(_str), "cupti": _optional(_str)}),
    "steps": _obj(
        optional={
            "profiled": _int,
            "seen": _int,
            "skip_first": _optional(_int),  # None: the warm-up was detected
            "active": _optional(_int),
            "source": _optional(_str),
            "step_on": _optional(_str),
            "step_on_matched": _list_of(_str),
            "step_on_chosen": _optional(_str),
            "step_on_ignored": _dict_of(_int),
            "untraced": _int,
            "held": _int,  # steps PC sampling held: outside steps (dlpt.capture.schedule.hold)
            "warmup": _obj(
                optional={
                    "steps": _int,
                    "walls_ns": _list_of(_int),
                    "auto": _bool,
                    "reason": _str,
                    "settled": _bool,  # automatic warm-up: False when it ended at its bound
                }
            ),
            "outside": _obj(optional={"before_ns": _int, "after_ns": _int}),
        }
    ),
    "step_wall_ns": _list_of(_int),
    # Step wall times (dlpt.capture.schedule): traced (counted) and untraced steps.
    "step_time": _obj(
        optional={
            "calibrate": _bool,
            "switches": _int,
            "dropped": _int,
            "counted_ns": _int,
            "windows": _list_of(_list_of(_int)),
            "traced": _STEP_TIMES,
            "untraced": _STEP_TIMES,
            # Each untraced window against its traced neighbours (dlpt's cost, docs/numbers.md).
            "paired": _list_of(
                _obj(
                    required={"untraced_ns": _int, "traced_ns": _int},
                    optional={"steps": _list_of(_int), "untraced_n": _int, "traced_n": _int},
                )
            ),
            "paired_n": _int,
        }
    ),
    "gpu_busy_outside_ns": _dict_of(_int),
    "gpu_busy_ns": _dict_of(_int),
    "api": _list_of(
        _obj(optional={"name": _str, "calls": _int, "total_ns": _int, "min_ns": _int, "max_ns": _int})
    ),
    "dropped": _dict_of(_int),
    "unattributed": _dict_of(_int),
    "compile": _list_of(_COMPILE_EVENT),
    "cuda_graphs": _dict_of(_int),
    "gpu_comm_ns": _dict_of(_int),
    "gpu_comm_exposed_ns": _dict_of(_int),
    "gpu_steps": _dict_of(_list_of(_GPU_STEP)),
    # The native core's counters are integers (the tsc flag aside), the times the profiler adds
    # are seconds; keys of other dlpt versions pass through.
    "capture": _obj(
        optional={
            **dict.fromkeys(_CAPTURE_COUNTERS, _int),
            "tsc": _bool,
            "cupti_unsubscribe_error": _optional(_str),
            "tracing_error": _optional(_str),
            "flush_s": _seconds,
            "stop_s": _seconds,
            "pid": _int,
            "compile_failures": _dict_of(_int),
            "inductor_unmapped_frames": _int,
            "inductor_unmapped_kernels": _int,
            "backward_ops": _str,  # aten-op records in backward passes: "paused" or "kept"
        }
    ),
    "threads_running": _list_of(_str),
    # One of several ranks (dlpt.capture.ranks.env): renderers print these and index ranks by them.
    "distributed": _obj(
        required={"rank": _int, "world_size": _int},
        optional={
            "local_rank": _optional(_int),
            "hostname": _str,
            "device": _optional(_int),
            "backends": _list_of(_str),
            "source": _str,
            "run_id": _optional(_str),
        },
    ),
    "sources": _dict_of(_dict_of(_str, key=_line_number)),
    # --flops (dlpt.capture.flops, dlpt.analysis.suggest): the FLOPs summary, dlpt's pinned-copy
    # measurement, the suggestions.
    "flops": _obj(optional={"ops": _int, "flops": _int, "unevaluated": _dict_of(_int)}),
    "host_link_probe": _obj(required={"device": _str, "bytes": _int, "ns": _int}, optional={"copies": _int}),
    "suggestions": _list_of(_SUGGESTION),
    "memory": _MEMORY,
    # The host sampler (--sample-hz) and the timeline window (--timeline N).
    "host": _HOST,
    "timeline": _TIMELINE,
    "pc_sampling": _PC_SAMPLING,
}


def check_meta(meta: Mapping[str, Any]) -> None:
    """Raise :class:`SchemaError` naming the first typed key (or nested value) of the wrong shape."""
    for key, check in SCHEMA.items():
        v = meta.get(key)
        if v is not None:
            check(v, f"meta.{key}")


# Extras that reports read; the rest of ``x`` (ids, flags of other tools) is passed through.
EXTRAS: dict[str, Check] = {
    "full_name": _str,
    "device": _int,
    "grid": _list_of(_int),
    "block": _list_of(_int),
    "regs": _int,
    "smem_static": _int,
    "smem_dynamic": _int,
    "direction": _optional(_str),
    "host_mem": _optional(_str),
    "graph": _str,
    "fuses": _list_of(_str),
    "library": _bool,
    # Collectives (c10d ops): what they moved (docs/session-format.md).
    "collective": _str,
    "dtype": _str,
    "pg_name": _str,
    "pg_desc": _str,
    "world_size": _signed_int,
    # --flops: the dtype an op's FLOPs ran in, as the native core names it ("Float", "BFloat16").
    "flop_dtype": _str,
    # Communication (dlpt.capture.ranks.annotate): NCCL's algorithm and protocol of a kernel, the
    # process group's backend of a collective call dlpt wrapped.
    "algorithm": _str,
    "protocol": _str,
    "backend": _str,
    # --pc-sampling (dlpt.capture.pc_annotate): a kernel's samples, top stalls and lines; a model
    # line's sampled share of the fused kernels split onto it.
    "pc": _obj(
        required={"samples": _int},
        optional={"stalls": _dict_of(_int), "lines": _list_of(_pc_line), "unassigned": _int},
    ),
    "pc_fused": _list_of(
        _obj(
            required={"kernel": _str, "samples": _int},
            optional={"share": _num, "of": _int, "unassigned": _int},
        )
    ),
}


def check_extras(x: Mapping[str, Any], where: str) -> None:
    """Raise :class:`SchemaError` if a node's ``x`` holds a read key of the wrong shape."""
    for key, check in EXTRAS.items():
        if key in x:
            check(x[key], f"{where}.x.{key}")
