"""The table store: a table's ops carried out on PostgreSQL — the only module that
holds a table's SQL (tests/test_write_paths.py); the table's shell and core make no
database call, and the ledger's money statements (:mod:`service.ledger`) are called
inside this module's transactions.

Every op (:mod:`service.tablecore.io`) goes through the process's group commit
(:mod:`service.writer`): :class:`TableStore` reaches the database to write only
through it, and only :func:`commit_batch` — the function the group commit calls —
opens a transaction.  Records and seeds are batched apart from the other ops
(:func:`lane`), so a slow op never holds them up.  A batch is one transaction (one statement, when it holds
only records and seeds):

1. one statement locks the lease of every write in the batch (``FOR KEY SHARE``, in
   table order: fencing, service.cluster), stores the hands' records and moves their
   clocks, and stores the seats' commitments and seeds;
2. one statement locks, in id order, every ledger account the batch's ops may move
   (so two batches in flight, or a batch and a deposit, never wait for each other in
   a circle: every lock that crosses tables is taken up front, leases then accounts,
   each in one order; a table's own rows are never in two batches, as a table has
   one write in flight at a time, io.Pending);
3. each op whose lease is held runs under its own SAVEPOINT: an op refused by rule
   (a ClientError, LedgerError, StoreConflict) rolls back only itself and
   fails only its own write.

A write whose lease is gone fails with :class:`Fenced` and runs nothing; a hand's
records or a seat's seed that clash with others stored fail with
:class:`StoreConflict`.  The price of one transaction per batch: a slow op (a deal
holding eight seats) delays the commit of the other ops in its batch.  Every answer
goes back after the COMMIT (stored before told).  If the transaction itself fails
(the database gone, COMMIT failed, a statement outside the savepoints), every write
of the batch gets that error — an unknown outcome — and every op is safe to repeat:
records by (hand, i) and link, a seed row once, a hand ended once, a hold only with a
new hand row.  :meth:`TableStore.run` answers the op's data or raises;
:func:`outcome` turns that into the core's :class:`Outcome`.

While a hand is live its records are stored twice: a public projection (what a
spectator may see, service.handstore) in ``record``, and the whole record sealed with
the server's AES-GCM key in ``sealed``; recovery opens the sealed copy (D32), and so
does :meth:`TableStore.read_log`, the one read a table asks for besides its load: the
records its hand in progress forgot (verifier.recordlog), when the hand ends or a join
asks for their events.
"""

from __future__ import annotations

import contextlib
import functools
import json
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg

from service import ledger, store
from service.cluster import Fenced, Lease
from service.db import Connections, Pooled, connection
from service.handstore import SealedRecord, StoreConflict, StoredHand, seal, ts
from service.keys import ServerKeys
from service.tablecore import io
from service.tablecore.errors import ClientError
from service.tablecore.state import TableFacts
from service.writer import GroupCommit
from verifier.ed25519 import key_problem
from verifier.errors import RuleError
from verifier.fairness import SEED_BYTES


def outcome(op_id: int, error: BaseException | None, data: Any = None) -> io.Outcome:
    """The core's view of how an op ended."""
    if error is None:
        return io.Outcome(op_id, io.Result.COMMITTED, data)
    if isinstance(error, RuleError):
        return io.Outcome(op_id, io.Result.REFUSED, error=error)
    if isinstance(error, ledger.LedgerError):
        return io.Outcome(op_id, io.Result.REFUSED, error=ClientError(error.code, error.message, "D20"))
    if isinstance(error, Fenced):
        return io.Outcome(op_id, io.Result.FENCED)
    if isinstance(error, StoreConflict):
        return io.Outcome(op_id, io.Result.CONFLICT)
    if isinstance(error, asyncpg.InsufficientResourcesError):  # a full disk (53100): refused, nothing stored
        return io.Outcome(op_id, io.Result.FULL)
    if isinstance(error, asyncpg.CannotConnectNowError):  # the database recovering: nothing ran
        return io.Outcome(op_id, io.Result.FAILED)
    return io.Outcome(op_id, io.Result.AMBIGUOUS)  # the COMMIT may or may not have happened


def _s(ms: int | None) -> float | None:
    return None if ms is None else ms / 1000


