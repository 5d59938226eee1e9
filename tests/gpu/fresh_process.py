"""Run a scenario module in a fresh Python process and read its last stdout line as JSON.

CUPTI has one subscriber per process and keeps state across uses, so scenarios that compare
tools or test who holds CUPTI each get a process of their own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_json(module: str, arg: str, timeout: int = 300) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", module, arg], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])
