"""What a number of the report is: a :class:`Metric` reads one value (GPU time, CPU op time,
launches, bytes, ...) from a node's metrics, and :data:`METRICS` names every one a report, an
export or a comparison can rank by."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from dlpt.errors import UsageError
from dlpt.model.tree import Node

__all__ = [
    "Metric",
    "METRICS",
    "COMM",
    "WAIT",
    "CPU_FLOOR",
    "get_metric",
    "default_metric",
    "default_metric_of",
]


@dataclass(frozen=True)
class Metric:
    """A value derived from a node's metrics dict. ``unit`` is "ns", "count" or "bytes"."""

    name: str
    label: str
    unit: str
    fn: Callable[[Mapping[str, int]], int]

    def __call__(self, m: Mapping[str, int]) -> int:
        return self.fn(m)


def _key(k: str) -> Callable[[Mapping[str, int]], int]:
    return lambda m: m.get(k, 0)


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric(
            "gpu",
            "GPU time (kernels + copies + memsets)",
            "ns",
            lambda m: m.get("gpu_ns", 0) + m.get("copy_ns", 0) + m.get("memset_ns", 0),
        ),
        Metric("cpu", "CPU time of aten ops", "ns", _key("cpu_ns")),
        Metric("sync", "host time blocked in CUDA synchronisation", "ns", _key("sync_ns")),
        Metric("api", "CUDA API host time", "ns", _key("api_ns")),
        Metric("kernel", "GPU kernel time", "ns", _key("gpu_ns")),
        Metric("copy", "GPU copy time", "ns", _key("copy_ns")),
        Metric("memset", "GPU memset time", "ns", _key("memset_ns")),
        Metric("kernels", "kernel launches", "count", _key("kernels")),
        Metric("calls", "op calls", "count", _key("calls")),
        Metric("bytes", "bytes copied", "bytes", _key("copy_bytes")),
        # --memory (dlpt.capture.memory): bytes a context's blocks held at each step's peak of
        # allocated memory (a saved activation on its forward line), what it allocated, how often.
        Metric(
            "mem_peak", "memory held at the step's peak of allocated memory", "bytes", _key("mem_peak_bytes")
        ),
        Metric("mem_alloc", "memory allocated", "bytes", _key("mem_alloc_bytes")),
        Metric("mem_allocs", "allocations", "count", _key("mem_allocs")),
        Metric("host", "sampled host time (wall time of the thread at the line)", "ns", _key("host_ns")),
        Metric("host_gil", "sampled host time holding the GIL (running Python)", "ns", _key("host_gil_ns")),
        Metric("host_cpu", "sampled host CPU time (the thread on a CPU)", "ns", _key("host_cpu_ns")),
    )
}


def get_metric(name: str | Metric) -> Metric:
    """Look a metric up by name; raise UsageError naming the valid choices."""
    if isinstance(name, Metric):
        return name
    try:
        return METRICS[name]
    except KeyError:
        raise UsageError(f"unknown metric {name!r}; choose one of: {', '.join(METRICS)}") from None


def default_metric(root: Node) -> Metric:
    """The "gpu" metric when the tree holds any GPU time, else "cpu" (root inclusive must be set)."""
    return default_metric_of(root.inclusive)


def default_metric_of(totals: Mapping[str, int]) -> Metric:
    """The "gpu" metric when ``totals`` hold any GPU time, else "cpu"."""
    return METRICS["gpu"] if METRICS["gpu"](totals) > 0 else METRICS["cpu"]


#: Communication beside compute: the GPU time of collective kernels, and the host time waiting
#: for collectives (a column of the tree views, the cross-rank report's comparison of ranks).
COMM = Metric("comm", "communication GPU time (collective kernels)", "ns", lambda m: m.get("comm_ns", 0))
WAIT = Metric("wait", "host time waiting for collectives", "ns", lambda m: m.get("comm_wait_ns", 0))
#: CPU op time with every call at its op's fastest (calls x the fastest call's self time, the
#: session's ``cpu_floor_ns``; dlpt.capture.native): what ``dlpt diff`` judges a CPU line on
#: where the host's delays leave its mean too noisy (docs/numbers.md). Not a column: a witness.
CPU_FLOOR = Metric(
    "cpu_floor", "CPU time of aten ops, each call at its op's fastest", "ns", _key("cpu_floor_ns")
)
