"""The MCP server's tools as functions (dlpt.cli.mcp_tools; the server itself: tests/cli/test_mcp.py):
their answers' shapes, one load per version of a session file, bad arguments as UsageError."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dlpt.cli.mcp_tools import Tools
from dlpt.errors import UsageError
from dlpt.model.session import Session
from tests.diff_cases import session as spread_session
from tests.sessions import gpt_eager


@pytest.fixture
def saved(tmp_path: Path) -> str:
    path = tmp_path / "run.json"
    Session.from_dict(gpt_eager()).save(str(path))
    return str(path)


def test_answers_of_one_session_fold_it_once(saved: str, tmp_path: Path) -> None:
    t = Tools(str(tmp_path))
    assert t.summary(saved)["format"] == "dlpt-query"
    top = t.top_lines(saved, n=2)
    assert len(top["lines"]) == 2 and "header" not in top
    assert t.explain_line(saved, top["lines"][0]["where"])["line"]["where"] == top["lines"][0]["where"]
    assert t.suggestions(saved)["suggestions"]
    assert t.session(saved) is t.session(saved)
    before = t.session(saved)
    os.utime(saved, ns=(1, 1))  # another version of the file: loaded again
    assert t.session(saved) is not before


def test_compare_answers_with_diffs_verdicts(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    spread_session(1, [100.0, 600.0, 200.0]).save(str(a))
    spread_session(2, [100.0, 1200.0, 200.0]).save(str(b))
    c = Tools(str(tmp_path)).compare(str(a), str(b))
    assert c["format"] == "dlpt-compare" and c["tested"]
    assert c["lines"][0]["where"] == "model.py:101" and c["lines"][0]["verdict"] == "slower"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"command": ""}, "command is empty"),
        ({"command": "x.py", "options": ["-o", "elsewhere.json"]}, "not -o"),
        ({"command": "x.py", "time_limit_s": 0}, "time_limit_s"),
        ({"command": "x.py", "steps": -1}, "steps"),
    ],
)
def test_bad_profile_arguments_are_usage_errors(tmp_path: Path, kwargs, message) -> None:
    with pytest.raises(UsageError, match=message):
        Tools(str(tmp_path)).profile(**kwargs)


def test_a_missing_session_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"nope\.json"):
        Tools(str(tmp_path)).summary(str(tmp_path / "nope.json"))
