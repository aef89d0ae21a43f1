"""The audit h87 of hidden cards, as a curious player or spectator would look for them.

1. The ack of a declare echoes its move, ``hint`` and all: the groups of the 13 cards
   the declarer keeps.  A wrong declare at a table of three or more seats keeps those
   cards hidden until the hand ends, yet their ids went out unpadded in the
   declarer's reply, so the encrypted frame's length told how many of them have one,
   two or three digits (the side channel ``service.fastjson.to_client`` closes for
   ``cards``, ``card``, ``drawn_this_turn`` and ``finish``).  Fixed: a hint's ids are
   padded too.
2. The table page keeps every ack as evidence in localStorage, and keeps it when the
   player signs out (service/web/table/store.js ``forgetCards``: "neither shows a card
   the player holds").  The ack of a closed draw holds everything its record holds but
   the card (``prev``, the player's ``psig``, ``i``, ``h``, ``arrived``, which is the
   record's ``t``), so trying each of the pack's ids against ``h`` names the card drawn:
   the next person at a shared browser reads a live hand's cards.  Fixed: signing out
   downloads the evidence of each hand still in play (the player keeps it, as a file)
   and forgets it in the browser; the evidence of ended hands stays.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from playwright.async_api import Browser

from service.startup import Running
from tests.conftest import Api, wait_for
from tests.test_server import latest_view, seat_of, seat_two, through_seeds
from tests.test_web_table import PatientBot, at_the_table, new_person, person_page, start_bots, stop_bots
from tests.wsclient import Client
from verifier.cards import deck_size
from verifier.chain import chain_link

HINT = re.compile(r'"hint":\[(\[[^\]]*\](?:,\[[^\]]*\])*)\]')


async def test_a_wrong_declares_hint_tells_no_card_by_the_length_of_the_reply(api: Api, server: Running) -> None:
    table, a, b = await seat_two(api, server)
    c = await api.player("cy")
    s = await api.player("spectator")
    async with (
        Client(server.url, a["token"], a["signer"]) as ca,
        Client(server.url, b["token"], b["signer"]) as cb,
        Client(server.url, c["token"], c["signer"]) as cc,
        Client(server.url, s["token"], s["signer"]) as cs,
    ):
        await cs.request({"type": "join", "table_id": table})
        clients = (ca, cb, cc)
        hand_no = await through_seeds(table, *clients)
        turn = latest_view(ca)["turn"]
        mover = next(x for x in clients if seat_of(x) == turn)
        r = await mover.act(table, hand_no, turn, {"kind": "draw_closed"})
        assert r["type"] == "reply", r
        await wait_for(lambda: latest_view(mover)["phase"] == "discard")
        finish, *kept = latest_view(mover)["me"]["cards"]
        hint = [kept[:3], kept[3:6], kept[6:]]  # not a valid declare: the hand goes on
        n = len(mover.texts)
        r = await mover.act(table, hand_no, turn, {"kind": "declare", "card": finish, "hint": hint})
        assert r["type"] == "reply", r
        await wait_for(
            lambda: next(x for x in latest_view(cs)["seats"] if x["seat"] == turn)["status"] == "wrong_declare"
        )
        assert latest_view(cs)["phase"] != "ended"
        reply = next(t for t in mover.texts[n:] if '"type":"reply"' in t)
        shown = HINT.search(reply)
        assert shown is not None, reply  # the ack echoes the move
        assert json.loads("[" + shown[1] + "]") == hint
        ids = re.findall(r"[ 0-9]+", shown[1])
        assert len(ids) == 13 and all(len(x) == 3 for x in ids), f"a hint's ids unpadded: {shown[0]}"
        # and nobody else is told the hint or the finish card
        for x in (cs, *(y for y in clients if y is not mover)):
            assert not [t for t in x.texts if '"hint"' in t or '"finish"' in t]
        for x in clients:
            if seat_of(x) != turn:
                await x.leave(table, hand_no, seat_of(x))
                break
        for x in clients:
            await x.wait_frame(lambda f: f.get("type") == "result")
            await x.leave(table)


DRAWN = {"source": "closed", "by_clock": False}


def drawn_from_ack(body: dict[str, Any], decks: int) -> list[int]:
    """The cards whose closed-draw record the ack ``body`` names by its ``h``."""
    seat = body["seat"]
    found = []
    for card in range(deck_size(decks)):
        record = {
            "i": body["i"],
            "t": body["arrived"],
            "type": "action",
            "action": {"kind": "draw_closed", "seat": seat},
            "psig": {"prev": body["prev"], "sig": body["psig"]},
            "events": [{"kind": "draw", "seat": seat, "data": DRAWN, "private": {"card": card}}],
        }
        if chain_link(body["prev"], record) == body["h"]:
            found.append(card)
    return found


async def test_after_signing_out_the_evidence_left_does_not_name_a_card_drawn(
    server: Any, api: Api, browser: Browser
) -> None:
    table_id = await api.table(seats=4, point_value=1, turn_seconds=120, min_players=2)
    person = await new_person(api, "Ravi")
    p = await api.player("h87-bot")
    tasks = []
    try:
        async with person_page(browser) as (_context, page, _console):
            await at_the_table(page, server.url, person, table_id)
            await page.locator("#seats button.sit-here").first.click()
            tasks = start_bots([PatientBot(server.url, p["token"], table_id, fast=True, key=p["signer"], think=0.2)])
            await page.wait_for_function(
                """() => { const h = RummyTable.state.t.hand, v = h && h.view;
                           return !!(v && v.me && v.turn === h.seat && v.phase === 'draw'); }""",
                timeout=90_000,
            )
            assert await page.evaluate("RummyTable.act('draw_closed')") is not False
            await page.wait_for_function(
                "() => { const v = RummyTable.state.t.hand.view; return v.phase === 'discard' && "
                "v.me.drawn_this_turn !== null; }",
                timeout=30_000,
            )
            hand = await page.evaluate(
                "() => { const h = RummyTable.state.t.hand; "
                "return {hand_no: h.hand_no, drawn: h.view.me.drawn_this_turn}; }"
            )
            async with page.expect_download() as got:
                await page.click("#sign-out")
            taken = json.loads(Path(await (await got.value).path()).read_text())
            await page.wait_for_function("() => document.body.dataset.view !== 'table'")
            left = [
                x
                for text in await page.evaluate(
                    "() => Object.keys(localStorage).filter((k) => k.startsWith('rummypf.evidence.'))"
                    ".map((k) => localStorage.getItem(k))"
                )
                for x in json.loads(text)
                if isinstance(x, dict)  # (the index is a list of names)
            ]
    finally:
        await stop_bots(tasks)

    def named_by(items: list[Any]) -> set[int]:
        draws = [
            x["body"]
            for x in items
            if x.get("purpose") == "ack" and x["body"].get("move", {}).get("kind") == "draw_closed"
        ]
        return {c for body in draws for c in drawn_from_ack(body, decks=2)}

    assert hand["drawn"] not in named_by(left), f"the card drawn ({hand['drawn']}) is named by what the browser kept"
    # the player took the evidence away: the ack of the draw is in the file, whole
    assert hand["drawn"] in named_by(taken), taken
