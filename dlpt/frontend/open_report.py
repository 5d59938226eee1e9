"""``--open``: show the HTML report in a web browser once it is written.

Opening is a convenience, never a failure: when no browser can be started the command says so
in one line (with the file's address, to open by hand) and its exit status is unchanged.

Which browser: the one ``$BROWSER`` names, else the system's default through :mod:`webbrowser`
where there is a desktop to show it on (macOS, Windows, or ``$DISPLAY`` / ``$WAYLAND_DISPLAY``
set). Without one (a server over ssh, a container, CI) nothing is started: :mod:`webbrowser`
would fall back to a text-mode browser (lynx, w3m) that takes over the terminal until quit.
"""

from __future__ import annotations

import os
import sys
import webbrowser
from collections.abc import Callable
from pathlib import Path

__all__ = ["open_report"]


def _has_desktop() -> bool:
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def open_report(path: str, say: Callable[[str], None]) -> bool:
    """Open the HTML report at ``path`` in a browser; ``say`` tells when none could be. Returns
    whether a browser took it."""
    uri = Path(path).resolve().as_uri()
    if not os.environ.get("BROWSER") and not _has_desktop():
        say(f"--open: no browser here (no $DISPLAY or $BROWSER); the report is at {uri}")
        return False
    try:
        opened = webbrowser.open(uri)
    except (webbrowser.Error, OSError) as e:
        say(f"--open: could not start a browser ({e}); the report is at {uri}")
        return False
    if not opened:
        say(f"--open: no browser could be started; the report is at {uri}")
    return opened
