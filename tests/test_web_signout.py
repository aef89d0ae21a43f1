"""Signing out of the table page in a real headless Chromium: what shows the player's
cards (its hands' arrangements, its tables' logs) leaves this browser's localStorage,
so the next person at a shared browser cannot read a live hand's cards; what the
player still needs (its seeds) stays, and the evidence of a hand still in play is
downloaded (the player keeps it as a file) and forgotten, since a closed draw's ack
names the card drawn (tests/test_audit_h87_leaks.py).  Found by the leak audits of
2026-12-07 (helper-60, helper-87)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from playwright.async_api import Browser

from tests.conftest import Api
from tests.heldbot import HeldBot
from tests.test_web_table import at_the_table, new_person, person_page, start_bots, stop_bots

KEYS = "() => Object.keys(window.localStorage)"


async def test_signing_out_forgets_the_cards_and_hands_a_live_hands_evidence_to_the_player(
    server: Any, api: Api, browser: Browser
) -> None:
    table_id = await api.table(seats=4, point_value=1, turn_seconds=60, min_players=2)
    person = await new_person(api, "Ines")
    p = await api.player("signout-bot")
    tasks = []
    try:
        async with person_page(browser) as (_context, page, _console):
            await at_the_table(page, server.url, person, table_id)
            await page.locator("#seats button.sit-here").first.click()
            # the bot makes no move of its own (its go is never set): the hand stays live
            # while the page is read, however long a busy machine takes (a 30 s think
            # before each move raced the test, and a first-turn declare would end the hand)
            held = HeldBot(server.url, p["token"], table_id, fast=True, key=p["signer"], drops=False)
            tasks = start_bots([held])
            await page.wait_for_function(
                "() => { const h = RummyTable.state.t.hand; return !!(h && h.view && h.view.me && h.arr); }",
                timeout=60_000,
            )
            mine = person["id"]
            before = await page.evaluate(KEYS)
            cards = [k for k in before if k.startswith((f"rummypf.arr.{mine}.", f"rummypf.log.{mine}."))]
            assert any(k.startswith(f"rummypf.arr.{mine}.") for k in cards), before  # the live hand's arrangement
            kept = [k for k in before if k.startswith(f"rummypf.evidence.{mine}.")]
            assert kept, before
            items = json.loads(await page.evaluate(f"() => localStorage.getItem({json.dumps(kept[0])})"))
            async with page.expect_download() as got:
                await page.click("#sign-out")
            download = await got.value
            taken = json.loads(Path(await download.path()).read_text())
            await page.wait_for_function("() => document.body.dataset.view !== 'table'")
            after = await page.evaluate(KEYS)
            assert not [k for k in after if k in cards], after
            assert not [k for k in after if k in kept], after  # the live hand's evidence: taken away
            assert download.suggested_filename.startswith(f"evidence-{table_id}-hand"), download.suggested_filename
            assert all(x in taken for x in items), (items, taken)  # all of it, in the player's file
            assert any(k.startswith(f"rummypf.seed.{mine}.") for k in after), after  # the seed stays
            assert await page.is_visible("#notice") and "downloaded" in await page.inner_text("#notice")
    finally:
        await stop_bots(tasks)
