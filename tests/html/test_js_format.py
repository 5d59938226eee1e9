"""The HTML page writes numbers exactly as the terminal report does: ``assets/util.js``, run in
node over the unit table the Python side emits (the model's ``units``), against
:class:`dlpt.renderers.terminal.format.Fmt` on the same values, per-step scaling included.

Needs ``node``: skipped with the reason when it is missing, failed instead with
``DLPT_REQUIRE_NODE=1`` (as in ``.ci/run``).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from dataclasses import replace
from typing import Any

import pytest

from dlpt.model.session import Session
from dlpt.model.units import TIME, Scale, Step, units_model
from dlpt.renderers.html import render_html
from dlpt.renderers.html.data import build_model
from dlpt.renderers.html.page import ASSETS
from dlpt.renderers.terminal.format import Fmt
from tests import sessions as S

pytestmark = pytest.mark.torch_independent  # not rerun on CI's newest-torch leg (.ci/run)

# util.js in a bare context: `window` is all it touches when loaded (document only when drawing).
# stdin: {units, cases: [[kind, value, steps], ...]}; stdout: the formatted strings, as the page
# does it (value / steps, then D.fmtTime / fmtCount / fmtBytes).
HARNESS = r"""
const fs = require("fs");
const win = {};
new Function("window", fs.readFileSync(process.argv[1], "utf8"))(win);
const D = win.dlpt, input = JSON.parse(fs.readFileSync(0, "utf8"));
D.setUnits(input.units);
const fmt = { ns: D.fmtTime, count: D.fmtCount, bytes: D.fmtBytes };
process.stdout.write(JSON.stringify(input.cases.map(function (c) {
  return fmt[c[0]](c[2] > 0 ? c[1] / c[2] : c[1]);
})));
"""

TIMES = [
    0, 1, 0.4, 0.5, 1.5, 2.5, 850, 999, 999.4, 999.5,  # below a microsecond (x.5: ties to even)
    1_000, 1_250, 1_350, 44_000, 62_000, 999_949, 999_950,  # µs
    1_000_000, 1_125_000, 2_430_000, 12_345_678, 999_994_999, 999_999_999,  # ms
    10**9, 1_125_000_000, 1_230_000_000, 6_300_000_000, 3_600 * 10**9, 2**63,  # s
    -150_000, -224_000, -0.5, -1_250, -2_200_000_000,  # deltas (diff page, suggestions)
]  # fmt: skip
COUNTS = [0, 1, 44, 999, 1_000, 1_234_567, 2**53, 0.5, 0.25, 2.25, 2.35, 1234.56, 1 / 3, -2.75, -0.04]
BYTES = [
    0, 1, 512, 1023, 1024, 1536, 1_100, 16 * 1024**2, 3.5 * 1024**3, 1023.5 * 1024**3,
    1024**4, 2**64 - 1, 0.5, 2.5, -4096,
]  # fmt: skip
STEPS = (0, 1, 3, 4, 7)

METHOD = {"ns": "time", "count": "count", "bytes": "bytes"}


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        if os.environ.get("DLPT_REQUIRE_NODE") == "1":
            pytest.fail("DLPT_REQUIRE_NODE=1 but there is no `node` on PATH")
        pytest.skip("the JavaScript formatting tests need node (not on PATH)")
    return node


def run_js(units: dict[str, Any], cases: list[tuple[str, float, int]]) -> list[str]:
    """util.js's formatting of ``cases`` ([kind, value, steps]) with the unit table ``units``."""
    out = subprocess.run(
        [_node(), "-e", HARNESS, str(ASSETS / "util.js")],
        input=json.dumps({"units": units, "cases": cases}),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert isinstance(result, list) and len(result) == len(cases)
    return result


def python_fmt(cases: list[tuple[str, float, int]], ascii: bool) -> list[str]:
    return [getattr(Fmt(steps=steps, ascii=ascii), METHOD[kind])(v) for kind, v, steps in cases]


def table_cases() -> list[tuple[str, float, int]]:
    return [
        (kind, v, s)
        for kind, vals in (("ns", TIMES), ("count", COUNTS), ("bytes", BYTES))
        for v in vals
        for s in STEPS
    ]


def random_cases(n: int = 3000) -> list[tuple[str, float, int]]:
    """Values over every range and many exact ties (multiples of 1/8 and 1/2 of each unit)."""
    rng = random.Random(20240611)
    cases: list[tuple[str, float, int]] = []
    for _ in range(n):
        kind = rng.choice(("ns", "count", "bytes"))
        unit = rng.choice((1, 1e3, 1e6, 1e9)) if kind == "ns" else rng.choice((1, 1024, 1024**2, 1024**3))
        v = rng.choice(
            (rng.randrange(0, 10**13), rng.randrange(0, 8000) / 8 * unit, rng.uniform(0, 2000) * unit)
        )
        cases.append((kind, v, rng.choice(STEPS)))
    return cases


def test_the_page_formats_every_value_as_the_terminal_report():
    cases = table_cases() + random_cases()
    expected = python_fmt(cases, ascii=False)
    got = run_js(units_model(), cases)
    wrong = [(c, e, g) for c, e, g in zip(cases, expected, got, strict=True) if e != g]
    assert not wrong, wrong[:20]
    # The table covers what it says: each unit of each scale appears, and the ties to even.
    for text in (
        "0",
        "0s",
        "<0.1",
        "850ns",
        "1.2µs",
        "1.12ms",
        "1.12s",
        "0.2",
        "1,234,567",
        "1.5 KiB",
        "16.0 MiB",
        "1024.0 GiB",
    ):
        assert text in expected, text


def test_ascii_units_follow_the_table_too():
    """The page itself is UTF-8 only (no ASCII mode); the same formatter given the ASCII table
    writes what an ASCII console's report does (``us``)."""
    cases = [("ns", v, s) for v in TIMES for s in STEPS]
    expected = python_fmt(cases, ascii=True)
    assert "1.2us" in expected
    assert run_js(units_model(ascii=True), cases) == expected


def test_the_page_takes_its_units_from_the_data_not_from_its_own_code():
    """A different table changes what the page writes, the way it changes Python's output: the
    page has no units of its own to drift."""
    other = Scale((Step(60e9, "min", 3), Step(1e9, "sec", 0), Step(1, "ns", 1)), sep=" ", zero="none")
    units = {
        **units_model(),
        "ns": {"steps": [[s.size, s.label, s.decimals] for s in other.steps], "sep": " ", "zero": "none"},
    }
    values = [0, 5, 1.25, 999_999_999, 10**9, 59.5e9, 61e9, 7_200_000_000_000]
    got = run_js(units, [("ns", v, 0) for v in values])
    assert got == [other.format(v) for v in values]
    assert got != [TIME.format(v) for v in values]
    assert replace(TIME, zero=None).format(0) == "0ns"  # the zero rule is the table's as well


def test_the_html_models_carry_the_units_table():
    session = Session.from_dict(S.gpt_compiled())
    assert build_model(session)["units"] == units_model()
    html = render_html(session)
    assert json.dumps(units_model()["bytes"], separators=(",", ":")) in html
