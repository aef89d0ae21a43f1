"""Telling players: one bounded outbox per connection, messages serialised once.

Sending never blocks a table.  A message for a connection whose outbox is empty is
written to its socket at once (nothing is waiting ahead of it); otherwise it joins
the connection's bounded outbox, which a task drains in order, and a connection
whose outbox overflows is dropped.  A message for many connections is serialised
once (spectators share one text, and so do the seats whose changes are the same).

A push about a record carries its events and what changed in the seat's view
(:mod:`service.views`), not the whole view; the mover gets its update inside the
reply to its move (one frame), which the table sends itself, in order with its
pushes (:class:`Route`).  A connection remembers the replies to its own message ids,
bounded by count, bytes and age (:mod:`service.replies`), and forgets them when it
closes (docs/api.md).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from service import views
from service.fastjson import to_client
from service.replies import ReplyMemory
from verifier.errors import RuleError
from verifier.hand import seat_view

if TYPE_CHECKING:
    from service.handrun import HandRun
    from service.tablecore.io import HandEnd, TellUpdate

log = logging.getLogger("rummy.telling")

__all__ = ["Connection", "Route", "Teller", "answer", "to_client"]

Send = Callable[[str], Coroutine[Any, Any, None]]


def answer(msg_id: str, result: dict[str, Any] | None = None, error: RuleError | None = None) -> dict[str, Any]:
    """The reply to a client's message: its result, or the table's typed error (with
    the signed ack of a move the table judged, and where to go for ``wrong_node``)."""
    if error is None:
        return {"type": "reply", "id": msg_id, "ok": True, "result": result if result is not None else {}}
    err = error.to_json()
    if hasattr(error, "redirect"):
        err["redirect"] = error.redirect
    if hasattr(error, "ack"):  # a move the table judged and refused: the server's signed ack (§15)
        err["ack"] = error.ack
    return {"type": "error", "id": msg_id, "error": err}


@types.coroutine
def _resume(coro: Coroutine[Any, Any, None], pending: Any) -> Generator[Any, Any, None]:
    """Finish, inside a task, a send that began outside one and had to wait
    (the socket's buffer was full): what it waits for is waited for here."""
    while True:
        try:
            value = yield pending
        except BaseException as e:
            try:
                pending = coro.throw(e)
            except StopIteration:
                return
        else:
            try:
                pending = coro.send(value)
            except StopIteration:
                return


class Connection:
    """One WebSocket: its outbox, and the replies to this connection's own message ids.

    ``send`` writes one text to the socket (``ws.send_str``) and ``shut`` closes it;
    without them (tests) texts only queue."""

    def __init__(
        self,
        player_id: str,
        queue_size: int,
        on_overflow: Callable[[], None],
        send: Send | None = None,
        shut: Callable[[], Awaitable[Any]] | None = None,
    ) -> None:
        self.player_id = player_id
        self.queue_size = queue_size
        self.outbox: collections.deque[str] = collections.deque()
        self.closed = False
        self._send = send
        self._shut = shut
        self._task: asyncio.Task[None] | None = None
        self.replies = ReplyMemory()
        self._on_overflow = on_overflow

    # -- sending --------------------------------------------------------------------
    def push(self, message: dict[str, Any]) -> None:
        self.push_text(to_client(message))

    def push_text(self, text: str) -> None:
        if self.closed:
            return
        if self._task is None and not self.outbox and self._send is not None:
            self._now(text)
            return
        if len(self.outbox) >= self.queue_size:
            log.warning("dropping a slow client (player %s): its queue is full", self.player_id)
            self.close()
            self._on_overflow()
            return
        self.outbox.append(text)
        if self._task is None and self._send is not None:
            self._task = asyncio.get_running_loop().create_task(self._drain(None, None))

    def _now(self, text: str) -> None:
        """Write straight to the socket; if the write must wait (flow control), a task
        finishes it and the next texts queue behind it."""
        assert self._send is not None
        coro = self._send(text)
        try:
            pending = coro.send(None)
        except StopIteration:
            return
        except Exception:
            self.close()
            return
        self._task = asyncio.get_running_loop().create_task(self._drain(coro, pending))

    async def _drain(self, coro: Coroutine[Any, Any, None] | None, pending: Any) -> None:
        try:
            if coro is not None:
                await _resume(coro, pending)
            while self.outbox and self._send is not None:
                await self._send(self.outbox.popleft())
        except asyncio.CancelledError:
            raise
        except Exception:
            self.outbox.clear()
            self.closed = True
        finally:
            self._task = None
        if self.closed:
            await self._close_socket()

    async def _close_socket(self) -> None:
        if self._shut is not None:
            with contextlib.suppress(Exception):
                await self._shut()

    def close(self) -> None:
        """No more pushes; what is queued still goes out, then the socket closes."""
        if self.closed:
            return
        self.closed = True
        self.replies.clear()
        if self._task is None and self._shut is not None:
            with contextlib.suppress(RuntimeError):  # no loop: nothing to close
                self._task = asyncio.get_running_loop().create_task(self._drain(None, None))

    async def drained(self, timeout: float) -> None:
        """Wait (at most ``timeout``) for the outbox to go out and the socket to close."""
        task = self._task
        if task is not None:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(task), timeout)
            if not task.done():
                task.cancel()