# ----------------------------------------------------------------------------- the batch
Run = Callable[[asyncpg.Connection], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Batched:
    """One table's write in a batch of the group commit: a hand's records and its
    clock (``hand_id`` set) or a seat's commitment or seed (``seed``), both stored by
    the batch's one statement; or an op (``run``, on the batch's connection, under a
    savepoint of its own, with the ledger ``accounts`` it may move locked first)."""

    lease: Lease | None  # None: no fencing (a table run outside a cluster, in tests)
    table_id: str
    hand_id: int | None = None
    records: tuple[SealedRecord, ...] = ()
    deadline: float | None = None
    status: str | None = None
    run: Run | None = None
    accounts: tuple[str, ...] = ()
    seed: io.SeedOp | None = None  # a commitment or seed: stored by the batch's statement itself


BATCH_SQL = """
WITH w AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::timestamptz[], $6::text[])
        AS w(table_id, owner, epoch, hand_id, deadline, status)
), lk AS MATERIALIZED (
    SELECT l.table_id FROM table_leases l JOIN w
        ON l.table_id = w.table_id AND l.owner = w.owner AND l.epoch = w.epoch
    ORDER BY l.table_id  -- every statement that locks several leases locks them in this order: no deadlock
    FOR KEY SHARE OF l  -- fencing: a takeover (FOR UPDATE) waits for it; a renewal does not (service.cluster)
), r AS (
    SELECT * FROM unnest($7::bigint[], $8::int[], $9::text[], $10::text[], $11::bytea[])
        AS r(hand_id, i, record, h, sealed)
), clash AS (
    SELECT DISTINCT r.hand_id FROM r JOIN hand_records s ON s.hand_id = r.hand_id AND s.i = r.i AND s.h <> r.h
), ok AS (
    SELECT w.* FROM w
    WHERE w.hand_id IS NOT NULL AND (w.epoch < 0 OR w.table_id IN (SELECT table_id FROM lk))
        AND w.hand_id NOT IN (SELECT hand_id FROM clash)
), ins AS (
    INSERT INTO hand_records (hand_id, i, record, h, sealed)
    SELECT r.hand_id, r.i, r.record::jsonb, r.h, r.sealed FROM r WHERE r.hand_id IN (SELECT hand_id FROM ok)
    ON CONFLICT (hand_id, i) DO NOTHING
    RETURNING hand_id
), upd AS (
    UPDATE hands SET deadline = ok.deadline, status = COALESCE(ok.status, hands.status)
    FROM ok WHERE hands.id = ok.hand_id
    RETURNING hands.id
), sd AS (  -- the seats' commitments and seeds whose table's lease holds
    SELECT sd.* FROM unnest($12::text[], $13::bigint[], $14::bigint[], $15::int[], $16::text[], $17::bytea[],
        $18::text[], $19::bigint[]) AS sd(table_id, epoch, hand_id, seat, kind, value, psig, arrived)
    WHERE sd.epoch < 0 OR sd.table_id IN (SELECT table_id FROM lk)
), cins AS (  -- a commitment is written once ...
    INSERT INTO hand_seeds (hand_id, seat, commit, commit_psig, commit_arrived)
    SELECT hand_id, seat, value, psig, arrived FROM sd WHERE kind = 'commit'
    ON CONFLICT (hand_id, seat) DO NOTHING
    RETURNING hand_id, seat
), carr AS (  -- ... the same one again moves only its arrival on (the ack's, §15.7)
    UPDATE hand_seeds s SET commit_arrived = GREATEST(s.commit_arrived, sd.arrived)
    FROM sd WHERE sd.kind = 'commit' AND s.hand_id = sd.hand_id AND s.seat = sd.seat AND s.commit = sd.value
), rupd AS (  -- ... a seed set once (the same seed again changes nothing but its arrival)
    UPDATE hand_seeds s SET seed = sd.value, reveal_psig = sd.psig, revealed_at = now(),
        reveal_arrived = GREATEST(s.reveal_arrived, sd.arrived)
    FROM sd WHERE sd.kind = 'reveal' AND s.hand_id = sd.hand_id AND s.seat = sd.seat
        AND (s.seed IS NULL OR s.seed = sd.value)
    RETURNING s.hand_id, s.seat
), seeded AS (  -- stored now, or the same commitment stored before
    SELECT hand_id, seat FROM cins UNION SELECT hand_id, seat FROM rupd
    UNION SELECT sd.hand_id, sd.seat FROM sd JOIN hand_seeds s ON s.hand_id = sd.hand_id AND s.seat = sd.seat
        WHERE sd.kind = 'commit' AND s.commit = sd.value
)
SELECT
    COALESCE((SELECT array_agg(table_id) FROM lk), '{}') AS held,
    COALESCE((SELECT array_agg(table_id) FROM ok), '{}') AS ok,
    COALESCE((SELECT array_agg(hand_id) FROM clash), '{}') AS clash,
    (SELECT count(*) FROM ins) AS inserted,
    (SELECT count(*) FROM upd) AS updated,
    COALESCE((SELECT array_agg(hand_id::text || ':' || seat::text) FROM seeded), '{}') AS seeded
"""


async def commit_batch(connections: Connections, batch: Sequence[Batched]) -> list[Any]:
    """The group commit's batch, in one transaction (see the module's docstring):
    one result per write, its answer or the exception it alone failed with; raises if
    the transaction failed.  ``connections``: where the batch takes its connection
    (the server's: the writer pool's connections the group commit keeps,
    service.lifecycle)."""
    recs = [(w.hand_id, r) for w in batch for r in w.records]
    seeds = [(w, w.seed) for w in batch if w.seed is not None]
    out: list[Any] = [None] * len(batch)
    # A batch of records and seeds only is its one statement, atomic alone: no BEGIN
    # and COMMIT round trips (most batches); one with ops is a transaction.
    ops = any(w.run is not None for w in batch)
    async with connections.connection() as conn, conn.transaction() if ops else contextlib.nullcontext():
        row = await conn.fetchrow(
            BATCH_SQL,
            [w.table_id for w in batch],
            [w.lease.owner if w.lease else "" for w in batch],
            [w.lease.epoch if w.lease else -1 for w in batch],
            [w.hand_id for w in batch],
            [ts(w.deadline) for w in batch],
            [w.status for w in batch],
            [h for h, _ in recs],
            [r.i for _, r in recs],
            [r.public for _, r in recs],
            [r.h for _, r in recs],
            [r.sealed for _, r in recs],
            [w.table_id for w, _ in seeds],
            [w.lease.epoch if w.lease else -1 for w, _ in seeds],
            [s.hand_id for _, s in seeds],
            [s.seat for _, s in seeds],
            [s.kind for _, s in seeds],
            [s.value for _, s in seeds],
            [s.psig for _, s in seeds],
            [s.arrived for _, s in seeds],
        )
        assert row is not None
        held, ok, clash, seeded = set(row["held"]), set(row["ok"]), set(row["clash"]), set(row["seeded"])
        runs: list[int] = []
        for k, w in enumerate(batch):
            if w.lease is not None and w.table_id not in held:
                out[k] = Fenced(f"table {w.table_id}: this node's lease (epoch {w.lease.epoch}) was taken over")
            elif w.hand_id is not None and (w.hand_id in clash or w.table_id not in ok):
                out[k] = StoreConflict(f"hand {w.hand_id} already holds another record")
            elif w.seed is not None and f"{w.seed.hand_id}:{w.seed.seat}" not in seeded:
                s = w.seed
                out[k] = StoreConflict(
                    f"hand {s.hand_id} seat {s.seat} has no commitment, or another {s.kind} is stored"
                )
            elif w.run is not None:
                runs.append(k)
        accounts = sorted({a for k in runs for a in batch[k].accounts})
        if accounts:
            await ledger.lock(conn, accounts)
        for k in runs:
            run = batch[k].run
            assert run is not None
            out[k] = await _alone(conn, run)
    return out


async def _alone(conn: asyncpg.Connection, run: Run) -> Any:
    """``run`` under a savepoint of its own: if it raises, only it is rolled back and
    its exception is its result.  If the rollback itself fails (the connection is
    gone), that error ends the whole batch."""
    savepoint = conn.transaction()
    await savepoint.start()
    try:
        result = await run(conn)
    except Exception as e:
        await savepoint.rollback()
        return e
    await savepoint.commit()
    return result


def lane(w: Batched) -> int:
    """The group commit's lanes: records and seeds (0: one statement, quick) are
    batched apart from the ops (1: a deal holding eight seats, a settlement), so a
    slow op never holds up the records of the tables in its batch."""
    return 0 if w.run is None else 1


def group_commit(connections: Connections, *, window: float = 0.002) -> GroupCommit[Batched]:
    """The process's group commit, writing through ``connections``: at most two
    batches in flight per lane (four connections)."""
    return GroupCommit(functools.partial(commit_batch, connections), window=window, lane=lane)


# ----------------------------------------------------------------------------- the store
class TableStore:
    def __init__(
        self,
        table_id: str,
        pool: asyncpg.Pool,
        keys: ServerKeys,
        lease: Lease | None,
        writer: GroupCommit[Batched] | None = None,
    ) -> None:
        self.table_id = table_id
        self.pool = pool  # for loading only: every write goes through the group commit
        self.keys = keys
        self.lease = lease
        self.writer = writer if writer is not None else group_commit(Pooled(pool))

    def seal(self, hand_no: int, records: tuple[dict[str, Any], ...]) -> tuple[SealedRecord, ...]:
        return tuple(seal(self.keys, self.table_id, hand_no, r) for r in records)

    async def load(self, ended_of: int | None) -> io.Loaded:
        """The table as stored (a read: no transaction)."""
        async with connection(self.pool) as conn:
            row = await store.table_row(conn, self.table_id)
            if row is None:
                raise RuntimeError(f"table {self.table_id} is not in the database")
            seats = await store.seats_of(conn, self.table_id)
            stored = await load_hand(conn, self.table_id)
            last_t = await last_record_t(conn, self.table_id)
            ended = None
            if ended_of is not None and (stored is None or stored.hand_id != ended_of):
                got = await ended_hand(conn, ended_of)
                if got is not None and got["transcript"] is not None:
                    ended = io.HandEnd.of(json.loads(got["transcript"]))
        facts = TableFacts(
            rules=store.rules_of(row),
            max_away=int(row["max_away_hands"]),
            seats=seats,
            head=str(row["head"]),
            dealer=row["dealer"],
            next_hand_no=int(row["next_hand_no"]),
            status=str(row["status"]),
        )
        return io.Loaded(facts, stored, ended, last_t)

    async def run(self, op: io.Op) -> Any:
        """Carry out ``op`` in the group commit (a :class:`io.LogOp` is a read, outside
        it): its answer, or raise."""
        if isinstance(op, io.LogOp):
            return await self.read_log(op)
        if isinstance(op, io.RecordsOp):
            sealed = self.seal(op.hand_no, op.records)
            w = Batched(self.lease, self.table_id, op.hand_id, sealed, _s(op.deadline), op.status)
            return await self.writer.write(w)
        if isinstance(op, io.SeedOp):
            return await self.writer.write(Batched(self.lease, self.table_id, seed=op))
        run, accounts = self._op(op)
        return await self.writer.write(Batched(self.lease, self.table_id, run=run, accounts=accounts))

    async def read_log(self, op: io.LogOp) -> list[bytes]:
        """The stored records ``op`` names, their canonical JSON opened from their
        sealed copies (a read: no transaction); the recorder checks them.  A copy that
        does not open is a conflict: the table reloads, and its replay decides what
        the hand becomes (D32, D33)."""
        async with connection(self.pool) as conn:
            rows = await conn.fetch(
                "SELECT i, sealed FROM hand_records WHERE hand_id = $1 AND i >= $2 AND i < $3 ORDER BY i",
                op.hand_id,
                op.start,
                op.stop,
            )
        out = []
        for r in rows:
            try:
                out.append(self.keys.open_record(bytes(r["sealed"]), self.table_id, op.hand_no, int(r["i"])))
            except Exception as e:  # no sealed copy, a wrong tag
                raise StoreConflict(f"stored record {r['i']} of hand {op.hand_id} cannot be opened: {e!r}") from None
        return out

    def _op(self, op: io.Op) -> tuple[Run, tuple[str, ...]]:
        """What ``op`` runs in its batch, and the accounts it may move."""
        t = self.table_id
        if isinstance(op, io.SitOp):
            return functools.partial(_sit, table_id=t, op=op), ()
        if isinstance(op, io.UnseatOp):
            records = self.seal(op.hand_no, op.records) if op.records and op.hand_id is not None else ()
            return functools.partial(_unseat, table_id=t, op=op, records=records), ()
        if isinstance(op, io.StartOp):
            seed = secrets.token_bytes(SEED_BYTES)
            nonce, sealed = self.keys.seal_seed(seed, t, op.hand_no)
            deal = functools.partial(self._deal, op=op, seed=seed, nonce=nonce, sealed=sealed)
            return deal, _accounts(p for _, p in op.candidates)
        if isinstance(op, io.FinishOp):
            house = (ledger.HOUSE,) if op.settlement is not None else ()
            return functools.partial(_finish, table_id=t, op=op), _accounts(p for p, _ in op.holds.values()) + house
        if isinstance(op, io.VoidUnreadableOp):
            return functools.partial(_void_unreadable, table_id=t, op=op), _accounts(
                p for p, _ in op.stored.players.values()
            )
        if isinstance(op, io.QuarantineOp):
            return functools.partial(_quarantine_after, op=op), ()
        if isinstance(op, io.StandLaterOp | io.StandAwayOp | io.StatusOp | io.CloseOp):
            return functools.partial(_table_change, table_id=t, op=op), ()
        if isinstance(op, io.ProbeOp):  # nothing to write: the batch checks the lease and commits
            return _probe, ()
        raise TypeError(f"no such op: {op!r}")

    async def _deal(
        self, conn: asyncpg.Connection, *, op: io.StartOp, seed: bytes, nonce: bytes, sealed: bytes
    ) -> tuple[Any, int, list[str]] | io.NotDealt:
        """A new hand (io.StartOp): its row with the sealed server seed, the holds, the
        header as record 0, the table's next hand and dealer, D34's count (a connected
        seat not dealt in counts as one away).  When fewer than min_players can be
        dealt in, no hand: of the connected seats that cannot be, those that could
        not for ``away_ms`` (op.stand_unable) are stood up instead (D34), so that they
        hold no table up for ever (io.NotDealt)."""
        players, keys = await _dealable(conn, op.candidates, op.need)
        if len(players) < op.min_players:
            unable = tuple(p for _, p in op.candidates if p not in players.values())
            gone = tuple(p for p in unable if p in op.stand_unable)
            await _stand_up(conn, self.table_id, gone)
            return io.NotDealt(unable, gone)
        hand_id: int = await conn.fetchval(
            "INSERT INTO hands (table_id, hand_no, status, seed_nonce, seed_sealed, commit_s) "
            "VALUES ($1, $2, 'seeding', $3, $4, '') RETURNING id",
            self.table_id,
            op.hand_no,
            nonce,
            sealed,
        )
        await _hold(conn, hand_id, players, op.need)
        hand, dealer = op.begin(io.Started(hand_id, seed, players, keys))
        rec = hand.recorder
        await _insert_records(conn, hand_id, self.seal(op.hand_no, (rec.records[0],)))
        await conn.execute(
            "UPDATE hands SET commit_s = $2, deadline = $3 WHERE id = $1",
            hand_id,
            rec.header["commit_s"],
            ts(_s(op.shown(hand.base_deadline()))),
        )
        await conn.execute(
            "UPDATE tables SET next_hand_no = $2, dealer = $3 WHERE id = $1", self.table_id, op.hand_no + 1, dealer
        )
        dealt = set(players.values())
        away = [*op.absent, *(p for _, p in op.candidates if p not in dealt)]
        stood = await _count_away(conn, self.table_id, list(dealt), away, op.max_away)
        return hand, dealer, stood


def _accounts(players: Any) -> tuple[str, ...]:
    return tuple(a for p in players for a in (ledger.available(p), ledger.held(p)))


# ----------------------------------------------------------------------------- the ops
async def _sit(conn: asyncpg.Connection, *, table_id: str, op: io.SitOp) -> None:
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
                "INSERT INTO seats (table_id, seat, player_id) VALUES ($1, $2, $3)", table_id, op.seat, op.player_id
            )
    except asyncpg.UniqueViolationError:
        raise ClientError("seat_taken", f"seat {op.seat} is taken") from None


