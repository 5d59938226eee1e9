"""``dlpt query`` and ``dlpt verify`` as commands: answers on stdout (text or JSON), bad input as
one line and status 2, and verify's exit status on real runs of bench/known_answers/lines.py (a
line made 3x heavier fails or, on a host too busy to tell, is "can't tell": never a pass; the
same program again never fails)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from dlpt.model.session import Session
from tests.cli.helpers import REPO, Job, run, run_many
from tests.sessions import gpt_eager

LINES = REPO / "bench" / "known_answers" / "lines.py"


def test_query_answers_in_text_and_json_and_refuses_bad_input(tmp_path: Path) -> None:
    Session.from_dict(gpt_eager()).save(str(tmp_path / "run.json"))
    (tmp_path / "bad.json").write_text("{not json")
    r = run_many(
        {
            "text": Job(["query", "run.json", "--top", "3"], tmp_path),
            "json": Job(["query", "run.json", "--json", "--line", "gpu_gpt.py:31"], tmp_path),
            "missing": Job(["query", "nope.json"], tmp_path),
            "corrupt": Job(["query", "bad.json"], tmp_path),
            "no line": Job(["query", "run.json", "--line", "gpu_gpt.py:9999"], tmp_path),
            "bad top": Job(["query", "run.json", "--top", "x"], tmp_path),
        }
    )
    assert r["text"].rc == 0 and "gpu_gpt.py:31" in r["text"].out and "suggestions:" in r["text"].out
    a = json.loads(r["json"].out)
    assert a["format"] == "dlpt-query" and a["line"]["where"] == "gpu_gpt.py:31"
    for name in ("missing", "corrupt", "no line", "bad top"):
        res = r[name]
        assert res.rc == 2, (name, res.err)
        assert res.out == "" and len(res.err.strip().splitlines()) == 1 and "Traceback" not in res.err


def test_verify_refuses_bad_input_with_status_2(tmp_path: Path) -> None:
    Session.from_dict(gpt_eager()).save(str(tmp_path / "base.json"))
    r = run_many(
        {
            "no command": Job(["verify", "base.json"], tmp_path),
            "no base": Job(["verify", "nope.json", "--", "-c", "pass"], tmp_path),
            "bad runs": Job(["verify", "base.json", "--runs", "0", "--", "-c", "pass"], tmp_path),
            "fails": Job(["verify", "base.json", "--", "-c", "raise SystemExit(4)"], tmp_path),
        }
    )
    for name, res in r.items():
        assert res.rc == 2, (name, res.err)
        assert "Traceback" not in res.err and res.err.startswith("dlpt: verify:"), (name, res.err)


def _verify(tmp_path: Path, counts: list[str], *extra: str) -> tuple[int, dict]:
    r = run(Job(["verify", "base.json", "--json", *extra, "--", "lines.py", "20", *counts], tmp_path))
    assert r.rc in (0, 1, 3), r.err
    return r.rc, json.loads(r.out)


def test_verify_judges_a_real_change_against_its_base(tmp_path: Path) -> None:
    shutil.copy(LINES, tmp_path / "lines.py")
    base = run(
        Job(
            ["-q", "--no-report", "--skip-first", "3", "-o", "base.json", "lines.py", "20", "10", "40", "20"],
            tmp_path,
        )
    )
    assert base.rc == 0, base.err
    text = LINES.read_text().splitlines()
    line_a, line_b = (next(i for i, t in enumerate(text, 1) if f"# LINE-{x}" in t) for x in "AB")
    rc, v = _verify(tmp_path, ["10", "120", "20"], "--expect-faster", f"lines.py:{line_a}")  # LINE-B 3x
    assert v["format"] == "dlpt-verify" and v["status"] == rc
    assert "--skip-first" in v["flags"] and v["runs"][0]["exit"] == 0
    assert rc != 0  # LINE-B slower, LINE-A not faster: a failure, or can't tell on a busy host
    said = "\n".join(v["reasons"])
    if rc == 1:  # for LINE-B found slower, or LINE-A found not faster (else "can't tell" says so)
        assert f"lines.py:{line_b}: slower" in said or f"lines.py:{line_a}: expected faster" in said, said
    # LINE-A is never called faster: it is named as not faster, or as one that cannot be told.
    assert f"lines.py:{line_a}: expected faster" in said or f"lines.py:{line_a}: can't tell" in said, said
    rc, v = _verify(tmp_path, ["10", "40", "20"], "--max-regression", "100")  # the same program
    assert rc in (0, 3), v["reasons"]


def test_a_run_past_its_time_limit_is_stopped_and_keeps_what_it_captured(tmp_path: Path) -> None:
    from dlpt.cli.bounded_run import run_bounded

    shutil.copy(LINES, tmp_path / "lines.py")
    out = str(tmp_path / "long.json")
    r = run_bounded(
        ["lines.py", "1000000", "2", "4", "2"], out, ["--skip-first", "2"], time_limit=20, cwd=str(tmp_path)
    )
    assert (r.stopped, r.saved, r.status) == ("time limit", True, -15), r.output
    assert Session.load(out).typed_meta.profiled_steps > 0
