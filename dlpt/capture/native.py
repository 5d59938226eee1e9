"""The sole importer of the native extension ``dlpt._C``, and the translation of what it exports
into the session format (docs/session-format.md).

``import dlpt`` must work everywhere (no GPU, no CUDA): the extension is loaded on first use and a
missing or broken build becomes a :class:`~dlpt.errors.NativeUnavailableError` that says how to
build it.
"""

from __future__ import annotations

import glob
import os
import re
import site
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

from dlpt.errors import NativeUnavailableError, UsageError
from dlpt.model.kernel_names import shorten_kernel_name

if TYPE_CHECKING:
    from dlpt._C import Collective, NodeExtras, RawNodeTuple

_module: ModuleType | None = None


def core() -> ModuleType:
    """Return ``dlpt._C``, importing torch first (the extension links against its libraries).
    Its interface is typed in dlpt/_C.pyi."""
    global _module
    if _module is None:
        try:
            import torch  # noqa: F401  (loads libtorch_cpu/libc10 that _C needs)

            import dlpt._C as _C  # the extension itself, not through the package face
        except ImportError as e:
            raise NativeUnavailableError(
                f"dlpt's native extension is not built or does not match this torch ({e}).\n"
                "Build it in this environment with: pip install --no-build-isolation -e ."
            ) from None
        _module = _C
    return _module


def start(
    gpu: bool, *, nested_ops: bool, flops_ops: list[str], split_backward: bool, op_mode: str
) -> dict[str, Any]:
    """The native core's start (recording at once, Python frames walked; ``op_mode``: how op
    starts find their line, dlpt.capture.op_mode). A bad value of one of its environment
    switches (DLPT_FLOOR, DLPT_SUSPEND: csrc/options.h) is a UsageError, said in one line."""
    try:
        info: dict[str, Any] = core().start(
            gpu,
            cupti_candidates() if gpu else [],
            True,
            nested_ops=nested_ops,
            flops_ops=flops_ops,
            split_backward=split_backward,
            op_mode=op_mode,
        )
    except ValueError as e:  # std::invalid_argument: only a switch's value (csrc/options.cpp)
        raise UsageError(str(e)) from None
    return info


def cupti_candidates() -> list[str]:
    """Where to look for libcupti when the process has not loaded one yet, in order.

    DLPT_CUPTI_PATH first (an explicit override), then the copy shipped with torch's CUDA wheels
    (site-packages/nvidia/cu13|cu12/lib, nvidia/cuda_cupti/lib), then the CUDA toolkit.
    """
    out: list[str] = []
    override = os.environ.get("DLPT_CUPTI_PATH")
    if override:
        out.append(override)
    roots = [*site.getsitepackages(), site.getusersitepackages()]
    for root in roots:
        for sub in ("cu13", "cu12", "cuda_cupti"):
            out += sorted(glob.glob(os.path.join(root, "nvidia", sub, "lib", "libcupti.so*")))
    for home in filter(None, [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]):
        for sub in ("extras/CUPTI/lib64", "lib64", "lib"):
            out += sorted(glob.glob(os.path.join(home, sub, "libcupti.so*")))
    return list(dict.fromkeys(out))  # first occurrence of each, in order


_VERSION_SUFFIX = re.compile(r"_v\d+$")


def api_display_name(name: str) -> str:
    """cudaLaunchKernel_v7000 -> cudaLaunchKernel (CUPTI's callback names carry an API version)."""
    return _VERSION_SUFFIX.sub("", name)


class RawMetrics(NamedTuple):
    """A node's counters as the core exports them (csrc/export/nodes.h, ExportedMetrics).
    `gpu_ns` is the activity time of whatever the node is (kernel, copy or memset); `completed`
    how many finished."""

    calls: int
    cpu_ns: int
    gpu_ns: int
    completed: int  # kernels / copies / memsets / syncs
    bytes: int
    sync_ns: int
    api_ns: int
    min_ns: int
    max_ns: int


_NO_METRICS = RawMetrics(0, 0, 0, 0, 0, 0, 0, 0, 0)


class RawNode(NamedTuple):
    """One node of the core's tree (csrc/export/nodes.h, ExportedNode): its metrics of counted
    epochs (per-step work) and of the others (outside the steps; see csrc/cct/epochs.h)."""

    id: int
    parent: int
    kind: str
    name: str
    file: str
    line: int
    counted: RawMetrics
    outside: RawMetrics
    extras: NodeExtras

    @classmethod
    def of(cls, t: RawNodeTuple | tuple[Any, ...]) -> RawNode:
        # An 8-tuple: a core from before epochs, everything it recorded counts; a 10-tuple ends
        # with the per-step second moments (not kept here).
        outside = RawMetrics(*t[7]) if len(t) >= 9 else _NO_METRICS
        return cls._make([*t[:6], RawMetrics(*t[6]), outside, t[8] if len(t) >= 9 else t[-1]])


