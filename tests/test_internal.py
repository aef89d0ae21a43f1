"""A command forwarded to a sibling worker (service.internal): what its answer says
when the sibling cannot be reached, takes the command and drops the connection, or
does not answer in time.  "unavailable" tells a client that nothing was done and to
send it again, so it is said only when the command never left; a command the sibling
took may have been done (a stand-up sent again would stand up whoever sat down
meanwhile).  The sibling here is a real aiohttp server on a real Unix socket."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web

from service.errors import OutcomeUnknown
from service.internal import SiblingAway, Siblings, make_internal_app
from service.startup import Running
from service.worker import WorkerPlan
from tests.conftest import Api, wait_for


def plan(run_dir: str) -> WorkerPlan:
    return WorkerPlan(
        index=1,
        count=2,
        node="n",
        public_url="http://127.0.0.1:1",
        run_dir=run_dir,
        data_dir=run_dir,
        dsn="",
        fds=(),
        supervisor=0,
    )


@pytest_asyncio.fixture
async def sibling() -> AsyncIterator[tuple[Siblings, list[str], asyncio.Event]]:
    """Worker 2's internal socket: ``/took`` takes the command (recorded) and drops the
    connection without an answer; ``/slow`` takes it and answers only when told."""
    run_dir = tempfile.mkdtemp(prefix="int-", dir="/tmp")
    took: list[str] = []
    release = asyncio.Event()

    async def drop(request: web.Request) -> web.StreamResponse:
        took.append(request.method)
        assert request.transport is not None
        request.transport.abort()  # done, and the answer lost with the connection
        return web.Response()

    async def slow(request: web.Request) -> web.Response:
        took.append(request.method)
        await release.wait()
        return web.json_response({})

    app = web.Application()
    app.router.add_route("*", "/took", drop)
    app.router.add_route("*", "/slow", slow)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.UnixSite(runner, str(plan(run_dir).sock(2)))
    await site.start()
    s = Siblings(plan(run_dir))
    try:
        yield s, took, release
    finally:
        release.set()
        await s.close()
        await runner.cleanup()
        shutil.rmtree(run_dir, ignore_errors=True)


async def test_a_command_the_sibling_took_and_did_not_answer_is_outcome_unknown(
    sibling: tuple[Siblings, list[str], asyncio.Event],
) -> None:
    s, took, _ = sibling
    with pytest.raises(OutcomeUnknown, match="may have been done"):
        await s.call(2, "POST", "/took", {"kind": "stand"})
    assert took == ["POST"]
    with pytest.raises(SiblingAway):  # a read changes nothing: unavailable, try again
        await s.call(2, "GET", "/took")


async def test_a_command_that_never_left_is_unavailable(sibling: tuple[Siblings, list[str], asyncio.Event]) -> None:
    s, took, _ = sibling
    with pytest.raises(SiblingAway, match="try again"):
        await s.call(3, "POST", "/took", {"kind": "stand"})  # worker 3 has no socket
    assert took == []


async def test_a_command_the_sibling_did_not_answer_in_time_is_a_timeout(
    sibling: tuple[Siblings, list[str], asyncio.Event],
) -> None:
    """Answered ``busy`` by the error middleware ("check before you try again"), as a
    table of this worker that does not answer in time."""
    s, took, _ = sibling
    with pytest.raises(TimeoutError):
        await s.call(2, "POST", "/slow", {"kind": "stand"}, timeout=0.3)
    # the command was sent: the sibling takes it, though perhaps only after the caller
    # gave up (a machine kept busy may run its handler after the 0.3 s)
    await wait_for(lambda: took == ["POST"])


async def test_a_command_the_sibling_reads_after_its_caller_gave_up_is_not_done(
    api: Api, server: Running, tmp_path: Path
) -> None:
    """Found by an audit: a worker stopped 45 s took a forwarded ``sit`` 9 s after the
    worker that forwarded it had told its caller ``busy`` (nothing bounded how late a
    command could be done).  A forwarded command carries the moment its caller gives
    up (``answer_by``, the host's monotonic clock); read after it, it is refused
    ``unavailable`` and nothing is done.  The internal app here serves the test
    server's tables on a real Unix socket."""
    import time

    table = await api.table()
    p = await api.player("late")
    runner = web.AppRunner(make_internal_app(server.app), access_log=None)
    await runner.setup()
    sock = tempfile.mkdtemp(prefix="int-", dir="/tmp") + "/w.sock"
    await web.UnixSite(runner, sock).start()
    try:
        async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=sock)) as s:

            async def submit(answer_by: float) -> tuple[int, dict[str, Any]]:
                body = {"kind": "sit", "player_id": p["id"], "payload": {}, "timeout": 30, "answer_by": answer_by}
                async with s.post(f"http://w/internal/tables/{table}/submit", json=body) as r:
                    return r.status, await r.json()

            async def seated() -> set[str]:
                tables = (await api.call("GET", "/api/tables"))["tables"]
                return {x["player_id"] for x in next(t for t in tables if t["id"] == table)["seated"]}

            status, late = await submit(time.monotonic() - 1)  # its caller gave up a second ago
            assert status == 503 and late["error"]["code"] == "unavailable", late
            assert "nothing was done" in late["error"]["message"]
            assert p["id"] not in await seated()
            status, done = await submit(time.monotonic() + 30)  # in time: done
            assert status == 200, done
            assert p["id"] in await seated()
    finally:
        await runner.cleanup()
        shutil.rmtree(Path(sock).parent, ignore_errors=True)
    await api.call("POST", f"/api/tables/{table}/leave", token=p["token"])
