"""A session of ours left idle inside a transaction is ended by PostgreSQL within
``service.db.IDLE_IN_TRANSACTION_SECONDS``, and with it what the transaction locked.

Found in CI (docs/benchmarks.md, "A node frozen in the middle of a write"): a cluster
node frozen with SIGSTOP while a settlement's transaction was open kept its lease row
under ``FOR KEY SHARE``, so the other nodes' takeover (``FOR UPDATE SKIP LOCKED``)
skipped its table, for the 30 s the setting then gave.  The freeze is played here by a
connection that stops sending statements; the takeover's query is the cluster's."""

from __future__ import annotations

import asyncio
import time

import asyncpg
import pytest

from service.db import IDLE_IN_TRANSACTION_SECONDS, connect, create_pool, writer_pool
from tests.conftest import fresh_database

#: far longer than the setting, far shorter than the 30 s it was: a busy machine passes
BOUND = 20.0


async def test_every_kind_of_session_the_server_opens_carries_the_setting(pg_dsn: str) -> None:
    async with fresh_database(pg_dsn, "idlecfg") as dsn:
        own = await connect(dsn)
        main, writes = await create_pool(dsn, max_size=1), await writer_pool(dsn)
        try:
            want = f"{IDLE_IN_TRANSACTION_SECONDS}s"
            assert await own.fetchval("SHOW idle_in_transaction_session_timeout") == want
            for pool in (main, writes):
                async with pool.acquire() as conn:
                    assert await conn.fetchval("SHOW idle_in_transaction_session_timeout") == want
        finally:
            await own.close()
            await main.close()
            await writes.close()


@pytest.mark.timeout(60)
async def test_a_frozen_transaction_stops_holding_its_lease_row_within_the_bound(pg_dsn: str) -> None:
    async with fresh_database(pg_dsn, "idlefreeze") as dsn:
        admin = await asyncpg.connect(dsn)
        frozen = await connect(dsn)
        try:
            await admin.execute("CREATE TABLE leases (table_id text PRIMARY KEY, node text)")
            await admin.execute("INSERT INTO leases VALUES ('t1', 'n1')")
            tx = frozen.transaction()
            await tx.start()
            await frozen.execute("SELECT 1 FROM leases WHERE table_id = 't1' FOR KEY SHARE")
            froze = time.monotonic()  # the node stops here: no statement, no COMMIT
            take = "SELECT table_id FROM leases FOR UPDATE SKIP LOCKED"
            async with admin.transaction():
                assert await admin.fetch(take) == [], "the takeover took a row a live transaction holds"
            while True:
                async with admin.transaction():
                    if [r["table_id"] for r in await admin.fetch(take)] == ["t1"]:
                        break
                assert time.monotonic() - froze < BOUND, "the frozen transaction still holds the lease row"
                await asyncio.sleep(0.1)
            assert time.monotonic() - froze >= IDLE_IN_TRANSACTION_SECONDS * 0.9  # PostgreSQL's timer, not ours
            with pytest.raises((asyncpg.PostgresError, asyncpg.InterfaceError, OSError)):
                await frozen.fetchval("SELECT 1")  # its session was ended, transaction and all
        finally:
            await frozen.close()
            await admin.close()
