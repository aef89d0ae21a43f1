"""WebSocket handshakes wait for a slow database instead of failing (issue 20, item 5).

Starved of CPU, a server answered handshakes ``503`` as soon as no pooled connection
came within the pool's acquire timeout.  Here every pooled connection of a real
server is held for longer than that timeout: a handshake waits and is served once a
connection is free; one handshake beyond the queue is answered ``503 busy`` at once,
with ``Retry-After``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from service.appkeys import HANDSHAKES, POOL
from service.db import ACQUIRE_TIMEOUT, MAIN_POOL_SIZE
from service.middleware import RETRY_AFTER_SECONDS
from tests.conftest import Api, server_of_its_own, wait_for
from tests.wsclient import Client


@pytest.mark.timeout(120)
async def test_a_handshake_waits_out_a_busy_pool_and_one_beyond_the_queue_is_told_when_to_retry(
    pg_dsn: str, tmp_path: Path
) -> None:
    async with server_of_its_own(pg_dsn, tmp_path / "data", "hs") as running, aiohttp.ClientSession() as s:
        api = Api(running.url, s)
        p = await api.player("waiter")
        pool = running.app[POOL]
        queue = running.app[HANDSHAKES]
        queue.limit = 1
        held = [await pool.acquire() for _ in range(MAIN_POOL_SIZE)]  # every connection of the main pool, as under load
        try:
            waiting = asyncio.create_task(Client(running.url, p["token"]).__aenter__())
            await wait_for(lambda: queue.waiting == 1)
            async with s.get(running.url + "/ws", headers={"Authorization": f"Bearer {p['token']}"}) as r:
                assert r.status == 503
                assert r.headers["Retry-After"] == str(RETRY_AFTER_SECONDS)
                assert (await r.json())["error"]["code"] == "busy"
            await asyncio.sleep(ACQUIRE_TIMEOUT + 1)  # past the pool's own timeout: it once answered 503 here
            assert not waiting.done()
        finally:
            for conn in held:
                await pool.release(conn)
        client = await waiting
        try:
            await wait_for(lambda: any(f.get("type") == "hello" for f in client.frames))
            assert [f["player_id"] for f in client.frames if f.get("type") == "hello"] == [p["id"]]
        finally:
            await client.__aexit__(None, None, None)
        assert queue.waiting == 0
