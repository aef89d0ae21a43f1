"""A node that stands still (SIGSTOP, a hung host, a path cut without a reset) keeps
its clients' sockets open and says nothing, while another node takes its tables once
their leases run out and runs their clocks.

Before, nothing on the client's side ever noticed: the table page waited on the silent
socket for ever, and a bot's heartbeat gave it up only after 30 s, then knocked at
the same silent node again, whose handshake never answered.  The new owner's clock
charged them both, after the reach D37 gives a player, for the house's fault.  Now
both hear whether the server lives (a ``ping``, and ``waiting`` while a table is slow:
docs/api.md, "Silence"), give a silent socket or handshake up, and ask the next node
they know: here the page its own server, the bot the node ``hello`` named.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import pytest
from playwright.async_api import Browser

from service.app import TABLES
from service.bots import Bot
from service.cluster import NodeSettings
from service.keys import SEED_KEY_FILE, SIGNING_KEY_FILE
from service.startup import Running, start_server
from service.tablecore.phase import HandPhase
from tests.conftest import OPERATOR, Api, fresh_database, wait_for
from tests.pgproxy import PgProxy
from tests.tcpfreeze import FreezeProxy
from tests.test_cli_errors import free_port
from tests.test_handover import FAST, node
from tests.test_web_table import at_the_table, conn, new_person, person_page, start_bots, stop_bots


def connected_at(server: Running, table: str, player_id: str) -> bool:
    actor = server.app[TABLES].get(table)
    return actor is not None and player_id in actor.watchers.by_player


@pytest.mark.timeout(240)
async def test_the_page_and_a_bot_leave_a_node_that_stands_still_for_the_tables_new_owner(
    pg_dsn: str, tmp_path: Path, browser: Browser
) -> None:
    tasks: list[asyncio.Task[None]] = []
    async with fresh_database(pg_dsn, "frozen") as dsn:
        sock_dir = tempfile.mkdtemp(prefix="pgp-", dir="/tmp")
        pg = await PgProxy(pg_dsn, sock_dir).start()
        port = free_port()
        front = await FreezeProxy(port).start()  # node a as its clients reach it
        a = b = None
        try:
            a = await start_server(
                host="127.0.0.1",
                port=port,
                data_dir=tmp_path / "a",
                database_url=pg.dsn(urlsplit(dsn).path.lstrip("/")),
                operator_token=OPERATOR,
                settings=FAST,
                node=NodeSettings(
                    node_id="a",
                    public_url=front.url,
                    cluster=True,
                    shared=True,
                    lease_seconds=3.0,
                    heartbeat_seconds=0.5,
                ),
            )
            (tmp_path / "b").mkdir()
            for f in (SIGNING_KEY_FILE, SEED_KEY_FILE):  # one card room: the same keys
                shutil.copy2(tmp_path / "a" / f, tmp_path / "b" / f)
            b = await node(dsn, tmp_path / "b", "b")
            async with aiohttp.ClientSession() as session:
                api = Api(a.url, session)
                # a turn longer than the test: no clock is due anywhere, only reconnections count
                table = await api.table(seats=4, point_value=1, turn_seconds=120)
                assert table in a.app[TABLES]
                person = await new_person(api, "Ines")
                p = await api.player("bot")
            bot = Bot(front.url, p["token"], table, key=p["signer"], fast=True, drops=False, think=0.5)
            bot.keep_frames = True
            async with person_page(browser) as (_context, page, _console):
                # the page is node b's; its socket is sent on to the table's owner, node a
                await at_the_table(page, b.url, person, table)
                await page.locator("#seats button.sit-here").first.click()
                tasks = start_bots([bot])

                def playing() -> bool:
                    act = a.app[TABLES].get(table)
                    return act is not None and act.hand is not None and act.hand.phase is HandPhase.PLAY

                await wait_for(playing, timeout=60)
                assert connected_at(a, table, person["id"]) and connected_at(a, table, p["id"])
                assert bot.others == [b.url]  # hello named node b
                mark = len(bot.frames)
                front.freeze()  # node a stands still for its clients...
                pg.hang()  # ...and for PostgreSQL: it loses its leases, node b takes the table
                await wait_for(lambda: table in b.app[TABLES], timeout=60)
                # both find it there, though node a never told them anything
                await wait_for(lambda: connected_at(b, table, person["id"]), timeout=60)
                await wait_for(lambda: connected_at(b, table, p["id"]), timeout=60)
                assert [f["type"] for f in bot.frames[mark:] if f.get("type") in ("moved", "shutdown")] == []
                assert bot.server == b.url
                assert await page.evaluate("RummyTable.state.t.sock.gaveUp") >= 1
                await page.wait_for_function(conn("open"), timeout=30_000)
                # the hand goes on at node b with both seats in it
                actor = b.app[TABLES][table]
                assert actor.hand is not None and actor.hand.phase is HandPhase.PLAY
        finally:
            await stop_bots(tasks)
            pg.let_go()
            for n in (b, a):
                if n is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(n.stop(), 30)
            await front.stop()
            await pg.stop()
            shutil.rmtree(sock_dir, ignore_errors=True)


async def test_the_page_asks_a_quiet_server_and_keeps_its_socket(server: Running, api: Api, browser: Browser) -> None:
    """A table where nothing happens says nothing for minutes: the page asks (a ``ping``
    when it has heard nothing for 5 s), is answered, and keeps its socket."""
    table = await api.table(seats=4)
    person = await new_person(api, "Quinn")
    async with person_page(browser) as (_context, page, _console):
        await at_the_table(page, server.url, person, table)
        await page.wait_for_function("() => RummyTable.state.t.sock.pings >= 3", timeout=60_000)
        sock = await page.evaluate("({gaveUp: RummyTable.state.t.sock.gaveUp, n: RummyTable.state.t.sock.connections})")
        assert sock == {"gaveUp": 0, "n": 1}, sock
        assert connected_at(server, table, person["id"])
        assert await page.evaluate("RummyTable.state.t.conn") == "open"
