"""A rank's session cut down to what the report across ranks needs, bounded in size.

Rank 0 of a 1,000-rank job cannot hold a thousand full sessions (each up to hundreds of MB), and
the rendezvous store that carries them (:mod:`dlpt.cli.rank_store`) is no place for them either.
What the cross-rank report shows is each rank's totals, its steps and the tree and lines with
their cost: nodes below ``MIN_SHARE`` of the run's total of every metric they carry are folded
into their parent (totals are conserved: the parent's own cost takes them), at most
``MAX_NODES`` nodes are kept (the share rises until they fit), the saved source text keeps only
the kept lines, and the large per-run records (timeline, memory details) are left out.

The result is an ordinary session (same format, validated on the receiving side), marked in
``meta.rank_summary`` with what was folded.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from dlpt.model.session import Session

__all__ = ["summarize", "encode", "decode", "MAX_NODES", "MIN_SHARE", "MAX_ENCODED_BYTES"]

MAX_NODES = 20_000
MIN_SHARE = 1e-4
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


def summarize(session: Session, max_nodes: int = MAX_NODES, min_share: float = MIN_SHARE) -> Session:
    """``session`` with its small nodes folded into their parents (see the module's doc)."""
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
    sources = session.meta.get("sources")
    if isinstance(sources, dict):
        meta["sources"] = {
            f: {ln: t for ln, t in lines.items() if ln in kept_lines[f]}
            for f, lines in sources.items()
            if f in kept_lines and isinstance(lines, dict)
        }
    meta["rank_summary"] = {"nodes": len(nodes), "kept": len(out), "folded": folded, "min_share": share}
    return Session(out, meta)


def encode(session: Session) -> bytes:
    """The session as compressed JSON (what travels through the store)."""
    return zlib.compress(json.dumps(session.to_dict(), separators=(",", ":")).encode(), 6)


def decode(data: bytes, source: str) -> Session:
    """A session :func:`encode` made, validated; SessionFormatError (a DlptError) if it is not one."""
    from dlpt.errors import SessionFormatError

    if len(data) > MAX_ENCODED_BYTES:
        raise SessionFormatError(f"{source}: {len(data):,} bytes, more than a rank summary may be")
    try:
        d = zlib.decompressobj().decompress(data, 16 * MAX_ENCODED_BYTES)
        parsed = json.loads(d)
    except (zlib.error, ValueError, RecursionError) as e:
        raise SessionFormatError(f"{source}: not a rank summary ({e})") from None
    return Session.from_dict(parsed, source)
