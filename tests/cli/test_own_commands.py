"""dlpt's own commands and its own set-up end as a command should: ``--load``, ``dlpt diff``
and ``dlpt query`` fail with status 2 when stdout cannot take the report (a full disk; a reader
that left is its own choice), end by SIGINT without a traceback on Ctrl-C; a bad value of an
environment switch (DLPT_FLOOR, DLPT_SUSPEND) is one line and status 2 before the program runs."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from dlpt.cli.main import main
from dlpt.model.session import Session
from tests import sessions as S

from .helpers import Job, Result, env, run_many, write

PROGRAM = "import torch\nx = torch.ones(4) + 1\nprint('program ran', flush=True)\n"


def _sh(cmd: str, cwd: Path) -> Result:
    p = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env(), capture_output=True, text=True, timeout=180)
    return Result(p.returncode, p.stdout, p.stderr)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("own_commands")
    Session.from_dict(S.gpt_eager()).save(root / "a.json")
    Session.from_dict(S.gpt_eager()).save(root / "b.json")
    write(root / "prog.py", PROGRAM)
    return root


@pytest.mark.parametrize(
    ("command", "status", "says"),
    [
        ("--load a.json > /dev/full", 2, "the report: No space left on device"),
        ("diff a.json b.json > /dev/full", 2, "the comparison: No space left on device"),
        ("query a.json --json > /dev/full", 2, "the answer: No space left on device"),
        ("--load a.json | head -c0; exit ${PIPESTATUS[0]}", 0, "the report: stdout is closed (broken pipe)"),
    ],
)
def test_a_report_stdout_cannot_take_is_a_failure(root: Path, command: str, status: int, says: str) -> None:
    r = _sh(f"{sys.executable} -m dlpt {command}", root)
    assert r.rc == status and r.err.strip() == f"dlpt: could not print {says}", (r.rc, r.err)


@pytest.mark.parametrize("argv", [["--load", "a.json"], ["diff", "a.json", "b.json"], ["query", "a.json"]])
def test_ctrl_c_ends_a_command_by_sigint_without_a_traceback(
    root: Path, argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*_args: object, **_kw: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.chdir(root)
    monkeypatch.setattr(Session, "load", interrupted)
    assert main(argv) == 128 + signal.SIGINT
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("variable", "says"),
    [
        ("DLPT_FLOOR=bogus", "DLPT_FLOOR must be op_callback or cupti, not 'bogus'"),
        ("DLPT_SUSPEND=later", "DLPT_SUSPEND must be disable or detach, not 'later'"),
    ],
)
def test_a_bad_environment_switch_is_one_line(root: Path, variable: str, says: str) -> None:
    name, value = variable.split("=")
    (r,) = run_many({"x": Job(["-o", "x.json", "prog.py"], root, env={name: value})}).values()
    assert r.rc == 2 and r.err.strip() == f"dlpt: error: {says}", (r.rc, r.err)
    assert "program ran" not in r.out