@dataclass
class Route:
    """Where the table sends a command's reply itself: the client's connection and
    message id (so the reply goes out in order with the table's pushes, and carries
    the mover's update).  ``open`` is False once the socket has answered ``busy``."""

    conn: Connection
    msg_id: str
    open: bool = True
    sent: bool = False


class Watchers:
    """The live connections at one table, at most one per player."""

    def __init__(self, table_id: str) -> None:
        self.table_id = table_id
        self.by_player: dict[str, Connection] = {}

    def attach(self, conn: Connection) -> None:
        """One live connection per player at a table: a new one replaces the old."""
        old = self.by_player.get(conn.player_id)
        if old is not None and old is not conn:
            old.push(
                {"type": "replaced", "table_id": self.table_id, "message": "another connection took over this seat"}
            )
            old.close()
        self.by_player[conn.player_id] = conn

    def detach(self, conn: Connection) -> None:
        if self.by_player.get(conn.player_id) is conn:
            del self.by_player[conn.player_id]

    def live(self) -> set[str]:
        return {p for p, c in self.by_player.items() if not c.closed}

    def broadcast(self, message: dict[str, Any]) -> None:
        text = to_client(message)
        for c in list(self.by_player.values()):
            c.push_text(text)

    def close_all(self) -> None:
        for c in list(self.by_player.values()):
            c.close()
        self.by_player.clear()


def iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat()


def iso_ms(ms: int | None) -> str | None:
    return None if ms is None else iso(ms / 1000)


class Teller(Watchers):
    """What a table tells its connections, each message built once (docs/api.md,
    "Server → client pushes")."""

    def tell_seats(self, seats: dict[int, str], status: str, stood: list[dict[str, Any]] | None = None) -> None:
        """Who sits where now, and the table's status; ``stood``: the seats this change
        stood up, and why (:meth:`service.tablecore.state.TableFacts.stand`)."""
        self.broadcast(
            {
                "type": "table",
                "table_id": self.table_id,
                "status": status,
                "seats": {str(s): p for s, p in sorted(seats.items())},
                "stood": stood or [],
            }
        )

    def tell_phase(self, hand: HandRun, deadline: int | None) -> None:
        """A seed phase begins: record 0 (the signed header) or record 1 (the signed
        commitments), with the server's signed head (docs/fairness.md §15)."""
        rec = hand.recorder
        i = len(rec.records) - 1
        self.broadcast(
            {
                "type": "hand",
                "phase": hand.phase.value,
                "table_id": self.table_id,
                "hand_no": hand.hand_no,
                "hand_id": hand.hand_id,
                "record": rec.records[i],
                "head": hand.head(i),
                "deadline": iso_ms(deadline),
            }
        )

    def tell_update(self, u: TellUpdate, mover: Connection | None = None) -> dict[str, Any] | None:
        """A stored record from the deal on: its events as each seat may see them, and
        what changed in each seat's view (the whole view at the deal), with the
        signature of the record's head.  ``mover``: the connection whose reply carries
        its update; that update is returned instead of pushed."""
        hand, record, events = u.hand, u.record, u.events
        head = hand.head(record["i"], record["h"])  # signed once: the reply to the move shares it
        base = {
            "type": "update",
            "table_id": self.table_id,
            "hand_no": hand.hand_no,
            "i": record["i"],
            "h": record["h"],
            "head_sig": head["sig"],
        }
        deadline = iso_ms(u.deadline)
        change = None if u.before is None or u.after is None else views.Change(u.before, u.after)
        private = {e.seat for e in events if e.private}
        texts: dict[Any, str] = {}
        mine: dict[str, Any] | None = None
        for player_id, c in list(self.by_player.items()):
            seat = hand.seat_of(player_id)
            if change is None:
                key: Any = seat  # the deal: each seat its whole view
            else:
                key = seat if (seat in private or change.personal(seat)) else None
            if c is mover:
                mine = self._update(base, u, seat, change, deadline)
                continue
            text = texts.get(key)
            if text is None:
                text = texts[key] = to_client(self._update(base, u, seat, change, deadline))
            c.push_text(text)
        return mine

    @staticmethod
    def _update(
        base: dict[str, Any], u: TellUpdate, seat: int | None, change: views.Change | None, deadline: str | None
    ) -> dict[str, Any]:
        out = {**base, "events": [e.for_seat(seat) for e in u.events]}
        if change is not None:
            out["changes"] = change.for_seat(seat)
        else:
            out["view"] = None if u.after is None else seat_view(u.after, seat)
        out["deadline"] = deadline
        return out

    def tell_result(self, hand: HandRun, end: HandEnd) -> None:
        self.broadcast(
            {
                "type": "result",
                "table_id": self.table_id,
                "hand_no": hand.hand_no,
                "hand_id": hand.hand_id,
                "void": end.void,
                "void_reason": end.void_reason,
                "result": end.result,
                "server_seed": end.server_seed,
                "head": end.head,
                "transcript": f"/api/hands/{hand.hand_id}/transcript",
            }
        )
