"""One task per table: it alone changes the table, serialising every command
through the verifier's state machine.

Every accepted action is committed to PostgreSQL (the hand's chained record) before
anything about it is sent to anyone.  Sending never blocks the table: each
connection has a bounded queue drained by its own writer task, and a connection
whose queue overflows is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import asyncpg

from service import ledger, store
from service.db import connection
from service.keys import ServerKeys
from verifier.cards import Card, card_of_id, deck_size
from verifier.errors import RuleError
from verifier.fairness import SEED_BYTES, player_commit
from verifier.hand import Action, Event, HandState, Leave, Phase, TableRules, TimeOut, action_from_json, seat_view
from verifier.settle import hold_amount
from verifier.transcript import GENESIS, HandRecorder

log = logging.getLogger("rummy.table")
RETRY_SECONDS = 1.0


class ClientError(RuleError):
    """A typed error for one client, from the server rather than the rules kernel
    (a seat taken, a message malformed…); nothing changed."""

    def __init__(self, code: str, message: str, rule: str | None = None) -> None:
        super().__init__(code, message, rule=rule)


@dataclass
class Settings:
    commit_seconds: float = 10.0
    reveal_seconds: float = 10.0
    next_hand_delay: float = 2.0
    queue_size: int = 256


class Connection:
    """One WebSocket: a bounded outbox drained by the connection's writer task."""

    def __init__(self, player_id: str, queue_size: int, on_overflow: Callable[[], None]) -> None:
        self.player_id = player_id
        self.outbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(maxsize=queue_size)
        self.closed = False
        self._on_overflow = on_overflow

    def push(self, message: dict[str, Any]) -> None:
        if self.closed:
            return
        try:
            self.outbox.put_nowait(message)
        except asyncio.QueueFull:
            log.warning("dropping a slow client (player %s): its queue is full", self.player_id)
            self.close()
            self._on_overflow()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            with contextlib.suppress(asyncio.QueueFull):
                self.outbox.put_nowait(None)


@dataclass
class Command:
    kind: str
    player_id: str
    payload: dict[str, Any]
    reply: asyncio.Future[dict[str, Any]]


def now_ms() -> int:
    return int(time.time() * 1000)


def iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat()


@dataclass
class HandRun:
    """The hand in progress at a table."""

    hand_id: int
    hand_no: int
    recorder: HandRecorder
    players: dict[int, str]  # seat -> player_id
    holds: dict[int, int]  # seat -> HT held
    phase: str = "commit"  # commit -> reveal -> play -> finishing -> over
    commits: dict[int, bytes] = field(default_factory=dict)
    seeds: dict[int, bytes] = field(default_factory=dict)
    deadline: float | None = None
    left: set[int] = field(default_factory=set)  # left the table before the deal

    def seat_of(self, player_id: str) -> int | None:
        return next((s for s, p in self.players.items() if p == player_id), None)


