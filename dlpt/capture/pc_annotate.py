"""PC samples into the session's tree, at profile stop (``--pc-sampling``).

``meta.pc_sampling`` holds everything sampled (:mod:`dlpt.capture.pc_sampling`); this puts the part
a report shows beside the nodes it belongs to, as node extras (docs/session-format.md):

- each kernel node whose name a sampled kernel has: ``x.pc`` = ``{"samples", "stalls" (the top
  reasons), "lines" (its most sampled source lines, ``[file, line, samples, {reason: samples}]``),
  "unassigned" (a fused Inductor kernel: samples on lines of no model line)}``;
- each frame node of a model line a fused kernel was split onto: ``x.pc_fused`` = a list of
  ``{"kernel", "samples", "share", "of", "unassigned"}``: a sampled estimate of that line's part of
  the kernel (``samples`` of the ``of`` samples assigned to a model line);
- ``meta.sources``: the text of the sampled lines of kernel files (the user's ``@triton.jit`` files
  and Inductor's generated kernels, which are gone once its cache is cleared) and ``CONTEXT``
  lines around them, so the kernel-lines table and the HTML source view show code from the session.

Older sessions have none of these and render as before. Thread contract: called once at stop,
with the GIL, on data this process produced.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dlpt.capture.source_text import CONTEXT, file_lines
from dlpt.model.source_files import is_library_file

__all__ = ["annotate_session", "NODE_LINES", "NODE_STALLS"]

#: Source lines and stall reasons kept on a kernel node (the full list stays in meta.pc_sampling).
NODE_LINES = 5
NODE_STALLS = 3
LINE_STALLS = 2
_INDUCTOR_CACHE = re.compile(r"[\\/]torchinductor_[^\\/]*[\\/]")


def _top(stalls: Mapping[str, int], n: int) -> dict[str, int]:
    return dict(sorted(((k, int(v)) for k, v in stalls.items() if v), key=lambda kv: -kv[1])[:n])


def kernel_extra(kernel: Mapping[str, Any], split: Mapping[str, Any] | None) -> dict[str, Any]:
    """``x.pc`` of a kernel node from its ``meta.pc_sampling.kernels`` entry."""
    out: dict[str, Any] = {
        "samples": int(kernel["samples"]),
        "stalls": _top(kernel.get("stalls") or {}, NODE_STALLS),
        "lines": [
            [str(f), int(ln), int(n), _top(st or {}, LINE_STALLS)]
            for f, ln, n, st in (kernel.get("lines") or [])[:NODE_LINES]
        ],
    }
    if split is not None:
        out["unassigned"] = int(split.get("unassigned", 0))
    return out


def _kept_file(path: str) -> bool:
    """Kernel files whose text is saved: the user's and Inductor's generated kernels (library
    files, e.g. triton/language/standard.py, are not: a report shows their line numbers)."""
    return (
        bool(path)
        and not path.startswith("<")
        and (not is_library_file(path) or bool(_INDUCTOR_CACHE.search(path)))
    )


def kernel_sources(kernels: list[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """``meta.sources`` entries for the sampled lines of kernel files (and CONTEXT around)."""
    wanted: dict[str, set[int]] = {}
    for k in kernels:
        for f, ln, _n, _st in k.get("lines") or []:
            if ln > 0 and _kept_file(str(f)):
                wanted.setdefault(str(f), set()).add(int(ln))
    out: dict[str, dict[str, str]] = {}
    for f, numbers in wanted.items():
        lines = file_lines(f)
        if not lines:
            continue
        keep: set[int] = set()
        for n in numbers:
            keep.update(range(max(1, n - CONTEXT), min(len(lines), n + CONTEXT) + 1))
        out[f] = {str(k): lines[k - 1].rstrip("\r\n") for k in sorted(keep)}
    return out


def _sampled_kernel(kernels: Mapping[str, Any], name: str, x: Mapping[str, Any]) -> Any:
    """The sampled kernel a kernel node is: by its name, its ``full_name``, or its name without
    the `` [graph]`` the tree adds to Inductor kernels. CUPTI names a function, not a launch:
    kernels of one name in several graphs share its samples."""
    graph = x.get("graph")
    bare = name[: -len(f" [{graph}]")] if graph and name.endswith(f" [{graph}]") else name
    for key in (name, str(x.get("full_name", "")), bare):
        if key in kernels:
            return kernels[key]
    return None


def annotate_session(nodes: list[dict[str, Any]], meta: dict[str, Any], sources: bool = True) -> None:
    """Add ``x.pc``/``x.pc_fused`` to ``nodes`` and kernel files' text to ``meta.sources`` from
    ``meta.pc_sampling`` (see the module docstring). Nothing when nothing was sampled."""
    pcs = meta.get("pc_sampling") or {}
    kernels = {str(k["name"]): k for k in pcs.get("kernels") or []}
    if not kernels:
        return
    splits = {str(s["kernel"]): s for s in pcs.get("model_lines") or []}
    on_line: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for name, s in splits.items():
        assigned = sum(int(ml["samples"]) for ml in s.get("lines") or [])
        for ml in s.get("lines") or []:
            on_line.setdefault((str(ml["file"]), int(ml["line"])), []).append(
                {
                    "kernel": name,
                    "samples": int(ml["samples"]),
                    "share": float(ml.get("share", 0.0)),
                    "of": assigned,
                    "unassigned": int(s.get("unassigned", 0)),
                }
            )
    for n in nodes:
        kind = n.get("kind")
        if kind == "kernel":
            x = n.get("x") or {}
            k = _sampled_kernel(kernels, str(n.get("name", "")), x)
            if k is not None:
                n["x"] = {**x, "pc": kernel_extra(k, splits.get(str(k["name"])))}
        elif kind == "frame" and on_line:
            fused = on_line.get((str(n.get("file", "")), int(n.get("line", 0))))
            if fused:
                n["x"] = {**(n.get("x") or {}), "pc_fused": [dict(f) for f in fused]}
    if sources:
        saved = meta.setdefault("sources", {})
        for f, lines in kernel_sources(list(kernels.values())).items():
            saved.setdefault(f, {}).update(lines)
