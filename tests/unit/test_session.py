"""Session save/load round trip and every SessionFormatError case."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dlpt.errors import DlptError, SessionFormatError, UnsafeFileError
from dlpt.model.session import SAVE_CHUNK_NODES, Session


def test_round_trip(tmp_path: Path, h) -> None:
    s = h.build_gpu().session(h.gpu_meta())
    path = tmp_path / "prof.dlpt.json"
    s.save(path)
    loaded = Session.load(path)
    assert loaded.nodes == s.nodes
    assert loaded.meta == s.meta
    assert loaded.to_dict() == s.to_dict()
    assert json.loads(path.read_text())["format"] == "dlpt-session"
    # No temp files left behind; the file is readable by others like a plain open() would make.
    assert [p.name for p in tmp_path.iterdir()] == ["prof.dlpt.json"]
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_save_replaces_atomically(tmp_path: Path, h) -> None:
    path = tmp_path / "s.json"
    Session().save(path)  # an earlier run's session: replaced
    h.build_gpu().session().save(path)
    assert Session.load(path).nodes[1]["name"] == "_run_code"


def test_save_replaces_a_file_dlpt_did_not_write_only_with_force(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("my notes\n")
    with pytest.raises(UnsafeFileError, match="not a file dlpt wrote"):
        Session().save(path)
    assert path.read_text() == "my notes\n" and sorted(tmp_path.iterdir()) == [path]
    Session().save(path, force=True)
    assert Session.load(path).nodes == Session().nodes


def test_json_chunks_are_json_dumps_byte_for_byte() -> None:
    """The chunked writer (SAVE_CHUNK_NODES nodes at a time, C encoder) writes exactly what
    one json.dumps of the whole session would, across chunk boundaries."""
    from tests.big_sessions import wide_session

    s = Session.from_dict(wide_session(3 * SAVE_CHUNK_NODES + 17))
    s.meta["odd"] = ["\ud800", "\x1b[2J", 1.5]
    whole = json.dumps(s.to_dict(), separators=(",", ":"), ensure_ascii=True) + "\n"
    assert "".join(s.json_chunks()) == whole


def test_save_failure_leaves_no_temp(tmp_path: Path) -> None:
    s = Session(meta={"bad": object()})  # not JSON-serialisable
    with pytest.raises(TypeError):
        s.save(tmp_path / "s.json")
    assert list(tmp_path.iterdir()) == []


def test_from_dict_normalises_defaults() -> None:
    s = Session.from_dict(
        {
            "format": "dlpt-session",
            "version": 1,
            "nodes": [
                {"id": 0, "parent": -1, "kind": "root", "name": "<root>"},
                {"id": 1, "parent": 0, "kind": "op", "name": "aten::mm", "m": {"calls": 2}},
            ],
        }
    )
    assert s.nodes[1] == {
        "id": 1,
        "parent": 0,
        "kind": "op",
        "name": "aten::mm",
        "file": "",
        "line": 0,
        "m": {"calls": 2},
    }
    assert s.meta == {}


def _write(tmp_path: Path, content: str | bytes) -> Path:
    p = tmp_path / "s.json"
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content)
    return p


def _load_error(path: Path) -> str:
    with pytest.raises(SessionFormatError) as e:
        Session.load(path)
    assert isinstance(e.value, DlptError)
    assert str(path) in str(e.value)  # the message names the file
    return str(e.value)


def test_missing_file(tmp_path: Path) -> None:
    assert "no such session file" in _load_error(tmp_path / "nope.json")


def test_directory(tmp_path: Path) -> None:
    assert "directory" in _load_error(tmp_path)


def test_empty_file(tmp_path: Path) -> None:
    assert "empty" in _load_error(_write(tmp_path, ""))


def test_not_json(tmp_path: Path) -> None:
    assert "invalid JSON" in _load_error(_write(tmp_path, "hello world}"))


def test_binary(tmp_path: Path) -> None:
    assert "not UTF-8" in _load_error(_write(tmp_path, b"\x89PNG\r\n\x1a\n\xff\xfe"))


@pytest.mark.parametrize("cut", [10, 37, -40, -2])
def test_truncated(tmp_path: Path, h, cut: int) -> None:
    text = json.dumps(h.build_gpu().dict(h.gpu_meta()))
    assert "truncated" in _load_error(_write(tmp_path, text[:cut]))


@pytest.mark.parametrize(
    "doc, what",
    [
        ([1, 2, 3], "top level is list"),
        ({"nodes": []}, "format is None"),
        ({"format": "chrome-trace", "version": 1, "nodes": []}, "format is 'chrome-trace'"),
        ({"format": "dlpt-session", "version": 4, "nodes": []}, "newer dlpt"),
        ({"format": "dlpt-session", "version": "1", "nodes": []}, "invalid session version"),
        ({"format": "dlpt-session", "version": 0, "nodes": []}, "invalid session version"),
        ({"format": "dlpt-session", "version": 1, "nodes": {}}, "'nodes' must be a list"),
        ({"format": "dlpt-session", "version": 1, "nodes": []}, "empty"),
        ({"format": "dlpt-session", "version": 1, "meta": [], "nodes": []}, "'meta' must be"),
        ({"format": "dlpt-session", "version": 1, "meta": {"wall_ns": "1s"}, "nodes": []}, "meta.wall_ns"),
        ({"format": "dlpt-session", "version": 1, "meta": {"suggestions": {}}, "nodes": []}, "suggestions"),
        ({"format": "dlpt-session", "version": 1, "meta": {"flops": 3}, "nodes": []}, "meta.flops"),
    ],
)
def test_foreign_or_versioned(tmp_path: Path, doc: object, what: str) -> None:
    assert what in _load_error(_write(tmp_path, json.dumps(doc)))


ROOT = {"id": 0, "parent": -1, "kind": "root", "name": "<root>"}


def _node(**kw: object) -> dict:
    return {"id": 1, "parent": 0, "kind": "op", "name": "aten::mm", **kw}


@pytest.mark.parametrize(
    "nodes, what",
    [
        ([{"id": 0, "parent": -1, "kind": "op", "name": "x"}], "must be the root"),
        ([{**ROOT, "parent": 0}], "must be the root"),
        ([ROOT, "node"], "expected an object"),
        ([ROOT, {"id": 1, "parent": 0, "kind": "op"}], "required field 'name'"),
        ([ROOT, _node(id=5)], "ids must equal"),
        ([ROOT, _node(id=True)], "ids must equal"),
        ([ROOT, _node(parent=1)], "earlier node"),
        ([ROOT, _node(parent=7)], "earlier node"),
        ([ROOT, _node(parent=-1)], "earlier node"),
        ([ROOT, _node(parent="0")], "non-integer parent"),
        ([ROOT, _node(kind="widget")], "unknown kind"),
        ([ROOT, _node(kind="root")], "second root"),
        ([ROOT, _node(name=3)], "non-string name"),
        ([ROOT, _node(file=None)], "non-string file"),
        ([ROOT, _node(line="12")], "invalid line"),
        ([ROOT, _node(line=-1)], "invalid line"),
        ([ROOT, _node(m=[1])], "metrics 'm'"),
        ([ROOT, _node(m={"gpu_ns": 1.5})], "invalid metric 'gpu_ns'"),
        ([ROOT, _node(m={"gpu_ns": -1})], "invalid metric 'gpu_ns'"),
        ([ROOT, _node(m={"calls": True})], "invalid metric 'calls'"),
        ([ROOT, _node(x="grid")], "extras 'x'"),
    ],
)
def test_malformed_node_table(tmp_path: Path, nodes: list, what: str) -> None:
    doc = {"format": "dlpt-session", "version": 1, "meta": {}, "nodes": nodes}
    msg = _load_error(_write(tmp_path, json.dumps(doc)))
    assert what in msg
    assert "node" in msg


def test_from_dict_names_source() -> None:
    with pytest.raises(SessionFormatError, match=r"^<dict>: not a dlpt session"):
        Session.from_dict({"format": "x"})


def test_save_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(UnsafeFileError, match="FIFO"):
        Session().save(fifo)
    with pytest.raises(UnsafeFileError, match="directory"):
        Session().save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe.json"] and fifo.is_fifo()


def test_save_writes_through_a_symlink(tmp_path: Path) -> None:
    Session(meta={"argv": ["old"]}).save(tmp_path / "target.json")
    (tmp_path / "link.json").symlink_to("target.json")
    Session().save(tmp_path / "link.json")
    assert (tmp_path / "link.json").is_symlink()
    assert Session.load(tmp_path / "target.json").nodes == Session().nodes


def test_undecodable_file_names_round_trip(tmp_path: Path) -> None:
    """A file name with bytes that are not UTF-8 reaches Python as a lone surrogate; saving must
    not fail on it (the run would be lost) and loading gives the same name back."""
    s = Session.from_dict(
        {
            "format": "dlpt-session",
            "version": 2,
            "nodes": [
                {"id": 0, "parent": -1, "kind": "root", "name": "<root>"},
                {"id": 1, "parent": 0, "kind": "frame", "name": "f", "file": "/tmp/caf\udce9.py", "line": 1},
            ],
        }
    )
    s.save(tmp_path / "s.json")
    assert Session.load(tmp_path / "s.json").nodes[1]["file"] == "/tmp/caf\udce9.py"


def test_version_1_sessions_still_load(h) -> None:
    d = h.build_gpu().dict(h.gpu_meta())
    d["version"] = 1
    del d["meta"]["sources"]
    assert Session.from_dict(d).nodes == h.build_gpu().session().nodes


def test_from_dict_leaves_its_input_alone(h) -> None:
    d = h.build_gpu().dict(h.gpu_meta())
    d["nodes"][1]["unknown"] = 1
    del d["nodes"][2]["file"]
    before = json.dumps(d)
    s = Session.from_dict(d)
    assert json.dumps(d) == before
    assert "unknown" not in s.nodes[1] and s.nodes[2]["file"] == ""