class TableActor:
    def __init__(self, table_id: str, pool: asyncpg.Pool, keys: ServerKeys, settings: Settings) -> None:
        self.table_id = table_id
        self.pool = pool
        self.keys = keys
        self.settings = settings
        self.commands: asyncio.Queue[Command] = asyncio.Queue()
        self.watchers: dict[str, Connection] = {}
        self.rules: TableRules | None = None
        self.seats: dict[int, str] = {}
        self.hand: HandRun | None = None
        self.head = GENESIS
        self.dealer: int | None = None
        self.next_hand_no = 1
        self.next_start: float | None = None
        self.task: asyncio.Task[None] | None = None
        self.hands_finished = 0
        self.finished = asyncio.Event()

    # -- life --------------------------------------------------------------------------
    async def load(self) -> None:
        async with connection(self.pool) as conn:
            row = await store.table_row(conn, self.table_id)
            if row is None:
                raise ClientError("no_such_table", f"no table {self.table_id}")
            self.rules = store.rules_of(row)
            self.head = row["head"]
            self.dealer = row["dealer"]
            self.next_hand_no = row["next_hand_no"]
            self.seats = await store.seats_of(conn, self.table_id)

    def start(self) -> None:
        self.task = asyncio.create_task(self.run(), name=f"table-{self.table_id}")

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        for c in list(self.watchers.values()):
            c.close()

    async def submit(self, kind: str, player_id: str, payload: dict[str, Any], timeout: float = 30) -> dict[str, Any]:
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        await self.commands.put(Command(kind, player_id, payload, fut))
        return await asyncio.wait_for(asyncio.shield(fut), timeout)

    async def run(self) -> None:
        self._schedule_start()
        while True:
            wait = None
            deadline = self._deadline()
            if deadline is not None:
                wait = max(0.0, deadline - time.time())
            try:
                cmd = await asyncio.wait_for(self.commands.get(), wait)
            except TimeoutError:
                try:
                    await self._on_deadline()
                except Exception:
                    # The database may be away: try again in a second, never in a tight loop.
                    log.exception("table %s: deadline handling failed; retrying", self.table_id)
                    if self.hand is not None:
                        self.hand.deadline = time.time() + RETRY_SECONDS
                    else:
                        self.next_start = time.time() + RETRY_SECONDS
                continue
            try:
                result = await self._handle(cmd)
                if not cmd.reply.done():
                    cmd.reply.set_result(result)
            except RuleError as e:  # the kernel's, or the server's own ClientError
                if not cmd.reply.done():
                    cmd.reply.set_exception(e)
            except ledger.LedgerError as e:
                if not cmd.reply.done():
                    cmd.reply.set_exception(ClientError(e.code, e.message, "D20"))
            except Exception as e:  # a bug or the database: the client hears of it, the table goes on
                log.exception("table %s: %s failed", self.table_id, cmd.kind)
                if not cmd.reply.done():
                    cmd.reply.set_exception(ClientError("server_error", f"the server could not do that: {e}"))
            await self._advance()

    def _deadline(self) -> float | None:
        if self.hand is not None:
            return self.hand.deadline
        return self.next_start

    def _schedule_start(self) -> None:
        if self.hand is None and self.rules is not None and len(self.seats) >= self.rules.min_players:
            if self.next_start is None:
                self.next_start = time.time() + self.settings.next_hand_delay
        elif self.hand is None:
            self.next_start = None

    async def _on_deadline(self) -> None:
        hand = self.hand
        if hand is None:
            self.next_start = None
            try:
                await self._start_hand()
            except _NotEnough:
                # Too few seated players can cover the hold (D20): try again later.
                self.next_start = time.time() + max(1.0, self.settings.next_hand_delay)
        elif hand.phase == "commit":
            await self._close_commits()
        elif hand.phase == "reveal":
            await self._close_reveals()
        elif hand.phase == "play":
            state = hand.recorder.state
            assert state is not None
            await self._apply(TimeOut(state.turn))  # D16: the clock moves for the seat
        elif hand.phase == "finishing":
            await self._finish(hand, void=hand.recorder.state is None)
        await self._advance()

    async def _advance(self) -> None:
        """Move the hand on when nobody needs to be waited for."""
        hand = self.hand
        if hand is not None and hand.phase == "commit" and set(hand.commits) == set(hand.players):
            await self._close_commits()
        hand = self.hand
        if hand is not None and hand.phase == "reveal":
            committed = {s for s in hand.players if s in hand.commits}
            if committed <= set(hand.seeds):
                await self._close_reveals()
        self._schedule_start()

    # -- commands ----------------------------------------------------------------------
    async def _handle(self, cmd: Command) -> dict[str, Any]:
        handler = {
            "sit": self._sit,
            "leave": self._leave,
            "commit": self._commit,
            "reveal": self._reveal,
            "action": self._action,
            "snapshot": self._snapshot,
        }.get(cmd.kind)
        if handler is None:
            raise ClientError("bad_message", f"unknown command {cmd.kind!r}")
        return await handler(cmd.player_id, cmd.payload)

    async def _sit(self, player_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        assert self.rules is not None
        if player_id in self.seats.values():
            raise ClientError("already_seated", "you already have a seat at this table")
        seat = payload.get("seat")
        free = [s for s in range(self.rules.seats) if s not in self.seats]
        if seat is None:
            if not free:
                raise ClientError("table_full", "every seat is taken")
            seat = free[0]
        if not isinstance(seat, int) or isinstance(seat, bool) or not 0 <= seat < self.rules.seats:
            raise ClientError("bad_message", f"seat must be an integer 0…{self.rules.seats - 1}")
        if seat in self.seats:
            raise ClientError("seat_taken", f"seat {seat} is taken")
        need = hold_amount(self.rules.point_value)
        async with connection(self.pool) as conn:
            bal = await ledger.balance(conn, player_id)
            if bal.available < need:
                raise ClientError(
                    "insufficient_balance",
                    f"sitting needs {need} HT available (130 × point value), you have {bal.available}",
                    "D20",
                )
            try:
                await conn.execute(
                    "INSERT INTO seats (table_id, seat, player_id) VALUES ($1, $2, $3)", self.table_id, seat, player_id
                )
            except asyncpg.UniqueViolationError:
                raise ClientError("seat_taken", f"seat {seat} is taken") from None
        self.seats[seat] = player_id
        self._broadcast_table()
        return {"seat": seat, "table_id": self.table_id}

    async def _leave(self, player_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        seat = next((s for s, p in self.seats.items() if p == player_id), None)
        if seat is None:
            raise ClientError("not_seated", "you have no seat at this table")
        charged = False
        hand = self.hand
        if hand is not None and hand.phase in ("commit", "reveal") and hand.seat_of(player_id) is not None:
            hand.left.add(seat)  # charged as a departure as soon as the cards are dealt (D15)
            charged = True
        elif hand is not None and hand.phase == "play" and hand.seat_of(player_id) is not None:
            state = hand.recorder.state
            assert state is not None
            if state.seat(seat).status.value == "playing":
                await self._apply(Leave(seat))  # D15: 40 points
                charged = True
        async with connection(self.pool) as conn:
            await conn.execute("DELETE FROM seats WHERE table_id = $1 AND player_id = $2", self.table_id, player_id)
        del self.seats[seat]
        self._broadcast_table()
        return {"left": seat, "charged": charged}

    def _hand_for(self, player_id: str, payload: dict[str, Any], phase: str) -> tuple[HandRun, int]:
        hand = self.hand
        if hand is None:
            raise ClientError("no_hand", "no hand is being dealt at this table")
        if payload.get("hand_no") != hand.hand_no:
            raise ClientError("wrong_hand", f"the hand being dealt is number {hand.hand_no}")
        seat = hand.seat_of(player_id)
        if seat is None:
            raise ClientError("not_in_hand", "you take no part in this hand")
        if hand.phase != phase:
            raise ClientError("wrong_phase", f"this needs the {phase} phase; the hand is in the {hand.phase} phase")
        return hand, seat

    async def _commit(self, player_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        hand, seat = self._hand_for(player_id, payload, "commit")
        commit = _hex(payload.get("commit"), 32, "commit")
        if seat in hand.commits:
            raise ClientError("already_committed", "your commitment is already in")
        async with connection(self.pool) as conn:
            await conn.execute(
                "INSERT INTO hand_seeds (hand_id, seat, commit) VALUES ($1, $2, $3)", hand.hand_id, seat, commit
            )
        hand.commits[seat] = commit
        return {"committed": seat}

    async def _reveal(self, player_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        hand, seat = self._hand_for(player_id, payload, "reveal")
        seed = _hex(payload.get("seed"), SEED_BYTES, "seed")
        if seat not in hand.commits:
            raise ClientError("not_committed", "you sent no commitment, so you play with the empty seed (D21)")
        if player_commit(seat, seed) != hand.commits[seat]:
            raise ClientError("seed_mismatch", "that seed does not match your commitment")
        if seat in hand.seeds:
            raise ClientError("already_revealed", "your seed is already in")
        async with connection(self.pool) as conn:
            await conn.execute(
                "UPDATE hand_seeds SET seed = $3, revealed_at = now() WHERE hand_id = $1 AND seat = $2",
                hand.hand_id,
                seat,
                seed,
            )
        hand.seeds[seat] = seed
        return {"revealed": seat}

    async def _action(self, player_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        hand = self.hand
        if hand is None or hand.phase != "play":
            raise ClientError("no_hand", "no hand is in play at this table")
        seat = hand.seat_of(player_id)
        if seat is None:
            raise ClientError("not_in_hand", "you take no part in this hand")
        state = hand.recorder.state
        assert state is not None and self.rules is not None
        raw = payload.get("action")
        if not isinstance(raw, dict):
            raise ClientError("bad_message", "an action message holds an 'action' object")
        if raw.get("kind") in ("timeout", "leave"):
            raise ClientError("bad_message", "the clock's moves are the server's; leave with a 'leave' message")
        action_json = dict(raw)
        action_json["seat"] = seat
        if "card" in action_json:
            action_json["card"] = _card_id(action_json["card"], state, seat, self.rules)
        action = action_from_json(action_json)
        record = await self._apply(action)
        return {"i": record["i"]}

    async def _snapshot(self, player_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        return self.snapshot_for(player_id)

    # -- the hand ----------------------------------------------------------------------
    async def _start_hand(self) -> None:
        assert self.rules is not None
        rules = self.rules
        if len(self.seats) < rules.min_players:
            return
        seed = secrets.token_bytes(SEED_BYTES)
        hand_no = self.next_hand_no
        nonce, sealed = self.keys.seal_seed(seed, self.table_id, hand_no)
        need = hold_amount(rules.point_value)
        async with connection(self.pool) as conn, conn.transaction():
            hand_id: int = await conn.fetchval(
                "INSERT INTO hands (table_id, hand_no, status, seed_nonce, seed_sealed, commit_s) "
                "VALUES ($1, $2, 'seeding', $3, $4, '') RETURNING id",
                self.table_id,
                hand_no,
                nonce,
                sealed,
            )
            players: dict[int, str] = {}
            for seat, player_id in sorted(self.seats.items()):
                try:
                    async with conn.transaction():  # a savepoint per hold (D20)
                        await ledger.hold(conn, player_id, need, hand_id)
                        await conn.execute(
                            "INSERT INTO hand_players (hand_id, seat, player_id, hold) VALUES ($1, $2, $3, $4)",
                            hand_id,
                            seat,
                            player_id,
                            need,
                        )
                    players[seat] = player_id
                except ledger.LedgerError:
                    log.info(
                        "table %s: player %s cannot cover the hold and sits this hand out", self.table_id, player_id
                    )
            if len(players) < rules.min_players:
                raise _NotEnough()
            order = sorted(players)
            dealer = next((s for s in order if self.dealer is not None and s > self.dealer), order[0])
            recorder = HandRecorder(
                signer=self.keys.signer,
                table_id=self.table_id,
                hand_no=hand_no,
                rules=rules,
                seats=[(s, players[s]) for s in order],
                dealer=dealer,
                server_seed=seed,
                prev_head=self.head,
            )
            record = recorder.commit()
            await conn.execute("UPDATE hands SET commit_s = $2 WHERE id = $1", hand_id, recorder.header["commit_s"])
            await _insert_record(conn, hand_id, record)
            await conn.execute(
                "UPDATE tables SET next_hand_no = $2, dealer = $3 WHERE id = $1", self.table_id, hand_no + 1, dealer
            )
        self.next_hand_no = hand_no + 1
        self.dealer = dealer
        self.hand = HandRun(hand_id, hand_no, recorder, players, {s: need for s in players})
        self.hand.deadline = time.time() + self.settings.commit_seconds
        log.info("table %s: hand %d (id %d) with seats %s", self.table_id, hand_no, hand_id, order)
        self._broadcast(
            {
                "type": "hand",
                "phase": "commit",
                "table_id": self.table_id,
                "hand_no": hand_no,
                "hand_id": hand_id,
                "record": record,
                "deadline": iso(self.hand.deadline),
            }
        )

    async def _close_commits(self) -> None:
        hand = self.hand
        assert hand is not None
        rec = hand.recorder
        if len(rec.records) < 2:  # a retry after a failed store reuses the record
            rec.commitments({s: hand.commits.get(s) for s in hand.players})
        record = rec.records[1]
        await self._store(hand, record)
        hand.phase = "reveal"
        hand.deadline = time.time() + self.settings.reveal_seconds
        self._broadcast(
            {
                "type": "hand",
                "phase": "reveal",
                "table_id": self.table_id,
                "hand_no": hand.hand_no,
                "record": record,
                "deadline": iso(hand.deadline),
            }
        )

    async def _close_reveals(self) -> None:
        hand = self.hand
        assert hand is not None
        rec = hand.recorder
        if len(rec.records) < 3:  # a retry after a failed store reuses the record
            rec.reveal(hand.seeds, {s: hand.commits.get(s) for s in hand.players})
        await self._store(hand, rec.records[2])
        events: list[Event] = []
        if len(rec.records) < 4:
            _, events = rec.deal()
        deal_record = rec.records[3]
        if rec.state is None:  # D29: void
            await self._store(hand, deal_record)
            hand.phase = "finishing"
            await self._finish(hand, void=True)
            return
        deadline = time.time() + rec.state.rules.turn_seconds
        await self._store(hand, deal_record, deadline=deadline, status="playing")
        hand.phase = "play"
        hand.deadline = deadline
        if not events:
            events = [Event.from_json(e) for e in deal_record["events"]]
        self._push_update(hand, deal_record, events)
        for seat in sorted(hand.left):
            state = rec.state
            if self.hand is hand and state is not None and state.phase is not Phase.ENDED:
                if state.seat(seat).status.value == "playing":
                    await self._apply(Leave(seat))

    async def _apply(self, action: Action) -> dict[str, Any]:
        """Validate, store, then tell: the one path every move takes."""
        hand = self.hand
        assert hand is not None and hand.recorder.state is not None
        before = hand.recorder.state
        state, record, events = hand.recorder.prepare(action, t=now_ms())
        new_turn = state.turn_no != before.turn_no or state.turn != before.turn
        deadline = hand.deadline
        if state.phase is Phase.ENDED:
            deadline = None
        elif new_turn:
            deadline = time.time() + state.rules.turn_seconds
        await self._store(hand, record, deadline=deadline)
        hand.recorder.accept(state, record)
        hand.deadline = deadline
        self._push_update(hand, record, events)
        if state.phase is Phase.ENDED:
            hand.phase = "finishing"
            try:
                await self._finish(hand)
            except Exception:
                # The last record is stored; settling is retried until it succeeds
                # (once only: settlements are keyed by the hand).
                log.exception("table %s: settling hand %d failed; retrying", self.table_id, hand.hand_no)
                hand.deadline = time.time() + RETRY_SECONDS
        return record

    async def _store(
        self, hand: HandRun, record: dict[str, Any], *, deadline: float | None = None, status: str | None = None
    ) -> None:
        async with connection(self.pool) as conn, conn.transaction():
            await _insert_record(conn, hand.hand_id, record)
            await conn.execute(
                "UPDATE hands SET deadline = $2, status = COALESCE($3, status) WHERE id = $1",
                hand.hand_id,
                None if deadline is None else datetime.fromtimestamp(deadline, UTC),
                status,
            )

    async def _finish(self, hand: HandRun, *, void: bool = False) -> None:
        """Settle once (D19), publish the transcript, free the table for the next hand."""
        rec = hand.recorder
        transcript = rec.transcript()
        holds = {s: (hand.players[s], hand.holds[s]) for s in hand.players}
        async with connection(self.pool) as conn, conn.transaction():
            if void:
                await ledger.release(conn, {p: a for p, a in holds.values()}, hand.hand_id)
            else:
                assert rec.state is not None and rec.state.result is not None
                await ledger.settle(conn, hand.hand_id, holds, rec.state.result.settlement)
            await conn.execute(
                "UPDATE hands SET status = $2, transcript = $3::jsonb, ended_at = now(), deadline = NULL WHERE id = $1",
                hand.hand_id,
                "void" if void else "ended",
                json.dumps(transcript),
            )
            await conn.execute("UPDATE tables SET head = $2 WHERE id = $1", self.table_id, transcript["head"])
            # D31: a seat the clock dropped is stood up, so an absent player stops paying.
            absent = [hand.players[s] for s in _clock_dropped(rec.records)]
            if absent:
                await conn.execute(
                    "DELETE FROM seats WHERE table_id = $1 AND player_id = ANY($2::text[])", self.table_id, absent
                )
        self.head = str(transcript["head"])
        if absent:
            self.seats = {s: p for s, p in self.seats.items() if p not in absent}
            self._broadcast_table()
        hand.phase = "over"
        self.hand = None
        self.hands_finished += 1
        self.next_start = None
        self._broadcast(
            {
                "type": "result",
                "table_id": self.table_id,
                "hand_no": hand.hand_no,
                "hand_id": hand.hand_id,
                "void": void,
                "result": transcript["result"],
                "server_seed": transcript["server_seed"],
                "transcript": f"/api/hands/{hand.hand_id}/transcript",
            }
        )
        self.finished.set()
        self.finished = asyncio.Event()

    # -- telling -----------------------------------------------------------------------
    def attach(self, conn: Connection) -> None:
        """One live connection per player at a table: a new one replaces the old."""
        old = self.watchers.get(conn.player_id)
        if old is not None and old is not conn:
            old.push(
                {"type": "replaced", "table_id": self.table_id, "message": "another connection took over this seat"}
            )
            old.close()
        self.watchers[conn.player_id] = conn

    def detach(self, conn: Connection) -> None:
        if self.watchers.get(conn.player_id) is conn:
            del self.watchers[conn.player_id]

    def _broadcast(self, message: dict[str, Any]) -> None:
        for c in list(self.watchers.values()):
            c.push(message)

    def _broadcast_table(self) -> None:
        self._broadcast(
            {"type": "table", "table_id": self.table_id, "seats": {str(s): p for s, p in sorted(self.seats.items())}}
        )

    def _push_update(self, hand: HandRun, record: dict[str, Any], events: list[Event]) -> None:
        state = hand.recorder.state
        for player_id, c in list(self.watchers.items()):
            seat = hand.seat_of(player_id)
            c.push(
                {
                    "type": "update",
                    "table_id": self.table_id,
                    "hand_no": hand.hand_no,
                    "i": record["i"],
                    "events": [e.for_seat(seat) for e in events],
                    "view": None if state is None else seat_view(state, seat),
                    "deadline": iso(hand.deadline),
                }
            )

    def snapshot_for(self, player_id: str) -> dict[str, Any]:
        """Everything a (re)connecting player may see now: the table, and the hand
        in progress from their seat's point of view."""
        assert self.rules is not None
        out: dict[str, Any] = {
            "table_id": self.table_id,
            "rules": self.rules.to_json(),
            "seats": {str(s): p for s, p in sorted(self.seats.items())},
            "hand": None,
        }
        hand = self.hand
        if hand is not None:
            seat = hand.seat_of(player_id)
            records = hand.recorder.records
            out["hand"] = {
                "hand_no": hand.hand_no,
                "hand_id": hand.hand_id,
                "phase": hand.phase,
                "seat": seat,
                "deadline": iso(hand.deadline),
                "header": records[0] if records else None,
                "commitments": records[1] if len(records) > 1 else None,
                "committed": seat in hand.commits if seat is not None else None,
                "revealed": seat in hand.seeds if seat is not None else None,
                "view": None if hand.recorder.state is None else seat_view(hand.recorder.state, seat),
            }
        return out


class _NotEnough(Exception):
    """Fewer players than min_players could cover their hold: no hand (rolled back)."""


def _clock_dropped(records: list[dict[str, Any]]) -> list[int]:
    return [
        int(e["seat"])
        for r in records
        for e in r.get("events", [])
        if e["kind"] == "drop" and e["data"].get("reason") == "clock"
    ]


async def _insert_record(conn: asyncpg.Connection, hand_id: int, record: dict[str, Any]) -> None:
    """Store a record; storing the very same record again (a retry) changes nothing,
    a different record under the same number is an error."""
    stored = await conn.fetchval("SELECT h FROM hand_records WHERE hand_id = $1 AND i = $2", hand_id, record["i"])
    if stored is not None:
        if stored != record["h"]:
            raise RuntimeError(f"hand {hand_id} already has a different record {record['i']}")
        return
    await conn.execute(
        "INSERT INTO hand_records (hand_id, i, record, h) VALUES ($1, $2, $3::jsonb, $4)",
        hand_id,
        record["i"],
        json.dumps(record),
        record["h"],
    )


def _hex(value: Any, size: int, name: str) -> bytes:
    if not isinstance(value, str) or len(value) != 2 * size:
        raise ClientError("bad_message", f"{name} must be {size} bytes in hex")
    try:
        return bytes.fromhex(value)
    except ValueError:
        raise ClientError("bad_message", f"{name} must be hex") from None


def _card_id(value: Any, state: HandState, seat: int, rules: TableRules) -> int:
    """A card named by id or by face (``7H``, ``10S``, ``JK``): by face, the first copy
    in the seat's hand."""
    pack = deck_size(rules.decks)
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value < pack:
            raise ClientError("unknown_card", f"there is no card {value} in a {pack}-card pack", "D1")
        return value
    if isinstance(value, str):
        try:
            face = Card.parse(value)
        except RuleError:
            raise ClientError("unknown_card", f"not a card: {value!r}", "D1") from None
        for c in state.seat(seat).cards:
            if card_of_id(c, rules.decks) == face:
                return c
        raise ClientError("card_not_in_hand", f"you hold no {face}", "D11")
    raise ClientError("unknown_card", "a card is an id or a face such as 7H", "D1")
