"""A table's hand from its header to its settlement: every step stores, then tells.

:class:`Dealer` moves the hand of one table through its phases (docs/fairness.md §10):
start (the signed header, the holds of D20, sitting out and standing up of D34),
the seed windows, the deal, every move (the one path :meth:`Dealer.apply`), a void
(D33) and the end (settle once, D19; publish the transcript; continue the chain).  It
works on :class:`TableState`, the table as memory holds it, which the table task
reloads from the database whenever a write fails; it never decides what to do next —
the table task does (:mod:`service.table`).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from service import handstore, ledger
from service.cluster import Lease
from service.handrun import HandRun
from service.keys import ServerKeys
from service.metrics import Metrics
from service.telling import Teller
from service.writer import RecordWriter, Write
from verifier.ed25519 import key_problem
from verifier.fairness import SEED_BYTES
from verifier.hand import Action, TableRules, TimeOut, action_to_json
from verifier.record import HandRecorder
from verifier.settle import hold_amount

log = logging.getLogger("rummy.table")


class NotEnough(Exception):
    """Fewer than min_players are connected and can cover their hold: no hand."""


@dataclass
class TableState:
    """A table as memory holds it; the database is the truth (service.table reloads)."""

    table_id: str
    rules: TableRules | None = None
    max_away: int = 3
    seats: dict[int, str] = field(default_factory=dict)  # seat -> player id
    head: str = ""
    dealer: int | None = None
    next_hand_no: int = 1
    status: str = "open"  # open, closing (no new hand), closed
    hand: HandRun | None = None
    hands_finished: int = 0


#: after an unknown outcome, the reply to a move if its record is stored, else None
Settled = Callable[[], dict[str, Any] | None]


class Dealer:
    def __init__(
        self,
        table: TableState,
        pool: asyncpg.Pool,
        keys: ServerKeys,
        teller: Teller,
        fence: Callable[[], contextlib.AbstractAsyncContextManager[asyncpg.Connection]],
        *,
        commit_seconds: float,
        reveal_seconds: float,
        metrics: Metrics | None = None,
        writer: RecordWriter | None = None,
        lease: Lease | None = None,
    ) -> None:
        self.t = table
        self.metrics = metrics
        self.writer = writer
        self.lease = lease
        self.pool = pool
        self.keys = keys
        self.teller = teller
        self.fence = fence  # every write: a transaction in which this node holds the table
        self.commit_ms = int(commit_seconds * 1000)
        self.reveal_ms = int(reveal_seconds * 1000)

    # -- the start ---------------------------------------------------------------------
    async def start(self, connected: set[str]) -> HandRun:
        """A new hand for the connected seats that can cover their hold (D20); absent
        seats sit it out, and are stood up after ``max_away`` hands away (D34)."""
        t = self.t
        assert t.rules is not None
        rules = t.rules
        candidates = [(s, p) for s, p in sorted(t.seats.items()) if p in connected]
        absent = [p for p in t.seats.values() if p not in connected]
        if len(candidates) < rules.min_players:
            raise NotEnough()
        seed = secrets.token_bytes(SEED_BYTES)
        hand_no = t.next_hand_no
        nonce, sealed = self.keys.seal_seed(seed, t.table_id, hand_no)
        need = hold_amount(rules.point_value)
        async with self.fence() as conn:
            hand_id: int = await conn.fetchval(
                "INSERT INTO hands (table_id, hand_no, status, seed_nonce, seed_sealed, commit_s) "
                "VALUES ($1, $2, 'seeding', $3, $4, '') RETURNING id",
                t.table_id,
                hand_no,
                nonce,
                sealed,
            )
            players, keys = await self._hold(conn, hand_id, candidates, need)
            if len(players) < rules.min_players:
                raise NotEnough()
            order = sorted(players)
            dealer = next((s for s in order if t.dealer is not None and s > t.dealer), order[0])
            recorder = HandRecorder(
                signer=self.keys.signer,
                table_id=t.table_id,
                hand_no=hand_no,
                rules=rules,
                seats=[(s, players[s], keys[players[s]]) for s in order],
                dealer=dealer,
                server_seed=seed,
                prev_head=t.head,
                commit_ms=self.commit_ms,
                reveal_ms=self.reveal_ms,
            )
            hand = HandRun(hand_id, hand_no, recorder, players, {s: need for s in players})
            record = recorder.open(hand.next_t())
            hand.arm()
            await handstore.insert_records(conn, hand_id, [handstore.seal(self.keys, t.table_id, hand_no, record)])
            await conn.execute(
                "UPDATE hands SET commit_s = $2, deadline = $3 WHERE id = $1",
                hand_id,
                recorder.header["commit_s"],
                handstore.ts(hand.deadline),
            )
            await conn.execute(
                "UPDATE tables SET next_hand_no = $2, dealer = $3 WHERE id = $1", t.table_id, hand_no + 1, dealer
            )
            stood = await self._count_away(conn, list(players.values()), absent)
        t.next_hand_no = hand_no + 1
        t.dealer = dealer
        t.hand = hand
        if stood:
            log.info("table %s: stood up after %d hands away: %s", t.table_id, t.max_away, stood)
            t.seats = {s: p for s, p in t.seats.items() if p not in stood}
            self.teller.tell_seats(t.seats)
        log.info("table %s: hand %d (id %d) with seats %s", t.table_id, hand_no, hand_id, order)
        self.teller.tell_phase(hand)
        return hand

    async def _hold(
        self, conn: asyncpg.Connection, hand_id: int, candidates: list[tuple[int, str]], need: int
    ) -> tuple[dict[int, str], dict[str, bytes]]:
        """Hold each candidate's D20 amount (a savepoint each); who has no strict key
        (§9: one registered before the check), shares one with a seat before it (§13),
        or cannot cover the hold sits the hand out."""
        keys = {
            r["id"]: bytes(r["public_key"])
            for r in await conn.fetch(
                "SELECT id, public_key FROM players WHERE id = ANY($1::text[]) AND public_key IS NOT NULL",
                [p for _, p in candidates],
            )
        }
        players: dict[int, str] = {}
        for seat, player_id in candidates:
            key = keys.get(player_id)
            if key is None or key_problem(key) is not None or key in {keys[p] for p in players.values()}:
                continue
            try:
                async with conn.transaction():
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
                log.info("table %s: %s cannot cover the hold and sits this hand out", self.t.table_id, player_id)
        return players, keys

    async def _count_away(self, conn: asyncpg.Connection, dealt: list[str], absent: list[str]) -> list[str]:
        """D34: who was dealt in starts the count again; who was away counts one more;
        who reached ``max_away`` is stood up."""
        await conn.execute(
            "UPDATE seats SET away_hands = CASE WHEN player_id = ANY($2::text[]) THEN 0 ELSE away_hands + 1 END "
            "WHERE table_id = $1 AND (player_id = ANY($2::text[]) OR player_id = ANY($3::text[]))",
            self.t.table_id,
            dealt,
            absent,
        )
        rows = await conn.fetch(
            "DELETE FROM seats WHERE table_id = $1 AND away_hands >= $2 RETURNING player_id",
            self.t.table_id,
            self.t.max_away,
        )
        return [r["player_id"] for r in rows]

    # -- the seed phases and the deal --------------------------------------------------
    async def store(self, hand: HandRun, records: list[dict[str, Any]], status: str | None = None) -> None:
        """Records and the hand's clock, committed (with other tables' writes, when a
        group writer is given) before anything about them is told."""
        sealed = [handstore.seal(self.keys, self.t.table_id, hand.hand_no, r) for r in records]
        started = time.perf_counter()
        if self.writer is not None:
            await self.writer.write(Write(self.lease, self.t.table_id, hand.hand_id, sealed, hand.deadline, status))
        else:
            async with self.fence() as conn:
                await handstore.store_records(conn, hand.hand_id, sealed, deadline=hand.deadline, status=status)
        if self.metrics is not None:
            self.metrics.store_seconds.observe(time.perf_counter() - started)

    async def close_commits(self, hand: HandRun) -> None:
        everyone = set(hand.commits) == set(hand.players)
        hand.recorder.commitments(hand.commits, hand.next_t(0 if everyone else hand.window_end()))
        hand.arm()
        await self.store(hand, hand.recorder.records[1:2])
        self.teller.tell_phase(hand)

    async def close_reveals(self, hand: HandRun) -> None:
        rec = hand.recorder
        everyone = all(rec.commit_of(s) is None or s in hand.seeds for s in hand.players)
        rec.reveal(hand.seeds, hand.next_t(0 if everyone else hand.window_end()))
        await self.deal(hand)

    async def deal(self, hand: HandRun) -> None:
        """Record 3: the deal, stored with the reveals in one transaction.  (A seat
        that left during the seed phases is stood up when the hand ends, D36: the
        clock plays for it meanwhile.)"""
        rec = hand.recorder
        record, events = rec.deal(hand.next_t())
        if rec.voided:  # no seat was dealt in (D29)
            await self.store(hand, rec.records[2:4])
            await self.finish(hand)
            return
        hand.note_turns(record)
        hand.arm()
        await self.store(hand, rec.records[2:4], status="playing")
        self.teller.tell_update(hand, record, events)
        if rec.ended:  # one seat dealt in wins at once (D29, D14)
            await self.finish(hand)

    # -- moves -------------------------------------------------------------------------
    async def apply(
        self,
        hand: HandRun,
        action: Action,
        psig: dict[str, Any] | None,
        on_unknown: Callable[[Settled], None] | None = None,
    ) -> dict[str, Any]:
        """Check, store, then tell: the one path every move takes.  ``on_unknown``
        receives, before the write, how to tell later whether it was stored.  A
        player's move is answered with the server's signed ack (docs/fairness.md §15),
        which is also the signed head of its record: ``arrived`` is the record's ``t``,
        the table's clock when it judged the move."""
        rec = hand.recorder
        at_least = hand.turn_end() if isinstance(action, TimeOut) else 0
        state, record, events = rec.prepare(action, psig, hand.next_t(at_least))
        result: dict[str, Any] = {"i": record["i"], "h": record["h"], "ack": None}

        def ack(of: HandRecorder) -> dict[str, Any] | None:
            if psig is None:  # the clock's move: nobody to answer
                return None
            move = action_to_json(action)
            return of.ack(action.seat, move, psig["prev"], psig["sig"], arrived=record["t"], i=record["i"])

        if on_unknown is not None:

            def settled() -> dict[str, Any] | None:
                now = self.t.hand
                if now is None or now.hand_id != hand.hand_id:
                    return None  # the hand ended meanwhile; its update says what happened
                ok = len(now.recorder.records) > record["i"] and now.recorder.records[record["i"]]["h"] == record["h"]
                return {**result, "ack": ack(now.recorder)} if ok else None

            on_unknown(settled)
        # Memory moves first; if the store fails the table reloads from the database
        # and this HandRun is dropped.
        rec.accept(state, record)
        hand.note_turns(record)
        hand.arm()
        await self.store(hand, [record])
        if self.metrics is not None:
            self.metrics.actions.labels(action.kind).inc()
        result["ack"] = ack(rec)
        self.teller.tell_update(hand, record, events)
        if rec.ended:
            await self.finish(hand)
        return result

    # -- the end -----------------------------------------------------------------------
    async def void(self, hand: HandRun, reason: str) -> None:
        """D33: append a void record after what replays, settle nothing."""
        hand.recorder.void(reason[:500], hand.next_t())
        hand.deadline = None
        await self.store(hand, hand.recorder.records[-1:])
        await self.finish(hand)

    async def void_unreadable(self, stored: handstore.StoredHand, reason: str) -> None:
        """A hand whose header cannot be read (no transcript can be made): its holds are
        released and the reason kept (D33); the chain continues from the last head."""
        log.error("table %s: hand %d voided without a transcript: %s", self.t.table_id, stored.hand_no, reason)
        async with self.fence() as conn:
            done = await conn.fetchval(
                "UPDATE hands SET status = 'void', void_reason = $2, ended_at = now(), deadline = NULL "
                "WHERE id = $1 AND status IN ('seeding', 'playing') RETURNING id",
                stored.hand_id,
                reason[:500],
            )
            if done is not None and stored.players:
                await ledger.release(conn, {p: h for p, h in stored.players.values()}, stored.hand_id)

    async def finish(self, hand: HandRun) -> None:
        """Settle once (D19) or release (a void, D33), publish the transcript, free the
        table for the next hand."""
        t = self.t
        rec = hand.recorder
        transcript = rec.transcript(seed_revealed=hand.seed_revealed)
        settlement = None
        if not rec.voided:
            assert rec.state is not None and rec.state.result is not None
            settlement = rec.state.result.settlement
        absent = [hand.players[s] for s in clock_dropped(rec.records)]  # D31
        async with self.fence() as conn:
            stood = await handstore.finish(
                conn,
                table_id=t.table_id,
                hand_id=hand.hand_id,
                transcript=transcript,
                holds={s: (hand.players[s], hand.holds[s]) for s in hand.players},
                settlement=settlement,
                void_reason=str(rec.records[-1]["reason"]) if rec.voided else None,
                stand_up=absent,
            )
        t.head = str(transcript["head"])
        if stood:  # D31, and seats the operator stands up as the hand ends
            t.seats = {s: p for s, p in t.seats.items() if p not in stood}
            self.teller.tell_seats(t.seats)
        t.hand = None
        t.hands_finished += 1
        if self.metrics is not None:
            self.metrics.hands.labels("void" if rec.voided else "ended").inc()
        log.info(
            "table %s: hand %d %s",
            t.table_id,
            hand.hand_no,
            "voided" if rec.voided else "settled",
            extra={"table_id": t.table_id, "hand_id": hand.hand_id},
        )
        self.teller.tell_result(hand, transcript)


def clock_dropped(records: list[dict[str, Any]]) -> list[int]:
    """Seats the clock dropped (D31: stood up when the hand ends)."""
    return [
        int(e["seat"])
        for r in records
        for e in r.get("events", [])
        if e["kind"] == "drop" and e["data"].get("reason") == "clock"
    ]
