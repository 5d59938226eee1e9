"""``python -m dlpt ...``: see :mod:`dlpt.cli.main`."""

import sys

from dlpt.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
