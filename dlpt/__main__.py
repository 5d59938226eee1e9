"""``python -m dlpt ...``: see :mod:`dlpt.cli`."""

import sys

from dlpt.cli import main

if __name__ == "__main__":
    sys.exit(main())
