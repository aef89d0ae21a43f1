"""The browser's session: signing in with a player token sets the HttpOnly cookie
(:mod:`service.auth`), asking whom it speaks for, a ticket for a socket at another
node, signing out."""

from __future__ import annotations

from aiohttp import web

from service import auth, store, wire
from service.appkeys import CONFIG, POOL
from service.db import connection
from service.edge import ApiError, body_json


async def sign_in(request: web.Request) -> web.Response:
    """A browser session for the player whose token the body carries: the session
    cookie (HttpOnly) and the player's id and name.  Refused from another site's page."""
    await auth.check_origin(request, request.app[POOL], request.app[CONFIG].own_urls(), required=False)
    data = await body_json(request, wire.SIGN_IN)
    async with connection(request.app[POOL]) as conn:
        player = await store.player_by_token(conn, data["token"])
        if player is None:
            raise ApiError(401, "unauthorized", "this token was not accepted")
        session = await store.create_session(conn, player.id)
    response = web.json_response({"id": player.id, "name": player.name})
    auth.set_cookie(response, request, session)
    return response


async def session_info(request: web.Request) -> web.Response:
    """Whom the request's session cookie speaks for (``null``: nobody, never a 401: a
    page asks this before it knows whether anyone is signed in)."""
    session = auth.session_of(request)
    player = None
    if session is not None:
        async with connection(request.app[POOL]) as conn:
            player = await store.player_by_session(conn, session)
    return web.json_response({"player": None if player is None else {"id": player.id, "name": player.name}})


async def ticket(request: web.Request) -> web.Response:
    """A one-time ticket for this session's player to open a WebSocket at another node
    of the card room, one on another host name, where this node's cookie does not go
    (offered as the subprotocol ``ticket.<ticket>``, good for one socket within a
    minute).  Needs the session and a page of this card room."""
    session = auth.session_of(request)
    if session is None:
        raise ApiError(401, "unauthorized", "no session: sign in first")
    await auth.check_origin(request, request.app[POOL], request.app[CONFIG].own_urls(), required=True)
    async with connection(request.app[POOL]) as conn:
        player = await store.player_by_session(conn, session)
        if player is None:
            raise ApiError(401, "unauthorized", "this session has ended: sign in again")
        value = await store.create_ticket(conn, player.id)
    return web.json_response({"ticket": value, "expires_in": store.TICKET_SECONDS})


async def sign_out(request: web.Request) -> web.Response:
    """End the request's browser session (its cookie is cleared)."""
    session = auth.session_of(request)
    if session is not None:
        await auth.check_origin(request, request.app[POOL], request.app[CONFIG].own_urls(), required=True)
        async with connection(request.app[POOL]) as conn:
            await store.end_session(conn, session)
    response = web.json_response({"signed_out": session is not None})
    auth.clear_cookie(response, request)
    return response
