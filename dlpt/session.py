"""A profile as plain, versioned data: a flat node table plus metadata (docs/session-format.md).

A :class:`Session` is what capture produces and what every report is rendered from. It is
validated on the way in (``from_dict``/``load``) so that renderers can trust its shape: node ids
equal their index, parents come before children, names are strings and metrics are non-negative
integers. Anything else is a :class:`~dlpt.errors.SessionFormatError` naming the file and the
problem.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeGuard

from dlpt.errors import SessionFormatError

__all__ = ["Session", "FORMAT", "VERSION", "KINDS"]

FORMAT = "dlpt-session"
VERSION = 1
KINDS = frozenset({"root", "thread", "frame", "scope", "op", "phase", "kernel", "memcpy", "memset", "sync"})

# Meta keys whose type the renderers rely on; others are passed through untouched so that
# producers can add information without a format bump.
_META_TYPES: dict[str, type | tuple[type, ...]] = {
    "argv": list,
    "wall_ns": int,
    "devices": list,
    "gpu": dict,
    "steps": dict,
    "step_wall_ns": list,
    "gpu_busy_ns": dict,
    "api": list,
    "dropped": dict,
    "unattributed": dict,
    "compile": list,
    "flops": dict,
    "host_link_probe": dict,
    "suggestions": list,
}


def _is_int(v: object) -> TypeGuard[int]:
    # bool is an int subclass; a True where a count belongs is corruption, not a 1.
    return isinstance(v, int) and not isinstance(v, bool)


class Session:
    """A profile: ``nodes`` (the flat node table, format v1) and ``meta`` (a dict).

    Build one with :meth:`from_dict` or :meth:`load` to get validation; the constructor trusts
    its arguments (it is what the capture path uses on data it produced itself).
    """

    def __init__(self, nodes: list[dict[str, Any]] | None = None, meta: dict[str, Any] | None = None) -> None:
        self.nodes: list[dict[str, Any]] = (
            nodes
            if nodes is not None
            else [{"id": 0, "parent": -1, "kind": "root", "name": "<root>", "file": "", "line": 0, "m": {}}]
        )
        self.meta: dict[str, Any] = meta if meta is not None else {}

    def __repr__(self) -> str:
        return f"Session(nodes={len(self.nodes)}, argv={self.meta.get('argv')!r})"

    # -- conversion -----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready dict of this session (format v1)."""
        return {"format": FORMAT, "version": VERSION, "meta": self.meta, "nodes": self.nodes}

    @classmethod
    def from_dict(cls, d: Any, source: str = "<dict>") -> Session:
        """Validate ``d`` (a parsed session) and return a Session with normalised nodes.

        ``source`` names where ``d`` came from in error messages. Missing optional node fields
        (``file``, ``line``, ``m``) get their defaults; wrong types are errors.
        """
        if not isinstance(d, Mapping):
            raise SessionFormatError(
                f"{source}: not a dlpt session (top level is {type(d).__name__}, expected an object)"
            )
        fmt = d.get("format")
        if fmt != FORMAT:
            raise SessionFormatError(f"{source}: not a dlpt session (format is {fmt!r}, expected {FORMAT!r})")
        version = d.get("version")
        if not _is_int(version) or version < 1:
            raise SessionFormatError(f"{source}: invalid session version {version!r}")
        if version > VERSION:
            raise SessionFormatError(
                f"{source}: session format version {version} was written by a newer dlpt; "
                f"this dlpt reads version {VERSION} (upgrade dlpt to read it)"
            )
        meta = d.get("meta", {})
        if not isinstance(meta, Mapping):
            raise SessionFormatError(f"{source}: 'meta' must be an object, got {type(meta).__name__}")
        for key, typ in _META_TYPES.items():
            if key in meta and meta[key] is not None and not isinstance(meta[key], typ):
                raise SessionFormatError(
                    f"{source}: meta.{key} has the wrong type ({type(meta[key]).__name__})"
                )
        nodes = d.get("nodes")
        if not isinstance(nodes, list):
            raise SessionFormatError(f"{source}: 'nodes' must be a list of nodes")
        if not nodes:
            raise SessionFormatError(f"{source}: the node table is empty (no root node)")
        return cls([_check_node(n, i, source) for i, n in enumerate(nodes)], dict(meta))

    # -- files ----------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the session as JSON to ``path`` atomically (temp file in the same directory,
        then rename), so a crash mid-write never leaves a truncated session behind."""
        path = Path(path)
        directory = path.parent if str(path.parent) else Path(".")
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                # Compact separators: sessions are machine data and can hold many nodes.
                json.dump(self.to_dict(), f, separators=(",", ":"), ensure_ascii=False)
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            # mkstemp creates 0600; give the file the permissions a plain open() would.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Session:
        """Read and validate a session file; raise SessionFormatError if it is missing,
        unreadable, not JSON, truncated, not a dlpt session or of an unsupported version."""
        name = os.fspath(path)
        try:
            raw = Path(path).read_bytes()
        except FileNotFoundError:
            raise SessionFormatError(f"{name}: no such session file") from None
        except IsADirectoryError:
            raise SessionFormatError(f"{name}: is a directory, not a session file") from None
        except OSError as e:
            raise SessionFormatError(f"{name}: cannot read session file ({e.strerror})") from None
        if not raw.strip():
            raise SessionFormatError(f"{name}: the session file is empty")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise SessionFormatError(f"{name}: not a dlpt session (not UTF-8 JSON text)") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            if _looks_truncated(text):
                raise SessionFormatError(
                    f"{name}: the session file is truncated (its JSON ends after "
                    f"{len(raw)} bytes, inside an unclosed object, list or string)"
                ) from None
            raise SessionFormatError(
                f"{name}: not a dlpt session (invalid JSON at line {e.lineno} column {e.colno}: {e.msg})"
            ) from None
        return cls.from_dict(data, source=name)


def _looks_truncated(text: str) -> bool:
    """True when ``text`` ends inside an open string, object or list: the writer stopped early
    (as opposed to text that is malformed somewhere in the middle)."""
    depth = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
    return in_string or depth > 0


def _check_node(n: Any, i: int, source: str) -> dict[str, Any]:
    """Validate table entry ``i`` and return a normalised copy."""
    where = f"{source}: node {i}"
    if not isinstance(n, Mapping):
        raise SessionFormatError(f"{where} is {type(n).__name__}, expected an object")
    for key in ("id", "parent", "kind", "name"):
        if key not in n:
            raise SessionFormatError(f"{where} lacks the required field {key!r}")
    nid, parent, kind, name = n["id"], n["parent"], n["kind"], n["name"]
    if not _is_int(nid) or nid != i:
        raise SessionFormatError(f"{where} has id {nid!r}; ids must equal the node's index")
    if not _is_int(parent):
        raise SessionFormatError(f"{where} has a non-integer parent {parent!r}")
    if i == 0:
        if parent != -1 or kind != "root":
            raise SessionFormatError(f"{where} must be the root (kind 'root', parent -1)")
    elif not 0 <= parent < i:
        raise SessionFormatError(
            f"{where} has parent {parent}; a parent must be an earlier node (0 <= parent < {i})"
        )
    if not isinstance(kind, str) or kind not in KINDS:
        raise SessionFormatError(f"{where} has unknown kind {kind!r}")
    if kind == "root" and i != 0:
        raise SessionFormatError(f"{where} is a second root")
    if not isinstance(name, str):
        raise SessionFormatError(f"{where} has a non-string name {name!r}")
    file = n.get("file", "")
    line = n.get("line", 0)
    if not isinstance(file, str):
        raise SessionFormatError(f"{where} has a non-string file {file!r}")
    if not _is_int(line) or line < 0:
        raise SessionFormatError(f"{where} has an invalid line {line!r}")
    m = n.get("m", {})
    if not isinstance(m, Mapping):
        raise SessionFormatError(f"{where} has metrics 'm' of type {type(m).__name__}")
    for k, v in m.items():
        if not isinstance(k, str) or not _is_int(v) or v < 0:
            raise SessionFormatError(
                f"{where} has an invalid metric {k!r}: {v!r} (metrics are non-negative integers)"
            )
    out: dict[str, Any] = {
        "id": nid,
        "parent": parent,
        "kind": kind,
        "name": name,
        "file": file,
        "line": line,
        "m": dict(m),
    }
    if "x" in n:
        x = n["x"]
        if not isinstance(x, Mapping):
            raise SessionFormatError(f"{where} has extras 'x' of type {type(x).__name__}")
        out["x"] = dict(x)
    return out
