"""The table's sockets are never compressed (service/api_ws.py).

Browsers offer permessage-deflate on every WebSocket, and aiohttp takes it up by
default.  One deflate context per socket would hold a seat's hidden cards beside what
other players choose (their discards, their names): the compressed length of a push
could tell someone watching the encrypted traffic about the hand (the CRIME/BREACH
kind of side channel), and each context costs 200-260 KB of zlib state per connection.
Here a client that offers it, and real Chromium, get a plain socket; Chromium's offer
is shown to be there by a server that takes it (the control)."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from aiohttp import web
from playwright.async_api import Browser

from service.auth import WS_PROTOCOL
from service.startup import Running
from tests.conftest import Api

OPEN_SOCKET = """([url, protocols]) => new Promise((ok, fail) => {
    const ws = new WebSocket(url, protocols);
    ws.onopen = () => { ok(ws.extensions); ws.close(); };
    ws.onerror = () => fail(new Error("the socket did not open: " + url));
})"""


def ws_url(base: str) -> str:
    return base.replace("http://", "ws://", 1) + "/ws"


async def test_a_client_offering_deflate_gets_a_plain_socket(server: Running, api: Api) -> None:
    p = await api.player("deflater")
    async with (
        aiohttp.ClientSession() as s,
        s.ws_connect(
            ws_url(server.url), headers={"Authorization": f"Bearer {p['token']}"}, protocols=(WS_PROTOCOL,), compress=15
        ) as ws,
    ):
        assert ws.compress == 0
        hello = await ws.receive_json(timeout=30)
        assert hello["type"] == "hello" and hello["player_id"] == p["id"]


@contextlib.asynccontextmanager
async def deflating_server() -> AsyncIterator[str]:
    """aiohttp's default WebSocket (it takes up permessage-deflate when offered)."""

    async def handler(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(protocols=(WS_PROTOCOL,))
        await ws.prepare(request)
        await ws.close()
        return ws

    app = web.Application()
    app.router.add_get("/ws", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    await web.SockSite(runner, sock).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()
        sock.close()


async def test_chromium_offers_deflate_and_the_table_socket_does_not_take_it(
    server: Running, api: Api, browser: Browser
) -> None:
    p = await api.player("chromium-deflater")
    page = await browser.new_page()
    try:
        async with (
            deflating_server() as control
        ):  # from a blank page: the card room's pages allow only their own origin
            offered: Any = await page.evaluate(OPEN_SOCKET, [ws_url(control), [WS_PROTOCOL]])
        assert "permessage-deflate" in offered  # the browser does offer it
        await page.goto(server.url + "/")
        taken: Any = await page.evaluate(OPEN_SOCKET, [ws_url(server.url), [WS_PROTOCOL, "bearer." + p["token"]]])
        assert taken == ""
    finally:
        await page.close()
