"""A network partition between the server and its PostgreSQL, longer than the server
waits: the server gives its connections up, and their closes are lost with the network
(tests/partition.py), so PostgreSQL keeps their sessions — with whatever locks they
held — after the network is back.  Found by an audit (2026-12-06): the server's own old
session, still holding the one-server-per-database lock, was taken for another
server's (every table stopped; a server of workers went down and stayed down), and a
deal's transaction, left open holding the players' accounts, kept the table from ever
dealing again.  Now the server ends the lock's session it gave up
(``ServerLock._end_given_up``), and every session it opens lets PostgreSQL end a
transaction left idle (``service.db.SESSION_SETTINGS``)."""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import asyncpg
import pytest

from service.db import ServerLock, ServerLocked, lock_holders
from tests.conftest import Api, fresh_database, server_on
from tests.partition import Partition
from tests.test_server import by_turn, seat_of, seated, through_seeds
from tests.workerserver import worker_server
from tests.wsclient import Client

pytestmark = pytest.mark.drill

PARTITION_SECONDS = 25.0  # longer than the lock's check (10 s), shorter than a statement's timeout (30 s)
CUT_DEAL_SECONDS = 65.0  # longer than a statement's timeout (30 s) and the connection's close after it


async def holders(dsn: str) -> list[int]:
    conn = await asyncpg.connect(dsn)
    try:
        return await lock_holders(conn)
    finally:
        await conn.close()


@asynccontextmanager
async def partitioned(pg_dsn: str, name: str) -> AsyncIterator[tuple[Partition, str, str]]:
    """A fresh database behind a partition: (the partition, the database's own DSN, the
    DSN through the partition)."""
    async with fresh_database(pg_dsn, name) as dsn:
        sock_dir = tempfile.mkdtemp(prefix="pgq-", dir="/tmp")
        net = await Partition(pg_dsn, sock_dir).start()
        try:
            yield net, dsn, net.dsn(urlsplit(dsn).path.lstrip("/"))
        finally:
            await net.stop()
            shutil.rmtree(sock_dir, ignore_errors=True)


@pytest.mark.timeout(240)
async def test_after_a_partition_the_server_ends_its_own_old_lock_session_and_serves_on(
    pg_dsn: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """One process (a node, or ``serve --workers 1``): the lock's check fails during
    the cut, its connection is given up, the close is lost; after the heal the server
    finds its own old session holding the lock, ends it, takes the lock again, and the
    hand goes on."""
    caplog.set_level(logging.INFO)
    async with partitioned(pg_dsn, "ghost") as (net, dsn, proxied), server_on(proxied, tmp_path / "data") as running:
        lock = running.ground.db_lock
        assert lock is not None and lock.conn is not None
        old = lock.conn.get_server_pid()
        async with aiohttp.ClientSession() as s:
            api = Api(running.url, s)
            table = await api.table(turn_seconds=300)
            a, b = await api.player("ann"), await api.player("bo")
            async with (
                Client(running.url, a["token"], a["signer"], table=table) as ca,
                Client(running.url, b["token"], b["signer"], table=table) as cb,
            ):
                hand_no = await through_seeds(table, ca, cb)
                net.cut()
                await asyncio.sleep(PARTITION_SECONDS)
                assert net.ghosts, "no connection was given up during the cut"
                net.heal()
                healed = time.monotonic()
                while lock.conn is None or lock.conn.is_closed() or lock.conn.get_server_pid() == old:
                    assert time.monotonic() - healed < 60, "the server never held the lock again"
                    await asyncio.sleep(0.2)
                assert await holders(dsn) == [lock.conn.get_server_pid()]
                assert "ending it" in caplog.text and "took this database's lock" not in caplog.text
                c = by_turn(ca, cb)[0]
                r = await c.act(table, hand_no, seat_of(c), {"kind": "draw_closed"})
                assert r["type"] == "reply", r  # the table serves: it was never stopped


@pytest.mark.timeout(300)
async def test_after_a_partition_a_server_of_workers_stays_up(pg_dsn: str, tmp_path: Path) -> None:
    """``serve --workers 2``: the supervisor's lock keeper meets the same old session
    and ends it; the server stays up (it went down with exit 0, which systemd does not
    restart, and a new server was refused while the old session lived)."""
    async with partitioned(pg_dsn, "ghostw") as (net, dsn, proxied):
        async with worker_server(tmp_path / "data", dsn=proxied, extra=("--lease-seconds", "2")) as server:
            net.cut()
            await asyncio.sleep(PARTITION_SECONDS)
            net.heal()
            healed = time.monotonic()
            while "ending it" not in server.text():
                assert server.proc.poll() is None, server.text()[-3000:]
                assert time.monotonic() - healed < 60, server.text()[-3000:]
                await asyncio.sleep(0.2)
            await asyncio.sleep(5)  # the keeper's next checks find the lock held
            assert server.proc.poll() is None, server.text()[-3000:]
            assert "took this database's lock" not in server.text()
            assert len(await holders(dsn)) == 1
            with pytest.raises(ServerLocked):  # the server holds it: another is refused
                again = await ServerLock.acquire(proxied)
                await again.release()


@pytest.mark.timeout(400)
async def test_a_deal_cut_off_by_a_partition_does_not_keep_the_table_from_dealing(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deal's transaction has locked the players' accounts when the network goes;
    the statement times out and the connection is given up, its close lost with the
    network.  PostgreSQL ends the transaction left idle (5 s), so after the heal the
    table deals (before, the deal waited on its own earlier transaction's locks, timed
    out and reloaded, for ever).  The lock's own session is kept out of it (taken as
    held)."""

    async def kept(self: ServerLock) -> bool:
        return True

    monkeypatch.setattr(ServerLock, "keep", kept)
    async with partitioned(pg_dsn, "ghosttx") as (net, _dsn, proxied), server_on(proxied, tmp_path / "data") as running:
        async with aiohttp.ClientSession() as s:
            api = Api(running.url, s)
            table = await api.table()
            a, b = await api.player("ann"), await api.player("bo")
            async with (
                Client(running.url, a["token"], a["signer"], table=table) as ca,
                Client(running.url, b["token"], b["signer"], table=table) as cb,
            ):
                net.cut_after_executed(b"ORDER BY id FOR NO KEY UPDATE")  # the deal's lock of the accounts
                await seated(table, ca, cb)
                began = time.monotonic()
                while net.open.is_set():
                    assert time.monotonic() - began < 30, "the deal never locked the accounts"
                    await asyncio.sleep(0.05)
                # the cut outlasts the deal's statement (its timeout, 30 s) and the
                # connection given up after it; PostgreSQL's side of it is left open
                await asyncio.sleep(max(0.0, began + CUT_DEAL_SECONDS - time.monotonic()))
                net.heal()
                dealt = await ca.wait_frame(lambda f: f.get("type") == "hand", timeout=75)
                assert dealt["table_id"] == table
