"""The table core's ops carried out on PostgreSQL.

With :mod:`service.handstore` (a hand's rows) and :mod:`service.writer` (the group
commit) this is the table store: the only modules that hold a table's SQL; the
table's shell and core make no database call (tests/test_write_paths.py).

Each op (:mod:`service.tablecore.io`) is one transaction, fenced by the table's lease
(service.cluster) and safe to repeat after an unknown outcome (service.handstore).
A hand's records go through the process's group commit (:mod:`service.writer`) when
one is given.  :meth:`TableStore.run` answers the op's data or raises: a
:class:`ClientError` (refused by rule), :class:`Fenced`, :class:`StoreConflict`, or
the database's own error (an unknown outcome); :func:`outcome` turns that into the
core's :class:`Outcome`.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import AsyncIterator
from typing import Any

import asyncpg

from service import handstore, ledger, store
from service.cluster import Fenced, Lease, fenced
from service.db import connection
from service.keys import ServerKeys
from service.tablecore import io
from service.tablecore.errors import ClientError
from service.tablecore.state import TableFacts
from service.writer import RecordWriter, Write
from verifier.ed25519 import key_problem
from verifier.errors import RuleError
from verifier.fairness import SEED_BYTES


def outcome(op_id: int, error: BaseException | None, data: Any = None) -> io.Outcome:
    """The core's view of how an op ended."""
    if error is None:
        return io.Outcome(op_id, io.Result.COMMITTED, data)
    if isinstance(error, RuleError):
        return io.Outcome(op_id, io.Result.REFUSED, error=error)
    if isinstance(error, io.NotEnough):
        return io.Outcome(op_id, io.Result.REFUSED)
    if isinstance(error, ledger.LedgerError):
        return io.Outcome(op_id, io.Result.REFUSED, error=ClientError(error.code, error.message, "D20"))
    if isinstance(error, Fenced):
        return io.Outcome(op_id, io.Result.FENCED)
    if isinstance(error, handstore.StoreConflict):
        return io.Outcome(op_id, io.Result.CONFLICT)
    if isinstance(error, asyncpg.InsufficientResourcesError):  # a full disk (53100): refused, nothing stored
        return io.Outcome(op_id, io.Result.FULL)
    if isinstance(error, asyncpg.CannotConnectNowError):  # the database recovering: nothing ran
        return io.Outcome(op_id, io.Result.FAILED)
    return io.Outcome(op_id, io.Result.AMBIGUOUS)  # the COMMIT may or may not have happened


def _s(ms: int | None) -> float | None:
    return None if ms is None else ms / 1000


