"""A table whose step raises (a bug) is not left dead behind a lease this node keeps:
the actor logs it, tells its clients ``moved``, answers what waits, and releases the
lease; a fresh actor takes the table and rebuilds its hand from the store (D32), and
the players play on.  Before, the table's task died silently: the table answered
nothing and dealt no more until the process restarted (a test's stale monkeypatch
showed it: a hang with no log line)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from service.startup import Running
from service.tablecore import io
from service.tablecore.core import TableCore
from tests.conftest import Api, wait_for
from tests.test_server import latest_view, seat_of, seat_two, through_seeds
from tests.wsclient import Client


async def test_a_table_whose_step_raises_is_let_go_and_loaded_afresh(
    api: Api, server: Running, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from service.app import METRICS, TABLES

    table, a, b = await seat_two(api, server)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        hand_no = await through_seeds(table, ca, cb)
        old = server.app[TABLES][table]
        hand = old.hand
        assert hand is not None
        records = list(hand.recorder.records)
        step = TableCore.step
        raised: list[str] = []

        def bad_step(self: TableCore, inp: io.Input, now: int, stalled: int = 0) -> list[io.Effect]:
            if isinstance(inp, io.Command) and inp.kind == "snapshot" and inp.player_id == b["id"] and not raised:
                raised.append(self.table_id)
                raise RuntimeError("a bug in a step")
            return step(self, inp, now, stalled)

        monkeypatch.setattr(TableCore, "step", bad_step)
        let_go = server.app[METRICS].tables_let_go.labels("failed")
        before = let_go._value.get()
        with caplog.at_level(logging.ERROR, logger="rummy.table"):
            await cb.send_raw(json.dumps({"id": "j1", "type": "join", "table_id": table}))
            for c in (ca, cb):  # every client is told, and its socket closed (the join's answer goes with it)
                await c.wait_frame(lambda f: f.get("type") == "moved")
        assert raised == [table]
        assert any("its task stopped" in m and "a bug in a step" in m for m in caplog.messages), caplog.messages
        assert let_go._value.get() == before + 1
        await wait_for(lambda: server.app[TABLES].get(table) not in (None, old), timeout=30)
        new = server.app[TABLES][table]
        await wait_for(lambda: new.hand is not None and new.core.ready, timeout=30)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        snaps: dict[str, Any] = {}
        for name, c in (("a", ca), ("b", cb)):
            snaps[name] = await c.request({"type": "join", "table_id": table})
            assert snaps[name]["type"] == "reply", snaps[name]
            assert snaps[name]["result"]["hand"]["hand_no"] == hand_no
        assert new.hand is not None and list(new.hand.recorder.records) == records  # rebuilt from the store
        view = snaps["a"]["result"]["hand"]["view"]
        c, me = (ca, "a") if view["turn"] == snaps["a"]["result"]["hand"]["seat"] else (cb, "b")
        r = await c.act(table, hand_no, snaps[me]["result"]["hand"]["seat"], {"kind": "draw_closed"})
        assert r["type"] == "reply", r  # and the hand plays on
        await wait_for(lambda: latest_view(c)["phase"] == "discard")
        await ca.leave(table, hand_no, seat_of(ca))
        await cb.leave(table)
