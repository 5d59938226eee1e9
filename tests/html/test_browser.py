"""The HTML report in a real browser (headless Chromium): it loads without console errors, the
flame graph draws the golden session's frames at their widths, clicking zooms, search finds a
kernel, the source view shows a known line's cost and kernels, hostile names stay text, a
10,000-node report stays quick, and the diff page pairs eager and fused kernels and says when
the whole run's change cannot be told.

Screenshots of each state are saved as test artefacts (``$DLPT_ARTIFACTS``); with
``DLPT_UPDATE_DOCS=1`` the README's screenshots in docs/ are rewritten from them.
"""

from __future__ import annotations

import copy
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from dlpt.analysis.diff import diff_sessions
from dlpt.model.metrics import METRICS
from dlpt.model.session import Session
from dlpt.model.tree import walk
from dlpt.renderers.html import write_html
from dlpt.renderers.html.diff_page import write_diff_html
from dlpt.trees.folding import report_tree
from dlpt.views.diff import DiffView
from tests import sessions as S
from tests.diff_cases import BASE_STALLED, HEAVIER_CALMER, HEAVIER_STALLED, measured_cpu_session, session

pytestmark = pytest.mark.torch_independent  # not rerun on CI's newest-torch leg (.ci/run)

DOCS = Path(__file__).resolve().parents[2] / "docs"
GELU_LINE = 'gpu_gpt.py:44  h = F.gelu(h, approximate="tanh")'
GELU_FWD = "triton_poi_fused_gelu_view_10 [0_forward]"
GELU_BWD = "triton_poi_fused_gelu_gelu_backward_view_4 [0_backward]"
MINUS = "\u2212"  # the diff page writes negative changes with a real minus sign

# Bars of the flame graph as drawn: [{id, label, x, w, row, anc}] (anc: an ancestor of the zoom).
ITEMS_JS = """() => { const a = dlpt.app, m = a.model;
  return a.flame.items.map(it => ({id: it.id, label: m.label(it.id), x: it.x, w: it.w, row: it.row,
                                   anc: !!it.anc})); }"""
# The colour at a point of the flame canvas, and the colour a CSS colour string paints.
PIXEL_JS = """([x, y]) => { const c = dlpt.app.flame.canvas, r = window.devicePixelRatio || 1;
  const probe = document.createElement('canvas'); probe.width = probe.height = 1;
  const g = probe.getContext('2d', {willReadFrequently: true});
  g.drawImage(c, Math.round(x * r), Math.round(y * r), 1, 1, 0, 0, 1, 1);
  return Array.from(g.getImageData(0, 0, 1, 1).data); }"""
PAINT_JS = """(css) => { const c = document.createElement('canvas'); c.width = c.height = 1;
  const g = c.getContext('2d', {willReadFrequently: true}); g.fillStyle = css; g.fillRect(0, 0, 1, 1);
  return Array.from(g.getImageData(0, 0, 1, 1).data); }"""


def _save(page: Any, artifacts: Path, name: str, docs_name: str | None = None, **kw: Any) -> Path:
    path = artifacts / name
    page.screenshot(path=str(path), **kw)
    assert path.stat().st_size > 10_000, "a blank screenshot"
    if docs_name and os.environ.get("DLPT_UPDATE_DOCS") == "1":
        shutil.copyfile(path, DOCS / docs_name)
    return path


@pytest.fixture(scope="module")
def compiled_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("reports") / "compiled.html"
    write_html(Session.from_dict(S.gpt_compiled()), path)
    return path


def _items(r: Any) -> list[dict]:
    return r.js(ITEMS_JS)


def _item(r: Any, label: str, **match: Any) -> dict:
    found = [it for it in _items(r) if it["label"] == label and all(it[k] == v for k, v in match.items())]
    assert found, f"no bar {label!r}"
    return found[0]


def _canvas_point(r: Any, it: dict) -> tuple[float, float]:
    """Page coordinates of a bar's centre (scrolled into view)."""
    r.page.locator(".flame-canvas").scroll_into_view_if_needed()
    box = r.page.locator(".flame-canvas").bounding_box()
    row = r.js("() => dlpt.FLAME_ROW")
    return box["x"] + it["x"] + it["w"] / 2, box["y"] + it["row"] * row + row / 2


def _pixel_at_bar(r: Any, it: dict) -> list[int]:
    row = r.js("() => dlpt.FLAME_ROW")
    return r.js(PIXEL_JS, [it["x"] + min(it["w"] / 2, 3), it["row"] * row + 3])


