"""The aiohttp application: a small REST API and the WebSocket ``/ws``.

Resources live in ``cleanup_ctx`` (the pool, the table tasks); state hangs off typed
``web.AppKey``s.  Every error a client can cause is answered with a typed JSON error
to that client only.  docs/api.md documents every route and message.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import asyncpg
from aiohttp import WSMsgType, web

from service import ledger, store
from service.db import connection, create_pool, migrate
from service.keys import ServerKeys
from service.table import ClientError, Connection, Settings, TableActor
from verifier.errors import RuleError
from verifier.hand import TableRules
from verifier.signing import public_pem

log = logging.getLogger("rummy.app")

MAX_MESSAGE_BYTES = 8 * 1024  # our own limit: larger messages get a typed error
WS_HARD_LIMIT = 64 * 1024  # aiohttp closes the socket beyond this
REPLAY_MEMORY = 1024  # client message ids remembered per player


@dataclass
class Config:
    dsn: str
    keys: ServerKeys
    settings: Settings = field(default_factory=Settings)
    operator_token: str | None = None  # from the environment; else created on first run
    heartbeat: float = 20.0


CONFIG = web.AppKey("config", Config)
POOL = web.AppKey("pool", asyncpg.Pool)
TABLES = web.AppKey("tables", dict)  # table id -> TableActor
REPLIES = web.AppKey("replies", dict)  # player id -> OrderedDict[message id -> Future[reply]]
NEW_OPERATOR_TOKEN = web.AppKey("new_operator_token", list)


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def error_response(status: int, code: str, message: str, rule: str | None = None) -> web.Response:
    body: dict[str, Any] = {"error": {"code": code, "message": message}}
    if rule:
        body["error"]["rule"] = rule
    return web.json_response(body, status=status)


@web.middleware
async def errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    try:
        return await handler(request)
    except ApiError as e:
        return error_response(e.status, e.code, e.message)
    except store.StoreError as e:
        return error_response(e.status, e.code, e.message)
    except ledger.LedgerError as e:
        return error_response(400, e.code, e.message)
    except RuleError as e:  # the kernel's errors and the server's ClientError
        status = {"insufficient_balance": 402, "seat_taken": 409, "already_seated": 409, "table_full": 409}.get(
            e.code, 400
        )
        return error_response(status, e.code, e.message, e.rule)


# ----------------------------------------------------------------------------- helpers
async def body_json(request: web.Request) -> dict[str, Any]:
    if request.content_length is not None and request.content_length > MAX_MESSAGE_BYTES:
        raise ApiError(413, "message_too_large", f"request bodies are at most {MAX_MESSAGE_BYTES} bytes")
    raw = await request.content.read(MAX_MESSAGE_BYTES + 1)
    if len(raw) > MAX_MESSAGE_BYTES:
        raise ApiError(413, "message_too_large", f"request bodies are at most {MAX_MESSAGE_BYTES} bytes")
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ApiError(400, "bad_message", "the body is not JSON") from None
    if not isinstance(data, dict):
        raise ApiError(400, "bad_message", "the body must be a JSON object")
    return data


def bearer(request: web.Request) -> str | None:
    auth = request.headers.get("Authorization", "")
    if auth.startswith("Bearer "):
        return auth[7:].strip() or None
    return None


async def require_operator(request: web.Request) -> None:
    token = bearer(request)
    async with connection(request.app[POOL]) as conn:
        if token is None or not await store.is_operator(conn, token):
            raise ApiError(401, "unauthorized", "this needs the operator token")


async def require_player(request: web.Request) -> store.Player:
    token = bearer(request) or request.query.get("token")
    if token:
        async with connection(request.app[POOL]) as conn:
            player = await store.player_by_token(conn, token)
        if player is not None:
            return player
    raise ApiError(401, "unauthorized", "this needs a player's bearer token")


def actor(request: web.Request, table_id: str) -> TableActor:
    a = request.app[TABLES].get(table_id)
    if a is None:
        raise ApiError(404, "no_such_table", f"no table {table_id}")
    assert isinstance(a, TableActor)
    return a


# ----------------------------------------------------------------------------- REST
async def create_player(request: web.Request) -> web.Response:
    await require_operator(request)
    data = await body_json(request)
    deposit = data.get("deposit", 0)
    async with connection(request.app[POOL]) as conn:
        player, token = await store.create_player(conn, data.get("name", ""), is_bot=bool(data.get("bot", False)))
        if deposit:
            await ledger.deposit(conn, player.id, deposit)
        bal = await ledger.balance(conn, player.id)
    return web.json_response(
        {"id": player.id, "name": player.name, "token": token, "available": bal.available}, status=201
    )


async def deposit(request: web.Request) -> web.Response:
    await require_operator(request)
    data = await body_json(request)
    player_id = request.match_info["player_id"]
    async with connection(request.app[POOL]) as conn:
        if not await store.player_exists(conn, player_id):
            raise ApiError(404, "no_such_player", f"no player {player_id}")
        await ledger.deposit(conn, player_id, data.get("amount"))  # type: ignore[arg-type]
        bal = await ledger.balance(conn, player_id)
    return web.json_response({"id": player_id, "available": bal.available, "held": bal.held})


async def create_table(request: web.Request) -> web.Response:
    await require_operator(request)
    data = await body_json(request)
    unknown = set(data) - set(store.RULE_FIELDS)
    if unknown:
        raise ApiError(400, "bad_request", f"unknown table settings: {sorted(unknown)}")
    rules = TableRules(**data)  # validated: a bad setting is an error, never repaired
    if rules.point_value * 130 > ledger.MAX_AMOUNT or rules.turn_seconds > 3600:
        raise ApiError(400, "bad_table", "point_value or turn_seconds is beyond what this server accepts")
    async with connection(request.app[POOL]) as conn:
        table_id = await store.create_table(conn, rules)
    a = TableActor(table_id, request.app[POOL], request.app[CONFIG].keys, request.app[CONFIG].settings)
    await a.load()
    a.start()
    request.app[TABLES][table_id] = a
    return web.json_response({"id": table_id, **rules.to_json()}, status=201)


async def list_tables(request: web.Request) -> web.Response:
    async with connection(request.app[POOL]) as conn:
        return web.json_response({"tables": await store.list_tables(conn)})


async def sit(request: web.Request) -> web.Response:
    player = await require_player(request)
    data = await body_json(request)
    a = actor(request, request.match_info["table_id"])
    return web.json_response(await a.submit("sit", player.id, {"seat": data.get("seat")}))


async def leave(request: web.Request) -> web.Response:
    player = await require_player(request)
    a = actor(request, request.match_info["table_id"])
    return web.json_response(await a.submit("leave", player.id, {}))


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
    return web.json_response(
        {
            "id": player.id,
            "name": player.name,
            "available": bal.available,
            "held": bal.held,
            "holds": [{"hand_id": h["hand_id"], "table_id": h["table_id"], "amount": h["hold"]} for h in holds],
            "seats": [{"table_id": s["table_id"], "seat": s["seat"]} for s in seats],
        }
    )


async def my_hands(request: web.Request) -> web.Response:
    player = await require_player(request)
    async with connection(request.app[POOL]) as conn:
        return web.json_response({"hands": await store.hand_history(conn, player.id)})


async def transcript(request: web.Request) -> web.Response:
    try:
        hand_id = int(request.match_info["hand_id"])
    except ValueError:
        raise ApiError(400, "bad_request", "a hand id is an integer") from None
    async with connection(request.app[POOL]) as conn:
        row = await conn.fetchrow("SELECT status, transcript FROM hands WHERE id = $1", hand_id)
    if row is None:
        raise ApiError(404, "no_such_hand", f"no hand {hand_id}")
    if row["transcript"] is None:
        raise ApiError(409, "hand_in_progress", "the transcript is published when the hand ends")
    return web.Response(text=row["transcript"], content_type="application/json")


async def fairness_key(request: web.Request) -> web.Response:
    signer = request.app[CONFIG].keys.signer
    raw = signer.public_bytes
    return web.json_response(
        {
            "algorithm": "Ed25519",
            "protocol": "rummy-pf/v1",
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
    return web.json_response({"ok": True, "tables": len(request.app[TABLES])})


# ----------------------------------------------------------------------------- WebSocket
async def websocket(request: web.Request) -> web.WebSocketResponse:
    """One authenticated player per socket.  Messages are JSON objects with a
    client message ``id``; a repeated id gets the original reply and is never
    applied twice.  A writer task drains the socket's bounded queue."""
    player = await require_player(request)
    ws = web.WebSocketResponse(heartbeat=request.app[CONFIG].heartbeat, max_msg_size=WS_HARD_LIMIT)
    await ws.prepare(request)
    closing: list[asyncio.Task[bool]] = []

    def drop_slow_client() -> None:
        closing.append(asyncio.create_task(ws.close(code=1008, message=b"too slow")))

    conn = Connection(player.id, request.app[CONFIG].settings.queue_size, on_overflow=drop_slow_client)
    writer = asyncio.create_task(_writer(ws, conn), name=f"ws-writer-{player.id}")
    joined: set[str] = set()
    replies: collections.OrderedDict[str, asyncio.Future[dict[str, Any]]] = request.app[REPLIES].setdefault(
        player.id, collections.OrderedDict()
    )
    conn.push({"type": "hello", "player_id": player.id, "name": player.name})
    try:
        async for msg in ws:
            if msg.type == WSMsgType.TEXT:
                await _on_text(request, conn, player, msg.data, joined, replies)
            elif msg.type == WSMsgType.BINARY:
                conn.push(
                    {"type": "error", "id": None, "error": {"code": "bad_message", "message": "messages are JSON text"}}
                )
            elif msg.type == WSMsgType.ERROR:
                break
    finally:
        for table_id in joined:
            a = request.app[TABLES].get(table_id)
            if a is not None:
                a.detach(conn)
        conn.close()
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(writer, 5)
        writer.cancel()
    return ws


