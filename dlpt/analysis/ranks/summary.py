"""A rank's session cut down to what the report across ranks needs, bounded in size.

Rank 0 of a 1,000-rank job cannot hold a thousand full sessions (each up to hundreds of MB), and
the rendezvous store that carries them (:mod:`dlpt.cli.rank_store`) is no place for them either.
What the cross-rank report shows is each rank's totals, its steps, its lines with their own cost
and the top of its tree. So a summary is:

- the session with its small nodes folded into their parents (:func:`summarize`): nodes below
  ``MIN_SHARE`` of the run's total of every metric they carry, then as many more as needed to
  keep at most ``max_nodes`` (totals are conserved: the parent's own cost takes them); the
  saved source text keeps only the kept lines; the large per-run records (timeline, memory
  details) are left out, but for the GPU streams of a timeline window in small jobs
  (:mod:`dlpt.analysis.ranks.timelines`); the collective kernels (``meta.gpu_collectives``,
  what the wait from arrivals needs) only of the last steps, ``collective_budget`` rows in all
  (whole steps: every rank of a job keeps the same ones); ``meta.rank_summary`` says what was
  folded;
- every line of the rank's report tree with its own cost, flattened before folding
  (:mod:`dlpt.analysis.ranks.lines`): a list of (file, function, line) and a matrix of integers.

On the wire (:func:`encode`): zlib over ``MAGIC``, then three parts each preceded by its length
(8 bytes, little-endian): the session as JSON, the lines' labels as JSON, the lines' values as
little-endian int64. The session is validated on arrival as any session file is; the lines'
labels are read once per distinct list (ranks running the same code send the same one).
"""

from __future__ import annotations

import hashlib
import json
import struct
import sys
import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dlpt.model.meta import saved_dict
from dlpt.model.session import Session
from dlpt.model.tree import Node

if TYPE_CHECKING:
    from dlpt.analysis.ranks.merge import RankSet

__all__ = [
    "for_rank_zero",
    "received",
    "with_lines",
    "summarize",
    "encode",
    "decode",
    "Summary",
    "tree_budget",
    "collective_budget",
    "MAX_NODES",
    "MIN_SHARE",
    "MAX_ENCODED_BYTES",
]

MAX_NODES = 20_000
MAGIC = b"dlpt-rank-summary\x01\n"
TREE_NODES_IN_ALL = 100_000  # tree nodes rank 0 holds over all ranks (the lines come apart)
MIN_TREE_NODES = 100
MIN_SHARE = 1e-4
# Collective kernels rank 0 holds over all ranks (~80 bytes each in JSON), and one rank's bounds.
COLLECTIVES_IN_ALL = 250_000
MIN_COLLECTIVES, MAX_COLLECTIVES = 256, 20_000
MAX_ENCODED_BYTES = 64 * 2**20  # what rank 0 accepts from one rank (compressed)
_DROPPED_META = ("timeline", "memory")


def _inclusive(nodes: list[dict[str, Any]]) -> list[dict[str, int]]:
    """Each node's metrics summed over its subtree (parents come before children)."""
    inc = [dict(n.get("m") or {}) for n in nodes]
    for i in range(len(nodes) - 1, 0, -1):
        p = nodes[i]["parent"]
        if p >= 0:
            tgt = inc[p]
            for k, v in inc[i].items():
                tgt[k] = tgt.get(k, 0) + v
    return inc


def _keep(nodes: list[dict[str, Any]], inc: list[dict[str, int]], share: float) -> list[bool]:
    total: dict[str, int] = {}
    for i, n in enumerate(nodes):
        if n["parent"] < 0:
            for k, v in inc[i].items():
                total[k] = total.get(k, 0) + v
    keep = [False] * len(nodes)
    for i, n in enumerate(nodes):
        parent = n["parent"]
        if parent < 0:
            keep[i] = True
        elif keep[parent]:
            keep[i] = any(v > 0 and v >= share * total.get(k, 0) for k, v in inc[i].items())
    return keep


def _last_collectives(g: Any, budget: int) -> Any:
    """``meta.gpu_collectives`` cut to the rows of its last whole epochs that fit ``budget``
    (None when not one does); ``epochs`` keeps how many epochs ran collectives (the wait per
    step scales by it)."""
    if not isinstance(g, dict) or not isinstance(g.get("epoch"), list) or len(g["epoch"]) <= budget:
        return g
    epochs = g["epoch"]
    keep_from = len(epochs) - budget
    # Never half an epoch: start where an epoch starts.
    while 0 < keep_from < len(epochs) and epochs[keep_from] == epochs[keep_from - 1]:
        keep_from += 1
    if keep_from >= len(epochs):
        return None  # not one whole step fits: the report across ranks does without
    out = {k: v[keep_from:] if isinstance(v, list) and k != "names" else v for k, v in g.items()}
    out.setdefault("epochs", len(set(epochs)))
    return out