async def _unseat(
    conn: asyncpg.Connection, *, table_id: str, op: io.UnseatOp, records: tuple[SealedRecord, ...]
) -> None:
    """A stand-up, with the leave's records when it is a move of the hand (D15)."""
    if records and op.hand_id is not None:
        await _insert_records(conn, op.hand_id, records)
        await conn.execute("UPDATE hands SET deadline = $2 WHERE id = $1", op.hand_id, ts(_s(op.deadline)))
    await conn.execute("DELETE FROM seats WHERE table_id = $1 AND player_id = $2", table_id, op.player_id)


async def _probe(conn: asyncpg.Connection) -> None:
    """io.ProbeOp: the store answers."""


async def _table_change(conn: asyncpg.Connection, *, table_id: str, op: io.Op) -> None:
    if isinstance(op, io.StandLaterOp):
        await conn.execute(
            "UPDATE seats SET stand_after_hand = true WHERE table_id = $1 AND seat = $2", table_id, op.seat
        )
    elif isinstance(op, io.StandAwayOp):
        await _stand_up(conn, table_id, op.players)
    elif isinstance(op, io.StatusOp):
        await conn.execute("UPDATE tables SET status = $2 WHERE id = $1", table_id, op.status)
    else:  # io.CloseOp
        await conn.execute("DELETE FROM seats WHERE table_id = $1", table_id)
        await conn.execute("UPDATE tables SET status = 'closed' WHERE id = $1", table_id)


