"""Functions that fit on a screen: no function or method of dlpt/ is longer than 80 lines
(CONTRIBUTING.md). A longer one is split where its parts have names of their own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import dlpt
from tests.offenders import assert_every_file

pytestmark = pytest.mark.torch_independent  # not rerun on CI's newest-torch leg (.ci/run)

PKG = Path(dlpt.__file__).parent
MAX_LINES = 80


def long_functions(path: Path) -> list[str]:
    """``name (N lines)`` for each function of ``path`` longer than MAX_LINES, decorators and
    docstring included."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            n = (node.end_lineno or node.lineno) - first + 1
            if n > MAX_LINES:
                out.append(f"{node.name} ({n} lines)")
    return out


def test_every_function_fits_on_a_screen() -> None:
    assert_every_file(sorted(PKG.rglob("*.py")), long_functions, f"functions over {MAX_LINES} lines")


def test_the_rule_sees_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    f = tmp_path / "long.py"
    f.write_text(f"def too_long():\n{body}\n\n\ndef short():\n    return 1\n")
    assert long_functions(f) == [f"too_long ({MAX_LINES + 1} lines)"]
