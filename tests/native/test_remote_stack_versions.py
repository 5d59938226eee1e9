"""The host sampler's frame reader (csrc/frames/remote_stack.cpp) against real interpreters of every
CPython version dlpt supports that this machine has (3.11, 3.12, 3.13; pyenv or PATH): a small
extension around it is built for each (no torch needed) and reads threads that spin, sit in a
generator, wait on an Event and start and end all the time. The mirrored frame layouts are
otherwise only compile-checked for the versions the extension is not built for."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).parent / "remote_probe"
VERSIONS = ("3.11", "3.12", "3.13")


def interpreter(version: str) -> str | None:
    """A working Python ``version``: this one, a pyenv install, or one on PATH."""
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        return sys.executable
    candidates = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}")))
    candidates += [p for p in [shutil.which(f"python{version}")] if p]
    for path in candidates:
        if subprocess.run([path, "-c", "pass"], capture_output=True).returncode == 0:
            return path
    return None


_CONFIG = "import sysconfig as s; print(s.get_paths()['include']); print(s.get_config_var('EXT_SUFFIX'))"


def line(tag: str) -> int:
    for i, text in enumerate((PROBE / "scenario.py").read_text().splitlines(), 1):
        if f"# @{tag}" in text:
            return i
    raise AssertionError(tag)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_frame_reader_reads_real_threads(version: str, tmp_path: Path) -> None:
    python = interpreter(version)
    if python is None:
        pytest.skip(f"no Python {version} on this machine")
    cfg = subprocess.run(
        [
            python,
            "-c",
            _CONFIG,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    include, suffix = cfg[0], cfg[1]
    if not Path(include, "Python.h").exists():
        pytest.skip(f"Python {version} has no headers at {include}")
    cxx = os.environ.get("CXX", "c++")
    build = subprocess.run(
        [
            cxx,
            "-shared",
            "-fPIC",
            "-O1",
            "-std=c++17",
            f"-I{include}",
            f"-I{REPO / 'csrc'}",
            str(REPO / "csrc/frames/remote_stack.cpp"),
            str(REPO / "csrc/frames/safe_memory.cpp"),
            str(PROBE / "probe.cpp"),
            "-o",
            str(tmp_path / f"_remote_probe{suffix}"),
        ],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    env.pop("PYTHONHOME", None)
    run = subprocess.run(
        [python, str(PROBE / "scenario.py")], capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["version"] == [int(x) for x in version.split(".")]
    threads = out["threads"]

    def below(stack: list[list[object]], fn: str) -> list[list[object]]:
        """The stack from the innermost frame of function ``fn`` outwards."""
        names = [f[1] for f in stack]
        return stack[names.index(fn) :] if fn in names else []

    # Spinning (or inside Event.is_set, threading.py, which it calls): leaf_spin under mid.
    for stack in threads["mid"]["stacks"]:
        if {f[0] for f in stack} == {"threading.py"}:
            continue
        spin = below(stack, "leaf_spin")
        assert spin and spin[0][2] in (line("spin"), line("spin") - 1), stack
        assert spin[1] == ["scenario.py", "mid", line("mid")], stack
        assert stack.index(spin[0]) <= 1 and stack[0][1] in ("leaf_spin", "is_set"), stack
    # In the generator or in the loop that drives it: the generator's frame sits on the consumer.
    gen = [below(s, "numbers")[:2] for s in threads["consume"]["stacks"]]
    assert [["scenario.py", "numbers", line("gen")], ["scenario.py", "consume", line("consume")]] in gen
    # (Before its target runs, a thread is in threading.py's bootstrap only.)
    odd = [
        s
        for s in threads["consume"]["stacks"]
        if not below(s, "consume") and {f[0] for f in s} != {"threading.py"}
    ]
    assert not odd, odd
    assert any(["scenario.py", "blocked", line("wait")] in s for s in threads["blocked"]["stacks"])
    assert not any(threads["blocked"]["gil"])  # waiting on an Event releases the GIL
    assert all(s[0][1] == "main" and s[-1][1] == "<module>" for s in threads["main"]["stacks"])
    assert not any(threads["main"]["gil"])  # the probe released it while reading
    assert any(threads["mid"]["gil"])  # the spinning thread holds it at least sometimes
    # 40 frames of 60 locals (two or more frame-stack chunks): every level read, in order, and a
    # chunk at a time (a read per chunk, not one per frame outside the newest: ~30 here).
    deep = [below(s, "leaf_spin") for s in threads["deep0"]["stacks"]]
    deep = [s for s in deep if s]
    assert deep, threads["deep0"]
    for stack in deep:
        levels = [f[1] for f in stack if str(f[1]).startswith("deep")]
        assert levels == [f"deep{d}" for d in range(40, -1, -1)], stack
    assert max(threads["deep0"]["frame_reads"]) <= 6, threads["deep0"]["frame_reads"]
    # 20 levels entered through a type's __call__ slot (a model's nn.Module levels): from 3.12 on
    # each leaves an entry frame on the C stack, outside every chunk. All 20 read, and the C stack
    # above the first one copied in one read (22 reads a walk before).
    nested = [below(s, "leaf_spin") for s in threads["layers"]["stacks"]]
    nested = [s for s in nested if s]
    assert nested, threads["layers"]
    for stack in nested:
        assert [f[1] for f in stack[1:22]] == ["__call__"] * 20 + ["layers"], stack
        assert all(f[2] == line("layer") for f in stack[1:21]), stack
    assert max(threads["layers"]["frame_reads"]) <= 6, threads["layers"]["frame_reads"]
    assert out["torn"] < 100, out["torn"]  # 1,000 rounds of 5+ threads: a torn read is rare
