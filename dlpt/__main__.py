"""``python -m dlpt ...``: see :mod:`dlpt.cli.main`."""

from dlpt.cli.main import entry

if __name__ == "__main__":
    entry()
