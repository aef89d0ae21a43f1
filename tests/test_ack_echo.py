"""A client checks each ack of its own moves on receipt (docs/fairness.md §15, "On
receipt"; :mod:`verifier.echo`).  A house that refuses a legal move and garbles the
echo (another ``psig``) makes its refusal look justified to every third party — the
verifier included, which these tests show — so only the client that sent the move can
see it: the bots keep the dispute and make the move again while the turn still runs."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import pytest
from playwright.async_api import Browser, Page

from service.bots import Bot
from service.startup import Running
from service.tablecore.commands import Commands, Judged
from service.tablecore.errors import ClientError
from tests.conftest import Api, wait_for
from tests.heldbot import HeldBot
from tests.test_recovery import key_of
from tests.test_web_table import (
    MY_MOVE,
    bot,
    new_person,
    page_state,
    person_page,
    sign_in,
    start_bots,
    stop_bots,
)
from verifier.echo import SLACK_MS, Sent, echo_faults
from verifier.transcript import verify_transcript

MOVE = {"kind": "discard", "seat": 2, "card": "7H"}
SENT = Sent("t-echo", 4, 2, MOVE, "ab" * 32, "cd" * 64, 1_000_000)
ECHO = {
    "table_id": "t-echo",
    "hand_no": 4,
    "seat": 2,
    "move": {"card": "7H", "kind": "discard", "seat": 2},  # the same move, keys in another order
    "prev": "ab" * 32,
    "psig": "cd" * 64,
    "i": 9,
    "h": "ef" * 32,
    "arrived": 1_000_040,
    "outcome": "refused",
    "code": "busy",
}


def test_a_faithful_echo_has_no_fault() -> None:
    assert echo_faults(ECHO, SENT, "refused") == []
    assert echo_faults({**ECHO, "outcome": "accepted", "code": None}, SENT, "accepted") == []
    # the client's estimate of the server's clock may be a few seconds off
    assert echo_faults({**ECHO, "arrived": SENT.at - SLACK_MS}, SENT, "refused") == []


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("psig", "cd" * 63 + "ce"),  # a signature the player never made: the refusal looks justified
        ("prev", "aa" * 32),  # another record: the move looks stale
        ("move", {"kind": "discard", "seat": 2, "card": "8H"}),  # another move: illegal, say
        ("move", {"kind": "discard", "seat": 2, "card": "7H", "x": 1.5}),  # not JSON data of §2
        ("move", "discard 7H"),
        ("seat", 3),
        ("hand_no", 5),
        ("table_id", "t-other"),
        ("outcome", "accepted"),
        ("arrived", SENT.at - SLACK_MS - 1),  # before the move was sent: the house would owe less time (D35)
        ("arrived", None),
    ],
)
def test_each_field_that_does_not_echo_the_move_is_a_fault(field: str, value: Any) -> None:
    faults = echo_faults({**ECHO, field: value}, SENT, "refused")
    assert [f.field for f in faults] == [field]
    assert faults[0].found == value and str(faults[0]).startswith(field + ": expected ")


async def two_bots_play_a_hand(api: Api, server: Running, name: str) -> tuple[str, list[Bot]]:
    """Two bots that never drop play one hand at a new table: the table and the bots."""
    table = await api.table(seats=4, point_value=1, turn_seconds=20)
    bots = []
    for n in range(2):
        p = await api.player(f"{name}{n}", deposit=50_000)
        bots.append(Bot(server.url, p["token"], table, fast=True, max_hands=1, key=p["signer"], drops=False))
    await asyncio.wait_for(asyncio.gather(*(b.run() for b in bots)), timeout=120)
    return table, bots


@contextlib.asynccontextmanager
async def person_beside_a_bot(
    server: Running, api: Api, browser: Browser, name: str
) -> AsyncIterator[tuple[Page, HeldBot]]:
    """A person in the table page, seated at a new table beside a bot that never drops
    (turns of two minutes): the page and the bot."""
    table = await api.table(seats=4, point_value=1, turn_seconds=120, min_players=2)
    person = await new_person(api, name)
    held = await bot(api, server.url, table, f"{name}-bot")
    tasks = start_bots([held])
    try:
        async with person_page(browser) as (_context, page, _console):
            await sign_in(page, server.url, person["token"], name)
            await wait_for(lambda: held.seat is not None, timeout=60)
            await page.goto(server.url + f"/#/table/{table}")
            await page.locator("#seats button.sit-here").first.click()
            yield page, held
    finally:
        await stop_bots(tasks)


def flip(hex_text: str) -> str:
    """The same hex with its last byte changed."""
    return hex_text[:-2] + ("00" if hex_text[-2:] != "00" else "01")


def dishonest_house(
    monkeypatch: pytest.MonkeyPatch, refuse: Any = lambda judged: True, garble: str = "psig"
) -> list[Judged]:
    """The house refuses the first action it judges for which ``refuse(judged)`` holds
    (``busy``), and garbles its refusals' acks: the ``psig`` they echo (``psig``) or
    their own signature (``sig``); returns the moves refused."""
    refused: list[Judged] = []
    apply = Commands.apply

    def dishonest_apply(self: Commands, hand: Any, action: Any, psig: Any, now: int, cmd: Any = None) -> None:
        judged = self.judged
        if cmd is not None and not refused and judged is not None and refuse(judged):
            refused.append(judged)
            raise ClientError("busy", "the table is busy")
        apply(self, hand, action, psig, now, cmd)

    ack = Judged.ack

    def garbled_ack(self: Judged, code: str | None = None) -> dict[str, Any]:
        if code == "busy" and garble == "psig":
            return ack(dataclasses.replace(self, psig=flip(self.psig)), code)
        if code == "busy" and garble == "sig":
            item = ack(self, code)
            return {**item, "sig": flip(item["sig"])}
        return ack(self, code)

    monkeypatch.setattr(Commands, "apply", dishonest_apply)
    monkeypatch.setattr(Judged, "ack", garbled_ack)
    return refused


@pytest.mark.parametrize("garble", ["psig", "sig"])
async def test_a_refusal_that_garbles_the_echo_is_disputed_and_the_move_made_again(
    api: Api, server: Running, monkeypatch: pytest.MonkeyPatch, garble: str
) -> None:
    """The house refuses the first action a player sends (``busy``) and signs an ack
    whose ``psig`` is not the one received.  The bot keeps the dispute, makes the move
    again, and the seat is not charged for the turn (a bot that did not check the
    echo waited out the turn and was timed out).  And the ack is now proof: no table
    judges a move its player did not sign (§15), so the verifier fails the evidence
    that holds it — before 2026-12-07 the refusal passed as justified (the echoed
    signature does not verify) and only the bot could tell.  ``sig``: the echo is
    right but the ack's own signature does not verify — no proof of the refusal: the
    same dispute, the same retry, and the evidence passes."""
    refused = dishonest_house(monkeypatch, garble=garble)
    table, bots = await two_bots_play_a_hand(api, server, "echo")

    assert len(refused) == 1
    judged = refused[0]
    disputed = [b for b in bots if b.disputes]
    assert len(disputed) == 1, [b.disputes for b in bots]
    bot = disputed[0]
    (dispute,) = bot.disputes
    assert [f.field for f in dispute["faults"]] == [garble]
    assert dispute["sent"].psig == judged.psig and dispute["ack"]["body"]["code"] == "busy"
    kept = bot.evidence_of(table, judged.hand.hand_no)
    assert (dispute["ack"] in kept) == (garble == "psig")  # an ack that does not verify is not evidence

    t = await api.call("GET", bot.hands_seen[0]["transcript"], expect=200)
    report = verify_transcript(t, await key_of(api), kept)
    if garble == "psig":  # the ack misquotes the move (§15 rule 7)
        assert not report.ok and report.failure is not None and report.failure.check == "evidence"
        assert "misquotes" in report.failure.message, report.failure.message
    else:
        assert report.ok, report.failure
    after = t["log"][dispute["ack"]["body"]["i"] + 1]
    assert after["action"]["seat"] == judged.seat and after["action"]["kind"] != "timeout", after
    assert not any(r.get("action", {}).get("kind") == "timeout" for r in t["log"])


async def test_honest_acks_echo_every_move(api: Api, server: Running) -> None:
    """Every ack a bot keeps is of a move it sent and echoes it: no dispute in honest
    play (the check runs on each, counted)."""
    _, bots = await two_bots_play_a_hand(api, server, "honest")
    for b in bots:
        acks = [e for e in b.evidence if e["purpose"] == "ack"]
        assert len(acks) >= 3 and b.echoed == len(acks), (b.echoed, len(acks), b.errors, b.hands_seen)
        assert b.disputes == []


@pytest.mark.parametrize("garble", ["psig", "sig"])
async def test_the_page_sees_a_refusal_that_garbles_the_echo_and_sends_the_move_again(
    server: Running, api: Api, browser: Browser, monkeypatch: pytest.MonkeyPatch, garble: str
) -> None:
    """The same house against a person in the table page: the page's first action is
    refused under an ack that does not echo it; the page says so (the table's log, the
    hand's checks), sends the move again, and the move goes through."""
    async with person_beside_a_bot(server, api, browser, "Ines") as (page, held):
        refused = dishonest_house(monkeypatch, lambda judged: judged.seat != held.seat, garble)
        assert await (await page.wait_for_function(MY_MOVE, timeout=60_000)).json_value() == "draw"
        ok = await page.evaluate("RummyTable.act('draw_closed')")
        assert ok is True and len(refused) == 1
        await page.wait_for_selector("#ack-check")
        assert garble in (await page.text_content("#ack-check") or "")
        log = await page.evaluate("RummyTable.state.t.log.map((l) => l.text)")
        warned = [line for line in log if "does not name the move you sent" in line]
        assert len(warned) == 1 and f"({garble})" in warned[0] and "sends your move again" in warned[0], log[-8:]
        st = await page_state(page)
        assert st["seat"] == refused[0].seat and len(st["cards"]) == 14  # the draw went through
