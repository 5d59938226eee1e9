"""The terminal report and the HTML report say the same things: both format the report model
(dlpt.analysis.report), so every fact of the page's header (numbers and wording) is in the
terminal's header, every line of the terminal's header is on the page, and the options that
change a fact (``--peak-tflops``) change it in both."""

from __future__ import annotations

import re
from typing import Any

import pytest

import tests.rank_sessions as R
import tests.sessions as S
from dlpt.model.session import Session
from dlpt.renderers.html.data import build_model
from dlpt.renderers.terminal.report import render


def _sessions(h: Any) -> dict[str, tuple[Session, dict[str, Any]]]:
    from tests.unit.test_calibrated_report import calibrated
    from tests.unit.test_op_mode_report import session as op_mode_session
    from tests.unit.test_render import cpu_session
    from tests.unit.test_suggestions_view import flops_session

    return {
        "gpu": (h.build_gpu().session(h.gpu_meta()), {}),
        "cpu_only": (cpu_session(h), {}),
        "flops_peak": (flops_session(h), {"peak_tflops": 100.0}),
        "flops_datasheet": (flops_session(h), {}),
        "gpt_eager": (Session.from_dict(S.gpt_eager()), {}),
        "gpt_compiled": (Session.from_dict(S.gpt_compiled()), {}),
        "rank": (R.ddp_gpu(1), {}),
        "hostile": (Session.from_dict(S.hostile()), {}),
        "calibrated": (calibrated(h, outside=True), {}),
        "as_traced": (calibrated(h, untraced=False), {}),
        "lean_ops": (op_mode_session("lean"), {}),
    }


CASES = (
    "gpu",
    "cpu_only",
    "flops_peak",
    "flops_datasheet",
    "gpt_eager",
    "gpt_compiled",
    "rank",
    "hostile",
    "calibrated",
    "as_traced",
    "lean_ops",
)


def _flat(text: str) -> str:
    """The terminal header's text without the panel's borders and line breaks."""
    body = [re.sub(r"^[│|]\s?|\s?[│|]$", "", ln.strip()) for ln in text.splitlines()]
    return " ".join(" ".join(body).split())


def _words(s: str) -> str:
    return " ".join(s.split())


def _header_of(h: Any, session: Session, opts: dict[str, Any]) -> str:
    """Both terminal headers, verbose then compact: the page has the verbose facts and the
    compact header's headlines (what --flops, --memory, --pc-sampling asked for)."""
    panels = []
    for verbose in (True, False):
        r = render(session, view="tree", threshold=0.0, verbose=verbose, **opts)
        panels.append(_flat(h.render_text(r, width=4000).split("╯", 1)[0]))  # the header: the first block
    return " ".join(panels)


@pytest.mark.parametrize("case", CASES)
def test_every_fact_on_the_page_is_in_the_terminal_header(h: Any, case: str) -> None:
    session, opts = _sessions(h)[case]
    terminal = _header_of(h, session, opts)
    page = build_model(session, peak_tflops=opts.get("peak_tflops"))["header"]
    said: list[str] = [page["title"]]
    said += [v for k, v in page["facts"] if k != "rank"]
    said += [f"{page['totals_label']}:"]
    # Totals are laid out as label/value on the page and as "2 copies (16.0 MiB)" in the terminal:
    # the same numbers with their units.
    said += [q for _, v in page["totals"] for q in re.findall(r"[\d.,]+\s?[A-Za-zµ]*", v)]
    said += [f"{d['name']}: {d['text']}" for d in page["devices"]]
    said += [w["text"] for w in page["warnings"]]
    said += page["insights"]["lines"]
    said += [page["versions"]] if page["versions"] else []
    missing = [s for s in said if _words(s) not in terminal]
    assert not missing, f"on the page but not in the terminal header: {missing}"
    ranks = [v for k, v in page["facts"] if k == "rank"]
    assert all(f"[{r}]" in terminal for r in ranks)


