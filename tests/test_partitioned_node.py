"""A node of a cluster cut off from PostgreSQL (its connections hang: a partition that
drops packets) while another node, which reaches the database, takes its tables once
their leases run out.

Found by an audit: the cut-off node never learnt that its leases had run out (its
heartbeat hung on its own connection), so it kept its players' sockets, told them
``paused`` ("no clock runs until it is back") and never ``moved``, while the new
owner's clock charged them timeouts and a clock drop (D16, D31) — they were not
connected there.  Now a node gives up, on its own clock, a lease it could not renew
in time, before another node can take it (``Cluster.expire``), and tells the
table's clients ``moved`` with the other nodes' addresses: they reach the new owner
within the reach D37 gives them, and the hand goes on with nobody charged.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import asyncpg
import pytest

from service.app import CLUSTER, TABLES
from service.bots import Bot
from service.cluster import Cluster, Lease, NodeSettings
from service.keys import SEED_KEY_FILE, SIGNING_KEY_FILE
from service.startup import Running
from service.table import Settings
from service.tablecore.phase import HandPhase
from tests.conftest import Api, fresh_database, wait_for
from tests.pgproxy import PgProxy
from tests.skipclock import SkipClock
from tests.tcpfreeze import FreezeProxy
from tests.test_handover import FAST, node
from tests.test_web_table import start_bots, stop_bots
from tests.wsclient import Client


@dataclass
class Pair:
    dsn: str
    proxy: PgProxy
    a: Running  # reaches PostgreSQL through the proxy
    b: Running  # directly
    front: FreezeProxy | None = None  # node a as its clients reach it, when asked for

    def freeze(self) -> None:
        """Node a stands still for its clients and for PostgreSQL: it loses its
        leases, and node b takes its tables."""
        assert self.front is not None
        self.front.freeze()
        self.proxy.hang()


@contextlib.asynccontextmanager
async def proxied_pair(
    pg_dsn: str,
    tmp_path: Path,
    *,
    front: bool = False,
    b_host: str = "127.0.0.1",
    a_lease: float = 3.0,
    a_beat: float = 0.5,
    settings: Settings = FAST,
) -> AsyncIterator[Pair]:
    """Nodes a and b of one card room; a reaches PostgreSQL through a proxy that can
    hang, and with ``front`` its clients reach it through one that can stand still;
    b is public on ``b_host``.  ``a_lease``, ``a_beat``: node a's lease and heartbeat."""
    async with fresh_database(pg_dsn, "partnode") as dsn:
        sock_dir = tempfile.mkdtemp(prefix="pgp-", dir="/tmp")
        proxy = await PgProxy(pg_dsn, sock_dir).start()
        fronts: list[FreezeProxy] = []

        async def in_front(port: int) -> str:
            fronts.append(await FreezeProxy(port).start())
            return fronts[0].url

        a = b = None
        try:
            db = proxy.dsn(urlsplit(dsn).path.lstrip("/"))
            a = await node(
                dsn,
                tmp_path / "a",
                "a",
                database_url=db,
                front=in_front if front else None,
                lease_seconds=a_lease,
                heartbeat_seconds=a_beat,
                settings=settings,
            )
            (tmp_path / "b").mkdir()
            for f in (SIGNING_KEY_FILE, SEED_KEY_FILE):  # one card room: the same keys
                shutil.copy2(tmp_path / "a" / f, tmp_path / "b" / f)
            b = await node(dsn, tmp_path / "b", "b", public_host=b_host, settings=settings)
            yield Pair(dsn, proxy, a, b, fronts[0] if fronts else None)
        finally:
            proxy.let_go()
            for n in (b, a):
                if n is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(n.stop(), 30)
            for f in fronts:
                await f.stop()
            await proxy.stop()
            shutil.rmtree(sock_dir, ignore_errors=True)


def playing(server: Running, table: str) -> Callable[[], bool]:
    """Whether ``server`` plays a hand at ``table`` (for :func:`wait_for`)."""

    def now() -> bool:
        act = server.app[TABLES].get(table)
        return act is not None and act.hand is not None and act.hand.phase is HandPhase.PLAY

    return now


async def table_on_a(api: Api, n: Pair, turn_seconds: int) -> str:
    """A four-seat table (1 HT a point), served by node a."""
    table = await api.table(seats=4, point_value=1, turn_seconds=turn_seconds)
    assert table in n.a.app[TABLES]
    return table