def summarize(
    session: Session,
    max_nodes: int = MAX_NODES,
    min_share: float = MIN_SHARE,
    timeline: bool = False,
    max_collectives: int = MAX_COLLECTIVES,
) -> Session:
    """``session`` with its small nodes folded into their parents (see the module's doc);
    ``timeline``: keep the GPU part of its timeline window for the page across ranks
    (:func:`dlpt.analysis.ranks.timelines.gpu_part`, bounded); ``max_collectives``: rows of
    ``meta.gpu_collectives`` kept, from the last step back."""
    nodes = session.nodes
    inc = _inclusive(nodes)
    share = min_share
    keep = _keep(nodes, inc, share)
    while sum(keep) > max_nodes:
        share *= 4
        keep = _keep(nodes, inc, share)
    new_id: dict[int, int] = {}
    out: list[dict[str, Any]] = []
    folded = 0
    for i, n in enumerate(nodes):
        if keep[i]:
            new_id[i] = len(out)
            copy = dict(n, id=len(out), parent=new_id.get(n["parent"], -1), m=dict(n.get("m") or {}))
            if "o" in n:
                copy["o"] = dict(n["o"])
            out.append(copy)
            continue
        folded += 1
        # The nearest kept ancestor takes this node's own cost.
        a = n["parent"]
        while a >= 0 and not keep[a]:
            a = nodes[a]["parent"]
        if a < 0:
            continue
        tgt = out[new_id[a]]
        for field in ("m", "o"):
            for k, v in (n.get(field) or {}).items():
                bucket = tgt.setdefault(field, {})
                bucket[k] = bucket.get(k, 0) + v
    meta = {k: v for k, v in session.meta.items() if k not in _DROPPED_META}
    kept_lines: dict[str, set[str]] = {}
    for n in out:
        if n["kind"] == "frame" and n.get("file"):
            kept_lines.setdefault(n["file"], set()).add(str(n.get("line", 0)))
    typed = session.typed_meta
    if typed.sources is not None:
        meta["sources"] = {
            f: {ln: t for ln, t in lines.items() if ln in kept_lines[f]}
            for f, lines in typed.sources.items()
            if f in kept_lines
        }
    if timeline and typed.timeline is not None:
        from dlpt.analysis.ranks.timelines import gpu_part

        part = gpu_part(typed.timeline)
        if part is not None:
            meta["timeline"] = part
    if typed.gpu_collectives is not None:
        kept = _last_collectives(saved_dict(typed.gpu_collectives), max_collectives)
        if kept is None:
            meta.pop("gpu_collectives")
        else:
            meta["gpu_collectives"] = kept
    meta["rank_summary"] = {"nodes": len(nodes), "kept": len(out), "folded": folded, "min_share": share}
    return Session(out, meta)


