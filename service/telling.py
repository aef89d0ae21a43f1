"""Telling players: one bounded outbox per connection, messages serialised once.

Sending never blocks a table: each connection has a bounded queue of ready-made JSON
text drained by its own writer task, and a connection whose queue overflows is
dropped.  A message for many connections is serialised once (spectators share one
text; each seat gets its own view); a connection's replies to its own message ids are
remembered per connection and forgotten when it closes (docs/api.md).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson

from verifier.hand import Event, seat_view

if TYPE_CHECKING:
    from service.handrun import HandRun

log = logging.getLogger("rummy.telling")

REPLY_MEMORY = 256  # message ids remembered per connection


def dumps(message: dict[str, Any]) -> str:
    """Compact JSON text (orjson: a message is serialised once, but many of them)."""
    return orjson.dumps(message).decode()


class Connection:
    """One WebSocket: a bounded outbox drained by the connection's writer task, and
    the replies to this connection's own message ids."""

    def __init__(self, player_id: str, queue_size: int, on_overflow: Callable[[], None]) -> None:
        self.player_id = player_id
        self.outbox: asyncio.Queue[str | None] = asyncio.Queue(maxsize=queue_size)
        self.closed = False
        self.replies: collections.OrderedDict[str, asyncio.Future[dict[str, Any]]] = collections.OrderedDict()
        self._on_overflow = on_overflow

    def push(self, message: dict[str, Any]) -> None:
        self.push_text(dumps(message))

    def push_text(self, text: str) -> None:
        if self.closed:
            return
        try:
            self.outbox.put_nowait(text)
        except asyncio.QueueFull:
            log.warning("dropping a slow client (player %s): its queue is full", self.player_id)
            self.close()
            self._on_overflow()

    def remember(self, msg_id: str, reply: asyncio.Future[dict[str, Any]]) -> None:
        self.replies[msg_id] = reply
        while len(self.replies) > REPLY_MEMORY:
            self.replies.popitem(last=False)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.replies.clear()
            with contextlib.suppress(asyncio.QueueFull):
                self.outbox.put_nowait(None)


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
        text = dumps(message)
        for c in list(self.by_player.values()):
            c.push_text(text)

    def per_seat(self, seat_of: Callable[[str], int | None], build: Callable[[int | None], dict[str, Any]]) -> None:
        """One message per distinct seat (None: spectators), each serialised once."""
        texts: dict[int | None, str] = {}
        for player_id, c in list(self.by_player.items()):
            seat = seat_of(player_id)
            if seat not in texts:
                texts[seat] = dumps(build(seat))
            c.push_text(texts[seat])

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

    def tell_seats(self, seats: dict[int, str], stood: list[dict[str, Any]] | None = None) -> None:
        """Who sits where now; ``stood``: the seats this change stood up, and why
        (:meth:`service.dealing.TableState.stand`)."""
        self.broadcast(
            {
                "type": "table",
                "table_id": self.table_id,
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

    def tell_update(self, hand: HandRun, record: dict[str, Any], events: list[Event], deadline_ms: int | None) -> None:
        """A stored record from the deal on: its events and the view, per seat."""
        state = hand.recorder.state
        head = hand.head(record["i"])  # signed once: the reply to the move shares it
        deadline = iso_ms(deadline_ms)

        def build(seat: int | None) -> dict[str, Any]:
            return {
                "type": "update",
                "table_id": self.table_id,
                "hand_no": hand.hand_no,
                "i": record["i"],
                "h": record["h"],
                "head": head,
                "events": [e.for_seat(seat) for e in events],
                "view": None if state is None else seat_view(state, seat),
                "deadline": deadline,
            }

        self.per_seat(hand.seat_of, build)

    def tell_result(self, hand: HandRun, transcript: dict[str, Any]) -> None:
        last = transcript["log"][-1]
        self.broadcast(
            {
                "type": "result",
                "table_id": self.table_id,
                "hand_no": hand.hand_no,
                "hand_id": hand.hand_id,
                "void": last["type"] == "void",
                "void_reason": last.get("reason"),
                "result": transcript["result"],
                "server_seed": transcript["server_seed"],
                "head": transcript["head"],
                "transcript": f"/api/hands/{hand.hand_id}/transcript",
            }
        )
