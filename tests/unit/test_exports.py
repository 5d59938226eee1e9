"""Exports: the speedscope file passes speedscope's own schema and its profiles carry the
session's totals; folded stacks sum to the session's totals and stay one stack per line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from dlpt.model.metrics import METRICS
from dlpt.model.session import Session
from dlpt.renderers.exports import folded, speedscope, write_export
from dlpt.renderers.exports.speedscope import SPEEDSCOPE_SCHEMA
from tests import sessions as S

SCHEMA = json.loads(
    (Path(__file__).parents[1] / "schemas" / "speedscope-file-format-schema.json").read_text()
)


def _session_total(session: Session, metric: str) -> int:
    """A metric's total straight from the node table (every record lands on one node)."""
    return sum(METRICS[metric](n["m"]) for n in session.nodes)


@pytest.mark.parametrize("make", [S.gpt_eager, S.gpt_compiled, S.hostile, lambda: S.big(2000)])
def test_speedscope_file_passes_the_schema(make) -> None:
    doc = speedscope(Session.from_dict(make()))
    jsonschema.Draft7Validator(SCHEMA).validate(doc)
    # And survives a JSON round trip (what is written is what validates).
    jsonschema.Draft7Validator(SCHEMA).validate(json.loads(json.dumps(doc)))


def test_speedscope_one_profile_per_metric_with_session_totals() -> None:
    session = Session.from_dict(S.gpt_compiled())
    doc = speedscope(session)
    by_name = {p["name"]: p for p in doc["profiles"]}
    expected = {m.label: _session_total(session, n) for n, m in METRICS.items() if _session_total(session, n)}
    assert set(by_name) == set(expected)
    for label, total in expected.items():
        p = by_name[label]
        assert sum(p["weights"]) == p["endValue"] == total, label
        assert len(p["samples"]) == len(p["weights"])
    assert by_name["GPU time (kernels + copies + memsets)"]["unit"] == "nanoseconds"
    assert by_name["kernel launches"]["unit"] == "none"
    assert by_name["bytes copied"]["unit"] == "bytes"
    # The metric speedscope opens first is the report's default (GPU time here)...
    assert doc["profiles"][doc["activeProfileIndex"]]["name"].startswith("GPU time")
    # ...or the one asked for.
    cpu = speedscope(session, metric="cpu")
    assert cpu["profiles"][cpu["activeProfileIndex"]]["name"] == METRICS["cpu"].label


def test_speedscope_stacks_run_from_the_root_to_the_leaf() -> None:
    doc = speedscope(Session.from_dict(S.gpt_compiled()))
    frames = doc["shared"]["frames"]
    gpu = doc["profiles"][doc["activeProfileIndex"]]
    stacks = [[frames[i]["name"] for i in s] for s in gpu["samples"]]
    gelu = next(s for s in stacks if s[-1] == "triton_poi_fused_gelu_view_10 [0_forward]")
    assert gelu[0] == "compiled_gpt.py:95 main"
    assert "gpu_gpt.py:44 forward" in gelu
    # Library frames are folded as in the terminal report; source lines carry file and line.
    assert not any("module.py" in f["name"] for f in frames)
    line = next(f for f in frames if f["name"] == "gpu_gpt.py:44 forward")
    assert line["file"] == S.GPT_PY and line["line"] == 44


def _folded_lines(text: str) -> list[tuple[list[str], int]]:
    out = []
    for line in text.splitlines():
        m = re.fullmatch(r"(.+) (\d+)", line)
        assert m, f"not a folded line: {line!r}"
        out.append((m.group(1).split(";"), int(m.group(2))))
    return out


# ids "metric=..." because tests/gpu/conftest.py skips every test with a "gpu" keyword off a GPU.
@pytest.mark.parametrize("metric", ["gpu", "cpu", "sync", "api", "kernels"], ids=lambda m: f"metric={m}")
def test_folded_stacks_sum_to_the_session_total(metric: str) -> None:
    session = Session.from_dict(S.gpt_compiled())
    lines = _folded_lines(folded(session, metric=metric))
    assert sum(v for _, v in lines) == _session_total(session, metric)
    stacks = [";".join(s) for s, _ in lines]
    assert len(stacks) == len(set(stacks)), "each stack once"


def test_folded_default_metric_and_show_all() -> None:
    session = Session.from_dict(S.gpt_eager())
    folded_default = folded(session)
    assert sum(v for _, v in _folded_lines(folded_default)) == _session_total(session, "gpu")
    assert "module.py" not in folded_default
    shown = folded(session, show_all=True)
    assert "module.py:1762 _call_impl" in shown
    assert sum(v for _, v in _folded_lines(shown)) == _session_total(session, "gpu")


def test_folded_names_cannot_break_the_format() -> None:
    d = S.hostile()
    d["nodes"][3]["name"] = "kernel;with;semicolons\nand a newline"
    text = folded(Session.from_dict(d))
    header, *lines = _folded_lines(text)
    assert header == (["# folded stacks written by dlpt"], 0)  # dlpt's mark: a stack of no samples
    assert len(lines) == 1
    stack, value = lines[0]
    assert stack[-1] == "kernel,with,semicolons and a newline"
    assert "\x1b" not in text and value == 5_000 * 2


def test_write_export_is_atomic_and_checks_the_format(tmp_path: Path) -> None:
    session = Session.from_dict(S.gpt_eager())
    out = tmp_path / "p.speedscope.json"
    # An export of an earlier dlpt (its name before the exporter): dlpt's own, so replaced.
    out.write_text(f'{{"$schema":"{SPEEDSCOPE_SCHEMA}","name":"x","exporter":"dlpt 0.0.1"}}')
    write_export(session, "speedscope", out)
    jsonschema.Draft7Validator(SCHEMA).validate(json.loads(out.read_text()))
    assert [p.name for p in tmp_path.iterdir()] == [out.name], "no temp file left behind"
    from dlpt.errors import UsageError

    with pytest.raises(UsageError, match="svg"):
        write_export(session, "svg", tmp_path / "x.svg")
