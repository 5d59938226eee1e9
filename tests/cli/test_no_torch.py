"""``dlpt --help``, ``--version`` and a bad option answer without importing torch (1-2 s of a
2-second answer), and without torch a run or a load is one line and status 2, not a traceback
from deep in dlpt (issue 48)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import Job, env, run, write

# What `import torch` does where torch is not installed, for this interpreter only.
NO_TORCH = "import sys\nsys.modules['torch'] = None  # import torch raises ImportError\n"


@pytest.mark.parametrize(
    "argv", [["--help"], ["--version"], ["--no-such-option", "x.py"], ["load", "--help"]]
)
def test_answers_without_importing_torch(argv: list[str]) -> None:
    code = (
        "import sys\n"
        "from dlpt.cli.main import run\n"
        f"status = run({argv!r})\n"
        "print('status', status, 'torch' in sys.modules)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], env=env(), capture_output=True, text=True, timeout=120)
    assert p.stdout.strip().splitlines()[-1] in ("status 0 False", "status 2 False"), p.stdout + p.stderr


def test_without_torch_a_run_is_one_line_and_status_2(tmp_path: Path) -> None:
    write(tmp_path / "shim" / "sitecustomize.py", NO_TORCH)
    write(tmp_path / "prog.py", "open('ran', 'w').write('yes')\n")
    shim = {"PYTHONPATH": f"{tmp_path / 'shim'}:{env()['PYTHONPATH']}"}
    r = run(Job(["prog.py"], tmp_path, env=shim))
    assert r.rc == 2 and r.out == "", (r.rc, r.out, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dlpt: error: torch could not be imported"), r.err
    assert "install it" in lines[0] and not (tmp_path / "ran").exists()
    # A saved session's report needs torch too: the same line.
    write(tmp_path / "s.json", "{}")
    r = run(Job(["load", "s.json"], tmp_path, env=shim))
    assert r.rc == 2 and len(r.err.strip().splitlines()) == 1 and "torch could not be imported" in r.err
    # What needs no torch still works.
    r = run(Job(["--version"], tmp_path, env=shim))
    assert r.rc == 0 and r.out.startswith("dlpt "), r.err
