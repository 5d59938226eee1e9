"""An existing file is replaced only if dlpt wrote it: every kind of file dlpt writes is
recognised from its first bytes, and nothing else is (dlpt.model.own_files, safe_files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlpt.errors import UnsafeFileError
from dlpt.model.own_files import PREFIX_BYTES, written_by_dlpt
from dlpt.model.safe_files import check_output_path, write_text_file
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
    session.meta["argv"] = ["x" * (2 * PREFIX_BYTES)]
    write_export(session, "speedscope", tmp_path / "long.json")
    kinds = {p.name: _kind_of(p) for p in tmp_path.iterdir()}
    assert kinds == {
        "s.json": "session",
        "r.html": "HTML report",
        "p.json": "speedscope export",
        "long.json": "speedscope export",
        "f.txt": "folded export",
    }
    for p in tmp_path.iterdir():  # each one may be written again
        check_output_path(str(p))


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