async def _insert_records(conn: asyncpg.Connection, hand_id: int, records: Sequence[SealedRecord]) -> None:
    """Store records; a record already stored with the same link is adopted, another
    record under the same number is a :class:`StoreConflict`."""
    for r in records:
        stored = await conn.fetchval(
            "INSERT INTO hand_records (hand_id, i, record, h, sealed) VALUES ($1, $2, $3::jsonb, $4, $5) "
            "ON CONFLICT (hand_id, i) DO NOTHING RETURNING h",
            hand_id,
            r.i,
            r.public,
            r.h,
            r.sealed,
        )
        if stored is None:
            existing = await conn.fetchval("SELECT h FROM hand_records WHERE hand_id = $1 AND i = $2", hand_id, r.i)
            if existing != r.h:
                raise StoreConflict(f"hand {hand_id} already holds another record {r.i}")


async def _dealable(
    conn: asyncpg.Connection, candidates: tuple[tuple[int, str], ...], need: int
) -> tuple[dict[int, str], dict[str, bytes]]:
    """The candidates who can be dealt in, by seat, and their keys: who has no strict
    key (§9: one registered before the check), shares one with a seat before it
    (§13), or cannot cover the hold (D20) sits the hand out.  The balances are read
    under the locks the batch took on these accounts (service.ledger.lock, before any
    op), so the holds :func:`_hold` posts for them cannot be refused."""
    ids = [p for _, p in candidates]
    keys = {
        r["id"]: bytes(r["public_key"])
        for r in await conn.fetch(
            "SELECT id, public_key FROM players WHERE id = ANY($1::text[]) AND public_key IS NOT NULL", ids
        )
    }
    balances = await ledger.balances(conn, ids)
    players: dict[int, str] = {}
    for seat, player_id in candidates:
        key = keys.get(player_id)
        if key is None or key_problem(key) is not None or key in {keys[p] for p in players.values()}:
            continue
        bal = balances[player_id]
        if not bal.complete or bal.available < need:
            continue  # cannot cover the hold: sits this hand out
        players[seat] = player_id
    return players, keys


