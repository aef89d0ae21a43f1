"""The group commit (service/writer.py, with service.tablestore's batch) and the lock
order, on a real PostgreSQL: many tables' records go in few batches, never more than
``max_in_flight`` at once (so the writer cannot take the whole pool under load); a
table whose lease was taken over is refused (Fenced) while the rest of its batch
commits; the renewal of many leases (one heartbeat per node) never deadlocks with the
writer's key-share locks, and ledger transactions sharing accounts take their row
locks in one order and never deadlock.  A batch mixes every kind of table write: an
op refused by rule fails alone (its savepoint), a fenced one runs nothing, and when
the batch's transaction fails every write in it fails and nothing is stored."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import pytest_asyncio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from service import ledger, tablestore
from service.cluster import RENEW_SQL, Fenced, Lease
from service.db import Pooled
from service.handstore import SealedRecord, StoreConflict
from service.keys import ServerKeys
from service.tablecore import io
from service.tablecore.errors import ClientError
from service.tablestore import Batched, TableStore, commit_batch, group_commit, outcome
from service.writer import GroupCommit
from tests.conftest import fresh_pool
from verifier.settle import Settlement

TABLES = 40


@pytest_asyncio.fixture
async def pool(pg_dsn: str) -> AsyncIterator[asyncpg.Pool]:
    async with fresh_pool(pg_dsn, "w") as (_, p):
        yield p


async def tables_with_hands(pool: asyncpg.Pool, owner: str) -> dict[str, int]:
    """TABLES tables, each with a hand in play and a lease held by ``owner`` (epoch 1)."""
    out: dict[str, int] = {}
    async with pool.acquire() as conn:
        for n in range(TABLES):
            t = f"t_w{n:03d}"
            await conn.execute(
                "INSERT INTO tables (id, seats, point_value, commission_bps, turn_seconds, max_missed_turns, "
                "min_players) VALUES ($1, 4, 1, 0, 30, 3, 2)",
                t,
            )
            await conn.execute(
                "INSERT INTO table_leases (table_id, owner, epoch, expires_at) VALUES ($1, $2, 1, now() + "
                "interval '1 hour') ON CONFLICT (table_id) DO UPDATE SET owner = $2, epoch = 1, "
                "expires_at = now() + interval '1 hour'",
                t,
                owner,
            )
            out[t] = await conn.fetchval(
                "INSERT INTO hands (table_id, hand_no, status, seed_nonce, seed_sealed, commit_s) "
                "VALUES ($1, 1, 'playing', '\\x00', '\\x00', 'c') RETURNING id",
                t,
            )
    return out


def writer_of(
    pool: asyncpg.Pool, window: float = 0.002, max_in_flight: int = 2, *, eager: bool = False
) -> GroupCommit[Batched]:
    """A group commit of one lane: records and ops share its batches (commit_batch
    takes any mix; the server's, tablestore.group_commit, batches them apart).  Not
    eager unless asked: these tests gather their writes into batches from the first,
    where the server's sends a write that finds the lane idle at once."""
    return GroupCommit(
        functools.partial(commit_batch, Pooled(pool)), window=window, max_in_flight=max_in_flight, eager=eager
    )


def record(i: int) -> SealedRecord:
    h = secrets.token_hex(32)
    return SealedRecord(i, h, json.dumps({"i": i, "h": h, "type": "action"}), b"sealed")


async def test_many_tables_share_few_statements_and_at_most_two_at_once(pool: asyncpg.Pool) -> None:
    hands = await tables_with_hands(pool, "n1")
    writer = writer_of(pool, window=0.002, max_in_flight=2)
    most = 0
    done = asyncio.Event()

    async def watch() -> None:
        nonlocal most
        while not done.is_set():
            most = max(most, writer._in_flight)
            await asyncio.sleep(0)

    async def play(table: str, hand_id: int) -> None:
        for i in range(6):
            await writer.write(Batched(Lease(table, "n1", 1), table, hand_id, (record(i),)))

    watcher = asyncio.create_task(watch())
    await asyncio.gather(*(play(t, h) for t, h in hands.items()))
    done.set()
    await watcher
    assert writer.writes == TABLES * 6
    assert most <= 2 and most >= 1
    assert writer.statements < writer.writes / 4, (writer.statements, writer.writes)  # grouped
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT COUNT(*) FROM hand_records") == TABLES * 6


async def test_a_taken_over_table_is_fenced_and_the_rest_of_its_batch_commits(pool: asyncpg.Pool) -> None:

    hands = await tables_with_hands(pool, "n1")
    lost = sorted(hands)[7]
    async with pool.acquire() as conn:  # another node took this one (a new epoch)
        await conn.execute("UPDATE table_leases SET owner = 'n2', epoch = 2 WHERE table_id = $1", lost)
    writer = writer_of(pool, window=0.05)  # a wide window: one batch
    results = await asyncio.gather(
        *(writer.write(Batched(Lease(t, "n1", 1), t, h, (record(0),))) for t, h in hands.items()),
        return_exceptions=True,
    )
    outcome = dict(zip(hands, results, strict=True))
    assert isinstance(outcome.pop(lost), Fenced)
    assert all(r is None for r in outcome.values())
    async with pool.acquire() as conn:
        stored = {
            r["table_id"] for r in await conn.fetch("SELECT table_id FROM hand_records JOIN hands ON id = hand_id")
        }
    assert stored == set(hands) - {lost}


@pytest.mark.timeout(120)
async def test_renewing_leases_beside_the_writer_never_deadlocks(pool: asyncpg.Pool) -> None:
    """Three nodes each renew their own leases (one heartbeat per node, as in the
    server) while the writer key-share-locks the leases of its batches, which mix the
    nodes' tables: in a few hundred rounds of both at once PostgreSQL never finds a
    deadlock (it did, before, under load: DeadlockDetectedError), and every record is
    stored."""

    hands = await tables_with_hands(pool, "n1")
    tables = sorted(hands)
    owner = {t: f"n{k % 3 + 1}" for k, t in enumerate(tables)}
    async with pool.acquire() as conn:
        await conn.execute(
            "UPDATE table_leases l SET owner = o.owner FROM unnest($1::text[], $2::text[]) AS o(t, owner) "
            "WHERE l.table_id = o.t",
            list(owner),
            list(owner.values()),
        )
    writer = writer_of(pool, window=0.001, max_in_flight=4)
    stop = asyncio.Event()
    renewals = 0

    async def renew(node: str) -> None:
        nonlocal renewals
        mine = [t for t in tables if owner[t] == node]
        n = 0
        while not stop.is_set():
            order = mine[::-1] if n % 2 else mine  # whatever order the node lists them in
            async with pool.acquire() as conn:
                rows = await conn.fetch(RENEW_SQL, node, order, [1] * len(order), 3600.0)
            assert len(rows) == len(mine)
            n += 1
            renewals += 1

    async def play(table: str, hand_id: int) -> None:
        for i in range(25):
            await writer.write(Batched(Lease(table, owner[table], 1), table, hand_id, (record(i),)))

    renewers = [asyncio.create_task(renew(node)) for node in ("n1", "n2", "n3")]
    try:
        await asyncio.gather(*(play(t, h) for t, h in hands.items()))
    finally:
        stop.set()
        await asyncio.gather(*renewers)
    assert renewals > 10
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT COUNT(*) FROM hand_records") == TABLES * 25


@pytest.mark.timeout(120)
async def test_ledger_transactions_that_share_accounts_never_deadlock(pool: asyncpg.Pool) -> None:
    """Transfers between the same players in both directions at once (a player at two
    tables, the house in every settlement): each locks its accounts in id order first."""
    players = [f"p_lock{n}" for n in range(4)]
    async with pool.acquire() as conn:
        for p in players:
            await conn.execute("INSERT INTO players (id, name, token_hash) VALUES ($1, $1, $2)", p, p.encode())
            await ledger.open_accounts(conn, p)
            await ledger.deposit(conn, p, 1_000_000)

    async def transfers(k: int) -> None:
        a, b = players[k % 4], players[(k + 1) % 4]
        if k % 2:
            a, b = b, a
        for _ in range(60):
            async with pool.acquire() as conn, conn.transaction():
                await ledger._post(
                    conn,
                    "hold",
                    {ledger.available(a): -3, ledger.available(b): 2, ledger.EXTERNAL: 1},
                )

    await asyncio.gather(*(transfers(k) for k in range(8)))
    async with pool.acquire() as conn:
        total = await conn.fetchval("SELECT SUM(balance) FROM accounts")
    assert total == 0


# ----------------------------------------------------------------------------- batches of ops
@dataclass
class Tables:
    """Tables A (a hand in play), B (a player who would sit), C (a hand whose two
    players hold 130 HT each, ready to settle) and D (its next hand to deal), each
    leased by n1 at epoch 1, and a TableStore for each on one group commit (their
    writes, started together, go in one batch)."""

    writer: GroupCommit[Batched]
    a: TableStore
    b: TableStore
    c: TableStore
    d: TableStore
    hand_a: int
    hand_c: int
    sitter: str
    holds: dict[int, tuple[str, int]]

    def records_a(self) -> io.RecordsOp:
        h = secrets.token_hex(32)
        return io.RecordsOp(1, self.hand_a, ({"i": 0, "h": h, "type": "phase"},), None)

    def sit_b(self) -> io.SitOp:
        return io.SitOp(self.sitter, 0, 130)

    def deal_d(self) -> io.StartOp:
        """A deal at table D (its second hand) that p_d and p_d2 can cover, refused by
        a rule once its hand row and both holds are written (``begin`` raises)."""

        def begin(started: io.Started) -> tuple[Any, int]:
            assert started.players == {0: "p_d", 1: "p_d2"}
            raise ClientError("refused_late", "refused after the hand row and the holds were written")

        return io.StartOp(2, ((0, "p_d"), (1, "p_d2")), (), 130, 2, 3, begin)

    def deal_d_short(self, stand_unable: tuple[str, ...] = ()) -> io.StartOp:
        """A deal at table D that p_d can cover and p_b (the sitter) cannot, with
        min_players 2: no hand."""

        def begin(started: io.Started) -> tuple[Any, int]:
            raise AssertionError("never dealt: fewer than min_players can be")

        return io.StartOp(2, ((0, "p_d"), (1, self.sitter)), (), 130, 2, 3, begin, stand_unable=stand_unable)

    def finish_c(self) -> io.FinishOp:
        settlement = Settlement(0, 1, 500, {0: 0, 1: 40}, 40, 2, {0: 38, 1: -40})
        return io.FinishOp(self.hand_c, b'{"head":"%s"}' % (b"c" * 64), "c" * 64, self.holds, settlement, None, ())


async def player(conn: asyncpg.Connection, pid: str, deposit: int) -> None:
    await conn.execute(
        "INSERT INTO players (id, name, token_hash, public_key) VALUES ($1, $1, $2, $3)",
        pid,
        secrets.token_bytes(32),
        Ed25519PrivateKey.generate().public_key().public_bytes_raw(),  # a strict key: it can be dealt in
    )
    await ledger.open_accounts(conn, pid)
    if deposit:
        await ledger.deposit(conn, pid, deposit)


async def four_tables(pool: asyncpg.Pool, keys: ServerKeys, sitter_deposit: int) -> Tables:
    hands = await tables_with_hands(pool, "n1")
    a, b, c, d = sorted(hands)[:4]
    holds = {0: ("p_c0", 130), 1: ("p_c1", 130)}
    async with pool.acquire() as conn:
        await player(conn, "p_b", sitter_deposit)
        await player(conn, "p_d", 1000)
        await player(conn, "p_d2", 1000)
        for pid, amount in holds.values():
            await player(conn, pid, 1000)
            async with conn.transaction():
                await ledger.hold(conn, pid, amount, hands[c])
        await conn.executemany(
            "INSERT INTO hand_players (hand_id, seat, player_id, hold) VALUES ($1, $2, $3, $4)",
            [(hands[c], seat, pid, amount) for seat, (pid, amount) in holds.items()],
        )
    writer = writer_of(pool, window=0.2)
    a_, b_, c_, d_ = (TableStore(t, pool, keys, Lease(t, "n1", 1), writer) for t in (a, b, c, d))
    return Tables(writer, a_, b_, c_, d_, hands[a], hands[c], "p_b", holds)


async def stored(pool: asyncpg.Pool, tables: Tables) -> dict[str, Any]:
    async with pool.acquire() as conn:
        return {
            "a_records": await conn.fetchval("SELECT count(*) FROM hand_records WHERE hand_id = $1", tables.hand_a),
            "b_seats": await conn.fetchval("SELECT count(*) FROM seats WHERE table_id = $1", tables.b.table_id),
            "c_status": await conn.fetchval("SELECT status FROM hands WHERE id = $1", tables.hand_c),
            "c_settled": await conn.fetchval("SELECT count(*) FROM settlements WHERE hand_id = $1", tables.hand_c),
            "c0": await ledger.balance(conn, "p_c0"),
            "c1": await ledger.balance(conn, "p_c1"),
            "d": await ledger.balance(conn, "p_d"),
            "d2": await ledger.balance(conn, "p_d2"),
            "d_hands": await conn.fetchval("SELECT count(*) FROM hands WHERE table_id = $1", tables.d.table_id),
            "ledger": await ledger.summary(conn),
        }


async def test_an_op_refused_by_rule_fails_alone_and_the_rest_of_its_batch_commits(
    pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """One batch: A's records, B's sit refused for want of balance, C's settlement,
    and D's deal refused by a rule after it had written its hand row and the holds of
    p_d and p_d2.  A's records and C's settlement commit; B and D are refused and leave
    nothing: no seat, no hand row, p_d's and p_d2's money untouched — each op's
    savepoint rolled back only its own writes (without it D's hand and holds would
    commit with the batch).  Without the group commit as the only write path these would be four
    transactions (statements == 4)."""
    tables = await four_tables(pool, ServerKeys.load(tmp_path), sitter_deposit=100)
    results: Any = await asyncio.gather(
        tables.a.run(tables.records_a()),
        tables.b.run(tables.sit_b()),
        tables.c.run(tables.finish_c()),
        tables.d.run(tables.deal_d()),
        return_exceptions=True,
    )
    ra, rb, rc, rd = results
    assert (tables.writer.statements, tables.writer.writes) == (1, 4)  # one batch, one transaction
    assert ra is None and rc == []
    assert isinstance(rb, ClientError) and rb.code == "insufficient_balance"
    assert isinstance(rd, ClientError) and rd.code == "refused_late"
    assert outcome(1, rb).result is io.Result.REFUSED and outcome(2, rd).result is io.Result.REFUSED
    assert outcome(3, None, rc).result is io.Result.COMMITTED
    got = await stored(pool, tables)
    assert (got["a_records"], got["b_seats"], got["c_status"], got["c_settled"]) == (1, 0, "ended", 1)
    assert got["c0"] == ledger.Balance(1000 + 38, 0) and got["c1"] == ledger.Balance(1000 - 40, 0)
    assert got["ledger"]["ok"] and got["ledger"]["house_commission"] == 2
    assert got["d_hands"] == 1  # only its first hand (tables_with_hands)
    assert got["d"] == got["d2"] == ledger.Balance(1000, 0)


async def test_a_deal_too_few_can_cover_stands_up_who_cannot_and_deals_nothing(
    pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """D34 (issue found by an audit: a seat that could not cover its hold was never
    dealt in and never stood up, and at a table of two no hand was dealt again): when
    fewer than min_players of the connected seats can cover the hold, the deal writes
    no hand and answers NotDealt with who cannot; it stands up those of them the core
    names (unable for away_ms) — in the batch's transaction, with nothing else written."""
    tables = await four_tables(pool, ServerKeys.load(tmp_path), sitter_deposit=100)
    d = tables.d.table_id
    async with pool.acquire() as conn:
        await conn.execute(
            "INSERT INTO seats (table_id, seat, player_id) VALUES ($1, 0, 'p_d'), ($1, 1, $2)", d, tables.sitter
        )

    async def seated() -> list[tuple[int, str]]:
        async with pool.acquire() as conn:
            rows = await conn.fetch("SELECT seat, player_id FROM seats WHERE table_id = $1 ORDER BY seat", d)
        return [(r["seat"], r["player_id"]) for r in rows]

    assert await tables.d.run(tables.deal_d_short()) == io.NotDealt((tables.sitter,), ())
    assert await seated() == [(0, "p_d"), (1, tables.sitter)]  # not yet: it has had no time to cover
    statements = tables.writer.statements
    results: Any = await asyncio.gather(
        tables.a.run(tables.records_a()),
        tables.d.run(tables.deal_d_short(stand_unable=(tables.sitter,))),
        return_exceptions=True,
    )
    assert (tables.writer.statements - statements, tables.writer.writes) == (1, 3)  # one batch
    assert results == [None, io.NotDealt((tables.sitter,), (tables.sitter,))]
    got = await stored(pool, tables)
    assert got["a_records"] == 1 and got["d_hands"] == 1  # A's records committed; no hand at D
    assert got["d"] == ledger.Balance(1000, 0) and got["ledger"]["ok"]
    assert await seated() == [(0, "p_d")]


async def test_a_fenced_op_runs_nothing_and_the_rest_of_its_batch_commits(pool: asyncpg.Pool, tmp_path: Path) -> None:
    """B's lease was taken over (epoch 2 by n2): B's sit, which it could afford, is
    Fenced and stores nothing, while A's records and C's settlement in the same batch
    commit."""
    tables = await four_tables(pool, ServerKeys.load(tmp_path), sitter_deposit=1000)
    async with pool.acquire() as conn:
        await conn.execute("UPDATE table_leases SET owner = 'n2', epoch = 2 WHERE table_id = $1", tables.b.table_id)
    results: Any = await asyncio.gather(
        tables.a.run(tables.records_a()),
        tables.b.run(tables.sit_b()),
        tables.c.run(tables.finish_c()),
        return_exceptions=True,
    )
    ra, rb, rc = results
    assert (tables.writer.statements, tables.writer.writes) == (1, 3)
    assert ra is None and rc == [] and isinstance(rb, Fenced)
    assert outcome(1, rb).result is io.Result.FENCED
    got = await stored(pool, tables)
    assert (got["a_records"], got["b_seats"], got["c_status"], got["c_settled"]) == (1, 0, "ended", 1)
    assert got["ledger"]["ok"]


async def test_a_batch_whose_statement_fails_fails_every_write_and_stores_nothing(
    pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """A hand's records for a hand that does not exist make the batch's own statement
    fail (a foreign key, outside any savepoint): every write of the batch gets that
    error — an unknown outcome, after which each table reloads — and nothing of A, B
    or C is stored."""
    tables = await four_tables(pool, ServerKeys.load(tmp_path), sitter_deposit=1000)
    ghost = TableStore(tables.a.table_id, pool, tables.a.keys, None, tables.writer)
    bad = io.RecordsOp(1, 10**9, ({"i": 0, "h": "0" * 64, "type": "phase"},), None)
    results = await asyncio.gather(
        tables.a.run(tables.records_a()),
        tables.b.run(tables.sit_b()),
        tables.c.run(tables.finish_c()),
        ghost.run(bad),
        return_exceptions=True,
    )
    assert all(isinstance(r, asyncpg.ForeignKeyViolationError) for r in results), results
    assert {outcome(1, r).result for r in results} == {io.Result.AMBIGUOUS}
    got = await stored(pool, tables)
    assert (got["a_records"], got["b_seats"], got["c_status"], got["c_settled"]) == (0, 0, "playing", 0)
    assert got["c0"] == ledger.Balance(1000 - 130, 130) and got["ledger"]["ok"]


async def test_a_batch_whose_connection_is_terminated_fails_every_write_and_stores_nothing(
    pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """The batch's backend is terminated (pg_terminate_backend, from another
    connection) while an op of the batch runs, after A's records and B's sit went
    in: the op's savepoint cannot even be rolled back, so the whole batch fails —
    every write gets the error, and nothing is stored (the transaction never
    committed)."""
    tables = await four_tables(pool, ServerKeys.load(tmp_path), sitter_deposit=1000)

    async def killed(conn: asyncpg.Connection) -> None:
        await killer.execute("SELECT pg_terminate_backend($1)", conn.get_server_pid())
        await conn.fetchval("SELECT 1")  # the connection is gone

    async with pool.acquire() as killer:
        results = await asyncio.gather(
            tables.a.run(tables.records_a()),
            tables.b.run(tables.sit_b()),
            tables.c.run(tables.finish_c()),
            tables.writer.write(Batched(None, "t_w_kill", run=killed)),
            return_exceptions=True,
        )
    assert all(isinstance(r, Exception) for r in results), results
    assert len({type(r) for r in results}) == 1 and all(r is results[0] for r in results)  # the batch's error
    assert {outcome(1, r).result for r in results} == {io.Result.AMBIGUOUS}
    got = await stored(pool, tables)
    assert (got["a_records"], got["b_seats"], got["c_status"], got["c_settled"]) == (0, 0, "playing", 0)
    assert got["ledger"]["ok"]


@pytest.mark.timeout(120)
async def test_two_batches_moving_the_same_accounts_in_opposite_orders_never_deadlock(
    pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """Two group commits (two processes on one database) each run a batch of two voids
    whose holds share players in opposite orders — batch 1 releases p_x's holds then
    p_y's, batch 2 p_y's then p_x's — with a pause between them, so that each would
    hold the first pair while it asks for the second.  Every batch locks all the
    accounts its ops may move, in id order, before any op runs (ledger.lock), so the
    second waits for the first and both commit; without that lock PostgreSQL finds a
    deadlock and one void fails (DeadlockDetectedError)."""
    keys = ServerKeys.load(tmp_path)
    hands = await tables_with_hands(pool, "n1")
    t1, t2, t3, t4 = sorted(hands)[:4]
    pairs = {t1: ("p_x0", "p_x1"), t2: ("p_y0", "p_y1"), t3: ("p_y0", "p_y1"), t4: ("p_x0", "p_x1")}
    async with pool.acquire() as conn:
        for pid in ("p_x0", "p_x1", "p_y0", "p_y1"):
            await player(conn, pid, 1000)
        for t, pair in pairs.items():
            for seat, pid in enumerate(pair):
                async with conn.transaction():
                    await ledger.hold(conn, pid, 130, hands[t])
                await conn.execute(
                    "INSERT INTO hand_players (hand_id, seat, player_id, hold) VALUES ($1, $2, $3, 130)",
                    hands[t],
                    seat,
                    pid,
                )
    arrived = [asyncio.Event(), asyncio.Event()]

    def void(t: str) -> io.FinishOp:
        holds = {seat: (pid, 130) for seat, pid in enumerate(pairs[t])}
        return io.FinishOp(hands[t], b'{"head":"%s"}' % (b"v" * 64), "v" * 64, holds, None, "a test's void", ())

    def pause(k: int) -> Batched:
        async def wait_for_the_other(conn: asyncpg.Connection) -> None:
            arrived[k].set()  # this batch holds its first pair now
            with contextlib.suppress(TimeoutError):  # the other may be waiting for this one's locks
                await asyncio.wait_for(arrived[1 - k].wait(), 2.0)

        return Batched(None, f"pause{k}", run=wait_for_the_other)

    async def batch(k: int, first: str, second: str) -> list[Any]:
        writer = writer_of(pool, window=0.05)
        a, b = (TableStore(t, pool, keys, Lease(t, "n1", 1), writer) for t in (first, second))
        results: Any = await asyncio.gather(
            a.run(void(first)), writer.write(pause(k)), b.run(void(second)), return_exceptions=True
        )
        assert (writer.statements, writer.writes) == (1, 3)
        return list(results)

    one, two = await asyncio.gather(batch(0, t1, t2), batch(1, t3, t4))
    assert one == [[], None, []] and two == [[], None, []], (one, two)
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM hands WHERE status = 'void'") == 4
        summary = await ledger.summary(conn)
    assert summary["ok"] and summary["players_held"] == 0, summary


async def test_seats_commitments_and_seeds_in_the_batchs_statement(pool: asyncpg.Pool, tmp_path: Path) -> None:
    """A seat's commitment or seed is stored by the batch's one statement: written
    once (the same commitment again is adopted, another is a StoreConflict), a seed
    only over its commitment, the same seed again changing nothing; a fenced table's
    commitment stores nothing.  All in one batch, each write answered alone."""
    keys = ServerKeys.load(tmp_path)
    hands = await tables_with_hands(pool, "n1")
    t1, t2, t3, t4 = sorted(hands)[:4]
    async with pool.acquire() as conn:
        await conn.execute(
            "INSERT INTO hand_seeds (hand_id, seat, commit, commit_psig) VALUES ($1, 0, $2, 'ps'), ($3, 0, $2, 'ps')",
            hands[t2],
            b"c" * 32,
            hands[t3],
        )
        await conn.execute("UPDATE table_leases SET owner = 'n2', epoch = 2 WHERE table_id = $1", t4)
    writer = writer_of(pool)
    store = {t: TableStore(t, pool, keys, Lease(t, "n1", 1), writer) for t in (t1, t2, t3, t4)}
    results: Any = await asyncio.gather(
        store[t1].run(io.SeedOp("commit", hands[t1], 0, b"a" * 32, "p1")),  # new
        store[t2].run(io.SeedOp("commit", hands[t2], 0, b"c" * 32, "ps")),  # the same again
        store[t3].run(io.SeedOp("commit", hands[t3], 0, b"d" * 32, "p3")),  # another
        store[t4].run(io.SeedOp("commit", hands[t4], 0, b"e" * 32, "p4")),  # fenced
        return_exceptions=True,
    )
    assert results[:2] == [None, None] and isinstance(results[2], StoreConflict) and isinstance(results[3], Fenced)
    assert (writer.statements, writer.writes) == (1, 4)
    results = await asyncio.gather(
        store[t1].run(io.SeedOp("reveal", hands[t1], 0, b"s" * 32, "r1")),  # over its commitment
        store[t2].run(io.SeedOp("reveal", hands[t2], 1, b"s" * 32, "r2")),  # no commitment
        return_exceptions=True,
    )
    assert results[0] is None and isinstance(results[1], StoreConflict)
    again = await store[t1].run(io.SeedOp("reveal", hands[t1], 0, b"s" * 32, "r1"))
    other: Any = await asyncio.gather(
        store[t1].run(io.SeedOp("reveal", hands[t1], 0, b"x" * 32, "r1")), return_exceptions=True
    )
    assert again is None and isinstance(other[0], StoreConflict)
    async with pool.acquire() as conn:
        rows = {
            (r["hand_id"], r["seat"]): (bytes(r["commit"]), r["seed"] and bytes(r["seed"]))
            for r in await conn.fetch("SELECT hand_id, seat, commit, seed FROM hand_seeds")
        }
    assert rows == {
        (hands[t1], 0): (b"a" * 32, b"s" * 32),
        (hands[t2], 0): (b"c" * 32, None),
        (hands[t3], 0): (b"c" * 32, None),
    }


async def test_a_load_goes_on_from_a_stored_seeds_arrival(pool: asyncpg.Pool, tmp_path: Path) -> None:
    """§15.7, D37: a load goes on from the newest time the table signed in its latest
    hand — a stored commitment's or seed's ``arrived`` when it is later than the newest
    record — so a table loaded in the seed phases on a clock behind the one that
    acknowledged them does not date record 1 or 2 before a move it holds.  The same
    move again moves its arrival on; another commitment, refused, does not; nor does a
    fenced write."""
    keys = ServerKeys.load(tmp_path)
    hands = await tables_with_hands(pool, "n1")
    t1, t2 = sorted(hands)[:2]
    writer = writer_of(pool)
    store = {t: TableStore(t, pool, keys, Lease(t, "n1", 1), writer) for t in (t1, t2)}

    async def last(table: str) -> int:
        async with pool.acquire() as conn:
            return await tablestore.last_record_t(conn, table)

    base, other = await last(t1), await last(t2)
    a = base + 9_000
    await store[t1].run(io.SeedOp("commit", hands[t1], 0, b"a" * 32, "p1", a))
    assert await last(t1) == a
    await store[t1].run(io.SeedOp("commit", hands[t1], 0, b"a" * 32, "p1", a + 500))  # the same again, later
    assert await last(t1) == a + 500
    await store[t1].run(io.SeedOp("commit", hands[t1], 0, b"a" * 32, "p1", a + 100))  # an older ack: kept the latest
    conflict: Any = await asyncio.gather(
        store[t1].run(io.SeedOp("commit", hands[t1], 0, b"b" * 32, "p9", a + 90_000)), return_exceptions=True
    )
    assert isinstance(conflict[0], StoreConflict)
    assert await last(t1) == a + 500
    await store[t1].run(io.SeedOp("reveal", hands[t1], 0, b"s" * 32, "r1", a + 3_000))
    assert await last(t1) == a + 3_000
    assert await last(t2) == other  # another table's hand: untouched
    async with pool.acquire() as conn:
        await conn.execute("UPDATE table_leases SET owner = 'n2', epoch = 2 WHERE table_id = $1", t2)
    fenced: Any = await asyncio.gather(
        store[t2].run(io.SeedOp("commit", hands[t2], 0, b"e" * 32, "p4", other + 60_000)), return_exceptions=True
    )
    assert isinstance(fenced[0], Fenced) and await last(t2) == other


@pytest.mark.timeout(120)
async def test_a_slow_op_never_holds_up_the_records_of_other_tables(pool: asyncpg.Pool) -> None:
    """The server's group commit batches records apart from ops (tablestore.lane): an
    op that has not finished (here one that waits; in the server a deal holding eight
    seats) does not hold up the records of another table that arrived with it — they
    commit while it runs.  In one lane they would share its batch and wait for it."""
    hands = await tables_with_hands(pool, "n1")
    t1, t2 = sorted(hands)[:2]
    writer = group_commit(Pooled(pool))
    release = asyncio.Event()

    async def slow(conn: asyncpg.Connection) -> None:
        await release.wait()

    op = asyncio.create_task(writer.write(Batched(Lease(t1, "n1", 1), t1, run=slow)))
    rec = asyncio.create_task(writer.write(Batched(Lease(t2, "n1", 1), t2, hands[t2], (record(0),))))
    try:
        await asyncio.wait({rec}, timeout=60)  # a bound only a hang exceeds
        assert rec.done() and rec.result() is None
        assert not op.done()
    finally:
        release.set()
        await asyncio.gather(op, rec, return_exceptions=True)
    assert op.result() is None


@pytest.mark.timeout(120)
async def test_a_write_that_finds_its_lane_idle_goes_at_once(pool: asyncpg.Pool) -> None:
    """The server's group commit is eager: a write with no batch in flight and none
    gathering does not wait out the window (here an hour, so a write that waited for
    it could only time out), and writes that come while it is stored gather into one
    batch, flushed as it ends (one batch in flight at most here: no timer decides)."""
    hands = await tables_with_hands(pool, "n1")
    tables = sorted(hands)[:5]
    writer = writer_of(pool, window=3600, max_in_flight=1, eager=True)

    first = asyncio.create_task(
        writer.write(Batched(Lease(tables[0], "n1", 1), tables[0], hands[tables[0]], (record(0),)))
    )
    await asyncio.sleep(0)  # it is in flight
    assert writer._in_flight == 1
    rest = [
        asyncio.create_task(writer.write(Batched(Lease(t, "n1", 1), t, hands[t], (record(0),)))) for t in tables[1:]
    ]
    done, _ = await asyncio.wait({first, *rest}, timeout=60)  # a bound only the window's wait exceeds
    assert len(done) == 5 and all(d.result() is None for d in done)
    assert (writer.statements, writer.writes) == (2, 5)  # alone, then the four that came meanwhile
    # idle again: the next write goes at once too
    await asyncio.wait_for(
        writer.write(Batched(Lease(tables[0], "n1", 1), tables[0], hands[tables[0]], (record(1),))), 60
    )
    assert (writer.statements, writer.writes) == (3, 6)


@pytest.mark.timeout(120)
async def test_the_servers_group_commit_is_eager_and_not_eager_waits_for_the_window(pool: asyncpg.Pool) -> None:
    """tablestore.group_commit, what the server runs, is eager; a writer that is not
    holds even a lone write for its window (a wide one here, so that the write cannot
    be done when the loop has turned a few times)."""
    assert group_commit(Pooled(pool)).eager
    hands = await tables_with_hands(pool, "n1")
    t = sorted(hands)[0]
    lazy = writer_of(pool, window=3600)
    w = asyncio.create_task(lazy.write(Batched(Lease(t, "n1", 1), t, hands[t], (record(0),))))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not w.done() and lazy._in_flight == 0  # still gathering
    lane = next(iter(lazy._lanes.values()))
    lane.flush_now()  # what the window's end would do
    assert await asyncio.wait_for(w, 60) is None
