"""The examples at the end of ``python -m dlpt --help``: the first commands a new user needs."""

from __future__ import annotations

__all__ = ["EXAMPLES"]

EXAMPLES = """\
examples:
  dlpt train.py --epochs 1                  profile a script (its own arguments after it)
  dlpt --skip-first 5 --active 10 train.py  leave out 5 warm-up steps, then record 10
  dlpt --step-on generate infer.py          steps of an inference loop (no optimizer)
  dlpt -o run.json --html run.html --open train.py
                                            save the session, write the HTML report, open it
  dlpt --load run.json --view flat          show a saved profile again, another view
  dlpt diff before.json after.json          compare two runs line by line
  dlpt -m pkg.train / dlpt -c "code"        a module or code, as python runs them
  dlpt train.py > report.txt                a file or a pipe gets every line whole (--width N)

In Jupyter or IPython: %load_ext dlpt, then %dlpt STATEMENT or %%dlpt atop a cell.
"""
