"""Every open table has an owner (issue 18, "tables owned by nobody"): two nodes in
this process on one database of their own, as two workers of ``serve --workers`` are.

The share a node takes counted the closed tables it still held: a node holding closed
tables gave open ones away, and the other, counting its own closed tables, thought
itself full and did not take them — the tables answered 503 "between servers" for
good.  A table that every node leaves alone is taken after two lease periods."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import asyncpg

from service.app import CONFIG, TABLES
from service.appkeys import CLUSTER
from tests.conftest import OPERATOR, Api, wait_for
from tests.test_handover import TwoNodes, two_nodes

# The test's own connections wait a bounded time for an answer: a statement held up
# (a lock never let go) fails with TimeoutError where it waited, not as a test that
# hangs until pytest-timeout stops it with no word of where.
LOOK_SECONDS = 10.0


async def owners(dsn: str) -> dict[str, tuple[str | None, str]]:
    """table id -> (its live owner or None, its status)."""
    conn = await asyncpg.connect(dsn, timeout=LOOK_SECONDS, command_timeout=LOOK_SECONDS)
    try:
        rows = await conn.fetch(
            "SELECT t.id, t.status, CASE WHEN l.expires_at > now() THEN l.owner END AS owner "
            "FROM tables t JOIN table_leases l ON l.table_id = t.id"
        )
    finally:
        await conn.close()
    return {r["id"]: (r["owner"], r["status"]) for r in rows}


async def unowned_open(dsn: str) -> list[str]:
    return sorted(t for t, (owner, status) in (await owners(dsn)).items() if status != "closed" and owner is None)


def beats(n: TwoNodes) -> tuple[int, int]:
    """The heartbeats each node has completed."""
    return n.a.app[CLUSTER].beats, n.b.app[CLUSTER].beats


async def close(session: aiohttp.ClientSession, n: TwoNodes, table: str) -> None:
    """Closed through the node that serves it (no seat, so closed at once)."""
    url = n.a.url if table in n.a.app[TABLES] else n.b.url
    async with session.post(f"{url}/api/tables/{table}/close", headers={"Authorization": f"Bearer {OPERATOR}"}) as r:
        assert r.status == 200 and (await r.json())["status"] == "closed", await r.text()


async def test_closed_tables_are_out_of_the_share_and_every_open_table_keeps_an_owner(
    pg_dsn: str, tmp_path: Path
) -> None:
    async with two_nodes(pg_dsn, tmp_path, "own") as n, aiohttp.ClientSession() as session:
        dsn = n.a.app[CONFIG].dsn
        api = Api(n.a.url, session)
        tables = [await api.table(seats=4) for _ in range(6)]
        # a made all six and hands the three lowest over to b, which is below its share.
        await wait_for(lambda: len(n.a.app[TABLES]) == 3 and len(n.b.app[TABLES]) == 3, timeout=60)
        on_a = sorted(t for t in tables if t in n.a.app[TABLES])
        on_b = sorted(t for t in tables if t in n.b.app[TABLES])
        # Close a's last table and b's last two: three open tables remain, a share of two.
        # Counting its closed table, a held one too many and gave its first (open) table
        # away; b, holding two closed tables, thought itself full and left it.
        for t in (on_a[-1], *on_b[-2:]):
            await close(session, n, t)
        open_tables = {on_a[0], on_a[1], on_b[0]}
        deadline = asyncio.get_running_loop().time() + 60
        since = beats(n)
        while min(b - s for b, s in zip(beats(n), since, strict=True)) < 3:
            # every open table owned at every look over three heartbeats of each node, in a row
            assert asyncio.get_running_loop().time() < deadline, await owners(dsn)
            now = await owners(dsn)
            assert {t for t, (_, status) in now.items() if status != "closed"} == open_tables
            if await unowned_open(dsn):
                since = beats(n)
            await asyncio.sleep(0.25)
        served = set(n.a.app[TABLES]) | set(n.b.app[TABLES])
        assert open_tables <= served


@contextlib.asynccontextmanager
async def ghost(dsn: str) -> AsyncIterator[None]:
    """A node row that beats and never takes a table (as a node stuck after its beat)."""
    conn = await asyncpg.connect(dsn, timeout=LOOK_SECONDS, command_timeout=LOOK_SECONDS)
    await conn.execute("INSERT INTO nodes (node_id, public_url) VALUES ('ghost', 'http://127.0.0.1:9')")

    async def beat() -> None:
        while True:
            await conn.execute("UPDATE nodes SET seen_at = now() WHERE node_id = 'ghost'")
            await asyncio.sleep(0.3)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await conn.close(timeout=LOOK_SECONDS)


async def test_a_table_every_node_leaves_alone_is_taken(pg_dsn: str, tmp_path: Path) -> None:
    """Three live nodes by their rows, one of which takes nothing: a and b take a share
    of one table each, and the third table is left to the ghost; after two lease
    periods (3 s each here) a live node takes it beyond its share."""
    async with two_nodes(pg_dsn, tmp_path, "stray") as n, aiohttp.ClientSession() as session:
        dsn = n.a.app[CONFIG].dsn
        api = Api(n.a.url, session)
        async with ghost(dsn):
            for _ in range(3):
                await api.table(seats=4)
            # a gives two away (b and the ghost are below a share of one): b takes one, the
            # ghost none, and that table is left free ...
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 60
            while not (free := await unowned_open(dsn)):
                assert loop.time() < deadline, await owners(dsn)
                await asyncio.sleep(0.1)
            # ... until a live node takes it beyond its share ...
            deadline = loop.time() + 60
            while (await owners(dsn))[free[0]][0] not in ("a", "b"):
                assert loop.time() < deadline, await owners(dsn)
                await asyncio.sleep(0.2)
            # ... and keeps it: not handed to the ghost again (below its share, it takes
            # nothing), which left the table without an owner for two lease periods
            # after every hand-over, its players paused each time.  Watched for three
            # lease periods, at every look.
            # (and at least three heartbeats of each node: each could have handed it over)
            until, since = loop.time() + 3 * n.a.app[CONFIG].node.lease_seconds, beats(n)
            while loop.time() < until or min(b - s for b, s in zip(beats(n), since, strict=True)) < 3:
                assert loop.time() < deadline + 60, (beats(n), since)
                now = await owners(dsn)
                assert now[free[0]][0] in ("a", "b"), now
                await asyncio.sleep(0.1)
