"""The README's main job: profiling the bundled example puts the matmul's time on the example's
matmul line, with its backward under that same line, and the saved profile re-renders."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from dlpt.model.session import Session
from tests.query import Q

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "mlp_train.py")
# The checkout's dlpt, not whatever `pip install -e` last pointed at (the subprocess runs from a
# temporary directory, so nothing else puts this checkout on its path). One intra-op thread: on a
# busy 2-core machine every op otherwise waits ~20 ms for the pool's second thread, and those
# waits, not the matmul, decide which line is biggest (measured: 138 ms vs 4 ms per step).
ENV = dict(
    os.environ,
    OMP_NUM_THREADS="1",
    PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])),
)


def test_example_matmul_line_holds_forward_and_backward(tmp_path):
    out = tmp_path / "p.json"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "dlpt",
            "--skip-first",
            "2",
            "-o",
            str(out),
            EXAMPLE,
            "--steps",
            "6",
            "--device",
            "cpu",
        ],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "mlp_train.py" in run.stdout and "aten::matmul" in run.stdout
    session = Session.load(out)
    assert session.meta["steps"]["profiled"] == 4
    line = next(
        i for i, text in enumerate(Path(EXAMPLE).read_text().splitlines(), 1) if "h = x @ self.w1" in text
    )
    q = Q(session)
    under = q.under_line(os.path.abspath(EXAMPLE), line)
    ops = {(n["name"], q.phase_of(n["id"])) for n in under if n["kind"] == "op"}
    assert ("aten::matmul", None) in ops  # the outermost op; nested ops only with --nested-ops
    assert ("MmBackward0", "<backward>") in ops
    assert q.total("cpu_ns", under) > 0  # (its share depends on the machine's load: not asserted)

    again = subprocess.run(
        [sys.executable, "-m", "dlpt", "--load", str(out), "--view", "flat"],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    assert f"mlp_train.py:{line}" in again.stdout
