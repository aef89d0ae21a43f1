"""The audit of money and the operator's levers (h82), over real sockets and a real
PostgreSQL: a player seated at two tables on one hold's worth, the operator's void in
every phase of a hand (twice at once, and racing the hand's own end), a table closed
with a hand running, the operator's money endpoints given bad input, D19's rounding
at its edges in real settlements, and the ledger's audit after each.

The standard held to: amounts are integers; every settlement balances; no balance
goes negative; commission is D19's floor; every hold is released or settled exactly
once; nobody pays for what the house or the operator did."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from service import ledger
from service.appkeys import POOL
from service.startup import Running
from tests.conftest import OPERATOR, Api, server_of_its_own, wait_for
from tests.test_server import by_turn, latest_view, seat_of, seated, through_seeds
from tests.wsclient import Client
from verifier.fairness import player_commit


# ----------------------------------------------------------------------------- helpers
async def ledger_ok(api: Api) -> dict[str, Any]:
    summary = await api.call("GET", "/api/ledger", expect=200)
    assert summary["ok"] is True, summary
    return dict(summary)


async def money_of(server: Running, hand_id: int) -> dict[str, Any]:
    """The ledger transactions a hand moved, by kind, each with its entries."""
    async with server.app[POOL].acquire() as conn:
        rows = await conn.fetch(
            "SELECT x.id, x.kind, e.account_id, e.amount FROM ledger_tx x JOIN ledger_entries e ON e.tx_id = x.id "
            "WHERE x.hand_id = $1 ORDER BY x.id",
            hand_id,
        )
        status = await conn.fetchval("SELECT status FROM hands WHERE id = $1", hand_id)
    by: dict[str, dict[int, dict[str, int]]] = {}
    for r in rows:
        by.setdefault(r["kind"], {}).setdefault(r["id"], {})[r["account_id"]] = int(r["amount"])
    return {"status": status, **{k: list(v.values()) for k, v in by.items()}}


async def balance(api: Api, p: dict[str, Any]) -> tuple[int, int]:
    me = await api.call("GET", "/api/me", token=p["token"], expect=200)
    return int(me["available"]), int(me["held"])


async def commit_phase(table: str, *clients: Client) -> dict[str, Any]:
    """Seat every client and wait for the hand's header (the commit window)."""
    await seated(table, *clients)
    return await clients[0].wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "commit", timeout=30)


async def commit_all(hand_id: int, *clients: Client) -> dict[Client, tuple[int, bytes]]:
    seeds = {}
    for c in clients:
        frame = await c.wait_frame(
            lambda f: f.get("type") == "hand" and f.get("phase") == "commit" and f["hand_id"] == hand_id
        )
        seat = c.seat_in(frame["record"])
        seeds[c] = (seat, bytes([seat + 7]) * 32)
        r = await c.commit(frame["record"], player_commit(seat, seeds[c][1]))
        assert r["type"] == "reply", r
    return seeds


async def void(api: Api, hand_id: int, reason: str = "h82 audit", expect: int | None = None) -> dict[str, Any]:
    return dict(await api.call("POST", f"/api/hands/{hand_id}/void", body={"reason": reason}, expect=expect))


def assert_released_once(money: dict[str, Any], players: list[dict[str, Any]], hold: int) -> None:
    """A void: one hold transaction, one release that returns exactly it, no settlement."""
    assert money["status"] == "void", money
    assert "settle" not in money, money
    assert len(money["hold"]) == 1 and len(money["release"]) == 1, money
    back = {ledger.held(p["id"]): -hold for p in players} | {ledger.available(p["id"]): hold for p in players}
    assert money["release"][0] == back, money


