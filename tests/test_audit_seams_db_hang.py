"""Audit of the seams (helper h62): a database that hangs before the table has noticed.

The scenario (a server alone, its one PostgreSQL behind a proxy; the tables' clock
skipped, never slept through):

1. a hand is dealt to two players; the player on turn drops its socket (its own
   doing: a page reload, a phone changing networks) and at once opens a new one;
2. PostgreSQL hangs just before that new socket's handshake: the handshake needs the
   database (the player's token is looked up), so the player cannot reach the table
   however hard it tries. The table itself has no write in flight, so it has not
   noticed anything;
3. the turn's deadline falls inside the hang: the clock moves for the absent seat (a
   ``timeout`` write), that write hangs, and only then does the table call the
   database hung (D37, ``write_hung_seconds``) and tell ``paused``;
4. PostgreSQL answers again: the hung write commits, the timeout stands, and with
   ``max_missed_turns`` 1 the seat is dropped (D16) and pays for the hand (D15, D22).

The rule: D37, "The house is at fault while a table cannot store (its database
unreachable, refusing writes, or hung …). Then no clock runs: no turn times out",
and a seat's grace "counts from the moment that seat could reach the table's owner
again: … from its reconnection for one who comes back later". The table could not
store from the moment PostgreSQL hung, and the player could not reach it (its
reconnection was held by the same database). The house's own test of a lost
database (tests/test_recovery.py,
``test_a_lost_database_pauses_the_table_and_nothing_is_half_applied``) counts the
fault from the moment PostgreSQL went, not from the moment the table noticed.

The same scenario with PostgreSQL *away* (connections refused) charges nobody: the
clock's write fails, the table reloads when the database is back, and the absent
seat gets its reach and grace from there (D37). That case is run here too, and
passes. Only the *hang* charges the seat: the clock's decision was taken before the
table knew, and the write that carries it is stored when the database wakes up.

What the player loses: a turn played by the clock (the card it drew is thrown away)
and, when that timeout is the ``max_missed_turns``-th, the hand itself: a clock
drop (here 20 points × point value 2: 40 HT to the other seat, the hand settled at
once as the last one standing, D14) and the seat stood up (D31).

The same seam in the seed phases needs no setting at all: a player who committed
and whose socket dropped before it revealed is recorded ``withheld`` when the reveal
window closes inside the hang, sits the hand out and pays a first drop (D29: 20
points × point value; 40 HT in the second test, at the table's defaults).

Fixed (``service.tablecore.steps.Steps.fire``): a seat with no connection is charged
only once the store has answered since its deadline; the clock first writes nothing
(``io.ProbeOp``), and a probe that hangs pauses the table like any hung write, the
seat getting its reach and grace once the store answers (D37).  Both cases now pass
with the database hung as with it away.

Run here on a server alone; tests/test_audit_seams_db_hang_shapes.py runs both cases
on ``serve --workers 2`` and on a node of a cluster (real processes, real clock):
without the fix each was charged the same way (on the node the hung write committed
after ``Cluster.expire`` had let the table go: nobody had taken the lease meanwhile),
and with it none is.
"""

from __future__ import annotations

import json
import time
from typing import Any

import aiohttp
import pytest

from service import ledger
from service.app import POOL, TABLES
from service.startup import Running
from service.table import TableActor
from tests.conftest import Api, wait_for
from tests.pgproxy import PgProxy
from tests.seams import Sockets, hang_ends, to_the_reveal
from tests.skipclock import SkipClock, skip_clock
from tests.test_recovery import proxied  # noqa: F401 (the fixture)
from tests.test_server import by_turn, seat_of, seat_two, seated, through_seeds
from tests.wsclient import Client

TURN = 6  # seconds: the table's turn_seconds


async def stored_records(server: Running, table: str, hand_no: int) -> list[dict[str, Any]]:
    async with server.app[POOL].acquire() as conn:
        rows = await conn.fetch(
            "SELECT r.record FROM hand_records r JOIN hands h ON h.id = r.hand_id "
            "WHERE h.table_id = $1 AND h.hand_no = $2 ORDER BY r.i",
            table,
            hand_no,
        )
    return [json.loads(r["record"]) if isinstance(r["record"], str) else r["record"] for r in rows]


async def clock_moves(server: Running, table: str, hand_no: int) -> list[dict[str, Any]]:
    """The hand's stored records in which the clock moved for a seat (timeouts)."""
    records = await stored_records(server, table, hand_no)
    return [r for r in records if r.get("type") == "action" and r["action"]["kind"] == "timeout"]


def fault_begins(proxy: PgProxy, fault: str) -> None:
    if fault == "hang":
        proxy.hang()
    else:
        proxy.refuse = True
        proxy.cut()


async def try_to_come_back(sockets: Sockets, fault: str, base: str, player: dict[str, Any]) -> None:
    """The player opens a new socket at once: held while PostgreSQL hangs (its token's
    lookup waits; ``sockets.through()`` once it has answered), refused while it is away."""
    if fault == "hang":
        reconnect = await sockets.held_by_the_hang(base, player)
        assert not reconnect.done()
        return
    with pytest.raises(aiohttp.WSServerHandshakeError):
        await Client(base, player["token"], player["signer"]).__aenter__()


async def fault_ends(proxy: PgProxy, fault: str, clock: SkipClock, server: Running, other: Client) -> None:
    """PostgreSQL answers again; the table says ``resumed``."""
    if fault == "hang":
        await hang_ends(proxy, other)
        return
    proxy.refuse = False
    await clock.skip(  # the table tries the store again when its clock says so
        server.app[TABLES].values(),
        30,
        until=lambda: any(f.get("type") == "resumed" for f in other.frames),
        store_answers=False,
    )
    await other.wait_frame(lambda f: f.get("type") == "resumed", timeout=30)


