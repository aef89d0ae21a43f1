"""A database that hangs (it holds its connections open and answers nothing), with
real processes behind tests/pgproxy.py's ``hang()``:

* SIGTERM: the server still tells its clients and goes down in seconds, with exit
  status 0 and the hung database named in its log — not after the pools' 30 s
  statement timeout a step (84 s for a node before service.lifecycle's ``bounded``),
  and not as an "internal error" to report.  The leases it could not hand over run
  out (tests/test_handover.py: the database gone).
* ``/healthz`` says which worker's database does not answer (each worker's check is
  bounded at 2 s, and a cancelled check no longer waits for asyncpg to cancel its
  query on the hung database: service.db.connection; before, a sibling's answer came
  too late and it was reported as a worker that does not answer, after 14 s), and
  ``/metrics`` still answers (the ledger's audit waits 2 s, then the last figures are
  shown; before, the scrape failed 503 after 10 s)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from tests.killroom import ServerApi, proxied_database, until
from tests.pgproxy import PgProxy
from tests.test_server import through_seeds
from tests.test_siblings import lease_rows
from tests.workerserver import WorkerServer, worker_server
from tests.wsclient import Client

#: only a hang exceeds it: the way out waits at most a few 2 s steps on the database
HANG = 45.0


@dataclass
class Hung:
    server: WorkerServer
    api: ServerApi
    session: aiohttp.ClientSession
    proxy: PgProxy
    table: str


@contextlib.asynccontextmanager
async def served(pg_dsn: str, tmp_path: Path, name: str, node: str | None = None) -> AsyncIterator[Hung]:
    """A server (``serve --workers 2``, or the node ``node``) on a fresh database
    behind the proxy, with one table it holds."""
    async with (
        proxied_database(pg_dsn, name) as (dsn, proxy, proxied),
        worker_server(tmp_path / "data", dsn=proxied, extra=("--lease-seconds", "2"), node=node) as server,
        aiohttp.ClientSession() as s,
    ):
        api = ServerApi(server, s)
        table = (await api.call("POST", "/api/tables", body={"seats": 4}, expect=201))["id"]
        await until("the table is held", lambda: held(dsn, table))
        yield Hung(server, api, s, proxy, table)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("shape", ("a node", "two workers"))
async def test_sigterm_while_the_database_hangs_still_goes_down_cleanly(
    shape: str, pg_dsn: str, tmp_path: Path
) -> None:
    async with served(pg_dsn, tmp_path, "hungstop", "n1" if shape == "a node" else None) as h:
        server, table = h.server, h.table
        a, b = await h.api.player("ann"), await h.api.player("bo")
        ca = Client(server.url, a["token"], a["signer"], table=table)
        cb = Client(server.url, b["token"], b["signer"], table=table)
        async with ca, cb:
            await through_seeds(table, ca, cb)  # a hand in play
            h.proxy.hang()
            began = time.monotonic()
            server.proc.send_signal(signal.SIGTERM)
            code = await asyncio.to_thread(server.proc.wait, HANG)
            took = time.monotonic() - began
            for c in (ca, cb):
                notice = await c.wait_frame(lambda f: f.get("type") == "shutdown", timeout=10)
                assert notice["servers"] == []
            text = server.text()
            assert code == 0, (took, text[-3000:])
            assert "internal error" not in text, text[-3000:]
            assert h.proxy.holding > 0  # the database really hung throughout
            if shape == "a node":  # a worker of two is stopped by its supervisor first
                assert "the database did not answer" in text, text[-3000:]


@pytest.mark.timeout(300)
async def test_while_the_database_hangs_health_names_it_and_the_metrics_still_answer(
    pg_dsn: str, tmp_path: Path
) -> None:
    async with served(pg_dsn, tmp_path, "hungmetrics") as h:
        server, s = h.server, h.session
        async with s.get(server.url + "/healthz") as r:
            assert r.status == 200, await r.text()
        h.proxy.hang()
        async with s.get(server.url + "/healthz", timeout=aiohttp.ClientTimeout(total=HANG)) as r:
            body = await r.json()
        assert r.status == 503 and body["status"] == "degraded", body
        workers = sorted(server.worker_pids())
        assert len(workers) == 2
        for index in workers:  # each worker answered, and named its database
            assert any(p.startswith(f"solo/w{index}: the database did not answer") for p in body["problems"]), body
        # No scrape yet: the ledger's audit of whichever worker answers must run now,
        # on the hung database; the scrape answers without it.
        async with s.get(server.url + "/metrics", timeout=aiohttp.ClientTimeout(total=HANG)) as r:
            text = await r.text()
        assert r.status == 200, text[:500]
        assert "rummy_connections" in text and "rummy_ledger_ok" not in text, text[:500]
        h.proxy.let_go()

        async def audited() -> bool:  # the database back, an audit completes and its age shows
            async with s.get(server.url + "/metrics") as r:
                got = await r.text()
            return "rummy_ledger_ok 1.0" in got and "rummy_ledger_audit_age_seconds" in got

        await until("the ledger audited once the database answers", audited)


async def held(dsn: str, table: str) -> bool:
    rows = await lease_rows(dsn, [table])
    return table in rows and rows[table][0] is not None