# ----------------------------------------------------------------------------- two tables
async def test_one_hold_s_worth_at_two_tables_is_held_once_and_never_negative(api: Api, server: Running) -> None:
    """A player seated (and connected) at two tables with exactly one hold's worth
    (130 × 10): only one table deals it in (D20), the other sits it out (D34); a
    withdrawal of even 1 HT meanwhile is refused (held money stays held); voiding the
    hand that holds it gives the whole hold back once, and the ledger agrees at each
    step."""
    one = await api.player("one-hold", deposit=1_300)
    q, r = await api.player("q-a"), await api.player("r-b")
    ta = await api.table(seats=4, point_value=10, max_away_hands=5)
    tb = await api.table(seats=4, point_value=10, max_away_hands=5)
    async with (
        Client(server.url, one["token"], one["signer"]) as p_a,
        Client(server.url, one["token"], one["signer"]) as p_b,
        Client(server.url, q["token"], q["signer"]) as cq,
        Client(server.url, r["token"], r["signer"]) as cr,
    ):
        # both tables try to deal at about the same moment
        await seated(ta, p_a)
        await seated(tb, p_b)
        await asyncio.gather(seated(ta, cq), seated(tb, cr))
        first = await asyncio.wait_for(
            asyncio.gather(
                *(
                    c.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "commit", timeout=30)
                    for c in (cq, cr)
                ),
                return_exceptions=True,
            ),
            timeout=40,
        )
        hands = [f for f in first if isinstance(f, dict)]
        # at most one hand deals the player in; a table whose only other seat could not
        # be dealt deals nothing (min_players 2)
        dealt_in = [h for h in hands if one["id"] in {s["player_id"] for s in h["record"]["header"]["seats"]}]
        assert len(dealt_in) == 1, hands
        assert await balance(api, one) == (0, 1_300)
        refused = await api.call("POST", f"/api/players/{one['id']}/withdraw", body={"amount": 1}, expect=409)
        assert refused["error"]["code"] == "insufficient_balance"
        await ledger_ok(api)
        hand_id = dealt_in[0]["hand_id"]
        await void(api, hand_id, expect=200)
        await wait_for(
            lambda: any(f.get("type") == "result" and f.get("hand_id") == hand_id for f in p_a.frames + p_b.frames),
            timeout=20,
        )
        money = await money_of(server, hand_id)
        players = [one, q if dealt_in[0]["table_id"] == ta else r]
        assert_released_once(money, players, 1_300)
        await ledger_ok(api)
        for t in (ta, tb):
            await api.call("POST", f"/api/tables/{t}/close", body={}, expect=200)
    await ledger_ok(api)


# ----------------------------------------------------------------------------- voids
async def test_operator_void_in_each_phase_releases_every_hold_once(api: Api, server: Running) -> None:
    """The operator's void (D33) in the commit window, in the reveal window and in
    play (after a seat has drawn): nobody pays, each hand's holds go back in exactly one
    release (no settlement), its transcript is published with the reason, and the
    balances are as before the hand."""
    table = await api.table(seats=4, point_value=3, commission_bps=500, turn_seconds=30)
    a, b = await api.player("void-a", deposit=10_000), await api.player("void-b", deposit=10_000)
    hold = 130 * 3
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        # 1. the commit window, one seat having committed
        hand = await commit_phase(table, ca, cb)
        frame = await ca.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "commit")
        seat = ca.seat_in(frame["record"])
        assert (await ca.commit(frame["record"], player_commit(seat, b"\x01" * 32)))["type"] == "reply"
        assert await balance(api, a) == (10_000 - hold, hold)
        done = await void(api, hand["hand_id"], "commit window", expect=200)
        assert done["voided"] == hand["hand_id"]
        await ca.wait_frame(lambda f: f.get("type") == "result" and f.get("hand_id") == hand["hand_id"])
        assert_released_once(await money_of(server, hand["hand_id"]), [a, b], hold)
        assert await balance(api, a) == (10_000, 0) and await balance(api, b) == (10_000, 0)
        t = await api.call("GET", f"/api/hands/{hand['hand_id']}/transcript", token=None, expect=200)
        assert "commit window" in t["log"][-1]["reason"]
        await ledger_ok(api)

        # 2. the reveal window, both committed, nobody revealed
        hand2 = await ca.wait_frame(
            lambda f: f.get("type") == "hand" and f.get("phase") == "commit" and f["hand_id"] != hand["hand_id"],
            timeout=30,
        )
        await commit_all(hand2["hand_id"], ca, cb)
        await ca.wait_frame(
            lambda f: f.get("type") == "hand" and f.get("phase") == "reveal" and f["hand_id"] == hand2["hand_id"]
        )
        await void(api, hand2["hand_id"], "reveal window", expect=200)
        await ca.wait_frame(lambda f: f.get("type") == "result" and f.get("hand_id") == hand2["hand_id"])
        assert_released_once(await money_of(server, hand2["hand_id"]), [a, b], hold)
        await ledger_ok(api)

        # 3. in play, the seat on turn having drawn
        hand3 = await ca.wait_frame(
            lambda f: f.get("type") == "hand" and f.get("phase") == "commit" and f["hand_id"] > hand2["hand_id"],
            timeout=30,
        )
        seeds = await commit_all(hand3["hand_id"], ca, cb)
        for c in (ca, cb):
            frame = await c.wait_frame(
                lambda f: f.get("type") == "hand" and f.get("phase") == "reveal" and f["hand_id"] == hand3["hand_id"]
            )
            assert (await c.reveal(frame["record"], *seeds[c]))["type"] == "reply"
        for c in (ca, cb):
            await c.wait_frame(
                lambda f: f.get("type") == "update" and f.get("i") == 3 and f.get("hand_no") == hand3["hand_no"]
            )
        mover = by_turn(ca, cb)[0]
        r = await mover.act(table, hand3["hand_no"], seat_of(mover), {"kind": "draw_closed"})
        assert r["type"] == "reply", r
        await void(api, hand3["hand_id"], "in play", expect=200)
        await ca.wait_frame(lambda f: f.get("type") == "result" and f.get("hand_id") == hand3["hand_id"])
        assert_released_once(await money_of(server, hand3["hand_id"]), [a, b], hold)
        assert await balance(api, a) == (10_000, 0) and await balance(api, b) == (10_000, 0)
        await ledger_ok(api)
        await api.call("POST", f"/api/tables/{table}/close", body={}, expect=200)
    await ledger_ok(api)


