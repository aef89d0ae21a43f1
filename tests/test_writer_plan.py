"""The group commit's plans (service.db.writer_pool): on a fresh database, whose tables
hold nothing yet, the generic plan a prepared statement keeps finds every row of the
batch's statement and of the ledger's by index, never by scanning a table whole.

A prepared statement keeps the generic plan it made while the tables were small; a
plan that scans ``hand_records`` or ``hands`` whole then costs more with every hand
stored, until an ANALYZE replans it (docs/benchmarks.md, "The group commit's plan").
The main pool's sessions plan as PostgreSQL likes: on these empty tables they scan,
which shows what the writer's setting is for (and that this test can fail)."""

from __future__ import annotations

import re

import asyncpg

from service import ledger
from service.db import WRITER_POOL_SIZE, create_pool, writer_pool
from service.tablestore import BATCH_SQL
from tests.conftest import fresh_pool

STATEMENTS = {"the batch": BATCH_SQL, "ledger post": ledger.POST_SQL, "ledger lock": ledger.LOCK_SQL}
SCAN = re.compile(r"Seq Scan on (\w+)")


async def scanned(pool: asyncpg.Pool, sql: str) -> set[str]:
    """The tables the generic plan of ``sql`` reads whole, on a connection of ``pool``
    (prepared by name, its parameters given as NULLs: a generic plan does not look at
    them)."""
    params = max(int(n) for n in re.findall(r"\$(\d+)", sql))
    async with pool.acquire() as conn:
        await conn.execute("SET plan_cache_mode = force_generic_plan")
        await conn.execute("PREPARE planned AS " + sql)
        try:
            nulls = ", ".join(["NULL"] * params)
            plan = "\n".join(r[0] for r in await conn.fetch(f"EXPLAIN EXECUTE planned({nulls})"))
        finally:
            await conn.execute("DEALLOCATE planned; RESET plan_cache_mode")
    return set(SCAN.findall(plan))


async def test_the_writers_generic_plans_find_rows_by_index_on_empty_tables(pg_dsn: str) -> None:
    async with fresh_pool(pg_dsn, "plan") as (dsn, main):
        writes = await writer_pool(dsn)
        try:
            assert writes.get_max_size() == WRITER_POOL_SIZE
            found = {name: await scanned(writes, sql) for name, sql in STATEMENTS.items()}
            assert found == {name: set() for name in STATEMENTS}
            # the same statement, planned as the main pool plans it, scans the small tables
            assert {"hands", "table_leases"} <= await scanned(main, BATCH_SQL)
        finally:
            await writes.close()


async def test_the_writers_setting_outlives_a_reset(pg_dsn: str) -> None:
    """The setting is the session's own (sent as the connection starts), so not even a
    RESET ALL (a pool that resets its connections) takes it away."""
    async with fresh_pool(pg_dsn, "planreset") as (dsn, _):
        pool = await create_pool(dsn, max_size=1, settings={"enable_seqscan": "off"})
        try:
            async with pool.acquire() as conn:
                await conn.execute("RESET ALL")
                assert await conn.fetchval("SHOW enable_seqscan") == "off"
        finally:
            await pool.close()
