"""The HTML report without a browser: the embedded model says what the terminal report says,
the document is self-contained and inert against hostile names, and stays small."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from dlpt.model.metrics import METRICS
from dlpt.model.session import Session
from dlpt.renderers.html import render_html
from dlpt.renderers.html.data import KEYS, METRIC_KEYS, build_model
from dlpt.trees.folding import report_tree
from dlpt.trees.node_contexts import CTX
from tests import sessions as S

MAX_10K_BYTES = 3 * 1024 * 1024


def embedded(html: str) -> dict:
    """The JSON model inside a report."""
    m = re.search(r'<script type="application/json" id="dlpt-data">(.*?)</script>', html, re.S)
    assert m, "no data block"
    return json.loads(m.group(1))


def test_metric_keys_evaluate_like_the_python_metrics() -> None:
    assert set(METRIC_KEYS) == set(METRICS)
    rng = random.Random(0)
    for _ in range(50):
        m = {k: rng.randint(0, 10**9) for k in (*KEYS, "min_ns", "max_ns")}
        for name, metric in METRICS.items():
            assert sum(m[k] for k in METRIC_KEYS[name]) == metric(m), name


def _inclusive(model: dict) -> list[dict[str, int]]:
    nodes = model["nodes"]
    n = len(nodes["parent"])
    inc = [dict.fromkeys(KEYS, 0) for _ in range(n)]
    for key, (ids, vals) in nodes["m"].items():
        for i, v in zip(ids, vals, strict=True):
            inc[i][key] += v
    for i in range(n - 1, 0, -1):
        for k, v in inc[i].items():
            inc[nodes["parent"][i]][k] += v
    return inc


def test_model_holds_the_report_tree() -> None:
    session = Session.from_dict(S.gpt_compiled())
    model = build_model(session)
    root = report_tree(session)
    names = [model["strings"][i] for i in model["nodes"]["name"]]
    files = {model["strings"][i] for i in model["nodes"]["file"]}
    assert len(names) == sum(1 for _ in _walk(root))
    assert _inclusive(model)[0] == {k: root.inclusive.get(k, 0) for k in KEYS}
    assert not any("site-packages" in f for f in files), "library frames are folded by default"
    assert "triton_poi_fused_gelu_view_10 [0_forward]" in names
    assert model["metric"] == "gpu" and model["steps"] == S.STEPS
    assert [m["name"] for m in model["metrics"]][:2] == ["gpu", "cpu"]
    shown = build_model(session, metric="cpu", show_all=True)
    assert shown["metric"] == "cpu" and shown["show_all"]
    assert any("site-packages" in shown["strings"][i] for i in shown["nodes"]["file"])


def _walk(root):
    stack = [root]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n.children)


def test_context_bits_mark_passes_and_compiled_work() -> None:
    def ctx_of(model: dict, name: str) -> int:
        i = next(i for i, s in enumerate(model["nodes"]["name"]) if model["strings"][s] == name)
        return model["nodes"]["ctx"][i]

    compiled = build_model(Session.from_dict(S.gpt_compiled()))
    fwd = ctx_of(compiled, "triton_poi_fused_gelu_view_10 [0_forward]")
    bwd = ctx_of(compiled, "triton_poi_fused_gelu_gelu_backward_view_4 [0_backward]")
    assert fwd & CTX["compiled"] and fwd & CTX["forward"] and not fwd & CTX["backward"]
    assert bwd & CTX["compiled"] and bwd & CTX["backward"] and not bwd & CTX["forward"]
    eager = build_model(Session.from_dict(S.gpt_eager()))
    # aten::add has no backward here, so its <forward> row is dropped; the kernel stays forward.
    add = ctx_of(eager, S.ADD)
    assert add & CTX["forward"] and not add & CTX["compiled"]
    # The optimizer's op has a <forward> phase like every outermost op, yet is neither pass.
    adam = ctx_of(eager, S.ADAM)
    assert adam & CTX["optimizer"] and not adam & (CTX["forward"] | CTX["backward"])


def test_header_says_when_torch_compile_attribution_degraded() -> None:
    """The page shows every warning of the terminal header, the compile integration's included."""
    raw = S.gpt_compiled()
    raw["meta"]["capture"] = {
        "compile_failures": {"line_map": 3, "compile_metrics": 1},
        "inductor_unmapped_frames": 2,
        "inductor_unmapped_kernels": 12,
    }
    warnings = build_model(Session.from_dict(raw))["header"]["warnings"]
    assert {
        "level": "warn",
        "text": "12 Inductor kernel launches could not be mapped to model lines "
        "(from 2 generated lines; they stay with the compiled call)",
    } in warnings
    assert {
        "level": "warn",
        "text": "torch.compile attribution incomplete: compile_metrics x1, "
        "line_map x3 failed (details: DLPT_LOG=debug)",
    } in warnings
    raw["meta"]["capture"] = {"compile_failures": {}}
    warnings = build_model(Session.from_dict(raw))["header"]["warnings"]
    assert not any("Inductor" in w["text"] or "attribution" in w["text"] for w in warnings)


