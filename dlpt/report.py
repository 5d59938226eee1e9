"""Public entry points for reports: ``render`` (a rich renderable) and ``print_report``.

Renderers live in :mod:`dlpt.renderers`; this module is the stable name the API, the CLI and
users import.
"""

from dlpt.renderers import print_report, render

__all__ = ["render", "print_report"]
