"""What handlers do at the edge before any work: the body parsed and checked against
its schema (:mod:`service.wire`), who is asking (the operator, a player), the audit
of an operator's action, paging.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any

from aiohttp import web

from service import auth, store, wire
from service.appkeys import CONFIG, POOL
from service.db import ACQUIRE_TIMEOUT, AWAY, REFUSING, before_writing, connection
from service.errors import ServiceError
from service.wire import WireError
from verifier.ed25519 import key_problem
from verifier.errors import RuleError

log = logging.getLogger("rummy.edge")


class ApiError(ServiceError):
    """A request refused by a handler: its status, code and message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message, code=code, status=status)


# ----------------------------------------------------------------------------- helpers
async def body_json(request: web.Request, spec: wire.Obj, code: str = "bad_request") -> dict[str, Any]:
    """The request body, parsed and checked against its schema (empty body: {}); a
    body that does not fit is refused with ``code``."""
    if request.content_length is not None and request.content_length > wire.MAX_MESSAGE_BYTES:
        raise WireError(f"request bodies are at most {wire.MAX_MESSAGE_BYTES} bytes", "message_too_large", 413)
    raw = b""
    while len(raw) <= wire.MAX_MESSAGE_BYTES:  # to its end: one read gives what has come so far
        more = await request.content.read(wire.MAX_MESSAGE_BYTES + 1 - len(raw))
        if not more:
            break
        raw += more
    data = wire.parse_object(raw, what="body") if raw.strip() else {}
    return wire.check(spec, data, "body", code=code)


async def require_operator(request: web.Request) -> None:
    token = wire.bearer_token(request.headers.get("Authorization"))
    status = None
    if token is not None:
        with before_writing():
            async with connection(request.app[POOL]) as conn:
                status = await store.operator_status(conn, token)
    if status is None:
        raise ApiError(401, "unauthorized", "this needs the operator token")
    if status.startswith("retired:"):
        raise ApiError(
            401,
            "token_rotated",
            f"this operator token was rotated away at {status.split(':', 1)[1]}; use the new one",
        )


async def operator_body(
    request: web.Request, action: str, target: str | None, spec: wire.Obj, code: str = "bad_request"
) -> dict[str, Any]:
    """An operator action's body (:func:`body_json`); one that is refused is written
    to the audit log as a refused ``action`` too (its params: what could be read of
    the body, as text), so the log shows every operator request, not only those that
    parsed."""
    try:
        return await body_json(request, spec, code)
    except ServiceError as e:
        await audit_refusal(request, action, target, {"body": "not read: " + e.code}, e)
        raise


async def audit_refusal(
    request: web.Request, action: str, target: str | None, params: dict[str, Any], e: ServiceError | RuleError
) -> None:
    """Write a refused operator action to the audit log.  A database away meanwhile is
    logged, not raised: the refusal stays the answer (nothing was stored), never an
    ``outcome_unknown`` or ``unavailable`` in its place."""
    outcome = f"refused: {getattr(e, 'code', type(e).__name__)}: {getattr(e, 'message', str(e))}"
    try:
        async with connection(request.app[POOL]) as conn:
            await store.audit(conn, action, target, params, outcome)
    except (*AWAY, *REFUSING) as away:
        log.warning("%s refused (%s), and not audited: the database is away (%s)", action, outcome, away)


async def audited(
    request: web.Request, action: str, target: str | None, params: dict[str, Any], work: Awaitable[Any]
) -> Any:
    """Run an operator action and write it to the audit log, refused or done."""
    try:
        result = await work
    except (ServiceError, RuleError) as e:
        await audit_refusal(request, action, target, params, e)
        raise
    async with connection(request.app[POOL]) as conn:
        await store.audit(conn, action, target, params, "done")
    return result


def page(request: web.Request) -> tuple[int, int]:
    """``limit`` (1–500, default 50) and ``offset`` from the query."""
    q = request.query
    limit = wire.path_int(q["limit"], "limit", 500) if "limit" in q else 50
    offset = wire.path_int(q["offset"], "offset", 10**9, lo=0) if "offset" in q else 0
    return limit, offset


async def require_player(
    request: web.Request, *, websocket: bool = False, wait: float = ACQUIRE_TIMEOUT
) -> store.Player:
    """The player by bearer token or session cookie (:func:`service.auth.player_of`),
    waiting up to ``wait`` seconds for a pooled connection."""
    cfg = request.app[CONFIG]
    with before_writing():
        player = await auth.player_of(request, request.app[POOL], cfg.own_urls(), websocket=websocket, wait=wait)
    if player is None:
        raise ApiError(401, "unauthorized", "this needs a player's bearer token or session")
    return player


# ----------------------------------------------------------------------------- REST
def strict_key(hex_key: str) -> bytes:
    """A player's key, refused with ``bad_key`` unless it is a strict Ed25519 key
    (docs/fairness.md §9: no small-order point, a canonical encoding)."""
    raw = bytes.fromhex(hex_key)
    problem = key_problem(raw)
    if problem is not None:
        raise ApiError(400, "bad_key", f"public_key is not a strict Ed25519 public key: {problem}")
    return raw


def int_or_none(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() and len(text) < 4 else None
