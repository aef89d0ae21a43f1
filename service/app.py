"""The aiohttp application: a small REST API and the WebSocket ``/ws``.

Resources live in ``cleanup_ctx`` (the pool, the server lock, the table tasks); state
hangs off typed ``web.AppKey``s.  Every input is parsed and checked at the edge
(:mod:`service.wire`) before anything runs; every error a client can cause is answered
with a typed JSON error to that client only.  docs/api.md documents every route and
message.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import asyncpg
from aiohttp import WSCloseCode, WSMsgType, web
from aiohttp.http_exceptions import HttpProcessingError
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from service import auth, ledger, store, wire
from service.cluster import Cluster, Lease, NodeSettings, forget_every_node
from service.db import ServerLock, connection, create_pool, migrate
from service.headers import add_security_headers
from service.keys import ServerKeys
from service.metrics import Metrics
from service.openapi import document as openapi_document
from service.pages import add_page_routes
from service.table import ClientError, Settings, TableActor
from service.telling import Connection, iso
from service.wire import WireError
from service.writer import RecordWriter
from verifier.ed25519 import key_problem
from verifier.errors import RuleError
from verifier.hand import TableRules
from verifier.record import PROTOCOL
from verifier.signing import public_pem

log = logging.getLogger("rummy.app")

WS_HARD_LIMIT = 64 * 1024  # aiohttp closes the socket beyond this; up to it, a typed error
TABLE_ANSWER_SECONDS = 30.0


@dataclass
class Config:
    dsn: str
    keys: ServerKeys
    settings: Settings = field(default_factory=Settings)
    operator_token: str | None = None  # from the environment; else created on first run
    heartbeat: float = 20.0
    node: NodeSettings = field(default_factory=NodeSettings)
    #: where people open this card room's pages besides this node's own URL (a worker
    #: of ``serve --workers``: the server's port): origins the session cookie is taken from
    page_urls: tuple[str, ...] = ()

    def own_urls(self) -> tuple[str, ...]:
        return (self.node.public_url, *self.page_urls) if self.node.public_url else self.page_urls


CONFIG = web.AppKey("config", Config)
POOL = web.AppKey("pool", asyncpg.Pool)
TABLES = web.AppKey("tables", dict)  # table id -> TableActor
SOCKETS = web.AppKey("sockets", dict)  # WebSocketResponse -> Connection
NEW_OPERATOR_TOKEN = web.AppKey("new_operator_token", list)
LOCK = web.AppKey("lock", ServerLock)
CLUSTER = web.AppKey("cluster", Cluster)
BACKGROUND = web.AppKey("background", set)  # short tasks kept alive until done
WRITER = web.AppKey("writer", RecordWriter)
LOADS = web.AppKey("loads", asyncio.Semaphore)  # tables loading at once (service.table)
HEARTBEAT = web.AppKey("heartbeat", asyncio.Task)  # the cluster's heartbeat (service.cluster)
TABLE_LOADS_AT_ONCE = 4  # of the pool's 10 connections: group commit, REST and the ledger keep the rest
METRICS = web.AppKey("metrics", Metrics)
LEDGER_TOTALS = web.AppKey("ledger_totals", dict)  # read for /metrics just before it is drawn


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def error_response(
    status: int, code: str, message: str, rule: str | None = None, ack: dict[str, Any] | None = None
) -> web.Response:
    body: dict[str, Any] = {"error": {"code": code, "message": message}}
    if rule:
        body["error"]["rule"] = rule
    if ack is not None:  # a move the table judged and refused: the server's signed ack (§15)
        body["error"]["ack"] = ack
    return web.json_response(body, status=status)


RULE_STATUS = {
    # A well-formed request the state of things refuses is a 409 (not a 400: nothing in
    # the request was wrong; not a 402, which RFC 9110 reserves).
    "insufficient_balance": 409,
    "no_player_key": 409,
    "seat_taken": 409,
    "already_seated": 409,
    "not_seated": 409,
    "no_such_seat": 409,  # seat 6 of a table of 4: the schema allows it, this table has none
    "table_full": 409,
    "hand_over": 409,
    "table_closed": 409,
    "no_such_hand": 404,
    "unavailable": 503,
    "shutting_down": 503,
}


access = logging.getLogger("rummy.access")


@web.middleware
async def access_log(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """One line per request (with ``--log-format json``, one JSON object)."""
    started = time.perf_counter()
    status = 500
    try:
        response = await handler(request)
        status = response.status
        return response
    except web.HTTPException as e:
        status = e.status
        raise
    finally:
        if request.path != "/ws" or status != 101:
            access.info(
                "%s %s %d %.1fms",
                request.method,
                request.path,
                status,
                (time.perf_counter() - started) * 1000,
                extra={"method": request.method, "path": request.path, "status": status, "remote": request.remote},
            )


@web.middleware
async def errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    try:
        return await handler(request)
    except ApiError as e:
        return error_response(e.status, e.code, e.message)
    except auth.OriginRefused as e:
        return error_response(403, e.code, str(e))
    except WireError as e:
        return error_response(e.status, e.code, e.message)
    except store.StoreError as e:
        return error_response(e.status, e.code, e.message)
    except ledger.LedgerError as e:
        return error_response(RULE_STATUS.get(e.code, 400), e.code, e.message)
    except RuleError as e:  # the kernel's errors and the server's ClientError
        return error_response(RULE_STATUS.get(e.code, 400), e.code, e.message, e.rule, getattr(e, "ack", None))
    except TimeoutError:
        return error_response(503, "busy", "the table did not answer in time; check before you try again")
    except web.HTTPRedirection:
        raise
    except web.HTTPException as e:
        if e.status >= 400:
            code = {404: "not_found", 405: "method_not_allowed", 413: "message_too_large"}.get(e.status, "bad_request")
            return error_response(e.status, code, e.reason)
        raise
    except (asyncpg.PostgresConnectionError, OSError, asyncpg.InterfaceError) as e:
        log.warning("%s %s: the database is away (%s)", request.method, request.path, type(e).__name__)
        return error_response(503, "unavailable", "the database is unavailable right now; nothing was changed")


# ----------------------------------------------------------------------------- helpers
async def body_json(request: web.Request, spec: wire.Obj, code: str = "bad_request") -> dict[str, Any]:
    """The request body, parsed and checked against its schema (empty body: {}); a
    body that does not fit is refused with ``code``."""
    if request.content_length is not None and request.content_length > wire.MAX_MESSAGE_BYTES:
        raise WireError(f"request bodies are at most {wire.MAX_MESSAGE_BYTES} bytes", "message_too_large", 413)
    raw = await request.content.read(wire.MAX_MESSAGE_BYTES + 1)
    data = wire.parse_object(raw, what="body") if raw.strip() else {}
    return wire.check(spec, data, "body", code=code)


async def require_operator(request: web.Request) -> None:
    token = wire.bearer_token(request.headers.get("Authorization"))
    status = None
    if token is not None:
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


async def audited(
    request: web.Request, action: str, target: str | None, params: dict[str, Any], work: Awaitable[Any]
) -> Any:
    """Run an operator action and write it to the audit log, refused or done."""
    try:
        result = await work
    except (ApiError, WireError, RuleError, ledger.LedgerError, store.StoreError) as e:
        outcome = f"refused: {getattr(e, 'code', type(e).__name__)}: {getattr(e, 'message', str(e))}"
        async with connection(request.app[POOL]) as conn:
            await store.audit(conn, action, target, params, outcome)
        raise
    async with connection(request.app[POOL]) as conn:
        await store.audit(conn, action, target, params, "done")
    return result


def page(request: web.Request) -> tuple[int, int]:
    """``limit`` (1–500, default 50) and ``offset`` from the query."""
    q = request.query
    limit = wire.path_int(q["limit"], "limit", 500) if "limit" in q else 50
    offset = 0 if q.get("offset", "0") == "0" else wire.path_int(q["offset"], "offset", 10**9)
    return limit, offset


async def require_player(request: web.Request, *, websocket: bool = False) -> store.Player:
    """The player by bearer token or session cookie (:func:`service.auth.player_of`)."""
    player = await auth.player_of(request, request.app[POOL], request.app[CONFIG].own_urls(), websocket=websocket)
    if player is None:
        raise ApiError(401, "unauthorized", "this needs a player's bearer token or session")
    return player


async def actor(request: web.Request, table_id: str) -> TableActor:
    """The table's task on this node; a table another node owns is a redirect there
    (307: the method and body are sent again)."""
    a = request.app[TABLES].get(wire.path_id(table_id, "a table id"))
    if a is not None:
        assert isinstance(a, TableActor)
        return a
    owner = await request.app[CLUSTER].owner_of(table_id)
    if owner is not None and owner[0] != request.app[CONFIG].node.node_id:
        raise web.HTTPTemporaryRedirect(owner[1].rstrip("/") + request.path_qs)
    async with connection(request.app[POOL]) as conn:
        exists = await store.table_row(conn, table_id)
    if exists is None:
        raise ApiError(404, "no_such_table", f"no table {table_id}")
    raise ApiError(503, "unavailable", f"table {table_id} is between servers right now; try again in a moment")


# ----------------------------------------------------------------------------- REST
def strict_key(hex_key: str) -> bytes:
    """A player's key, refused with ``bad_key`` unless it is a strict Ed25519 key
    (docs/fairness.md §9: no small-order point, a canonical encoding)."""
    raw = bytes.fromhex(hex_key)
    problem = key_problem(raw)
    if problem is not None:
        raise ApiError(400, "bad_key", f"public_key is not a strict Ed25519 public key: {problem}")
    return raw


async def create_player(request: web.Request) -> web.Response:
    await require_operator(request)
    data = await body_json(request, wire.NEW_PLAYER)
    key = strict_key(data["public_key"]) if "public_key" in data else None

    async def work() -> tuple[store.Player, str, ledger.Balance]:
        async with connection(request.app[POOL]) as conn:
            player, token = await store.create_player(
                conn, data["name"], is_bot=data.get("bot", False), deposit=data.get("deposit", 0), public_key=key
            )
            return player, token, await ledger.balance(conn, player.id)

    shown = {k: v for k, v in data.items() if k != "public_key"}
    player, token, bal = await audited(request, "create_player", None, shown, work())
    return web.json_response(
        {"id": player.id, "name": player.name, "token": token, "available": bal.available}, status=201
    )


async def deposit(request: web.Request) -> web.Response:
    return await _move_money(request, "deposit", ledger.deposit)


async def withdraw(request: web.Request) -> web.Response:
    return await _move_money(request, "withdraw", ledger.withdraw)


async def _move_money(
    request: web.Request, action: str, move: Callable[[asyncpg.Connection, str, int], Awaitable[int]]
) -> web.Response:
    """A deposit or a withdrawal: double-entry, never below zero (D18)."""
    await require_operator(request)
    data = await body_json(request, wire.DEPOSIT, "bad_amount")
    player_id = wire.path_id(request.match_info["player_id"], "a player id")

    async def work() -> ledger.Balance:
        async with connection(request.app[POOL]) as conn:
            if not await store.player_exists(conn, player_id):
                raise ApiError(404, "no_such_player", f"no player {player_id}")
            await move(conn, player_id, data["amount"])
            return await ledger.balance(conn, player_id)

    bal = await audited(request, action, player_id, data, work())
    return web.json_response({"id": player_id, "available": bal.available, "held": bal.held})


async def set_key(request: web.Request) -> web.Response:
    player = await require_player(request)
    data = await body_json(request, wire.PLAYER_KEY)
    key = strict_key(data["public_key"])
    async with connection(request.app[POOL]) as conn:
        await store.set_public_key(conn, player.id, key)
    return web.json_response({"id": player.id, "public_key": data["public_key"]})


async def create_table(request: web.Request) -> web.Response:
    await require_operator(request)
    data = await body_json(request, wire.NEW_TABLE, "bad_table")
    settings = dict(data)
    max_away = data.pop("max_away_hands", 3)

    async def work() -> tuple[str, TableRules, TableActor]:
        rules = TableRules(**data)  # validated: a bad combination is an error, never repaired
        cluster = request.app[CLUSTER]
        lease: Lease | None = None
        try:
            async with connection(request.app[POOL]) as conn, conn.transaction():
                table_id = await store.create_table(conn, rules, max_away_hands=max_away)
                lease = await cluster.add_table(conn, table_id)
        except BaseException:
            if lease is not None:
                cluster.abandon(lease.table_id)
            raise
        cluster.adopt(lease)  # committed: from now on the heartbeat renews it
        a = new_actor(request.app, lease)  # and it runs, whatever happens to the audit row
        a.start()
        return table_id, rules, a

    table_id, rules, a = await audited(request, "create_table", None, settings, work())
    await asyncio.wait_for(a.loaded.wait(), 10)
    return web.json_response({"id": table_id, **rules.to_json(), "max_away_hands": max_away}, status=201)


async def list_tables(request: web.Request) -> web.Response:
    async with connection(request.app[POOL]) as conn:
        return web.json_response({"tables": await store.list_tables(conn)})


async def sit(request: web.Request) -> web.Response:
    player = await require_player(request)
    data = await body_json(request, wire.SIT)
    a = await actor(request, request.match_info["table_id"])
    return web.json_response(await a.submit("sit", player.id, data))


async def leave(request: web.Request) -> web.Response:
    player = await require_player(request)
    data = await body_json(request, wire.LEAVE)
    a = await actor(request, request.match_info["table_id"])
    return web.json_response(await a.submit("leave", player.id, data))


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


async def me(request: web.Request) -> web.Response:
    player = await require_player(request)
    async with connection(request.app[POOL]) as conn:
        bal = await ledger.balance(conn, player.id)
        holds = await conn.fetch(
            "SELECT hp.hand_id, h.table_id, hp.hold FROM hand_players hp JOIN hands h ON h.id = hp.hand_id "
            "WHERE hp.player_id = $1 AND h.status IN ('seeding', 'playing')",
            player.id,
        )
        seats = await conn.fetch("SELECT table_id, seat FROM seats WHERE player_id = $1", player.id)
        key = await conn.fetchval("SELECT public_key FROM players WHERE id = $1", player.id)
    return web.json_response(
        {
            "id": player.id,
            "name": player.name,
            "available": bal.available,
            "held": bal.held,
            "public_key": None if key is None else bytes(key).hex(),
            "holds": [{"hand_id": h["hand_id"], "table_id": h["table_id"], "amount": h["hold"]} for h in holds],
            "seats": [{"table_id": s["table_id"], "seat": s["seat"]} for s in seats],
        }
    )


async def my_hands(request: web.Request) -> web.Response:
    player = await require_player(request)
    async with connection(request.app[POOL]) as conn:
        return web.json_response({"hands": await store.hand_history(conn, player.id)})


async def transcript(request: web.Request) -> web.Response:
    hand_id = wire.path_int(request.match_info["hand_id"], "a hand id")
    async with connection(request.app[POOL]) as conn:
        row = await conn.fetchrow(
            "SELECT status, transcript::text AS transcript, void_reason FROM hands WHERE id = $1", hand_id
        )
    if row is None:
        raise ApiError(404, "no_such_hand", f"no hand {hand_id}")
    if row["transcript"] is None:
        if row["status"] == "void":
            raise ApiError(410, "void_without_transcript", f"the hand was voided: {row['void_reason']}")
        raise ApiError(409, "hand_in_progress", "the transcript is published when the hand ends")
    return web.Response(text=row["transcript"], content_type="application/json")


async def table_detail(request: web.Request) -> web.Response:
    a = await actor(request, request.match_info["table_id"])
    async with connection(request.app[POOL]) as conn:
        row = next((t for t in await store.list_tables(conn) if t["id"] == a.table_id), None)
    if row is None:
        raise ApiError(404, "no_such_table", f"no table {a.table_id}")
    hand = a.hand
    row["status"] = a.t.status
    row["hand"] = (
        None
        if hand is None
        else {"hand_id": hand.hand_id, "hand_no": hand.hand_no, "phase": hand.phase, "seats": sorted(hand.players)}
    )
    return web.json_response(row)


async def close_table(request: web.Request) -> web.Response:
    await require_operator(request)
    a = await actor(request, request.match_info["table_id"])
    result = await audited(request, "close_table", a.table_id, {}, a.submit("close", "operator", {}))
    return web.json_response(result)


async def stand_seat(request: web.Request) -> web.Response:
    await require_operator(request)
    a = await actor(request, request.match_info["table_id"])
    seat = wire.check(wire.Obj({"seat": wire.Int(0, 7)}), {"seat": _int_or_none(request.match_info["seat"])})["seat"]
    work = a.submit("stand", "operator", {"seat": seat})
    return web.json_response(await audited(request, "stand_seat", f"{a.table_id}/{seat}", {"seat": seat}, work))


def _int_or_none(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() and len(text) < 4 else None


async def admin_players(request: web.Request) -> web.Response:
    await require_operator(request)
    limit, offset = page(request)
    q = request.query.get("q")
    if q is not None:
        q = wire.Text(1, 64).check(q, "q")
    async with connection(request.app[POOL]) as conn:
        players, total = await store.list_players(conn, q, limit, offset)
    return web.json_response({"players": players, "total": total})


async def admin_player(request: web.Request) -> web.Response:
    await require_operator(request)
    player_id = wire.path_id(request.match_info["player_id"], "a player id")
    async with connection(request.app[POOL]) as conn:
        found = [p for p in (await store.list_players(conn, player_id, 500, 0))[0] if p["id"] == player_id]
        if not found:
            raise ApiError(404, "no_such_player", f"no player {player_id}")
        holds = await conn.fetch(
            "SELECT hp.hand_id, h.table_id, hp.hold FROM hand_players hp JOIN hands h ON h.id = hp.hand_id "
            "WHERE hp.player_id = $1 AND h.status IN ('seeding', 'playing')",
            player_id,
        )
        hands = await store.hand_history(conn, player_id)
    out = found[0]
    out["holds"] = [{"hand_id": h["hand_id"], "table_id": h["table_id"], "amount": h["hold"]} for h in holds]
    out["hands"] = hands
    return web.json_response(out)


async def admin_hands(request: web.Request) -> web.Response:
    await require_operator(request)
    limit, offset = page(request)
    q = request.query
    status = q.get("status")
    if status is not None and status not in ("seeding", "playing", "ended", "void"):
        raise WireError("status is one of seeding, playing, ended, void", "bad_request")
    table = wire.path_id(q["table"], "table") if "table" in q else None
    player = wire.path_id(q["player"], "player") if "player" in q else None
    async with connection(request.app[POOL]) as conn:
        hands, total = await store.list_hands(
            conn, table=table, status=status, player=player, limit=limit, offset=offset
        )
    return web.json_response({"hands": hands, "total": total})


async def rotate_token(request: web.Request) -> web.Response:
    await require_operator(request)

    async def work() -> str:
        async with connection(request.app[POOL]) as conn:
            return await store.rotate_operator_token(conn)

    token = await audited(request, "rotate_operator_token", None, {}, work())
    return web.json_response({"token": token}, status=201)


async def admin_audit(request: web.Request) -> web.Response:
    await require_operator(request)
    limit, offset = page(request)
    async with connection(request.app[POOL]) as conn:
        rows, total = await store.list_audit(conn, limit, offset)
    return web.json_response({"audit": rows, "total": total})


async def metrics(request: web.Request) -> web.Response:
    """Prometheus text; for the operator, or anyone on this machine (a scraper)."""
    if request.remote not in ("127.0.0.1", "::1"):
        await require_operator(request)
    async with connection(request.app[POOL]) as conn:
        request.app[LEDGER_TOTALS].update(await ledger.summary(conn))
    body = generate_latest(request.app[METRICS].registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def openapi(request: web.Request) -> web.Response:
    return web.json_response(openapi_document())


async def void_hand(request: web.Request) -> web.Response:
    await require_operator(request)
    hand_id = wire.path_int(request.match_info["hand_id"], "a hand id")
    data = await body_json(request, wire.VOID)
    async with connection(request.app[POOL]) as conn:
        row = await conn.fetchrow("SELECT table_id, status FROM hands WHERE id = $1", hand_id)
    if row is None:
        raise ApiError(404, "no_such_hand", f"no hand {hand_id}")
    if row["status"] not in ("seeding", "playing"):
        raise ApiError(409, "hand_over", f"hand {hand_id} is {row['status']}")
    a = await actor(request, row["table_id"])
    work = a.submit("void", "operator", {"hand_id": hand_id, "reason": data["reason"]})
    return web.json_response(await audited(request, "void_hand", str(hand_id), data, work))


async def fairness_key(request: web.Request) -> web.Response:
    signer = request.app[CONFIG].keys.signer
    raw = signer.public_bytes
    return web.json_response(
        {
            "algorithm": "Ed25519",
            "protocol": PROTOCOL,
            "public_key_hex": raw.hex(),
            "public_key_base64": base64.b64encode(raw).decode(),
            "public_key_pem": public_pem(raw),
            "fingerprint": signer.fingerprint,
        }
    )


async def ledger_summary(request: web.Request) -> web.Response:
    await require_operator(request)
    async with connection(request.app[POOL]) as conn:
        return web.json_response(await ledger.summary(conn))


async def health(request: web.Request) -> web.Response:
    async with connection(request.app[POOL]) as conn:
        await conn.fetchval("SELECT 1")
    tables = request.app[TABLES].values()
    return web.json_response(
        {"ok": True, "tables": len(request.app[TABLES]), "paused": sum(1 for a in tables if a.paused)}
    )


# ----------------------------------------------------------------------------- WebSocket
async def websocket(request: web.Request) -> web.WebSocketResponse:
    """One authenticated player per socket.  Messages are JSON objects with a client
    message ``id``; on this connection a repeated id gets the original reply and is
    never applied twice (``join`` is never replayed).  A writer task drains the
    socket's bounded queue."""
    player = await require_player(request, websocket=True)
    ws = web.WebSocketResponse(
        heartbeat=request.app[CONFIG].heartbeat,
        max_msg_size=WS_HARD_LIMIT,
        timeout=1.0,
        protocols=(auth.WS_PROTOCOL,),
    )
    await ws.prepare(request)
    closing: list[asyncio.Task[bool]] = []

    def drop_slow_client() -> None:
        closing.append(asyncio.create_task(ws.close(code=WSCloseCode.POLICY_VIOLATION, message=b"too slow")))

    conn = Connection(player.id, request.app[CONFIG].settings.queue_size, on_overflow=drop_slow_client)
    request.app[SOCKETS][ws] = conn
    writer = asyncio.create_task(_writer(ws, conn), name=f"ws-writer-{player.id}")
    joined: set[str] = set()
    conn.push(
        {"type": "hello", "player_id": player.id, "name": player.name, "protocol": PROTOCOL, "now": iso(time.time())}
    )
    try:
        async for msg in ws:
            if msg.type == WSMsgType.TEXT:
                await _on_text(request, conn, player, msg.data, joined)
            elif msg.type == WSMsgType.BINARY:
                conn.push(_error(None, "bad_message", "messages are JSON text"))
            else:
                break
    finally:
        for table_id in joined:
            a = request.app[TABLES].get(table_id)
            if a is not None:
                a.detach(conn)
        conn.close()
        request.app[SOCKETS].pop(ws, None)
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(writer, 2)
        writer.cancel()
    return ws


