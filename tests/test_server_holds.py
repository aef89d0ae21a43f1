"""D20's holds at the deal and D34's away time, over real sockets and a real
PostgreSQL: a seat that cannot cover its hold sits the hand out, a table too few can
cover for stands them up after the away time and deals again, a hold that comes back
in time keeps the seat, a held account that is missing sits its seat out."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest

from service import ledger, tablestore
from service.startup import Running
from tests.conftest import Api
from tests.skipclock import SkipClock, clocked
from tests.wsclient import Client


async def test_a_seat_that_cannot_cover_the_hold_sits_the_hand_out_and_the_rest_are_held_at_once(
    api: Api, server: Running
) -> None:
    """D20 at the deal: a player seated with enough, who withdrew below the hold before
    the hand began, sits it out; the players dealt in are held in one ledger
    transaction of the hand (each amount from available to held), and nothing of the
    one who sat out moves."""
    from service.app import POOL

    table = await api.table(seats=4, point_value=10, max_away_hands=1)  # 1,300 held a seat
    c = await api.player("short", deposit=5_000)
    a, b = await api.player("ann", deposit=5_000), await api.player("bo", deposit=5_000)
    async with (
        Client(server.url, c["token"], c["signer"]) as cc,
        Client(server.url, a["token"], a["signer"]) as ca,
        Client(server.url, b["token"], b["signer"]) as cb,
    ):
        await cc.request({"type": "join", "table_id": table})  # connected: dealt in if it can cover the hold
        assert (await cc.request({"type": "sit", "table_id": table, "seat": 2}))["type"] == "reply"
        await api.call("POST", f"/api/players/{c['id']}/withdraw", body={"amount": 4_000}, expect=200)  # 1,000 left
        for cl in (ca, cb):
            await cl.request({"type": "join", "table_id": table})
            assert (await cl.request({"type": "sit", "table_id": table}))["type"] == "reply"
        hand = await ca.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "commit", timeout=30)
        dealt = {s["player_id"] for s in hand["record"]["header"]["seats"]}
        assert dealt == {a["id"], b["id"]}, dealt
        async with server.app[POOL].acquire() as conn:
            rows = await conn.fetch(
                "SELECT x.id, e.account_id, e.amount FROM ledger_tx x JOIN ledger_entries e ON e.tx_id = x.id "
                "WHERE x.kind = 'hold' AND x.hand_id = $1",
                hand["hand_id"],
            )
            held = await conn.fetch("SELECT player_id, hold FROM hand_players WHERE hand_id = $1", hand["hand_id"])
        assert len({r["id"] for r in rows}) == 1, rows  # one transaction for the hand
        assert {(r["account_id"], r["amount"]) for r in rows} == {
            (ledger.available(p["id"]), -1300) for p in (a, b)
        } | {(ledger.held(p["id"]), 1300) for p in (a, b)}
        assert {(r["player_id"], r["hold"]) for r in held} == {(a["id"], 1300), (b["id"], 1300)}
        for p, available, on_hold in ((a, 3_700, 1_300), (b, 3_700, 1_300), (c, 1_000, 0)):
            me = await api.call("GET", "/api/me", token=p["token"])
            assert (me["available"], me["held"]) == (available, on_hold), (p["name"], me)
        assert (await api.call("GET", "/api/ledger"))["ok"] is True
        # D34: a connected seat not dealt in sat the hand out as an absent one does, and
        # after max_away_hands (1) it is stood up, saying why: it could not cover the hold
        stood = await ca.wait_frame(lambda f: f.get("type") == "table" and f["stood"], timeout=30)
        assert stood["stood"] == [
            {"seat": 2, "player_id": c["id"], "reason": "cannot_cover", "rule": "D34", "hand_no": hand["hand_no"]}
        ]
        assert c["id"] not in stood["seats"].values()
    for p in (a, b):
        await api.call("POST", f"/api/tables/{table}/leave", token=p["token"])


async def short_beside_ann(api: Api, table: str, cs: Client, ca: Client, short: dict[str, Any]) -> None:
    """``short`` sits at seat 1 and withdraws below the hold (1,300 at point value 10),
    then ann sits at seat 0: two connected, one who cannot cover: no hand (D34)."""
    await cs.request({"type": "join", "table_id": table})
    assert (await cs.request({"type": "sit", "table_id": table, "seat": 1}))["type"] == "reply"
    await api.call("POST", f"/api/players/{short['id']}/withdraw", body={"amount": 4_000}, expect=200)
    await ca.request({"type": "join", "table_id": table})
    assert (await ca.request({"type": "sit", "table_id": table, "seat": 0}))["type"] == "reply"


async def test_a_table_too_few_can_cover_for_stands_them_up_after_the_away_time_and_deals_again(
    api: Api, server: Running
) -> None:
    """D34 (found by an audit: a connected seat that could not cover its hold was never
    dealt in and never stood up; at a table of two no hand was dealt again, and a
    player with one hold's worth could keep a seat at every table): when too few of the
    connected seats can cover the hold for a hand to be dealt, no hand is dealt, and a
    seat that could not cover at every try for ``away_seconds`` is stood up; the table
    deals as soon as someone who can sits."""
    table = await api.table(seats=4, point_value=10)  # 1,300 held a seat
    actor, clock = await clocked(server, table, SkipClock(wall=False))  # time only as skipped
    away = actor.core.cfg.away_ms / 1000
    short = await api.player("short", deposit=5_000)
    a, b = await api.player("ann", deposit=5_000), await api.player("bo", deposit=5_000)

    def stood(cl: Client) -> list[dict[str, Any]]:
        return [e for f in cl.frames if f.get("type") == "table" for e in f["stood"]]

    async with (
        Client(server.url, short["token"], short["signer"]) as cs,
        Client(server.url, a["token"], a["signer"]) as ca,
    ):
        await short_beside_ann(api, table, cs, ca, short)
        await clock.skip([actor], away - 40)
        assert stood(ca) == [] and (await api.call("GET", "/api/me", token=short["token"]))["seats"] != []
        await clock.skip([actor], 60, until=lambda: bool(stood(ca)))
        assert stood(ca) == [
            {"seat": 1, "player_id": short["id"], "reason": "cannot_cover", "rule": "D34", "hand_no": None}
        ]
        push = next(f for f in ca.frames if f.get("type") == "table" and f["stood"])
        assert push["seats"] == {"0": a["id"]} and not [f for f in ca.frames if f.get("type") == "hand"]
        snap = (await cs.request({"type": "join", "table_id": table}))["result"]
        assert snap["stood_up"]["reason"] == "cannot_cover" and snap["stood_up"]["rule"] == "D34", snap
        me = await api.call("GET", "/api/me", token=short["token"])
        assert (me["available"], me["held"], me["seats"]) == (1_000, 0, []), me
        async with Client(server.url, b["token"], b["signer"]) as cb:
            await cb.request({"type": "join", "table_id": table})
            assert (await cb.request({"type": "sit", "table_id": table}))["type"] == "reply"
            await clock.skip([actor], 30, until=lambda: any(f.get("type") == "hand" for f in ca.frames))
            hand = await ca.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "commit", timeout=30)
            assert {s["player_id"] for s in hand["record"]["header"]["seats"]} == {a["id"], b["id"]}
    for p in (a, b):
        await api.call("POST", f"/api/tables/{table}/leave", token=p["token"])


async def test_a_deal_try_slower_than_the_skipped_clock_is_not_taken_for_a_hung_store(
    api: Api, server: Running, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """tests/skipclock.py: a skip waits for each write in flight, so that the store is as
    quick as the time skipped.  Before, a busy machine's slow write (0.15 s here) was,
    to a clock skipped 2 s in four quick steps, a hung store (D37): when it answered every
    grace started again, and D34's stand-up came 120 s late (the test above failed so
    once, in a run beside stress-ng)."""
    deal = tablestore.TableStore._deal

    async def slow(self: tablestore.TableStore, conn: asyncpg.Connection, **kw: Any) -> Any:
        await asyncio.sleep(0.15)
        return await deal(self, conn, **kw)

    monkeypatch.setattr(tablestore.TableStore, "_deal", slow)
    await test_a_table_too_few_can_cover_for_stands_them_up_after_the_away_time_and_deals_again(api, server)
    assert not [r for r in caplog.records if "has not answered" in r.getMessage()]


async def test_a_seat_whose_hold_comes_back_within_the_away_time_keeps_it_and_is_dealt_in(
    api: Api, server: Running
) -> None:
    """D34: a player whose balance is held at another table's hand (or who is short for a
    while) keeps the seat while the table cannot deal, up to ``away_seconds``: once it
    can cover the hold again, it is dealt in."""
    table = await api.table(seats=4, point_value=10)  # 1,300 held a seat
    actor, clock = await clocked(server, table, SkipClock(wall=False))  # time only as skipped
    short, a = await api.player("short", deposit=5_000), await api.player("ann", deposit=5_000)
    async with (
        Client(server.url, short["token"], short["signer"]) as cs,
        Client(server.url, a["token"], a["signer"]) as ca,
    ):
        await short_beside_ann(api, table, cs, ca, short)
        await clock.skip([actor], actor.core.cfg.away_ms / 1000 / 2)
        assert not [f for f in ca.frames if f.get("type") in ("hand", "table") and f.get("stood")]
        await api.call("POST", f"/api/players/{short['id']}/deposit", body={"amount": 1_000}, expect=200)
        await clock.skip([actor], 30, until=lambda: any(f.get("type") == "hand" for f in ca.frames))
        hand = await ca.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "commit", timeout=30)
        assert {s["player_id"] for s in hand["record"]["header"]["seats"]} == {a["id"], short["id"]}
        me = await api.call("GET", "/api/me", token=short["token"])
        assert (me["available"], me["held"]) == (700, 1_300), me
    for p in (a, short):
        await api.call("POST", f"/api/tables/{table}/leave", token=p["token"])


async def test_a_seat_whose_held_account_is_missing_sits_out_and_the_table_deals(api: Api, server: Running) -> None:
    """A player whose held account is not there (a damaged database) cannot be held: it
    sits the hand out, and the others are dealt in.  The holds of a hand are one ledger
    transaction, so one account it could not move would have refused them all, and the
    table would have tried to deal, and failed, for ever."""
    from service.app import POOL

    table = await api.table(seats=4, point_value=1)
    a, b, c = await api.player("ann"), await api.player("bo"), await api.player("cy")
    async with server.app[POOL].acquire() as conn:
        await conn.execute("DELETE FROM accounts WHERE id = $1", ledger.held(c["id"]))
    async with (
        Client(server.url, c["token"], c["signer"]) as cc,
        Client(server.url, a["token"], a["signer"]) as ca,
        Client(server.url, b["token"], b["signer"]) as cb,
    ):
        for cl in (cc, ca, cb):
            await cl.request({"type": "join", "table_id": table})
            assert (await cl.request({"type": "sit", "table_id": table}))["type"] == "reply"
        hand = await ca.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "commit", timeout=30)
        assert {s["player_id"] for s in hand["record"]["header"]["seats"]} == {a["id"], b["id"]}
    for p in (a, b, c):
        await api.call("POST", f"/api/tables/{table}/leave", token=p["token"])
