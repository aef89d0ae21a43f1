"""A full disk and a PostgreSQL in crash recovery are the house's fault (issue 17, D37).

PostgreSQL reports a full disk as SQLSTATE 53100 (``could not extend file``); when
the disk is full under its WAL it PANICs, its backends are cut (57P02) and, while it
recovers, connecting is refused (57P03).  The errors here are raised by the real
PostgreSQL of the test session (``RAISE … USING ERRCODE``): a table's op that meets
one pauses and reloads the table (never a refusal charged to a player, never a lost
lease), and a REST call that meets one is answered 503 ``unavailable``, never 500.
bench/outage_drill.py makes the real full disk."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import asyncpg
import pytest
import pytest_asyncio
from aiohttp import web

from service.middleware import errors
from service.tablecore import io
from service.tablestore import outcome

CONDITIONS = {
    "disk_full": (asyncpg.DiskFullError, io.Result.FULL),  # 53100: refused, nothing was stored
    "out_of_memory": (asyncpg.OutOfMemoryError, io.Result.FULL),
    "cannot_connect_now": (asyncpg.CannotConnectNowError, io.Result.FAILED),  # recovering: nothing ran
    "crash_shutdown": (asyncpg.CrashShutdownError, io.Result.AMBIGUOUS),  # a PANIC may cut a COMMIT
    "admin_shutdown": (asyncpg.AdminShutdownError, io.Result.AMBIGUOUS),
}


async def raised_by_postgres(dsn: str, condition: str) -> BaseException:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(
            f"DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = '{condition}', MESSAGE = 'as the drill makes it'; END $$"
        )
    except asyncpg.PostgresError as e:
        return e
    finally:
        await conn.close()
    raise AssertionError(f"PostgreSQL raised no {condition}")


@pytest.mark.parametrize("condition", sorted(CONDITIONS))
async def test_a_full_disk_or_a_recovering_database_is_the_houses_fault(pg_dsn: str, condition: str) -> None:
    kind, result = CONDITIONS[condition]
    e = await raised_by_postgres(pg_dsn, condition)
    assert isinstance(e, kind)
    got = outcome(7, e)
    assert got.op_id == 7 and got.result is result and got.error is None
    # Neither refused (a refusal answers the player as if by rule) nor fenced (the table
    # would let go): the core pauses, backs off and reloads (tests/test_tablecore.py).
    assert got.result not in (io.Result.REFUSED, io.Result.FENCED, io.Result.COMMITTED)


@pytest_asyncio.fixture
async def failing_app(pg_dsn: str) -> AsyncIterator[str]:
    """A real server on 127.0.0.1 with the service's error middleware, whose handler
    meets the condition named in the path from the real PostgreSQL."""

    async def handler(request: web.Request) -> web.Response:
        raise await raised_by_postgres(pg_dsn, request.match_info["condition"])

    app = web.Application(middlewares=[errors])
    app.router.add_post("/fail/{condition}", handler)
    app.router.add_get("/fail/{condition}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@pytest.mark.parametrize("condition", sorted(CONDITIONS))
async def test_a_rest_call_that_meets_a_full_disk_is_answered_503(failing_app: str, condition: str) -> None:
    """A read: ``unavailable``, nothing was changed.  A write the middleware cannot
    place (its handler's earlier statements may have committed): ``outcome_unknown``,
    never a promise that nothing was stored (service.once's commands say which)."""
    async with aiohttp.ClientSession() as s:
        for method, code in (("GET", "unavailable"), ("POST", "outcome_unknown")):
            async with s.request(method, f"{failing_app}/fail/{condition}") as r:
                body = await r.json()
            assert r.status == 503, body
            assert body["error"]["code"] == code, (method, body)
            assert ("nothing was changed" in body["error"]["message"]) == (method == "GET"), body
