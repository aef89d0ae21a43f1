"""kill -9 at the worst instants of a hand's end, with real processes: ``serve
--workers 2`` in a process of its own, on a database reached through a proxy that
holds back PostgreSQL's answer (1) to the hand's end reading its log, before anything
is settled, or (2) to the COMMIT of the hand's settlement, which PostgreSQL has made;
the worker that owns the table is killed (SIGKILL) while that answer is held.  The
supervisor starts a worker again, the table is taken at a new epoch (D32), and the
hand is published and settled exactly once — by the new owner in (1), by the dead one
in (2); its transcript holds every stored record and verifies, the ledger balances,
and the table deals its next hand.  (``tests/test_forgotten_records.py`` crashes the table core at
three instants of a hand's end; ``tests/test_recovery.py`` restarts a table in-process
while the read is held.  This is the same fault with the process really gone.)"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import asyncpg
import pytest

from tests.conftest import Api, fresh_database, wait_for
from tests.pgproxy import PgProxy
from tests.test_one_port import settled_tables
from tests.test_server import draw_and_discard, seat_of, through_seeds
from tests.test_siblings import lease_rows
from tests.workerserver import WorkerServer, worker_server
from tests.wsclient import Client
from verifier.signing import load_public_key
from verifier.transcript import verify_transcript

#: instant -> (what the proxy holds back, the hand's row when the worker is killed)
INSTANTS = {
    "reading the log": ("statement", r"SELECT i, sealed FROM hand_records", "playing"),
    "settled, not told": ("commit", r"INSERT INTO settlements", "ended"),
}


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


@pytest.mark.timeout(300)
@pytest.mark.parametrize("instant", list(INSTANTS))
async def test_a_worker_killed_at_its_hands_end_leaves_the_hand_settled_once(
    instant: str, pg_dsn: str, tmp_path: Path
) -> None:
    from verifier.recordlog import FIRST_KEPT

    async with fresh_database(pg_dsn, "killend") as dsn:
        sock_dir = tempfile.mkdtemp(prefix="pgk-", dir="/tmp")  # a short path: Unix sockets have a length limit
        proxy = await PgProxy(pg_dsn, sock_dir).start()
        try:
            proxied = proxy.dsn(urlsplit(dsn).path.lstrip("/"))
            async with (
                worker_server(tmp_path / "data", dsn=proxied, extra=("--lease-seconds", "2")) as server,
                aiohttp.ClientSession() as s,
            ):
                api = ServerApi(server, s)
                [table] = await settled_tables(s, server, 1)
                a, b = await api.player("ann"), await api.player("bo")
                async with (
                    Client(server.url, a["token"], a["signer"], table=table) as ca,
                    Client(server.url, b["token"], b["signer"], table=table) as cb,
                ):
                    hand_no = await through_seeds(table, ca, cb)
                    await draw_and_discard(table, hand_no, ca, cb, FIRST_KEPT + 4)  # past what memory keeps
                    [(owner, epoch)] = (await lease_rows(dsn, [table])).values()
                    index = int(owner.rsplit("/w", 1)[1])
                    pid = server.worker_pids()[index]
                    kind, pattern, status = INSTANTS[instant]
                    if kind == "statement":
                        proxy.hold_reply(pattern, 120)
                    else:
                        proxy.hold_commit_reply(pattern, 120)
                    assert (await cb.leave(table, hand_no, seat_of(cb)))["type"] == "reply"  # the hand is over
                    await wait_for(lambda: proxy.holding > 0, timeout=60)  # PostgreSQL answered: held back
                    assert await hand_row(dsn, table, hand_no) == status
                    os.kill(pid, signal.SIGKILL)
                proxy.let_go()  # the worker is gone: nobody waits for the held answer any more
                hand_id, t = await settled_after_the_kill(server, api, dsn, table, hand_no, index, epoch)
                conn = await asyncpg.connect(dsn)
                try:
                    stored = await conn.fetchval("SELECT count(*) FROM hand_records WHERE hand_id = $1", hand_id)
                finally:
                    await conn.close()
                assert [r["i"] for r in t["log"]] == list(range(stored)) and t["log"][-1]["action"]["kind"] == "leave"
                # The table deals on: a new player sits beside ann, and the next hand begins.
                c = await api.player("cy")
                async with (
                    Client(server.url, a["token"], a["signer"], table=table) as ca,
                    Client(server.url, c["token"], c["signer"], table=table) as cc,
                ):
                    for x in (ca, cc):
                        j = await x.request({"type": "join", "table_id": table})
                        assert j["type"] == "reply", j
                        await x.request({"type": "sit", "table_id": table})  # ann may still hold her seat
                    nxt = await cc.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "commit")
                    assert nxt["hand_no"] == hand_no + 1
        finally:
            await proxy.stop()
            shutil.rmtree(sock_dir, ignore_errors=True)


async def settled_after_the_kill(
    server: WorkerServer, api: ServerApi, dsn: str, table: str, hand_no: int, index: int, epoch: int
) -> tuple[int, dict[str, Any]]:
    """After the table's owner, worker ``index``, was killed: the supervisor started it
    again, the table was taken at a higher epoch than ``epoch``, and the hand ended with
    exactly one settlement; its transcript verifies under the server's key and the
    ledger balances.  The hand's id and its transcript."""
    await until(f"worker {index} started again", lambda: ready_again(server, index))
    assert f"worker {index} exited (-9); starting it again" in server.text()
    await until("the table taken at a new epoch", lambda: taken_again(dsn, table, epoch))
    hand_id = await until("the hand settled", lambda: ended(dsn, table, hand_no))
    t: dict[str, Any] = await api.call("GET", f"/api/hands/{hand_id}/transcript", expect=200)
    key = load_public_key((await api.call("GET", "/api/fairness/key"))["public_key_hex"])
    report = verify_transcript(t, key)
    assert report.ok, report.failure
    conn = await asyncpg.connect(dsn)
    try:
        settled = await conn.fetchval("SELECT count(*) FROM settlements WHERE hand_id = $1", hand_id)
    finally:
        await conn.close()
    assert settled == 1
    assert (await api.call("GET", "/api/ledger"))["ok"] is True
    return hand_id, t


async def hand_row(dsn: str, table: str, hand_no: int) -> str | None:
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetchval("SELECT status FROM hands WHERE table_id = $1 AND hand_no = $2", table, hand_no)
    finally:
        await conn.close()


async def ended(dsn: str, table: str, hand_no: int) -> int | None:
    """The hand's id once it is ended (published and settled), else None."""
    conn = await asyncpg.connect(dsn)
    try:
        row = await conn.fetchrow("SELECT id, status FROM hands WHERE table_id = $1 AND hand_no = $2", table, hand_no)
    finally:
        await conn.close()
    return int(row["id"]) if row is not None and row["status"] == "ended" else None


async def taken_again(dsn: str, table: str, epoch: int) -> bool:
    rows = await lease_rows(dsn, [table])
    return table in rows and rows[table][1] > epoch


async def ready_again(server: WorkerServer, index: int) -> bool:
    return server.ready_count(index) >= 2
