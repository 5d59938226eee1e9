"""A run's options, typed and frozen (dlpt.frontend.options): what the command line and the
notebook magic parse is one RunOptions (the load command's a LoadOptions), each part holding what
capture, the view, the report and the outputs need; the same words make the same options in
both front ends."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from dlpt.capture.host import DEFAULT_SAMPLE_HZ
from dlpt.capture.options import CaptureOptions
from dlpt.capture.pc_sampling import DEFAULT_STEPS as PC_DEFAULT_STEPS
from dlpt.cli.main import main
from dlpt.cli.options import parse_command_line, parse_load
from dlpt.errors import UsageError
from dlpt.frontend.options import LoadOptions, ReportOptions, RunOptions
from dlpt.notebook.options import parse_cell, parse_line
from dlpt.views.run import ViewOptions


@pytest.fixture(autouse=True)
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # output paths are checked writable: a fresh folder


def test_a_run_is_typed_throughout() -> None:
    capture = ["--flops", "--timeline", "2", "--pc-sampling"]
    report = ["--metric", "cpu", "--threshold", "5", "--show-all", "--peak-tflops", "100"]
    opts = parse_command_line(
        [*capture, *report, "-o", "s.json", "--html", "r.html", "train.py", "--lr", "1"]
    )
    assert isinstance(opts, RunOptions)
    assert opts.program == ("train.py", "--lr", "1")
    assert opts.capture == CaptureOptions(
        flops=True, timeline=2, pc_sampling=PC_DEFAULT_STEPS, joinable=True, sample_hz=DEFAULT_SAMPLE_HZ
    )
    assert opts.view == ViewOptions(show_all=True, peak_tflops=100.0)
    assert (opts.report.metric, opts.report.threshold, opts.report.shown) == ("cpu", 0.05, True)
    assert opts.outputs.session == "s.json" and opts.outputs.session_abspath == os.path.abspath("s.json")
    assert [o.kind for o in opts.outputs.files] == ["html"] and opts.outputs.html
    assert opts.outputs.protected_paths == {os.path.realpath("train.py"): "the profiled script"}
    assert opts.steps == [
        "stopping the profile",
        "the session (s.json)",
        "the HTML report (r.html)",
        "the report",
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.quiet = True  # type: ignore[misc]  # frozen: what was asked for cannot change midway


def test_load_is_a_command_of_its_own() -> None:
    Path("a.json").write_text("{}")
    opts = parse_command_line(["--load", "a.json", "--view", "flat", "--no-report", "--html", "p.html"])
    assert isinstance(opts, LoadOptions) and opts.sessions == ("a.json",)
    assert opts.report == ReportOptions(view="flat", shown=False, target=opts.report.target)
    assert parse_load(["a.json", "--view", "flat", "--no-report", "--html", "p.html"]) == opts
    with pytest.raises(UsageError, match="--flops applies when running a program, not with --load"):
        parse_load(["a.json", "--flops"])
    assert main(["run", "--load", "a.json"]) == 2  # the run command runs a program


def test_the_magic_and_the_command_line_make_the_same_options() -> None:
    words = ["--flops", "--memory", "--sample-hz", "50", "--view", "summary", "--depth", "3", "--ascii"]
    cli = parse_command_line([*words, "x.py"])
    line, _, statement = parse_line(" ".join(words) + " y = f(x)")
    cell, _ = parse_cell(" ".join(words))
    assert isinstance(cli, RunOptions) and statement == "y = f(x)"
    # The cell counts from its first step (--skip-first 0) and joins nothing; the rest is the same.
    assert line.capture == dataclasses.replace(cli.capture, joinable=False, skip_first=0) == cell.capture
    assert line.view == cli.view == cell.view and line.report == cli.report == cell.report
    assert not line.inline_html and parse_cell("--inline-html")[0].inline_html
