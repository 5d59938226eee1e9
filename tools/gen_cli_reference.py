"""Write docs/reference/cli.md from dlpt's own argument parsers, so the reference cannot drift.

    python tools/gen_cli_reference.py            # rewrite docs/reference/cli.md
    python tools/gen_cli_reference.py --check    # exit 1 if the committed file differs

Every option comes from the parsers (``dlpt``, ``dlpt diff``, the ``%dlpt``/``%%dlpt`` magics),
every metric from ``dlpt.model.metrics.METRICS``, every view and export format from the
tuples the CLI checks against. Views and export formats have no description in the code: they
are written here, and a view or format without one stops the generator (so a new one cannot go
undocumented). tests/unit/test_cli_reference.py runs the check.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the checkout's dlpt, wherever this is run from

from dlpt.cli.diff import build_parser as diff_parser  # noqa: E402
from dlpt.cli.mcp_tools import TOOL_NAMES  # noqa: E402
from dlpt.cli.options import build_parser as cli_parser  # noqa: E402
from dlpt.cli.query import build_parser as query_parser  # noqa: E402
from dlpt.cli.verify import build_parser as verify_parser  # noqa: E402
from dlpt.model.metrics import METRICS  # noqa: E402
from dlpt.notebook.options import build_parser as magic_parser  # noqa: E402
from dlpt.renderers.exports import FORMATS  # noqa: E402
from dlpt.renderers.terminal.report import VIEWS  # noqa: E402

OUT = ROOT / "docs" / "reference" / "cli.md"

VIEW_NOTES = {
    "tree": "the default, in the order printed: the header, the work outside steps, the kernel, copy, "
    "sync and collective tables, the first suggestions, the top-down calling-context tree (callees "
    "below their callers), then the hottest lines by own cost",
    "bottom-up": "the tree inverted: each op or kernel with the lines that called it",
    "flat": "flat tables by line, by op and by kernel",
    "kernels": "the kernel table (calls, total, average, min, max, share)",
    "summary": "the kernel, copy, sync, collective and CUDA API tables, no tree",
    "suggestions": "every suggestion, with the work tables (FLOPs, TFLOP/s, bound per line and op)",
    "all": "every view above, in the order printed: the tree, the work outside steps, bottom-up, the "
    "flat tables, the kernel, copy, sync, collective and CUDA API tables, then the work tables",
}

FORMAT_NOTES = {
    "speedscope": "speedscope's JSON file format (speedscope.app, `npx speedscope FILE`), one profile per "
    "metric that has values",
    "folded": "folded stacks (`frame;frame;frame value`) of one metric, for flamegraph.pl or inferno",
    "perfetto": "the `--timeline` window as a Chrome trace (ui.perfetto.dev, chrome://tracing); needs a "
    "session recorded with `--timeline N`",
}

UNITS = {"ns": "time", "bytes": "bytes", "count": "count"}


@contextlib.contextmanager
def _columns(n: int) -> Iterator[None]:
    """COLUMNS=n meanwhile, restored after (the generator also runs inside the test suite)."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(n)
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _help(action: argparse.Action, prog: str) -> str:
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    params = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
    params["prog"] = prog
    if params.get("choices") is not None:
        params["choices"] = ", ".join(map(str, params["choices"]))
    return action.help % params