async def _writer(ws: web.WebSocketResponse, conn: Connection) -> None:
    while True:
        message = await conn.outbox.get()
        if message is None or ws.closed:
            break
        try:
            await ws.send_str(json.dumps(message))
        except (ConnectionResetError, RuntimeError):
            break
    with contextlib.suppress(Exception):
        await ws.close()


async def _on_text(
    request: web.Request,
    conn: Connection,
    player: store.Player,
    text: str,
    joined: set[str],
    replies: collections.OrderedDict[str, asyncio.Future[dict[str, Any]]],
) -> None:
    if len(text.encode("utf-8")) > MAX_MESSAGE_BYTES:
        conn.push(
            {
                "type": "error",
                "id": None,
                "error": {"code": "message_too_large", "message": f"messages are at most {MAX_MESSAGE_BYTES} bytes"},
            }
        )
        return
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        conn.push({"type": "error", "id": None, "error": {"code": "bad_message", "message": "not JSON"}})
        return
    if not isinstance(data, dict):
        conn.push({"type": "error", "id": None, "error": {"code": "bad_message", "message": "not a JSON object"}})
        return
    msg_id = data.get("id")
    if not isinstance(msg_id, str) or not 1 <= len(msg_id) <= 64:
        conn.push(
            {
                "type": "error",
                "id": None,
                "error": {
                    "code": "bad_message",
                    "message": "every message carries an 'id' string of 1 to 64 characters",
                },
            }
        )
        return
    earlier = replies.get(msg_id)
    if earlier is not None:
        reply = await earlier  # the same answer again; nothing is applied twice
        conn.push({**reply, "replayed": True})
        return
    fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    replies[msg_id] = fut
    while len(replies) > REPLAY_MEMORY:
        replies.popitem(last=False)
    try:
        result = await _dispatch(request, conn, player, data, joined)
        reply = {"type": "reply", "id": msg_id, "ok": True, "result": result}
    except RuleError as e:
        reply = {"type": "error", "id": msg_id, "error": e.to_json()}
    except ApiError as e:
        reply = {"type": "error", "id": msg_id, "error": {"code": e.code, "message": e.message}}
    except TimeoutError:
        reply = {"type": "error", "id": msg_id, "error": {"code": "busy", "message": "the table did not answer"}}
    except Exception:  # a bug: the client still gets an answer, and a replay of the id gets the same one
        log.exception("message %r from %s failed", data.get("type"), player.id)
        reply = {"type": "error", "id": msg_id, "error": {"code": "server_error", "message": "the server failed"}}
    fut.set_result(reply)
    conn.push(reply)


