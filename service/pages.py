"""The browser pages: the lobby and table client at ``/``, the single-file verifier at
``/verify``, and their files under ``/web/``.

The pages are plain files in ``service/web/`` (no build step).  ``/verify`` is
``verify.html`` with its scripts and style sheet inlined (:func:`service.webpage.inline_page`),
so that a person can save it as one file and run it offline.  Static files are served
by aiohttp's static route without directory listings; a path that leaves
``service/web/`` is refused.  Pages and files are sent with ``Cache-Control:
no-cache``: the browser revalidates (``Last-Modified``) instead of running stale code
against a newer server.
"""

from __future__ import annotations

import pathlib

from aiohttp import web

from service.webpage import inline_page

__all__ = ["WEB", "add_page_routes"]

WEB = pathlib.Path(__file__).resolve().parent / "web"

_NO_CACHE = "no-cache"
#: the table client loads only its own files; it fetches from its own origin, and opens
#: WebSockets to its own origin or, in a cluster, to the node that serves a table
#: (a ``wrong_node`` answer names it; the node's URL is not known in advance)
_INDEX_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self' ws: wss:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"
)

_inlined: dict[str, tuple[tuple[float, ...], str]] = {}  # page -> (the files' mtimes, the inlined HTML)


def _html(text: str, *, csp: str | None = None) -> web.Response:
    headers = {"Cache-Control": _NO_CACHE, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
    if csp is not None:
        headers["Content-Security-Policy"] = csp
    return web.Response(text=text, content_type="text/html", charset="utf-8", headers=headers)


async def index(request: web.Request) -> web.Response:
    """The lobby and table client."""
    return _html((WEB / "index.html").read_text(encoding="utf-8"), csp=_INDEX_CSP)


def _inline_cached(page: pathlib.Path) -> str:
    """``inline_page(page)``, made again only when one of the web files changed."""
    stamp = tuple(sorted(p.stat().st_mtime for p in WEB.rglob("*") if p.is_file()))
    cached = _inlined.get(page.name)
    if cached is None or cached[0] != stamp:
        cached = (stamp, inline_page(page))
        _inlined[page.name] = cached
    return cached[1]


async def verify(request: web.Request) -> web.Response:
    """The browser verifier as one self-contained page (``?hand=ID&key=K`` fetches and
    verifies a hand from this server)."""
    return _html(_inline_cached(WEB / "verify.html"))


async def _no_cache_for_files(request: web.Request, response: web.StreamResponse) -> None:
    if request.path.startswith("/web/") and "Cache-Control" not in response.headers:
        response.headers["Cache-Control"] = _NO_CACHE
        response.headers["X-Content-Type-Options"] = "nosniff"


def add_page_routes(app: web.Application) -> None:
    """``GET /`` (the table client), ``GET /verify`` (the inlined verifier) and the
    static files under ``/web/``."""
    app.router.add_get("/", index)
    app.router.add_get("/verify", verify)
    app.router.add_static("/web/", WEB, show_index=False, follow_symlinks=False)
    app.on_response_prepare.append(_no_cache_for_files)
