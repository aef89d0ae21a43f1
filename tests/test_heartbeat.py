"""A node's heartbeat does not wait for the pool (service.cluster): when every pooled
connection is busy — a thousand tables loading, a burst of writes — the node still
renews its leases on its own connection and keeps its tables.  (At 1,666 tables on
two workers the renewal waited for the pool, timed out, the other worker took the
tables, and the two took each other's tables in turn for ten minutes.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest
import pytest_asyncio

from service.cluster import Cluster, Lease, NodeSettings
from service.db import create_pool, migrate
from tests.conftest import fresh_database
from tests.test_writer import TABLES, tables_with_hands


@pytest_asyncio.fixture
async def db(pg_dsn: str) -> AsyncIterator[tuple[str, asyncpg.Pool]]:
    async with fresh_database(pg_dsn, "hb") as dsn:
        conn = await asyncpg.connect(dsn)
        try:
            await migrate(conn)
        finally:
            await conn.close()
        pool = await create_pool(dsn, max_size=2)
        try:
            yield dsn, pool
        finally:
            await pool.close()


@pytest.mark.timeout(60)
async def test_leases_are_renewed_while_every_pooled_connection_is_busy(db: tuple[str, asyncpg.Pool]) -> None:
    dsn, pool = db
    await tables_with_hands(pool, "n1")
    started: list[Lease] = []
    lost: list[str] = []

    async def stop(table_id: str) -> None:
        lost.append(table_id)

    node = NodeSettings(node_id="n1", cluster=True, lease_seconds=1.0, heartbeat_seconds=0.2)
    cluster = Cluster(pool, dsn, node, started.append, stop)
    await cluster.join()
    assert len(started) == TABLES and len(cluster.owned) == TABLES
    beat = asyncio.create_task(cluster.run())
    busy = [await pool.acquire() for _ in range(2)]  # the whole pool, for three leases' time
    try:
        await asyncio.sleep(3.0)
        watcher = await asyncpg.connect(dsn)
        try:
            rows = await watcher.fetch(
                "SELECT table_id, owner, epoch, expires_at > now() AS live FROM table_leases ORDER BY 1"
            )
        finally:
            await watcher.close()
    finally:
        for conn in busy:
            await pool.release(conn)
        beat.cancel()
        await asyncio.gather(beat, return_exceptions=True)
        await cluster.leave()
    assert lost == []
    assert {r["table_id"]: (r["owner"], r["epoch"], r["live"]) for r in rows} == {
        lease.table_id: ("n1", lease.epoch, True) for lease in started
    }


@pytest.mark.timeout(60)
async def test_a_table_being_created_is_neither_lost_nor_taken_again_by_its_own_node(
    db: tuple[str, asyncpg.Pool],
) -> None:
    """While the transaction that creates a table is open, the heartbeat cannot see
    its lease row: it must not call the lease lost (it did, and stopped the new table),
    nor take the committed row as a table of its own to start a second time."""
    dsn, pool = db
    started: list[Lease] = []
    lost: list[str] = []

    async def stop(table_id: str) -> None:
        lost.append(table_id)

    node = NodeSettings(node_id="n1", cluster=True, lease_seconds=1.0, heartbeat_seconds=0.1)
    cluster = Cluster(pool, dsn, node, started.append, stop)
    await cluster.join()
    beat = asyncio.create_task(cluster.run())
    try:
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO tables (id, seats, point_value, commission_bps, turn_seconds, max_missed_turns, "
                "min_players) VALUES ('t_new', 4, 1, 0, 30, 3, 2)"
            )
            lease = await cluster.add_table(conn, "t_new")
            await asyncio.sleep(0.8)  # eight beats with the row not yet visible to them
        cluster.adopt(lease)
        await asyncio.sleep(2.0)  # two leases' time after the commit: renewed, never taken again
        async with pool.acquire() as conn:
            row = await conn.fetchrow("SELECT owner, epoch, expires_at > now() AS live FROM table_leases")
    finally:
        beat.cancel()
        await asyncio.gather(beat, return_exceptions=True)
        await cluster.leave()
    assert lost == [] and started == []
    assert (row["owner"], row["epoch"], row["live"]) == ("n1", 1, True)