async def dropped(server: Running, table: str, left: Client) -> TableActor:
    """``left``'s socket drops (its own doing), and the table hears it with no write in
    flight: it has noticed nothing.  The table's actor."""
    actor: TableActor = server.app[TABLES][table]
    await left.__aexit__(None, None, None)
    await wait_for(lambda: left.player_id not in actor.core.reach.connected, timeout=30)
    assert actor.core.pending is None, "no write in flight: the table has noticed nothing"
    return actor


async def dealt_to_two(
    server: Running, session: aiohttp.ClientSession, sockets: Sockets
) -> tuple[str, int, Client, Client, dict[str, Any]]:
    """Ann and bo, connected and seated at a new table (turns of ``TURN`` s, a seat
    dropped at its first missed turn), through the seed phases of its first hand: the
    table, the hand's number, the socket of the player on turn, the other socket, and
    the player on turn."""
    table, a, b = await seat_two(Api(server.url, session), server, turn_seconds=TURN, max_missed_turns=1)
    ca, cb = await sockets.open(server.url, a), await sockets.open(server.url, b)
    hand_no = await through_seeds(table, ca, cb)
    mover, other = by_turn(ca, cb)
    return table, hand_no, mover, other, (a if mover is ca else b)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("fault", ["away", "hang"])
async def test_a_player_who_cannot_reconnect_while_the_database_hangs_is_not_charged_by_the_clock(
    proxied: tuple[Running, PgProxy],  # noqa: F811
    fault: str,
) -> None:
    server, proxy = proxied
    clock = skip_clock(server)
    async with aiohttp.ClientSession() as session, Sockets(proxy) as sockets:
        table, hand_no, mover, other, player = await dealt_to_two(server, session, sockets)
        # from here the tables' time is only what the test skips
        clock.still = time.time()
        # 1. the player on turn drops its socket, and the table hears it
        await dropped(server, table, mover)
        # 2. PostgreSQL hangs (or goes away); the player's new socket cannot get through
        fault_begins(proxy, fault)
        began = clock()
        await try_to_come_back(sockets, fault, server.url, player)
        # 3. the turn's deadline passes inside the fault
        await clock.skip(server.app[TABLES].values(), TURN + 4, store_answers=False)
        await other.wait_frame(lambda f: f.get("type") == "paused", timeout=30)
        # 4. PostgreSQL answers again
        ended = clock()
        await fault_ends(proxy, fault, clock, server, other)
        if sockets.held is not None:
            await sockets.through()
        else:
            await sockets.open(server.url, player)
        charged = [r for r in await clock_moves(server, table, hand_no) if r["action"]["seat"] == seat_of(mover)]
        inside = [r for r in charged if began * 1000 <= r["t"] <= ended * 1000]
        assert inside == [], (
            f"the seat on turn was charged by the clock while the database was {fault} "
            f"(and its player's reconnection with it): {inside}"
        )


@pytest.mark.timeout(300)
@pytest.mark.parametrize("fault", ["away", "hang"])
async def test_a_player_who_cannot_reconnect_while_the_database_hangs_is_not_charged_a_withheld_reveal(
    proxied: tuple[Running, PgProxy],  # noqa: F811
    fault: str,
) -> None:
    """The same seam in the seed phases, at the table's defaults (``max_missed_turns``
    3): a player commits its seed, its socket drops, and the reveal window closes
    inside a hang while its new socket waits on the database. Its reveal is recorded
    withheld: it sits the hand out and pays a first drop (D29: 20 points × point
    value), the other seat winning at once (D14). The same with the database away
    charges nothing (the absent seat keeps its reach and grace, D37)."""
    server, proxy = proxied
    clock = skip_clock(server)
    async with aiohttp.ClientSession() as session, Sockets(proxy) as sockets:
        table, a, b = await seat_two(Api(server.url, session), server)
        ca, cb = await sockets.open(server.url, a), await sockets.open(server.url, b)
        await seated(table, ca, cb)
        hand_no, _seeds, _frame = await to_the_reveal(ca, cb)
        clock.still = time.time()  # from here the tables' time is only what the test skips
        async with server.app[POOL].acquire() as conn:
            before = await ledger.balance(conn, b["id"])
        # bo has committed; its socket drops before it reveals, and it tries to come back
        await dropped(server, table, cb)
        fault_begins(proxy, fault)
        await try_to_come_back(sockets, fault, server.url, b)
        # the reveal window (2 s, the fixture's) closes inside the fault
        await clock.skip(server.app[TABLES].values(), 2 + 4, store_answers=False)
        await ca.wait_frame(lambda f: f.get("type") == "paused", timeout=30)
        await fault_ends(proxy, fault, clock, server, ca)
        if sockets.held is not None:
            await sockets.through()
        reveals = [r for r in await stored_records(server, table, hand_no) if "reveals" in r]
        withheld = [x for r in reveals for x in r["reveals"] if x["status"] == "withheld"]
        if withheld:  # then the hand ends at once (D14): what bo paid, once it is settled
            await ca.wait_frame(lambda f: f.get("type") == "result", timeout=30)
        async with server.app[POOL].acquire() as conn:
            after = await ledger.balance(conn, b["id"])
        paid = before.available + before.held - after.available - after.held
        assert withheld == [] and paid == 0, (
            f"bo's reveal was recorded withheld while the database was {fault}: {withheld}; bo paid {paid} HT"
        )
