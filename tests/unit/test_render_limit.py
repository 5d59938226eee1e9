"""Memory for the largest accepted session is bounded: the HTML report, the tree's exports and
``dlpt diff`` are made of at most MAX_RENDER_NODES nodes (~1.6 KB each at the peak, measured);
a larger session is refused in one line and nothing is written (it took 6 GB for 4M nodes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlpt.cli.diff import main as diff_main
from dlpt.model.render_limit import MAX_RENDER_NODES, TooLargeToRender, check_renderable
from dlpt.model.session import Session
from dlpt.renderers.exports import write_export
from dlpt.renderers.html import write_html
from tests import sessions as S


def _padded(extra: int) -> Session:
    """A real session with ``extra`` zero-cost frame nodes under its root (what counts is how many
    nodes the file holds, not what they cost)."""
    d = S.gpt_eager()
    top = max(n["id"] for n in d["nodes"])
    d["nodes"] += [
        {
            "id": top + 1 + i,
            "parent": 0,
            "kind": "frame",
            "name": "f",
            "file": "/x.py",
            "line": i + 1,
            "m": {},
        }
        for i in range(extra)
    ]
    return Session.from_dict(d)


def test_the_bound_is_what_is_checked() -> None:
    check_renderable(MAX_RENDER_NODES, "an HTML report")
    with pytest.raises(
        TooLargeToRender, match=r"^2,000,001 nodes: an HTML report is made of at most 2,000,000"
    ):
        check_renderable(MAX_RENDER_NODES + 1, "an HTML report")


def test_a_session_past_the_bound_is_refused_by_every_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The bound lowered to this session's size: a real session past 2,000,000 nodes would take
    # minutes and gigabytes to build here; what is tested is that every report checks it.
    small = _padded(100)
    monkeypatch.setattr("dlpt.model.render_limit.MAX_RENDER_NODES", len(small.nodes) - 1)
    with pytest.raises(TooLargeToRender):
        write_html(small, tmp_path / "r.html")
    for fmt in ("folded", "speedscope"):
        with pytest.raises(TooLargeToRender):
            write_export(small, fmt, tmp_path / f"e.{fmt}")
    assert not list(tmp_path.iterdir()), "nothing written"
    small.save(tmp_path / "a.json")
    assert diff_main([str(tmp_path / "a.json"), str(tmp_path / "a.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dlpt: diff: ") and "nodes: a comparison is made of at most" in err
    assert len(err.splitlines()) == 1


def test_the_text_report_of_a_loaded_session_past_the_bound_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dlpt.cli.main import main

    small = _padded(100)
    small.save(tmp_path / "s.json")
    monkeypatch.setattr("dlpt.model.render_limit.MAX_RENDER_NODES", len(small.nodes) - 1)
    assert main(["--load", str(tmp_path / "s.json")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("dlpt: not printing the report: ") and len(captured.err.splitlines()) == 1


def test_timeline_events_count_with_the_nodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dlpt.cli.main import main
    from tests.timeline_sessions import timeline_meta

    d = S.gpt_eager()
    d["meta"]["timeline"] = timeline_meta()  # 11 events and 2 frames
    session = Session.from_dict(d)
    session.save(tmp_path / "t.json")
    # The bound between the nodes alone and the nodes with the timeline: only the timeline tips it.
    monkeypatch.setattr("dlpt.model.render_limit.MAX_RENDER_NODES", len(session.nodes) + 5)
    for fmt in ("perfetto", "speedscope"):
        with pytest.raises(TooLargeToRender, match=r"nodes and 13 timeline events: a \w+ export"):
            write_export(session, fmt, tmp_path / f"e.{fmt}")
    with pytest.raises(TooLargeToRender):
        write_html(session, tmp_path / "r.html")
    assert not [p for p in tmp_path.iterdir() if p.name != "t.json"], "nothing written"
    assert main(["--load", str(tmp_path / "t.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dlpt: not printing the report: ") and "13 timeline events" in err