def test_report_loads_and_draws_the_golden_frames(
    open_report: Any, compiled_html: Path, artifacts: Path
) -> None:
    r = open_report(compiled_html)
    page = r.page
    assert page.inner_text(".topbar .title") == "examples/compiled_gpt.py"
    header = page.inner_text(".header")
    assert "12 steps profiled" in header and "NVIDIA H200" in header and "idle 36.4%" in header
    assert "3 compilations" in header and "1 graph break," in header and "1 recompilation" in header
    labels = {it["label"] for it in _items(r)}
    for expected in (
        "compiled_gpt.py:73  loss = compiled(inputs, targets)",
        "Torch-Compiled Region: 0/1",
        "CompiledFunctionBackward",
        "<backward>",
        "<forward>",
        GELU_LINE,
        GELU_FWD,
        GELU_BWD,
    ):
        assert expected in labels, expected
    assert not any("module.py" in label for label in labels), "library frames folded"

    # Widths are the GPU time share: the first compiled region holds 74.5% of it.
    root = report_tree(Session.from_dict(S.gpt_compiled()))
    region = next(n for n, _ in walk(root) if n.name == "Torch-Compiled Region: 0/1")
    share = METRICS["gpu"](region.inclusive) / METRICS["gpu"](root.inclusive)
    width = page.locator(".flame-canvas").bounding_box()["width"]
    bar = _item(r, "Torch-Compiled Region: 0/1")
    assert bar["w"] == pytest.approx(share * width, abs=1.0)

    # The bar is really painted, in its colour (a compiled-region op).
    color = r.js("(id) => dlpt.app.colors[id]", bar["id"])
    assert _pixel_at_bar(r, bar) == r.js(PAINT_JS, color)
    legend = page.inner_text(".legend")
    for entry in ("forward", "backward", "compiled region", "kernel", "fused (Inductor) kernel", "sync wait"):
        assert entry in legend
    # Hovering shows the node's inclusive/exclusive times.
    page.mouse.move(*_canvas_point(r, _item(r, GELU_LINE)))
    tip = page.locator(".tooltip")
    tip.wait_for(state="visible")
    assert "GPU time" in tip.inner_text() and "compiled" in tip.inner_text() and "44" in tip.inner_text()
    _save(page, artifacts, "report.png", "html-report.png")


def test_click_zooms_and_the_breadcrumb_goes_back(
    open_report: Any, compiled_html: Path, artifacts: Path
) -> None:
    r = open_report(compiled_html)
    page = r.page
    target = _item(r, "gpu_gpt.py:58  x = x + self.mlp(self.ln2(x))")
    page.mouse.click(*_canvas_point(r, target))
    assert r.js("() => dlpt.app.flame.zoom") == target["id"]
    zoomed = _item(r, target["label"], id=target["id"])
    width = page.locator(".flame-canvas").bounding_box()["width"]
    assert zoomed["x"] == 0 and zoomed["w"] == pytest.approx(width)
    crumbs = page.locator(".crumbs .crumb").all_inner_texts()
    assert (
        crumbs[0] == "all"
        and crumbs[-1] == "gpu_gpt.py:58 forward"
        and "Torch-Compiled Region: 0/1" in crumbs
    )
    # Children fill the zoomed bar in proportion: the GELU line's share of the line-58 time.
    kids = [it for it in _items(r) if it["row"] == zoomed["row"] + 1]
    assert sum(it["w"] for it in kids) == pytest.approx(width, rel=0.02)
    assert page.inner_text(".selection").startswith("gpu_gpt.py:58")
    # The top-down table opens the path to the clicked bar and highlights its row.
    assert r.js("() => document.querySelector('.pane[data-pane=topdown] tr.selected').dataset.key") == str(
        target["id"]
    )
    _save(page, artifacts, "zoomed.png")
    page.locator(".flame-wrap").press("Escape")
    assert r.js("() => dlpt.app.flame.zoom") == r.js("(id) => dlpt.app.model.parent[id]", target["id"])
    page.locator(".crumbs .crumb").first.click()
    assert r.js("() => dlpt.app.flame.zoom") == 0