async def transcript_of(dsn: str, table: str, hand_no: int) -> dict[str, Any] | None:
    conn = await asyncpg.connect(dsn)
    try:
        text = await conn.fetchval(
            "SELECT transcript::text FROM hands WHERE table_id = $1 AND hand_no = $2", table, hand_no
        )
    finally:
        await conn.close()
    return None if text is None else json.loads(text)


@pytest.mark.timeout(240)
async def test_a_node_cut_off_from_its_database_sends_its_players_to_the_new_owner_and_nobody_is_charged(
    pg_dsn: str, tmp_path: Path
) -> None:
    """Margins (none of them time the test waits for): node a's heartbeat is 2 s (a 6 s
    lease), so it gives the table up a whole 2 s before node b can take it, and an event
    loop held up for a second on a busy machine cannot reverse the order (with a 0.5 s
    beat, half a second could); the grace a seat has at the new owner to find the table
    (D32, D37) is 15 s, so a bot reconnecting slowly on a busy machine is not charged,
    while the 5 s turn still runs out during the outage (6 s at most, from the last
    renewal) for a clock that gave no grace."""
    tasks: list[asyncio.Task[None]] = []
    wide = dataclasses.replace(FAST, resume_grace=15.0)
    async with proxied_pair(pg_dsn, tmp_path, a_lease=6.0, a_beat=2.0, settings=wide) as n:
        a, b = n.a, n.b
        try:
            async with aiohttp.ClientSession() as session:
                api = Api(a.url, session)
                table = await table_on_a(api, n, turn_seconds=5)
                bots = []
                for name in ("p1", "p2"):
                    p = await api.player(name)
                    bot = Bot(a.url, p["token"], table, key=p["signer"], fast=True, drops=False, think=1.0)
                    bot.keep_frames = True
                    bots.append(bot)
            tasks = start_bots(bots)

            await wait_for(playing(a, table), timeout=60)
            hand_no = a.app[TABLES][table].hand.hand_no
            marks = [len(x.frames) for x in bots]
            n.proxy.hang()  # node a's PostgreSQL stops answering it; node b's does not
            hung = time.time()
            # node a gives the table up on its own clock, before node b can take it
            await wait_for(lambda: table not in a.app[TABLES], timeout=30)
            assert table not in b.app[TABLES], "node b took the table before node a gave it up"
            for x, mark in zip(bots, marks, strict=True):
                # node a wrote ``moved`` before it let the table go; the bot reads it a turn of
                # the loop later (a busy run once looked in between and saw nothing yet)
                await wait_for(lambda x=x, mark=mark: any(f.get("type") == "moved" for f in x.frames[mark:]), 10)
                moved = [f for f in x.frames[mark:] if f.get("type") == "moved"]
                assert moved[0]["servers"] == [b.url], x.frames[mark:]
            await wait_for(lambda: table in b.app[TABLES], timeout=30)
            tr = None
            deadline = time.monotonic() + 120
            while tr is None and time.monotonic() < deadline:
                tr = await transcript_of(n.dsn, table, hand_no)
                await asyncio.sleep(0.5)
            assert tr is not None, "the hand did not end on node b"
            charged = [
                (r["i"], r["t"] / 1000 - hung)
                for r in tr["log"]
                if r["type"] == "action" and r["action"]["kind"] == "timeout" and r["t"] / 1000 > hung
            ]
            assert charged == [], f"clock moves after the partition (record, seconds after it): {charged}"
            assert all(x.server == b.url for x in bots)  # the players followed the table
        finally:
            await stop_bots(tasks)


async def test_expire_gives_up_exactly_the_leases_that_may_run_out_within_a_heartbeat() -> None:
    """``Cluster.expire`` on a clock given to it: a lease valid beyond the next
    heartbeat is kept; one that may run out within it is given up (its table stopped,
    the lease forgotten); the watch is only for nodes others may take tables from."""
    stopped: list[str] = []

    async def stop(table_id: str) -> None:
        stopped.append(table_id)

    settings = NodeSettings(node_id="a", cluster=True, shared=True, lease_seconds=5.0, heartbeat_seconds=1.0)
    c = Cluster(None, "", settings, lambda _: None, stop)  # type: ignore[arg-type]
    for t in ("t1", "t2", "t3"):
        c.owned[t] = Lease(t, "a", 1)
    c.valid = {"t1": 100.0, "t2": 103.0, "t3": 102.5}
    await c.expire(101.0)  # within a heartbeat (by 102.0): t1 may have run out; t2 and t3 not yet
    assert sorted(stopped) == ["t1"] and set(c.owned) == {"t2", "t3"}
    await c.expire(101.5)
    assert sorted(stopped) == ["t1", "t3"] and set(c.owned) == {"t2"} and set(c.valid) == {"t2"}
    await c.expire(101.9)
    assert sorted(stopped) == ["t1", "t3"]
    # a node that stood still gives its heartbeat half a beat to renew first
    c.stood_still_until = 103.0
    await c.expire(102.9)
    assert set(c.owned) == {"t2"}
    await c.expire(103.0)
    assert sorted(stopped) == ["t1", "t2", "t3"] and c.owned == {}


