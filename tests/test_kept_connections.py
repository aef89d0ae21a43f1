"""The group commit's connections kept between its batches (service.db.KeptConnections),
on a real PostgreSQL: a connection is kept only after a clean use, never more than the
number asked for; one that broke while kept is replaced before it is used, one that
failed or was left in a transaction goes back to the pool, and ``close`` gives every
kept connection back so the pool can close."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest
import pytest_asyncio

from service.db import KeptConnections
from tests.conftest import fresh_pool


@pytest_asyncio.fixture
async def pool(pg_dsn: str) -> AsyncIterator[asyncpg.Pool]:
    async with fresh_pool(pg_dsn, "kept", max_size=4) as (_, p):
        yield p


def given_back(conn: asyncpg.Connection) -> bool:
    """asyncpg took the handle back into its pool as the connection closed: every call
    on it but a release is refused."""
    try:
        conn.is_closed()
    except asyncpg.InterfaceError:
        return True
    return False


async def pid_of(kept: KeptConnections) -> int:
    async with kept.connection() as conn:
        return int(await conn.fetchval("SELECT pg_backend_pid()"))


async def test_a_clean_use_is_kept_and_the_next_use_gets_the_same_connection(pool: asyncpg.Pool) -> None:
    kept = KeptConnections(pool, 2)
    first = await pid_of(kept)
    assert kept.kept == 1
    assert await pid_of(kept) == first
    assert kept.kept == 1
    await kept.close()


async def test_never_more_kept_than_asked_and_close_gives_them_all_back(pool: asyncpg.Pool) -> None:
    kept = KeptConnections(pool, 2)
    pids = await asyncio.gather(*(pid_of(kept) for _ in range(3)))
    assert len(set(pids)) == 3  # three at once: three connections
    assert kept.kept == 2
    await kept.close()
    assert kept.kept == 0
    with pytest.raises(asyncpg.InterfaceError):
        await pid_of(kept)
    await asyncio.wait_for(pool.close(), 10)  # waits for no connection: all were given back


async def test_a_use_that_raises_or_leaves_a_transaction_open_gives_its_connection_back(pool: asyncpg.Pool) -> None:
    kept = KeptConnections(pool, 2)
    with pytest.raises(asyncpg.UndefinedTableError):
        async with kept.connection() as conn:
            await conn.execute("SELECT * FROM no_such_table")
    assert kept.kept == 0
    async with kept.connection() as conn:
        tx = conn.transaction()
        await tx.start()
        await conn.execute("SELECT 1")
    assert kept.kept == 0  # in a transaction: not kept
    async with kept.connection() as conn:
        assert not conn.is_in_transaction()
        assert await conn.fetchval("SELECT 1") == 1
    assert kept.kept == 1
    await kept.close()


async def test_a_connection_that_broke_while_kept_is_replaced_before_it_is_used(pool: asyncpg.Pool) -> None:
    """PostgreSQL ends a kept connection's backend (a restart, an operator's
    pg_terminate_backend): once the client has seen the socket close, the next use
    gets a fresh connection and succeeds; no write fails for it."""
    kept = KeptConnections(pool, 1)
    async with kept.connection() as conn:
        victim = conn
        old = int(await conn.fetchval("SELECT pg_backend_pid()"))
    async with pool.acquire() as other:
        assert await other.fetchval("SELECT pg_terminate_backend($1)", old)
    for _ in range(3000):  # the loop reads the socket's end; asyncpg gives it back to the pool
        if given_back(victim):
            break
        await asyncio.sleep(0.01)
    assert given_back(victim)
    assert kept.kept == 1  # still listed, no longer usable
    assert await pid_of(kept) != old
    assert kept.kept == 1
    await kept.close()


async def test_a_connection_ended_in_the_middle_of_a_use_is_not_kept(pool: asyncpg.Pool) -> None:
    kept = KeptConnections(pool, 1)
    # what the use meets depends on when the client sees the socket close
    with pytest.raises((asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError, OSError)):
        async with kept.connection() as conn, pool.acquire() as other:
            await other.execute("SELECT pg_terminate_backend($1)", conn.get_server_pid())
            await conn.fetchval("SELECT 1")
    assert kept.kept == 0
    assert await pid_of(kept) > 0
    assert kept.kept == 1
    await kept.close()