def test_search_finds_a_kernel(open_report: Any, compiled_html: Path, artifacts: Path) -> None:
    r = open_report(compiled_html)
    page = r.page
    page.fill("#search", "triton_poi_fused_gelu")
    page.wait_for_function("() => document.querySelector('.search-status').textContent.includes('match')")
    status = page.inner_text(".search-status")
    # Two fused kernels, 62.0µs per step of 2.43ms.
    assert status == "2 op/kernel matches · 62.0µs (2.5%)"
    matched = r.js(
        "() => Array.from(dlpt.app.flame.match).flatMap((v, i) => v ? [dlpt.app.model.label(i)] : [])"
    )
    assert sorted(matched) == sorted([GELU_FWD, GELU_BWD])
    hit, miss = _item(r, GELU_FWD), _item(r, "Torch-Compiled Region: 1/1")
    assert _pixel_at_bar(r, hit) == r.js(PAINT_JS, r.js("(id) => dlpt.app.colors[id]", hit["id"]))
    assert _pixel_at_bar(r, miss) == r.js(PAINT_JS, "#eceef1"), "bars without a match are greyed"
    _save(page, artifacts, "search.png")
    page.locator("#search").press("Escape")
    assert page.inner_text(".search-status") == "" and r.js("() => dlpt.app.flame.match") is None


def test_source_view_shows_the_known_lines_cost(
    open_report: Any, compiled_html: Path, artifacts: Path
) -> None:
    r = open_report(compiled_html)
    page = r.page
    page.click("button[data-tab=source]")
    page.click(".src-files button.file[data-file$='gpu_gpt.py']")
    row = page.locator("table.code tr[data-line='44']")
    cells = row.locator("td").all_inner_texts()
    # self = total = the fused GELU kernels, forward and backward, per step: (6.5 + 9.0) x 4 blocks.
    assert cells[1:4] == ["62.0µs", "62.0µs", "44"]
    assert cells[4] == S.GPT_SOURCE[44]
    assert row.locator(".heat-bar").count() == 1
    row.click()
    detail = page.inner_text(".src-detail")
    assert GELU_FWD in detail and GELU_BWD in detail
    assert "forward 26.0µs" in detail and "backward 36.0µs" in detail
    assert page.locator(".leaf .tag.fwd").count() >= 1 and page.locator(".leaf .tag.bwd").count() >= 1
    _save(page.locator(".tabs"), artifacts, "source.png", "html-source.png")
    # Totals instead of per step: 12 steps.
    page.uncheck("#perstep")
    assert page.locator("table.code tr[data-line='44'] td").nth(1).inner_text() == "744.0µs"
    # Lines that were not stored are marked as a gap, not invented.
    assert "lines not stored" in page.inner_text("table.code")


def test_suggestions_are_listed_and_link_to_their_line(open_report: Any, compiled_html: Path) -> None:
    r = open_report(compiled_html)
    page = r.page
    box = page.inner_text(".header .suggestions")
    assert "Suggestions" in box and "-150.0µs/step" in box and "torch.compile graph break" in box
    assert "basis: " in box and "\u2192 " in box  # every suggestion says what to do and why
    items = page.locator(".suggestion-list li")
    assert items.count() == 3
    page.click(".suggestion-list button:has-text('compiled_gpt.py:44')")
    assert page.locator("table.code tr.selected").get_attribute("data-line") == "44"


def test_tables_metric_switch_and_links(open_report: Any, compiled_html: Path) -> None:
    r = open_report(compiled_html)
    page = r.page
    first = page.locator(".pane[data-pane=topdown] tbody tr").first.locator("td").all_inner_texts()
    assert first[:2] == ["2.43ms", "100%"] and first[-1].strip().endswith("all")
    page.select_option("#metric", "cpu")
    first = page.locator(".pane[data-pane=topdown] tbody tr").first.locator("td").all_inner_texts()
    assert first[0] == "337.0µs", "CPU op time per step"
    page.select_option("#metric", "gpu")
    page.click("button[data-tab=bottomup]")
    top = page.locator(".pane[data-pane=bottomup] tbody tr").first.inner_text()
    assert "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt" in top and "1.07ms" in top
    page.click("button[data-tab=flat]")
    page.click(".pane[data-pane=flat] .seg button:has-text('By kernel')")
    assert page.locator(".pane[data-pane=flat] tbody tr").count() >= 20
    page.click(".pane[data-pane=flat] .seg button:has-text('By source line')")
    page.locator(".pane[data-pane=flat] tbody tr", has_text="h = F.gelu").first.click()
    assert page.locator(".pane[data-pane=source]").is_visible()
    assert page.locator("table.code tr.selected").get_attribute("data-line") == "44"
    # The graph break links to its line.
    page.click(".compile summary")
    page.click(".compile-table button:has-text('compiled_gpt.py:44')")
    assert page.locator("table.code tr.selected").get_attribute("data-line") == "44"
    assert "compiled_gpt.py" in page.inner_text(".src-main .pane-title")


