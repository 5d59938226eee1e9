"""A profile as plain, versioned data: a flat node table plus metadata (docs/session-format.md).

A :class:`Session` is what capture produces and what every report is rendered from. It is
validated on the way in (``from_dict``/``load``) so that renderers can trust its shape: node ids
equal their index, parents come before children, names are strings and metrics are non-negative
integers. Anything else is a :class:`~dlpt.errors.SessionFormatError` naming the file and the
problem.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator, Mapping
from typing import Any

from dlpt.errors import SessionFormatError, UnsafeFileError
from dlpt.files.safe_files import atomic_text_writer, read_regular_file
from dlpt.model.gc_pause import gc_paused
from dlpt.model.meta import Extras, Meta, typed_field
from dlpt.model.schema import MAX_INT, MAX_INT_TEXT, SchemaError, check_extras, check_int, check_meta

__all__ = ["Session", "FORMAT", "VERSION", "KINDS", "MAX_FILE_BYTES"]

FORMAT = "dlpt-session"
# 2: meta.sources (saved source text); 3: the nodes' per-step second moments `q` (intervals,
# docs/numbers.md). Versions 1 and 2 are read as they are (without intervals).
VERSION = 3
KINDS = frozenset({"root", "thread", "frame", "scope", "op", "phase", "kernel", "memcpy", "memset", "sync"})
# The largest session file read: the native tree holds at most 4M nodes, about 500 MB of JSON.
MAX_FILE_BYTES = 2**30
SAVE_CHUNK_NODES = 4096  # nodes encoded at once when saving
_META_FIELDS = frozenset(f.name for f in dataclasses.fields(Meta))


class Session:
    """A profile: ``nodes`` (the flat node table, format v1), ``meta`` (the metadata as a dict,
    what is saved) and :attr:`typed_meta` (the same, typed: what stages read).

    Build one with :meth:`from_dict` or :meth:`load` to get validation; the constructor trusts
    its arguments (it is what the capture path uses on data it produced itself).
    """

    def __init__(
        self,
        nodes: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        *,
        typed_meta: Meta | None = None,
        typed_extras: dict[int, tuple[dict[str, Any], Extras]] | None = None,
    ) -> None:
        self.nodes: list[dict[str, Any]] = (
            nodes
            if nodes is not None
            else [{"id": 0, "parent": -1, "kind": "root", "name": "<root>", "file": "", "line": 0, "m": {}}]
        )
        self._meta: dict[str, Any] = meta if meta is not None else {}
        self._typed: Meta | None = typed_meta
        self._typed_x = typed_extras if typed_extras is not None else {}

    @property
    def meta(self) -> dict[str, Any]:
        """The metadata as it is saved (docs/session-format.md). Read its typed keys through
        :attr:`typed_meta`; a change to them made in place (``meta["steps"] = ...``) after
        :attr:`typed_meta` was first read is not seen there: :meth:`set_meta`, or assign
        ``meta``, instead."""
        return self._meta

    @meta.setter
    def meta(self, value: dict[str, Any]) -> None:
        self._meta = value
        self._typed = None

    def set_meta(self, key: str, value: Any) -> None:
        """Set one key of :attr:`meta` (what dlpt adds once capture stopped: the suggestions, the
        pinned-copy measurement) and keep :attr:`typed_meta` in step (that key typed again, as a
        session made in memory reads it)."""
        self._meta[key] = value
        if self._typed is not None and key in _META_FIELDS:
            self._typed = dataclasses.replace(self._typed, **{key: typed_field(self._meta, key)})

    @property
    def typed_meta(self) -> Meta:
        """The metadata, typed (dlpt.model.meta.Meta): built once, when the session is loaded
        (checked then) or at the first read of a session made in memory (where a key of the
        wrong shape reads as absent)."""
        if self._typed is None:
            self._typed = Meta.of(self._meta)
        return self._typed

    def held_extras(self, i: int) -> Extras | None:
        """Node ``i``'s extras typed when the session was loaded (checked then; what the reports
        read, without typing them again), or None: a session made in memory, a node without
        extras, or one whose ``x`` was replaced since (a change made in place to a loaded
        node's typed extras is not seen here)."""
        held = self._typed_x.get(i)
        if held is None or self.nodes[i].get("x") is not held[0]:
            return None
        return held[1]

    def __repr__(self) -> str:
        return f"Session(nodes={len(self.nodes)}, argv={typed_field(self._meta, 'argv')!r})"

    # -- conversion -----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready dict of this session (the current format version)."""
        return {"format": FORMAT, "version": VERSION, "meta": self.meta, "nodes": self.nodes}

    @classmethod
    def from_dict(cls, d: Any, source: str = "<dict>") -> Session:
        """Validate ``d`` (a parsed session) and return a Session with normalised nodes.

        ``source`` names where ``d`` came from in error messages. Missing optional node fields
        (``file``, ``line``, ``m``) get their defaults; wrong types are errors. ``d`` is not
        modified: the session gets normalised copies of its nodes.
        """
        return cls._validated(d, source, owned=False)

    @classmethod
    def _validated(cls, d: Any, source: str, owned: bool) -> Session:
        """from_dict's work; ``owned``: ``d`` was parsed for this session alone, so its node dicts
        are normalised in place instead of copied (half the memory for a large file)."""
        if not isinstance(d, Mapping):
            raise SessionFormatError(
                f"{source}: not a dlpt session (top level is {type(d).__name__}, expected an object)"
            )
        fmt = d.get("format")
        if fmt != FORMAT:
            raise SessionFormatError(
                f"{source}: not a dlpt session (format is {_show(fmt)}, expected {FORMAT!r})"
            )
        version = d.get("version")
        # bool is an int subclass; a true where a version belongs is corruption, not a 1.
        if type(version) is not int or version < 1:
            raise SessionFormatError(f"{source}: invalid session version {_show(version)}")
        if version > VERSION:
            raise SessionFormatError(
                f"{source}: session format version {_show(version)} was written by a newer dlpt; "
                f"this dlpt reads versions 1 to {VERSION} (upgrade dlpt to read it)"
            )
        meta = d.get("meta", {})
        if not isinstance(meta, Mapping):
            raise SessionFormatError(f"{source}: 'meta' must be an object, got {type(meta).__name__}")
        try:
            typed = check_meta(meta)
        except SchemaError as e:
            raise SessionFormatError(f"{source}: {e}") from None
        nodes = d.get("nodes")
        if not isinstance(nodes, list):
            raise SessionFormatError(f"{source}: 'nodes' must be a list of nodes")
        if not nodes:
            raise SessionFormatError(f"{source}: the node table is empty (no root node)")
        check = _NodeChecker(source, owned)
        checked = [check(n, i) for i, n in enumerate(nodes)]
        return cls(checked, dict(meta), typed_meta=typed, typed_extras=check.extras)

    # -- files ----------------------------------------------------------------------------

    def save(
        self,
        path: str | os.PathLike[str],
        *,
        force: bool = False,
        protected: Mapping[str, str] | None = None,
    ) -> None:
        """Write the session as JSON to ``path`` atomically (temp file in the same directory,
        then rename), so a crash mid-write never leaves a truncated session behind.

        A symlink is written through (its target changes, the link stays) unless it is a trap
        (dlpt.files.write_target); an existing file is replaced only if dlpt wrote it (or it is
        empty), or with ``force``; ``protected`` (real path -> what it is) are never replaced
        without ``force``. Anything else raises :class:`~dlpt.errors.UnsafeFileError`
        (dlpt.files.safe_files). ``/dev/stdout`` and ``/dev/stderr`` are written as streams."""
        with atomic_text_writer(path, force=force, protected=protected) as f:
            for chunk in self.json_chunks():
                f.write(chunk)

    def json_chunks(self) -> Iterator[str]:
        """The session file's text (what :meth:`save` writes), in pieces of at most
        :data:`SAVE_CHUNK_NODES` nodes: ``json.dump`` would encode it value by value in Python
        (minutes for a million nodes), ``json.dumps`` of the whole would hold it all in memory
        at once. Byte for byte ``json.dumps(self.to_dict(), separators=(",", ":"),
        ensure_ascii=True) + "\\n"``: compact (sessions are machine data and can hold many
        nodes) and ASCII (file names may carry undecodable bytes, lone surrogates, which UTF-8
        cannot hold)."""
        head = _dumps({"format": FORMAT, "version": VERSION, "meta": self.meta, "nodes": []})
        yield head[:-2]  # up to the opening bracket of the node list
        nodes = self.nodes
        for start in range(0, len(nodes), SAVE_CHUNK_NODES):
            text = _dumps(nodes[start : start + SAVE_CHUNK_NODES])
            yield ("," if start else "") + text[1:-1]
        yield "]}\n"

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Session:
        """Read and validate a session file; raise SessionFormatError if it is missing,
        unreadable, not a regular file, larger than MAX_FILE_BYTES, not JSON, truncated, nested
        beyond what JSON parsing allows, not a dlpt session or of an unsupported version."""
        name = os.fspath(path)
        try:
            raw = read_regular_file(path, MAX_FILE_BYTES)
        except FileNotFoundError:
            raise SessionFormatError(f"{name}: no such session file") from None
        except UnsafeFileError as e:
            raise SessionFormatError(f"{name}: {e}") from None
        except OSError as e:
            raise SessionFormatError(f"{name}: cannot read session file ({e.strerror or e})") from None
        if not raw.strip():
            raise SessionFormatError(f"{name}: the session file is empty")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise SessionFormatError(f"{name}: not a dlpt session (not UTF-8 JSON text)") from None
        size = len(raw)
        del raw
        with gc_paused():
            data = _parse_json(text, size, name)
            del text  # the parsed data is all that is needed from here on
            return cls._validated(data, name, owned=True)


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True)


