"""The server's lock connection (service.db.ServerLock) is never dropped open.

``keep`` connects again after the lock's connection was lost; cancelled while the new
connection waits for its first answer (the server stopping while the database is slow,
as a fault test's teardown does), the connection was dropped open — left to the
collector, where asyncpg warns of it (a ResourceWarning: under warnings-as-errors a
fault test once failed at teardown on such a warning, the CI run of 1abde0c).  The
proxy holds the answer to the lock's statement (tests/pgproxy.py)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import shutil
import tempfile
from urllib.parse import urlsplit

import asyncpg

from service.db import ServerLock
from tests.conftest import fresh_database
from tests.pgproxy import PgProxy


def open_connections() -> list[asyncpg.Connection]:
    """The open connections this process holds.  Not ``isinstance``: asyncpg counts a
    pool's connection proxy as a Connection, and one another test released and the
    collector has not freed yet raises on ``is_closed()`` (InterfaceError: this test
    failed so in a full run of 2026-12-04); its connection is in the list itself."""
    return [o for o in gc.get_objects() if asyncpg.Connection in type(o).__mro__ and not o.is_closed()]


async def test_a_lock_taken_again_and_cancelled_leaves_no_connection_open(pg_dsn: str) -> None:
    async with fresh_database(pg_dsn) as dsn:
        sock_dir = tempfile.mkdtemp(prefix="pgp-", dir="/tmp")
        proxy = await PgProxy(pg_dsn, sock_dir).start()
        try:
            lock = ServerLock(proxy.dsn(urlsplit(dsn).path.lstrip("/")), None)  # its connection was lost
            before = {id(c) for c in open_connections()}
            proxy.hold_reply(r"pg_try_advisory_lock", 30.0)
            keeping = asyncio.create_task(lock.keep())
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 30
            while not [c for c in open_connections() if id(c) not in before]:  # connected, waiting for the answer
                assert loop.time() < deadline and not keeping.done()
                await asyncio.sleep(0.02)
            while not proxy.holding:  # the lock's statement answered, its answer held: in flight
                assert loop.time() < deadline and not keeping.done()
                await asyncio.sleep(0.02)
            keeping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeping
            assert lock.conn is None
            assert [c for c in open_connections() if id(c) not in before] == [], "a connection was dropped open"
        finally:
            await proxy.stop()
            shutil.rmtree(sock_dir, ignore_errors=True)
