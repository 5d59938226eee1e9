"""The three front doors (``dlpt.profile``, the command line, the notebook magic) finish a run
through one path, :mod:`dlpt.finish`: each reaches :func:`dlpt.finish.stop_viewed` exactly once per run
(the session completed: cells named, suggestions), and the command line and the magic run the
whole ending (:meth:`dlpt.frontend.ending.Ending.run`: save, every file, the text report) exactly
once.
A door that finished by hand (stopping the capture itself, writing its own files) would not
reach them and fails here. Real capture on the CPU."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

import dlpt
import dlpt.finish
import dlpt.frontend.ending
from tests.cli.helpers import env


@pytest.fixture
def reached(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often each door reached the finisher's stop and its whole ending."""
    counts = {"stop": 0, "ending": 0}
    real_stop, real_run = dlpt.finish.stop_viewed, dlpt.frontend.ending.Ending.run

    def stop(*args: Any, **kwargs: Any) -> Any:
        counts["stop"] += 1
        return real_stop(*args, **kwargs)

    def run(self: dlpt.frontend.ending.Ending, prof: Any) -> bool:
        counts["ending"] += 1
        return real_run(self, prof)

    monkeypatch.setattr(dlpt.finish, "stop_viewed", stop)
    monkeypatch.setattr(dlpt.frontend.ending.Ending, "run", run)
    return counts


def test_the_api_stops_through_the_finisher(reached: dict[str, int]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with dlpt.profile(gpu=False, calibrate=False) as prof:
            torch.ones(8, 8) @ torch.ones(8, 8)
    assert reached == {"stop": 1, "ending": 0}  # the API's ending is its stop; printing is asked for
    assert isinstance(prof.session.meta["suggestions"], list)

    @dlpt.profile(gpu=False, calibrate=False)
    def work() -> None:
        torch.ones(4).sum()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        work()
    assert reached["stop"] == 2


# Runs the command line in a process of its own (it installs the program as __main__ and signal
# handlers), counting what reached the finisher; the counts come last on stderr.
_CLI = """
import sys, dlpt.finish as F, dlpt.frontend.ending as E
counts = {"stop": 0, "ending": 0}
real_stop, real_run = F.stop_viewed, E.Ending.run
def stop(*a, **k):
    counts["stop"] += 1
    return real_stop(*a, **k)
def run(self, prof):
    counts["ending"] += 1
    return real_run(self, prof)
F.stop_viewed, E.Ending.run = stop, run
from dlpt.cli.main import main
status = main(sys.argv[1:])
import json
print("COUNTS " + json.dumps(counts), file=sys.stderr)
sys.exit(status)
"""


def test_the_command_line_finishes_through_the_one_ending(tmp_path: Path) -> None:
    script = tmp_path / "prog.py"
    script.write_text("import torch\nfor _ in range(3):\n    torch.ones(16, 16) @ torch.ones(16, 16)\n")
    session, folded, report = tmp_path / "s.json", tmp_path / "s.folded", tmp_path / "r.txt"
    args = ["--no-gpu", "-q", "-o", str(session), "--export", "folded", str(folded)]
    r = subprocess.run(
        [sys.executable, "-c", _CLI, *args, "--report-file", str(report), str(script)],
        cwd=tmp_path,
        env=env(),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0, r.stderr
    counts = json.loads(r.stderr.rsplit("COUNTS ", 1)[1])
    assert counts == {"stop": 1, "ending": 1}
    # The ending did it all: the session (with its suggestions), the export, the text report.
    assert "suggestions" in json.loads(session.read_text())["meta"]
    assert folded.read_text().strip() and "Top-down" in report.read_text()


def test_the_notebook_magic_finishes_through_the_one_ending(
    reached: dict[str, int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("IPython", reason="the notebook magic needs IPython")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        assert shell.run_cell("%load_ext dlpt").success
        out = tmp_path / "cell.json"
        folded = tmp_path / "cell.folded"
        cell = f"%%dlpt --no-gpu -o {out} --export folded {folded}\nimport torch\ntorch.ones(8, 8).sum()\n"
        result = shell.run_cell(cell, store_history=True)
        assert result.success, result.error_in_exec
    finally:
        # IPython's history thread outlives the shell: stopped, it does not wait on into the
        # later tests' profiles (its wait is a package's frame: wall time there, by design).
        saver = getattr(shell.history_manager, "save_thread", None)
        if saver is not None:
            saver.stop()
        InteractiveShell.clear_instance()
    assert reached == {"stop": 1, "ending": 1}
    assert "Top-down" in capsys.readouterr().out
    assert "suggestions" in json.loads(out.read_text())["meta"] and folded.read_text().strip()
