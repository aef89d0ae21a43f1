"""The browser pages: the lobby and table client at ``/``, the single-file verifier at
``/verify``, the operator's tables page at ``/operator``, their files under ``/web/``,
and the icon at ``/favicon.ico``.

The pages are plain files in ``service/web/`` (no build step).  ``/verify`` is
``verify.html`` with its scripts and style sheet inlined (:func:`service.webpage.inline_page`),
so that a person can save it as one file and run it offline.  Static files are served
by aiohttp's static route without directory listings; a path that leaves
``service/web/`` is refused.  Pages and files are sent with ``Cache-Control:
no-cache``: the browser revalidates (``Last-Modified``) instead of running stale code
against a newer server.

Each page has its own Content-Security-Policy: the table client runs only its own
files (``script-src 'self'``) and opens WebSockets only to this card room's nodes;
``/operator`` runs only its own files and fetches only from its own origin;
``/verify`` runs only the inline scripts and styles it was built with, each allowed by
its SHA-256, computed when the page is built (:func:`inline_hashes`).  Neither may be
framed.  The headers every response carries are :mod:`service.headers`'.
"""

from __future__ import annotations

import base64
import hashlib
import pathlib
import re
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web

from service.webpage import inline_page

__all__ = ["OPERATOR_CSP", "WEB", "add_page_routes", "index_csp", "inline_hashes", "verify_csp"]

WEB = pathlib.Path(__file__).resolve().parent / "web"

_NO_CACHE = "no-cache"
_COMMON = "base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'"
_INLINE = {
    "script": re.compile(r"<script\b(?![^>]*\bsrc\s*=)[^>]*>(.*?)</script\s*>", re.IGNORECASE | re.DOTALL),
    "style": re.compile(r"<style\b[^>]*>(.*?)</style\s*>", re.IGNORECASE | re.DOTALL),
}

#: the operator page's policy: its own files only, fetches to its own origin only
OPERATOR_CSP = (
    f"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; {_COMMON}"
)

#: the public URLs of this card room's nodes (where the table page may open WebSockets)
NodeUrls = Callable[[web.Request], Awaitable[list[str]]]

_inlined: dict[str, tuple[tuple[float, ...], str, str]] = {}  # page -> (the files' mtimes, HTML, CSP)


def _socket_origin(url: str) -> str | None:
    """``ws://host:port`` (``wss://`` for https) of a node's public URL."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc or any(c in parts.netloc for c in " ;,'\""):
        return None
    return ("wss://" if parts.scheme == "https" else "ws://") + parts.netloc


def index_csp(node_urls: list[str]) -> str:
    """The table client's policy: its own files only; fetches to its own origin;
    WebSockets to its own origin or, in a cluster, to the nodes of the card room
    (a ``wrong_node`` answer or a ``shutdown`` names one)."""
    sockets = sorted({o for o in map(_socket_origin, node_urls) if o is not None})
    connect = " ".join(["'self'", *sockets])
    return (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src {connect}; manifest-src 'self'; {_COMMON}"
    )


def inline_hashes(page: str) -> dict[str, list[str]]:
    """``'sha256-…'`` of every inline script and style of ``page``, by kind."""
    out: dict[str, list[str]] = {}
    for kind, pattern in _INLINE.items():
        digests = (hashlib.sha256(m.group(1).encode("utf-8")).digest() for m in pattern.finditer(page))
        out[kind] = sorted({f"'sha256-{base64.b64encode(d).decode()}'" for d in digests})
    return out


def verify_csp(page: str) -> str:
    """/verify's policy: only the inline scripts and styles it was built with; it may
    fetch a transcript from any server the person names (http for a local one)."""
    h = inline_hashes(page)
    scripts = " ".join(h["script"]) or "'none'"
    styles = " ".join(h["style"]) or "'none'"
    return (
        f"default-src 'none'; script-src {scripts}; style-src {styles}; img-src 'self' data:; "
        f"connect-src 'self' https: http:; {_COMMON}"
    )


def _html(text: str, csp: str) -> web.Response:
    headers = {"Cache-Control": _NO_CACHE, "Content-Security-Policy": csp, "X-Frame-Options": "DENY"}
    return web.Response(text=text, content_type="text/html", charset="utf-8", headers=headers)


def _inline_cached(page: pathlib.Path) -> tuple[str, str]:
    """``inline_page(page)`` and its policy, made again only when a web file changed."""
    stamp = tuple(sorted(p.stat().st_mtime for p in WEB.rglob("*") if p.is_file()))
    cached = _inlined.get(page.name)
    if cached is None or cached[0] != stamp:
        text = inline_page(page)
        cached = (stamp, text, verify_csp(text))
        _inlined[page.name] = cached
    return cached[1], cached[2]


async def verify(request: web.Request) -> web.Response:
    """The browser verifier as one self-contained page (``?hand=ID&key=K`` fetches and
    verifies a hand from this server)."""
    return _html(*_inline_cached(WEB / "verify.html"))


async def operator(request: web.Request) -> web.Response:
    """The operator's tables page: the token is pasted in and kept in the page's
    memory; every action is a call to the REST API with it."""
    return _html((WEB / "operator.html").read_text(encoding="utf-8"), OPERATOR_CSP)


async def favicon(request: web.Request) -> web.FileResponse:
    return web.FileResponse(WEB / "favicon.ico", headers={"Cache-Control": "max-age=86400"})


async def _no_cache_for_files(request: web.Request, response: web.StreamResponse) -> None:
    if request.path.startswith("/web/") and "Cache-Control" not in response.headers:
        response.headers["Cache-Control"] = _NO_CACHE


def add_page_routes(app: web.Application, node_urls: NodeUrls) -> None:
    """``GET /`` (the table client), ``GET /verify`` (the inlined verifier), ``GET
    /operator`` (the operator's tables page), the static files under ``/web/`` and
    ``/favicon.ico``."""

    async def index(request: web.Request) -> web.Response:
        """The lobby and table client."""
        return _html((WEB / "index.html").read_text(encoding="utf-8"), index_csp(await node_urls(request)))

    app.router.add_get("/", index)
    app.router.add_get("/verify", verify)
    app.router.add_get("/operator", operator)
    app.router.add_get("/favicon.ico", favicon)
    app.router.add_static("/web/", WEB, show_index=False, follow_symlinks=False)
    app.on_response_prepare.append(_no_cache_for_files)
