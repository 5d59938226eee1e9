"""The last screen of a report answers "which line" (issue 48): examples/mlp_train.py's report at
80x24 ends with its hottest line by own cost, with that line's source text and share on the last
24 rows (before, the last screen was the tail of the tree, which held it in none of five runs)."""

from __future__ import annotations

from pathlib import Path

from dlpt.model.session import Session
from dlpt.views.run import build_view

from .helpers import REPO, Job, run


def test_the_last_screen_at_80x24_has_the_hottest_line(tmp_path: Path) -> None:
    job = Job(
        ["-o", "s.json", str(REPO / "examples" / "mlp_train.py")],
        tmp_path,
        env={"COLUMNS": "80", "LINES": "24"},
    )
    r = run(job)
    assert r.rc == 0, r.err
    last = r.out.rstrip("\n").splitlines()[-24:]
    # The hottest line by own cost, from the saved session (the flat profile's "self").
    view = build_view(Session.load(tmp_path / "s.json"))
    m = view.metric()
    hottest = max(view.flats["line"], key=lambda row: m(row.self))
    share = f"{100 * m(hottest.self) / m(view.totals):.1f}%"
    source = view.sources[hottest.node.file][str(hottest.node.line)].strip()
    rows = [ln for ln in last if f"mlp_train.py:{hottest.node.line} " in ln]
    assert any(source in ln and share in ln and "±" in ln for ln in rows), "\n".join(last)
    assert all(len(ln) <= 80 for ln in last)