async def _writer(ws: web.WebSocketResponse, conn: Connection) -> None:
    while True:
        text = await conn.outbox.get()
        if text is None or ws.closed:
            break
        try:
            await ws.send_str(text)
        except (ConnectionResetError, RuntimeError):
            break
    with contextlib.suppress(Exception):
        await ws.close()


def _error(msg_id: str | None, code: str, message: str, rule: str | None = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if rule:
        err["rule"] = rule
    return {"type": "error", "id": msg_id, "error": err}


def _reply_for(msg_id: str, outcome: asyncio.Future[dict[str, Any]]) -> dict[str, Any]:
    e = outcome.exception()
    if e is None:
        return {"type": "reply", "id": msg_id, "ok": True, "result": outcome.result()}
    if isinstance(e, RuleError):
        err = e.to_json()
        if hasattr(e, "redirect"):
            err["redirect"] = e.redirect
        if hasattr(e, "ack"):  # a move the table judged and refused: the server's signed ack (§15)
            err["ack"] = e.ack
        return {"type": "error", "id": msg_id, "error": err}
    if isinstance(e, ApiError | WireError):
        return _error(msg_id, e.code, e.message)
    log.error("message %s failed", msg_id, exc_info=e)
    return _error(msg_id, "server_error", "the server failed; nothing was applied unless an update says so")


async def _on_text(request: web.Request, conn: Connection, player: store.Player, text: str, joined: set[str]) -> None:
    try:
        msg_id, data = wire.frame(text)
    except WireError as e:
        conn.push(_error(getattr(e, "msg_id", None), e.code, e.message))
        return
    replayable = data["type"] != "join"
    earlier = conn.replies.get(msg_id) if replayable else None
    if earlier is not None:
        await asyncio.wait([earlier])  # the same answer again, once it is known; nothing is applied twice
        conn.push({**_reply_for(msg_id, earlier), "replayed": True})
        return
    outcome = await _dispatch(request, conn, player, data, joined)
    if replayable:
        conn.remember(msg_id, outcome)
    done, _ = await asyncio.wait([outcome], timeout=TABLE_ANSWER_SECONDS)
    if not done:
        conn.push(_error(msg_id, "busy", "the table has not answered yet; send the same id again for its answer"))
        return
    conn.push(_reply_for(msg_id, outcome))


async def _dispatch(
    request: web.Request, conn: Connection, player: store.Player, data: dict[str, Any], joined: set[str]
) -> asyncio.Future[dict[str, Any]]:
    """The future answer to one checked frame (a table's answer comes later)."""
    done: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    kind = data["type"]
    if kind == "ping":
        done.set_result({"pong": True})
        return done
    a: TableActor | None = request.app[TABLES].get(data["table_id"])
    if a is None:
        done.set_exception(await _elsewhere(request, data["table_id"]))
        return done
    if kind == "join":
        a.attach(conn)
        joined.add(a.table_id)
        return a.enqueue("snapshot", player.id, {"since": data.get("since")})
    if a.table_id not in joined:
        done.set_exception(ClientError("not_joined", "send a 'join' for this table first"))
        return done
    payload = {k: v for k, v in data.items() if k not in ("type", "id", "table_id")}
    return a.enqueue(kind, player.id, payload)


async def _elsewhere(request: web.Request, table_id: str) -> ClientError:
    """Why a table is not served here: another node owns it (its URL in
    ``redirect``), it is between nodes, or there is no such table."""
    owner = await request.app[CLUSTER].owner_of(table_id)
    if owner is not None and owner[0] != request.app[CONFIG].node.node_id:
        err = ClientError("wrong_node", f"table {table_id} is served by {owner[1]}: connect there")
        err.redirect = owner[1]  # type: ignore[attr-defined]
        return err
    async with connection(request.app[POOL]) as conn:
        exists = await store.table_row(conn, table_id)
    if exists is None:
        return ClientError("no_such_table", f"no table {table_id}")
    return ClientError("unavailable", f"table {table_id} is between servers right now; try again in a moment")


# ----------------------------------------------------------------------------- the app
async def _node_urls(request: web.Request) -> list[str]:
    """The public URLs of this card room's nodes (this one's alone when it has no
    cluster, or when the database cannot say)."""
    node = request.app[CONFIG].node
    urls = [node.public_url] if node.public_url else []
    if node.cluster:
        with contextlib.suppress(OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
            async with connection(request.app[POOL]) as conn:
                rows = await conn.fetch("SELECT public_url FROM nodes WHERE public_url <> ''")
            urls += [str(r["public_url"]) for r in rows]
    return urls


async def _database(app: web.Application) -> AsyncIterator[None]:
    cfg = app[CONFIG]
    # A worker's supervisor holds the database's lock for all its workers (service.workers).
    lock = None if cfg.node.worker else await ServerLock.acquire(cfg.dsn, shared=cfg.node.cluster)
    try:
        pool = await create_pool(cfg.dsn)
        try:
            async with connection(pool) as conn:
                await migrate(conn)
                await store.check_keys(conn, cfg.keys)
                token = await store.operator_token(conn, cfg.operator_token)
                if lock is not None and not lock.shared:  # alone on this database: every node row is dead
                    await forget_every_node(conn)
            app[NEW_OPERATOR_TOKEN].append(token)
            app[POOL] = pool
            app[WRITER] = RecordWriter(pool, window=cfg.settings.group_commit_seconds)
            app[LOADS] = asyncio.Semaphore(TABLE_LOADS_AT_ONCE)
            watchdog = None
            if lock is not None:
                app[LOCK] = lock
                watchdog = asyncio.create_task(_keep_lock(app, lock), name="server-lock")
            try:
                yield
            finally:
                if watchdog is not None:
                    watchdog.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await watchdog
        finally:
            await pool.close()
    finally:
        if lock is not None:
            await lock.release()


async def _keep_lock(app: web.Application, lock: ServerLock, every: float = 2.0) -> None:
    """Hold the one-server-per-database lock; if another server took it while the
    database was away, stop every table at once: two servers never write one table."""
    while True:
        await asyncio.sleep(every)
        try:
            held = await lock.keep()
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
            continue  # the database is away; the tables pause on their own
        if not held:
            log.critical("another server took this database's lock: stopping every table")
            await _stop_tables(app)
            return


async def _tables(app: web.Application) -> AsyncIterator[None]:
    """Take this node's leases and start their tables; keep the heartbeat; on the way
    out stop every table, then hand the leases over."""
    cfg = app[CONFIG]

    def start(lease: Lease) -> None:
        old = app[TABLES].get(lease.table_id)
        if old is not None:  # taken again with a new epoch: the old task can never write again
            task = asyncio.create_task(old.lose())
            app[BACKGROUND].add(task)
            task.add_done_callback(app[BACKGROUND].discard)
        new_actor(app, lease).start()

    async def stop(table_id: str) -> None:
        """The lease is lost: the table's clients are told ``moved`` and their sockets
        closed, exactly as when a write is fenced (they reconnect to the new owner)."""
        a = app[TABLES].pop(table_id, None)
        if a is not None:
            await a.lose()

    def handoff(table_id: str) -> bool:
        a = app[TABLES].get(table_id)
        if a is None:
            return False
        a.request_handoff()
        return True

    cluster = Cluster(app[POOL], cfg.dsn, cfg.node, start, stop, handoff)
    app[CLUSTER] = cluster
    await cluster.join()
    # Every table is loaded (its hand resumed or voided) before the server answers.
    await asyncio.gather(*(asyncio.wait_for(a.loaded.wait(), 60) for a in app[TABLES].values()))
    beat = asyncio.create_task(cluster.run(), name="cluster-heartbeat")
    app[HEARTBEAT] = beat
    try:
        yield
    finally:
        beat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beat
        await _stop_tables(app)
        await cluster.leave()


def new_actor(app: web.Application, lease: Lease) -> TableActor:
    def lost(table_id: str, release: bool) -> None:
        """The table let go (fenced, or handed over): forget it, and give a handed-over
        table's lease up at once for another node to take."""
        if app[TABLES].get(table_id) is not a:
            return  # a newer actor serves the table (taken again, a new epoch): its lease is not ours to drop
        del app[TABLES][table_id]
        if release:
            task = asyncio.create_task(app[CLUSTER].release(table_id))
            app[BACKGROUND].add(task)
            task.add_done_callback(app[BACKGROUND].discard)
        else:
            app[CLUSTER].owned.pop(table_id, None)

    a = TableActor(
        lease.table_id,
        app[POOL],
        app[CONFIG].keys,
        app[CONFIG].settings,
        app[METRICS],
        lease=lease,
        on_lost=lost,
        writer=app[WRITER],
        loads=app[LOADS],
    )
    app[TABLES][lease.table_id] = a
    return a


async def _stop_tables(app: web.Application) -> None:
    await asyncio.gather(*(a.stop() for a in list(app[TABLES].values())))


async def _on_shutdown(app: web.Application) -> None:
    """SIGTERM/SIGINT: the listening socket is already closed; stop the heartbeat and
    every clock first (nothing is charged while the server goes down), hand the leases
    over, then tell every client, with the other nodes it may reconnect to, and close
    its socket.  Handed over first, a client that goes to another node at once is sent
    on to the table's new owner, not back to this one."""
    beat = app.get(HEARTBEAT)
    if beat is not None:
        beat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beat
    await _stop_tables(app)
    servers: list[str] = []
    if CLUSTER in app:
        with contextlib.suppress(Exception):  # the database may be away: the leases then run out
            await asyncio.wait_for(app[CLUSTER].leave(), 2.0)
            servers = await asyncio.wait_for(app[CLUSTER].others(), 1.0)
    sockets = list(app[SOCKETS].items())
    for _, conn in sockets:
        conn.push(
            {"type": "shutdown", "message": "the server is going down; reconnect in a moment", "servers": servers}
        )

    async def close(ws: web.WebSocketResponse, conn: Connection) -> None:
        await asyncio.sleep(0.05)  # let the writer send the notice
        conn.close()
        with contextlib.suppress(Exception):
            await ws.close(code=WSCloseCode.GOING_AWAY, message=b"server shutting down")

    if sockets:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(close(ws, c) for ws, c in sockets)), 1.0)