def _names(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    return ", ".join(f"`{o}`" for o in action.option_strings)


def _argument(action: argparse.Action) -> str:
    if action.nargs == 0 or not action.option_strings:
        return ""
    if action.choices is not None:
        return " \\| ".join(f"`{c}`" for c in action.choices)
    metavar = action.metavar or action.dest.upper()
    words = list(metavar) if isinstance(metavar, tuple) else [metavar]
    text = " ".join(words)
    if action.nargs == "+":
        text += " …"
    return f"`{text}`"


def _options_table(parser: argparse.ArgumentParser, with_help: bool = True) -> list[str]:
    rows = ["| option | argument | meaning |", "|---|---|---|"] if with_help else []
    plain: list[str] = []
    for action in parser._actions:  # argparse has no public list of its actions
        if isinstance(action, argparse._HelpAction):
            continue
        if with_help:
            meaning = _help(action, parser.prog)
            if isinstance(action, argparse._AppendAction) and "repeatable" not in meaning:
                meaning += " (repeatable)"
            rows.append(f"| {_names(action)} | {_argument(action)} | {_cell(meaning)} |")
        else:
            longest = max(action.option_strings, key=len, default=None)
            plain += [longest] if longest else []
    return rows if with_help else [", ".join(f"`{o}`" for o in plain)]


def _missing(kind: str, names: tuple[str, ...] | list[str], notes: dict[str, str]) -> None:
    lacking = [n for n in names if n not in notes]
    if lacking:
        raise SystemExit(f"gen_cli_reference: describe the {kind} {', '.join(lacking)} in {__file__}")


def _command(title: str, parser: argparse.ArgumentParser) -> list[str]:
    """A subcommand's section: its usage, description and options."""
    with _columns(100):  # argparse wraps usage lines at the terminal's width
        usage = parser.format_usage().rstrip()
    return [
        f"## `{title}`",
        "",
        "```",
        usage,
        "```",
        "",
        _cell(parser.description or ""),
        "",
        *_options_table(parser),
        "",
    ]


def render() -> str:
    _missing("view", VIEWS, VIEW_NOTES)
    _missing("export format", FORMATS, FORMAT_NOTES)
    cli = cli_parser()
    diff = diff_parser()
    with _columns(100):  # argparse wraps usage lines at the terminal's width
        cli_usage = cli.format_usage().rstrip()
    lines = [
        "# Command-line reference",
        "",
        "<!-- Generated by tools/gen_cli_reference.py from dlpt's argument parsers: do not edit by hand;",
        "     run `python tools/gen_cli_reference.py` (tests/unit/test_cli_reference.py checks it). -->",
        "",
        "What each option does and when to use it: [the guide](../guide.md); what the numbers mean:",
        "[concepts](../concepts.md).",
        "",
        "## `dlpt` (`python -m dlpt`)",
        "",
        "```",
        cli_usage,
        "```",
        "",
        _cell(cli.description or ""),
        "Options stop at the script, `-m` or `-c`: everything after them belongs to the program.",
        "",
        *_options_table(cli),
        "",
        "From `dlpt --help`:",
        "",
        "```",
        (cli.epilog or "").rstrip(),
        "```",
        "",
        *_command("dlpt diff", diff),
        *_command("dlpt query", query_parser()),
        *_command("dlpt verify", verify_parser()),
        "## `dlpt mcp`",
        "",
        "A Model Context Protocol server over stdio (`pip install 'dlpt[mcp]'`), no options; its tools:",
        ", ".join(f"`{t}`" for t in TOOL_NAMES) + " ([agents.md](../agents.md)).",
        "",
        "## `%dlpt` and `%%dlpt` (IPython, Jupyter)",
        "",
        "After `%load_ext dlpt`: `%dlpt [options] statement` or `%%dlpt [options]` on a cell's first",
        "line. The options mean what they mean on the command line; `--inline-html` shows the HTML",
        "report in the notebook. They accept:",
        "",
        *_options_table(magic_parser("%%dlpt"), with_help=False),
        "",
        "## Metrics (`--metric`)",
        "",
        "The default is `gpu` when the profile holds GPU time, else `cpu`. The `mem_*` metrics need",
        "`--memory`; the `host*` metrics come from the host sampler (`--sample-hz`, on by default).",
        "",
        "| metric | what it measures | unit |",
        "|---|---|---|",
        *(f"| `{m.name}` | {_cell(m.label)} | {UNITS.get(m.unit, m.unit)} |" for m in METRICS.values()),
        "",
        "## Views (`--view`)",
        "",
        "| view | what it shows |",
        "|---|---|",
        *(f"| `{v}` | {_cell(VIEW_NOTES[v])} |" for v in VIEWS),
        "",
        "## Export formats (`--export FMT FILE`)",
        "",
        "| format | what it writes |",
        "|---|---|",
        *(f"| `{f}` | {_cell(FORMAT_NOTES[f])} |" for f in FORMATS),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    text = render()
    if argv[1:] == ["--check"]:
        if not OUT.exists() or OUT.read_text() != text:
            stale = OUT.relative_to(ROOT)
            print(f"{stale} is out of date: run python tools/gen_cli_reference.py", file=sys.stderr)
            return 1
        return 0
    if argv[1:]:
        print(__doc__, file=sys.stderr)
        return 2
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
