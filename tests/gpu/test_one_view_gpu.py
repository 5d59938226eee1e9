"""One view per run on a real GPU (not run on the CPU machine): a profile with kernels, a
pageable host-to-device copy (the pinned-copy probe at stop), host syncs and a timeline window
is analysed once, folded once and its timeline laid out once for its saved suggestions, its text
report, its HTML report and its exports (dlpt.views.run); the view's GPU tables are those
of the saved session reloaded."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import torch
from rich.console import Console

import dlpt
from dlpt.analysis.inputs import Analysis
from dlpt.analysis.timeline import TimelineView
from dlpt.model.session import Session
from dlpt.renderers.exports import write_export
from dlpt.renderers.html import write_html
from dlpt.renderers.terminal.report import render
from dlpt.trees.folding import FoldedTable

pytestmark = pytest.mark.gpu


def _text(renderable: Any) -> str:
    out = io.StringIO()
    Console(file=out, width=160, color_system=None).print(renderable)
    return out.getvalue()


def _tables(renderable: Any) -> str:
    """The report below its header box (the header may say where the session came from)."""
    lines = _text(renderable).splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith("╰"))
    return "\n".join(lines[end + 1 :])


def test_a_gpu_run_is_analysed_folded_and_laid_out_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    counts = {"analyses": 0, "folds": 0, "timelines": 0}
    for cls, key in ((Analysis, "analyses"), (FoldedTable, "folds"), (TimelineView, "timelines")):
        real = cls.__init__

        def init(self: Any, *args: Any, _real: Any = real, _key: str = key, **kwargs: Any) -> None:
            counts[_key] += 1
            _real(self, *args, **kwargs)

        monkeypatch.setattr(cls, "__init__", init)

    x = torch.randn(512, 512, device="cuda")
    host = torch.randn(1 << 20)  # pageable: its copies make the probe measure a pinned one at stop
    with dlpt.profile(skip_first=2, timeline=2) as prof:
        for _ in range(6):
            y = x @ x
            z = host.to("cuda")
            (y.sum() + z.sum()).item()  # the host waits on the GPU
            prof.step()
    view = prof.view
    assert view is not None and view.session is prof.session
    text = _text(render(view, view="all", threshold=0.0))
    write_html(view, tmp_path / "r.html")
    for fmt in ("speedscope", "folded", "perfetto"):
        write_export(view, fmt, tmp_path / f"out.{fmt}")
    assert counts == {"analyses": 1, "folds": 1, "timelines": 1}, counts

    for table in ("GPU kernels", "GPU copies and memsets", "Host waiting on the GPU"):
        assert table in text, table
    assert isinstance(prof.session.meta.get("suggestions"), list)
    assert json.loads((tmp_path / "out.perfetto").read_text())["traceEvents"]

    # The view's tables are the session's: a saved copy, reloaded and viewed afresh, says the same.
    prof.save(tmp_path / "p.json")
    loaded = Session.load(tmp_path / "p.json")
    assert _tables(render(loaded, view="summary")) == _tables(render(view, view="summary"))