def test_hostile_names_stay_text(open_report: Any, tmp_path: Path, artifacts: Path) -> None:
    path = tmp_path / "hostile.html"
    write_html(Session.from_dict(S.hostile()), path)
    r = open_report(path)
    page = r.page
    assert r.js("() => document.title").startswith("dlpt")
    assert r.js("() => document.querySelectorAll('img, svg, iframe, b, i').length") == 0
    assert r.js("() => document.scripts.length") == 2
    page.fill("#search", "onerror")
    page.wait_for_function("() => document.querySelector('.search-status').textContent.includes('match')")
    assert page.inner_text(".search-status") == "1 op/kernel match · 5.0µs (100%)"
    page.click("button[data-tab=bottomup]")
    text = page.inner_text(".pane[data-pane=bottomup]")
    assert "</script><img src=x" in text and "\x1b" not in text
    page.click("button[data-tab=source]")
    assert "document.title" in page.inner_text("table.code")
    _save(page, artifacts, "hostile.png")


def test_ten_thousand_nodes_load_quickly(open_report: Any, tmp_path: Path, artifacts: Path) -> None:
    path = tmp_path / "big.html"
    write_html(Session.from_dict(S.big(10_000)), path)
    t0 = time.perf_counter()
    r = open_report(path)
    r.page.wait_for_selector(".pane[data-pane=topdown] tbody tr")
    load_s = time.perf_counter() - t0
    assert load_s < 8, f"{load_s:.1f}s to load"
    assert r.js("() => dlpt.app.model.n") > 5_000
    t0 = time.perf_counter()
    r.page.fill("#search", "functor_42")
    r.page.wait_for_function("() => document.querySelector('.search-status').textContent.includes('match')")
    assert time.perf_counter() - t0 < 3
    r.page.click("button[data-tab=bottomup]")
    r.page.click("button[data-tab=source]")
    assert r.page.locator("table.code tr.hot").count() > 0
    _save(r.page, artifacts, "big.png")


def test_diff_page_pairs_eager_and_fused_kernels(open_report: Any, tmp_path: Path, artifacts: Path) -> None:
    d = diff_sessions(
        Session.from_dict(S.gpt_eager()), Session.from_dict(S.gpt_compiled()), "eager.json", "compiled.json"
    )
    path = tmp_path / "diff.html"
    write_diff_html(DiffView(d, METRICS["gpu"]), path)
    r = open_report(path)
    page = r.page
    assert f"change {MINUS}224.0µs (0.92x)" in page.inner_text(".header").replace("\n", " ")
    first = page.locator(".diff-table tbody tr").first
    assert first.locator("td").all_inner_texts()[1:5] == ["136.0µs", "62.0µs", f"{MINUS}74.0µs", "0.46x"]
    assert "gpu_gpt.py:44" in first.inner_text()
    first.click()
    side = page.inner_text(".diff-side")
    assert "GeluCUDAKernelImpl" in side and GELU_FWD in side and "fuses aten.view+aten.gelu" in side
    _save(page, artifacts, "diff.png", "html-diff.png")
    page.fill("#search", "self.head")
    page.wait_for_function("() => document.querySelectorAll('.diff-table tbody tr').length === 1")
    page.fill("#search", "")
    page.wait_for_function("() => document.querySelectorAll('.diff-table tbody tr').length > 3")
    page.select_option("#metric", "cpu")
    assert page.locator(".diff-table tbody tr").count() > 3


def test_diff_page_says_when_the_whole_runs_change_cannot_be_told(open_report: Any, tmp_path: Path) -> None:
    costs = [100.0, 600.0, 200.0, 30.0, 20.0]  # a 1.3x host, lines +-20% each: B/A 1.24x (0.89-1.73)
    d = diff_sessions(session(1000, costs, line_run=0.2), session(1001, costs, host=1.3, line_run=0.2))
    path = tmp_path / "diff.html"
    write_diff_html(DiffView(d, METRICS["gpu"]), path)
    header = open_report(path).page.inner_text(".header").replace("\n", " ")
    assert "can't tell whether the run as a whole changed" in header and "did not change" not in header


