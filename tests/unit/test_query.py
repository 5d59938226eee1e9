"""``dlpt query``'s answers (docs/query-format.md): the schema and its version, what the top lines
and one line's detail hold, the size of a nanoGPT-size answer, every key documented, bad input
as UsageError, and ``dlpt.load(path).query()`` giving the same answer as the command line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import dlpt
from dlpt.errors import UsageError
from dlpt.model.session import Session
from dlpt.query import FORMAT, VERSION, query
from dlpt.query.text import answer_text
from tests.diff_cases import session as spread_session
from tests.sessions import gpt_compiled, gpt_eager, hostile

DOC = Path(__file__).resolve().parents[2] / "docs" / "query-format.md"


def _size(answer: dict) -> int:
    return len(json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode())


@pytest.mark.parametrize("make", [gpt_eager, gpt_compiled])
def test_a_nanogpt_size_top_20_answer_is_small_and_names_its_schema(make) -> None:
    a = query(Session.from_dict(make()), top=20)
    assert (a["format"], a["version"]) == (FORMAT, VERSION)
    assert _size(a) <= 20_000
    assert a["per"] == "step" and a["header"]["steps"]["counted"] == 12
    assert a["metric"]["name"] == "gpu"


def test_top_lines_rank_by_own_cost_and_add_up_to_the_total() -> None:
    a = query(Session.from_dict(gpt_eager()), top=200)
    own = [row["self"] for row in a["lines"]]
    assert own == sorted(own, reverse=True) and own[0] > 0
    assert len(a["lines"]) == a["lines_with_cost"]
    # Each line's own cost, plus the work on no line, is the total (rounding aside).
    assert abs(sum(own) + a["on_no_line"] - a["total"]) <= len(own)
    top = a["lines"][0]
    assert top["where"] == "gpu_gpt.py:31" and "scaled_dot_product_attention" in top["text"]
    assert top["kernels"] > 0 and "flash" in top["top_kernel"]
    assert 0 < top["share"] <= 1


def test_lines_carry_their_95_percent_interval_when_the_session_saved_spreads() -> None:
    a = query(spread_session(1, [100.0, 600.0, 200.0]), top=3)
    assert [row["line"] for row in a["lines"]] == [101, 102, 100]
    for row in a["lines"]:
        assert 0 < row["ci95"] < row["self"]
    no_moments = query(spread_session(1, [100.0, 600.0], moments=False), top=3)
    assert all("ci95" not in row for row in no_moments["lines"])


def test_one_lines_detail_names_its_kernels_callers_and_source() -> None:
    a = query(Session.from_dict(gpt_eager()), top=0, line="gpu_gpt.py:31")
    assert a["lines"] == []
    d = a["line"]
    assert d["where"] == "gpu_gpt.py:31"
    assert any(leaf["kind"] == "kernel" and "flash" in leaf["name"] for leaf in d["leaves"])
    assert d["ops_by_name"] and d["callers"]
    assert any(n == 31 for n, _ in d["source"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"line": "nowhere.py:3"}, "no line nowhere.py:3"),
        ({"line": "gpu_gpt.py"}, "expected FILE:LINE"),
        ({"top": -1}, "top must be"),
        ({"top": True}, "top must be"),
        ({"metric": "bogus"}, "bogus"),
    ],
)
def test_bad_arguments_are_usage_errors(kwargs, message) -> None:
    with pytest.raises(UsageError, match=message):
        query(Session.from_dict(gpt_eager()), **kwargs)


def _keys(value: object, out: set[str]) -> set[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(k)
            # Stall reasons and the verdict counts are data, not schema keys.
            if k not in ("stalls", "verdicts"):
                _keys(v, out)
    elif isinstance(value, list):
        for v in value:
            _keys(v, out)
    return out


def test_every_key_an_answer_holds_is_documented() -> None:
    documented = set(re.findall(r"`([a-z_0-9]+)`", DOC.read_text()))
    answers = [
        query(Session.from_dict(gpt_eager()), top=200, line="gpu_gpt.py:31"),
        query(spread_session(1, [100.0, 600.0, 200.0]), top=3),
    ]
    missing = set().union(*(_keys(a, set()) for a in answers)) - documented
    assert not missing, f"keys not in docs/query-format.md: {sorted(missing)}"


def test_text_of_a_hostile_session_escapes_control_characters() -> None:
    text = answer_text(query(Session.from_dict(hostile()), top=5))
    assert "\x1b" not in text and "\\x1b" in text


def test_dlpt_load_query_is_the_answer_of_the_saved_file(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    Session.from_dict(gpt_eager()).save(str(path))
    loaded = dlpt.load(path)
    assert isinstance(loaded, Session)
    a = loaded.query(top=3, line="gpu_gpt.py:31")
    assert a["session"]["path"] == str(path)
    assert a == query(Session.load(str(path)), top=3, line="gpu_gpt.py:31", path=str(path))
    assert loaded.query(top=3) is not loaded.query(top=3)  # fresh answers from one view
    assert loaded.view() is loaded.view()


def test_the_ranks_of_a_job_name_their_straggler() -> None:
    # Rank 1 sleeps 20 ms a step while rank 0 waits for it in an all-reduce (test_rank_arrivals).
    from dlpt.query.ranks import across
    from tests.unit.test_rank_arrivals import MS, _job

    wait = {0: {"comm_ns": 21 * MS, "exposed_ns": 21 * MS, "blocked_ns": 22 * MS}, 1: {"sleep_ns": 20 * MS}}
    a = across(_job({0: [(30 * MS, 21 * MS, 0.8)], 1: [(10 * MS, 1 * MS, 1.0)]}, args=wait))
    assert a["sessions"] == 2 and [r["rank"] for r in a["per_rank"]] == [0, 1]
    (s,) = a["stragglers"]
    assert s["rank"] == 1 and s["named"] and abs(s["waited_ns"] - 16 * MS) < 0.01 * 16 * MS
