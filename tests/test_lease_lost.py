"""A table whose lease is lost (issue 17): its node tells every client ``moved`` and
closes its socket, exactly as when a write of the table is fenced, so clients go and
find the table's new owner instead of waiting on a socket that will never carry it."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import aiohttp
import asyncpg
import pytest

from service.app import CLUSTER, POOL, TABLES
from service.bots import Bot, BotStop
from service.startup import Running
from tests.conftest import Api, server_of_its_own, wait_for
from tests.test_operator import audit_actions
from tests.test_server import seat_two, through_seeds
from tests.wsclient import Client


async def test_a_lost_lease_tells_the_clients_moved_and_closes_their_sockets(api: Api, server: Running) -> None:
    table, a, b = await seat_two(api, server)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        await through_seeds(table, ca, cb)  # a hand in play: the table has things to tell
        async with server.app[POOL].acquire() as conn:  # another node took the table
            await conn.execute(
                "UPDATE table_leases SET owner = 'elsewhere', epoch = epoch + 1 WHERE table_id = $1", table
            )
        await server.app[CLUSTER].renew()  # the heartbeat finds the lease gone
        assert table not in server.app[TABLES]
        for c in (ca, cb):
            await c.wait_frame(lambda f: f.get("type") == "moved" and f.get("table_id") == table, timeout=20)
            await wait_for(lambda c=c: c.ws.closed, timeout=20)


async def test_a_table_this_node_let_go_during_a_renewal_is_not_called_lost(
    pg_dsn: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A hand-over releases a lease (it drops the table from the node's own, then clears
    the row) while the heartbeat's renewal is under way: the renewal no longer finds the
    row, but the table was let go, not lost — no "lost the lease" warning (the starved
    bench counted one such, which an operator's alert on lost leases would count too)."""
    async with server_of_its_own(pg_dsn, tmp_path / "data", "ll") as running, aiohttp.ClientSession() as s:
        api = Api(running.url, s)
        table = await api.table(seats=4, point_value=1)
        cluster = running.app[CLUSTER]
        await wait_for(lambda: table in cluster.owned)
        async with running.app[POOL].acquire() as holder:
            tx = holder.transaction()
            await tx.start()
            await holder.execute("SELECT 1 FROM table_leases WHERE table_id = $1 FOR UPDATE", table)
            with caplog.at_level(logging.WARNING, logger="rummy"):
                renewal = asyncio.create_task(cluster.renew())  # takes its list of tables, then waits for the row
                await wait_for_waiting(holder)
                cluster.owned.pop(table)  # the hand-over, as Cluster.release does it: first the node's own ...
                await holder.execute(
                    "UPDATE table_leases SET owner = NULL, expires_at = now() WHERE table_id = $1", table
                )
                await tx.commit()  # ... then the row
                await asyncio.wait_for(renewal, 30)
        lost = [r.getMessage() for r in caplog.records if "lost the lease" in r.getMessage()]
        assert lost == [], lost


async def wait_for_waiting(conn: asyncpg.Connection) -> None:
    """Until another session waits for a row lock."""
    for _ in range(600):
        if await conn.fetchval("SELECT count(*) FROM pg_locks WHERE NOT granted"):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("nobody waited for the lock")


async def test_a_closed_table_nobody_serves_is_still_described(api: Api, server: Running) -> None:
    """A closed table is never taken again (cluster.take), so once its lease is lost (a
    renewal too late on a starved machine) no task serves it.  Its description comes
    from the database then: ``GET /api/tables/{id}`` answered 409 ``table_closed`` (CI
    saw ``admin table`` fail so on a two-worker server), now its row, no hand; and a
    close of it answers ``closed`` as its task did, not 409."""
    table = await api.table(seats=4, point_value=1)
    closed = await api.call("POST", f"/api/tables/{table}/close", body={}, expect=200)
    assert closed["status"] == "closed"
    assert await api.call("POST", f"/api/tables/{table}/close", body={}, expect=200) == closed
    served = await api.call("GET", f"/api/tables/{table}", token=None, expect=200)
    assert (served["status"], served["hand"]) == ("closed", None)
    watcher = await api.player("watcher")
    async with Client(server.url, watcher["token"], watcher["signer"]) as c:  # its task's snapshot says closed
        snap = (await c.request({"type": "join", "table_id": table}))["result"]
        assert (snap["status"], snap["hand"], snap["seats"]) == ("closed", None, {})
    async with server.app[POOL].acquire() as conn:  # the lease ran out unrenewed
        await conn.execute("UPDATE table_leases SET owner = NULL, expires_at = now() WHERE table_id = $1", table)
    await server.app[CLUSTER].renew()  # the heartbeat finds it gone
    assert table not in server.app[TABLES]
    detail = await api.call("GET", f"/api/tables/{table}", token=None, expect=200)
    assert detail == served  # the same description, from the database alone
    again = await api.call("POST", f"/api/tables/{table}/close", body={}, expect=200)
    assert again == {"id": table, "status": "closed"}  # as its task answered a second close
    assert (await audit_actions(api)).count(("close_table", table, "done")) == 3  # each close audited
    async with Client(server.url, watcher["token"], watcher["signer"]) as c:  # nobody serves it: refused, not a retry
        refusal = await c.request({"type": "join", "table_id": table})
        assert (refusal["type"], refusal["error"]["code"]) == ("error", "table_closed"), refusal
    bot = Bot(server.url, watcher["token"], table, key=watcher["signer"])  # a bot stops, as the page does
    with pytest.raises(BotStop, match="is closed"):
        await asyncio.wait_for(bot.run(), 60)  # a bound only a bot that asks again forever reaches
    sit = await api.call("POST", f"/api/tables/{table}/sit", token=(await api.player("late"))["token"], expect=409)
    assert sit["error"]["code"] == "table_closed"  # a command still says why it is not served
    missing = await api.call("GET", "/api/tables/t_000000000000", token=None, expect=404)
    assert missing["error"]["code"] == "no_such_table"