class _QuietBadRequests(logging.Filter):
    """aiohttp logs a malformed HTTP request (an over-long header, a bad
    Content-Length) as an error with a traceback, though it is the client's fault and
    is answered 400: log it as one warning line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError) and exc.code == 400:
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.msg = f"{record.getMessage()}: refused a malformed request ({exc.message.splitlines()[0][:120]})"
            record.args = ()
            record.exc_info = None
            record.exc_text = None
        return True


logging.getLogger("aiohttp.server").addFilter(_QuietBadRequests())


def _live_metrics(app: web.Application) -> None:
    def read() -> dict[str, Any]:
        tables = list(app[TABLES].values())
        totals = app[LEDGER_TOTALS]
        out: dict[str, Any] = {
            "rummy_tables": ("Tables served", len(tables)),
            "rummy_tables_paused": ("Tables waiting for their database", sum(1 for a in tables if a.paused)),
            "rummy_hands_in_progress": ("Hands in progress", sum(1 for a in tables if a.hand is not None)),
            "rummy_seats": ("Seats taken", sum(len(a.t.seats) for a in tables)),
            "rummy_connections": ("Open WebSocket connections", len(app[SOCKETS])),
        }
        for key in ("deposited", "players_available", "players_held", "house_commission"):
            if key in totals:
                out[f"rummy_ledger_{key}"] = (f"Ledger: {key.replace('_', ' ')} (HT minor units)", totals[key])
        if "ok" in totals:
            out["rummy_ledger_ok"] = ("1 when every ledger invariant holds", int(bool(totals["ok"])))
        return out

    app[METRICS].add_live(read)


def make_app(config: Config) -> web.Application:
    app = web.Application(middlewares=[access_log, errors], client_max_size=wire.MAX_MESSAGE_BYTES * 2)
    app[CONFIG] = config
    app[METRICS] = Metrics()
    app[BACKGROUND] = set()
    app[LEDGER_TOTALS] = {}
    _live_metrics(app)
    app[TABLES] = {}
    app[SOCKETS] = {}
    app[NEW_OPERATOR_TOKEN] = []
    app.cleanup_ctx.append(_database)
    app.cleanup_ctx.append(_tables)
    app.on_shutdown.append(_on_shutdown)
    app.router.add_get("/healthz", health)
    app.router.add_post("/api/players", create_player)
    app.router.add_post("/api/players/{player_id}/deposit", deposit)
    app.router.add_post("/api/players/{player_id}/withdraw", withdraw)
    app.router.add_put("/api/me/key", set_key)
    app.router.add_post("/api/tables", create_table)
    app.router.add_get("/api/tables", list_tables)
    app.router.add_get("/api/tables/{table_id}", table_detail)
    app.router.add_post("/api/tables/{table_id}/close", close_table)
    app.router.add_post("/api/tables/{table_id}/seats/{seat}/stand", stand_seat)
    app.router.add_post("/api/tables/{table_id}/sit", sit)
    app.router.add_post("/api/tables/{table_id}/leave", leave)
    app.router.add_get("/api/session", session_info)
    app.router.add_post("/api/session", sign_in)
    app.router.add_delete("/api/session", sign_out)
    app.router.add_get("/api/me", me)
    app.router.add_get("/api/me/hands", my_hands)
    app.router.add_get("/api/hands/{hand_id}/transcript", transcript)
    app.router.add_post("/api/hands/{hand_id}/void", void_hand)
    app.router.add_get("/api/fairness/key", fairness_key)
    app.router.add_get("/api/ledger", ledger_summary)
    app.router.add_get("/api/admin/players", admin_players)
    app.router.add_get("/api/admin/players/{player_id}", admin_player)
    app.router.add_get("/api/admin/hands", admin_hands)
    app.router.add_post("/api/admin/operator-token", rotate_token)
    app.router.add_get("/api/admin/audit", admin_audit)
    app.router.add_get("/api/openapi.json", openapi)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/ws", websocket)
    add_page_routes(app, _node_urls)
    add_security_headers(app)
    return app