async def _dispatch(
    request: web.Request, conn: Connection, player: store.Player, data: dict[str, Any], joined: set[str]
) -> dict[str, Any]:
    kind = data.get("type")
    if kind == "ping":
        return {"pong": True}
    table_id = data.get("table_id")
    if not isinstance(table_id, str):
        raise ClientError("bad_message", "this message needs a 'table_id'")
    a = request.app[TABLES].get(table_id)
    if a is None:
        raise ClientError("no_such_table", f"no table {table_id}")
    if kind == "join":
        a.attach(conn)
        joined.add(table_id)
        result: dict[str, Any] = await a.submit("snapshot", player.id, {})
        return result
    if table_id not in joined:
        raise ClientError("not_joined", "send a 'join' for this table first")
    if kind in ("sit", "leave", "commit", "reveal", "action"):
        payload = {k: v for k, v in data.items() if k not in ("type", "id", "table_id")}
        result = await a.submit(kind, player.id, payload)
        return result
    raise ClientError("bad_message", f"unknown message type {kind!r}")


# ----------------------------------------------------------------------------- the app
async def _database(app: web.Application) -> AsyncIterator[None]:
    cfg = app[CONFIG]
    pool = await create_pool(cfg.dsn)
    async with connection(pool) as conn:
        await migrate(conn)
        token = await store.operator_token(conn, cfg.operator_token)
    app[NEW_OPERATOR_TOKEN].append(token)
    app[POOL] = pool
    yield
    await pool.close()


