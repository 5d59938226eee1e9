"""The MCP server's tools as plain functions (:mod:`dlpt.cli.mcp_server` registers them; nothing
here imports ``mcp``). Each returns a JSON-ready dict in the shapes docs/query-format.md
describes, and raises :class:`~dlpt.errors.DlptError` (or OSError) for what the caller got wrong:
the server turns those into MCP tool errors, one line each.

Sessions are loaded once and kept (the last few, by path, size and modification time), so that
an agent's ``summary``, ``top_lines`` and ``explain_line`` on one session fold it once.
"""

from __future__ import annotations

import os
import shlex
import tempfile
from collections import OrderedDict
from typing import Any

from dlpt.errors import UsageError
from dlpt.query import LoadedSession, load, query
from dlpt.query.answer import check_top

__all__ = ["Tools", "TOOL_NAMES"]

TOOL_NAMES = ("profile", "summary", "top_lines", "explain_line", "suggestions", "compare", "verify")
#: Sessions kept loaded (each with its folded view).
KEPT = 4
#: The most a ``profile`` or ``verify`` run may take, and its default (seconds).
MAX_TIME_LIMIT_S, DEFAULT_TIME_LIMIT_S = 3600.0, 300.0


def _command(command: str | list[str]) -> list[str]:
    """A command as an argv: a list as given, a string split as a shell would (without one)."""
    argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    if argv and os.path.basename(argv[0]).startswith("python") and len(argv) > 1:
        argv = argv[1:]  # dlpt runs the program in its own interpreter
    if not argv:
        raise UsageError("command is empty: give a script and its arguments, e.g. 'train.py --steps 50'")
    return argv


def _options(options: list[str] | None) -> list[str]:
    """dlpt's options for a profile; where the session goes is the tool's ``output``."""
    out = [str(o) for o in options or []]
    if any(o in ("-o", "--output", "--load") or o.startswith("--output=") for o in out):
        raise UsageError("options: give the session's path as output, not -o (and --load runs nothing)")
    return out


def _time_limit(seconds: float) -> float:
    if not 0 < seconds <= MAX_TIME_LIMIT_S:
        raise UsageError(f"time_limit_s must be in (0, {MAX_TIME_LIMIT_S:g}], got {seconds:g}")
    return seconds


class Tools:
    """The tools of one server; ``workdir`` is where ``profile`` saves sessions by default."""

    def __init__(self, workdir: str | None = None) -> None:
        self.workdir = workdir or tempfile.mkdtemp(prefix="dlpt-mcp-")
        self._sessions: OrderedDict[tuple[str, int, int], LoadedSession] = OrderedDict()
        self._runs = 0

    def session(self, path: str) -> LoadedSession:
        """The session at ``path``, loaded once per version of the file."""
        try:
            st = os.stat(path)
        except OSError as e:
            raise UsageError(f"{path}: {e.strerror or e}") from None
        key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
        if key not in self._sessions:
            self._sessions[key] = load(path)
            while len(self._sessions) > KEPT:
                self._sessions.popitem(last=False)
        self._sessions.move_to_end(key)
        return self._sessions[key]

    def profile(
        self,
        command: str | list[str],
        steps: int = 20,
        time_limit_s: float = DEFAULT_TIME_LIMIT_S,
        options: list[str] | None = None,
        output: str | None = None,
        cwd: str | None = None,
    ) -> dict[str, Any]:
        from dlpt.cli.bounded_run import run_bounded

        if isinstance(steps, bool) or not 0 <= steps <= 100_000:
            raise UsageError(f"steps must be 0 (no bound) to 100000, got {steps!r}")
        self._runs += 1
        out = output or os.path.join(self.workdir, f"profile-{self._runs}.json")
        r = run_bounded(
            _command(command),
            out,
            _options(options),
            steps=steps or None,
            time_limit=_time_limit(time_limit_s),
            cwd=cwd,
        )
        run = {
            "exit": r.status,
            "stopped": r.stopped,
            "seconds": round(r.seconds, 1),
            "output_tail": r.output[-1500:],
        }
        if not r.saved:
            raise UsageError(f"no session was saved (exit {r.status}): {r.output[-800:].strip()}")
        answer = query(self.session(out).view(), top=5, path=out)
        return {"session": out, "run": run, "summary": answer}

    def summary(self, session: str) -> dict[str, Any]:
        return self.session(session).query(top=5)

    def top_lines(self, session: str, n: int = 10, metric: str | None = None) -> dict[str, Any]:
        a = self.session(session).query(top=check_top(n), metric=metric)
        keep = ("format", "version", "metric", "per", "total", "lines", "lines_with_cost", "on_no_line")
        return {k: a[k] for k in keep}

    def explain_line(self, session: str, line: str, metric: str | None = None) -> dict[str, Any]:
        a = self.session(session).query(top=0, line=line, metric=metric)
        return {"format": a["format"], "version": a["version"], "metric": a["metric"], "line": a["line"]}

    def suggestions(self, session: str) -> dict[str, Any]:
        a = self.session(session).query(top=0)
        return {"format": a["format"], "version": a["version"], "suggestions": a["suggestions"]}

    def compare(self, base: str, new: str, metric: str | None = None, top: int = 20) -> dict[str, Any]:
        from dlpt.query.compare import compare_answer, diff_metric, judged
        from dlpt.views.diff import diff_view

        d = diff_view(self.session(base), self.session(new), base, new).diff
        m = diff_metric(d, metric)
        shift, changes = judged(d, m)
        return compare_answer(d, m, shift, changes, check_top(top), (base, new))

    def verify(
        self,
        base: str,
        command: str | list[str],
        max_regression_pct: float | None = None,
        expect_faster: list[str] | None = None,
        runs: int = 1,
        time_limit_s: float = DEFAULT_TIME_LIMIT_S,
        output: str | None = None,
        cwd: str | None = None,
    ) -> dict[str, Any]:
        from dlpt.cli.verify import parse, run_verify

        args = [base, "--runs", str(runs), "--time-limit", f"{_time_limit(time_limit_s):g}"]
        args += ["--max-regression", f"{max_regression_pct:g}"] if max_regression_pct is not None else []
        args += [a for w in expect_faster or [] for a in ("--expect-faster", w)]
        self._runs += 1
        args += ["-o", output or os.path.join(self.workdir, f"verify-{self._runs}.json")]
        return run_verify(parse(args), _command(command), cwd=cwd)
