"""A signed item from the server that does not verify is not kept as evidence
(docs/fairness.md §15.2: one such item makes the whole evidence file fail, and it
proves nothing about the server, which anyone could have "signed" so).  A house that
sends one bad head a hand to every seat would otherwise spoil every player's
evidence file; the bots and the table page set such an item aside and say so."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.async_api import Browser

from service.handrun import HandRun
from service.startup import Running
from tests.conftest import Api
from tests.test_ack_echo import person_beside_a_bot, two_bots_play_a_hand
from tests.test_recovery import key_of
from tests.test_web_table import MY_MOVE, play_my_turn
from verifier.transcript import verify_transcript

BAD = 5  # the record whose head the house signs wrongly


def garble_heads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record BAD's head, in every hand, goes out with a signature that does not verify."""
    garbled: list[int] = []
    head = HandRun.head

    def bad_head(self: HandRun, i: int, h: str | None = None) -> dict[str, Any]:
        got = head(self, i, h)
        if i != BAD:
            return got
        garbled.append(self.hand_no)
        sig = got["sig"]
        return {**got, "sig": sig[:-2] + ("00" if sig[-2:] != "00" else "01")}

    monkeypatch.setattr(HandRun, "head", bad_head)
    return garbled


async def test_the_bots_keep_no_item_that_does_not_verify(
    api: Api, server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    garbled = garble_heads(monkeypatch)
    table, bots = await two_bots_play_a_hand(api, server, "bad-items")
    assert garbled
    t = await api.call("GET", bots[0].hands_seen[0]["transcript"], expect=200)
    key = await key_of(api)
    for b in bots:
        assert [(x["purpose"], x["body"]["i"]) for x in b.rejected] == [("head", BAD)]
        kept = b.evidence_of(table, t["log"][0]["header"]["hand_no"])
        assert not any(x["purpose"] == "head" and x["body"]["i"] == BAD for x in kept)
        report = verify_transcript(t, key, kept)
        assert report.ok, report.failure  # with the bad head kept: "evidence" failed on it
        assert report.summary["evidence"]["checked"] == len(kept) > 4
        assert not verify_transcript(t, key, [*kept, *b.rejected]).ok  # what keeping it did


async def test_the_page_keeps_no_item_that_does_not_verify(
    server: Running, api: Api, browser: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page verifies each server item under its hand's key before keeping it: the
    bad head is said so and not kept, every other item is."""
    garble_heads(monkeypatch)
    async with person_beside_a_bot(server, api, browser, "Oluwa") as (page, _held):
        # The browser pinned another key (the card room's key rotated since): each item is
        # still checked under its own hand's key, the header's (§15.2), and kept.
        await page.evaluate(f"RummyTable.state.serverKey = {'ab' * 32!r}")
        while True:  # play until record BAD has been pushed
            await page.wait_for_function(MY_MOVE, timeout=60_000)
            newest = await page.evaluate("RummyTable.state.t.hand.newest")
            if newest >= BAD:
                break
            await play_my_turn(page, declare=False)  # the hand must reach the record
        await page.wait_for_function(
            "() => (RummyTable.state.t.hand.badSig || '').startsWith('head of record')", timeout=30_000
        )
        log = await page.evaluate("RummyTable.state.t.log.map((l) => l.text)")
        assert any(f"head of record {BAD} from the server does not verify" in x and "not kept" in x for x in log)
        kept = json.loads(
            await page.evaluate(
                """(() => { const h = RummyTable.state.t.hand;
                    return JSON.stringify(RummyTable.evidence(h.hand_no)); })()"""
            )
        )
        heads = sorted(x["body"]["i"] for x in kept if x["purpose"] == "head")
        assert BAD not in heads and heads and max(heads) >= BAD - 1, heads
