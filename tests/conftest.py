"""The whole suite runs on parallel workers: pyproject.toml's addopts pass pytest-xdist
``-n auto --dist loadfile`` (one worker per core; every test file on one worker, so a file's
module-scoped fixtures, which start their subprocesses together through
tests/cli/helpers.py's run_many, run once). ``-n 0`` runs in this process, as ``--pdb`` does."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest

#: What the terminal's width is read from. GNU readline, once imported (xdist's controller does),
#: sets them in the C environment the workers inherit (80 and 24), where Python's os.environ
#: does not see them: the reports a test prints would be laid out for 80 columns.
TERMINAL_SIZE = ("COLUMNS", "LINES")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """No workers when the GPU tests are selected (``-m gpu``): they time kernels and read
    the GPU's memory, which a second test on the same GPU would disturb. Otherwise, None:
    xdist's own count (the cores this process may run on)."""
    marks = config.getoption("markexpr") or ""
    return 0 if "gpu" in marks and "not gpu" not in marks else None


def pytest_configure_node(node: Any) -> None:
    """In xdist's controller: the terminal size the command was given, for the workers."""
    node.workerinput["terminal_size"] = {k: os.environ.get(k) for k in TERMINAL_SIZE}


def pytest_configure(config: pytest.Config) -> None:
    """In a worker: the environment the command was given, not readline's terminal size; and
    Ctrl-C's default action back where it was ignored. A shell without job control starts a
    command run with ``&`` with SIGINT ignored, and an ignored signal stays ignored across exec
    into every program a test starts: they would not stop on the Ctrl-C the signal tests send.
    (Python's own handler, unlike SIG_IGN, becomes the default action in a child.)"""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    given = getattr(config, "workerinput", {}).get("terminal_size")
    for k, v in (given or {}).items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
