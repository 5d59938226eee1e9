"""``%load_ext dlpt``, ``%dlpt`` and ``%%dlpt`` in a real IPython shell (in-process, real capture on
the CPU): the report starts at the cell, cells are named ``In [N]`` with their text saved, the
last value is shown after the report, a failing cell still fails after its report, ``--step-on``
finds a function the cell defines, and bad options stop before anything runs."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("IPython", reason="the notebook magic's tests need IPython (pip install ipython)")

from IPython.core.displaypub import CapturingDisplayPublisher
from IPython.core.error import UsageError as IPythonUsageError
from IPython.core.interactiveshell import InteractiveShell

DEFS = """\
import torch
x = torch.ones(64, 64)
def f(n):
    for _ in range(n):
        y = x @ x
    return y
"""


@pytest.fixture(scope="module")
def shell(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    sh = InteractiveShell.instance()
    sh.user_ns["OUT"] = str(tmp_path_factory.mktemp("magic"))
    assert sh.run_cell("%load_ext dlpt", store_history=True).success
    assert sh.run_cell(DEFS, store_history=True).success
    yield sh
    InteractiveShell.clear_instance()


def run(shell: Any, capsys: pytest.CaptureFixture[str], cell: str) -> tuple[Any, str]:
    result = shell.run_cell(cell, store_history=True)
    return result, capsys.readouterr().out


def _defs_cell(shell: Any) -> int:
    """The number of the cell that defined f (its file is named In [N])."""
    return next(n for n, src in enumerate(shell.user_ns["_ih"]) if src.startswith("import torch"))


def test_load_ext_registers_the_line_and_cell_magic(shell: Any) -> None:
    magics = shell.magics_manager.magics
    assert "dlpt" in magics["line"] and "dlpt" in magics["cell"]


def test_cell_magic_reports_from_the_cell_with_cells_named(
    shell: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_file = tmp_path / "cell.json"
    n = shell.execution_count
    result, out = run(
        shell, capsys, f"%%dlpt --threshold 0 -o {out_file}\nz = f(3)\nw = torch.relu(z)\nw.sum()\n"
    )
    assert result.success, result.error_in_exec
    defs = _defs_cell(shell)
    tree = out[out.index("Top-down") :]
    rows = [line for line in tree.splitlines() if "─ " in line]
    assert re.search(rf"├─ In \[{n}\]:2 <module>  z = f\(3\)$", rows[0]), rows[:3]
    assert any(re.search(rf"└─ In \[{defs}\]:5 f  y = x @ x$", r) for r in rows)
    assert any(f"In [{n}]:3 <module>  w = torch.relu(z)" in r for r in rows)
    # Nothing of IPython, of this test or of the magic's own call above the cell.
    assert not re.search(r"interactiveshell|ipython|test_magic|run_cell|get_ipython", tree, re.I)
    # The last value is shown after the report, and computing its text was not profiled.
    assert out.index("Out[") > out.index("Top-down")
    s = json.loads(out_file.read_text())
    assert "aten::isfinite" not in {node["name"] for node in s["nodes"]}
    assert s["meta"]["argv"] == ["%%dlpt", "--threshold", "0", "-o", str(out_file)]
    src = s["meta"]["sources"]
    assert src[f"In [{n}]"]["1"] == f"%%dlpt --threshold 0 -o {out_file}"
    assert src[f"In [{n}]"]["2"] == "z = f(3)" and src[f"In [{defs}]"]["5"] == "        y = x @ x"
    assert not [node for node in s["nodes"] if "ipython-input" in node["file"]]


def test_line_magic_profiles_the_statement_at_its_line(
    shell: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_file = tmp_path / "line.json"
    n = shell.execution_count
    result, out = run(shell, capsys, f"a = 1\n%dlpt -o {out_file} f(2)\nb = a + 1\n")
    assert result.success, result.error_in_exec
    assert shell.user_ns["b"] == 2  # the rest of the cell ran
    rows = [line for line in out[out.index("Top-down") :].splitlines() if "─ " in line]
    assert rows[0].endswith(f"└─ In [{n}]:2 <module>  %dlpt -o {out_file} f(2)"), rows[:2]
    src = json.loads(out_file.read_text())["meta"]["sources"][f"In [{n}]"]
    assert src == {"1": "a = 1", "2": f"%dlpt -o {out_file} f(2)", "3": "b = a + 1"}


def test_a_failing_cell_shows_its_report_then_fails(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    result, out = run(shell, capsys, "%%dlpt\nq = f(1)\n1 / 0\n")
    assert isinstance(result.error_in_exec, ZeroDivisionError)
    assert out.index("Top-down") < out.index("ZeroDivisionError")
    assert "q" in shell.user_ns  # what ran before the error stays, as in a cell


def test_step_on_finds_a_function_the_cell_defines(
    shell: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_file = tmp_path / "steps.json"
    body = "def step():\n    return x @ x\nfor _ in range(4):\n    step()\n"
    cell = f"%%dlpt --step-on step --skip-first 1 -q -o {out_file}\n{body}"
    result, out = run(shell, capsys, cell)
    assert result.success, result.error_in_exec
    steps = json.loads(out_file.read_text())["meta"]["steps"]
    assert (steps["seen"], steps["profiled"]) == (4, 3)
    assert "4 steps" not in out and "3 steps profiled" in out


def test_bad_options_stop_before_anything_runs(
    shell: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    result, _ = run(shell, capsys, "%%dlpt --bogus\nran = 1\n")
    assert isinstance(result.error_in_exec, IPythonUsageError) and "ran" not in shell.user_ns
    assert str(result.error_in_exec) == "dlpt: unrecognized arguments: --bogus"
    result, _ = run(shell, capsys, f"%dlpt -o {tmp_path} f(1)")
    assert (
        str(result.error_in_exec)
        == f"dlpt: -o {tmp_path}: is a directory; dlpt writes sessions to regular files only"
    )
    result, _ = run(shell, capsys, "%dlpt --view flat")
    assert "no statement to profile" in str(result.error_in_exec)


def test_inline_html_displays_the_report_in_an_iframe(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    saved, shell.display_pub = shell.display_pub, CapturingDisplayPublisher()
    try:
        result, out = run(shell, capsys, "%dlpt --inline-html --no-report f(1)")
        outputs = list(shell.display_pub.outputs)
    finally:
        shell.display_pub = saved
    assert result.success, result.error_in_exec
    assert "Top-down" not in out  # --no-report
    pages = [o["data"]["text/html"] for o in outputs if "text/html" in o["data"]]
    assert len(pages) == 1 and '<iframe class="dlpt-report"' in pages[0]
    assert 'sandbox="allow-scripts"' in pages[0] and 'srcdoc="&lt;!DOCTYPE html&gt;' in pages[0]


def test_a_profile_in_a_cell_names_its_cells_too(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    n = shell.execution_count
    result, _ = run(shell, capsys, "import dlpt\nwith dlpt.profile() as prof:\n    f(2)\n")
    assert result.success, result.error_in_exec
    session = shell.user_ns["prof"].session
    files = {node["file"] for node in session.nodes if node["kind"] == "frame"}
    assert f"In [{n}]" in files and f"In [{_defs_cell(shell)}]" in files
    assert session.meta["sources"][f"In [{n}]"]["3"] == "    f(2)"


# -- every option of the command line (issue 33: `%dlpt --memory` was "unrecognized arguments") --


def _value(action: Any, tmp: Path) -> list[str]:
    """Valid values for one command-line option, for the parity test."""
    if action.nargs == 0:
        return []
    if action.choices:
        return [str(next(iter(action.choices)))]
    dest = action.dest
    files = {"output": "s.json", "html": "r.html", "report_file": "r.txt"}
    if dest in files:
        return [str(tmp / files[dest])]
    if dest == "export":
        return ["speedscope", str(tmp / "e.json")]
    if dest == "step_on":
        return ["f"]
    if dest == "width":
        return ["80"]
    return ["1"]


def test_the_magic_parses_every_command_line_option_with_the_same_parser(tmp_path: Path) -> None:
    from dlpt.cli.options import build_parser
    from dlpt.errors import UsageError
    from dlpt.notebook.options import HelpShown, parse_cell

    refused = {"--load", "--report-ranks", "--rank-timeout", "--kernel-lines"}
    checked = 0
    for action in build_parser()._actions:
        for flag in action.option_strings:
            words = [flag, *_value(action, tmp_path)]
            if flag == "--open":
                words += ["--html", str(tmp_path / "o.html")]
            if flag == "--pc-sampling-steps":
                words += ["--pc-sampling"]
            if flag in ("-h", "--help", "-V", "--version"):
                with pytest.raises(HelpShown):
                    parse_cell(" ".join(words))
            elif flag in refused:
                with pytest.raises(UsageError, match=f"^{flag} .*not an option of %%dlpt"):
                    parse_cell(" ".join(words))
            else:
                parse_cell(" ".join(words))  # no "unrecognized arguments"
            checked += 1
    assert checked > 30


def test_capture_options_reach_the_profile(
    shell: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DLPT_OPS", "lean")  # --exact-ops must win over it
    out_file = tmp_path / "capture.json"
    body = "def step():\n    return x @ x\nfor _ in range(6):\n    step()\n"
    cell = (
        f"%%dlpt --step-on step --skip-first 1 --memory --sample-hz 0 --timeline 2 --calibrate off "
        f"--no-source --active 4 --flops --pc-sampling --pc-sampling-steps 2 --exact-ops "
        f"-q -o {out_file}\n{body}"
    )
    result, _ = run(shell, capsys, cell)
    assert result.success, result.error_in_exec
    meta = json.loads(out_file.read_text())["meta"]
    assert meta["memory"]["enabled"] is True
    # --pc-sampling reaches the profile (on the CPU: the window it asked for, and why it is off).
    assert meta["pc_sampling"]["steps"] == 2 and "flops" in meta
    assert meta["host"]["sampling"] is False and meta["timeline"]["steps"] == 2
    assert meta["step_time"]["calibrate"] is False and meta["steps"]["profiled"] == 4
    assert not meta.get("sources")  # --no-source
    assert meta["capture"]["op_mode"] == "exact"  # --exact-ops


def test_output_options_write_their_files(
    shell: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    export, report = tmp_path / "s.speedscope.json", tmp_path / "report.txt"
    existing = tmp_path / "mine.json"
    existing.write_text("not dlpt's")
    result, out = run(
        shell,
        capsys,
        f"%dlpt --export speedscope {export} --report-file {report} --width 90 -o {existing} --force f(2)",
    )
    assert result.success, result.error_in_exec
    assert json.loads(export.read_text())["$schema"].startswith("https://www.speedscope.app")
    text = report.read_text()
    assert "Top-down" in text and "Top-down" not in out  # the report went to the file
    assert max(len(line) for line in text.splitlines()) <= 90
    assert json.loads(existing.read_text())["meta"]["argv"][0] == "%dlpt"  # --force replaced it


def test_render_options_shape_the_report(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    result, out = run(shell, capsys, "%dlpt --verbose --ascii --view flat --threshold 0 f(2)")
    assert result.success, result.error_in_exec
    assert "By source line" in out and "python " in out  # --view flat; --verbose: the versions line
    assert "╭" not in out and "+---" in out  # --ascii


def test_options_a_cell_cannot_use_are_refused_clearly(
    shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    result, _ = run(shell, capsys, "%dlpt --load s.json f(1)")
    assert isinstance(result.error_in_exec, IPythonUsageError)
    assert str(result.error_in_exec).startswith("dlpt: --load re-renders a saved session")
    result, out = run(shell, capsys, "%dlpt --help")
    assert result.success and "--sample-hz" in out and "--inline-html" in out


def test_cells_are_named_alike_in_the_tree_the_host_lines_and_the_timeline(
    shell: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 33: the tree said In [1]:6, the header's host line <ipython-input-1-...>:7."""
    out_file = tmp_path / "cells.json"
    n = shell.execution_count
    # Long enough (~0.2 s) that the sampler thread gets a CPU on a loaded 2-core CI machine.
    body = "def spin():\n    s = 0\n    for i in range(3000000):\n        s += i\n    return s\nspin()\n"
    result, out = run(shell, capsys, f"%%dlpt --verbose --timeline 1 --sample-hz 2000 -o {out_file}\n{body}")
    assert result.success, result.error_in_exec
    meta = json.loads(out_file.read_text())["meta"]
    lines = meta["host"]["step_thread"]["lines"]
    assert lines, "the sampler caught the loop"
    files = {r["file"] for r in lines}
    assert f"In [{n}]" in files and not any("ipython-input" in f for f in files), files
    assert not any("ipython-input" in s for s in meta["timeline"]["strings"])
    host = next(line for line in out.splitlines() if "host per step" in line or "host in the run" in line)
    assert f"In [{n}]:" in host and "ipython-input" not in out
