"""``python -m dlpt mcp``: a Model Context Protocol server over stdio, on the official ``mcp`` SDK
(the optional extra ``pip install 'dlpt[mcp]'``), whose tools profile a command and answer about
sessions (:mod:`dlpt.cli.mcp_tools`; docs/agents.md says what each returns).

Errors reach the client as MCP tool errors (``isError`` results) with one line of text, never a
traceback: what the caller got wrong (a missing session, a bad argument, a command that saved
nothing) says what it was; anything else is dlpt's own failure, logged with its traceback on the
``dlpt`` logger (``DLPT_LOG=debug``, on stderr) and named in one line. stdout is the protocol's:
nothing of dlpt or of a profiled program is written there (programs run as child processes).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any

from dlpt._version import __version__
from dlpt.cli.mcp_tools import TOOL_NAMES, Tools
from dlpt.cli.stdout_guard import say_line
from dlpt.errors import DlptError

__all__ = ["main", "build_server", "INSTRUCTIONS"]

_log = logging.getLogger("dlpt")

INSTRUCTIONS = (
    "dlpt profiles PyTorch programs line by line. profile runs a command under dlpt (a step bound and a "
    "time limit keep it short) and returns a summary and the session's path; summary, top_lines, "
    "explain_line and suggestions answer about a saved session; compare judges two sessions line by line; "
    "verify runs a command again as a base session was recorded and decides whether a line got slower. "
    "Costs are per step in ns (bytes for memory), each line's own cost with its 95% interval."
)

DESCRIPTIONS = {
    "profile": "Run a command (a Python script and its arguments, '-m module' or '-c code') under dlpt: "
    "stopped after `steps` counted steps (0: no bound) or `time_limit_s` seconds, keeping what it captured. "
    "`options` are dlpt's (e.g. ['--flops', '--memory']; steps come from the optimizer's step(), or "
    "['--step-on', 'generate'] for inference). Returns the session's path, how the run ended and "
    "a summary (header, top 5 lines, suggestions).",
    "summary": "The header of a saved session (steps, step time, dlpt's cost, totals, MFU, every fact with "
    "its basis), its top 5 lines, suggestions and ranks.",
    "top_lines": "The `n` source lines with the largest own cost per step (of `metric`; default GPU time, "
    "else CPU op time), each with its 95% interval, share, kernels, ops, FLOPs, bytes, memory, host time.",
    "explain_line": "One line's detail (`line`: 'train.py:42'): its own cost, kernels and copies, ops, "
    "callers and callees, source around it, the suggestions placed on it.",
    "suggestions": "The suggestions of a session: what was found, evidence, the change to make, the "
    "predicted gain per step and its basis.",
    "compare": "Compare two sessions line by line with dlpt diff's verdicts: slower, faster, same (no "
    "1.5x change fits the interval) or can't tell; with the run shift every line shares.",
    "verify": "Run `command` again as the `base` session was recorded and decide: status 0 no line "
    "significantly slower, 1 one is (or an expect_faster line did not get faster), 3 can't tell. Also "
    "the base's suggestions, predicted gain against measured.",
}


def _tool(fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """``fn`` with its failures as MCP tool errors of one line."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return fn(*args, **kwargs)
        except (DlptError, OSError, ValueError) as e:  # the caller's input: said as it is
            raise ToolError(str(e).splitlines()[0] if str(e) else type(e).__name__) from None
        except Exception as e:  # noqa: BLE001 - dlpt's own failure: logged whole, one line to the client
            _log.debug("dlpt mcp: %s failed", fn.__name__, exc_info=True)
            raise ToolError(f"dlpt failed: {type(e).__name__}: {e} (DLPT_LOG=debug logs it)") from None

    return call


def build_server(tools: Tools | None = None) -> Any:
    """The MCP server with dlpt's tools (``mcp`` must be installed)."""
    from mcp.server.mcpserver import MCPServer

    t = tools or Tools()
    server = MCPServer("dlpt", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    for name in TOOL_NAMES:
        server.add_tool(_tool(getattr(t, name)), name=name, description=DESCRIPTIONS[name])
    return server


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dlpt mcp`` (serves until the client closes stdin); returns the exit status."""
    args = list(argv or [])
    if args in (["-h"], ["--help"]):
        print(
            "usage: dlpt mcp\n\nA Model Context Protocol server over stdio (docs/agents.md). Tools: "
            + ", ".join(TOOL_NAMES)
        )
        return 0
    if args:
        say_line("dlpt", f"mcp: takes no arguments, got {' '.join(args)}")
        return 2
    try:
        server = build_server()
    except ImportError:
        say_line("dlpt", "mcp: needs the MCP SDK: pip install 'dlpt[mcp]' (or pip install mcp)")
        return 2
    server.run("stdio")
    return 0