async def test_a_node_that_stood_still_renews_its_leases_instead_of_letting_its_tables_go(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by an audit: a node (``--node-id``) stopped for 4-5 s, alone in its card
    room, woke with its leases within a heartbeat of running out; its watch let every
    one go on the spot, before the heartbeat could renew them, and every client was told
    ``moved`` and reconnected — to the same node.  Now the watch sees that it woke late
    (the node stood still, not its database) and lets the heartbeat renew first.

    The node's leases are reckoned on a clock that stands still but for what the test
    skips (``NodeSettings.clock``): the stop is a skip of all but half a beat of the
    lease, and the half beat the watch then gives the heartbeat (1 s of a 2 s beat)
    does not run out however long the renewal takes on a busy machine.  The heartbeat
    is held until the watch has looked at the leases after the stop, twice: the order
    the grace is for (the watch first) is forced, not raced."""
    clock = SkipClock(wall=False)
    async with fresh_database(pg_dsn, "stood") as dsn:
        n = await node(dsn, tmp_path / "a", "a", lease_seconds=6.0, heartbeat_seconds=2.0, clock=clock)
        try:
            async with aiohttp.ClientSession() as session:
                api = Api(n.url, session)
                table = await api.table(seats=4)
                p = await api.player("p")
            cluster = n.app[CLUSTER]
            settings = cluster.node
            beat, expire = cluster.beat, cluster.expire
            go = asyncio.Event()
            go.set()
            looked = 0  # the watch's looks at the leases since the stop

            async def held_beat() -> None:
                await go.wait()
                await beat()

            async def counted_expire(now: float) -> None:
                nonlocal looked
                looked += cluster.stood_still_until > 0
                await expire(now)

            monkeypatch.setattr(cluster, "beat", held_beat)
            monkeypatch.setattr(cluster, "expire", counted_expire)
            async with Client(n.url, p["token"], p["signer"]) as c:
                assert (await c.request({"type": "join", "table_id": table}))["type"] == "reply"
                beats = cluster.beats
                await wait_for(lambda: cluster.beats > beats, timeout=30)  # a renewal just made
                go.clear()  # the next heartbeat waits
                assert cluster.stood_still_until == 0
                # the whole node stands still for all but half a beat of the lease
                clock.skipped += settings.lease_seconds - settings.heartbeat_seconds / 2
                await wait_for(lambda: looked >= 2, timeout=30)
                assert table in n.app[TABLES] and table in cluster.owned, "the watch let the lease go first"
                go.set()
                beats = cluster.beats
                await wait_for(lambda: cluster.beats >= beats + 3, timeout=30)
                assert table in n.app[TABLES] and table in cluster.owned
                assert cluster.valid[table] > clock() + settings.heartbeat_seconds  # renewed after the stop
                assert [f for f in c.frames if f.get("type") == "moved"] == []
        finally:
            await n.stop()


async def test_a_bot_learns_the_other_nodes_from_hello_and_moved_and_tries_them_in_turn() -> None:
    """A bot whose socket to its home node breaks (reset while it sent) goes to another
    node it was told of — in ``hello`` — rather than waiting on a node that may have
    lost its database; a ``moved`` that names nodes sends it to the first at once."""
    bot = Bot("http://a", "token", "t1")
    await bot.on_message({"type": "hello", "player_id": "p1", "servers": ["http://b", "http://c"]})
    assert bot.others == ["http://b", "http://c"]
    after = {}
    for at in ("http://a", "http://b", "http://c"):
        bot.server = at
        after[at] = bot._next_server()
    assert after == {"http://a": "http://b", "http://b": "http://c", "http://c": "http://a"}
    bot.server = "http://a"
    await bot.on_message({"type": "moved", "table_id": "t1", "servers": ["http://c"]})
    assert bot.server == "http://c"
    await bot.on_message({"type": "moved", "table_id": "t1", "servers": []})
    assert bot.server == "http://a"  # no node named: home, which sends it on
