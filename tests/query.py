"""Small queries over a session's flat node table, for assertions in GPU tests."""

from __future__ import annotations

import inspect
from collections import defaultdict
from collections.abc import Iterator

from dlpt.capture.native import RawNode
from dlpt.model.session import Session

GPU_KEYS = ("gpu_ns", "copy_ns", "memset_ns")


def line_of(tag: str, fn) -> int:
    """Line number of the source line of `fn` that carries the comment `# @tag`."""
    lines, start = inspect.getsourcelines(fn)
    for i, text in enumerate(lines):
        if f"# @{tag}" in text:
            return start + i
    raise AssertionError(f"no line tagged @{tag} in {fn.__name__}")


def kernel_ns_by_line(raw: dict, fn, tags: list[str]) -> dict[str, int]:
    """GPU ns of the kernels of a native export (``C.stop()``) under the frame of each line of
    ``fn`` tagged ``# @tag``: each kernel counts once, for the nearest tagged frame above it."""
    ns = [RawNode.of(t) for t in raw["nodes"]]
    file = fn.__code__.co_filename
    lines = {line_of(t, fn): t for t in tags}
    out = dict.fromkeys(tags, 0)
    for n in ns:
        if n.kind != "kernel":
            continue
        p = n.parent
        while p >= 0:
            q = ns[p]
            if q.kind == "frame" and q.file == file and q.line in lines:
                out[lines[q.line]] += n.counted.gpu_ns + n.outside.gpu_ns
                break
            p = q.parent
    return out


class Q:
    def __init__(self, session: Session) -> None:
        self.s = session
        self.nodes = session.nodes
        self.children: dict[int, list[int]] = defaultdict(list)
        for n in self.nodes:
            if n["parent"] >= 0:
                self.children[n["parent"]].append(n["id"])

    def frames(self, file: str, line: int) -> list[int]:
        return [
            n["id"] for n in self.nodes if n["kind"] == "frame" and n["file"] == file and n["line"] == line
        ]

    def subtree(self, nid: int) -> Iterator[dict]:
        stack = [nid]
        while stack:
            i = stack.pop()
            yield self.nodes[i]
            stack.extend(self.children[i])

    def under_line(self, file: str, line: int) -> list[dict]:
        out: list[dict] = []
        for f in self.frames(file, line):
            out += list(self.subtree(f))
        return out

    def ancestors(self, nid: int) -> Iterator[dict]:
        i = self.nodes[nid]["parent"]
        while i >= 0:
            yield self.nodes[i]
            i = self.nodes[i]["parent"]

    def phase_of(self, nid: int) -> str | None:
        """The phase of node ``nid``: itself if it is one (an op's allocations land on its phase
        node, ``aten::mm`` > ``<forward>``), else the nearest phase above it."""
        if self.nodes[nid]["kind"] == "phase":
            return self.nodes[nid]["name"]
        for a in self.ancestors(nid):
            if a["kind"] == "phase":
                return a["name"]
        return None

    def kernels(self, nodes: list[dict], phase: str | None = None) -> list[dict]:
        return [
            n for n in nodes if n["kind"] == "kernel" and (phase is None or self.phase_of(n["id"]) == phase)
        ]

    def total(self, key: str, nodes: list[dict] | None = None) -> int:
        return sum(n["m"].get(key, 0) for n in (self.nodes if nodes is None else nodes))

    def gpu_total(self, nodes: list[dict] | None = None) -> int:
        return sum(self.total(k, nodes) for k in GPU_KEYS)
