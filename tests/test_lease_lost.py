"""A table whose lease is lost (issue 17): its node tells every client ``moved`` and
closes its socket, exactly as when a write of the table is fenced, so clients go and
find the table's new owner instead of waiting on a socket that will never carry it."""

from __future__ import annotations

from service.app import CLUSTER, POOL, TABLES
from service.startup import Running
from tests.conftest import Api, wait_for
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