def test_flat_rows_and_sources_come_from_the_session() -> None:
    model = build_model(Session.from_dict(S.gpt_eager()))
    s = model["strings"]
    lines = {
        (s[model["nodes"]["file"][r[0]]], model["nodes"]["line"][r[0]]): r for r in model["flat"]["line"]
    }
    gelu = lines[(S.GPT_PY, 44)]
    gpu = [KEYS.index(k) for k in METRIC_KEYS["gpu"]]
    assert sum(gelu[2][i] for i in gpu) == (S.GELU_FWD_NS + S.GELU_BWD_NS) * S.LAYERS * S.STEPS
    src = {s[int(f)]: {n: s[t] for n, t in pairs} for f, pairs in model["sources"].items()}
    assert src[S.GPT_PY][44] == S.GPT_SOURCE[44]
    assert model["has_sources"]


def test_a_report_never_reads_the_files_a_session_names(tmp_path: Path) -> None:
    secret = tmp_path / "model.py"
    secret.write_text("x = 1\ny = 'SECRET-LINE-TEXT'\n")
    b = S.Builder(steps=1)
    b.op(b.frame(0, str(secret), 2, "f"), "aten::add", cpu_ns=1000)
    html = render_html(Session.from_dict(b.session({})))
    assert "SECRET-LINE-TEXT" not in html
    assert embedded(html)["has_sources"] is False


def test_hostile_strings_stay_data() -> None:
    html = render_html(Session.from_dict(S.hostile()))
    # Exactly our own tags: one data block, one script, one style; nothing a name opened.
    assert html.lower().count("<script") == 2 and html.lower().count("</script") == 2
    assert html.lower().count("<style") == 1
    for bad in ("<img", "<svg", "<b>", "<i>", "</title><script>"):
        assert bad not in html
    model = embedded(html)
    assert S.HOSTILE_KERNEL in model["strings"] and S.HOSTILE_FILE in model["strings"]
    assert S.HOSTILE_TEXT in model["strings"], "the text is kept, as data"
    title = re.search(r"<title>(.*?)</title>", html, re.S).group(1)
    assert "<" not in title and "&lt;/title&gt;" in title


def test_document_is_self_contained() -> None:
    html = render_html(Session.from_dict(S.gpt_compiled()))
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert not re.search(r"<(link|img|iframe)\b|<script\b[^>]*\bsrc\s*=", html, re.I), (
        "nothing loaded from outside"
    )
    assert "http://" not in html and "https://" not in html


def test_ten_thousand_nodes_stay_small() -> None:
    d = S.big(10_000)
    session = Session.from_dict(d)
    html = render_html(session)
    assert len(session.nodes) >= 10_000
    assert len(html.encode()) < MAX_10K_BYTES, f"{len(html.encode()) / 1e6:.2f} MB"
    assert len(html) < len(json.dumps(d)), "smaller than the session itself"


def test_header_lists_the_suggestions_as_the_terminal_words_them() -> None:
    """Suggestions (dlpt.analysis.suggest) reach the page's header with their line, evidence, action
    and basis; one-off (compile time) gains after the per-step ones."""
    insights = build_model(Session.from_dict(S.gpt_compiled()))["header"]["insights"]
    found = insights["suggestions"]
    assert [s["gain"] for s in found] == ["-150.0µs/step", "-6.30s once", "-2.20s once"]
    item, recompile, brk = found
    assert item["where"] == "compiled_gpt.py:96 main" and item["file"] == S.RUN_PY and item["line"] == 96
    assert ".item()" in item["title"] and item["action"] and item["basis"]
    assert brk["title"] == "torch.compile graph break" and brk["line"] == 44
    assert "expected 256, actual 128" in recompile["evidence"]
    assert insights["lines"] == []  # no FLOPs and no GPU step time line in this session


def test_header_shows_mfu_when_the_session_has_flops() -> None:
    raw = S.gpt_eager()
    for n in raw["nodes"]:
        if n["kind"] == "op" and n["name"] in ("aten::addmm", "aten::mm"):
            n["m"]["flops"] = 10**12 * S.STEPS
            n.setdefault("x", {})["flop_dtype"] = "BFloat16"
    lines = build_model(Session.from_dict(raw))["header"]["insights"]["lines"]
    assert lines[0].startswith("MFU ") and "model FLOPs per step / step wall / peak" in lines[0]
    assert "bf16 dense, H200 SXM datasheet" in lines[0]
