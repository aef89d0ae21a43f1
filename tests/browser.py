"""A real headless Chromium for browser tests, with Playwright's async API.

The Debian package's Chromium (``/usr/bin/chromium``, else ``chromium`` on PATH, or
the path in $CHROMIUM) is used; no browser is ever downloaded.  Without it the suite
stops before any test runs (``tests/conftest.py``).  ``serve_directory`` serves static
files from 127.0.0.1 on a free port with a tiny aiohttp app, so pages run from an http
origin (WebCrypto's Ed25519 and ``fetch`` behave there as they do on the real server).
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

import pytest
from aiohttp import web
from playwright.async_api import Browser, Page, async_playwright

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

DEBIAN_CHROMIUM = "/usr/bin/chromium"
CHROMIUM = os.environ.get("CHROMIUM") or (
    DEBIAN_CHROMIUM if pathlib.Path(DEBIAN_CHROMIUM).exists() else shutil.which("chromium") or DEBIAN_CHROMIUM
)
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_missing() -> bool:
    return not pathlib.Path(CHROMIUM).is_file()


def require_chromium() -> None:
    """The browser tests are part of the suite: without Chromium they fail, they are
    never skipped (.ci/run installs Debian's package when it is missing)."""
    if chromium_missing():
        pytest.fail(f"no Chromium at {CHROMIUM}: install Debian's package (apt-get install chromium)")


@contextlib.asynccontextmanager
async def launch() -> AsyncIterator[Browser]:
    """Headless Chromium; closed on exit."""
    require_chromium()
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            await browser.close()


@contextlib.asynccontextmanager
async def serve_directory(root: pathlib.Path, gets: Mapping[str, Handler] | None = None) -> AsyncIterator[str]:
    """Serve ``root`` over http on 127.0.0.1 (a free port), and ``gets`` (path -> handler)
    before it; yields the base URL."""
    app = web.Application()
    for path, handler in (gets or {}).items():
        app.router.add_get(path, handler)
    app.router.add_static("/", root, show_index=False)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        host, port = runner.addresses[0][:2]
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()


@contextlib.asynccontextmanager
async def new_page(browser: Browser, errors: list[str] | None = None) -> AsyncIterator[Page]:
    """A page in a fresh context; JavaScript errors on the page fail the test, or go to
    ``errors`` for a caller that checks them itself (a page shared by several tests)."""
    context = await browser.new_context()
    page = await context.new_page()
    seen: list[str] = [] if errors is None else errors
    page.on("pageerror", lambda exc: seen.append(str(exc)))
    try:
        yield page
    finally:
        await context.close()
    assert errors is not None or not seen, f"JavaScript errors on the page: {seen}"