def test_diff_page_says_the_whole_run_was_judged_on_its_fastest_calls(
    open_report: Any, tmp_path: Path
) -> None:
    for heavier, said in (
        (HEAVIER_STALLED, "the whole run is slower at its ops' fastest calls"),
        (HEAVIER_CALMER, "its means and its ops' fastest calls disagree"),
    ):
        d = diff_sessions(measured_cpu_session(BASE_STALLED, 32), measured_cpu_session(heavier, 33))
        path = tmp_path / "diff.html"
        write_diff_html(DiffView(d, METRICS["cpu"]), path, force=True)
        header = open_report(path).page.inner_text(".header").replace("\n", " ")
        assert said in header and "at their ops' fastest calls" in header


@pytest.mark.parametrize("kind", ["empty", "cpu only"])
def test_sparse_sessions_load_cleanly(open_report: Any, tmp_path: Path, kind: str) -> None:
    b = S.Builder(steps=1)
    if kind == "cpu only":  # no GPU, no steps, no source text: what an old CPU run looks like
        b.op(b.frame(0, "/home/user/run.py", 3, "<module>"), "aten::mm", cpu_ns=7_000)
    path = tmp_path / "sparse.html"
    write_html(Session.from_dict(b.session({})), path)
    r = open_report(path)
    page = r.page
    assert page.locator("#perstep").is_disabled()
    if kind == "empty":
        assert "No GPU time" in page.inner_text(".flame-empty")
        return
    assert page.locator("#metric").input_value() == "cpu"
    assert "run.py:3" in {it["label"].split()[0] for it in _items(r)}
    page.click("button[data-tab=source]")
    assert "holds no source text" in page.inner_text(".pane[data-pane=source]")
    assert page.locator("table.code tr[data-line='3'] td").nth(1).inner_text() == "7.0µs"


# A line whose text holds "relu" and costs more than aten::relu: its linear layers run there too.
RELU_LINE = "        x = self.fc2(F.relu(self.fc1(x)))  # " + " ".join(["a comment that runs on"] * 12)
MLP_PY, RUN = "/home/user/proj/mlp.py", "/home/user/proj/run.py"


def _relu_session() -> Session:
    b = S.Builder(steps=4)
    top = b.frame(0, RUN, 10, "<module>")
    line = b.frame(top, MLP_PY, 5, "forward")
    b.op(line, "aten::linear", cpu_ns=12_000, calls=2)
    b.op(line, "aten::relu", cpu_ns=3_000, calls=1)
    b.op(b.frame(top, MLP_PY, 6, "forward"), "aten::add", cpu_ns=5_000, calls=3)
    b.op(top, "aten::copy_", cpu_ns=0, calls=1)  # a call with no time: "1" in the count column
    meta = {
        "argv": ["run.py"],
        "wall_ns": 80_000 * 4,
        "steps": {"profiled": 4, "seen": 4, "skip_first": 0, "active": None, "source": "optimizer"},
        "gpu": {"enabled": False, "reason": "no CUDA GPU available"},
        "devices": [],
        "sources": {MLP_PY: {"5": RELU_LINE, "6": "        return x + self.b"}, RUN: {"10": "y = model(x)"}},
    }
    return Session.from_dict(b.session(meta))


@pytest.fixture(scope="module")
def relu_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("relu") / "relu.html"
    write_html(_relu_session(), path)
    return path


def test_search_totals_keep_ops_apart_from_lines(open_report: Any, relu_html: Path, artifacts: Path) -> None:
    r = open_report(relu_html)
    page = r.page

    def status_after(query: str, starts: str) -> str:
        page.fill("#search", query)
        page.wait_for_function(
            "(s) => document.querySelector('.search-status').textContent.startsWith(s)", arg=starts
        )
        return page.inner_text(".search-status")

    # aten::relu alone (3 of 20 µs per step), and the line apart: it costs its linears too.
    assert status_after("relu", "1 op/kernel") == (
        "1 op/kernel match · 3.0µs (15.0%) | 1 line match · 15.0µs (75.0%)"
    )
    # Four ops, none below another; two lines of mlp.py, and the run.py line above them: its
    # file name does not hold "mlp.py", so each line counts once.
    assert status_after("aten::", "4 op") == "4 op/kernel matches · 20.0µs (100%)"
    assert status_after("mlp.py", "2 line") == "2 line matches · 20.0µs (100%)"
    # All three lines hold an "x": the two mlp.py lines run below run.py's, so their cost is in
    # its total already (20 µs, not 40).
    assert status_after("x", "3 line") == "3 line matches · 20.0µs (100%)"
    _save(page, artifacts, "search_split.png")


