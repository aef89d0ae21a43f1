"""The WebSocket ``/ws``: one authenticated player per socket, its frames checked at
the edge (:mod:`service.wire`) and sent to the table that serves them; a bounded
frames written straight to the socket, or through its bounded outbox when one is
waiting (:mod:`service.telling`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any

from aiohttp import ClientConnectionResetError, WSCloseCode, WSMsgType, web

from service import auth, replies, store, wire
from service.appkeys import CLUSTER, CONFIG, HANDSHAKES, METRICS, PLAYER_SOCKETS, SOCKETS, TABLES
from service.db import AWAY, REFUSING
from service.edge import require_player
from service.errors import ServiceError
from service.handover import MARK, HandedOver, hand_over
from service.internal import SIBLINGS
from service.pace import Pace
from service.routing import elsewhere, where
from service.table import LOGGED, ClientError, TableActor
from service.tasks import running
from service.telling import Connection, Route, answer, iso, to_client
from service.wire import WireError
from service.wsocket import TableSocket
from verifier.errors import RuleError
from verifier.record import PROTOCOL

log = logging.getLogger("rummy.app")


WS_HARD_LIMIT = 64 * 1024  # aiohttp closes the socket beyond this; up to it, a typed error


TABLE_ANSWER_SECONDS = 30.0
#: While a frame waits for its table's answer, the later frames of that table wait
#: behind it, so the socket is told ``waiting`` this often: a client tells a server
#: that lives from one that stands still by what it hears (docs/api.md, "Silence").
WAITING_SECONDS = 2.0
#: A socket's answers still to be told, at most this many at once: beyond them its
#: reader waits for one to be told before it reads on (a client that floods a slow
#: table slows only itself).  A player sends one message a table at a time, or a few.
PENDING_ANSWERS = 32


# ----------------------------------------------------------------------------- WebSocket
async def websocket(request: web.Request) -> web.StreamResponse:
    """One authenticated player per socket.  Messages are JSON objects with a client
    message ``id``; on this connection a repeated id gets the original reply and is
    never applied twice (``join`` is never replayed).  Frames go straight to the
    socket, or through its bounded outbox when one is waiting (service.telling).  A
    socket's messages are read at its pace: beyond its burst, a message waits for its
    turn before it is read (service.pace).  Each is taken by its table as it is read,
    and answered in order with that table's other answers (:class:`Answers`).

    A socket names its table in its URL (``/ws?table=ID``, as the page, the bots and
    every client of this server do): when another worker of this server serves that
    table, the connection is handed to it before anything else (service.handover)."""
    table = request.query.get("table")
    wait = request.app[CONFIG].handshake_wait  # starved, the database answers late: wait (service.handshakes)
    with request.app[HANDSHAKES].admit():
        if table is not None:
            to = await _owner_elsewhere_in_host(request, wire.path_id(table, "table"), wait)
            if to is not None and await hand_over(request, request.app[SIBLINGS].plan.handoff(to)):
                return HandedOver(to)
        player = await require_player(request, websocket=True, wait=wait)
    sockets = request.app[PLAYER_SOCKETS]
    if not sockets.add(player.id):  # the pace bounds a socket; this, a player's sockets (service.pace)
        request.app[METRICS].ws_too_many.inc()
        raise ServiceError(
            f"you have {sockets.limit} sockets open to this server already: close one and try again (a socket"
            " whose network went away is closed within about 30 s)",
            code="too_many_sockets",
            status=429,
        )
    try:
        return await _serve(request, player)
    finally:
        sockets.discard(player.id)


async def _serve(request: web.Request, player: store.Player) -> web.StreamResponse:
    """The socket of ``player``, from its handshake to its close."""
    config, metrics = request.app[CONFIG], request.app[METRICS]
    ws = TableSocket(  # aiohttp's, its heartbeat's attributes in slots (service.wsocket)
        heartbeat=config.heartbeat,
        max_msg_size=WS_HARD_LIMIT,
        timeout=1.0,
        protocols=(auth.WS_PROTOCOL,),
        # No permessage-deflate (which browsers offer and aiohttp takes by default): one
        # deflate context per socket would hold a seat's hidden cards beside what other
        # players choose (their discards, their names), so the compressed length could
        # tell an eavesdropper on the wire about the hand (CRIME/BREACH); and each
        # context is ~200-260 KB of zlib state per connection and ~9 us per frame
        # (docs/api.md, docs/benchmarks.md).
        compress=False,
        # Control frames are read and paced like any message (a PING answered here, below):
        # aiohttp's autoping answers each PING inside ``receive`` and never returns it,
        # so a client's flood of PINGs passed the pace, and a batch of them was answered
        # without the loop being given back, holding up every table of this worker.
        autoping=False,
    )
    await ws.prepare(request)
    metrics.ws_opened.inc()
    closing: list[asyncio.Task[bool]] = []

    def drop_slow_client() -> None:
        closing.append(asyncio.create_task(ws.close(code=WSCloseCode.POLICY_VIOLATION, message=b"too slow")))

    conn = Connection(player.id, config.settings.queue_size, drop_slow_client, send=ws.send_str, shut=ws.close)
    request.app[SOCKETS][ws] = conn
    joined: set[str] = set()
    conn.push(
        {
            "type": "hello",
            "player_id": player.id,
            "name": player.name,
            "protocol": PROTOCOL,
            "now": iso(config.settings.clock()),
            # where to go when this node cannot be reached (as of its last heartbeat)
            "servers": request.app[CLUSTER].others_seen if CLUSTER in request.app else [],
        }
    )
    loop = asyncio.get_running_loop()
    paced = Pace.full(loop.time(), config.message_rate, config.message_burst)
    answers = Answers()
    try:
        async for msg in ws:
            metrics.ws_messages.inc()
            wait = paced.take(loop.time())
            if wait > 0.0:  # beyond its burst and rate: read when its turn comes (service.pace)
                metrics.ws_slowed.inc()
                await asyncio.sleep(wait)
            if msg.type == WSMsgType.TEXT:
                await answers.room()
                await _on_text(request, conn, player, msg.data, joined, answers)
            elif msg.type == WSMsgType.BINARY:
                conn.push(_error(None, "bad_message", "messages are JSON text"))
            elif msg.type == WSMsgType.PING:
                await ws.pong(msg.data)
            elif msg.type != WSMsgType.PONG:  # a PONG: the heartbeat's answer (any frame read is)
                break
    except ClientConnectionResetError:  # its socket closed under a pong: the client is gone, not
        pass  # the database (the errors middleware would log it as the database away)
    finally:
        await answers.close()
        for table_id in joined:
            a = request.app[TABLES].get(table_id)
            if a is not None:
                a.detach(conn)
        conn.close()
        request.app[SOCKETS].pop(ws, None)
        await conn.drained(2)
        with contextlib.suppress(Exception):
            await ws.close()
    return ws


async def _owner_elsewhere_in_host(request: web.Request, table_id: str, wait: float) -> int | None:
    """The sibling worker that serves ``table_id``, when one does and the connection
    was not handed over already."""
    if table_id in request.app[TABLES] or SIBLINGS not in request.app or MARK in request.headers:
        return None
    return (await where(request.app, table_id, wait)).sibling


def _error(msg_id: str | None, code: str, message: str, rule: str | None = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if rule:
        err["rule"] = rule
    return {"type": "error", "id": msg_id, "error": err}


def _reply_for(msg_id: str, outcome: asyncio.Future[dict[str, Any]]) -> dict[str, Any]:
    e = outcome.exception()
    if e is None:
        return answer(msg_id, outcome.result())
    if isinstance(e, RuleError):
        return answer(msg_id, None, e)
    if isinstance(e, ServiceError):
        return _error(msg_id, e.code, e.message)
    if LOGGED not in getattr(e, "__notes__", ()):  # a table's command: logged once, by the table
        log.error("message %s failed", msg_id, exc_info=e)
    return _error(msg_id, "server_error", "the server failed; nothing was applied unless an update says so")


class Answers:
    """A socket's answers still to be told, each told by a task that waits first for
    the one before it of the same table: a table's replies go out in order, and a slow
    table holds up only its own, so a move for another table is read and taken in time
    (D35, D37).  At most ``PENDING_ANSWERS`` at once (:meth:`room`)."""

    def __init__(self) -> None:
        self.tasks: set[asyncio.Task[None]] = set()
        self.last: dict[str, asyncio.Task[None]] = {}  # table id -> its newest task

    async def room(self) -> None:
        """Wait, when the socket has ``PENDING_ANSWERS`` to tell, until one is told."""
        while len(self.tasks) >= PENDING_ANSWERS:
            await asyncio.wait(self.tasks, return_when=asyncio.FIRST_COMPLETED)

    def after(self, table_id: str, tell: Callable[[], Awaitable[None]]) -> None:
        """``tell`` once the answers told before it at ``table_id`` are."""
        before = self.last.get(table_id)

        async def in_turn() -> None:
            if before is not None:
                await asyncio.wait([before])
            await tell()

        task = asyncio.create_task(in_turn())
        self.tasks.add(task)
        self.last[table_id] = task
        task.add_done_callback(partial(self._told, table_id))

    def _told(self, table_id: str, task: asyncio.Task[None]) -> None:
        self.tasks.discard(task)
        if self.last.get(table_id) is task:
            del self.last[table_id]
        if not task.cancelled() and task.exception() is not None:
            log.error("telling an answer failed", exc_info=task.exception())

    async def close(self) -> None:
        """The socket is closing: what is still to be told is not."""
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


async def _on_text(
    request: web.Request, conn: Connection, player: store.Player, text: str, joined: set[str], answers: Answers
) -> None:
    try:
        msg_id, data = wire.frame(text)
    except WireError as e:
        conn.push(_error(getattr(e, "msg_id", None), e.code, e.message))
        return
    replayable = data["type"] != "join"
    earlier = conn.replies.recall(msg_id) if replayable else None
    if earlier is not None:  # the same answer again, once it is known; nothing is applied twice
        tell = partial(_tell_again, conn, msg_id, earlier)
    else:
        route = Route(conn, msg_id)
        outcome = await _dispatch(request, conn, player, data, joined, route)  # taken now, in order
        if replayable:
            conn.replies.remember(msg_id, outcome, lambda: to_client({**_reply_for(msg_id, outcome), "replayed": True}))
        tell = partial(_tell, conn, msg_id, outcome, route, replayable)
    table_id = data.get("table_id")
    if table_id is None:  # a ping: answered at once
        await tell()
    else:  # told in order with the table's other answers, while the socket reads on
        answers.after(table_id, tell)


async def _tell(
    conn: Connection, msg_id: str, outcome: asyncio.Future[dict[str, Any]], route: Route, replayable: bool
) -> None:
    """The answer to a message taken: sent by its table, or here once it comes, or
    ``busy`` when it has not come in ``TABLE_ANSWER_SECONDS``."""
    done = await _wait_telling(conn, msg_id, outcome, TABLE_ANSWER_SECONDS)
    if route.sent:  # the table sent it, in order with its pushes
        if replayable:
            conn.replies.delivered(msg_id)
        return
    if not done:
        route.open = False  # the answer comes only when asked for again
        conn.push(_error(msg_id, "busy", "the table has not answered yet; send the same id again for its answer"))
        return
    conn.push(_reply_for(msg_id, outcome))
    if replayable:
        conn.replies.delivered(msg_id)


async def _tell_again(conn: Connection, msg_id: str, earlier: replies.Reply) -> None:
    """The remembered answer to a repeated id, once it is known."""
    future = earlier.future  # None once answered (the memory keeps its text then)
    if future is not None:
        await _wait_telling(conn, msg_id, future, math.inf)
        conn.push({**_reply_for(msg_id, future), "replayed": True})
    elif earlier.text is not None:
        conn.push_text(earlier.text)
    conn.replies.delivered(msg_id)  # sent now (a reply told ``busy`` was not before)


async def _wait_telling(conn: Connection, msg_id: str, outcome: asyncio.Future[Any], seconds: float) -> bool:
    """Whether ``outcome`` came within ``seconds``; meanwhile ``waiting`` every
    ``WAITING_SECONDS`` (the table is slow, paused or reloading: this server lives)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while True:
        left = end - loop.time()
        done, _ = await asyncio.wait([outcome], timeout=max(0.0, min(WAITING_SECONDS, left)))
        if done:
            return True
        if left <= WAITING_SECONDS:
            return False
        conn.push({"type": "waiting", "id": msg_id})


