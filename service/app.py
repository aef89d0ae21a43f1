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
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import asyncpg
from aiohttp import WSCloseCode, WSMsgType, web
from aiohttp.http_exceptions import HttpProcessingError

from service import ledger, store, wire
from service.db import ServerLock, connection, create_pool, migrate
from service.keys import ServerKeys
from service.table import ClientError, Settings, TableActor
from service.telling import Connection
from service.wire import WireError
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


CONFIG = web.AppKey("config", Config)
POOL = web.AppKey("pool", asyncpg.Pool)
TABLES = web.AppKey("tables", dict)  # table id -> TableActor
SOCKETS = web.AppKey("sockets", dict)  # WebSocketResponse -> Connection
NEW_OPERATOR_TOKEN = web.AppKey("new_operator_token", list)
LOCK = web.AppKey("lock", ServerLock)


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def error_response(status: int, code: str, message: str, rule: str | None = None) -> web.Response:
    body: dict[str, Any] = {"error": {"code": code, "message": message}}
    if rule:
        body["error"]["rule"] = rule
    return web.json_response(body, status=status)


RULE_STATUS = {
    "insufficient_balance": 402,
    "seat_taken": 409,
    "already_seated": 409,
    "table_full": 409,
    "hand_over": 409,
    "unavailable": 503,
    "shutting_down": 503,
}


@web.middleware
async def errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    try:
        return await handler(request)
    except ApiError as e:
        return error_response(e.status, e.code, e.message)
    except WireError as e:
        return error_response(e.status, e.code, e.message)
    except store.StoreError as e:
        return error_response(e.status, e.code, e.message)
    except ledger.LedgerError as e:
        return error_response(400, e.code, e.message)
    except RuleError as e:  # the kernel's errors and the server's ClientError
        return error_response(RULE_STATUS.get(e.code, 400), e.code, e.message, e.rule)
    except TimeoutError:
        return error_response(503, "busy", "the table did not answer in time; check before you try again")
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
    async with connection(request.app[POOL]) as conn:
        if token is None or not await store.is_operator(conn, token):
            raise ApiError(401, "unauthorized", "this needs the operator token")


async def require_player(request: web.Request) -> store.Player:
    token = wire.bearer_token(request.headers.get("Authorization"))
    if token is None and "token" in request.query:
        token = wire.bearer_token("Bearer " + request.query["token"])
    if token:
        async with connection(request.app[POOL]) as conn:
            player = await store.player_by_token(conn, token)
        if player is not None:
            return player
    raise ApiError(401, "unauthorized", "this needs a player's bearer token")


def actor(request: web.Request, table_id: str) -> TableActor:
    a = request.app[TABLES].get(wire.path_id(table_id, "a table id"))
    if a is None:
        raise ApiError(404, "no_such_table", f"no table {table_id}")
    assert isinstance(a, TableActor)
    return a


# ----------------------------------------------------------------------------- REST
async def create_player(request: web.Request) -> web.Response:
    await require_operator(request)
    data = await body_json(request, wire.NEW_PLAYER)
    key = bytes.fromhex(data["public_key"]) if "public_key" in data else None
    async with connection(request.app[POOL]) as conn:
        player, token = await store.create_player(
            conn, data["name"], is_bot=data.get("bot", False), deposit=data.get("deposit", 0), public_key=key
        )
        bal = await ledger.balance(conn, player.id)
    return web.json_response(
        {"id": player.id, "name": player.name, "token": token, "available": bal.available}, status=201
    )


async def deposit(request: web.Request) -> web.Response:
    await require_operator(request)
    data = await body_json(request, wire.DEPOSIT, "bad_amount")
    player_id = wire.path_id(request.match_info["player_id"], "a player id")
    async with connection(request.app[POOL]) as conn:
        if not await store.player_exists(conn, player_id):
            raise ApiError(404, "no_such_player", f"no player {player_id}")
        await ledger.deposit(conn, player_id, data["amount"])
        bal = await ledger.balance(conn, player_id)
    return web.json_response({"id": player_id, "available": bal.available, "held": bal.held})


async def set_key(request: web.Request) -> web.Response:
    player = await require_player(request)
    data = await body_json(request, wire.PLAYER_KEY)
    async with connection(request.app[POOL]) as conn:
        await store.set_public_key(conn, player.id, bytes.fromhex(data["public_key"]))
    return web.json_response({"id": player.id, "public_key": data["public_key"]})


async def create_table(request: web.Request) -> web.Response:
    await require_operator(request)
    data = await body_json(request, wire.NEW_TABLE, "bad_table")
    max_away = data.pop("max_away_hands", 3)
    rules = TableRules(**data)  # validated: a bad combination is an error, never repaired
    async with connection(request.app[POOL]) as conn:
        table_id = await store.create_table(conn, rules, max_away_hands=max_away)
    a = TableActor(table_id, request.app[POOL], request.app[CONFIG].keys, request.app[CONFIG].settings)
    a.start()
    request.app[TABLES][table_id] = a
    await asyncio.wait_for(a.loaded.wait(), 10)
    return web.json_response({"id": table_id, **rules.to_json(), "max_away_hands": max_away}, status=201)


async def list_tables(request: web.Request) -> web.Response:
    async with connection(request.app[POOL]) as conn:
        return web.json_response({"tables": await store.list_tables(conn)})