def test_source_margin_stays_in_view_on_long_lines(
    open_report: Any, relu_html: Path, artifacts: Path
) -> None:
    r = open_report(relu_html)
    page = r.page
    page.click("button[data-tab=source]")
    page.click(".src-files button.file[data-file$='mlp.py']")
    main = page.locator(".src-main")
    row = page.locator("table.code tr[data-line='5']")
    assert row.locator("td").nth(4).inner_text() == RELU_LINE.rstrip()
    scroll = r.js(
        "() => { const m = document.querySelector('.src-main'); return m.scrollWidth - m.clientWidth; }"
    )
    assert scroll > 200, "the long line overflows the pane"
    r.js("() => { document.querySelector('.src-main').scrollLeft = 1e6; }")
    page.wait_for_timeout(100)
    pane = main.bounding_box()
    for i, text in enumerate(["15.0µs", "15.0µs", "5"], start=1):  # self, total, line number
        cell = row.locator("td").nth(i)
        box = cell.bounding_box()
        assert cell.inner_text() == text
        assert pane["x"] <= box["x"] and box["x"] + box["width"] <= pane["x"] + pane["width"], (i, box, pane)
        # and on top: what the browser shows at the cell's centre is the cell itself
        hit = r.js(
            "([x, y]) => document.elementFromPoint(x, y).closest('td') === "
            f"document.querySelectorAll(\"table.code tr[data-line='5'] td\")[{i}]",
            [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
        )
        assert hit, i
    code = row.locator("td").nth(4).bounding_box()
    assert code["x"] < pane["x"], "the code itself scrolled"
    _save(page, artifacts, "source_long_line.png")


def test_counts_are_whole_when_whole_and_zero_has_a_unit(open_report: Any, relu_html: Path) -> None:
    r = open_report(relu_html)
    counts = "() => [1, 17 / 17, 0.96, 6.12, 0.01, 0].map(dlpt.fmtCount)"
    assert r.js(counts) == ["1", "1", "1", "6.1", "<0.1", "0"]
    assert r.js("() => dlpt.fmtTime(0)") == "0s"
    page = r.page
    page.select_option("#metric", "calls")
    rows = page.locator(".pane[data-pane=topdown] tbody tr")
    copy = rows.filter(has_text="aten::copy_").first.locator("td").all_inner_texts()
    assert copy[3] == "1"  # one call per step, written as a whole number


def test_inline_notebook_report_loads_in_its_frame(browser: Any, tmp_path: Path, artifacts: Path) -> None:
    """What ``%dlpt --inline-html`` displays: the report in a sandboxed iframe of the notebook's
    page. It must load there, draw, and stay quiet (no errors, nothing fetched)."""
    from dlpt.notebook.inline import inline_report

    path = tmp_path / "notebook.html"
    path.write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>a notebook</title></head><body>"
        f"<div class='output'>{inline_report(Session.from_dict(S.gpt_compiled()))}</div></body></html>",
        encoding="utf-8",
    )
    page = browser.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on(
        "request",
        lambda r: problems.append(r.url) if not r.url.startswith(("file:", "about:", "data:")) else None,
    )
    try:
        page.goto(path.resolve().as_uri())
        report = page.frame_locator("iframe.dlpt-report")
        report.locator("header.topbar").wait_for()
        assert report.locator(".topbar .title").inner_text() == "examples/compiled_gpt.py"
        frame = next(f for f in page.frames if f is not page.main_frame)
        assert frame.evaluate("() => dlpt.app.flame.items.length") > 10
        assert page.evaluate("() => document.querySelector('iframe').getBoundingClientRect().height") >= 700
        _save(page, artifacts, "inline_report.png")
        assert not problems, problems
    finally:
        page.close()


# The timeline's drawn slices by name, and where one of them is on the page.
TIMELINE_NAMES_JS = """() => { const t = dlpt.app.timeline, s = dlpt.app.raw.strings;
  return t.items.map(it => s[t.raw.slices[it[3]][4]]); }"""
TIMELINE_SLICE_JS = """(name) => { const t = dlpt.app.timeline, s = dlpt.app.raw.strings;
  const it = t.items.find(i => s[t.raw.slices[i[3]][4]] === name), b = t.canvas.getBoundingClientRect();
  return [b.left + it[0], b.top + it[1], it[2]]; }"""


