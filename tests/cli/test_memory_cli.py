"""``--memory`` through the CLI: a program that dies of a failed allocation keeps its traceback
and exit status, and the report (printed first) leads with the failure and what was live; the
session saved with ``-o`` renders the same with ``--load``; ``--memory`` is a run option."""

from __future__ import annotations

from pathlib import Path

from .helpers import Job, run_many, write

SCRIPT = """\
import torch
held = []
for step in range(3):
    held.append(torch.empty(6 << 20, dtype=torch.uint8))
    if step == 2:
        torch.empty(1 << 50, dtype=torch.uint8)
    torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1).step()
"""


def test_failed_allocation_report_leads_and_the_program_keeps_its_exit(tmp_path: Path) -> None:
    script = write(tmp_path / "oom.py", SCRIPT)
    saved = tmp_path / "run.json"
    res = run_many(
        {
            "dlpt": Job(["--memory", "-o", str(saved), str(script)], tmp_path),
            "plain": Job([str(script)], tmp_path, dlpt=False),
            "load_memory": Job(["--load", str(saved), "--memory"], tmp_path),
        }
    )
    plain, ran = res["plain"], res["dlpt"]
    assert ran.rc == plain.rc == 1
    assert "can't allocate memory" in plain.err and ran.err.endswith(plain.err.splitlines()[-1] + "\n")
    assert 'oom.py", line 6, in <module>' in ran.err
    header = [ln.strip("│ ") for ln in ran.out.splitlines()]
    assert header[3].startswith("out of memory on cpu at oom.py:6 <module>: an allocation of")
    assert header[4].startswith("live at the failure: oom.py:4 <module> 18.0 MiB")
    loaded = run_many({"load": Job(["--load", str(saved)], tmp_path)})["load"]
    assert loaded.rc == 0 and "out of memory on cpu at oom.py:6 <module>" in loaded.out
    assert res["load_memory"].rc == 2 and "--memory applies when running a program" in res["load_memory"].err