async def _tables(app: web.Application) -> AsyncIterator[None]:
    async with connection(app[POOL]) as conn:
        ids = [r["id"] for r in await conn.fetch("SELECT id FROM tables ORDER BY created_at")]
    for table_id in ids:
        a = TableActor(table_id, app[POOL], app[CONFIG].keys, app[CONFIG].settings)
        await a.load()
        a.start()
        app[TABLES][table_id] = a
    yield
    for a in list(app[TABLES].values()):
        await a.stop()


def make_app(config: Config) -> web.Application:
    app = web.Application(middlewares=[errors], client_max_size=MAX_MESSAGE_BYTES * 2)
    app[CONFIG] = config
    app[TABLES] = {}
    app[REPLIES] = {}
    app[NEW_OPERATOR_TOKEN] = []
    app.cleanup_ctx.append(_database)
    app.cleanup_ctx.append(_tables)
    app.router.add_get("/healthz", health)
    app.router.add_post("/api/players", create_player)
    app.router.add_post("/api/players/{player_id}/deposit", deposit)
    app.router.add_post("/api/tables", create_table)
    app.router.add_get("/api/tables", list_tables)
    app.router.add_post("/api/tables/{table_id}/sit", sit)
    app.router.add_post("/api/tables/{table_id}/leave", leave)
    app.router.add_get("/api/me", me)
    app.router.add_get("/api/me/hands", my_hands)
    app.router.add_get("/api/hands/{hand_id}/transcript", transcript)
    app.router.add_get("/api/fairness/key", fairness_key)
    app.router.add_get("/api/ledger", ledger_summary)
    app.router.add_get("/ws", websocket)
    return app