def test_the_timeline_view_draws_a_step_and_names_slices_as_text(
    open_report: Any, tmp_path: Path, artifacts: Path
) -> None:
    from tests.timeline_sessions import timeline_meta

    tl = timeline_meta()
    hostile = "<img src=x onerror=alert(1)>\x1b[2J"
    tl["strings"][tl["strings"].index("aten::linear")] = hostile
    tl["first_step"] = 15  # the window began at the run's step 15 (issue 48)
    meta = S.gpt_eager()["meta"]
    meta["timeline"] = tl
    path = tmp_path / "timeline.html"
    write_html(Session.from_dict({**S.gpt_eager(), "meta": meta}), path)
    r = open_report(path)
    page = r.page
    page.wait_for_selector("section.timeline canvas.timeline-canvas")
    lanes = r.js("() => dlpt.app.timeline.lanes.map(l => l[0])")
    assert lanes == ["steps", "MainThread (ops)", "MainThread (Python, sampled)", "GPU 0 stream 7"]
    # Step 1 of 2: its slices are drawn (the op, its launch and sync, the kernel, sampled frames).
    drawn = r.js(TIMELINE_NAMES_JS)
    assert {"cuLaunchKernel", "gemm_kernel", "cuStreamSynchronize", "step", "<module>", hostile} <= set(drawn)
    assert page.inner_text("section.timeline .panel-head").count("step 15 (1/2 of the window)") == 1
    # Hover the op: its card names it (as text) and its line.
    x, y, w = r.js(TIMELINE_SLICE_JS, hostile)
    page.mouse.move(x + max(1, w / 2), y + 8)
    page.wait_for_selector(".timeline-tip", state="visible")
    card = page.inner_text(".timeline-tip")
    assert "train.py:40 step" in card and "<img src=x" in card
    assert r.js("() => document.querySelectorAll('img, iframe').length") == 0
    _save(page, artifacts, "timeline.png")
    page.click("section.timeline button:has-text('step \u203a')")
    assert "step 16 (2/2 of the window)" in page.inner_text("section.timeline .panel-head")
    assert r.js("() => dlpt.app.timeline.items.length") > 0  # the samples of step 2


def test_source_view_shows_a_sampled_kernel_file(open_report: Any, tmp_path: Path, artifacts: Path) -> None:
    """--pc-sampling: the generated kernel's file is listed with its samples, and each sampled
    line shows its samples, share and top stall reasons beside the code from the session."""
    from dlpt.capture.pc_annotate import annotate_session
    from tests.unit.test_pc_tree import KERNEL_SRC, _sampled

    kernel = tmp_path / "torchinductor_me" / "ab" / "cab.py"
    kernel.parent.mkdir(parents=True)
    kernel.write_text(KERNEL_SRC)
    d = _sampled(str(kernel))
    annotate_session(d["nodes"], d["meta"])
    kernel.unlink()  # the report reads the session only
    path = tmp_path / "sampled.html"
    write_html(Session.from_dict(d), path)
    r = open_report(path)
    page = r.page
    page.click("button[data-tab=source]")
    button = page.locator(".src-files button.file[data-file$='cab.py']")
    assert "1,000 samples" in button.inner_text()
    button.click()
    cells = page.locator("table.code tr[data-line='4'] td").all_inner_texts()
    assert cells[1:5] == ["700", "70.0%", "4", "long_scoreboard 57%, math_pipe_throttle 43%"]
    assert cells[5] == "    tmp1 = tl_math.exp(tmp0)"
    assert page.locator("table.code tr[data-line='4'] .heat-bar").count() == 1
    assert "triton_red_fused__log_softmax_nll_loss_1" in page.inner_text(".src-main")
    _save(page.locator(".tabs"), artifacts, "source-sampled.png")


