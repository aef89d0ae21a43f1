"""What a copy of the database shows of a live hand: no more than a spectator sees
(docs/fairness.md §16).  Found by the audit of 2026-12-07 (helper-60): the public copy
of each record kept the player's signature, an oracle for the hidden card a closed draw
took (through the record's `h`) and for a wrong declare's finish card (through the
signature itself); now the sealed copy alone keeps it (service.handstore.public_record)."""

from __future__ import annotations

import json
from typing import Any

from service.startup import Running
from tests.conftest import Api, wait_for
from tests.test_server import by_turn, latest_view, seat_of, seat_two, through_seeds
from tests.wsclient import Client
from verifier.cards import deck_size
from verifier.chain import chain_link


async def test_a_closed_draw_cannot_be_recovered_from_the_records_at_rest(api: Api, server: Running) -> None:
    """The card a seat drew from the closed pile, to anyone holding a copy of the
    database while the hand is live: ``hand_records.record`` keeps the record's chain
    link ``h = SHA-256(h_prev ‖ canonical(whole record))``; were every other field of
    the record there (its ``psig`` among them), the one unknown would be the drawn card,
    one of 106 ids, and hashing each guess against ``h`` would name it.  The public copy
    holds no signature, so no guess reproduces ``h``."""
    from service.app import POOL

    table, a, b = await seat_two(api, server)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        hand_no = await through_seeds(table, ca, cb)
        mover, _other = by_turn(ca, cb)
        before = set(latest_view(mover)["me"]["cards"])
        r = await mover.act(table, hand_no, seat_of(mover), {"kind": "draw_closed"})
        assert r["type"] == "reply", r
        await wait_for(lambda: latest_view(mover)["phase"] == "discard")
        drawn = (set(latest_view(mover)["me"]["cards"]) - before).pop()
        async with server.app[POOL].acquire() as conn:
            hand_id = await conn.fetchval("SELECT id FROM hands WHERE table_id = $1 AND hand_no = $2", table, hand_no)
            rows = {
                int(x["i"]): json.loads(x["record"])
                for x in await conn.fetch(
                    "SELECT i, record::text AS record FROM hand_records WHERE hand_id = $1", hand_id
                )
            }
        # what a thief of the database holds: the public projection of record 4
        rec = rows[4]
        ev = next(e for e in rec["events"] if e["kind"] == "draw")
        assert ev["private"] == {}, "the projection hides the card"
        assert "psig" not in rec, "the player's signature is kept in the sealed copy only"
        found = []
        for c in range(deck_size(2)):  # a 4-seat table: two decks and their jokers (D1)
            guess: dict[str, Any] = {
                **rec,
                "events": [{**e, "private": {"card": c}} if e is ev else e for e in rec["events"]],
            }
            if chain_link(rows[3]["h"], guess) == rec["h"]:
                found.append(c)
        await ca.leave(table, hand_no, seat_of(ca))
        await cb.wait_frame(lambda f: f.get("type") == "result")
        await cb.leave(table)
    assert drawn in range(deck_size(2)) and found == [], f"the drawn card {drawn} was recovered from the record at rest"


async def test_a_wrong_declares_finish_card_cannot_be_recovered_at_rest(api: Api, server: Running) -> None:
    """The finish card of a wrong declare (private to the declarer until the end,
    docs/fairness.md A.4), to anyone holding a copy of the database while the hand goes
    on (three seats: the hand continues).  ``public_record`` strips the declare action
    to ``{"kind", "seat"}``; it kept the record's ``psig``, the declarer's signature
    over ``{"kind": "declare", "seat", "card"}``, and verifying it for each of the 106
    card ids (``prev`` and the seat's key beside it) named the card.  The stored public
    record now holds no signature, and the transcript, once the hand ends, holds it."""
    from service.app import POOL

    table, a, b = await seat_two(api, server)
    c = await api.player("cy")
    async with (
        Client(server.url, a["token"], a["signer"]) as ca,
        Client(server.url, b["token"], b["signer"]) as cb,
        Client(server.url, c["token"], c["signer"]) as cc,
    ):
        clients = (ca, cb, cc)
        hand_no = await through_seeds(table, *clients)
        turn = latest_view(ca)["turn"]
        mover = next(x for x in clients if seat_of(x) == turn)
        r = await mover.act(table, hand_no, turn, {"kind": "draw_closed"})
        assert r["type"] == "reply", r
        await wait_for(lambda: latest_view(mover)["phase"] == "discard")
        finish = latest_view(mover)["me"]["cards"][0]
        r = await mover.act(table, hand_no, turn, {"kind": "declare", "card": finish})
        assert r["type"] == "reply", r
        await wait_for(
            lambda: next(s for s in latest_view(ca)["seats"] if s["seat"] == turn)["status"] == "wrong_declare"
        )
        assert latest_view(ca)["phase"] != "ended", "the hand goes on with two seats"
        async with server.app[POOL].acquire() as conn:
            hand_id = await conn.fetchval("SELECT id FROM hands WHERE table_id = $1 AND hand_no = $2", table, hand_no)
            rows = [
                json.loads(x["record"])
                for x in await conn.fetch(
                    "SELECT record::text AS record FROM hand_records WHERE hand_id = $1 ORDER BY i", hand_id
                )
            ]
        rec = next(x for x in rows if x.get("type") == "action" and x["action"]["kind"] == "declare")
        assert "card" not in rec["action"], "the projection strips the finish card"
        assert "psig" not in rec, "the declarer's signature is kept in the sealed copy only"
        for x in clients:
            if seat_of(x) != turn and latest_view(x)["phase"] != "ended":
                await x.leave(table, hand_no, seat_of(x))
                break
        for x in clients:
            await x.wait_frame(lambda f: f.get("type") == "result")
            await x.leave(table)
    transcript = await api.call("GET", f"/api/hands/{hand_id}/transcript", token=None, expect=200)
    published = next(x for x in transcript["log"] if x.get("type") == "action" and x["action"]["kind"] == "declare")
    assert published["action"]["card"] == finish and published["psig"]["sig"]  # published whole, at the end
