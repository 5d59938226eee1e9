"""``--exact-ops`` through the CLI (issue 50): the profile walks at every op start whatever
``DLPT_OPS`` says, the session says so (meta.capture.op_mode), and the verbose header names the
mode; without the flag ``DLPT_OPS=lean`` runs the lean mode on the CPU; it is a run option."""

from __future__ import annotations

import json
from pathlib import Path

from .helpers import Job, run_many, write

SCRIPT = """\
import torch
x = torch.ones(8)
for _ in range(50):
    x = x.view(2, 4).view(8) + 1
"""


def test_exact_ops_wins_over_the_environment_and_the_report_names_the_mode(tmp_path: Path) -> None:
    script = write(tmp_path / "ops.py", SCRIPT)
    exact, lean = tmp_path / "exact.json", tmp_path / "lean.json"
    lean_env: dict[str, str | None] = {"DLPT_OPS": "lean"}
    res = run_many(
        {
            "exact": Job(["--exact-ops", "--verbose", "-o", str(exact), str(script)], tmp_path, env=lean_env),
            "lean": Job(["--verbose", "-o", str(lean), str(script)], tmp_path, env=lean_env),
            "load": Job(["--load", str(exact), "--exact-ops"], tmp_path),
        }
    )
    assert res["exact"].rc == 0 and res["lean"].rc == 0, (res["exact"].err, res["lean"].err)
    e = json.loads(exact.read_text())["meta"]["capture"]
    c = json.loads(lean.read_text())["meta"]["capture"]
    assert e["op_mode"] == "exact" and e["python_walks"] >= 150 and e["deferred_ops"] == 0
    assert c["op_mode"] == "lean" and c["python_walks"] == 0 and c["deferred_ops"] >= 150
    assert "ops: exact - every op's CPU time and calls on its line" in res["exact"].out
    assert "ops: lean - kernels, copies, memsets and syncs on their exact lines" in res["lean"].out
    assert res["load"].rc == 2 and "--exact-ops applies when running a program" in res["load"].err
