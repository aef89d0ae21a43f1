"""The group commit (service/writer.py) and the lock order, on a real PostgreSQL:
many tables' records go in few statements, never more than ``max_in_flight`` at once
(so the writer cannot take the whole pool under load); a table whose lease was taken
over is refused (Fenced) while the rest of its batch commits; the renewal of many
leases (one heartbeat per node) never deadlocks with the writer's key-share locks,
and ledger transactions sharing accounts take their row locks in one order and never
deadlock."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator

import asyncpg
import pytest
import pytest_asyncio

from service import ledger
from service.cluster import RENEW_SQL, Fenced, Lease
from service.handstore import SealedRecord
from service.writer import RecordWriter, Write
from tests.conftest import fresh_pool

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


def record(i: int) -> SealedRecord:
    h = secrets.token_hex(32)
    return SealedRecord(i, h, json.dumps({"i": i, "h": h, "type": "action"}), b"sealed")


async def test_many_tables_share_few_statements_and_at_most_two_at_once(pool: asyncpg.Pool) -> None:
    hands = await tables_with_hands(pool, "n1")
    writer = RecordWriter(pool, window=0.002, max_in_flight=2)
    most = 0
    done = asyncio.Event()

    async def watch() -> None:
        nonlocal most
        while not done.is_set():
            most = max(most, writer._in_flight)
            await asyncio.sleep(0)

    async def play(table: str, hand_id: int) -> None:
        for i in range(6):
            await writer.write(Write(Lease(table, "n1", 1), table, hand_id, [record(i)], None, None))

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
    writer = RecordWriter(pool, window=0.05)  # a wide window: one batch
    results = await asyncio.gather(
        *(writer.write(Write(Lease(t, "n1", 1), t, h, [record(0)], None, None)) for t, h in hands.items()),
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
    writer = RecordWriter(pool, window=0.001, max_in_flight=4)
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
            await writer.write(Write(Lease(table, owner[table], 1), table, hand_id, [record(i)], None, None))

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
