"""``sys.exit(code)`` under dlpt ends the process exactly as under plain python: the code masked
to 0-255 as python's own exit masks it, never a death by a signal (``sys.exit(-1)`` is 255, not
SIGHUP; ``-11`` is 245, not a segmentation fault), and nothing of dlpt's on stderr."""

from __future__ import annotations

import pytest

from dlpt.cli.process_end import program_status

from .helpers import Job, Result, run_many, write

CODES = ["-1", "-3", "-9", "-11", "-15", "-256", "-300", "256", "2**64", "-2**63 - 1", "True"]
PROGRAM = "import sys, torch\nx = torch.ones(2) + 1\nsys.exit({code})\n"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Result]:
    root = tmp_path_factory.mktemp("exit_codes")
    jobs = {}
    for i, code in enumerate(CODES):
        write(root / f"exit{i}.py", PROGRAM.format(code=code))
        jobs[f"{code}/python"] = Job([f"exit{i}.py"], root, dlpt=False)
        jobs[code] = Job(["--no-report", "-o", f"exit{i}.json", f"exit{i}.py"], root)
    return run_many(jobs)


@pytest.mark.parametrize("code", CODES)
def test_exit_status_is_pythons(runs: dict[str, Result], code: str) -> None:
    plain, profiled = runs[f"{code}/python"], runs[code]
    assert plain.rc >= 0 and profiled.rc == plain.rc, (code, profiled.rc, plain.rc, profiled.err)
    assert profiled.err.strip().splitlines() == [f"dlpt: saved profile to exit{CODES.index(code)}.json"]


MASKED = [(-1, 255), (-256, 0), (-300, 212), (256, 0), (2**31, 0), (2**64, 255), (-(2**70), 255)]


@pytest.mark.parametrize(("code", "status"), MASKED)
def test_program_status_is_what_python_exits_with(code: int, status: int) -> None:
    assert program_status(code) == status
