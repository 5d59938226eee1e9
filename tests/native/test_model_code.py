"""Model code in an installed package is shown (real capture on the CPU): a tiny fake package
under a temporary ``site-packages`` plays transformers, with a module whose forward does the work
and a decoding loop outside any module. The report keeps the module's lines and folds the loop's,
as it folds torch's."""

from __future__ import annotations

import importlib
import io
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from rich.console import Console

import dlpt
import dlpt.capture.source_text as sources_module
from dlpt.capture.source_text import CONTEXT
from dlpt.model.metrics import METRICS
from dlpt.model.source_files import file_kind
from dlpt.model.tree import walk
from dlpt.renderers.html import render_html
from dlpt.renderers.terminal.report import render
from dlpt.trees.folding import FoldedTable

MODELING = """\
import torch

class TinyLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 16)

    def forward(self, x):
        h = self.proj(x)  # @proj
        return torch.tanh(h)  # @act
"""

GENERATION = """\
import torch

def generate(model, x, steps):
    for _ in range(steps):
        x = model(x)  # the model call
        x = torch.softmax(x, -1)  # the loop's own op
    return x
"""


@pytest.fixture
def fakepkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    pkg = site / "fakelm"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "modeling.py").write_text(MODELING)
    (pkg / "generation.py").write_text(GENERATION)
    monkeypatch.syspath_prepend(str(site))
    for name in ("fakelm", "fakelm.modeling", "fakelm.generation"):
        sys.modules.pop(name, None)
    modeling = importlib.import_module("fakelm.modeling")
    generation = importlib.import_module("fakelm.generation")
    yield modeling, generation
    for name in ("fakelm", "fakelm.modeling", "fakelm.generation"):
        sys.modules.pop(name, None)


def test_package_model_lines_are_shown_and_its_loop_folds(fakepkg):
    modeling, generation = fakepkg
    model = modeling.TinyLM()
    with torch.no_grad(), dlpt.profile(gpu=False, step_on="fakelm.generation:generate") as prof:
        for _ in range(3):
            generation.generate(model, torch.ones(4, 16), 2)
    session = prof.session
    assert session.meta["steps"]["seen"] == 3
    tree = FoldedTable(session, show_all=False).tree(METRICS["cpu"], None)
    frames = {(Path(n.file).name, n.name) for n, _ in walk(tree) if n.kind == "frame"}
    assert ("modeling.py", "TinyLM.forward") in frames
    assert not any(file == "generation.py" for file, _ in frames)  # the loop folds away
    fwd = next(n for n, _ in walk(tree) if n.name == "TinyLM.forward" and n.line == _line(modeling, "proj"))
    assert [c.name for c in fwd.children] == ["aten::linear"]  # torch's Linear.forward folded
    # The loop's own op sits directly under this test's line, beside the model's lines.
    softmax = next(n for n, _ in walk(tree) if n.kind == "op" and n.name == "aten::softmax")
    assert softmax.parent is not None and Path(softmax.parent.file).name == "test_model_code.py"
    # Installed model code keeps its source text, bounded to its lines in the table and a few
    # around them (issue 33): the report shows the line beside its number.
    sources = session.meta["sources"]
    kept = sources[modeling.__file__]
    proj = _line(modeling, "proj")
    assert kept[str(proj)].strip() == "h = self.proj(x)  # @proj"
    assert set(map(int, kept)) <= set(range(proj - CONTEXT, _line(modeling, "act") + CONTEXT + 1))
    assert "modeling.py:9 TinyLM.forward  h = self.proj(x)" in _report(session)
    assert "h = self.proj(x)  # @proj" in render_html(session)  # the page's source view
    # torch's own lines too (--show-all shows them), and never dlpt's.
    linear = next(f for f in sources if f.replace("\\", "/").endswith("torch/nn/modules/linear.py"))
    assert any("F.linear" in text for text in sources[linear].values())
    assert not any("/dlpt/" in f.replace("\\", "/") for f in sources)
    show_all = FoldedTable(session, show_all=True).tree(METRICS["cpu"], None)
    assert any(Path(n.file).name == "generation.py" for n, _ in walk(show_all))


def test_library_source_text_is_bounded(fakepkg, monkeypatch: pytest.MonkeyPatch):
    """Past LIBRARY_BYTES no more library file is kept; the user's files always are."""
    modeling, generation = fakepkg
    model = modeling.TinyLM()
    monkeypatch.setattr(sources_module, "LIBRARY_BYTES", 1)
    with torch.no_grad(), dlpt.profile(gpu=False, step_on="fakelm.generation:generate") as prof:
        for _ in range(3):
            generation.generate(model, torch.ones(4, 16), 2)
    kept = prof.session.meta["sources"]
    assert __file__ in kept and modeling.__file__ not in kept
    assert all(file_kind(f) == "user" for f in kept)


def _report(session) -> str:
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(render(session, metric="cpu", threshold=0.0))
    return out.getvalue()


def _line(module, tag: str) -> int:
    lines = textwrap.dedent(Path(module.__file__).read_text()).splitlines()
    return next(i for i, text in enumerate(lines, 1) if f"# @{tag}" in text)
