"""The server's WebSocket response (service/wsocket.py): aiohttp's heartbeat, unchanged,
without building a 1.5 KB ``__dict__`` on every socket at its first ping — over real
sockets on 127.0.0.1, the ping driven by a client that answers it by hand."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from aiohttp import WSMsgType, web

from service.wsocket import HEARTBEAT_ATTRIBUTES, TableSocket

Made = type[web.WebSocketResponse]


def built_dict(request: web.Request) -> dict[str, Any] | None:
    """The socket's own ``__dict__`` if the interpreter has built one (found among the
    objects the collector tracks, without touching the socket's ``__dict__``)."""
    for d in gc.get_objects():
        if type(d) is dict and "_payload_writer" in d and d.get("_req") is request:
            return d
    return None


@asynccontextmanager
async def serving(make: Made, heartbeat: float, pong_wait: float | None = None) -> AsyncIterator[tuple[str, list[Any]]]:
    """A server of one socket; ``pong_wait``: how long it waits for a pong (aiohttp's
    own is half the heartbeat), long where the test must not race the clock."""
    seen: list[Any] = []  # [request, socket, its dict after the first pong]

    async def handler(request: web.Request) -> web.StreamResponse:
        ws = make(heartbeat=heartbeat, compress=False)
        if pong_wait is not None:
            ws._pong_heartbeat = pong_wait  # set in __init__ already: no attribute is added
        await ws.prepare(request)
        seen[:] = [request, ws]
        async for msg in ws:
            if msg.type == WSMsgType.TEXT and msg.data == "look":
                seen.append(built_dict(request))
                await ws.send_str("looked")
        return ws

    app = web.Application()
    app.router.add_get("/", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}/", seen
    finally:
        await runner.cleanup()


@pytest.mark.parametrize("make", [TableSocket, web.WebSocketResponse], ids=["ours", "aiohttp's"])
async def test_a_ping_answered_keeps_the_socket_open_and_ours_builds_no_dict(make: Made) -> None:
    # pings every 0.05 s of silence, but the pong may take an hour: a busy machine that
    # holds this process longer than aiohttp's 25 ms cannot close the socket under the test
    async with serving(make, heartbeat=0.05, pong_wait=3600) as (url, seen), aiohttp.ClientSession() as session:
        async with session.ws_connect(url, autoping=False) as client:
            msg = await asyncio.wait_for(client.receive(), 30)
            assert msg.type == WSMsgType.PING  # the server's heartbeat
            await client.pong(msg.data)
            await client.send_str("look")
            while (msg := await asyncio.wait_for(client.receive(), 30)).type == WSMsgType.PING:
                await client.pong(msg.data)
            assert msg.type == WSMsgType.TEXT and msg.data == "looked"
            request, ws, after = seen
            assert isinstance(ws, make) and not ws.closed
            assert ws._heartbeat_when > 0  # the heartbeat ran on the socket's own state
            if make is TableSocket:
                assert after is None, sorted(after or ())
                assert not set(HEARTBEAT_ATTRIBUTES) & set(after or ())
            else:  # what the slots are for: aiohttp's own socket has grown a dict
                assert after is not None and set(HEARTBEAT_ATTRIBUTES) <= set(after)


async def test_a_ping_never_answered_closes_our_socket() -> None:
    async with serving(TableSocket, heartbeat=0.05) as (url, seen), aiohttp.ClientSession() as session:
        async with session.ws_connect(url, autoping=False) as client:
            kinds = []
            while (msg := await asyncio.wait_for(client.receive(), 30)).type == WSMsgType.PING:
                kinds.append(msg.type)  # never answered
            assert kinds and msg.type in (WSMsgType.CLOSE, WSMsgType.CLOSED, WSMsgType.CLOSING)
        assert seen[1].closed