async def sit(request: web.Request) -> web.Response:
    player = await require_player(request)
    data = await body_json(request, wire.SIT)
    a = actor(request, request.match_info["table_id"])
    return web.json_response(await a.submit("sit", player.id, data))


async def leave(request: web.Request) -> web.Response:
    player = await require_player(request)
    data = await body_json(request, wire.LEAVE)
    a = actor(request, request.match_info["table_id"])
    return web.json_response(await a.submit("leave", player.id, data))


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
    a = actor(request, row["table_id"])
    return web.json_response(await a.submit("void", "operator", {"hand_id": hand_id, "reason": data["reason"]}))


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
    player = await require_player(request)
    ws = web.WebSocketResponse(heartbeat=request.app[CONFIG].heartbeat, max_msg_size=WS_HARD_LIMIT, timeout=1.0)
    await ws.prepare(request)
    closing: list[asyncio.Task[bool]] = []

    def drop_slow_client() -> None:
        closing.append(asyncio.create_task(ws.close(code=WSCloseCode.POLICY_VIOLATION, message=b"too slow")))

    conn = Connection(player.id, request.app[CONFIG].settings.queue_size, on_overflow=drop_slow_client)
    request.app[SOCKETS][ws] = conn
    writer = asyncio.create_task(_writer(ws, conn), name=f"ws-writer-{player.id}")
    joined: set[str] = set()
    conn.push({"type": "hello", "player_id": player.id, "name": player.name, "protocol": PROTOCOL})
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
                a.watchers.detach(conn)
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
        return {"type": "error", "id": msg_id, "error": e.to_json()}
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
        done.set_exception(ClientError("no_such_table", f"no table {data['table_id']}"))
        return done
    if kind == "join":
        a.watchers.attach(conn)
        joined.add(a.table_id)
        return a.enqueue("snapshot", player.id, {})
    if a.table_id not in joined:
        done.set_exception(ClientError("not_joined", "send a 'join' for this table first"))
        return done
    payload = {k: v for k, v in data.items() if k not in ("type", "id", "table_id")}
    return a.enqueue(kind, player.id, payload)


# ----------------------------------------------------------------------------- the app
async def _database(app: web.Application) -> AsyncIterator[None]:
    cfg = app[CONFIG]
    lock = await ServerLock.acquire(cfg.dsn)
    try:
        pool = await create_pool(cfg.dsn)
        try:
            async with connection(pool) as conn:
                await migrate(conn)
                token = await store.operator_token(conn, cfg.operator_token)
            app[NEW_OPERATOR_TOKEN].append(token)
            app[POOL] = pool
            app[LOCK] = lock
            watchdog = asyncio.create_task(_keep_lock(app, lock), name="server-lock")
            try:
                yield
            finally:
                watchdog.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watchdog
        finally:
            await pool.close()
    finally:
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
    async with connection(app[POOL]) as conn:
        ids = [r["id"] for r in await conn.fetch("SELECT id FROM tables ORDER BY created_at")]
    for table_id in ids:
        a = TableActor(table_id, app[POOL], app[CONFIG].keys, app[CONFIG].settings)
        a.start()
        app[TABLES][table_id] = a
    # Every table is loaded (its hand resumed or voided) before the server answers.
    await asyncio.gather(*(asyncio.wait_for(a.loaded.wait(), 60) for a in app[TABLES].values()))
    yield
    await _stop_tables(app)


async def _stop_tables(app: web.Application) -> None:
    await asyncio.gather(*(a.stop() for a in list(app[TABLES].values())))


async def _on_shutdown(app: web.Application) -> None:
    """SIGTERM/SIGINT: the listening socket is already closed; stop every clock first
    (nothing is charged while the server goes down), then tell every client and close
    its socket."""
    await _stop_tables(app)
    sockets = list(app[SOCKETS].items())
    for _, conn in sockets:
        conn.push({"type": "shutdown", "message": "the server is going down; reconnect in a moment"})

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


def make_app(config: Config) -> web.Application:
    app = web.Application(middlewares=[errors], client_max_size=wire.MAX_MESSAGE_BYTES * 2)
    app[CONFIG] = config
    app[TABLES] = {}
    app[SOCKETS] = {}
    app[NEW_OPERATOR_TOKEN] = []
    app.cleanup_ctx.append(_database)
    app.cleanup_ctx.append(_tables)
    app.on_shutdown.append(_on_shutdown)
    app.router.add_get("/healthz", health)
    app.router.add_post("/api/players", create_player)
    app.router.add_post("/api/players/{player_id}/deposit", deposit)
    app.router.add_put("/api/me/key", set_key)
    app.router.add_post("/api/tables", create_table)
    app.router.add_get("/api/tables", list_tables)
    app.router.add_post("/api/tables/{table_id}/sit", sit)
    app.router.add_post("/api/tables/{table_id}/leave", leave)
    app.router.add_get("/api/me", me)
    app.router.add_get("/api/me/hands", my_hands)
    app.router.add_get("/api/hands/{hand_id}/transcript", transcript)
    app.router.add_post("/api/hands/{hand_id}/void", void_hand)
    app.router.add_get("/api/fairness/key", fairness_key)
    app.router.add_get("/api/ledger", ledger_summary)
    app.router.add_get("/ws", websocket)
    return app