# Which of a node's counters (RawMetrics fields by index) its kind keeps, under which names, in
# the order a session lists them; api_ns on every kind. Counters that are zero are left out.
_METRIC_NAMES: dict[str, tuple[tuple[int, str], ...]] = {
    "kernel": ((2, "gpu_ns"), (3, "kernels"), (7, "min_ns"), (8, "max_ns"), (6, "api_ns")),
    "memcpy": ((2, "copy_ns"), (3, "copies"), (4, "copy_bytes"), (7, "min_ns"), (8, "max_ns"), (6, "api_ns")),
    "memset": ((2, "memset_ns"), (3, "memsets"), (7, "min_ns"), (8, "max_ns"), (6, "api_ns")),
    "sync": ((5, "sync_ns"), (3, "syncs"), (6, "api_ns")),
}
_CPU_NAMES = ((0, "calls"), (1, "cpu_ns"), (6, "api_ns"))


def _metrics(kind: str, t: tuple[int, ...]) -> dict[str, int]:
    """The session metrics of a node of ``kind`` from its RawMetrics counters."""
    if kind in _METRIC_NAMES:
        return {k: t[i] for i, k in _METRIC_NAMES[kind] if t[i]}
    # frames, ops, phases, scopes, threads (nearly every node): _CPU_NAMES inlined
    m = {}
    if t[0]:
        m["calls"] = t[0]
    if t[1]:
        m["cpu_ns"] = t[1]
    if t[6]:
        m["api_ns"] = t[6]
    return m


# The metric each second moment belongs to (sq_cpu_ns, sq_gpu_ns, sq_sync_ns), by node kind.
_MOMENT_NAMES: dict[str, tuple[str | None, str | None, str | None]] = {
    "kernel": (None, "gpu_ns", None),
    "memcpy": (None, "copy_ns", None),
    "memset": (None, "memset_ns", None),
    "sync": (None, None, "sync_ns"),
}


#: A node's *floor*: its op's calls times the op's fastest call's CPU self time (the core's
#: ``min_ns`` on the node its self time goes to: a backward or nested op itself, or an outermost
#: op's ``<forward>`` phase, whose op holds the calls). A busy host's preemptions stretch some
#: calls of an op, never the fastest of many: ``dlpt diff`` judges a CPU line on it where the
#: line's mean per step is too noisy to tell (docs/numbers.md, "dlpt diff").
FLOOR_KEY = "cpu_floor_ns"
_FLOOR_KINDS = frozenset({"op", "scope", "phase"})


def _floor_calls(kind: str, name: str, own_calls: int, parent: dict[str, Any] | None, key: str) -> int:
    """The calls a node's fastest self time stands for: its own (an op, a scope), or, for an
    outermost op's ``<forward>`` phase, its op's (``parent[key]``: the parent's ``m`` or ``o``);
    0 for the rest (a ``<backward>`` phase holds the engine wrapper's time, once per backward
    node, not per call of the op above it)."""
    if kind in ("op", "scope"):
        return own_calls
    if kind == "phase" and name == "<forward>" and parent is not None and parent["kind"] == "op":
        return int((parent.get(key) or {}).get("calls", 0))
    return 0


def _add_floor(m: dict[str, int], t: tuple[int, ...], calls: int) -> None:
    """Put the floor (FLOOR_KEY) on ``m`` from RawMetrics ``t`` and the calls it stands for."""
    if t[7] and calls and t[1]:
        m[FLOOR_KEY] = min(t[1], calls * t[7])  # never above the time it is a floor of


def _moments(kind: str, sq: tuple[float, float, float]) -> dict[str, float]:
    """A node's ``q``: per metric, the sum over counted steps of the step's amount squared (ns^2;
    docs/session-format.md), for the time metric its kind keeps."""
    names = _MOMENT_NAMES.get(kind, ("cpu_ns", None, None))
    return {name: float(v) for name, v in zip(names, sq, strict=True) if name is not None and v > 0}


def _comm_metrics(m: dict[str, int], coll: Collective) -> None:
    for key, value in (
        ("comm_calls", coll["calls"]),
        ("comm_in_bytes", coll["in_bytes"]),
        ("comm_out_bytes", coll["out_bytes"]),
    ):
        if value:
            m[key] = value


