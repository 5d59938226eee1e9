"""docs/architecture.md describes the code as it is:

- its "Layers" table is the one generated from test_layers.ALLOWED (and NO_RICH), its "Native layers"
  table the one generated from test_csrc_layers.LAYERS and UPWARD (``DLPT_UPDATE_DOCS=1``
  writes them again after a deliberate change to a table);
- its "Layout" describes every package folder under dlpt/ and every folder of ALLOWED, and every
  dlpt/ path it describes exists and sits in a layer of that table.
"""

from __future__ import annotations

import os
import re

import pytest

from tests.unit.test_csrc_layers import LAYERS, UPWARD
from tests.unit.test_layers import ALLOWED, NO_RICH, PKG, allowed_for

pytestmark = pytest.mark.torch_independent  # not rerun on CI's newest-torch leg (.ci/run)

ROOT = PKG.parent
DOC = ROOT / "docs" / "architecture.md"

#: The generated blocks: (opening marker, closing marker).
PYTHON_BLOCK = ("<!-- layers: generated from tests/unit/test_layers.py's ALLOWED -->", "<!-- end layers -->")
NATIVE_BLOCK = (
    "<!-- native layers: generated from tests/unit/test_csrc_layers.py's LAYERS and UPWARD -->",
    "<!-- end native layers -->",
)


def _codes(names: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) if names else "nothing"


def python_layers_table() -> str:
    """ALLOWED as a table: one row per part of dlpt, in the table's own order."""
    rows = ["| Part of dlpt | May import |", "| --- | --- |"]
    rows += [f"| `{part}` | {_codes(list(allowed))} |" for part, allowed in ALLOWED.items()]
    return "\n".join(rows) + f"\n\nNever import rich (they never print): {_codes(list(NO_RICH))}."


def native_layers_table() -> str:
    """LAYERS as a table, top first (as the layers stand), then the includes going up."""
    rows = ["| Layer (top first) | What it holds | Files under `csrc/` |", "| --- | --- | --- |"]
    rows += [f"| {name} | {what} | {_codes(list(paths))} |" for name, what, paths in reversed(LAYERS)]
    text = "\n".join(rows)
    if UPWARD:
        text += "\n\nIncludes that go up a layer, each with its reason:\n\n" + "\n".join(
            f"- `{src}` includes `{dst}`: {why}." for (src, dst), why in UPWARD.items()
        )
    return text


def _block(text: str, markers: tuple[str, str]) -> str:
    start, end = markers
    assert start in text and end in text, f"docs/architecture.md lost the marker {start!r}"
    return text.split(start, 1)[1].split(end, 1)[0].strip()


def _replace(text: str, markers: tuple[str, str], table: str) -> str:
    start, end = markers
    head, rest = text.split(start, 1)
    return f"{head}{start}\n{table}\n{end}{rest.split(end, 1)[1]}"


@pytest.mark.parametrize(
    ("markers", "table"),
    [(PYTHON_BLOCK, python_layers_table), (NATIVE_BLOCK, native_layers_table)],
    ids=["layers", "native-layers"],
)
def test_the_layer_tables_are_the_enforced_ones(markers: tuple[str, str], table: object) -> None:
    assert callable(table)
    expected = table()
    text = DOC.read_text()
    if os.environ.get("DLPT_UPDATE_DOCS") and _block(text, markers) != expected:
        DOC.write_text(_replace(text, markers, expected))
        text = DOC.read_text()
    assert _block(text, markers) == expected, (
        "docs/architecture.md disagrees with the layer table the tests enforce: "
        "DLPT_UPDATE_DOCS=1 python3 -m pytest -q tests/unit/test_layout_doc.py writes it again"
    )


def test_a_changed_table_is_caught() -> None:
    text = DOC.read_text()
    shown = _block(text, PYTHON_BLOCK)
    assert "| `dlpt.model` |" in shown and "| `dlpt.cli` |" in shown
    assert _block(_replace(text, PYTHON_BLOCK, shown.replace("`dlpt.api`", "`dlpt.cli`")), PYTHON_BLOCK) != (
        python_layers_table()
    )
    assert "| events |" in _block(text, NATIVE_BLOCK)


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
        assert (ROOT / entry).exists(), f"docs/architecture.md describes {entry}, which does not exist"
        if _module_of(entry) != "dlpt":  # the package's own __init__ is the top, outside the table
            allowed_for(_module_of(entry))  # fails naming the module when no layer holds it


def test_every_native_folder_is_described() -> None:
    csrc = next(e for e in _layout_entries() if e == "csrc/")
    assert csrc
    section = DOC.read_text().split("\n## Layout\n", 1)[1]
    entry = section.split("- `csrc/`", 1)[1].split("\n- `", 1)[0]
    folders = sorted(p.name + "/" for p in (ROOT / "csrc").iterdir() if p.is_dir())
    assert [f for f in folders if f"`{f}`" not in entry] == []
