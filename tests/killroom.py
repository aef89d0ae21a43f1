"""What the kill -9 tests share (tests/test_kill_at_hand_end.py,
tests/test_kill_mid_write.py, tests/test_kill_mid_turn.py): ``serve --workers 2`` in a
process of its own, optionally behind a :class:`~tests.pgproxy.PgProxy` that holds
PostgreSQL's answers back; the worker that owns a table is killed (SIGKILL), the
supervisor starts it again and a worker takes the table at a higher epoch; then the
hand must end settled once, its transcript verify and the ledger balance."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import asyncpg

from tests.conftest import Api, fresh_database
from tests.pgproxy import PgProxy
from tests.test_one_port import settled_tables
from tests.test_siblings import lease_rows
from tests.workerserver import WorkerServer, worker_server
from tests.wsclient import Client
from verifier.signing import load_public_key
from verifier.transcript import verify_transcript

#: the group commit's statement for records and seeds (service.tablestore.BATCH_SQL)
RECORDS = r"INSERT INTO hand_records"
#: how a test names the two states of a write in flight (Room.arm)
STORED, NEVER = "stored, not told", "never stored"


class ServerApi(Api):
    """The test's REST client for a server with an operator token of its own."""

    def __init__(self, server: WorkerServer, session: aiohttp.ClientSession) -> None:
        super().__init__(server.url, session)
        self.operator = server.token

    async def call(
        self, method: str, path: str, token: str | None = "", body: Any = None, expect: int | None = None
    ) -> Any:
        return await super().call(method, path, self.operator if token == "" else token, body, expect)


async def until(what: str, check: Any, limit: float = 120.0) -> Any:
    """Poll ``check()`` (a coroutine function) until it returns something true; only a
    hang exceeds ``limit``."""
    end = time.monotonic() + limit
    while True:
        got = await check()
        if got:
            return got
        assert time.monotonic() < end, f"never: {what}"
        await asyncio.sleep(0.1)


async def value(dsn: str, sql: str, *args: Any) -> Any:
    """One value read straight from the database (never through the proxy)."""
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetchval(sql, *args)
    finally:
        await conn.close()


@dataclass
class Room:
    """A server of two workers behind the proxy, one table, ann and bo."""

    server: WorkerServer
    api: ServerApi
    dsn: str
    proxy: PgProxy
    table: str
    a: dict[str, Any]
    b: dict[str, Any]

    def client(self, player: dict[str, Any]) -> Client:
        return Client(self.server.url, player["token"], player["signer"], table=self.table)

    def arm(self, instant: str, pattern: str = RECORDS, skip: int = 0) -> None:
        """The next write that runs SQL matching ``pattern`` (by default: the table's
        records and seeds, one statement), after ``skip`` such writes, is stored with
        its answer held back, or never reaches PostgreSQL."""
        if instant == STORED:
            self.proxy.hold_commit_reply(pattern, 120, skip)
        else:
            self.proxy.withhold(pattern, skip)

    async def owner(self) -> tuple[int, int]:
        """The worker that holds the table's lease, and the lease's epoch."""
        [(owner, epoch)] = (await lease_rows(self.dsn, [self.table])).values()
        return int(owner.rsplit("/w", 1)[1]), epoch

    def kill(self, index: int) -> None:
        """SIGKILL worker ``index``, with what the proxy holds still held."""
        os.kill(self.server.worker_pids()[index], signal.SIGKILL)

    async def back(self, index: int, epoch: int) -> None:
        """Once the killed worker's clients are gone: it was started again, and the
        table was taken at a higher epoch than ``epoch``."""
        self.proxy.let_go()  # the worker is gone: nobody waits for what was held
        await taken_after_the_kill(self.server, self.dsn, self.table, index, epoch)


@contextlib.asynccontextmanager
async def proxied_database(pg_dsn: str, name: str) -> AsyncIterator[tuple[str, PgProxy, str]]:
    """A fresh database (``name`` its prefix) and a proxy in front of it: (its DSN, the
    proxy, the DSN through the proxy).  Whatever the proxy still holds is let go at
    the end."""
    async with fresh_database(pg_dsn, name) as dsn:
        sock_dir = tempfile.mkdtemp(prefix="pgk-", dir="/tmp")  # a short path: Unix sockets have a length limit
        proxy = await PgProxy(pg_dsn, sock_dir).start()
        try:
            yield dsn, proxy, proxy.dsn(urlsplit(dsn).path.lstrip("/"))
        finally:
            proxy.let_go()
            await proxy.stop()
            shutil.rmtree(sock_dir, ignore_errors=True)


@contextlib.asynccontextmanager
async def room(pg_dsn: str, tmp_path: Path, name: str, extra: tuple[str, ...] = ()) -> AsyncIterator[Room]:
    """A fresh database (``name`` its prefix), the proxy in front of it, ``serve
    --workers 2 --lease-seconds 2`` on it, one four-seat table once the workers have
    shared the tables out, and two players; ``extra``: more options of ``serve``."""
    async with (
        proxied_database(pg_dsn, name) as (dsn, proxy, proxied),
        worker_server(tmp_path / "data", dsn=proxied, extra=("--lease-seconds", "2", *extra)) as server,
        aiohttp.ClientSession() as s,
    ):
        api = ServerApi(server, s)
        [table] = await settled_tables(s, server, 1)
        a, b = await api.player("ann"), await api.player("bo")
        yield Room(server, api, dsn, proxy, table, a, b)


async def settled_after_the_kill(
    server: WorkerServer, api: ServerApi, dsn: str, table: str, hand_no: int, index: int, epoch: int
) -> tuple[int, dict[str, Any]]:
    """After the table's owner, worker ``index``, was killed: the supervisor started it
    again, the table was taken at a higher epoch than ``epoch``, and the hand ended with
    exactly one settlement; its transcript verifies under the server's key and the
    ledger balances.  The hand's id and its transcript."""
    await taken_after_the_kill(server, dsn, table, index, epoch)
    hand_id = await until("the hand settled", lambda: ended(dsn, table, hand_no))
    t: dict[str, Any] = await api.call("GET", f"/api/hands/{hand_id}/transcript", expect=200)
    key = load_public_key((await api.call("GET", "/api/fairness/key"))["public_key_hex"])
    report = verify_transcript(t, key)
    assert report.ok, report.failure
    assert await value(dsn, "SELECT count(*) FROM settlements WHERE hand_id = $1", hand_id) == 1
    assert (await api.call("GET", "/api/ledger"))["ok"] is True
    return hand_id, t


async def taken_after_the_kill(server: WorkerServer, dsn: str, table: str, index: int, epoch: int) -> None:
    """Worker ``index``, killed, was started again by the supervisor, and the table was
    taken at a higher epoch than ``epoch``."""
    await until(f"worker {index} started again", lambda: ready_again(server, index))
    assert f"worker {index} exited (-9); starting it again" in server.text()
    await until("the table taken at a new epoch", lambda: taken_again(dsn, table, epoch))


async def ended(dsn: str, table: str, hand_no: int) -> int | None:
    """The hand's id once it is ended (published and settled), else None."""
    got = await value(
        dsn, "SELECT id FROM hands WHERE table_id = $1 AND hand_no = $2 AND status = 'ended'", table, hand_no
    )
    return None if got is None else int(got)


async def taken_again(dsn: str, table: str, epoch: int) -> bool:
    rows = await lease_rows(dsn, [table])
    return table in rows and rows[table][1] > epoch


async def ready_again(server: WorkerServer, index: int) -> bool:
    return server.ready_count(index) >= 2
