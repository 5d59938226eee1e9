"""A second build of an unchanged checkout compiles nothing: setup.py keeps one CMake build
directory per environment and torch version (build/cmake-...), whatever temporary build_temp
setuptools hands it. Before, every `pip install -e .` (the README's install and test commands)
got a fresh temporary directory and compiled the whole extension again.

Runs where this checkout was built by setup.py in this environment (CI: the README's test
command builds it first); skipped elsewhere (a copied extension has no build to reuse)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _build_dir() -> Path:
    """setup.py's own answer, from its definitions without its final setup() call."""
    source = (ROOT / "setup.py").read_text().rsplit("\nsetup(", 1)[0]
    namespace: dict[str, object] = {"__file__": str(ROOT / "setup.py"), "__name__": "dlpt_setup_probe"}
    exec(compile(source, str(ROOT / "setup.py"), "exec"), namespace)
    return Path(namespace["cmake_build_dir"]())  # type: ignore[operator]


def test_a_second_build_with_a_new_build_temp_compiles_nothing(tmp_path: Path) -> None:
    build_dir = _build_dir()
    if not (build_dir / "CMakeCache.txt").exists():
        pytest.skip(f"no setup.py build of this checkout in this environment ({build_dir})")
    done = subprocess.run(
        [
            sys.executable,
            "setup.py",
            "build_ext",
            "--build-temp",
            str(tmp_path / "temp"),  # new, as pip's editable builds get
            "--build-lib",
            str(tmp_path / "lib"),  # not in place: the checkout's extension stays untouched
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert str(build_dir) in done.stdout
    compiled = [line for line in done.stdout.splitlines() if "Building CXX object" in line]
    assert compiled == [], f"an unchanged checkout compiled again: {compiled[:3]}"
    assert list((tmp_path / "lib" / "dlpt").glob("_C*.so")), "the built extension was not copied"
