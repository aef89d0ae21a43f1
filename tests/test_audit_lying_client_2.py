"""A lying or malicious client, round 2 (audit of 2026-12-08, helper h78).

Each test runs against the real server and asserts what the project's standard asks
("a client must not be able to ... stall a table for others"; "one live connection
per player and table", docs/api.md ``join``).

Finding 1 (fixed): a socket already replaced could still take over.  Two sockets of
one player: A joins table T, then B joins T — A is told ``replaced`` and its
connection is closed.  But A had read one more ``join`` for T before that and was
holding it for its turn (beyond its burst a frame is read, then waits for its pace:
service.pace).  Handled afterwards, that join attached A's *closed* connection
(``Watchers.attach`` did not look): B, open and innocent, was told ``replaced`` and
closed, and the table's watcher for the player was a dead connection, so the player
had no live socket at the table at all (D34 counts the seat away for the next deal;
the clock plays for it, D16).  An honest page that reconnects while its old socket
still had a rejoin in flight meets the same: its new socket is thrown out by the
dead one.  Fix (service/api_ws.py ``_dispatch``): a ``join`` from a connection
already closed attaches nothing and replaces nobody (refused ``not_joined``; its
answer goes nowhere, the socket is closing).
"""

from __future__ import annotations

import json

import aiohttp

from service.appkeys import SOCKETS, TABLES
from service.startup import Running
from tests.conftest import Api, wait_for
from tests.test_pace import _paced
from tests.wsclient import Client


async def test_a_replaced_socket_cannot_evict_the_live_one_with_a_join_it_held(api: Api, server: Running) -> None:
    """A's second join is read, then held 5 s by A's pace (burst 1, 0.2 a second);
    meanwhile B joins and A is replaced.  When A's held join is handled, B stays the
    player's live connection: not told ``replaced``, not closed.  Before: B was told
    ``replaced`` and closed by a join from a closed socket."""
    table = await api.table(seats=4)
    p = await api.player("twosock")
    hdr = {"Authorization": f"Bearer {p['token']}"}
    async with aiohttp.ClientSession() as s:
        with _paced(server, rate=0.2, burst=1):  # A: one message at once, then one each 5 s
            wa = await s.ws_connect(f"{server.url}/ws?table={table}", headers=hdr, autoclose=False)
        try:
            assert json.loads((await wa.receive(timeout=15)).data)["type"] == "hello"
            await wa.send_str(json.dumps({"id": "a1", "type": "join", "table_id": table}))
            assert json.loads((await wa.receive(timeout=15)).data)["id"] == "a1"
            await wa.send_str(json.dumps({"id": "a2", "type": "join", "table_id": table}))  # read, held 5 s
            async with Client(server.url, p["token"], p["signer"]) as cb:
                r = await cb.request({"type": "join", "table_id": table})
                assert r["type"] == "reply", r
                actor = server.app[TABLES][table]
                live = actor.watchers.by_player[p["id"]]
                assert not live.closed
                # A's held join is handled 5 s after it was read, and then A's handler ends
                # (its socket closed): wait until B's is the player's only socket here, and
                # for B to hear anything it was told (a ping answered after it)
                await wait_for(lambda: [c for c in server.app[SOCKETS].values() if c.player_id == p["id"]] == [live])
                pong = await cb.request({"type": "ping"})
                assert pong["type"] == "reply", pong
                assert [f for f in cb.frames if f.get("type") == "replaced"] == []
                assert actor.watchers.by_player.get(p["id"]) is live and not live.closed
        finally:
            await wa.close()
