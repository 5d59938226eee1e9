"""``%%dlpt`` in a real Jupyter kernel (ipykernel, driven by nbclient as a notebook is run): the
report comes back as rich output (HTML and text), names the cells ``In [N]`` although the kernel
compiles them under made-up temporary files, and ``--inline-html`` sends the HTML report."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

for _module in ("nbclient", "nbformat", "ipykernel"):
    pytest.importorskip(_module, reason=f"the kernel test needs {_module} (pip install nbclient ipykernel)")

import nbclient  # noqa: E402
import nbformat  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
CELLS = [
    "%load_ext dlpt",
    "import torch\nx = torch.ones(64, 64)\ndef f(n):\n    for _ in range(n):\n        y = x @ x\n"
    "    return y",
    "%%dlpt --threshold 0 --inline-html -o run.json\nz = f(3)\nw = torch.relu(z)",
]


@pytest.fixture(scope="module")
def notebook(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    root = tmp_path_factory.mktemp("kernel")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "OMP_NUM_THREADS")}
    # The kernel is a new process: it imports this checkout's dlpt.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), saved["PYTHONPATH"]) if p)
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        client = nbclient.NotebookClient(nb, timeout=300, resources={"metadata": {"path": str(root)}})
        try:
            client.execute()
        except Exception as e:
            if "kernel" in type(e).__name__.lower() or "NoSuchKernel" in repr(e):
                pytest.skip(f"no Jupyter kernel starts here: {e}")
            raise
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb, root


def test_report_is_rich_output_with_cells_named(notebook: tuple[Any, Path]) -> None:
    nb, root = notebook
    outputs = nb.cells[2].outputs
    assert not [o for o in outputs if o["output_type"] == "error"], outputs
    shown = [
        o for o in outputs if o["output_type"] == "display_data" and "<pre" in o["data"].get("text/html", "")
    ]
    assert len(shown) == 1, [o["output_type"] for o in outputs]
    text = shown[0]["data"]["text/plain"]
    assert "\x1b[" not in text, "plain text without the terminal's colour codes (issue 33)"
    assert "Top-down" in text and "In [3]:2" in text and "z = f(3)" in text and "In [2]:5" in text
    assert "ipykernel" not in text and "/tmp/" not in text  # the kernel's made-up cell files
    session = json.loads((root / "run.json").read_text())
    assert session["meta"]["sources"]["In [3]"]["2"] == "z = f(3)"
    assert session["meta"]["sources"]["In [2]"]["5"] == "        y = x @ x"


def test_inline_html_reaches_the_notebook(notebook: tuple[Any, Path]) -> None:
    nb, _ = notebook
    pages = [
        o["data"]["text/html"]
        for o in nb.cells[2].outputs
        if o["output_type"] == "display_data" and "dlpt-report" in o["data"].get("text/html", "")
    ]
    assert len(pages) == 1 and 'srcdoc="&lt;!DOCTYPE html&gt;' in pages[0]
    errors = "".join(
        o["text"] for o in nb.cells[2].outputs if o["output_type"] == "stream" and o["name"] == "stderr"
    )
    assert errors == "dlpt: saved profile to run.json\n"  # and no warning (IPython's about iframes)