async def test_two_voids_at_once_void_once_and_a_void_after_the_end_is_refused(api: Api, server: Running) -> None:
    """Two operator voids of one hand sent at the same moment: one voids it, the other
    is refused ``hand_over``; the holds go back once; a third, after the hand is over,
    is refused and moves nothing."""
    table = await api.table(seats=4, point_value=5)
    a, b = await api.player("vv-a", deposit=5_000), await api.player("vv-b", deposit=5_000)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        hand_no = await through_seeds(table, ca, cb)
        hand_id = next(f for f in ca.frames if f.get("type") == "hand" and f.get("hand_no") == hand_no)["hand_id"]
        answers = await asyncio.gather(*(void(api, hand_id, f"twice {k}") for k in range(3)))
        voided = [x for x in answers if "voided" in x]
        refused = [x for x in answers if "error" in x]
        assert len(voided) == 1 and len(refused) == 2, answers
        assert {x["error"]["code"] for x in refused} == {"hand_over"}, answers
        await ca.wait_frame(lambda f: f.get("type") == "result" and f.get("hand_id") == hand_id)
        assert_released_once(await money_of(server, hand_id), [a, b], 650)
        late = await void(api, hand_id, "late", expect=409)
        assert late["error"]["code"] == "hand_over"
        assert_released_once(await money_of(server, hand_id), [a, b], 650)
        await api.call("POST", f"/api/tables/{table}/close", body={}, expect=200)
    await ledger_ok(api)


async def test_a_void_racing_the_hand_s_own_end_either_voids_or_settles_never_both(api: Api, server: Running) -> None:
    """A signed leave that ends a heads-up hand (D15, D14) and the operator's void sent
    at once: the hand is either settled (the leaver pays 40 × point value, the winner
    the pot less D19's commission) or voided (nobody pays) — one ledger outcome, the
    answers agreeing with it, the ledger ok."""
    pv, bps = 7, 3333
    table = await api.table(seats=4, point_value=pv, commission_bps=bps)
    a, b = await api.player("race-a", deposit=5_000), await api.player("race-b", deposit=5_000)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        hand_no = await through_seeds(table, ca, cb)
        hand_id = next(f for f in ca.frames if f.get("type") == "hand" and f.get("hand_no") == hand_no)["hand_id"]
        leaver_c, stayer_c = ca, cb
        left, voided = await asyncio.gather(leaver_c.leave(table, hand_no, seat_of(leaver_c)), void(api, hand_id))
        await stayer_c.wait_frame(lambda f: f.get("type") == "result" and f.get("hand_id") == hand_id)
        money = await money_of(server, hand_id)
        if money["status"] == "void":
            assert "voided" in voided, (voided, money)
            assert_released_once(money, [a, b], 130 * pv)
            assert await balance(api, a) == (5_000, 0)
        else:
            assert money["status"] == "ended" and "release" not in money and len(money["settle"]) == 1, money
            assert voided["error"]["code"] == "hand_over", voided
            assert left["type"] == "reply" and left["result"]["charged"] is True, left
            pot = 40 * pv
            commission = pot * bps // 10_000
            assert money["settle"][0][ledger.HOUSE] == commission
            assert await balance(api, a) == (5_000 - pot, 0)
            assert await balance(api, b) == (5_000 + pot - commission, 0)
        await api.call("POST", f"/api/tables/{table}/close", body={}, expect=200)
    await ledger_ok(api)


