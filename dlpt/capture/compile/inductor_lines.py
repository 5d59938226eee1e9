"""Map lines of Inductor's generated code back to the model lines they came from.

Kernels and extern ops of a ``torch.compile``d model are launched from Inductor's generated
wrapper (``call()`` in a module under the Inductor cache), forward and compiled backward alike.
Inductor keeps, per generated module, a map from wrapper lines to the FX nodes' stack traces
(``PyCodeCache.stack_frames_for_code``). At stop, in the profiled process, each captured frame
of a generated module gets the user's frames for its line inserted beneath it; the generated
frame itself is a library frame and folds away in reports, so the costs land on model lines.

Kernels launched beneath a generated frame are labelled with what the wrapper says about them:
the graph they belong to (``# AOT ID: ['0_forward']``, so the same kernel name in the forward
and the backward graph, or in two compiled functions, stays apart) and the ATen ops each fused
kernel was made from (Inductor's ``# Topologically Sorted Source Nodes: [...], Original ATen:
[...]`` comments, at the kernel's definition and at its call).

Each line's model frames come from Inductor's kernel provenance where the graph was compiled with
it, else from the line map, else from the line reading what it writes
(:mod:`dlpt.capture.compile.wrapper_lines`). The wrapper's module-level lines (imports, kernel
definitions, ``async_compile.wait``) run once, when Inductor loads the module: their work is put
under an ``Inductor: loading compiled code`` scope, not counted as unmapped. Sessions loaded later
are already mapped. Generated frames that get no model line are counted (:class:`LineMapResult`)
and the report says so; failures to read the line map are counted too
(:mod:`dlpt.capture.compile.failures`).
"""

from __future__ import annotations

import functools
import logging
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from dlpt.capture.compile import failures
from dlpt.capture.compile.wrapper_lines import model_frames, wrapper_text

__all__ = ["LineMapResult", "map_generated_frames", "wrapper_info", "LOADING"]

LOADING = "Inductor: loading compiled code"  # the scope under a wrapper's module-level lines

_log = logging.getLogger(__name__)

_AOT_ID = re.compile(r"#\s*AOT ID:\s*\[\s*'([^']+)'")
_ORIGIN = re.compile(r"#.*Original ATen:\s*\[([^\]]*)\]")
_DEFINED = re.compile(r"^(\w+)\s*=\s*async_compile\.\w+\(")
_CALLED = re.compile(r"^\s*(\w+)\.run\(")
# A call-site comment applies to the kernel launched within this many lines after it (Inductor
# puts the stream lookup between the two).
_CALL_WINDOW = 3


