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
import json
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest
from playwright.async_api import Browser

from service import bots
from service.app import TABLES
from service.bots import Bot
from service.startup import Running
from service.table import REACH_FLOOR_SECONDS, Settings
from service.tablecore.phase import HandPhase
from tests.conftest import Api, wait_for
from tests.heldbot import no_declares
from tests.test_partitioned_node import Pair, playing, proxied_pair, table_on_a
from tests.test_web_table import at_the_table, conn, new_person, person_page, sign_in, start_bots, stop_bots


def connected_at(server: Running, table: str, player_id: str) -> bool:
    actor = server.app[TABLES].get(table)
    return actor is not None and player_id in actor.watchers.by_player


def front_url(n: Pair) -> str:
    assert n.front is not None
    return n.front.url


@pytest.mark.timeout(240)
async def test_the_page_and_a_bot_leave_a_node_that_stands_still_for_the_tables_new_owner(
    pg_dsn: str, tmp_path: Path, browser: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the hand must still be in play at node b at the end: a bot's declare at its first
    # turn (about one deal in a hundred) would end it before node a stands still
    no_declares(monkeypatch)
    tasks: list[asyncio.Task[None]] = []
    async with proxied_pair(pg_dsn, tmp_path, front=True) as n:
        a, b = n.a, n.b
        try:
            async with aiohttp.ClientSession() as session:
                api = Api(a.url, session)
                # a turn longer than the test: no clock is due anywhere, only reconnections count
                table = await table_on_a(api, n, turn_seconds=120)
                person = await new_person(api, "Ines")
                p = await api.player("bot")
            bot = Bot(front_url(n), p["token"], table, key=p["signer"], fast=True, drops=False, think=0.5)
            bot.keep_frames = True
            async with person_page(browser) as (_context, page, _console):
                # the page is node b's; its socket is sent on to the table's owner, node a
                await at_the_table(page, b.url, person, table)
                await page.locator("#seats button.sit-here").first.click()
                tasks = start_bots([bot])
                await wait_for(playing(a, table), timeout=60)
                assert connected_at(a, table, person["id"]) and connected_at(a, table, p["id"])
                assert bot.others == [b.url]  # hello named node b
                mark = len(bot.frames)
                n.freeze()
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


@pytest.mark.timeout(240)
async def test_a_page_served_by_the_node_that_stands_still_reaches_a_node_on_another_host_name(
    pg_dsn: str, tmp_path: Path, browser: Browser
) -> None:
    """Found by an audit: the page's own server is node a, node b is on another host
    name (``localhost``, where the session cookie does not go), so b's handshake needs
    a ticket from a — which, standing still, gives none.  The page went round between
    a's silent handshake and b's refusal, and the clock charged its seat.  Now it
    keeps spare tickets while its own server answers."""
    async with proxied_pair(pg_dsn, tmp_path, front=True, b_host="localhost") as n:
        a, b = n.a, n.b
        b_public = f"http://localhost:{urlsplit(b.url).port}"  # where b's clients reach it
        async with aiohttp.ClientSession() as session:
            api = Api(a.url, session)
            table = await table_on_a(api, n, turn_seconds=120)
            people = [await new_person(api, name) for name in ("Ines", "Oto")]
        async with person_page(browser) as (_c1, page1, _), person_page(browser) as (_c2, page2, _):
            for page, person in ((page1, people[0]), (page2, people[1])):
                await at_the_table(page, front_url(n), person, table)  # node a's page, through the proxy
                await page.locator("#seats button.sit-here").first.click()
                await page.wait_for_function(
                    f"() => Object.values(RummyTable.state.t.seats).includes({json.dumps(person['id'])})"
                )
            await wait_for(playing(a, table), timeout=60)
            for page in (page1, page2):
                assert await page.evaluate("RummyTable.state.t.sock.servers") == [b_public]  # hello named b
                await page.wait_for_function("() => RummyTable.state.t.sock.spare.length === 2", timeout=30_000)
            n.freeze()
            await wait_for(lambda: table in b.app[TABLES], timeout=60)
            for person in people:
                await wait_for(lambda person=person: connected_at(b, table, person["id"]), timeout=60)
            for page in (page1, page2):
                await page.wait_for_function(conn("open"), timeout=30_000)
                assert await page.evaluate("RummyTable.state.t.sock.gaveUp") >= 1
            actor = b.app[TABLES][table]
            assert actor.hand is not None and actor.hand.phase is HandPhase.PLAY


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


def test_the_reach_covers_the_time_clients_take_to_hear_a_silent_node() -> None:
    """D37's reach is never shorter than the time the page and the bots take to give a
    silent socket up (an audit had a seat charged with ``--resume-grace 3``: the reach
    was the grace, 3 s, and the bots came back after 7.3 s).  Read from the page's own
    script and the bots' constants, so that slowing either fails here."""
    script = (Path(__file__).parent.parent / "service/web/table/connection.js").read_text()
    page = {k: int(re.search(rf"export const {k} = (\d+);", script).group(1)) for k in ("QUIET_MS", "ANSWER_MS")}  # type: ignore[union-attr]
    page_s = (page["QUIET_MS"] + page["ANSWER_MS"]) / 1000
    bot_s = bots.HEARTBEAT_SECONDS * 1.5  # aiohttp waits half the heartbeat for the PONG
    assert max(page_s, bot_s) + 2 <= REACH_FLOOR_SECONDS, (page_s, bot_s, REACH_FLOOR_SECONDS)
    assert Settings(resume_grace=3).core().reach_ms == REACH_FLOOR_SECONDS * 1000  # not the grace
    assert Settings(resume_grace=30).core().reach_ms == 30_000  # the grace, when longer
    assert Settings(resume_grace=3, reach_seconds=1).core().reach_ms == 1000  # set: as set


def first_join_never_answered(monkeypatch: pytest.MonkeyPatch) -> list[asyncio.Future[object]]:
    """A server that never answers the first ``join`` it is sent, says ``waiting``
    every 0.2 s meanwhile and never ``busy``: the future that join waits on, once sent."""
    from service import api_ws

    monkeypatch.setattr(api_ws, "WAITING_SECONDS", 0.2)
    monkeypatch.setattr(api_ws, "TABLE_ANSWER_SECONDS", float("inf"))  # the stuck part: never ``busy``
    held: list[asyncio.Future[object]] = []
    real = api_ws._dispatch

    async def stuck(request: object, conn: object, player: object, data: dict[str, object], *more: object) -> object:
        if data.get("type") == "join" and not held:
            held.append(asyncio.get_running_loop().create_future())  # answered by no one
            return held[0]
        return await real(request, conn, player, data, *more)  # type: ignore[arg-type]

    monkeypatch.setattr(api_ws, "_dispatch", stuck)
    return held


async def test_a_bot_gives_up_a_socket_that_keeps_its_join_waiting(
    server: Running, api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live server says ``waiting`` every 2 s while a message's table is slow and
    answers ``busy`` by 30 s (docs/api.md, "Silence").  A server that keeps a message
    waiting longer (a stuck table; or one that keeps a player talking to it while
    another node runs the player's clock) is never silent, so the heartbeat never
    fires: the bot gives such a socket up after ``WAITING_SECONDS`` and connects again.
    Here the server never answers the first join and never says ``busy``."""
    monkeypatch.setattr(bots, "WAITING_SECONDS", 1.5)
    held = first_join_never_answered(monkeypatch)
    table = await api.table(seats=4)
    p = await api.player("kept-waiting")
    bot = Bot(server.url, p["token"], table, fast=True, key=p["signer"])
    # when the bot read its first `waiting` (before it read its clock), and when it said
    # it gave the socket up (after it read its clock): a count of `waiting`s (>= 5, one
    # every 0.2 s) was short whenever this process stood still a moment in the 1.5 s
    first_waiting: list[float] = []
    gave_up: list[float] = []
    read = bot.on_message

    async def on_message(m: dict[str, Any]) -> None:
        if m.get("type") == "waiting" and not first_waiting:
            first_waiting.append(time.monotonic())
        await read(m)

    info = bots.log.info

    def noted(msg: str, *args: Any, **kw: Any) -> None:
        if "still waiting" in msg:
            gave_up.append(time.monotonic())
        info(msg, *args, **kw)

    bot.on_message = on_message  # type: ignore[method-assign]
    monkeypatch.setattr(bots.log, "info", noted)
    task = asyncio.create_task(bot.run())
    try:
        await wait_for(lambda: bot.connections >= 2 and bot.seat is not None, timeout=60)
        assert held and not held[0].done()
        assert bot.told["waiting"] >= 2 and first_waiting and gave_up, (bot.told, gave_up)
        # given up at a `waiting` after 1.5 s of them (a lower bound: a busy machine only adds)
        assert gave_up[0] - first_waiting[0] >= bots.WAITING_SECONDS, (first_waiting, gave_up)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_the_page_gives_up_a_socket_that_keeps_its_join_waiting(
    server: Running, api: Api, browser: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table page, as the bot above: a join still ``waiting`` after ``WAITING_MS``
    (40 s of the page's clock) gives the socket up, and the next one joins.  The
    page's clock runs 2 s at a time, each step followed by real time until the page
    has heard the server say ``waiting`` (every 0.2 s here), so the page never goes
    quiet."""
    held = first_join_never_answered(monkeypatch)
    table = await api.table(seats=4)
    person = await new_person(api, "Wen")
    async with person_page(browser) as (_context, page, _console):
        await page.clock.install()
        await sign_in(page, server.url, person["token"], person["name"])
        await page.goto(server.url + f"/#/table/{table}")
        await page.wait_for_function("() => RummyTable.state.t.sock.waited.size === 1", timeout=30_000)
        for _ in range(22):
            await page.clock.run_for(2_000)
            # the step's real time: until the page has heard the server (its `waiting`)
            # since its clock moved, or has given the socket up -- never a fixed moment,
            # which a slow server could let pass in silence (then a ping, and pings != 0)
            moved_to = await page.evaluate("Date.now()")
            await page.wait_for_function(
                "(t) => { const s = RummyTable.state.t.sock; return s.gaveUp >= 1 || s.heard >= t; }",
                arg=moved_to,
                timeout=30_000,
            )
            if await page.evaluate("RummyTable.state.t.sock.gaveUp") >= 1:
                break
        assert await page.evaluate("RummyTable.state.t.sock.gaveUp") == 1
        assert await page.evaluate("RummyTable.state.t.sock.pings") == 0  # never quiet: not taken for silence
        await page.wait_for_function(conn("open"), timeout=30_000)
        await wait_for(lambda: connected_at(server, table, person["id"]), timeout=30)
        assert held and not held[0].done()


def test_the_clients_wait_longer_than_the_server_takes_to_say_busy() -> None:
    """The page and the bots give a waiting message up only after the server's own
    bound for answering it (``busy``), with slack: an honest slow table is never taken
    for a stuck one.  Read from the page's script and the constants."""
    from service import api_ws

    script = (Path(__file__).parent.parent / "service/web/table/connection.js").read_text()
    m = re.search(r"export const WAITING_MS = (\d+);", script)
    assert m is not None
    for cap in (int(m.group(1)) / 1000, bots.WAITING_SECONDS):
        assert cap >= api_ws.TABLE_ANSWER_SECONDS + 2 * api_ws.WAITING_SECONDS, cap
