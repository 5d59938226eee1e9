"""``python -m dlpt ...``: see :mod:`dlpt.cli.main`."""

from dlpt.cli.own_imports import without_path0

with without_path0():  # dlpt's modules, not a same-named file in the working directory
    from dlpt.cli.main import entry

if __name__ == "__main__":
    entry()