async def _hold(conn: asyncpg.Connection, hand_id: int, players: dict[int, str], need: int) -> None:
    """Hold each dealt player's D20 amount: one ledger transaction and one insert
    however many seats (before: a savepoint, a posting and a row for each seat, 25
    statements at six seats)."""
    await ledger.hold_all(conn, {p: need for p in players.values()}, hand_id)
    await conn.execute(
        "INSERT INTO hand_players (hand_id, seat, player_id, hold) "
        "SELECT $1, s, p, $4 FROM unnest($2::int[], $3::text[]) AS x(s, p)",
        hand_id,
        list(players),
        list(players.values()),
        need,
    )


async def _stand_up(conn: asyncpg.Connection, table_id: str, players: Sequence[str]) -> None:
    """D34: these seats stand up (no hand counted them away; time did)."""
    if players:
        await conn.execute(
            "DELETE FROM seats WHERE table_id = $1 AND player_id = ANY($2::text[])", table_id, list(players)
        )


async def _count_away(
    conn: asyncpg.Connection, table_id: str, dealt: list[str], absent: list[str], most: int
) -> list[str]:
    """D34: who was dealt in starts the count again; who was away counts one more;
    who reached ``most`` is stood up."""
    await conn.execute(
        "UPDATE seats SET away_hands = CASE WHEN player_id = ANY($2::text[]) THEN 0 ELSE away_hands + 1 END "
        "WHERE table_id = $1 AND (player_id = ANY($2::text[]) OR player_id = ANY($3::text[]))",
        table_id,
        dealt,
        absent,
    )
    rows = await conn.fetch(
        "DELETE FROM seats WHERE table_id = $1 AND away_hands >= $2 RETURNING player_id", table_id, most
    )
    return [r["player_id"] for r in rows]


