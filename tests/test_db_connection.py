"""service.db.connection when its use is cut short on a database that does not answer:
the task stays cancelled (asyncpg's release, past its bound, raises TimeoutError; a
stopped table took that for a failed write and told its clients ``paused``:
tests/test_recovery.py), it ends within the release's bound rather than when the
database answers, and the pool serves the next use."""

from __future__ import annotations

import asyncio

import pytest

from service.db import RELEASE_CUT_SHORT_SECONDS, connection, create_pool
from tests.killroom import proxied_database

#: only a hang exceeds it (the proxy holds the answer ten times longer)
HELD = 60.0


@pytest.mark.timeout(120)
async def test_a_use_cut_short_on_a_database_that_does_not_answer_stays_cancelled_and_ends(pg_dsn: str) -> None:
    async with proxied_database(pg_dsn, "cutshort") as (_, proxy, proxied):
        pool = await create_pool(proxied, min_size=1, max_size=2)
        try:
            started = asyncio.Event()

            async def use() -> None:
                async with connection(pool) as conn:
                    started.set()
                    await conn.fetchval("SELECT 41 + 1 AS held_back")

            proxy.hold_reply(r"held_back", HELD)
            task = asyncio.create_task(use())
            await started.wait()
            while proxy.holding == 0:  # PostgreSQL answered; the proxy holds the answer
                await asyncio.sleep(0.01)
            task.cancel()
            done, _ = await asyncio.wait({task}, timeout=HELD / 6)
            assert done, "the cancelled use waited for the database"
            assert task.cancelled(), task.exception()
            proxy.let_go()
            async with connection(pool) as conn:  # the pool serves the next use
                assert await conn.fetchval("SELECT 1") == 1
        finally:
            proxy.let_go()
            await asyncio.wait_for(pool.close(), 10)
    assert RELEASE_CUT_SHORT_SECONDS < HELD / 6
