"""The audit of the seams between processes (h79): a node's heartbeat, its leases and
the database it shares, each fault played with real parts — a real PostgreSQL, and
tests/pgproxy.py between the node and it where the fault is the database's.

Each test states the behaviour the project's goal asks for ("an honest server whose
crashes, stalls and outages must never charge missed turns and drops to players, or
leave a table that never deals again; money is never wrong").
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import asyncpg
import pytest

from service.cluster import Cluster, Lease, NodeSettings
from tests.conftest import fresh_pool
from tests.pgproxy import PgProxy

NEW_TABLE = (
    "INSERT INTO tables (id, seats, point_value, commission_bps, turn_seconds, max_missed_turns, min_players) "
    "VALUES ($1, 4, 1, 0, 30, 3, 2)"
)


@contextlib.asynccontextmanager
async def proxied_db(pg_dsn: str, prefix: str) -> AsyncIterator[tuple[str, asyncpg.Pool, PgProxy, str]]:
    """A fresh, migrated database: (its DSN, a pool straight to it, a proxy in front of
    it, the DSN through that proxy)."""
    async with fresh_pool(pg_dsn, prefix, max_size=4) as (dsn, pool):
        sock_dir = tempfile.mkdtemp(prefix="pgp-", dir="/tmp")
        proxy = await PgProxy(pg_dsn, sock_dir).start()
        try:
            yield dsn, pool, proxy, proxy.dsn(urlsplit(dsn).path.lstrip("/"))
        finally:
            proxy.let_go()
            await proxy.stop()
            shutil.rmtree(sock_dir, ignore_errors=True)


async def until(predicate: object, limit: float) -> bool:
    """Whether ``predicate()`` holds within ``limit`` seconds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + limit
    while loop.time() < end:
        if predicate():  # type: ignore[operator]
            return True
        await asyncio.sleep(0.05)
    return bool(predicate())  # type: ignore[operator]


# ----------------------------------------------------------------------------- the heartbeat
@pytest.mark.timeout(60)
async def test_a_heartbeat_whose_own_connection_hangs_beats_again_and_takes_its_tables_back(
    pg_dsn: str,
) -> None:
    """The fault: the heartbeat's own connection (``Cluster._own_connection``: not one
    of the pool's, so that a busy pool never holds a renewal up) hangs — one backend
    stuck, a proxy or pooler that lost the session, a half-open TCP path — while the
    database answers every other connection.  The heartbeat's statements have no
    timeout of their own (the pools' have 30 s), so ``beat()`` waited on that one
    connection for ever: the watch gave every lease up on the node's own clock
    (rightly, ``Cluster.expire``), and then nothing ever took them again on this node —
    the heartbeat that would (``acquire``) never came back.  A node alone in its card
    room (``--node-id``, or the last node standing) left every table without an owner
    for good: told ``moved``, its players found nobody serving it, and no hand was
    dealt again.  Nobody is charged (no clock runs), but the table never deals again:
    the goal's second clause.

    Fixed (h79): a beat not done within ``HUNG_BEAT_LEASES`` lease periods is given
    up — its connection cut and made again on the next beat (as after a failed one) —
    so a connection that hangs costs the node its leases, never its tables for good.
    """
    async with proxied_db(pg_dsn, "hbhang") as (_dsn, pool, proxy, through):
        async with pool.acquire() as conn:
            await conn.execute(NEW_TABLE, "t_hang")
            await conn.execute("INSERT INTO table_leases (table_id) VALUES ('t_hang')")
        started: list[Lease] = []
        stopped: list[str] = []

        async def stop(table_id: str) -> None:
            stopped.append(table_id)

        node = NodeSettings(node_id="n1", cluster=True, shared=True, lease_seconds=1.0, heartbeat_seconds=0.2)
        cluster = Cluster(pool, through, node, started.append, stop)
        await cluster.join()
        assert [lease.table_id for lease in started] == ["t_hang"]
        beat = asyncio.create_task(cluster.run())
        try:
            beats = cluster.beats
            assert await until(lambda: cluster.beats >= beats + 3, 20), "the heartbeat beats"
            # the next renewal's statement never reaches PostgreSQL: its connection stalls
            proxy.withhold(r"UPDATE table_leases l SET expires_at")
            assert await until(lambda: stopped == ["t_hang"], 20), "the watch gives the lease up on its own clock"
            beats = cluster.beats
            # the database answers every other connection all along: the node must beat
            # again, and take back the table nobody else serves
            came_back = await until(lambda: len(started) >= 2 and "t_hang" in cluster.owned, 30)
            assert came_back, f"after the hung beat: {cluster.beats - beats} beats, table owned: {cluster.owned}"
        finally:
            proxy.let_go()
            beat.cancel()
            await asyncio.gather(beat, return_exceptions=True)
            await cluster.leave()