async def _finish(conn: asyncpg.Connection, *, table_id: str, op: io.FinishOp) -> list[str] | None:
    """End a hand once: settle (D19) or release every hold (a void, D33), publish the
    transcript, move the table's head, stand up ``op.stand_up`` and the seats the
    operator asked to stand up as the hand ends.  Returns the players stood up, or
    None, changing nothing, if the hand had already ended (a retry after an unknown
    outcome)."""
    ended = await conn.fetchval(
        "UPDATE hands SET status = $2, transcript = $3::jsonb, ended_at = now(), deadline = NULL, "
        "void_reason = $4 WHERE id = $1 AND status IN ('seeding', 'playing') RETURNING id",
        op.hand_id,
        "ended" if op.settlement is not None else "void",
        op.transcript.decode(),  # its canonical JSON, as made (jsonb keeps no bytes)
        op.void_reason,
    )
    if ended is None:
        return None
    if op.settlement is not None:
        await ledger.settle(conn, op.hand_id, op.holds, op.settlement)
    elif op.holds:
        await ledger.release(conn, {p: a for p, a in op.holds.values()}, op.hand_id)
    await conn.execute("UPDATE tables SET head = $2 WHERE id = $1", table_id, op.head)
    rows = await conn.fetch(
        "DELETE FROM seats WHERE table_id = $1 AND (player_id = ANY($2::text[]) OR stand_after_hand) "
        "RETURNING player_id",
        table_id,
        list(op.stand_up),
    )
    return [str(r["player_id"]) for r in rows]


