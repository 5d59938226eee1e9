"""``dlpt mcp`` end to end: a real server process (``python -m dlpt mcp``) and the MCP SDK's own
client over stdio. It profiles examples/mlp_train.py within a step bound, reads the top lines and
one line's detail, profiles again and compares; bad input comes back as a tool error of one line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from tests.cli.helpers import REPO, env

REQUIRED = {"profile", "summary", "top_lines", "explain_line", "compare", "suggestions", "verify"}
#: The mlp example's own 200 steps, stopped by the tool after 6 counted ones (warm-up 2).
PROFILE = {
    "command": ["examples/mlp_train.py", "--steps", "200"],
    "steps": 6,
    "time_limit_s": 120,
    "options": ["--skip-first", "2"],
}


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


async def _session(tmp: Path) -> dict[str, Any]:
    # TMPDIR: the sessions the server keeps for its client go under the test's directory.
    server_env = {**env(), "TMPDIR": str(tmp)}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "dlpt", "mcp"], env=server_env, cwd=str(REPO)
    )
    seen: dict[str, Any] = {}
    with anyio.fail_after(300):
        async with Client(params, read_timeout_seconds=200) as client:
            seen["tools"] = {t.name for t in (await client.list_tools()).tools}
            seen["missing"] = await client.call_tool("summary", {"session": "no/such/run.json"})
            seen["bad_line"] = None
            first = _data(await client.call_tool("profile", PROFILE))
            seen["first"] = first
            path = first["session"]
            seen["top"] = _data(await client.call_tool("top_lines", {"session": path, "n": 5}))
            where = seen["top"]["lines"][0]["where"]
            seen["explain"] = _data(await client.call_tool("explain_line", {"session": path, "line": where}))
            seen["bad_line"] = await client.call_tool(
                "explain_line", {"session": path, "line": "nowhere.py:1"}
            )
            second = _data(await client.call_tool("profile", PROFILE))
            seen["compare"] = _data(
                await client.call_tool("compare", {"base": path, "new": second["session"]})
            )
    return seen


def test_a_real_client_profiles_reads_top_lines_and_compares(tmp_path: Path) -> None:
    seen = anyio.run(_session, tmp_path)
    assert seen["tools"] >= REQUIRED

    for bad in (seen["missing"], seen["bad_line"]):  # MCP tool errors, one line, no traceback
        assert bad.is_error
        text = bad.content[0].text
        assert "Traceback" not in text and "\n" not in text.strip()
    assert "no/such/run.json" in seen["missing"].content[0].text
    assert "no line nowhere.py:1" in seen["bad_line"].content[0].text

    first = seen["first"]
    assert Path(first["session"]).parent.parent == tmp_path
    assert first["run"]["stopped"] == "steps"  # the step bound ended it, the session kept
    assert first["summary"]["format"] == "dlpt-query"
    assert first["summary"]["header"]["steps"]["counted"] >= 6

    lines = seen["top"]["lines"]
    assert lines and all(row["file"].endswith("mlp_train.py") for row in lines)
    assert seen["explain"]["line"]["where"] == lines[0]["where"]

    c = seen["compare"]
    assert c["format"] == "dlpt-compare" and c["tested"]
    assert sum(c["verdicts"].values()) == c["lines_compared"] > 0
    assert {row.get("verdict") for row in c["lines"]} <= {"slower", "faster", "same", "can't tell"}
