"""The dlpt logger: silent by default, DLPT_LOG=debug shows what dlpt caught on stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# A swallowed failure of the compile integration, as the profiler records one.
RECORD = """
from dlpt.capture.compile import failures
try:
    raise RuntimeError("Inductor moved")
except RuntimeError as e:
    failures.record("line_map", e)
"""


def run(dlpt_log: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "DLPT_LOG"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    if dlpt_log is not None:
        env["DLPT_LOG"] = dlpt_log
    return subprocess.run([sys.executable, "-c", RECORD], env=env, capture_output=True, text=True, timeout=60)


def test_silent_by_default() -> None:
    r = run(None)
    assert r.returncode == 0 and r.stderr == ""


def test_dlpt_log_debug_shows_the_failure_and_its_traceback() -> None:
    r = run("debug")
    assert r.returncode == 0
    assert (
        "dlpt DEBUG dlpt.capture.compile.failures: torch.compile integration: line_map failed: " in r.stderr
    )
    assert "Traceback (most recent call last)" in r.stderr and "RuntimeError: Inductor moved" in r.stderr


def test_a_level_above_debug_hides_debug_records() -> None:
    r = run("warning")
    assert r.returncode == 0 and r.stderr == ""


def test_an_unknown_level_is_said_once_and_ignored() -> None:
    r = run("loud")
    assert r.returncode == 0
    assert "DLPT_LOG='loud' is not a log level" in r.stderr
    assert "line_map" not in r.stderr