class TableStore:
    def __init__(
        self, table_id: str, pool: asyncpg.Pool, keys: ServerKeys, lease: Lease | None, writer: RecordWriter | None
    ) -> None:
        self.table_id = table_id
        self.pool = pool
        self.keys = keys
        self.lease = lease
        self.writer = writer

    @contextlib.asynccontextmanager
    async def fence(self) -> AsyncIterator[asyncpg.Connection]:
        """A transaction in which this node's lease on the table holds (service.cluster)."""
        if self.lease is None:
            async with connection(self.pool) as conn, conn.transaction():
                yield conn
        else:
            async with fenced(self.pool, self.lease) as conn:
                yield conn

    def seal(self, hand_no: int, records: tuple[dict[str, Any], ...]) -> list[handstore.SealedRecord]:
        return [handstore.seal(self.keys, self.table_id, hand_no, r) for r in records]

    # -- loading ----------------------------------------------------------------------
    async def load(self, ended_of: int | None) -> io.Loaded:
        async with connection(self.pool) as conn:
            row = await store.table_row(conn, self.table_id)
            if row is None:
                raise RuntimeError(f"table {self.table_id} is not in the database")
            seats = await store.seats_of(conn, self.table_id)
            stored = await handstore.load_hand(conn, self.table_id)
            ended = None
            if ended_of is not None and (stored is None or stored.hand_id != ended_of):
                got = await handstore.ended_hand(conn, ended_of)
                if got is not None and got["transcript"] is not None:
                    ended = json.loads(got["transcript"])
        facts = TableFacts(
            rules=store.rules_of(row),
            max_away=int(row["max_away_hands"]),
            seats=seats,
            head=str(row["head"]),
            dealer=row["dealer"],
            next_hand_no=int(row["next_hand_no"]),
            status=str(row["status"]),
        )
        return io.Loaded(facts, stored, ended)

    # -- ops --------------------------------------------------------------------------
    async def run(self, op: io.Op) -> Any:
        if isinstance(op, io.RecordsOp):
            return await self._records(op)
        if isinstance(op, io.SeedOp):
            lease = (self.table_id, self.lease.owner, self.lease.epoch) if self.lease else (self.table_id, "", -1)
            async with connection(self.pool) as conn:
                held = await handstore.store_seed(conn, op.kind, lease, op.hand_id, op.seat, op.value, op.psig)
            if not held:
                raise Fenced(f"table {self.table_id}: this node's lease was taken over")
            return None
        if isinstance(op, io.StartOp):
            return await self._start(op)
        async with self.fence() as conn:
            return await self._in_transaction(conn, op)

    async def _records(self, op: io.RecordsOp) -> None:
        sealed = self.seal(op.hand_no, op.records)
        if self.writer is not None:
            await self.writer.write(Write(self.lease, self.table_id, op.hand_id, sealed, _s(op.deadline), op.status))
        else:
            async with self.fence() as conn:
                await handstore.store_records(conn, op.hand_id, sealed, deadline=_s(op.deadline), status=op.status)

    async def _in_transaction(self, conn: asyncpg.Connection, op: io.Op) -> Any:
        t = self.table_id
        if isinstance(op, io.SitOp):
            if await conn.fetchval("SELECT public_key FROM players WHERE id = $1", op.player_id) is None:
                raise ClientError(
                    "no_player_key", "register your public key (PUT /api/me/key) before you sit: you sign your moves"
                )
            bal = await ledger.balance(conn, op.player_id)
            if bal.available < op.need:
                raise ClientError(
                    "insufficient_balance",
                    f"sitting needs {op.need} HT available (130 × point value), you have {bal.available}",
                    "D20",
                )
            try:
                async with conn.transaction():
                    await conn.execute(
                        "INSERT INTO seats (table_id, seat, player_id) VALUES ($1, $2, $3)", t, op.seat, op.player_id
                    )
            except asyncpg.UniqueViolationError:
                raise ClientError("seat_taken", f"seat {op.seat} is taken") from None
        elif isinstance(op, io.UnseatOp):
            if op.records and op.hand_id is not None:
                sealed = self.seal(op.hand_no, op.records)
                await handstore.store_records(conn, op.hand_id, sealed, deadline=_s(op.deadline))
            await conn.execute("DELETE FROM seats WHERE table_id = $1 AND player_id = $2", t, op.player_id)
        elif isinstance(op, io.StandLaterOp):
            await conn.execute("UPDATE seats SET stand_after_hand = true WHERE table_id = $1 AND seat = $2", t, op.seat)
        elif isinstance(op, io.StatusOp):
            await conn.execute("UPDATE tables SET status = $2 WHERE id = $1", t, op.status)
        elif isinstance(op, io.CloseOp):
            await conn.execute("DELETE FROM seats WHERE table_id = $1", t)
            await conn.execute("UPDATE tables SET status = 'closed' WHERE id = $1", t)
        elif isinstance(op, io.FinishOp):
            return await handstore.finish(
                conn,
                table_id=t,
                hand_id=op.hand_id,
                transcript=op.transcript,
                holds=op.holds,
                settlement=op.settlement,
                void_reason=op.void_reason,
                stand_up=op.stand_up,
            )
        elif isinstance(op, io.VoidUnreadableOp):
            stored = op.stored
            done = await conn.fetchval(
                "UPDATE hands SET status = 'void', void_reason = $2, ended_at = now(), deadline = NULL "
                "WHERE id = $1 AND status IN ('seeding', 'playing') RETURNING id",
                stored.hand_id,
                op.reason[:500],
            )
            if done is not None and stored.players:
                await ledger.release(conn, {p: h for p, h in stored.players.values()}, stored.hand_id)
        elif isinstance(op, io.QuarantineOp):
            return await handstore.quarantine_after(conn, op.hand_id, op.keep)
        else:
            raise TypeError(f"no such op: {op!r}")
        return None

    async def _start(self, op: io.StartOp) -> tuple[Any, int, list[str]]:
        seed = secrets.token_bytes(SEED_BYTES)
        nonce, sealed = self.keys.seal_seed(seed, self.table_id, op.hand_no)
        async with self.fence() as conn:
            hand_id: int = await conn.fetchval(
                "INSERT INTO hands (table_id, hand_no, status, seed_nonce, seed_sealed, commit_s) "
                "VALUES ($1, $2, 'seeding', $3, $4, '') RETURNING id",
                self.table_id,
                op.hand_no,
                nonce,
                sealed,
            )
            players, keys = await self._hold(conn, hand_id, op.candidates, op.need)
            if len(players) < op.min_players:
                raise io.NotEnough()  # rolled back
            hand, dealer = op.begin(io.Started(hand_id, seed, players, keys))
            rec = hand.recorder
            await handstore.insert_records(conn, hand_id, self.seal(op.hand_no, (rec.records[0],)))
            await conn.execute(
                "UPDATE hands SET commit_s = $2, deadline = $3 WHERE id = $1",
                hand_id,
                rec.header["commit_s"],
                handstore.ts(_s(hand.base_deadline())),
            )
            await conn.execute(
                "UPDATE tables SET next_hand_no = $2, dealer = $3 WHERE id = $1", self.table_id, op.hand_no + 1, dealer
            )
            stood = await self._count_away(conn, list(players.values()), list(op.absent), op.max_away)
        return hand, dealer, stood

    async def _hold(
        self, conn: asyncpg.Connection, hand_id: int, candidates: tuple[tuple[int, str], ...], need: int
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
                pass  # cannot cover the hold: sits this hand out
        return players, keys

    async def _count_away(self, conn: asyncpg.Connection, dealt: list[str], absent: list[str], most: int) -> list[str]:
        """D34: who was dealt in starts the count again; who was away counts one more;
        who reached ``most`` is stood up."""
        await conn.execute(
            "UPDATE seats SET away_hands = CASE WHEN player_id = ANY($2::text[]) THEN 0 ELSE away_hands + 1 END "
            "WHERE table_id = $1 AND (player_id = ANY($2::text[]) OR player_id = ANY($3::text[]))",
            self.table_id,
            dealt,
            absent,
        )
        rows = await conn.fetch(
            "DELETE FROM seats WHERE table_id = $1 AND away_hands >= $2 RETURNING player_id", self.table_id, most
        )
        return [r["player_id"] for r in rows]
