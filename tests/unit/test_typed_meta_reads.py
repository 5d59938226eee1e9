"""Every read of a session's ``meta`` goes through the typed model (issue 47): dlpt.model.meta's
:class:`~dlpt.model.meta.Meta` (``Session.typed_meta``, checked when a session is loaded) or its
readers of a mapping, never ``meta.get("...")`` or ``meta["..."]`` in a stage that reads it.

Only the typed model itself and the capture code that builds the mapping (and edits it while the
session is made) touch it by key; writing a key (``meta["k"] = v``) is not a read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import dlpt
from tests.offenders import assert_every_file

pytestmark = pytest.mark.torch_independent  # not rerun on CI's newest-torch leg (.ci/run)

PKG = Path(dlpt.__file__).parent

#: A key read from a meta mapping (``meta.get(``, ``meta[``, ``session.meta.get(``) ...
RAW_READ = re.compile(r"meta\.get\(|meta\[")
#: ... unless the line writes one (``meta["k"] = v``; ``==`` is a read).
WRITE = re.compile(r"meta\[[^]]*\] *=[^=]")

#: The typed model, and the capture code that builds a session's meta mapping.
ALLOWED = frozenset(
    {
        "model/meta.py",
        "capture/recorders.py",
        "capture/assemble.py",
        "capture/cells.py",
        "capture/profiler.py",
        "capture/pc_annotate.py",
    }
)


def raw_meta_reads(path: Path) -> list[str]:
    """``line N: text`` for each line of ``path`` that reads a meta mapping by key."""
    return [
        f"line {i}: {line.strip()}"
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if RAW_READ.search(line) and not WRITE.search(line)
    ]


def test_meta_is_read_only_through_the_typed_model() -> None:
    files = [p for p in sorted(PKG.rglob("*.py")) if p.relative_to(PKG).as_posix() not in ALLOWED]
    assert_every_file(files, raw_meta_reads, "raw meta reads (read session.typed_meta instead)")


def test_the_rule_sees_a_raw_read(tmp_path: Path) -> None:
    f = tmp_path / "reads.py"
    f.write_text(
        'a = session.meta.get("steps")\n'
        'b = meta["wall_ns"]\n'
        'meta["suggestions"] = []\n'
        'c = meta["k"] == 1\n'
        "d = session.typed_meta.steps\n"
    )
    assert raw_meta_reads(f) == [
        'line 1: a = session.meta.get("steps")',
        'line 2: b = meta["wall_ns"]',
        'line 4: c = meta["k"] == 1',
    ]
    for name in ALLOWED:
        assert (PKG / name).is_file(), name