@pytest.mark.parametrize("case", CASES)
def test_every_terminal_header_line_is_on_the_page(h: Any, case: str) -> None:
    from dlpt.analysis.report import build_report

    session, opts = _sessions(h)[case]
    page = build_model(session, peak_tflops=opts.get("peak_tflops"))["header"]
    shown = " ".join(
        _words(x)
        for x in [
            page["title"],
            *(f"{k} {v}" for k, v in page["facts"]),
            *(f"{d['name']}: {d['text']}" for d in page["devices"]),
            *(w["text"] for w in page["warnings"]),
            *page["insights"]["lines"],
            page["versions"],
        ]
    )
    report = build_report(session, peak_tflops=opts.get("peak_tflops"))
    from dlpt.model.safe_text import escape_control

    for fact in report.header:
        if fact.kind == "totals":  # the page shows the totals one by one (checked above)
            continue
        if fact.kind == "capture" and not fact.warning:  # "GPU capture: on" needs no box on the page
            continue
        assert _words(escape_control(fact.text)) in shown or (
            fact.label and _words(escape_control(fact.value)) in shown
        ), f"terminal header line missing on the page: {fact.text!r}"


def test_peak_tflops_changes_mfu_in_both_reports(h: Any) -> None:
    session, opts = _sessions(h)["flops_peak"]
    terminal = _header_of(h, session, opts)
    page = build_model(session, peak_tflops=100.0)["header"]
    line = next(t for t in page["insights"]["lines"] if t.startswith("MFU"))
    assert "100 TFLOP/s (--peak-tflops)" in line and _words(line) in terminal
    default = next(t for t in build_model(session)["header"]["insights"]["lines"] if t.startswith("MFU"))
    assert "(bf16 dense, H100 SXM datasheet)" in default and default != line


def test_suggestions_and_compile_summary_are_worded_the_same(h: Any) -> None:
    session = Session.from_dict(S.gpt_compiled())
    text = h.render_text(render(session, view="suggestions", threshold=0.0), width=4000)
    flat = " ".join(text.split())
    page = build_model(session)["header"]
    assert page["insights"]["suggestions"], "the compiled session has suggestions"
    for s in page["insights"]["suggestions"]:
        for key in ("gain", "where", "title", "evidence", "action", "basis"):
            assert _words(s[key]) in flat, (key, s[key])
    compiled = page["compile"]
    assert compiled is not None and compiled["summary"].startswith("3 compilations, 17.60 s compiling")
    tree = " ".join(h.render_text(render(session, view="tree"), width=4000).split())
    assert _words(compiled["summary"]) in tree
    for row in compiled["breaks"] + compiled["recompiles"]:
        assert _words(row["reason"])[:40] in tree


def test_compile_time_never_has_a_part_larger_than_the_whole() -> None:
    from dlpt.analysis.report.compile_summary import compile_summary

    def ev(compile_s: float, inductor_s: float) -> dict[str, Any]:
        return {
            "compile_id": "0/0",
            "function": "f",
            "file": "m.py",
            "line": 1,
            "compile_s": compile_s,
            "inductor_s": inductor_s,
            "break_reasons": [],
            "recompile_reason": None,
        }

    one = compile_summary({"compile": [ev(2.0, 1.5)]})
    assert one is not None and one.text.startswith("1 compilation, 2.00 s compiling (Inductor 1.50 s of it)")
    # AOTAutograd compiles the backward graph at the first backward pass, after the frame: Inductor's
    # total exceeds the frames' time and is said as such.
    lazy = compile_summary({"compile": [ev(29.77, 31.97)]})
    assert (
        lazy is not None
        and "29.77 s compiling frames, Inductor 31.97 s (it also compiles the backward" in lazy.text
    )
    bad = compile_summary({"compile": [ev(float("nan"), -1000.0)]})
    assert bad is not None and "nan" not in bad.text and "-1000" not in bad.text
