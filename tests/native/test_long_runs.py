"""A long run does not grow without bound: numbered names made afresh each step (a
``record_function(f"batch_{i}")``) are folded into their pattern past the first 256 of it, and
the report says so."""

from __future__ import annotations

import torch

import dlpt
from dlpt.analysis.report.build import build_report

KEPT = 256  # csrc/cct/tree.h: StringTable::kNamesBeforeFolding


def _numbered_steps(n: int) -> dlpt.profile:
    m = torch.nn.Linear(8, 8)
    x = torch.ones(4, 8)
    with dlpt.profile(gpu=False, sample_hz=0) as prof:
        for i in range(n):
            with torch.autograd.profiler.record_function(f"batch_{i}"), dlpt.scope(f"part {i}/7"):
                m(x).sum().backward()
    return prof


def test_numbered_names_fold_past_the_first_ones() -> None:
    short, long = _numbered_steps(KEPT), _numbered_steps(3 * KEPT)
    names = {n["name"] for n in long.session.nodes if n["kind"] == "scope"}
    assert "batch_#" in names and "part #/#" in names
    assert f"batch_{KEPT - 1}" in names and f"batch_{KEPT}" not in names
    # Three times the steps, about as many nodes: the later steps all land on the folded rows.
    grown = len(long.session.nodes) / len(short.session.nodes)
    assert grown < 1.1, grown
    assert long.session.meta["capture"]["folded_names"] == {"batch_#": 2 * KEPT, "part #/#": 2 * KEPT}
    assert "folded_names" not in short.session.meta["capture"]


def test_the_report_says_what_was_folded() -> None:
    prof = _numbered_steps(KEPT + 10)
    report = build_report(prof.session)
    said = [f.text for f in report.header if "folded" in f.text]
    assert said == [
        "numbered names folded into one row each, past the first 256 of each kind: "
        "batch_# (10 names), part #/# (10 names)"
    ], said
