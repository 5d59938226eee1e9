"""A syntax error in the code under ``%dlpt`` / ``%%dlpt`` points at the user's line of the cell, as
the same cell without the magic would, and its traceback holds none of the magic's own frames
(it used to point at the cell's first line and show dlpt's frames down to ``ast.parse``). A
SyntaxError the code raises while it runs keeps its traceback."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("IPython", reason="the notebook magic's tests need IPython (pip install ipython)")

from IPython.core.interactiveshell import InteractiveShell


@pytest.fixture(scope="module")
def shell() -> Iterator[Any]:
    sh = InteractiveShell.instance()
    assert sh.run_cell("%load_ext dlpt", store_history=True).success
    yield sh
    InteractiveShell.clear_instance()


def _run(shell: Any, capsys: pytest.CaptureFixture[str], cell: str) -> tuple[Any, str]:
    result = shell.run_cell(cell, store_history=True)
    captured = capsys.readouterr()
    return result, re.sub(r"\x1b\[[0-9;]*m", "", captured.out + captured.err)  # colours


@pytest.mark.parametrize(
    ("cell", "line", "text"),
    [
        ("%%dlpt\nx = 1\ny = (2 +\nz = 3\n", 3, "y = (2 +"),
        ("%%dlpt --threshold 0\n\nx = 1\nfor i in range(3)\n    x += i\n", 4, "for i in range(3)"),
        ("a = 1\n%dlpt b = 1 +* 2\n", 2, "%dlpt b = 1 +* 2"),
    ],
    ids=["cell", "cell with a blank line", "line"],
)
def test_a_syntax_error_points_at_the_users_line(
    shell: Any, capsys: pytest.CaptureFixture[str], cell: str, line: int, text: str
) -> None:
    n = shell.execution_count
    result, out = _run(shell, capsys, cell)
    e = result.error_in_exec
    assert type(e) is SyntaxError, (e, out)
    assert (e.lineno, e.text.rstrip("\n")) == (line, text)
    body = cell.split("\n", 1)[1]
    if cell.startswith("%%") and not body.startswith("\n"):  # (IPython drops leading blank lines)
        plain, _ = _run(shell, capsys, body)  # the cell without the magic: that line, one further up
        assert plain.error_before_exec.lineno == line - 1
    assert re.search(rf"Cell In\[{n}\], line {line}\n\s+{re.escape(text)}\n", out), out
    for internal in ("magic.py", "ast.py", "_compile", "run_profiled"):
        assert internal not in out, out


def test_a_syntax_error_raised_while_the_code_runs_keeps_its_traceback(
    shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    result, out = _run(shell, capsys, "%%dlpt --no-report\nexec('1 +* 2')\n")
    assert type(result.error_in_exec) is SyntaxError
    assert "exec('1 +* 2')" in out and "<string>" in out, out  # the frames down to the exec
