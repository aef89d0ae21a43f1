"""A player who sits again during a hand they dropped out of cannot leave (audit of
2026-12-07, helper h63).

Scenario: three players at a four-seat table are dealt in (seats 0, 1, 2).  The seat on
turn drops (D15: 20 points; its cards leave play) and leaves the table: its leave is
no move of the hand (it no longer plays), so its seat stands up at once, uncharged —
as it should.  The hand goes on between the other two.  The same player sits again,
at the free seat 3 (allowed: they have no seat, and the D20 amount available), and
then asks to leave once more.

``Commands._leave`` looked the player's *table* seat (3) up in the *hand's* state:
``state.seat(3)`` raised ``not_seated`` — "seat 3 takes no part in this hand", rule D2
— though the player is seated at seat 3, and the refusal holds until the hand ends.
The rule broken: a request the rules allow gets a wrong typed error (the project's
"bad input gets a clear error": this input is not bad), and the player cannot leave a
seat they hold.  Consequence: the seat stays until the hand ends; if the next hand is
dealt before the player tries again (a table deals `next_hand_delay` after the end),
they are dealt in, and leaving then costs them 40 (D15) or the clock's drop.

Fixed: the hand's part of a leave is the player's seat in the hand (``hand.seat_of``);
the seat that stands up is their table seat.
"""

from __future__ import annotations

from service.startup import Running
from tests.conftest import Api
from tests.test_server import latest_view, seat_of, through_seeds
from tests.wsclient import Client


async def test_a_player_seated_again_after_dropping_can_leave(api: Api, server: Running) -> None:
    table = await api.table(seats=4, point_value=2, turn_seconds=30)
    a, b, c = [await api.player(name) for name in ("resit-a", "resit-b", "resit-c")]
    async with (
        Client(server.url, a["token"], a["signer"]) as ca,
        Client(server.url, b["token"], b["signer"]) as cb,
        Client(server.url, c["token"], c["signer"]) as cc,
    ):
        hand_no = await through_seeds(table, ca, cb, cc)
        turn = latest_view(ca)["turn"]
        mover = next(cl for cl in (ca, cb, cc) if seat_of(cl) == turn)
        others = [cl for cl in (ca, cb, cc) if cl is not mover]
        token = next(p["token"] for p in (a, b, c) if p["id"] == mover.player_id)
        r = await mover.act(table, hand_no, turn, {"kind": "drop"})
        assert r["type"] == "reply", r
        r = await mover.leave(table)  # dropped: no move of the hand, stood up at once
        assert r["type"] == "reply" and r["result"] == {"left": turn, "charged": False}, r
        r = await mover.request({"type": "sit", "table_id": table, "seat": 3})
        assert r["type"] == "reply" and r["result"]["seat"] == 3, r
        seen = [len(o.frames) for o in others]
        r = await mover.leave(table)
        me = await api.call("GET", "/api/me", token=token)
        described = await api.call("GET", f"/api/tables/{table}")
        # the hand goes on between the two others, untouched either way
        assert described["hand"]["hand_no"] == hand_no and described["hand"]["seats"] == sorted(
            seat_of(o) for o in (ca, cb, cc)
        )
        assert all(f.get("type") != "update" for o, n in zip(others, seen, strict=True) for f in o.frames[n:])
        assert r["type"] == "reply", r  # before: error not_seated, "seat 3 takes no part in this hand" (D2)
        assert r["result"] == {"left": 3, "charged": False}, r
        assert me["seats"] == [], me