async def _void_unreadable(conn: asyncpg.Connection, *, table_id: str, op: io.VoidUnreadableOp) -> list[str] | None:
    """Void a hand whose stored records cannot be read (D33): release its holds and
    stand up the seats asked to stand up as it ended (D36's leave in the seed phases,
    the operator's), as :func:`_finish` does.  The players stood up, or None if the
    hand had already ended."""
    stored = op.stored
    done = await conn.fetchval(
        "UPDATE hands SET status = 'void', void_reason = $2, ended_at = now(), deadline = NULL "
        "WHERE id = $1 AND status IN ('seeding', 'playing') RETURNING id",
        stored.hand_id,
        op.reason[:500],
    )
    if done is None:
        return None
    if stored.players:
        await ledger.release(conn, {p: h for p, h in stored.players.values()}, stored.hand_id)
    rows = await conn.fetch("DELETE FROM seats WHERE table_id = $1 AND stand_after_hand RETURNING player_id", table_id)
    return [str(r["player_id"]) for r in rows]


async def _quarantine_after(conn: asyncpg.Connection, *, op: io.QuarantineOp) -> int:
    """Move the records from number ``op.keep`` on aside (they did not replay, D33), and
    store why the hand is to be voided in the same transaction: the void is the next
    write, and a process that dies before it leaves a hand whose records all replay;
    without the reason its reload would resume the hand from before the set-aside
    records (moves the players saw, and hold signed heads for, taken back) instead of
    voiding it."""
    hand_id = op.hand_id
    await conn.execute(
        "UPDATE hands SET void_reason = $2 WHERE id = $1 AND status IN ('seeding', 'playing')", hand_id, op.reason
    )
    moved = await conn.fetch(
        "DELETE FROM hand_records WHERE hand_id = $1 AND i >= $2 RETURNING i, record, sealed, h", hand_id, op.keep
    )
    for r in moved:
        await conn.execute(
            "INSERT INTO hand_records_quarantine (hand_id, i, record, sealed, h) VALUES ($1, $2, $3, $4, $5)",
            hand_id,
            r["i"],
            r["record"],
            r["sealed"],
            r["h"],
        )
    return len(moved)


