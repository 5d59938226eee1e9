"""``%%dlpt`` on a GPU (in-process IPython shell): the cell's kernels land on the cell's lines,
named ``In [N]``, with GPU capture on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("IPython", reason="the notebook magic's tests need IPython (pip install ipython)")

from IPython.core.interactiveshell import InteractiveShell

pytestmark = pytest.mark.gpu


def test_cell_kernels_land_on_the_cell_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shell = InteractiveShell.instance()
    try:
        assert shell.run_cell("%load_ext dlpt", store_history=True).success
        setup = "import torch\nx = torch.randn(1024, 1024, device='cuda')\ntorch.cuda.synchronize()"
        assert shell.run_cell(setup, store_history=True).success
        n = shell.execution_count
        out = tmp_path / "gpu.json"
        cell = f"%%dlpt --threshold 0 -o {out}\nfor _ in range(3):\n    y = x @ x\ntorch.cuda.synchronize()\n"
        result = shell.run_cell(cell, store_history=True)
        assert result.success, result.error_in_exec
        printed = capsys.readouterr().out
    finally:
        InteractiveShell.clear_instance()
    session = json.loads(out.read_text())
    assert session["meta"]["gpu"]["enabled"] is True
    nodes = session["nodes"]
    by_id = {node["id"]: node for node in nodes}

    def line_of(node: dict) -> tuple[str, int] | None:
        while node["parent"] >= 0:
            node = by_id[node["parent"]]
            if node["kind"] == "frame" and not (node.get("x") or {}).get("library"):
                return node["file"], node["line"]
        return None

    kernels = [node for node in nodes if node["kind"] == "kernel"]
    assert kernels and all(line_of(k) is not None for k in kernels)
    gemm_ns = sum(k["m"].get("gpu_ns", 0) for k in kernels if line_of(k) == (f"In [{n}]", 3))
    assert gemm_ns > 0, {line_of(k) for k in kernels}
    assert f"In [{n}]:3 <module>  y = x @ x" in printed


def test_the_magic_takes_the_capture_options_to_the_gpu(tmp_path: Path) -> None:
    """``--pc-sampling`` and ``--memory`` reach the cell's profile (the magic once parsed
    --pc-sampling and dropped it): PC samples and GPU memory are in the saved session."""
    shell = InteractiveShell.instance()
    try:
        assert shell.run_cell("%load_ext dlpt", store_history=True).success
        setup = "import torch\nx = torch.randn(2048, 2048, device='cuda')\ntorch.cuda.synchronize()"
        assert shell.run_cell(setup, store_history=True).success
        out = tmp_path / "opts.json"
        options = "--step-on step --skip-first 2 --calibrate off --pc-sampling --pc-sampling-steps 1 --memory"
        body = "def step():\n    return (x @ x).relu_()\nfor _ in range(8):\n    step()\n"
        cell = f"%%dlpt --no-report {options} -o {out}\n{body}"
        result = shell.run_cell(cell, store_history=True)
        assert result.success, result.error_in_exec
    finally:
        InteractiveShell.clear_instance()
    meta = json.loads(out.read_text())["meta"]
    pcs = meta.get("pc_sampling")
    assert pcs is not None and not pcs.get("reason"), pcs
    assert pcs["steps"] == 1 and pcs.get("total_samples", 0) > 0, pcs
    assert meta["memory"]["enabled"] is True and any(d.startswith("cuda") for d in meta["memory"]["devices"])
