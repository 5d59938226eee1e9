"""docs/development.md's "Layout" describes the package as it is: every package folder under
dlpt/ and every folder of the import-layer table (test_layers.ALLOWED) is described there, and
every dlpt/ path it describes exists and sits in a layer of that table."""

from __future__ import annotations

import re

from tests.unit.test_layers import ALLOWED, PKG, allowed_for

ROOT = PKG.parent
DOC = ROOT / "docs" / "development.md"


def _layout_entries() -> list[str]:
    """The paths the Layout section's list items describe (the first backticked path of each)."""
    text = DOC.read_text()
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^- `([^`]+)`", section, flags=re.M)


def _dlpt_entries() -> list[str]:
    return [e for e in _layout_entries() if e.startswith("dlpt/")]


def _module_of(path: str) -> str:
    rel = path.rstrip("/").removesuffix(".py").removesuffix("/__init__")
    return rel.replace("/", ".")


def test_the_layout_section_has_entries() -> None:
    assert len(_dlpt_entries()) >= 10


def test_every_package_folder_is_described() -> None:
    described = set(_dlpt_entries())
    folders = sorted(
        str(p.parent.relative_to(ROOT)) + "/" for p in PKG.rglob("__init__.py") if p.parent != PKG
    )
    assert [f for f in folders if f not in described] == []


def test_every_folder_of_the_layer_table_is_described() -> None:
    described = set(_dlpt_entries())
    folders = [k for k in ALLOWED if (ROOT / k.replace(".", "/")).is_dir()]
    assert folders, "ALLOWED names no package folder"
    assert [f for f in folders if f.replace(".", "/") + "/" not in described] == []


def test_every_described_path_exists_and_has_a_layer() -> None:
    for entry in _dlpt_entries():
        assert (ROOT / entry).exists(), f"docs/development.md describes {entry}, which does not exist"
        if _module_of(entry) != "dlpt":  # the package's own __init__ is the top, outside the table
            allowed_for(_module_of(entry))  # fails naming the module when no layer holds it
