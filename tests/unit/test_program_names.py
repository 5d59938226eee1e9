"""How reports name the program and its code without a file: ``argv[0]`` relative to the
directory the program ran in, ``python -m dlpt -c CODE``'s ``<string>`` lines kept as the user's
(with their text), notebook cells' text taken from linecache."""

from __future__ import annotations

import linecache

import pytest

import dlpt.cli.launch
from dlpt.capture import source_text as sources
from dlpt.capture.exec_frames import mark_library_exec_frames
from dlpt.model.meta import program_argv


def test_argv0_is_named_relative_to_where_the_program_ran() -> None:
    meta = {"argv": ["/home/u/proj/pkg/run.py", "--lr", "3"], "cwd": "/home/u/proj"}
    assert program_argv(meta) == ["pkg/run.py", "--lr", "3"]
    assert program_argv({"argv": ["/opt/tools/run.py"], "cwd": "/home/u/proj"}) == ["/opt/tools/run.py"]
    assert program_argv({"argv": ["train.py"], "cwd": "/home/u"}) == ["train.py"]
    assert program_argv({"argv": ["/home/u/train.py"]}) == ["/home/u/train.py"]  # an older session
    assert program_argv({"argv": ["-c", "x"], "cwd": "/home/u"}) == ["-c", "x"]
    assert program_argv({"argv": "bad"}) == [] and program_argv({}) == []


def _nodes(caller: str) -> list[dict]:
    return [
        {"id": 0, "parent": -1, "kind": "root", "name": "<root>", "file": "", "line": 0, "m": {}},
        {"id": 1, "parent": 0, "kind": "frame", "name": "run_program", "file": caller, "line": 9, "m": {}},
        {"id": 2, "parent": 1, "kind": "frame", "name": "<module>", "file": "<string>", "line": 4, "m": {}},
    ]


def test_code_dlpt_runs_is_the_users_and_code_a_library_runs_is_not() -> None:
    launcher = dlpt.cli.launch.__file__  # python -m dlpt -c CODE: dlpt's launcher execs the code
    assert "x" not in mark_library_exec_frames(_nodes(launcher))[2]
    site = "/opt/venv/lib/python3.12/site-packages/triton/runtime/jit.py"
    assert mark_library_exec_frames(_nodes(site))[2]["x"] == {"library": True}


def test_remembered_and_linecache_code_keeps_its_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources, "_remembered", {})  # this process's registry, restored after
    sources.remember_source("<string>", "import torch\nx = 1\ny = x @ x\n")
    cell = "<ipython-input-3-0123456789ab>"
    linecache.cache[cell] = (20, None, ["a = 1\n", "b = a + 1\n"], cell)
    try:
        nodes = [
            *_nodes(dlpt.cli.launch.__file__)[:1],
            {
                "id": 1,
                "parent": 0,
                "kind": "frame",
                "name": "<module>",
                "file": "<string>",
                "line": 3,
                "m": {},
            },
            {"id": 2, "parent": 0, "kind": "frame", "name": "<module>", "file": cell, "line": 2, "m": {}},
            {"id": 3, "parent": 0, "kind": "frame", "name": "f", "file": "<unknown>", "line": 1, "m": {}},
        ]
        got = sources.collect_sources(nodes)
    finally:
        del linecache.cache[cell]
    assert got == {
        "<string>": {"1": "import torch", "2": "x = 1", "3": "y = x @ x"},
        cell: {"1": "a = 1", "2": "b = a + 1"},
    }


@pytest.mark.parametrize(
    "path",
    [
        "/opt/venv/lib/python3.12/site-packages/IPython/core/interactiveshell.py",
        "/opt/venv/lib/python3.12/site-packages/ipykernel/ipkernel.py",
        "/opt/venv/lib/python3.12/site-packages/ipykernel_launcher.py",
        "/opt/venv/lib/python3.12/site-packages/tornado/ioloop.py",
        "/opt/venv/bin/ipython",
        "/usr/local/bin/ipython3",
    ],
)
def test_notebook_machinery_folds_like_the_framework(path: str) -> None:
    """Frames above a notebook's cells (IPython, the kernel, their launchers) are never shown as
    the program's: `ipython:8 <module> sys.exit(start_ipython())` was the top row."""
    from dlpt.model.source_files import file_kind

    assert file_kind(path) == "framework"
    assert file_kind("/home/u/proj/ipython_notes.py") == "user"


def test_a_session_recorded_by_a_dlpt_installed_elsewhere_keeps_its_frames_out_of_the_user_lines() -> None:
    """Frames of dlpt's own files, under another checkout's or venv's path (the session was
    recorded there), are dlpt's, not the user's: the report across ranks once named a symmetric
    job's collective hook (dlpt/capture/ranks/pycomm.py) as a rank's own line."""
    from dlpt.model.source_files import file_kind, is_dlpt_file

    elsewhere = "/opt/other-venv/src/dlpt/capture/ranks/pycomm.py"
    assert is_dlpt_file(elsewhere) and file_kind(elsewhere) == "framework"
    assert file_kind("/home/me/proj/dlpt/train.py") == "user"  # a user's own folder named dlpt