# ----------------------------------------------------------------------------- closing
async def test_closing_a_table_mid_hand_lets_the_hand_settle_then_stands_everyone_up(api: Api, server: Running) -> None:
    """The operator closes a table in the commit window, and again at once (both
    answer ``closing``): the hand goes on and ends as its players make it (one leaves,
    D15), is settled once, no new hand is dealt, every seat is stood up, nothing stays
    held, the ledger is ok."""
    pv = 4
    table = await api.table(seats=4, point_value=pv)
    a, b = await api.player("close-a", deposit=5_000), await api.player("close-b", deposit=5_000)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        hand = await commit_phase(table, ca, cb)
        both = await asyncio.gather(*(api.call("POST", f"/api/tables/{table}/close", body={}) for _ in range(2)))
        assert [x["status"] for x in both] == ["closing", "closing"], both
        seeds = await commit_all(hand["hand_id"], ca, cb)
        for c in (ca, cb):
            frame = await c.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "reveal")
            assert (await c.reveal(frame["record"], *seeds[c]))["type"] == "reply"
        for c in (ca, cb):
            await c.wait_frame(lambda f: f.get("type") == "update" and f.get("i") == 3)
        r = await ca.leave(table, hand["hand_no"], seat_of(ca))
        assert r["type"] == "reply" and r["result"]["charged"] is True, r
        await cb.wait_frame(lambda f: f.get("type") == "closed", timeout=20)
        money = await money_of(server, hand["hand_id"])
        assert money["status"] == "ended" and len(money["settle"]) == 1 and "release" not in money, money
        assert await balance(api, a) == (5_000 - 40 * pv, 0)
        assert await balance(api, b) == (5_000 + 40 * pv, 0)
        detail = await api.call("GET", f"/api/tables/{table}", token=None, expect=200)
        assert detail["status"] == "closed" and detail["seated"] == [] and detail["hand"] is None
        again = await api.call("POST", f"/api/tables/{table}/close", body={}, expect=200)
        assert again["status"] == "closed"
        listed = await api.call("GET", f"/api/admin/hands?table={table}", expect=200)
        assert listed["total"] == 1  # no new hand after the close
    await ledger_ok(api)


# ----------------------------------------------------------------------------- bad input
async def raw(api: Api, path: str, text: str, token: str | None = OPERATOR) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with api.session.post(api.base + path, data=text, headers=headers) as r:
        return r.status, await r.json()


