"""dlpt.views.run: a session is folded and analysed once for every output of a run, and the
outputs of one view are those of the session rendered on its own."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dlpt.analysis.inputs import Analysis
from dlpt.model.session import Session
from dlpt.model.tree import Node, walk
from dlpt.renderers.exports import folded, speedscope
from dlpt.renderers.html.data import build_model
from dlpt.renderers.terminal.report import render
from dlpt.trees.folding import FoldedTable
from dlpt.trees.spread import SpreadTable
from dlpt.views.run import ViewOptions, build_view, view_of
from tests import sessions as S


def _full() -> Session:
    """gpt_eager with work outside counted steps (``o``) and per-step second moments (``q``):
    every part of a view has something to show."""
    d = S.gpt_eager()
    steps = d["meta"]["steps"]["profiled"]
    for n in d["nodes"]:
        m = n["m"]
        if n["kind"] == "kernel" and m.get("gpu_ns"):
            n["q"] = {"gpu_ns": 1.2 * m["gpu_ns"] ** 2 / steps}
        if n["kind"] in ("op", "kernel") and m:
            n["o"] = {k: v // 3 for k, v in m.items() if k in ("cpu_ns", "gpu_ns", "calls", "kernels")}
    return Session.from_dict(d)


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many analyses (what ``analyze()`` makes) and folds of a node table were made."""
    seen = {"analyses": 0, "folds": 0}
    for cls, key in ((Analysis, "analyses"), (FoldedTable, "folds")):
        real = cls.__init__

        def init(self: Any, *args: Any, _real: Any = real, _key: str = key, **kwargs: Any) -> None:
            seen[_key] += 1
            _real(self, *args, **kwargs)

        monkeypatch.setattr(cls, "__init__", init)
    return seen


def _shape(root: Node) -> list[tuple[int, str, str, str, int, dict[str, int]]]:
    return [(d, n.kind, n.name, n.file, n.line, dict(n.inclusive)) for n, d in walk(root)]


def test_every_output_of_one_view_folds_and_analyses_once(h: Any, counts: dict[str, int]) -> None:
    sv = build_view(_full())
    texts = [h.render_text(render(sv, view=v, threshold=0.0)) for v in ("all", "tree", "summary", "flat")]
    texts.append(h.render_text(render(sv, ascii=True)))
    model = build_model(sv)
    speedscope(sv)
    folded(sv)
    assert counts == {"analyses": 1, "folds": 1}
    # What the view was built for is there: the work outside steps and the per-step spreads.
    assert "Outside steps" in texts[1] and sv.outside is not None
    assert sv.line_halves and len(model["flat"]["line"][0]) == 4


def test_a_view_renders_what_the_session_alone_renders(h: Any) -> None:
    session = _full()
    sv = build_view(session)
    for view in ("all", "tree", "suggestions"):
        assert h.render_text(render(sv, view=view)) == h.render_text(render(session, view=view))
    assert json.dumps(build_model(sv)) == json.dumps(build_model(session))
    assert folded(sv, metric="cpu") == folded(session, metric="cpu")
    assert speedscope(sv) == speedscope(session)


def test_the_outside_tree_and_the_spreads_reuse_the_one_folding() -> None:
    session = _full()
    sv = build_view(session)
    outside = sv.outside
    assert outside is not None
    assert _shape(outside) == _shape(FoldedTable(session, False, field="o").tree())
    shared = SpreadTable.sharing(sv.folded, session.meta["steps"]["profiled"])
    assert _shape(shared.tree()) == _shape(SpreadTable(session).tree())
    # The per-step tree is not changed by the other fields' trees built from its folding.
    assert _shape(sv.folded.tree()) == _shape(FoldedTable(session, False).tree())


def test_a_view_is_reused_only_with_its_own_options() -> None:
    session = _full()
    sv = build_view(session, ViewOptions(show_all=False, peak_tflops=100.0))
    assert view_of(sv) is sv and view_of(sv, show_all=False, peak_tflops=100.0) is sv
    other = view_of(sv, show_all=True)
    assert other is not sv and other.options == ViewOptions(True, 100.0) and other.session is session
    assert view_of(session).options == ViewOptions()


def test_a_report_is_worded_once_per_wording(counts: dict[str, int]) -> None:
    sv = build_view(_full())
    assert sv.report() is sv.report() and sv.report(ascii=True) is not sv.report()
    assert sv.report(ascii=True).analysis is sv.report().analysis is sv.analysis
    assert sv.report(suggestions=False).suggestions == ()
    assert counts["analyses"] == 1
