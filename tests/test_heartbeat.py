"""A node's leases under load (service.cluster), each case found at 1,666 tables on
two workers, where leases ran out and the workers took each other's tables in turn:
the heartbeat renews on its own connection when every pooled connection is busy; a
renewal never waits for a write in flight (while a takeover does); and a table being
created is neither called lost nor started twice by its own node."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest
import pytest_asyncio

from service.cluster import RENEW_SQL, Cluster, Fenced, Lease, NodeSettings
from service.db import Pooled
from service.tablestore import Batched, group_commit
from tests.conftest import fresh_pool
from tests.test_writer import TABLES, tables_with_hands


@pytest_asyncio.fixture
async def db(pg_dsn: str) -> AsyncIterator[tuple[str, asyncpg.Pool]]:
    async with fresh_pool(pg_dsn, "hb", max_size=2) as (dsn, pool):
        yield dsn, pool


async def after_beats(cluster: Cluster, beats: int, seconds: float = 0.0, limit: float = 60.0) -> None:
    """Wait until ``cluster``'s heartbeat has completed ``beats`` more beats and at
    least ``seconds`` have passed (a lease runs out by the database's clock).  A window
    counted in beats holds on a machine kept busy by other work, where a fixed sleep
    saw fewer beats than it claimed and proved less; ``limit`` fails a heartbeat that
    stopped beating."""
    loop = asyncio.get_running_loop()
    start, until = cluster.beats, loop.time() + seconds
    end = loop.time() + limit
    while cluster.beats < start + beats or loop.time() < until:
        assert loop.time() < end, f"{cluster.beats - start} of {beats} heartbeats in {limit} s"
        await asyncio.sleep(0.02)


def node_n1(db: tuple[str, asyncpg.Pool], heartbeat_seconds: float) -> tuple[Cluster, list[Lease], list[str]]:
    """Node n1 with 1 s leases: the cluster, the leases it starts, the tables it stops."""
    dsn, pool = db
    started: list[Lease] = []
    lost: list[str] = []

    async def stop(table_id: str) -> None:
        lost.append(table_id)

    node = NodeSettings(node_id="n1", cluster=True, lease_seconds=1.0, heartbeat_seconds=heartbeat_seconds)
    return Cluster(pool, dsn, node, started.append, stop), started, lost


@pytest.mark.timeout(60)
async def test_leases_are_renewed_while_every_pooled_connection_is_busy(db: tuple[str, asyncpg.Pool]) -> None:
    dsn, pool = db
    await tables_with_hands(pool, "n1")
    cluster, started, lost = node_n1(db, heartbeat_seconds=0.2)
    await cluster.join()
    assert len(started) == TABLES and len(cluster.owned) == TABLES
    watcher = await asyncpg.connect(dsn)
    expiries = "SELECT table_id, owner, epoch, expires_at FROM table_leases ORDER BY 1"
    try:
        first = {r["table_id"]: r["expires_at"] for r in await watcher.fetch(expiries)}
        beat = asyncio.create_task(cluster.run())
        busy = [await pool.acquire() for _ in range(2)]  # the whole pool, for three leases' time
        try:
            await after_beats(cluster, 15, seconds=3.0)  # three leases' time, fifteen renewals
            rows = await watcher.fetch(expiries)
        finally:
            for conn in busy:
                await pool.release(conn)
            beat.cancel()
            await asyncio.gather(beat, return_exceptions=True)
            await cluster.leave()
    finally:
        await watcher.close()
    assert lost == []
    # renewed all along, by the database's clock: each lease runs out at least 1 s (five
    # beats) after it first did (whether it is still live when read depends on how late
    # a starved machine reads it: the lease is 1 s)
    assert {r["table_id"]: (r["owner"], r["epoch"]) for r in rows} == {
        lease.table_id: ("n1", lease.epoch) for lease in started
    }
    assert all((r["expires_at"] - first[r["table_id"]]).total_seconds() >= 1.0 for r in rows), (first, rows)


@pytest.mark.timeout(60)
async def test_a_table_being_created_is_neither_lost_nor_taken_again_by_its_own_node(
    db: tuple[str, asyncpg.Pool],
) -> None:
    """While the transaction that creates a table is open, the heartbeat cannot see
    its lease row: it must not call the lease lost (it did, and stopped the new table),
    nor take the committed row as a table of its own to start a second time."""
    dsn, pool = db
    cluster, started, lost = node_n1(db, heartbeat_seconds=0.1)
    await cluster.join()
    beat = asyncio.create_task(cluster.run())
    try:
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO tables (id, seats, point_value, commission_bps, turn_seconds, max_missed_turns, "
                "min_players) VALUES ('t_new', 4, 1, 0, 30, 3, 2)"
            )
            lease = await cluster.add_table(conn, "t_new")
            await after_beats(cluster, 8)  # eight beats with the row not yet visible to them
        cluster.adopt(lease)
        async with pool.acquire() as conn:
            first = await conn.fetchval("SELECT expires_at FROM table_leases")
        await after_beats(cluster, 20, seconds=2.0)  # two leases' time after the commit: renewed, never taken again
        async with pool.acquire() as conn:
            row = await conn.fetchrow("SELECT owner, epoch, expires_at FROM table_leases")
    finally:
        beat.cancel()
        await asyncio.gather(beat, return_exceptions=True)
        await cluster.leave()
    assert lost == [] and started == []
    assert (row["owner"], row["epoch"]) == ("n1", 1)
    # renewed by the database's clock (live when read or not: on a starved machine the
    # read itself may come after a 1 s lease has run out)
    assert (row["expires_at"] - first).total_seconds() >= 1.0, (first, row)


@pytest.mark.timeout(60)
async def test_a_renewal_never_waits_for_a_write_but_a_takeover_does(db: tuple[str, asyncpg.Pool]) -> None:
    """Fencing holds a key-share lock on the lease row until the write commits.  A
    renewal (expiry only) must not queue behind it — under load it did, for seconds,
    and every later write queued behind the renewal — while a takeover must wait for
    it (or skip the table), and the write, once it commits, was the old owner's last."""
    dsn, pool = db
    hands = await tables_with_hands(pool, "n1")
    table = sorted(hands)[0]
    lease = Lease(table, "n1", 1)
    writer = group_commit(Pooled(pool))
    other = await asyncpg.connect(dsn)
    checked = asyncio.Event()

    async def in_flight(conn: asyncpg.Connection) -> None:  # a write of the table, in its batch
        await conn.execute("UPDATE hands SET deadline = now() WHERE id = $1", hands[table])
        await other.execute("SET lock_timeout = '500ms'")
        renewed = await other.fetch(RENEW_SQL, "n1", [table], [1], 5.0)
        assert [r["table_id"] for r in renewed] == [table]
        with pytest.raises(asyncpg.LockNotAvailableError):  # a takeover waits for the write
            await other.execute("SELECT 1 FROM table_leases WHERE table_id = $1 FOR UPDATE NOWAIT", table)
        taken = await other.fetch("SELECT table_id FROM table_leases WHERE table_id = $1 FOR UPDATE SKIP LOCKED", table)
        assert taken == []  # ... or passes it by
        checked.set()

    try:
        await writer.write(Batched(lease, table, run=in_flight))
    finally:
        await other.close()
    assert checked.is_set()
    # the write committed; now a takeover goes through and the old owner is fenced
    async with pool.acquire() as conn:
        await conn.execute(
            "UPDATE table_leases SET owner = 'n2', epoch = 2 WHERE table_id IN "
            "(SELECT table_id FROM table_leases WHERE table_id = $1 FOR UPDATE)",
            table,
        )
    ran = []

    async def late(conn: asyncpg.Connection) -> None:
        ran.append(conn)

    with pytest.raises(Fenced):
        await writer.write(Batched(lease, table, run=late))
    assert ran == []  # a fenced write runs nothing
