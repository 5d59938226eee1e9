"""The tree a report shows, folded and pruned straight from the session's node table.

A report folds library frames into their callers, drops ``<forward>`` phases that are their op's
only phase, and hides what is below the threshold. Done on trees (build every node, copy to fold,
copy to drop phases, copy to prune), a million recorded nodes took 44 s and 3.4 GB. Here the
folds run over the flat table as integer arrays (each recorded node maps to the index of the
folded node it merges into), the ranking metric is summed per folded node, and tree nodes are
built only for what passes the threshold: a few passes over the table, plus what is shown.

The tree is the one ``prune(collapse_lone_forward(collapse_library(build_tree(s))), metric,
threshold)`` gives (``tests/unit/test_folding.py`` holds the two to each other): inclusive
metrics count what was pruned below a node, exclusive ones what landed on it. Every output folds
through here: the terminal report, and through :func:`report_tree` the HTML report,
the exports and ``dlpt diff`` (which also want each node's forward/backward/compiled context,
:mod:`dlpt.trees.node_contexts`, worked out while the lone ``<forward>`` phases are still there).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dlpt.model.compile_events import line_markers
from dlpt.model.gc_pause import gc_paused
from dlpt.model.meta import saved_dict
from dlpt.model.metrics import Metric
from dlpt.model.session import Session
from dlpt.model.tree import Node, add_metrics
from dlpt.trees.node_contexts import node_context
from dlpt.trees.processors import folds_away, is_module_call, mark_lines

__all__ = [
    "FoldedTable",
    "SyncSite",
    "report_tree",
    "whole_tree",
    "compile_markers",
    "has_outside",
    "session_totals",
]

Key = tuple[Any, ...]  # (parent index, kind, name, file, line)
_NO_EXTRAS: Mapping[str, Any] = {}
_NO_METRICS: Mapping[str, int] = {}


def _sum_metrics(dicts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """dlpt.model.tree.add_metrics over many dicts, inlined (this runs once per recorded node):
    sums, except that the shortest and longest activity combine by min and max."""
    out: dict[str, int] = {}
    get = out.get
    shortest: int | None = None
    longest: int | None = None
    for m in dicts:
        for k, v in m.items():
            out[k] = get(k, 0) + v
        if "min_ns" in m and (shortest is None or m["min_ns"] < shortest):
            shortest = m["min_ns"]
        if "max_ns" in m and (longest is None or m["max_ns"] > longest):
            longest = m["max_ns"]
    if shortest is not None:
        out["min_ns"] = shortest
    if longest is not None:
        out["max_ns"] = longest
    return out


def session_totals(session: Session) -> dict[str, int]:
    """The metrics of the whole session (what the root of any folded tree holds), without
    folding anything."""
    return _sum_metrics(n["m"] for n in session.nodes)


@dataclass
class SyncSite:
    """Host time blocked in one kind of synchronisation beneath one frame of the folded tree
    (``site`` None: beneath no frame)."""

    name: str
    site: Node | None
    syncs: int
    sync_ns: int


class FoldedTable:
    """The session's node table with folding applied, as arrays over folded-node indices.

    ``show_all`` keeps library frames (only lone ``<forward>`` phases are dropped). ``field``
    is the node metrics the tree holds: ``"m"``, the work of the counted steps (every per-step
    view), or ``"o"``, the work outside them (set-up, warm-up, the end of the run: once-work).
    ``contexts`` gives every built node its context bits (``extras["ctx"]``,
    :func:`~dlpt.trees.node_contexts.node_context`), as
    :func:`~dlpt.trees.node_contexts.tag_contexts` would on the
    folded tree before its lone ``<forward>`` phases are dropped."""

    def __init__(self, session: Session, show_all: bool, contexts: bool = False, field: str = "m") -> None:
        self.nodes = session.nodes
        self.held_extras = session.held_extras
        self.field = field
        # Indices of the recorded kernels, copies, memsets and syncs: the summary tables need
        # only these, and there may be a million other nodes.
        self.leaves: dict[str, list[int]] = {"kernel": [], "memcpy": [], "memset": [], "sync": []}
        self._phases: list[int] = []  # folded indices of the phase nodes
        keys, parents, first, of_raw = self._fold_library(show_all)
        ctx = self._contexts(keys, parents, first) if contexts else None
        self.keys, self.parents, self.first, of_folded = self._drop_lone_forwards(
            keys, parents, first, self._phases
        )
        # Each recorded node -> the shown node it merged into.
        self.of_raw = of_raw if of_folded is None else [of_folded[c] for c in of_raw]
        # Context bits of each shown node: those of the first folded node merged into it.
        self.ctx: list[int] | None = None
        if ctx is not None:
            if of_folded is None:
                self.ctx = ctx
            else:
                self.ctx = [-1] * len(self.keys)
                for c, d in enumerate(of_folded):
                    if self.ctx[d] < 0:
                        self.ctx[d] = ctx[c]
        self._totals: dict[str, int] | None = None

    def with_field(self, field: str) -> FoldedTable:
        """The same folding over another node field (``"o"``: the work outside steps), without
        folding the table again: the folds depend on the nodes, not on their metrics."""
        other = copy.copy(self)
        other.field, other._totals = field, None
        return other

    def leaf_nodes(self, *kinds: str) -> list[dict[str, Any]]:
        """The recorded nodes of these leaf kinds ("kernel", "memcpy", "memset", "sync")."""
        return [self.nodes[i] for kind in kinds for i in self.leaves[kind]]

    def totals(self) -> dict[str, int]:
        """The metrics of the whole session (what the root of any :meth:`tree` holds)."""
        if self._totals is None:
            self._totals = _sum_metrics(self._metrics(n) for n in self.nodes)
        return self._totals

    # -- folding --------------------------------------------------------------------------------

    def _fold_library(self, show_all: bool) -> tuple[list[Key], list[int], list[int], list[int]]:
        """Library frames folded into their callers, equal siblings merged: (keys, parents, first
        recorded node of each folded node, recorded -> folded). A key starts with the parent."""
        nodes = self.nodes
        leaves = self.leaves
        keys: list[Key] = [(-1, "root", nodes[0]["name"], "", 0)]
        parents, first = [-1], [0]
        index: dict[Key, int] = {}
        of_raw = [0] * len(nodes)
        below_call = [False] * len(nodes)  # is a module-call frame at or above this node?
        folds: dict[tuple[str, str, bool], bool] = {}  # (file, name, inside a module call) -> folds
        calls: dict[str, bool] = {}
        for i in range(1, len(nodes)):
            n = nodes[i]
            p, kind = n["parent"], n["kind"]
            inside = below_call[p]
            if kind == "frame":
                file = n["file"]
                call = calls.get(file)
                if call is None:
                    call = calls[file] = is_module_call(kind, file)
                below_call[i] = inside or call
                if not show_all:
                    name = n["name"]
                    drop = folds.get((file, name, inside))
                    if drop is None:
                        drop = folds[(file, name, inside)] = folds_away(kind, file, name, False, inside)
                    if drop or ("x" in n and n["x"].get("library")):
                        of_raw[i] = of_raw[p]
                        continue
            else:
                below_call[i] = inside
                if kind in leaves:
                    leaves[kind].append(i)
            key = (of_raw[p], kind, n["name"], n["file"], n["line"])
            c = index.get(key)
            if c is None:
                c = index[key] = len(keys)
                keys.append(key)
                parents.append(key[0])
                first.append(i)
                if kind == "phase":
                    self._phases.append(c)
            of_raw[i] = c
        return keys, parents, first, of_raw

    def _contexts(self, keys: list[Key], parents: list[int], first: list[int]) -> list[int]:
        """Context bits of each folded node (parents come before their children)."""
        ctx = [0] * len(keys)
        nodes = self.nodes
        for c in range(1, len(keys)):
            _, kind, name, _, _ = keys[c]
            ctx[c] = node_context(kind, name, nodes[first[c]].get("x") or _NO_EXTRAS, ctx[parents[c]])
        return ctx

    @staticmethod
    def _drop_lone_forwards(
        keys: list[Key], parents: list[int], first: list[int], phase_nodes: list[int]
    ) -> tuple[list[Key], list[int], list[int], list[int] | None]:
        """``<forward>`` phases that are their op's only phase dropped (they say nothing and cost
        a level), their children merged into the op's. ``phase_nodes`` are the indices of the
        phases (only they are looked at: a CPU session may have a million nodes and none). The
        last item maps old indices to new ones (None: nothing was dropped, the indices stand)."""
        phases: dict[int, int] = {}
        for c in phase_nodes:
            phases[parents[c]] = phases.get(parents[c], 0) + 1
        lone = [
            c
            for c in phase_nodes
            if keys[c][2] == "<forward>" and phases[parents[c]] == 1 and keys[parents[c]][1] == "op"
        ]
        if not lone:
            return keys, parents, first, None
        drop = [False] * len(keys)
        for c in lone:
            drop[c] = True
        out_keys: list[Key] = [keys[0]]
        out_parents, out_first = [-1], [first[0]]
        index: dict[Key, int] = {}
        mapped = [0] * len(keys)
        for c in range(1, len(keys)):
            p = parents[c]
            if drop[c]:
                mapped[c] = mapped[p]
                continue
            key = (mapped[p], *keys[c][1:])
            d = index.get(key)
            if d is None:
                d = index[key] = len(out_keys)
                out_keys.append(key)
                out_parents.append(key[0])
                out_first.append(first[c])
            mapped[c] = d
        return out_keys, out_parents, out_first, mapped

    # -- what is shown ---------------------------------------------------------------------------

    def tree(self, metric: Metric | None = None, threshold: float | None = None) -> Node:
        """The folded tree with nodes whose inclusive ``metric`` is below ``threshold`` of the
        total, or zero, left out (either None: every node). Inclusive metrics count everything beneath."""
        parents, of_raw, nodes = self.parents, self.of_raw, self.nodes
        size = len(parents)
        if threshold is None or metric is None:
            keep = [True] * size
        else:
            inc = [0] * size
            for c, v in zip(of_raw, map(metric.fn, [self._metrics(n) for n in nodes]), strict=True):
                if v:
                    inc[c] += v
            for c in range(size - 1, 0, -1):
                inc[parents[c]] += inc[c]
            limit = threshold * inc[0]
            keep = [v >= limit and v > 0 for v in inc]  # a row of zeros says nothing
            keep[0] = True
        near = list(range(size))  # nearest kept node at or above each node
        for c in range(1, size):
            if not keep[c]:
                near[c] = near[parents[c]]
        shown: dict[int, Node] = {c: self._node(c) for c in range(size) if keep[c]}
        # What landed on each shown node (its exclusive metrics), and what landed beneath it
        # on nodes not shown (counted in its inclusive metrics).
        own: dict[int, list[Mapping[str, int]]] = {}
        hidden: dict[int, list[Mapping[str, int]]] = {}
        for c, n in zip(of_raw, nodes, strict=True):
            k = near[c]
            (own if k == c else hidden).setdefault(k, []).append(self._metrics(n))
        for c, node in shown.items():
            node.metrics = _sum_metrics(own.get(c, ()))
        del own
        for c, node in shown.items():  # in index order: parents before children
            if c:
                shown[parents[c]].add_child(node)
        for c in sorted(shown, reverse=True):  # children before parents
            node = shown[c]
            inc_c = dict(node.metrics)
            add_metrics(inc_c, _sum_metrics(hidden.get(c, ())))
            for child in node.children:
                add_metrics(inc_c, child.inclusive)
            node.inclusive = inc_c
        self._totals = shown[0].inclusive
        return shown[0]

    def _metrics(self, n: Mapping[str, Any]) -> Mapping[str, int]:
        m = n.get(self.field)
        return m if m is not None else _NO_METRICS

    def _node(self, c: int) -> Node:
        _, kind, name, file, line = self.keys[c]
        i = self.first[c]
        node = Node(kind, name, file, line, None, self.nodes[i].get("x"), self.held_extras(i))
        if self.ctx is not None:
            node.ctx = self.ctx[c]
        return node

    def sync_sites(self) -> list[SyncSite]:
        """Sync leaves grouped by sync call and nearest frame of the folded tree: each group
        names a line the user can change."""
        parents, keys = self.parents, self.keys
        frame = [-1] * len(parents)  # nearest frame at or above each folded node
        for c in range(1, len(parents)):
            frame[c] = c if keys[c][1] == "frame" else frame[parents[c]]
        sites: dict[tuple[str, str, int], SyncSite] = {}
        for i in self.leaves["sync"]:
            n = self.nodes[i]
            f = frame[parents[self.of_raw[i]]]
            key = (n["name"], keys[f][3], keys[f][4]) if f >= 0 else (n["name"], "", 0)
            site = sites.get(key)
            if site is None:
                site = sites[key] = SyncSite(n["name"], self._node(f) if f >= 0 else None, 0, 0)
            m = self._metrics(n)
            site.syncs += m.get("syncs", 0)
            site.sync_ns += m.get("sync_ns", 0)
        return list(sites.values())


def compile_markers(session: Session) -> dict[tuple[str, int], str]:
    """Short torch.compile markers (graph break, recompiled xN) by (file, line) of ``session``."""
    compiled = session.typed_meta.compile
    return line_markers([saved_dict(e) for e in compiled]) if compiled else {}


def whole_tree(folded: FoldedTable, markers: dict[tuple[str, int], str]) -> Node:
    """``folded``'s whole tree (nothing pruned) with ``markers`` on the frames they name."""
    return mark_lines(folded.tree(), markers)


def has_outside(session: Session) -> bool:
    """Whether the session holds work outside counted steps (node metrics ``o``)."""
    return any(n.get("o") for n in session.nodes)


def report_tree(session: Session, show_all: bool = False, contexts: bool = False) -> Node:
    """``session``'s whole tree as every report shows it: library frames folded into their callers
    (unless ``show_all``), a ``<forward>`` phase that is its op's only phase dropped, compile-event
    markers (graph break, recompiled xN) on the frames where they happened. Nothing is pruned.

    Folded by :class:`FoldedTable`, as the terminal report's tree is. ``contexts`` gives every
    node its forward/backward/compiled bits (:mod:`dlpt.trees.node_contexts`), worked out while
    the lone ``<forward>`` phases are still there.
    """
    with gc_paused():
        return whole_tree(FoldedTable(session, show_all, contexts), compile_markers(session))