def _with_extras(
    node: dict[str, Any], extras: Mapping[str, object], coll: Collective | None, counted: bool = True
) -> dict[str, Any]:
    """``node`` with its extras (``x``): the core's, a collective's (what it is; its metrics
    go on ``m`` when ``counted``, else the caller puts them on ``o``), a kernel's full name."""
    kind, name = node["kind"], node["name"]
    x = {k: (list(v) if isinstance(v, tuple) else v) for k, v in extras.items()}
    if coll is not None:
        x.update(
            collective=coll["collective"],
            dtype=coll["dtype"],
            pg_name=coll["pg_name"],
            pg_desc=coll["pg_desc"],
            world_size=coll["world_size"],
        )
        if counted:
            _comm_metrics(node["m"], coll)
    if kind == "kernel":
        x["full_name"] = name
        node["name"] = shorten_kernel_name(name)
    elif kind == "sync":
        node["name"] = "[sync " + api_display_name(name[len("[sync ") : -1]) + "]"
    if x:
        node["x"] = x
    return node


class NodeTable(NamedTuple):
    """The session's node table built from the core's nodes (same ids): each node's counted
    metrics in ``m`` and, when it has any, its metrics outside counted steps in ``o``
    (docs/session-format.md)."""

    nodes: list[dict[str, Any]]
    outside: bool  # whether any node has work outside counted steps


def node_table(
    raw: list[RawNodeTuple],
    collectives: dict[int, Collective] | None = None,
    collectives_outside: dict[int, Collective] | None = None,
) -> NodeTable:
    """Convert the core's node tuples into session nodes. Every node keeps the metrics of
    counted epochs (per-step work) in ``m`` and those of the other epochs (work outside the
    steps: set-up, warm-up, the end of the run) in ``o``, so whatever sums ``m`` over the table
    counts step work only, and the work outside steps is one field away, on the same calling
    contexts. `collectives` (from stop()) adds what each c10d op moved in counted epochs,
    `collectives_outside` in the others.

    ``raw`` is converted in place and returned: each tuple is freed as its node is made, so a
    million nodes never exist twice (the core's export and the session)."""
    collectives = collectives or {}
    collectives_outside = collectives_outside or {}
    nodes: list[Any] = raw
    any_outside = False
    for i, t in enumerate(raw):
        sq: tuple[float, float, float] | None = None
        if len(t) == 10:  # with the per-step second moments (csrc/cct/epochs.h)
            nid, parent, kind, name, file, line, counted, out, extras, sq = t
        elif len(t) == 9:  # a core from before the second moments
            nid, parent, kind, name, file, line, counted, out, extras = t  # type: ignore[misc]  # 9-tuple
        else:  # a core from before epochs: everything counted
            nid, parent, kind, name, file, line, counted, extras = t  # type: ignore[misc]  # old 8-tuple
            out = _NO_METRICS
        node: dict[str, Any] = {
            "id": nid,
            "parent": parent,
            "kind": kind,
            "name": name,
            "file": file,
            "line": line,
            "m": _metrics(kind, counted),
        }
        up = nodes[parent] if kind == "phase" and parent >= 0 else None
        if kind in _FLOOR_KINDS:
            _add_floor(node["m"], counted, _floor_calls(kind, name, counted[0], up, "m"))
        if sq is not None and any(sq):
            q = _moments(kind, sq)
            if q:
                node["q"] = q
        coll = collectives.get(nid) if collectives else None
        # A collective that ran only outside the counted steps (DDP's initial broadcast) still
        # says what it is: its signature comes from the record of the other epochs.
        sig = coll if coll is not None else collectives_outside.get(nid)
        if extras or sig is not None or kind in ("kernel", "sync"):
            node = _with_extras(node, extras, sig, counted=coll is not None)
        if any(out) or (collectives_outside and nid in collectives_outside):
            o = _metrics(kind, out)
            if kind in _FLOOR_KINDS:
                _add_floor(o, out, _floor_calls(kind, name, out[0], up, "o"))
            coll_out = collectives_outside.get(nid)
            if coll_out is not None:
                _comm_metrics(o, coll_out)
            if o:
                node["o"] = o
                any_outside = True
        nodes[i] = node
    return NodeTable(nodes, any_outside)


def to_nodes(
    raw: list[RawNodeTuple],
    collectives: dict[int, Collective] | None = None,
    collectives_outside: dict[int, Collective] | None = None,
) -> list[dict[str, Any]]:
    """The session nodes of :func:`node_table` (``raw`` converted in place)."""
    return node_table(raw, collectives, collectives_outside).nodes


