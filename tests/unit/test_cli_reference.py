"""docs/reference/cli.md is what tools/gen_cli_reference.py writes from the parsers: an option,
metric, view or export format added without regenerating it fails here."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    path = ROOT / "tools" / "gen_cli_reference.py"
    spec = importlib.util.spec_from_file_location("gen_cli_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_reference_is_the_generators_output() -> None:
    committed = (ROOT / "docs" / "reference" / "cli.md").read_text()
    columns = os.environ.get("COLUMNS")
    assert committed == _generator().render(), "run: python tools/gen_cli_reference.py"
    assert os.environ.get("COLUMNS") == columns  # the generator leaves the environment as it was


def test_every_option_metric_view_and_format_is_in_the_reference() -> None:
    gen = _generator()
    text = gen.render()
    options = [o for p in (gen.cli_parser(), gen.diff_parser()) for a in p._actions for o in a.option_strings]
    assert "--sample-hz" in options and "--timeline" in options  # the ones the README's table lacked
    missing = [o for o in options if o not in ("-h", "--help") and f"`{o}`" not in text]
    missing += [m for m in gen.METRICS if f"| `{m}` |" not in text]
    missing += [v for v in gen.VIEWS if f"| `{v}` |" not in text]
    missing += [f for f in gen.FORMATS if f"| `{f}` |" not in text]
    assert missing == []
