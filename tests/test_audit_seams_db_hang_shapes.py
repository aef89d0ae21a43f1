"""Audit of the seams (helper h66): tests/test_audit_seams_db_hang.py's database hang,
run on the two shapes it did not run on, with real processes and the real clock:
``serve --workers 2`` (leases, no lease watch) and a node of a cluster (``serve
--node-id``: it gives a lease it cannot renew up on its own clock, about four seconds
into a hang at the default ``--lease-seconds 5``, ``Cluster.expire``).

The scenario: a hand is in play (or in its reveal window); the seat the clock would
charge drops its socket (its own doing) and at once opens a new one; PostgreSQL hangs
two seconds before that seat's deadline, so the new socket's handshake (its token is
looked up) waits on the same hang, while the table has no write in flight.  The
deadline passes inside the hang; once the table says ``paused`` (its probe hung,
D37) or ``moved`` (the node let the table go), PostgreSQL answers again.  The player
is then back, joins, and plays its turn (or reveals its seed): it must not have been
charged — no clock move stored with a time inside the hang, no withheld reveal — and
its move must be taken (D37: its grace counts from its return).

Both shapes pass with the fix of 4d09ffe (``Steps.fire``'s probe); without it the
clock's write hung and committed the charge when PostgreSQL woke, on every shape.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import pytest

from tests.killroom import ServerApi, proxied_database, until
from tests.pgproxy import PgProxy
from tests.seams import Sockets, to_the_reveal
from tests.test_hung_database import held
from tests.test_one_port import settled_tables
from tests.test_server import by_turn, seat_of, seated, through_seeds
from tests.workerserver import WorkerServer, worker_server
from tests.wsclient import Client

TURN = 12  # seconds: the table's turn_seconds
SEEDS = 12  # seconds: the server's --seed-seconds (each seed window)
LEAD = 2.0  # seconds: PostgreSQL hangs this long before the seat's deadline
SHAPES = ("two workers", "a node")


@dataclass
class Rig:
    server: WorkerServer
    api: ServerApi
    dsn: str  # straight to PostgreSQL, never through the proxy
    proxy: PgProxy
    table: str
    node: bool


@contextlib.asynccontextmanager
async def rig(pg_dsn: str, tmp_path: Path, shape: str, name: str, rules: dict[str, int]) -> AsyncIterator[Rig]:
    node = shape == "a node"
    async with (
        proxied_database(pg_dsn, name) as (dsn, proxy, proxied),
        worker_server(
            tmp_path / "data",
            dsn=proxied,
            extra=("--seed-seconds", str(SEEDS), *(() if node else ("--lease-seconds", "2"))),
            node="n1" if node else None,
        ) as server,
        aiohttp.ClientSession() as s,
    ):
        api = ServerApi(server, s)
        if node:
            body = {"seats": 4, "point_value": 2, **rules}
            table = (await api.call("POST", "/api/tables", body=body, expect=201))["id"]
            await until("the table is held", lambda: held(dsn, table))
        else:
            [table] = await settled_tables(s, server, 1, {"point_value": 2, **rules})
        yield Rig(server, api, dsn, proxy, table, node)


def ms(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000


async def records(dsn: str, table: str, hand_no: int) -> list[dict[str, Any]]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT r.record::text AS record FROM hand_records r JOIN hands h ON h.id = r.hand_id "
            "WHERE h.table_id = $1 AND h.hand_no = $2 ORDER BY r.i",
            table,
            hand_no,
        )
    finally:
        await conn.close()
    return [json.loads(r["record"]) for r in rows]


async def hang_before(
    r: Rig, sockets: Sockets, deadline_ms: float, player: dict[str, Any]
) -> tuple[float, asyncio.Task[Client]]:
    """PostgreSQL hangs ``LEAD`` s before ``deadline_ms`` (the server's clock is this
    machine's), and the player opens a new socket at once: held by the hang."""
    await asyncio.sleep(max(0.0, (deadline_ms / 1000 - LEAD) - time.time()))
    assert time.time() * 1000 < deadline_ms, "the test came too late: the deadline passed before the hang"
    r.proxy.hang()
    hung = time.time()
    return hung, sockets.reconnect(r.server.url, player, table=r.table)


async def house_saw_it(r: Rig, other: Client, deadline_ms: float, reconnect: asyncio.Task[Client]) -> None:
    """The deadline has passed inside the hang and the house has seen the fault: the
    table says ``paused`` (a hung write) or, on a node, ``moved`` (the lease let go).
    Meanwhile the player's new socket is still held."""
    await other.wait_frame(lambda f: f.get("type") in ("paused", "moved"), timeout=60)
    await until("the deadline passed inside the hang", lambda: _past(deadline_ms + 1000))
    if r.node:  # the node lets the table go during any hang longer than its lease
        await other.wait_frame(lambda f: f.get("type") == "moved", timeout=60)
    assert not reconnect.done(), "the player's new socket was not held by the hang"


async def _past(t_ms: float) -> bool:
    return time.time() * 1000 > t_ms


async def joined(back: Client, table: str) -> dict[str, Any] | None:
    """``join`` answered: its hand, if one is in play (a node serves the table again
    once it takes its lease back after the hang: until then a join is refused)."""
    end = time.monotonic() + 60
    while True:
        j = await back.request({"type": "join", "table_id": table}, timeout=30)
        if j["type"] == "reply":
            return None if j["result"]["hand"] is None else dict(j["result"]["hand"])
        assert time.monotonic() < end, j
        await asyncio.sleep(0.2)


async def back_after_the_hang(
    r: Rig, sockets: Sockets, watcher: Client, deadline_ms: float, player: dict[str, Any]
) -> tuple[float, float, Client, dict[str, Any] | None]:
    """The hang of the scenario: it begins ``LEAD`` s before the player's deadline as the
    player opens a new socket (``hang_before``), lasts until the house has seen the fault
    (``house_saw_it``, told to ``watcher``), and ends; the player, back, joins.  When the
    hang began and ended (this machine's clock), the player's new socket, and the hand
    its ``join`` answered (``joined``)."""
    hung, reconnect = await hang_before(r, sockets, deadline_ms, player)
    await house_saw_it(r, watcher, deadline_ms, reconnect)
    r.proxy.let_go()
    woke = time.time()
    back = await sockets.through()
    return hung, woke, back, await joined(back, r.table)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("shape", SHAPES)
async def test_an_absent_player_held_by_a_database_hang_is_not_timed_out(
    shape: str, pg_dsn: str, tmp_path: Path
) -> None:
    rules = {"turn_seconds": TURN, "max_missed_turns": 1}
    async with rig(pg_dsn, tmp_path, shape, "hangturn", rules) as r, Sockets(r.proxy) as sockets:
        a, b = await r.api.player("ann"), await r.api.player("bo")
        ca, cb = await sockets.open(r.server.url, a, table=r.table), await sockets.open(r.server.url, b, table=r.table)
        hand_no = await through_seeds(r.table, ca, cb)
        mover, other = by_turn(ca, cb)
        player, seat = (a if mover is ca else b), seat_of(mover)
        deadline = ms(next(f["deadline"] for f in reversed(mover.frames) if f.get("type") == "update"))
        await mover.__aexit__(None, None, None)  # its own doing
        hung, woke, back, hand = await back_after_the_hang(r, sockets, other, deadline, player)
        moves = [x for x in await records(r.dsn, r.table, hand_no) if x.get("type") == "action"]
        charged = [x for x in moves if x["action"]["kind"] == "timeout" and x["action"]["seat"] == seat]
        assert charged == [], (
            f"{shape}: the absent seat was timed out though the hang held its way back "
            f"(hang {hung * 1000:.0f}..{woke * 1000:.0f}): {charged}\n{r.server.text()[-2000:]}"
        )
        assert hand is not None and hand["seat"] == seat and hand["view"]["turn"] == seat, hand
        reply = await back.act(r.table, hand_no, seat, {"kind": "draw_closed"}, prev=hand["h"])
        assert reply["type"] == "reply", reply


@pytest.mark.timeout(300)
@pytest.mark.parametrize("shape", SHAPES)
async def test_an_absent_player_held_by_a_database_hang_is_not_charged_a_withheld_reveal(
    shape: str, pg_dsn: str, tmp_path: Path
) -> None:
    async with rig(pg_dsn, tmp_path, shape, "hangreveal", {}) as r, Sockets(r.proxy) as sockets:
        a, b = await r.api.player("ann"), await r.api.player("bo")
        ca, cb = await sockets.open(r.server.url, a, table=r.table), await sockets.open(r.server.url, b, table=r.table)
        await seated(r.table, ca, cb)
        hand_no, seeds, frame = await to_the_reveal(ca, cb)
        deadline = ms(frame["deadline"])
        await cb.__aexit__(None, None, None)  # bo committed; its socket drops before it reveals
        hung, woke, back, hand = await back_after_the_hang(r, sockets, ca, deadline, b)
        withheld = [
            (x["t"], s)
            for x in await records(r.dsn, r.table, hand_no)
            if "reveals" in x
            for s in x["reveals"]
            if s["status"] == "withheld"
        ]
        assert withheld == [], (
            f"{shape}: bo's reveal was recorded withheld though the hang held its way back "
            f"(hang {hung * 1000:.0f}..{woke * 1000:.0f}): {withheld}\n{r.server.text()[-2000:]}"
        )
        assert hand is not None and hand["phase"] == "reveal" and hand["revealed"] is False, hand
        reply = await back.reveal(hand["commitments"], *seeds[cb])
        assert reply["type"] == "reply", reply