def api_table(raw: list[tuple[str, int, int, int, int]]) -> list[dict[str, Any]]:
    """CUDA API call statistics, one row per function (versions merged), busiest first."""
    rows: dict[str, dict[str, Any]] = {}
    for name, calls, total, mn, mx in raw:
        key = api_display_name(name)
        r = rows.setdefault(key, {"name": key, "calls": 0, "total_ns": 0, "min_ns": mn, "max_ns": 0})
        r["calls"] += calls
        r["total_ns"] += total
        r["min_ns"] = min(r["min_ns"], mn)
        r["max_ns"] = max(r["max_ns"], mx)
    return sorted(rows.values(), key=lambda r: -r["total_ns"])


def gpu_steps(raw: dict[str, list[tuple[int, ...]]]) -> dict[str, list[dict[str, int]]]:
    """Per device, each recorded step's GPU time line (docs/session-format.md, meta.gpu_steps):
    its span between host step boundaries, GPU busy time inside it, the idle time before its
    first and after its last GPU work, and its communication (and the exposed part of it) when
    collectives ran. From stop()'s (start, end, recorded, busy, first, last, carried_until[,
    comm, exposed]).

    A step's first and last work are of the work it launched, and the idle time before its
    first work starts where the work launched before it ends (``carried_until``): a GPU still
    running the last step's kernels, or ones it queued, when the host starts the next step is
    not waiting for it, nor are they that step's first work (csrc/cct/busy.h)."""
    out: dict[str, list[dict[str, int]]] = {}
    for dev, intervals in raw.items():
        rows = []
        for start, end, recorded, busy, first, last, carried_until, *comm in intervals:
            if not recorded:
                continue
            span = max(0, end - start)  # never negative in the session (meta.gpu_steps is typed)
            worked = bool(first and last)
            idle_from = min(max(start, carried_until), end)
            row = {
                "span_ns": span,
                "busy_ns": busy,
                "idle_before_ns": max(0, min(first, end) - idle_from) if worked else end - idle_from,
                "idle_after_ns": max(0, end - max(last, start)) if worked else 0,
            }
            if len(comm) == 2 and comm[0]:
                row["comm_ns"], row["exposed_ns"] = comm[0], comm[1]
            rows.append(row)
        out[dev] = rows
    return out


COLLECTIVE_BINS = 16  # csrc/cct/collectives.h kCollectiveBins


def gpu_collectives(raw: list[tuple[Any, ...]], over_limit: int = 0) -> dict[str, Any] | None:
    """The collective kernels of the counted steps (docs/session-format.md,
    meta.gpu_collectives), columns of one row per kernel in stop()'s order (epoch, then launch
    order): from stop()'s (device, epoch, corr, name, start, end, exposed ns per bin). Each bin's
    exposed time becomes its share of the bin, 0 to 255, two hex digits a bin. None without any.
    Up to the core's 262,144 kernels at stop: the shares are tensor arithmetic, names are
    shortened once each."""
    if not raw:
        return None
    import torch

    devices, epochs, _corrs, raw_names, starts, ends, bins = zip(*raw, strict=True)
    ids: dict[str, int] = {}  # the shortened name's index, by the core's name
    names: dict[str, int] = {}
    for n in set(raw_names):
        ids[n] = names.setdefault(shorten_kernel_name(n), len(names))
    dur = (torch.tensor(ends, dtype=torch.int64) - torch.tensor(starts, dtype=torch.int64)).clamp(min=0)
    edges = dur.unsqueeze(1) * torch.arange(COLLECTIVE_BINS + 1, dtype=torch.int64) // COLLECTIVE_BINS
    width = (edges[:, 1:] - edges[:, :-1]).to(torch.float64)
    exposed = torch.tensor(bins, dtype=torch.float64)[:, :COLLECTIVE_BINS]
    share = torch.where(width > 0, (255 * exposed / width.clamp(min=1)).round().clamp(0, 255), 0)
    hexed = bytes(share.to(torch.uint8).flatten().tolist()).hex()
    width_hex = 2 * COLLECTIVE_BINS
    out: dict[str, Any] = {
        "names": list(names),
        "device": [int(d) for d in devices],
        "epoch": [int(e) for e in epochs],
        "name": [ids[n] for n in raw_names],
        "start_ns": [int(t) for t in starts],
        "dur_ns": dur.tolist(),
        "exposed": [hexed[i : i + width_hex] for i in range(0, len(hexed), width_hex)],
    }
    if over_limit:
        out["over_limit"] = int(over_limit)
    return out
