"""Who is asking: a bearer token (bots, the command line, any program), or the
browser session cookie that the table page is known by, with an Origin check.

The page signs in once with the player token (``POST /api/session``) and is then
known by an ``HttpOnly``, ``SameSite=Strict`` cookie (``Secure`` over TLS) holding a
session id, so that no script on the page can read a credential.  A cookie is sent by
the browser whatever page made the request, so every request it authenticates that
changes something, and every WebSocket it opens (cross-site WebSocket hijacking),
must come from an origin of this card room: this server's own host, or a node of its
cluster (``nodes.public_url``).  docs/api.md, "Sessions".

A cookie goes only to the host that set it: a page whose table is served by a node on
another host name asks its own node for a one-time ticket (``POST
/api/session/ticket``) and offers it in that node's handshake as a subprotocol,
``ticket.<ticket>`` (the Origin checked as for the cookie).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final
from urllib.parse import urlsplit

import asyncpg
from aiohttp import web

from service import nodes, store, wire
from service.db import ACQUIRE_TIMEOUT, connection
from service.errors import ServiceError

__all__ = [
    "COOKIE",
    "WS_PROTOCOL",
    "WS_TICKET_PREFIX",
    "WS_TOKEN_PREFIX",
    "OriginRefused",
    "check_origin",
    "clear_cookie",
    "player_of",
    "session_of",
    "set_cookie",
]

COOKIE: Final = "rummy_session"
SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
#: the WebSocket subprotocol a client asks for.  A program that cannot set an
#: Authorization header on a WebSocket may send its token as a second one,
#: ``bearer.<token>`` (a token in the URL would end up in proxies' logs); the table
#: page sends none: its cookie goes with the upgrade
WS_PROTOCOL: Final = "rummy.v2"
WS_TOKEN_PREFIX: Final = "bearer."  # noqa: S105 - a prefix, not a secret
WS_TICKET_PREFIX: Final = "ticket."  # a one-time ticket from the page's own node (store.create_ticket)


class OriginRefused(ServiceError):
    """A cookie-authenticated request from a page of another origin (403 ``bad_origin``)."""

    code = "bad_origin"
    status = 403


def _offered(request: web.Request, prefix: str) -> str | None:
    """The one subprotocol offered with ``prefix``, when it carries a plausible token."""
    offered = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",")]
    given = [p[len(prefix) :] for p in offered if p.startswith(prefix)]
    return wire.bearer_token("Bearer " + given[0]) if len(given) == 1 else None


def _bearer(request: web.Request, *, websocket: bool) -> str | None:
    token = wire.bearer_token(request.headers.get("Authorization"))
    if token is None and websocket:
        token = _offered(request, WS_TOKEN_PREFIX)
    return token


def session_of(request: web.Request) -> str | None:
    """The session id of the request's cookie, when it is a plausible one."""
    return wire.bearer_token("Bearer " + request.cookies[COOKIE]) if COOKIE in request.cookies else None


def _netloc(url: str) -> str:
    try:
        return urlsplit(url).netloc.lower()
    except ValueError:
        return ""


async def _allowed(request: web.Request, pool: asyncpg.Pool, origin: str, own: Sequence[str]) -> bool:
    """Is ``origin`` a page of this card room: this server's host (as the request
    names it; a proxy in front keeps the Host header), one of ``own`` (this node's
    public URL; for a worker, the server's port), or another node's public URL?  Host
    and port are compared, not the scheme: behind a proxy that ends TLS the request
    arrives as http."""
    netloc = _netloc(origin)
    if not netloc or origin == "null":
        return False
    if netloc == request.host.lower() or any(netloc == _netloc(u) for u in own if u):
        return True
    async with connection(pool) as conn:
        urls = await nodes.public_urls(conn)
    return any(netloc == _netloc(u) for u in urls)


async def check_origin(request: web.Request, pool: asyncpg.Pool, own: Sequence[str], *, required: bool) -> None:
    """Refuse a request whose Origin is not this card room's (and, when
    ``required``, one that names none)."""
    origin = request.headers.get("Origin")
    if origin is None:
        if required:
            raise OriginRefused("this request needs an Origin header of this card room's pages")
        return
    if not await _allowed(request, pool, origin, own):
        raise OriginRefused(f"requests from {origin[:100]} may not use this card room's session")


async def player_of(
    request: web.Request,
    pool: asyncpg.Pool,
    own: Sequence[str],
    *,
    websocket: bool = False,
    wait: float = ACQUIRE_TIMEOUT,
) -> store.Player | None:
    """The player a request speaks for: by its bearer token, else (a WebSocket) by a
    ticket, else by its session cookie (the Origin checked: required for a ticket, a
    WebSocket and a request that changes something, and refused when it names another
    site); None when none."""
    token = _bearer(request, websocket=websocket)
    if token is not None:
        async with connection(pool, wait) as conn:
            return await store.player_by_token(conn, token)
    ticket = _offered(request, WS_TICKET_PREFIX) if websocket else None
    if ticket is not None:  # a page of this card room, served by another of its nodes
        await check_origin(request, pool, own, required=True)
        async with connection(pool, wait) as conn:
            return await store.player_by_ticket(conn, ticket)
    session = session_of(request)
    if session is None:
        return None
    await check_origin(request, pool, own, required=websocket or request.method not in SAFE_METHODS)
    async with connection(pool, wait) as conn:
        return await store.player_by_session(conn, session)


def set_cookie(response: web.StreamResponse, request: web.Request, session: str) -> None:
    """The session cookie: out of scripts' reach (HttpOnly), sent by this site's pages
    only (SameSite=Strict), over TLS only when the page came over TLS."""
    response.set_cookie(
        COOKIE,
        session,
        max_age=store.SESSION_DAYS * 86400,
        path="/",
        httponly=True,
        samesite="Strict",
        secure=request.secure,
    )


def clear_cookie(response: web.StreamResponse, request: web.Request) -> None:
    response.set_cookie(COOKIE, "", max_age=0, path="/", httponly=True, samesite="Strict", secure=request.secure)
