"""Record the README's sample output from today's build: run examples/mlp_train.py under dlpt on
the CPU at 80 columns and replace the README's block between its sample markers.

    python tools/readme_sample.py            # run, then rewrite README.md's sample block
    python tools/readme_sample.py --print    # run and print the block, README untouched

The report is trimmed by section (sections are separated by blank lines): the header, the
suggestions and the top of the per-step tree are kept, longer sections are cut with a line
saying how many lines were left out, and the sections left out are named under the block. Run
it whenever the report's layout changes (the lead does after merging such a change).
"""

from __future__ import annotations

import datetime
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BEGIN = "<!-- sample:begin (written by tools/readme_sample.py; do not edit by hand) -->"
END = "<!-- sample:end -->"
COMMAND = ["-m", "dlpt", "--width", "80", "examples/mlp_train.py"]
SHOWN_COMMAND = "python3 -m dlpt examples/mlp_train.py"

#: Sections kept (by the start of their title line), and at most how many lines of each.
KEEP = {"Suggestions": 14, "Top-down": 23, "Hottest lines": 8}
HEADER_LINES = 40


def run_report() -> str:
    """The report dlpt prints for the example on the CPU (stdout only: the example's own line and
    dlpt's status go to stderr)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["CUDA_VISIBLE_DEVICES"] = ""  # the CPU, also on a GPU machine
    env["NO_COLOR"] = "1"
    env.pop("FORCE_COLOR", None)
    env.pop("COLUMNS", None)
    done = subprocess.run(
        [sys.executable, *COMMAND], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:
        raise SystemExit(f"readme_sample: dlpt exited {done.returncode}:\n{done.stderr[-2000:]}")
    return done.stdout


def sections(report: str) -> list[list[str]]:
    """The report's sections, from its header box on (what the example itself prints comes
    before it, on the same stdout)."""
    lines = report.split("\n")
    start = next((i for i, line in enumerate(lines) if line.startswith(("╭", "+"))), 0)
    out: list[list[str]] = []
    for block in re.split(r"\n\s*\n", "\n".join(lines[start:]).strip("\n")):
        lines = block.split("\n")
        if lines and any(line.strip() for line in lines):
            out.append(lines)
    return out


def _cut(lines: list[str], limit: int) -> list[str]:
    if len(lines) <= limit:
        return lines
    return [*lines[:limit], f"… ({len(lines) - limit} more lines)"]


def trim(report: str) -> tuple[str, list[str]]:
    """(the kept text, the titles of the sections left out)."""
    kept: list[str] = []
    dropped: list[str] = []
    seen: set[str] = set()
    for i, lines in enumerate(sections(report)):
        title = lines[0].strip()
        key = next((k for k in KEEP if title.startswith(k)), None)
        if i == 0 and title.startswith("╭"):
            kept.append("\n".join(_cut(lines, HEADER_LINES)))
        elif key is not None and key not in seen:
            seen.add(key)
            kept.append("\n".join(_cut(lines, KEEP[key])))
        else:
            dropped.append(re.split(r"\s{2,}| \(", title)[0])
    return "\n\n".join(kept), dropped


def block(report: str, today: str, versions: str) -> str:
    text, dropped = trim(report)
    left_out = f" Left out here: {', '.join(dropped)}." if dropped else ""
    about = (
        f"`{SHOWN_COMMAND}` on a machine without a GPU, so the values are the CPU time of torch's "
        "ops per line; on a GPU the same tree shows GPU time, with each line's kernels under its ops. "
        f"Recorded on {today} ({versions}) at 80 columns by `python tools/readme_sample.py`, which "
        "runs the example and keeps the header, the suggestions, the top of the tree and the hottest "
        f"lines.{left_out}"
    )
    return "\n".join(
        [
            BEGIN,
            *textwrap.wrap(about, 96, break_on_hyphens=False, break_long_words=False),
            "",
            "```",
            text,
            "```",
            END,
        ]
    )


def versions() -> str:
    probe = "import dlpt, torch; print(f'dlpt {dlpt.__version__}, torch {torch.__version__}')"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    return done.stdout.strip() or "versions unknown"


def replace_block(readme: str, new_block: str) -> str:
    start = readme.find(BEGIN)
    end = readme.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"readme_sample: README.md has no block between {BEGIN!r} and {END!r}")
    return readme[:start] + new_block + readme[end + len(END) :]


def main(argv: list[str]) -> int:
    if argv[1:] not in ([], ["--print"]):
        print(__doc__, file=sys.stderr)
        return 2
    new = block(run_report(), datetime.date.today().isoformat(), versions())
    if argv[1:] == ["--print"]:
        print(new)
        return 0
    README.write_text(replace_block(README.read_text(), new))
    print(f"rewrote the sample block of {README.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