def test_the_page_across_ranks_names_the_straggler_and_its_line(
    open_report: Any, tmp_path: Path, artifacts: Path
) -> None:
    from dlpt.analysis.ranks.merge import rank_set
    from dlpt.model.session import Session
    from dlpt.renderers.html.ranks_page import write_ranks_html
    from dlpt.views.ranks import ranks_view
    from tests import rank_sessions as R

    sessions = [
        R.ddp_gpu(r, 3, comm_ns=1_000_000, exposed_ns=500_000, sleep_ns=8_000_000)
        if r == 1
        else R.ddp_gpu(r, 3, comm_ns=9_000_000, blocked_ns=8_300_000, exposed_ns=8_500_000)
        for r in range(3)
    ]
    rep = ranks_view(rank_set([(f"run.rank{r}.json", s) for r, s in enumerate(sessions)]))
    path = tmp_path / "ranks.html"
    write_ranks_html(rep, path)
    r = open_report(path)
    page = r.page
    head = page.inner_text(".header").replace("\n", " ")
    assert "straggler: rank 1" in head and "waited 8.00ms per step" in head
    assert "+8.00ms host" in head and "train.py:33" in head and "time.sleep(0.02)" in head
    # The step across ranks in the terminal's words (RanksView.step_spread, worded twice).
    assert "step time per rank: 40.00ms on every rank" in head
    rows = page.locator("#rank-table tbody tr")
    assert rows.count() == 3 and "straggler" in rows.nth(1).inner_text()
    assert page.locator("#steps .strip").count() == 3
    assert page.locator("#steps .strip").first.locator(".step").count() == R.STEPS
    first = page.locator("#lines tbody tr").first
    assert "model.py:11" in first.inner_text()  # the all-reduce's line costs most on the waiting ranks
    _save(page, artifacts, "ranks.png", None)
    page.fill("#search", "time.sleep")
    page.select_option("#metric", "host")
    page.wait_for_function("() => document.querySelectorAll('#lines tbody tr').length === 1")
    assert "r1" in page.locator("#lines tbody tr").first.inner_text()
    # Each rank's untraced step across ranks, as the terminal words it (a page of its own).
    spread_path = tmp_path / "spread.html"
    timed = []
    for rank, ms in enumerate((9.5, 30.4, 12.0)):
        d = copy.deepcopy(sessions[rank].to_dict())
        keys = ("median_ns", "mean_ns", "min_ns", "max_ns", "p10_ns", "p90_ns")
        d["meta"]["step_time"] = {"untraced": {"n": 8, **dict.fromkeys(keys, int(ms * 1e6))}}
        timed.append(Session.from_dict(d))
    write_ranks_html(ranks_view(rank_set([(f"r{i}.json", t) for i, t in enumerate(timed)])), spread_path)
    spread_head = open_report(spread_path).page.inner_text(".header").replace("\n", " ")
    assert (
        "measured without dlpt's cost): min 9.50ms (rank 0), median 12.00ms, max 30.40ms (rank 1)"
        in spread_head
    )
    # A rank with too few counted steps: no verdict, and why (RanksView.not_judged_why, as the terminal).
    d = copy.deepcopy(sessions[0].to_dict())
    d["meta"]["steps"]["profiled"], d["meta"]["step_wall_ns"] = 2, d["meta"]["step_wall_ns"][:2]
    few = [Session.from_dict(d), *sessions[1:]]
    few_path = tmp_path / "few.html"
    write_ranks_html(ranks_view(rank_set([(f"r{i}.json", t) for i, t in enumerate(few)])), few_path)
    few_head = open_report(few_path).page.inner_text(".header").replace("\n", " ")
    assert "stragglers not judged: counted steps: rank 0 2, fewer than the 3" in few_head
    assert "straggler: rank 1" not in few_head


def test_the_page_across_ranks_draws_each_ranks_gpu_streams_on_one_clock(
    open_report: Any, tmp_path: Path, artifacts: Path
) -> None:
    from dlpt.analysis.ranks.merge import rank_set
    from dlpt.renderers.html.ranks_page import write_ranks_html
    from dlpt.views.ranks import ranks_view
    from tests import rank_sessions as R
    from tests.timeline_sessions import timeline_meta

    sessions = []
    for r in range(2):
        s = R.ddp_gpu(r, 2)
        tl = timeline_meta()
        tl["start_ns"] += r * 500_000  # rank 1 half a millisecond later
        s.set_meta("timeline", tl)
        sessions.append(s)
    path = tmp_path / "ranks_timeline.html"
    write_ranks_html(ranks_view(rank_set([(f"run.rank{r}.json", s) for r, s in enumerate(sessions)])), path)
    r = open_report(path)
    page = r.page
    page.wait_for_selector("section.timeline canvas.timeline-canvas")
    head = page.inner_text("section.timeline .panel-head")
    assert "GPU timelines across ranks" in head and "ranks 0, 1: one host's clock" in head
    lanes = r.js("() => dlpt.app.timeline.lanes.map(l => l[0])")
    assert lanes == ["steps (every rank)", "rank 0 \u00b7 GPU 0 stream 7", "rank 1 \u00b7 GPU 0 stream 7"]
    drawn = r.js("""() => { const t = dlpt.app.timeline, s = t.str;
      return t.items.map(it => s[t.raw.slices[it[3]][4]]); }""")
    assert drawn.count("gemm_kernel") == 2 and "step 1" in drawn
    _save(page.locator("section.timeline"), artifacts, "ranks_timeline.png")