def _parse_json(text: str, size: int, name: str) -> Any:
    """The JSON value of a session file's ``text`` (``size`` bytes), or SessionFormatError."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        if _looks_truncated(text):
            raise SessionFormatError(
                f"{name}: the session file is truncated (its JSON ends after "
                f"{size} bytes, inside an unclosed object, list or string)"
            ) from None
        raise SessionFormatError(
            f"{name}: not a dlpt session (invalid JSON at line {e.lineno} column {e.colno}: {e.msg})"
        ) from None
    except RecursionError:
        raise SessionFormatError(f"{name}: not a dlpt session (JSON nested too deeply)") from None
    except ValueError as e:  # an integer of more digits than Python converts
        raise SessionFormatError(f"{name}: not a dlpt session ({e})") from None
    return data


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


_FIELDS = frozenset({"id", "parent", "kind", "name", "file", "line", "m", "o", "q", "x"})


def _show(v: object) -> str:
    """A short repr for messages (a huge value in a hostile file must not flood them)."""
    text = (
        type(v).__name__
        if isinstance(v, (dict, list)) or (type(v) is int and v.bit_length() > 64)
        else repr(v)
    )
    return text if len(text) <= 40 else text[:37] + "..."


class _NodeChecker:
    """Validates node table entries in order and normalises them: defaults filled in, unknown
    fields dropped, and equal strings (kinds, names, files repeat across thousands of nodes)
    shared instead of held once per node.

    ``owned``: the entries may be normalised in place (they were parsed for this session);
    otherwise each is copied and the caller's dicts stay as they were."""

    def __init__(self, source: str, owned: bool) -> None:
        self.source, self.owned = source, owned
        self.strings: dict[str, str] = {k: k for k in KINDS}
        self.extras: dict[int, tuple[dict[str, Any], Extras]] = {}  # node -> (x, x typed)

    def _bad(self, i: int, problem: str) -> SessionFormatError:
        return SessionFormatError(f"{self.source}: node {i} {problem}")

    def __call__(self, entry: Any, i: int) -> dict[str, Any]:
        n: dict[str, Any]
        if type(entry) is dict and self.owned:
            n = entry  # fields of other tools stay (a file we parsed; the renderers ignore them)
        elif isinstance(entry, Mapping):
            n = {k: v for k, v in entry.items() if k in _FIELDS}
        else:
            raise self._bad(i, f"is {type(entry).__name__}, expected an object")
        # The common case in one expression (a million nodes take seconds to check one by one);
        # anything odd is looked at again by _explain, which says what is wrong.
        get = n.get
        kind: Any = get("kind")
        name: Any = get("name")
        file, line, m, parent = get("file", ""), get("line", 0), get("m", {}), get("parent")
        if not (
            type(get("id")) is int
            and n["id"] == i
            and type(parent) is int
            and (0 <= parent < i if i else parent == -1)
            and type(kind) is str
            and kind in KINDS
            and (kind == "root") == (i == 0)
            and type(name) is str
            and type(file) is str
            and type(line) is int
            and 0 <= line < MAX_INT
            and type(m) is dict
        ):
            self._explain(n, i)
            m = n["m"]
        if not self.owned:
            m = dict(m)
            if not all(type(k) is str for k in m):  # JSON keys always are
                raise self._bad(i, "has a metric whose name is not a string")
        self._check_metrics(m, i, "metric")
        if "o" in n:  # work outside counted steps (docs/session-format.md)
            o = n["o"]
            if not isinstance(o, Mapping):
                raise self._bad(i, f"has outside-steps metrics 'o' of type {type(o).__name__}")
            o = dict(o) if type(o) is not dict or not self.owned else o
            if not all(type(k) is str for k in o):
                raise self._bad(i, "has an outside-steps metric whose name is not a string")
            self._check_metrics(o, i, "outside-steps metric")
            n["o"] = o
        if "q" in n:  # per-step second moments (version 3): non-negative numbers
            q = n["q"]
            if type(q) is not dict or not all(
                type(k) is str and type(v) in (int, float) and 0 <= v < 1e300 for k, v in q.items()
            ):
                raise self._bad(i, "has second moments 'q' that are not non-negative numbers by metric")
        strings = self.strings
        n["kind"] = strings[kind]
        n["name"] = strings.setdefault(name, name)
        n["file"] = strings.setdefault(file, file)
        n["line"] = line
        n["m"] = m
        if "x" in n:
            x = n["x"]
            if type(x) is not dict:
                if not isinstance(x, Mapping):
                    raise self._bad(i, f"has extras 'x' of type {type(x).__name__}")
                x = dict(x)
            elif not self.owned:
                x = dict(x)
            try:
                self.extras[i] = (x, check_extras(x, f"node {i}"))
            except SchemaError as e:
                raise SessionFormatError(f"{self.source}: {e}") from None
            n["x"] = x
        return n

    def _check_metrics(self, m: dict[str, Any], i: int, what: str) -> None:
        for v in m.values():
            if type(v) is not int or v < 0 or v >= MAX_INT:
                k = next(k for k, w in m.items() if w is v)
                raise self._bad(
                    i,
                    f"has an invalid {what} {_show(k)}: {_show(v)} "
                    f"(metrics are non-negative integers below {MAX_INT_TEXT})",
                )

    def _explain(self, n: dict[str, Any], i: int) -> None:
        """Raise the error that says what is wrong with node ``i`` (or return if it is only a
        metrics mapping that is not a dict, which the caller copies)."""
        for key in ("id", "parent", "kind", "name"):
            if key not in n:
                raise self._bad(i, f"lacks the required field {key!r}")
        nid, parent, kind, name = n["id"], n["parent"], n["kind"], n["name"]
        if type(nid) is not int or nid != i:
            raise self._bad(i, f"has id {_show(nid)}; ids must equal the node's index")
        if type(parent) is not int:
            raise self._bad(i, f"has a non-integer parent {_show(parent)}")
        if i == 0:
            if parent != -1 or kind != "root":
                raise self._bad(i, "must be the root (kind 'root', parent -1)")
        elif not 0 <= parent < i:
            raise self._bad(i, f"has parent {parent}; a parent must be an earlier node (0 <= parent < {i})")
        if type(kind) is not str or kind not in KINDS:
            raise self._bad(i, f"has unknown kind {_show(kind)}")
        if kind == "root" and i != 0:
            raise self._bad(i, "is a second root")
        if type(name) is not str:
            raise self._bad(i, f"has a non-string name {_show(name)}")
        file, line, m = n.get("file", ""), n.get("line", 0), n.get("m", {})
        if type(file) is not str:
            raise self._bad(i, f"has a non-string file {_show(file)}")
        if not check_int(line):
            raise self._bad(i, f"has an invalid line {_show(line)}")
        if not isinstance(m, Mapping):
            raise self._bad(i, f"has metrics 'm' of type {type(m).__name__}")
        n["m"] = dict(m)
