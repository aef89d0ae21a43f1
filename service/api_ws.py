"""The WebSocket ``/ws``: one authenticated player per socket, its frames checked at
the edge (:mod:`service.wire`) and sent to the table that serves them; a bounded
outbox per socket drained by its own writer (:mod:`service.telling`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from aiohttp import WSCloseCode, WSMsgType, web

from service import auth, store, wire
from service.appkeys import CONFIG, METRICS, SOCKETS, TABLES
from service.edge import require_player
from service.errors import ServiceError
from service.handover import MARK, HandedOver, hand_over
from service.internal import SIBLINGS
from service.routing import elsewhere, where
from service.table import ClientError, TableActor
from service.telling import Connection, iso
from service.wire import WireError
from verifier.errors import RuleError
from verifier.record import PROTOCOL

log = logging.getLogger("rummy.app")


WS_HARD_LIMIT = 64 * 1024  # aiohttp closes the socket beyond this; up to it, a typed error


TABLE_ANSWER_SECONDS = 30.0


# ----------------------------------------------------------------------------- WebSocket
async def websocket(request: web.Request) -> web.StreamResponse:
    """One authenticated player per socket.  Messages are JSON objects with a client
    message ``id``; on this connection a repeated id gets the original reply and is
    never applied twice (``join`` is never replayed).  A writer task drains the
    socket's bounded queue.

    A socket names its table in its URL (``/ws?table=ID``, as the page, the bots and
    every client of this server do): when another worker of this server serves that
    table, the connection is handed to it before anything else (service.handover)."""
    table = request.query.get("table")
    if table is not None:
        to = await _owner_elsewhere_in_host(request, wire.path_id(table, "table"))
        if to is not None and await hand_over(request, request.app[SIBLINGS].plan.handoff(to)):
            return HandedOver(to)
    player = await require_player(request, websocket=True)
    ws = web.WebSocketResponse(
        heartbeat=request.app[CONFIG].heartbeat,
        max_msg_size=WS_HARD_LIMIT,
        timeout=1.0,
        protocols=(auth.WS_PROTOCOL,),
    )
    await ws.prepare(request)
    request.app[METRICS].ws_opened.inc()
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
            request.app[METRICS].ws_messages.inc()
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


async def _owner_elsewhere_in_host(request: web.Request, table_id: str) -> int | None:
    """The sibling worker that serves ``table_id``, when one does and the connection
    was not handed over already."""
    if table_id in request.app[TABLES] or SIBLINGS not in request.app or MARK in request.headers:
        return None
    return (await where(request.app, table_id)).sibling


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
    if isinstance(e, ServiceError):
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
        done.set_exception(await elsewhere(request, data["table_id"]))
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
