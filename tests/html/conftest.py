"""A real browser for the HTML report tests: the OS's Chromium driven by Playwright.

Chromium comes from the OS packages (``apt-get install chromium``; ``$DLPT_CHROMIUM`` names
another binary), Playwright from pip; nothing is downloaded (never ``playwright install``).
Without them the browser tests are skipped with the reason, unless ``DLPT_REQUIRE_BROWSER=1``
(set by ``.ci/run``), where a missing browser is a failure. Screenshots go to
``$DLPT_ARTIFACTS`` (default: a pytest temp directory).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("DLPT_CHROMIUM", "/usr/bin/chromium")
# Headless on a machine without network: without these Chromium waits on refused connections.
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1440, "height": 1000}


def _missing() -> str | None:
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)) and not shutil.which(CHROMIUM):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -r requirements-test.txt)"
    return None


@pytest.fixture(scope="package")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A Chromium context with a fresh profile, shared by the browser tests. Package scope:
    Playwright's sync API keeps an event loop registered while it runs, which would break
    later tests that call ``asyncio.run()``."""
    why = _missing()
    if why:
        if os.environ.get("DLPT_REQUIRE_BROWSER") == "1":
            pytest.fail(f"DLPT_REQUIRE_BROWSER=1 but {why}")
        pytest.skip(f"browser tests need a browser: {why}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=CHROMIUM,
            headless=True,
            args=ARGS,
            viewport=VIEWPORT,
            device_scale_factor=1,
        )
        ctx.set_default_timeout(20_000)
        yield ctx
        ctx.close()


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: ``$DLPT_ARTIFACTS`` or a pytest temp directory."""
    env = os.environ.get("DLPT_ARTIFACTS")
    path = Path(env) if env else tmp_path_factory.mktemp("artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


class Opened:
    """A page showing one report, recording console errors, warnings and uncaught exceptions."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.problems: list[str] = []
        page.on(
            "console",
            lambda m: (
                self.problems.append(f"console.{m.type}: {m.text}")
                if m.type in ("error", "warning")
                else None
            ),
        )
        page.on("pageerror", lambda e: self.problems.append(f"uncaught: {e}"))
        page.on("dialog", lambda d: (self.problems.append(f"dialog: {d.message}"), d.dismiss()))
        page.on(
            "request",
            lambda r: (
                None
                if r.url.startswith(("file:", "data:", "about:"))
                else self.problems.append(f"network request: {r.url}")
            ),
        )

    def js(self, expr: str, arg: Any = None) -> Any:
        return self.page.evaluate(expr, arg)


@pytest.fixture
def open_report(browser: Any) -> Iterator[Any]:
    """``open_report(path)`` loads an HTML file from ``file://`` and waits for the page; at
    the end of the test, any console error, uncaught exception, dialog or network request
    fails it."""
    opened: list[Opened] = []

    def _open(path: Path) -> Opened:
        page = browser.new_page()
        o = Opened(page)
        opened.append(o)
        page.goto(path.resolve().as_uri())
        page.wait_for_selector("header.topbar")
        return o

    yield _open
    for o in opened:
        problems = list(o.problems)
        o.page.close()
        assert not problems, problems