async def _dispatch(
    request: web.Request,
    conn: Connection,
    player: store.Player,
    data: dict[str, Any],
    joined: set[str],
    route: Route | None = None,
) -> asyncio.Future[dict[str, Any]]:
    """The future answer to one checked frame (a table's answer comes later)."""
    done: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    kind = data["type"]
    if kind == "ping":
        done.set_result({"pong": True})
        return done
    a: TableActor | None = request.app[TABLES].get(data["table_id"])
    if a is None:  # asked of the database, waited for like a table's answer (``waiting`` meanwhile)
        asking = asyncio.ensure_future(_not_here(request, data["table_id"]))
        asking.add_done_callback(_retrieved)  # an answer nobody waits for any more is not an error
        return asking
    if kind == "join":
        if conn.closed:  # replaced (or dropped) while this join waited for its turn: it takes over from nobody
            done.set_exception(ClientError("not_joined", "this connection was closed: open a new one and join there"))
            return done
        a.attach(conn)
        joined.add(a.table_id)
        return a.enqueue("snapshot", player.id, {"since": data.get("since")}, route)
    if a.table_id not in joined:
        done.set_exception(ClientError("not_joined", "send a 'join' for this table first"))
        return done
    payload = {k: v for k, v in data.items() if k not in ("type", "id", "table_id")}
    return a.enqueue(kind, player.id, payload, route)


async def _not_here(request: web.Request, table_id: str) -> dict[str, Any]:
    """Why this connection does not serve ``table_id`` (always raised): where the
    table is served (service.routing.elsewhere) — or, when the database that says so
    is away or does not answer, ``unavailable`` (nothing was changed; the socket stays
    open).  Before, the lookup was awaited in the socket's reader: a hung database
    held the socket silent (no ``waiting``), and one away closed it with no error."""
    try:
        error = await elsewhere(request, table_id)
    except (*AWAY, *REFUSING) as e:  # OSError holds a pool acquire or statement past its time
        raise ClientError(
            "unavailable",
            f"this server cannot reach its database right now to find table {table_id}; nothing was changed, try again",
        ) from e
    raise error


def _retrieved(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


async def sweeping(app: web.Application) -> AsyncIterator[None]:
    """Every connection's reply memory trimmed each ``SWEEP_SECONDS`` (service.replies),
    for the application's ``cleanup_ctx``."""
    sockets = app[SOCKETS]
    async with running(
        replies.sweep_every(replies.SWEEP_SECONDS, lambda: [c.replies for c in sockets.values()]), "reply-sweep"
    ):
        yield
