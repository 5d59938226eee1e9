"""An existing file is replaced only if dlpt wrote it: every kind of file dlpt writes is
recognised from its first bytes, and nothing else is (dlpt.files.own_files, safe_files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlpt.errors import UnsafeFileError
from dlpt.files.own_files import PREFIX_BYTES, written_by_dlpt
from dlpt.files.safe_files import check_output_path, write_text_file
from dlpt.model.session import Session
from dlpt.renderers.exports import write_export
from dlpt.renderers.html import write_html
from tests import sessions as S


def _kind_of(path: Path) -> str | None:
    data = path.read_bytes()
    return written_by_dlpt(data[:PREFIX_BYTES], complete=len(data) <= PREFIX_BYTES)


def test_everything_dlpt_writes_is_recognised_and_replaced(tmp_path: Path) -> None:
    session = Session.from_dict(S.gpt_eager())
    session.save(tmp_path / "s.json")
    write_html(session, tmp_path / "r.html")
    write_export(session, "speedscope", tmp_path / "p.json")
    write_export(session, "folded", tmp_path / "f.txt")
    # A long program name must not push the speedscope exporter out of the prefix.
    session.set_meta("argv", ["x" * (2 * PREFIX_BYTES)])
    write_export(session, "speedscope", tmp_path / "long.json")
    kinds = {p.name: _kind_of(p) for p in tmp_path.iterdir()}
    assert kinds == {
        "s.json": "session",
        "r.html": "HTML report",
        "p.json": "speedscope export",
        "long.json": "speedscope export",
        "f.txt": "folded export",
    }
    whats = {"session": "sessions", "HTML report": "HTML reports"}
    for p in tmp_path.iterdir():  # each one may be written again, by an output of its kind
        kind = kinds[p.name]
        assert kind is not None
        check_output_path(str(p), whats.get(kind, kind.replace(" export", " exports")))


# Every kind against every output: only the same kind replaces a file (a typo such as
# `--html run.json` must not wipe a session; an export never replaces a session, ...).
_WHATS = ["sessions", "HTML reports", "speedscope exports", "folded exports", "text reports"]


@pytest.mark.parametrize("what", _WHATS)
def test_an_output_replaces_only_a_file_of_its_own_kind(tmp_path: Path, what: str) -> None:
    session = Session.from_dict(S.gpt_eager())
    made = {
        "sessions": lambda p: session.save(p),
        "HTML reports": lambda p: write_html(session, p),
        "speedscope exports": lambda p: write_export(session, "speedscope", p),
        "folded exports": lambda p: write_export(session, "folded", p),
    }
    for written, make in made.items():
        path = tmp_path / f"{written}.out"
        make(path)
        before = path.read_bytes()
        if written == what:
            write_text_file(path, "replaced", what)
            assert path.read_text() == "replaced"
            continue
        with pytest.raises(UnsafeFileError, match=r"is a dlpt .* \(dlpt replaces it only with another"):
            write_text_file(path, "replaced", what)
        assert path.read_bytes() == before
        write_text_file(path, "replaced", what, force=True)
        assert path.read_text() == "replaced"


PY_SPY_FOLDED = (
    'process 4183:"python train.py";<module> (train.py:12);step (train.py:8) 57\n'
    'process 4183:"python train.py";<module> (train.py:12);load (data.py:3) 4\n'
)


@pytest.mark.parametrize(
    "content", [PY_SPY_FOLDED, "apples 3\npears;ripe 5\n", "<root> 5\nmain.py:3 f;aten::mm 7\n"]
)
def test_a_folded_file_dlpt_did_not_mark_is_kept(tmp_path: Path, content: str) -> None:
    """py-spy's and perf's folded files have dlpt's shape; only dlpt's header marks its own."""
    path = tmp_path / "profile.folded"
    path.write_text(content)
    session = Session.from_dict(S.gpt_eager())
    with pytest.raises(UnsafeFileError, match="not a file dlpt wrote"):
        write_export(session, "folded", path)
    assert path.read_text() == content
    write_export(session, "folded", path, force=True)
    assert path.read_text().startswith("# folded stacks written by dlpt 0\n")


@pytest.mark.parametrize(
    "content",
    [
        "notes about the run\n",
        "step,loss\n1,0.5\n2,0.4\n",
        "import torch\nx = torch.ones(2)\n",
        "alice 10\nbob 12\n",  # "word number" lines, but no dlpt stack among them
        '{"traceEvents": [], "displayTimeUnit": "ms"}',
        '{"$schema":"https://www.speedscope.app/file-format-schema.json","exporter":"speedscope@1.0"}',
        "<!DOCTYPE html>\n<html><head><title>mine</title></head></html>\n",
        '{"nodes": [], "format": "dlpt-session"}',  # the marker must come first
        "\x00\x01binary\xff",
    ],
)
def test_a_file_dlpt_did_not_write_is_refused_unless_forced(tmp_path: Path, content: str) -> None:
    path = tmp_path / "out.json"
    path.write_bytes(content.encode("utf-8", "surrogateescape"))
    with pytest.raises(UnsafeFileError, match="not a file dlpt wrote"):
        check_output_path(str(path))
    with pytest.raises(UnsafeFileError):
        write_text_file(path, "new", "exports")
    assert path.read_bytes() == content.encode("utf-8", "surrogateescape")
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"], "no temporary file left"
    write_text_file(path, "new", "exports", force=True)
    assert path.read_text() == "new"


def test_empty_files_are_replaced_but_not_empty_python_sources(tmp_path: Path) -> None:
    (tmp_path / "mktemp.out").write_text("")
    write_text_file(tmp_path / "mktemp.out", "x", "exports")
    assert (tmp_path / "mktemp.out").read_text() == "x"
    (tmp_path / "__init__.py").write_text("")
    with pytest.raises(UnsafeFileError, match="empty Python source"):
        write_text_file(tmp_path / "__init__.py", "x", "exports")


def test_protected_files_are_refused_whatever_they_hold(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    Session().save(path)
    with pytest.raises(UnsafeFileError, match="is the profiled script"):
        check_output_path(str(path), protected={str(path): "the profiled script"})
