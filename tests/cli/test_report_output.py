"""Reports that survive a pipe: printed to a pipe or a file, a report is as wide as its content
(nothing cut, nothing wrapped), has no trailing spaces and no colour unless FORCE_COLOR asks for
it; ``--width N`` and ``COLUMNS`` set the width; ``--report-file FILE`` writes the report to a
file (checked before the program runs). The same holds for ``dlpt diff`` and the report across
ranks, and ``--width 100`` prints exactly what the golden renders are made of."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from dlpt.model.session import Session
from dlpt.renderers.terminal.report import render
from tests import rank_sessions as R
from tests import sessions as S

from .helpers import Job, Result, run_many, write

LONG = (
    "y = torch.relu(x @ x) + torch.sigmoid(x @ x) * torch.tanh(x @ x) - torch.nn.functional.gelu(x @ x)"
    "  # a line well past eighty columns, shown whole"
)
PROGRAM = f"""\
import torch
x = torch.ones(32, 32)
for _ in range(3):
    {LONG}
print("program output", flush=True)
"""
# Not a terminal, and nothing set: the rules for a pipe apply (helpers.env sets both for others).
PIPE = {"COLUMNS": None, "NO_COLOR": None, "FORCE_COLOR": None, "TTY_COMPATIBLE": None}
ANSI = re.compile(r"\x1b\[[0-9;]*m")
COLOUR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-7]|9[0-7]|38)[;m]")


def _trailing(text: str) -> list[str]:
    return [line for line in text.splitlines() if line != line.rstrip()]


def _widths(text: str) -> list[int]:
    return [len(line) for line in ANSI.sub("", text).splitlines()]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("report_output")
    write(root / "prog.py", PROGRAM)
    (root / "adir").mkdir()
    Session.from_dict(S.gpt_eager()).save(root / "eager.json")
    Session.from_dict(S.gpt_compiled()).save(root / "compiled.json")
    for rank in range(4):
        R.ddp_gpu(rank).save(root / f"ddp.rank{rank}.json")
    loads = {
        "force_color": Job(["--load", "eager.json"], root, env={**PIPE, "FORCE_COLOR": "1"}),
        "no_color": Job(["--load", "eager.json"], root, env={**PIPE, "FORCE_COLOR": "1", "NO_COLOR": "1"}),
        "width100": Job(["--load", "eager.json", "--width", "100"], root, env=PIPE),
        "columns": Job(["--load", "eager.json"], root, env={**PIPE, "COLUMNS": "90"}),
        "bad_width": Job(["--load", "eager.json", "--width", "12"], root),
        "diff": Job(["diff", "eager.json", "compiled.json"], root, env=PIPE),
        "diff_file": Job(["diff", "eager.json", "compiled.json", "--report-file", "diff.txt"], root),
        "diff_same": Job(["diff", "eager.json", "compiled.json", "--report-file", "compiled.json"], root),
        "ranks_file": Job(["--load", "ddp.rank*.json", "--report-file", "ranks.txt"], root, env=PIPE),
        "ranks_pipe": Job(["--load", "ddp.rank*.json"], root, env=PIPE),
    }
    runs = {
        "pipe": Job(["-o", "run.json", "prog.py"], root, env=PIPE),
        "report_file": Job(["--report-file", "report.txt", "prog.py"], root, env=PIPE),
        "report_dir": Job(["--report-file", "adir", "prog.py"], root),
        "report_is_o": Job(["-o", "same.json", "--report-file", "same.json", "prog.py"], root),
        "no_report": Job(["--no-report", "-o", "x.json", "--report-file", "r2.txt", "prog.py"], root),
    }
    return {"root": root, "results": run_many({**loads, **runs})}


def test_a_piped_report_is_as_wide_as_its_content(env: dict) -> None:
    r: Result = env["results"]["pipe"]
    assert r.rc == 0, r.err
    assert LONG in r.out  # the whole source line, not cut at 80 columns
    widths = _widths(r.out)
    assert max(widths) > 120 and "…" not in r.out
    assert not _trailing(r.out)
    assert not ANSI.search(r.out)  # a pipe gets no colour


def test_force_color_colours_a_pipe_and_no_color_wins(env: dict) -> None:
    forced: Result = env["results"]["force_color"]
    assert forced.rc == 0 and COLOUR.search(forced.out), forced.out[:300]
    assert not _trailing(ANSI.sub("", forced.out))
    plain: Result = env["results"]["no_color"]
    assert plain.rc == 0 and not COLOUR.search(plain.out)


def test_width_option_prints_the_golden_layout(env: dict) -> None:
    r: Result = env["results"]["width100"]
    assert r.rc == 0, r.err
    console = Console(width=100, color_system=None, force_terminal=False, record=True, file=io.StringIO())
    console.print(render(Session.from_dict(S.gpt_eager())))
    expected = "".join(line.rstrip() + "\n" for line in console.export_text().splitlines())
    assert r.out == expected
    assert max(_widths(r.out)) == 100


def test_columns_sets_the_width(env: dict) -> None:
    r: Result = env["results"]["columns"]
    assert r.rc == 0 and max(_widths(r.out)) == 90


def test_a_bad_width_is_one_line(env: dict) -> None:
    r: Result = env["results"]["bad_width"]
    assert r.rc == 2 and r.err.strip() == "dlpt: error: argument --width: must be 40 to 1000 columns, got 12"


def test_report_file_holds_the_report_and_stdout_the_program(env: dict) -> None:
    root: Path = env["root"]
    r: Result = env["results"]["report_file"]
    assert r.rc == 0, r.err
    assert r.out == "program output\n"
    assert "dlpt: wrote the text report to report.txt" in r.err
    text = (root / "report.txt").read_text(encoding="utf-8")
    assert text.startswith("╭") and LONG in text and "Top-down" in text
    assert not ANSI.search(text) and not _trailing(text)


def test_report_file_is_checked_before_the_program_runs(env: dict) -> None:
    for name, why in (
        ("report_dir", "--report-file adir: is a directory; dlpt writes text reports to regular files only"),
        ("report_is_o", "--report-file same.json: the same file as -o"),
        ("no_report", "--no-report prints no report: --report-file would stay empty"),
    ):
        r: Result = env["results"][name]
        assert r.rc == 2 and "program output" not in r.out, (name, r.out)
        assert r.err.strip() == f"dlpt: error: {why}", name
    assert not (env["root"] / "same.json").exists()


def test_diff_header_is_whole_on_a_pipe(env: dict) -> None:
    r: Result = env["results"]["diff"]
    assert r.rc == 0, r.err
    whole = re.compile(r"  lines matched by .*values per step \(A /\d+, B /\d+\)")
    assert any(whole.fullmatch(line) for line in r.out.splitlines())
    assert "line (its own cost; lines it calls count at their own rows)" in r.out
    assert not _trailing(r.out) and not ANSI.search(r.out)


def test_diff_report_file(env: dict) -> None:
    root: Path = env["root"]
    r: Result = env["results"]["diff_file"]
    assert r.rc == 0 and r.out == "" and "wrote the text report to diff.txt" in r.err
    text = (root / "diff.txt").read_text(encoding="utf-8")
    assert text.startswith("dlpt diff") and not _trailing(text)
    same: Result = env["results"]["diff_same"]
    assert same.rc == 2 and "the same file as B.json" in same.err
    assert Session.load(root / "compiled.json").meta  # untouched


def test_the_report_across_ranks_follows_the_same_rules(env: dict) -> None:
    root: Path = env["root"]
    r: Result = env["results"]["ranks_file"]
    assert r.rc == 0 and r.out == "", r.err
    text = (root / "ranks.txt").read_text(encoding="utf-8")
    assert "4 of 4 ranks" in text and not _trailing(text) and not ANSI.search(text)
    piped: Result = env["results"]["ranks_pipe"]
    assert piped.rc == 0 and piped.out == text  # the same width rule for a pipe and a file


# A session too large to render (the limit lowered by the program itself, which shares dlpt's
# process: real ones are millions of nodes): nothing is rendered, so the report file stays.
UNRENDERABLE = """\
import torch
import dlpt.model.render_limit as limit
limit.MAX_RENDER_NODES = 1
x = torch.ones(4) + 1
"""


def test_a_report_not_rendered_leaves_the_report_file(tmp_path: Path) -> None:
    write(tmp_path / "quick.py", "import torch\nx = torch.ones(4) + 1\n")
    write(tmp_path / "unrenderable.py", UNRENDERABLE)
    first = run_many({"x": Job(["--report-file", "r.txt", "quick.py"], tmp_path)})["x"]
    assert first.rc == 0 and "wrote the text report to r.txt" in first.err, first.err
    before = (tmp_path / "r.txt").read_text()
    assert "Top-down" in before
    r = run_many({"x": Job(["--report-file", "r.txt", "-o", "s.json", "unrenderable.py"], tmp_path)})["x"]
    assert r.rc == 0, r.err
    assert "dlpt: not printing the report: " in r.err and "wrote the text report" not in r.err, r.err
    assert (tmp_path / "r.txt").read_text() == before
    assert not list(tmp_path.glob(".r.txt.*")), "no temporary file left"