# ----------------------------------------------------------------------------- loading
async def load_hand(conn: asyncpg.Connection, table_id: str) -> StoredHand | None:
    """The table's unfinished hand, whatever its phase, or None."""
    row = await conn.fetchrow(
        "SELECT id, hand_no, status, seed_nonce, seed_sealed, deadline, void_reason FROM hands "
        "WHERE table_id = $1 AND status IN ('seeding', 'playing') ORDER BY hand_no DESC LIMIT 1",
        table_id,
    )
    if row is None:
        return None
    hand_id = int(row["id"])
    players = {
        int(r["seat"]): (str(r["player_id"]), int(r["hold"]))
        for r in await conn.fetch("SELECT seat, player_id, hold FROM hand_players WHERE hand_id = $1", hand_id)
    }
    out = StoredHand(
        hand_id,
        int(row["hand_no"]),
        str(row["status"]),
        bytes(row["seed_nonce"]),
        bytes(row["seed_sealed"]),
        None if row["deadline"] is None else row["deadline"].timestamp(),
        players,
        void_reason=row["void_reason"],
    )
    for r in await conn.fetch(
        "SELECT seat, commit, commit_psig, seed, reveal_psig FROM hand_seeds WHERE hand_id = $1", hand_id
    ):
        if r["commit_psig"] is not None:
            out.commits[int(r["seat"])] = (bytes(r["commit"]), str(r["commit_psig"]))
        if r["seed"] is not None and r["reveal_psig"] is not None:
            out.seeds[int(r["seat"])] = (bytes(r["seed"]), str(r["reveal_psig"]))
    out.records = [
        (int(r["i"]), str(r["record"]), None if r["sealed"] is None else bytes(r["sealed"]), str(r["h"]))
        for r in await conn.fetch(
            "SELECT i, record::text AS record, sealed, h FROM hand_records WHERE hand_id = $1 ORDER BY i", hand_id
        )
    ]
    return out


async def last_record_t(conn: asyncpg.Connection, table_id: str) -> int:
    """The newest time (ms) the table signed in its latest hand, ended or not: the
    ``t`` of its newest record, or a stored commitment's or seed's ``arrived`` when
    that is later (records 1 and 2 are never dated before a move they hold arrived,
    §15.7); 0 when it has none (D37: the table's time never goes back, across hands
    too)."""
    row = await conn.fetchrow(
        "WITH h AS (SELECT id FROM hands WHERE table_id = $1 ORDER BY hand_no DESC LIMIT 1) "
        "SELECT (SELECT record->>'t' FROM hand_records WHERE hand_id = (SELECT id FROM h) ORDER BY i DESC LIMIT 1)"
        " AS t, (SELECT max(GREATEST(commit_arrived, reveal_arrived)) FROM hand_seeds"
        " WHERE hand_id = (SELECT id FROM h)) AS arrived",
        table_id,
    )
    assert row is not None
    # ``t`` read as text: a record whose ``t`` is not a whole number (a damaged row) must
    # not make every load of the table fail; its hand is voided as unreadable (D33) if it
    # is the one in progress, and the table's time is then the clock's
    t = row["t"]
    newest = int(t) if isinstance(t, str) and t.isascii() and t.isdigit() and len(t) <= 16 else 0
    return max(newest, row["arrived"] or 0)


async def ended_hand(conn: asyncpg.Connection, hand_id: int) -> asyncpg.Record | None:
    """A hand's row once it has ended or been voided (for telling players after a reload)."""
    return await conn.fetchrow(
        "SELECT id, hand_no, status, transcript::text AS transcript FROM hands "
        "WHERE id = $1 AND status IN ('ended', 'void')",
        hand_id,
    )
