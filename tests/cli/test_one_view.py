"""One view per run: a command line run with a text report, ``--html``, exports and ``-o`` (and
the same with ``--load``) analyses its session once, folds it once and lays its timeline out
once (dlpt.views.run).

The counts come from a real run of the command line (:func:`dlpt.cli.main.main`, what ``python
-m dlpt`` runs), in a subprocess whose driver wraps the constructors of
:class:`dlpt.analysis.inputs.Analysis` (what ``analyze()`` makes) and
:class:`dlpt.trees.folding.FoldedTable` (a fold of the node table; the per-step spreads' fold is
one too) and :class:`dlpt.analysis.timeline.TimelineView` before the command line starts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .helpers import Job, Result, run_many, write

# Steps (an optimizer), warm-up steps (work outside counted steps) and more than one counted step
# (per-step spreads): every part of a view is built.
PROGRAM = """\
import torch
model = torch.nn.Linear(32, 32)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(16, 32)
for _ in range(5):
    loss = model(x).relu().sum()  # the step's line
    loss.backward()
    opt.step()
    opt.zero_grad()
"""

DRIVER = """\
import json, os, sys
from dlpt.analysis.inputs import Analysis
from dlpt.analysis.timeline import TimelineView
from dlpt.trees.folding import FoldedTable

counts = {"analyses": 0, "folds": 0, "timelines": 0}
where = os.path.abspath("counts.json")  # before the program may change directory


def counted(cls, key):
    real = cls.__init__

    def init(self, *args, **kwargs):
        counts[key] += 1
        real(self, *args, **kwargs)

    cls.__init__ = init


counted(Analysis, "analyses")
counted(FoldedTable, "folds")
counted(TimelineView, "timelines")
from dlpt.cli.main import main

status = main(sys.argv[1:])
with open(where, "w") as f:
    json.dump(counts, f)
sys.exit(status)
"""

OUTPUTS = ["--html", "r.html", "--export", "speedscope", "s.json", "--export", "folded", "f.txt"]
# The timeline window (kept by the run named "run"), laid out once for the page and the trace.
TIMELINE = ["--export", "perfetto", "t.json"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Result, Path]]:
    root = tmp_path_factory.mktemp("one_view")
    write(root / "prog.py", PROGRAM)
    dirs = {name: root / name for name in ("run", "all", "load")}
    for d in dirs.values():
        write(d / "drive.py", DRIVER)
        write(d / "prog.py", PROGRAM)
    first = run_many(
        {
            "run": Job(
                [
                    "drive.py",
                    *OUTPUTS,
                    *TIMELINE,
                    "--timeline",
                    "2",
                    "-o",
                    "p.json",
                    "--skip-first",
                    "2",
                    "prog.py",
                ],
                dirs["run"],
                dlpt=False,
            ),
            "all": Job(
                ["drive.py", *OUTPUTS, "--view", "all", "--show-all", "--skip-first", "2", "prog.py"],
                dirs["all"],
                dlpt=False,
            ),
        }
    )
    (dirs["load"] / "p.json").write_bytes((dirs["run"] / "p.json").read_bytes())
    second = run_many(
        {
            "load": Job(
                ["drive.py", "--load", "p.json", *OUTPUTS, *TIMELINE, "--view", "all"],
                dirs["load"],
                dlpt=False,
            )
        }
    )
    return {k: (r, dirs[k]) for k, r in {**first, **second}.items()}


@pytest.mark.parametrize("name", ["run", "all", "load"])
def test_a_run_analyses_and_folds_its_session_once(runs: dict[str, tuple[Result, Path]], name: str) -> None:
    r, where = runs[name]
    assert r.rc == 0, r.err
    # Every output was made, from the one view.
    assert "By source line" in r.out or name == "run"
    timeline = name != "all"
    for f in ("r.html", "s.json", "f.txt", *(["t.json"] if timeline else [])):
        assert (where / f).stat().st_size > 0, f
    counts = json.loads((where / "counts.json").read_text())
    assert counts == {"analyses": 1, "folds": 1, "timelines": int(timeline)}, counts
    if name == "run":  # the suggestions saved at stop were derived: from that one analysis
        assert isinstance(json.loads((where / "p.json").read_text())["meta"].get("suggestions"), list)