async def test_operator_money_endpoints_refuse_bad_input_and_move_nothing(api: Api, server: Running) -> None:
    """Deposits and withdrawals of a non-amount (zero, negative, past 10¹⁵, a float
    however whole, a string, a bool, null, nested, missing, an extra key), without the
    operator token or with a player's, for a player that does not exist, or more than
    is available while a hold is on: each refused with its typed error, nothing moved;
    voids and stand-ups with bad input likewise."""
    p = await api.player("bad-input", deposit=2_000)
    other = await api.player("other", deposit=2_000)
    before = await ledger_ok(api)
    for path in (f"/api/players/{p['id']}/deposit", f"/api/players/{p['id']}/withdraw"):
        for text in (
            '{"amount": 0}',
            '{"amount": -1}',
            '{"amount": 1000000000000001}',
            '{"amount": 1.5}',
            '{"amount": 1000.0}',
            '{"amount": 1e3}',
            '{"amount": "100"}',
            '{"amount": true}',
            '{"amount": null}',
            '{"amount": [100]}',
            '{"amount": {"v": 100}}',
            "{}",
            '{"amount": 100, "to": "house:commission"}',
            '{"amount": 100, "amount": 100}',
            '{"amount": 99999999999999999999999}',
            "[100]",
            "100",
            "",
        ):
            status, body = await raw(api, path, text)
            assert status == 400 and body["error"]["code"] in ("bad_amount", "bad_request", "bad_message"), (
                path,
                text,
                status,
                body,
            )
        for token in (None, "wrong", p["token"], other["token"]):
            status, body = await raw(api, path, '{"amount": 100}', token=token)
            assert status == 401 and body["error"]["code"] == "unauthorized", (path, token, status, body)
    for who in ("nobody-here", "house:commission", "external:deposits"):
        for verb in ("deposit", "withdraw"):
            status, body = await raw(api, f"/api/players/{who}/{verb}", '{"amount": 1}')
            assert status in (400, 404), (who, verb, status, body)
    assert await balance(api, p) == (2_000, 0) and await balance(api, other) == (2_000, 0)
    after = await ledger_ok(api)
    assert after["deposited"] == before["deposited"] and after["house_commission"] == before["house_commission"]

    # voids and stand-ups with bad input, or without the operator's token
    table = await api.table(seats=4, point_value=1)
    for hand in ("abc", "-1", "0", "1.5", "99999999999999999999999"):
        status, body = await raw(api, f"/api/hands/{hand}/void", '{"reason": "x"}')
        assert status in (400, 404), (hand, status, body)
    for text in ("{}", '{"reason": ""}', '{"reason": 5}', '{"reason": "' + "x" * 501 + '"}'):
        status, body = await raw(api, "/api/hands/1/void", text)
        assert status == 400, (text, status, body)
    status, body = await raw(api, "/api/hands/1/void", '{"reason": "x"}', token=p["token"])
    assert status == 401, body
    for seat in ("-1", "8", "x", "1.0", "٣", "0003"):
        status, body = await raw(api, f"/api/tables/{table}/seats/{seat}/stand", "{}")
        assert status in (400, 404, 409), (seat, status, body)
        assert not (status == 200), (seat, body)
    status, body = await raw(api, f"/api/tables/{table}/seats/0/stand", "{}", token=p["token"])
    assert status == 401, body
    status, body = await raw(api, f"/api/tables/{table}/close", "{}", token=p["token"])
    assert status == 401, body
    assert (await api.call("GET", f"/api/tables/{table}", token=None))["status"] == "open"
    await api.call("POST", f"/api/tables/{table}/close", body={}, expect=200)
    await ledger_ok(api)