def tree_budget(world_size: int) -> int:
    """How many tree nodes each rank of ``world_size`` keeps (rank 0 holds them all)."""
    return max(MIN_TREE_NODES, min(MAX_NODES, TREE_NODES_IN_ALL // max(1, world_size)))


def collective_budget(world_size: int) -> int:
    """How many collective kernels each rank of ``world_size`` sends."""
    return max(MIN_COLLECTIVES, min(MAX_COLLECTIVES, COLLECTIVES_IN_ALL // max(1, world_size)))


class Summary:
    """What :func:`decode` gives: the (folded) session, and the rank's lines: ``values`` holds
    only the ``columns`` of ``LINE_KEYS`` some line of this rank has (most ranks use half of
    them: kept whole, 1,024 ranks of 10,000 lines held 1.4 GB of zeros and counts)."""

    def __init__(
        self, session: Session, labels: list[tuple[str, str, int]], token: bytes, values: Any, columns: Any
    ) -> None:
        self.session, self.labels, self.token = session, labels, token
        self.values, self.columns = values, columns

    def full_values(self) -> Any:
        """[lines, len(LINE_KEYS)], int64: the values as they were sent."""
        import torch

        from dlpt.analysis.ranks.lines import LINE_KEYS

        out = torch.zeros((len(self.values), len(LINE_KEYS)), dtype=torch.int64)
        out[:, self.columns] = self.values
        return out


def encode(
    session: Session,
    max_nodes: int = MAX_NODES,
    timeline: bool = False,
    max_collectives: int = MAX_COLLECTIVES,
) -> bytes:
    """``session``'s summary as it travels through the store (see the module's doc); ``timeline``
    and ``max_collectives`` as :func:`summarize` takes them."""
    from dlpt.analysis.ranks.lines import line_variances, rank_lines
    from dlpt.trees.folding import report_tree

    lines = rank_lines(report_tree(session, False), line_variances(session))
    labels = json.dumps([[n.file, n.name, n.line] for n in lines.labels], separators=(",", ":")).encode()
    summary = summarize(session, max_nodes, timeline=timeline, max_collectives=max_collectives)
    return pack(summary, labels, lines.values)


def pack(session: Session, labels: bytes, values: Any) -> bytes:
    """The wire form of a summary from its parts (``labels``: the JSON of the lines,
    ``values``: their int64 matrix)."""
    import torch

    raw = values.to(torch.int64).contiguous().numpy().astype("<i8").tobytes()
    small = json.dumps(session.to_dict(), separators=(",", ":")).encode()
    parts = b"".join(struct.pack("<Q", len(p)) + p for p in (small, labels, raw))
    return zlib.compress(MAGIC + parts, 6)


def decode(
    data: bytes, source: str, labels_seen: dict[bytes, list[tuple[str, str, int]]] | None = None
) -> Summary:
    """A summary :func:`encode` made, its session validated; SessionFormatError (a DlptError)
    if it is not one. ``labels_seen``: lists of lines already read, by digest (filled here)."""
    import torch

    from dlpt.errors import SessionFormatError

    if len(data) > MAX_ENCODED_BYTES:
        raise SessionFormatError(f"{source}: {len(data):,} bytes, more than a rank summary may be")
    try:
        raw = zlib.decompressobj().decompress(data, 16 * MAX_ENCODED_BYTES)
        if not raw.startswith(MAGIC):
            raise ValueError("it does not start as one")
        parts, at = [], len(MAGIC)
        for _ in range(3):
            (n,) = struct.unpack_from("<Q", raw, at)
            parts.append(raw[at + 8 : at + 8 + n])
            if len(parts[-1]) != n:
                raise ValueError("it is cut short")
            at += 8 + n
        session = Session.from_dict(json.loads(parts[0]), source)
        token = hashlib.sha1(parts[1]).digest()
        seen = labels_seen if labels_seen is not None else {}
        if token not in seen:
            labels = json.loads(parts[1])
            if not isinstance(labels, list) or not all(_is_label(x) for x in labels):
                raise ValueError("its lines are not (file, function, line) triples")
            seen[token] = [(str(f), str(n), int(ln)) for f, n, ln in labels]
        from dlpt.analysis.ranks.lines import LINE_KEYS

        count = len(seen[token])
        if len(parts[2]) != 8 * count * len(LINE_KEYS):
            raise ValueError("its line values do not match its lines")
        flat = (
            torch.frombuffer(bytearray(parts[2]), dtype=torch.int64)
            if count
            else torch.zeros(0, dtype=torch.int64)
        )
        if sys.byteorder != "little":  # every platform torch ships wheels for is little-endian
            raise ValueError("a big-endian machine cannot read rank summaries")
        values = flat.reshape(count, len(LINE_KEYS))
        if count and int(values.min()) < 0:
            raise ValueError("negative line values")
        columns = torch.nonzero((values != 0).any(dim=0)).flatten()
        values = values[:, columns].clone()  # the used columns only; the received buffer goes
    except SessionFormatError:
        raise
    except (zlib.error, ValueError, TypeError, RecursionError, struct.error) as e:
        raise SessionFormatError(f"{source}: not a rank summary ({e})") from None
    return Summary(session, seen[token], token, values, columns)


def _is_label(x: object) -> bool:
    return (
        isinstance(x, list)
        and len(x) == 3
        and isinstance(x[0], str)
        and isinstance(x[1], str)
        and type(x[2]) is int
        and 0 <= x[2] < 2**31
    )


def for_rank_zero(session: Session, world_size: int) -> bytes:
    """What one rank of a ``world_size``-rank job sends rank 0: its summary within the job's
    budgets (a small job's timelines go too: the page across ranks lines them up)."""
    from dlpt.analysis.ranks.lines import one_thread
    from dlpt.analysis.ranks.timelines import MAX_RANKS

    with one_thread():
        return encode(
            session,
            tree_budget(world_size),
            timeline=world_size <= MAX_RANKS,
            max_collectives=collective_budget(world_size),
        )


def received(data: bytes, source: str, labels_seen: dict[bytes, list[tuple[str, str, int]]]) -> Summary:
    """:func:`decode` on one torch thread (rank 0 reads many summaries beside a busy program)."""
    from dlpt.analysis.ranks.lines import one_thread

    with one_thread():
        return decode(data, source, labels_seen)


def with_lines(rs: RankSet, summaries: Mapping[int, Summary]) -> None:
    """Give each rank of ``rs`` that sent a summary the lines it sent (labels read once per
    distinct list: ranks of the same code share them)."""
    from dlpt.analysis.ranks.lines import RankLines

    nodes: dict[bytes, list[Node]] = {}
    for r in rs.ranks:
        s = summaries.get(r.rank)
        if s is None:
            continue
        if s.token not in nodes:
            nodes[s.token] = [Node("frame", name, file, line) for file, name, line in s.labels]
        r.lines = RankLines(nodes[s.token], s.values, s.token, s.columns)