@functools.lru_cache(maxsize=256)
def wrapper_info(path: str) -> tuple[str, dict[str, tuple[str, ...]]]:
    """(graph id, kernel name -> ATen ops it fuses) from one generated wrapper module."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError as e:  # the cache was cleaned since: no labels (counted once per file)
        failures.record("wrapper_source", e)
        return "", {}
    graph = ""
    fused: dict[str, tuple[str, ...]] = {}
    pending: tuple[str, ...] = ()
    pending_left = 0
    for text in lines:
        if not graph and (m := _AOT_ID.search(text)):
            graph = m.group(1)
        if m := _ORIGIN.search(text):
            pending = tuple(op.strip() for op in m.group(1).split(",") if op.strip())
            pending_left = _CALL_WINDOW
            continue
        launch = _DEFINED.match(text) or _CALLED.match(text)
        if launch and pending_left > 0 and pending:
            fused.setdefault(launch.group(1), pending)
            pending_left = 0
        elif text.strip() and not text.lstrip().startswith("#"):
            pending_left -= 1
    return graph, fused


def _label_kernel(node: dict[str, Any], module: str) -> None:
    """Name a kernel launched from generated module ``module`` with its graph and fused ops."""
    graph, fused = wrapper_info(module)
    x = dict(node.get("x") or {})
    raw = str(x.get("full_name") or node["name"])
    ops = fused.get(raw)
    if ops:
        x["fuses"] = list(ops)
    if graph:
        x["graph"] = graph
        node["name"] = f"{node['name']} [{graph}]"
    node["x"] = x


def _mapper() -> Any:
    """Inductor's ``PyCodeCache`` if Inductor generated code in this process, else None.

    Generated code is loaded through ``torch._inductor.codecache``, so without that module in
    ``sys.modules`` there is nothing to map (and importing it here would cost seconds)."""
    codecache = sys.modules.get("torch._inductor.codecache")
    if codecache is None:
        return None
    cache: Any = getattr(codecache, "PyCodeCache", None)
    if not isinstance(getattr(cache, "linemaps", None), dict) or not hasattr(cache, "stack_frames_for_code"):
        failures.record(
            "line_map", detail="torch._inductor.codecache.PyCodeCache has no linemaps/stack_frames_for_code"
        )
        return None
    return cache if cache.linemaps else None


@dataclass
class LineMapResult:
    """The node table with model frames inserted, and what could not be mapped: generated frames
    (innermost ones, which have costs beneath them) whose line has no model line, and the kernel
    launches beneath those frames."""

    nodes: list[dict[str, Any]]
    unmapped_frames: int = 0
    unmapped_kernels: int = 0


#: Generated frame id -> the model frames of its line, outermost first.
Chains = dict[int, list[dict[str, Any]]]


def map_generated_frames(nodes: list[dict[str, Any]]) -> LineMapResult:
    """Insert user frames under every mapped generated frame of the node table.

    Node ids are renumbered (depth-first) so parents still come before children.
    """
    cache = _mapper()
    if cache is None:
        return LineMapResult(nodes)
    chains, loading = _model_chains(cache, nodes)
    if not chains:
        return LineMapResult(nodes)
    children: dict[int, list[int]] = defaultdict(list)
    for n in nodes:
        if n["parent"] >= 0:
            children[n["parent"]].append(n["id"])
    calls_generated, launches = _callers_of_generated(nodes, chains)
    # A generated frame that calls generated code (the wrapper's `call()` running a graph
    # partition, `self.partitions[0](args)`) has no model line of its own: the line map gives
    # such a line whatever context came before it. Only the innermost generated frame maps.
    for nid in calls_generated & chains.keys():
        chains[nid] = []
    loading -= calls_generated
    unmapped = [nid for nid, chain in chains.items() if not chain and nid not in calls_generated | loading]
    if unmapped:
        _log.debug(
            "Inductor line map: %d generated lines have no model line, e.g. %s",
            len(unmapped),
            "; ".join(_described(nodes[i], launches[i]) for i in unmapped[:8]),
        )
    out = _with_model_frames(nodes, children, chains, loading)
    return LineMapResult(out, len(unmapped), sum(launches[i] for i in unmapped))


def _model_chains(cache: Any, nodes: list[dict[str, Any]]) -> tuple[Chains, set[int]]:
    """Generated frames, with the model frames of their line (outermost first; empty when the
    line has none, e.g. the wrapper's own bookkeeping), and those of module-level lines (Inductor
    loading kernels)."""
    chains: Chains = {}
    loading: set[int] = set()
    sources: dict[str, int] = defaultdict(int)
    for n in nodes:
        if n["kind"] == "frame" and n["file"] in cache.linemaps:
            try:
                where = model_frames(cache, n["file"], n["line"])
            except Exception as e:  # noqa: BLE001 - never fail a profile over a line map; counted
                failures.record("line_map", e)
                chains[n["id"]] = []
                continue
            chains[n["id"]] = list(reversed(where.frames))
            sources["loading" if where.loading else where.source or "none"] += 1
            if where.loading:
                loading.add(n["id"])
    if chains:
        _log.debug("Inductor generated lines by where their model line came from: %s", dict(sources))
    return chains, loading


def _callers_of_generated(nodes: list[dict[str, Any]], chains: Chains) -> tuple[set[int], list[int]]:
    """The generated frames that call generated code, and the kernel launches at or below each
    node (in counted steps and outside them)."""
    calls_generated: set[int] = set()
    launches = [n["m"].get("kernels", 0) + (n.get("o") or {}).get("kernels", 0) for n in nodes]
    for n in reversed(nodes):  # children come after their parents
        if n["parent"] >= 0:
            launches[n["parent"]] += launches[n["id"]]
            if n["id"] in chains or n["id"] in calls_generated:
                calls_generated.add(n["parent"])
    return calls_generated, launches


def _with_model_frames(
    nodes: list[dict[str, Any]],
    children: dict[int, list[int]],
    chains: Chains,
    loading: set[int],
) -> list[dict[str, Any]]:
    """The node table again, depth-first, with each mapped generated frame's model frames (and
    the loading scope) between it and its children, and kernels labelled with their module."""
    out: list[dict[str, Any]] = []
    # (old id, new parent, generated module the node runs under or "")
    stack: list[tuple[int, int, str]] = [(0, -1, "")]
    while stack:  # iterative: generated code can be called from very deep stacks
        old, parent, module = stack.pop()
        node = dict(nodes[old], id=len(out), parent=parent)
        out.append(node)
        attach = node["id"]
        if node["kind"] == "kernel" and module:
            _label_kernel(node, module)
        if old in chains:
            module = node["file"]
            node["x"] = dict(node.get("x") or {}, generated="inductor")
            if old in loading:
                out.append(_loading_scope(len(out), attach))
                attach = out[-1]["id"]
            for f in chains[old]:
                out.append(_model_frame(f, len(out), attach))
                attach = out[-1]["id"]
        for c in reversed(children[old]):
            stack.append((c, attach, module))
    return out


def _model_frame(f: dict[str, Any], nid: int, parent: int) -> dict[str, Any]:
    """A model line's frame, inserted under the generated frame it was compiled from."""
    return {
        "id": nid,
        "parent": parent,
        "kind": "frame",
        "name": str(f["name"]),
        "file": str(f["filename"]),
        "line": int(f["line"]),
        "m": {},
        "x": {"mapped_from": "inductor"},
    }


def _loading_scope(nid: int, parent: int) -> dict[str, Any]:
    """The scope under a module-level wrapper line: Inductor compiling and loading kernels."""
    return {"id": nid, "parent": parent, "kind": "scope", "name": LOADING, "file": "", "line": 0, "m": {}}


def _described(node: dict[str, Any], launches: int) -> str:
    """``file:line (N launches): text`` of an unmapped generated line, for the debug log."""
    lines = wrapper_text(node["file"]).lines
    text = lines[node["line"] - 1].strip()[:100] if 0 < node["line"] <= len(lines) else ""
    return f"{node['file']}:{node['line']} ({launches} launches): {text}"