async def test_a_withdrawal_takes_only_what_is_available_while_a_hand_holds(api: Api, server: Running) -> None:
    """Mid-hand, the operator withdraws everything available, then 1 more (refused:
    held money is not withdrawable), and deposits race the hand's end: the settlement
    is paid from the hold alone and no balance goes negative."""
    pv = 9
    table = await api.table(seats=4, point_value=pv, commission_bps=1)
    a, b = await api.player("wd-a", deposit=1_170 + 5), await api.player("wd-b", deposit=3_000)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        hand_no = await through_seeds(table, ca, cb)
        assert await balance(api, a) == (5, 1_170)
        await api.call("POST", f"/api/players/{a['id']}/withdraw", body={"amount": 5}, expect=200)
        refused = await api.call("POST", f"/api/players/{a['id']}/withdraw", body={"amount": 1}, expect=409)
        assert refused["error"]["code"] == "insufficient_balance"
        # a leaves (40 points) while deposits to both race the settlement
        left, *_ = await asyncio.gather(
            ca.leave(table, hand_no, seat_of(ca)),
            *(api.call("POST", f"/api/players/{x['id']}/deposit", body={"amount": 1}, expect=200) for x in (a, b)),
        )
        assert left["type"] == "reply", left
        await cb.wait_frame(lambda f: f.get("type") == "result" and f.get("hand_no") == hand_no)
        pot = 40 * pv
        assert await balance(api, a) == (1_170 - pot + 1, 0)
        assert await balance(api, b) == (3_000 + pot - pot * 1 // 10_000 + 1, 0)
        await api.call("POST", f"/api/tables/{table}/close", body={}, expect=200)
    await ledger_ok(api)


# ----------------------------------------------------------------------------- D19's edges
@pytest.mark.parametrize(("seats", "pv", "bps"), [(4, 3, 9999), (8, 7, 3333), (8, 1, 10_000), (6, 13, 1)])
async def test_d19_rounding_at_its_edges_in_a_real_settlement(
    api: Api, server: Running, seats: int, pv: int, bps: int
) -> None:
    """Every seat but one drops on its first turn (20 each, D15), the last wins
    (D14): the pot is (seats − 1) × 20 × point value, the house keeps exactly
    floor(pot × bps / 10 000) (D19), the winner the rest, every loser exactly its 20
    points; the settlement is one balanced transaction and every hold comes back."""
    table = await api.table(seats=seats, point_value=pv, commission_bps=bps, min_players=seats)
    players = [await api.player(f"d19-{k}", deposit=130 * pv + 11) for k in range(seats)]
    clients = [Client(server.url, p["token"], p["signer"]) for p in players]
    for c in clients:
        await c.__aenter__()
    try:
        hand_no = await through_seeds(table, *clients)
        hand_id = next(f for f in clients[0].frames if f.get("type") == "hand" and f.get("hand_no") == hand_no)[
            "hand_id"
        ]
        for _ in range(seats - 1):
            view = latest_view(clients[0])
            mover = next(c for c in clients if seat_of(c) == view["turn"])
            r = await mover.act(table, hand_no, seat_of(mover), {"kind": "drop"})
            assert r["type"] == "reply", r
            await wait_for(
                lambda turn=view["turn"]: (
                    any(f.get("type") == "result" and f.get("hand_id") == hand_id for f in clients[0].frames)
                    or latest_view(clients[0])["turn"] != turn
                )
            )
        result = await clients[0].wait_frame(lambda f: f.get("type") == "result" and f.get("hand_id") == hand_id)
        s = result["result"]["settlement"]
        pot = (seats - 1) * 20 * pv
        commission = pot * bps // 10_000
        assert (s["pot"], s["commission"]) == (pot, commission), s
        money = await money_of(server, hand_id)
        (settle,) = money["settle"]
        assert sum(settle.values()) == 0 and settle.get(ledger.HOUSE, 0) == commission, settle
        winner = players[next(k for k, c in enumerate(clients) if seat_of(c) == s["winner"])]
        for p in players:
            got = await balance(api, p)
            want = 130 * pv + 11 + (pot - commission if p is winner else -20 * pv)
            assert got == (want, 0), (p["name"], got, want)
            assert all(isinstance(x, int) for x in got)
    finally:
        for c in clients:
            await c.__aexit__(None, None, None)
    await api.call("POST", f"/api/tables/{table}/close", body={}, expect=200)
    await ledger_ok(api)


# ----------------------------------------------------------------------------- bigint's ceiling
async def test_a_deposit_past_the_ledger_s_bigint_ceiling_is_refused_typed(pg_dsn: str, tmp_path: Path) -> None:
    """Balances are PostgreSQL ``bigint``: the external account holds minus every HT
    ever deposited (net of withdrawals), so once a card room's net deposits near
    2⁶³ − 1 the next deposit overflows it.  The answer must say so (a typed 409,
    nothing stored), never an internal error nor ``outcome_unknown`` (the outcome is
    known: the statement failed before any COMMIT).  Found failing (a 500 in plain
    text, not even the JSON error every answer promises); fixed in
    service/ledger.py ``_post``: bigint's overflow is ``LedgerError("ledger_full")``,
    answered 409."""
    async with server_of_its_own(pg_dsn, tmp_path / "data", "h82big") as running, aiohttp.ClientSession() as s:
        api = Api(running.url, s)
        p = await api.player("whale", deposit=1)
        async with running.app[POOL].acquire() as conn, conn.transaction():
            # net deposits of 2⁶³ − 1 − 10¹⁴: far past any real card room, reached here at once
            await ledger._post(
                conn, "deposit", {ledger.EXTERNAL: -(2**63 - 2 - 10**14), ledger.available(p["id"]): 2**63 - 2 - 10**14}
            )
        before = await ledger_ok(api)
        status, body = await raw(api, f"/api/players/{p['id']}/deposit", '{"amount": 1000000000000000}')
        assert status == 409 and body["error"]["code"] == "ledger_full", (status, body)
        # and in the table's path too (a hold, under its savepoint): refused, nothing moved
        async with running.app[POOL].acquire() as conn, conn.transaction():
            with pytest.raises(ledger.LedgerError) as refused:
                await ledger.deposit(conn, p["id"], 10**15)
        assert refused.value.code == "ledger_full"
        after = await ledger_ok(api)
        assert after == before
