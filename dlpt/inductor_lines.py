"""Map lines of Inductor's generated code back to the model lines they came from.

Kernels and extern ops of a ``torch.compile``d model are launched from Inductor's generated
wrapper (``call()`` in a module under the Inductor cache), forward and compiled backward alike.
Inductor keeps, per generated module, a map from wrapper lines to the FX nodes' stack traces
(``PyCodeCache.stack_frames_for_code``). At stop, in the profiled process, each captured frame
of a generated module gets the user's frames for its line inserted beneath it; the generated
frame itself is a library frame and folds away in reports, so the costs land on model lines.

Needs no Inductor config change. Sessions loaded later are already mapped.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any


def _mapper() -> Any:
    try:
        from torch._inductor.codecache import PyCodeCache
    except Exception:
        return None
    if not getattr(PyCodeCache, "linemaps", None):
        return None
    return PyCodeCache


def map_generated_frames(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return the node table with user frames inserted under every mapped generated frame.

    Node ids are renumbered (depth-first) so parents still come before children.
    """
    cache = _mapper()
    if cache is None:
        return nodes
    chains: dict[int, list[dict[str, Any]]] = {}
    for n in nodes:
        if n["kind"] == "frame" and n["file"] in cache.linemaps:
            try:
                frames = cache.stack_frames_for_code(n["file"], n["line"])
            except Exception:  # a profiler must not fail over a line map
                frames = None
            if frames:
                chains[n["id"]] = list(reversed(frames))  # outermost first
    if not chains:
        return nodes
    children: dict[int, list[int]] = defaultdict(list)
    for n in nodes:
        if n["parent"] >= 0:
            children[n["parent"]].append(n["id"])
    out: list[dict[str, Any]] = []
    stack: list[tuple[int, int]] = [(0, -1)]
    while stack:  # iterative: generated code can be called from very deep stacks
        old, parent = stack.pop()
        node = dict(nodes[old], id=len(out), parent=parent)
        out.append(node)
        attach = node["id"]
        if old in chains:
            node["x"] = dict(node.get("x") or {}, generated="inductor")
            for f in chains[old]:
                out.append({"id": len(out), "parent": attach, "kind": "frame", "name": str(f["name"]),
                            "file": str(f["filename"]), "line": int(f["line"]), "m": {},
                            "x": {"mapped_from": "inductor"}})
                attach = out[-1]["id"]
        for c in reversed(children[old]):
            stack.append((c, attach))
    return out
