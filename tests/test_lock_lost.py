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
