"""The program's tracebacks are its own: no frame of dlpt's runner before its code, and none of
dlpt's hooks between its frames (dlpt's backward hook inside ``loss.backward()``), as plain
python prints them."""

from __future__ import annotations

import re
from pathlib import Path

from .helpers import REPO, Job, run_many, write

OWN = str(REPO / "dlpt") + "/"  # dlpt's own files (a path elsewhere may contain "dlpt": a venv's)

BAD_BACKWARD = """\
import torch
class Bad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2
    @staticmethod
    def backward(ctx, g):
        raise ValueError("bad backward")
x = torch.ones(3, requires_grad=True)
Bad.apply(x).sum().backward()
"""


def test_a_backward_pass_traceback_is_pythons(tmp_path: Path) -> None:
    write(tmp_path / "bad_backward.py", BAD_BACKWARD)
    got = run_many(
        {
            "python": Job(["bad_backward.py"], tmp_path, dlpt=False),
            "dlpt": Job(["--no-report", "-q", "-o", "b.json", "bad_backward.py"], tmp_path),
        }
    )
    plain, profiled = got["python"], got["dlpt"]
    assert plain.rc == profiled.rc == 1, profiled.err
    frames = re.compile(r'^  File "(.*)", line \d+, in (.*)$', re.M)
    assert frames.findall(profiled.err) == frames.findall(plain.err), profiled.err
    assert not any(f.startswith(OWN) for f, _ in frames.findall(profiled.err)), profiled.err
    assert profiled.err.rstrip().endswith("ValueError: bad backward")


THREADS = """\
import threading, torch
x = torch.ones(2) + 1
print(sorted(t.name for t in threading.enumerate()), threading.active_count())
"""


def test_the_program_sees_only_its_own_threads(tmp_path: Path) -> None:
    """dlpt's signal watchdog is a bare thread: threading.enumerate() is the program's."""
    write(tmp_path / "threads.py", THREADS)
    got = run_many(
        {
            "python": Job(["threads.py"], tmp_path, dlpt=False),
            "dlpt": Job(["--no-report", "-q", "-o", "t.json", "threads.py"], tmp_path),
        }
    )
    assert got["dlpt"].rc == 0, got["dlpt"].err
    assert got["dlpt"].out == got["python"].out == "['MainThread'] 1\n"
