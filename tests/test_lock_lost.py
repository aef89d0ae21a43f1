"""Another server took this database's lock while this one's lock session was gone (as
when PostgreSQL restarts and a second server, started meanwhile, is quicker): two
servers never write one table, so this one goes down — its clients told and their
sockets closed, as at any shutdown — and exits with EXIT_LOCKED (5), which its service
manager does not restart (docs/deploy/rummy-table.service).  Before, a server of one
process stopped its tables and went on running: no client was told, and the stopped
tables kept their leases; a server of workers went down with exit status 0."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import aiohttp
import asyncpg
import pytest

from service.db import ServerLock, lock_holders
from service.errors import EXIT_LOCKED
from tests.conftest import fresh_database
from tests.killroom import ServerApi
from tests.workerserver import worker_server
from tests.wsclient import Client


@pytest.mark.timeout(180)
@pytest.mark.parametrize("workers", [1, 2])
async def test_a_server_whose_lock_another_server_took_goes_down_and_tells_its_clients(
    pg_dsn: str, tmp_path: Path, workers: int
) -> None:
    async with (
        fresh_database(pg_dsn, f"lost{workers}") as dsn,
        worker_server(tmp_path / "data", workers=workers, dsn=dsn, expect_exit=EXIT_LOCKED) as server,
        aiohttp.ClientSession() as s,
    ):
        api = ServerApi(server, s)
        table = await api.table()
        a = await api.player("ann")
        async with Client(server.url, a["token"], a["signer"], table=table) as ca:
            await ca.request({"type": "join", "table_id": table})
            conn = await asyncpg.connect(dsn)
            other = None
            try:
                # Held still (it cannot take its lock back meanwhile), the server's lock
                # session ends and another server takes the lock.
                os.kill(server.proc.pid, signal.SIGSTOP)
                try:
                    [pid] = await lock_holders(conn)
                    await conn.fetchval("SELECT pg_terminate_backend($1)", pid)
                    while pid in await lock_holders(conn):
                        await asyncio.sleep(0.05)
                    other = await ServerLock.acquire(dsn)
                finally:
                    os.kill(server.proc.pid, signal.SIGCONT)
                await asyncio.wait_for(asyncio.to_thread(server.proc.wait), 60)
                shutdown = await ca.wait_frame(lambda f: f.get("type") == "shutdown", timeout=10)
                assert shutdown["message"]
                for _ in range(100):  # the server is gone: its socket is closed
                    if ca.ws.closed:
                        break
                    await asyncio.sleep(0.1)
                assert ca.ws.closed
            finally:
                if other is not None:
                    await other.release()
                await conn.close()
        assert "another server took this database's lock" in server.text()


async def test_the_server_s_own_lock_session_that_will_not_end_is_not_taken_for_another_server(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by an audit (the lock session's backend stopped 30 s under a real server):
    the check on the lock's connection timed out, the server gave the session up and
    asked PostgreSQL to end it, and the backend — hung, so it could not end — still
    held the lock: taken for another server's, and serve went down with EXIT_LOCKED,
    for good.  Now that is "not yet": keep() raises (its callers try again), and once
    the backend moves again the lock is this server's as before."""
    from service import db

    monkeypatch.setattr(db, "ACQUIRE_TIMEOUT", 1.0)  # the check's and the wait's bounds, shortened
    async with fresh_database(pg_dsn, "ownlock") as dsn:
        lock = await ServerLock.acquire(dsn)
        try:
            assert lock.conn is not None
            backend = lock.conn.get_server_pid()
            os.kill(backend, signal.SIGSTOP)  # its backend hangs
            try:
                with pytest.raises(TimeoutError, match="has not ended yet"):
                    await lock.keep()
                with pytest.raises(TimeoutError, match="has not ended yet"):
                    await lock.keep()  # and again, while it hangs: never False
            finally:
                os.kill(backend, signal.SIGCONT)
            for _ in range(50):  # it ends as it moves again (pg_terminate_backend)
                try:
                    assert await lock.keep() is True
                    break
                except TimeoutError:
                    await asyncio.sleep(0.1)
            else:
                raise AssertionError("the lock was not held again after the backend moved")
            conn = await asyncpg.connect(dsn)
            try:
                assert await lock_holders(conn) == [lock.conn.get_server_pid()]  # type: ignore[union-attr]
            finally:
                await conn.close()
        finally:
            await lock.release()
