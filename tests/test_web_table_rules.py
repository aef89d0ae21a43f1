"""The table page against signed headers it must not sign under, in a real headless
Chromium against a real server.

A house that changes a table's rules for one hand (RULES.md D38), made dishonest in
memory: the page signs nothing in that hand, says why, keeps the signed header, and its
own verdict on the hand — the browser verifier with the page's evidence, which holds the
header of the table's earlier hand — fails ``evidence`` (docs/fairness.md §15 rule 3);
and the raised header it kept does not become the table's rules for the next hand.

A house that deals the next hand from the same seat (the button not moved, RULES.md
D3): the page signs nothing in that hand, and its verdict fails ``evidence``; one that
deals a table's first hand from another seat than its lowest: the page signs nothing,
and its verdict fails ``chain``.

A header that lists another key for the person's seat (§15 rule 4): the page commits
nothing and signs no move in that hand (moved here from tests/test_web_table.py)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import pathlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from playwright.async_api import Browser, Page

from service.app import TABLES
from service.tablecore.phase import HandPhase
from tests.conftest import Api, wait_for
from tests.heldbot import no_declares
from tests.skipclock import SkipClock, clocked
from tests.test_web_table import (
    PatientBot,
    at_the_table,
    conn,
    me,
    new_person,
    page_state,
    person_page,
    server_key,
    sign_in,
    start_bots,
    stop_bots,
)
from verifier.hand import dealer_after
from verifier.signing import Signer
from verifier.transcript import verify_transcript

SEATED = "() => RummyTable.state.t.seats && Object.keys(RummyTable.state.t.seats).length === {n}"
VERDICT = (
    "(n) => { const r = RummyTable.state.t.results;"
    " return !!(r && r.hand_no === n && r.verdict && document.querySelector('#auto-verdict[data-ok]')); }"
)


async def sit_again_for_the_next_hand(page: Page, after: int) -> int:
    """Stood up when the clock dropped it (D31): the person reads the results, sits
    again, and is shown the next hand's header; its number."""
    await page.click("#results-close")
    if await page.is_visible("#situation-close"):
        await page.click("#situation-close")
    await page.locator("#seats button.sit-here").first.click()
    await page.wait_for_function(
        "(n) => { const h = RummyTable.state.t.hand; return !!(h && h.hand_no > n && h.header); }",
        arg=after,
        timeout=60_000,
    )
    return int(await page.evaluate("RummyTable.state.t.hand.hand_no"))


@contextlib.asynccontextmanager
async def seated_with_a_bot(
    browser: Browser, base: str, person: dict[str, Any], table_id: str, bot: PatientBot
) -> AsyncIterator[Page]:
    """``person``'s page, in a fresh profile: signed in, at the table and seated; once
    it is seated the bot starts playing (stopped once the page is closed)."""
    tasks: list[asyncio.Task[None]] = []
    try:
        async with person_page(browser) as (_context, page, _console):
            await at_the_table(page, base, person, table_id)
            await page.locator("#seats button.sit-here").first.click()
            await page.wait_for_function(SEATED.format(n=1))
            tasks = start_bots([bot])
            yield page
    finally:
        await stop_bots(tasks)


async def first_hand_verified(page: Page) -> int:
    """The page commits in its first hand (keeping the signed header), and its own
    verdict on that hand passes: the hand's number."""
    await page.wait_for_function("() => RummyTable.state.t.hand && RummyTable.state.t.hand.committed")
    hand_no = int(await page.evaluate("RummyTable.state.t.hand.hand_no"))
    await page.wait_for_function(VERDICT, arg=hand_no, timeout=60_000)
    assert await page.get_attribute("#auto-verdict", "data-ok") == "true"
    return hand_no


async def verdict_fails_evidence(page: Page, hand_no: int) -> None:
    """The page's own verdict on hand ``hand_no`` fails, at ``evidence``."""
    await page.wait_for_function(VERDICT, arg=hand_no, timeout=90_000)
    assert await page.get_attribute("#auto-verdict", "data-ok") == "false"
    assert await page.get_attribute("#auto-verdict", "data-check") == "evidence"


async def shown_transcript(page: Page, api: Api) -> dict[str, Any]:
    """The published transcript of the hand whose results the page shows."""
    hand_id = await page.evaluate("RummyTable.state.t.results.hand_id")
    t: dict[str, Any] = await api.call("GET", f"/api/hands/{hand_id}/transcript", token=None, expect=200)
    return t


def seat_and_commit(t: dict[str, Any], player_id: str) -> tuple[int, str | None]:
    """The player's seat in the transcript's hand, and the commitment its log records
    for that seat (None: nothing committed)."""
    seat = next(s["seat"] for s in t["log"][0]["header"]["seats"] if s["player_id"] == player_id)
    commits = {c["seat"]: c["commit"] for c in t["log"][1]["commitments"]["commits"]}
    return int(seat), commits[seat]


async def test_the_page_signs_nothing_under_raised_rules_and_its_verdict_fails(
    server: Any, api: Api, browser: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hand 1 under the table's rules (500 bps): the page commits, keeping the signed
    header, and the clock drops the person (D16), who is stood up (D31) and sits
    again.  The house then raises the commission to 10 000 bps in memory: hand 2's
    header gives other rules than hand 1's, so the page commits nothing, warns, and
    once the clock has played the hand out its verdict is ``evidence`` — while the
    transcript alone verifies."""
    no_declares(monkeypatch)  # the bot's first-turn declare would end a hand before the clock drops the person
    table_id = await api.table(
        seats=4, point_value=1, commission_bps=500, turn_seconds=3, max_missed_turns=1, min_players=2
    )
    person = await new_person(api, "Rhea")
    p = await api.player("d38-page-bot")
    bot = PatientBot(server.url, p["token"], table_id, fast=True, key=p["signer"])
    async with seated_with_a_bot(browser, server.url, person, table_id, bot) as page:
        hand_1 = await first_hand_verified(page)
        facts = server.app[TABLES][table_id].core.facts
        assert facts.rules.commission_bps == 500
        facts.rules = dataclasses.replace(facts.rules, commission_bps=10_000)  # the house cheats from here on
        raised = await sit_again_for_the_next_hand(page, hand_1)
        assert await page.evaluate("!!RummyTable.state.t.hand.headerWrong")
        assert "other rules" in (await page.text_content("#header-check") or "")
        assert "commission_bps 10000 for 500" in (await page.text_content("#header-check") or "")
        await verdict_fails_evidence(page, raised)
        assert "D38" in (await page.text_content("#log") or "")
        t = await shown_transcript(page, api)
        assert t["log"][0]["header"]["rules"]["commission_bps"] == 10_000
        mine, commit = seat_and_commit(t, person["id"])
        assert commit is None  # nothing signed under the raised rules
        assert not [r for r in t["log"] if r.get("psig") and r["action"]["seat"] == mine]
        key = bytes.fromhex(t["log"][0]["header"]["public_key"])
        assert verify_transcript(t, key).ok  # alone, the hand looks sound
        evidence = await page.evaluate(f"RummyTable.evidence({raised})")
        assert [e["body"]["rules"] for e in evidence if e["purpose"] == "header"] == [t["log"][0]["header"]["rules"]]
        # the raised header, refused and kept as proof, is not taken for the table's rules
        # in the next hand: still hand 1's
        await sit_again_for_the_next_hand(page, raised)
        assert await page.evaluate("!!RummyTable.state.t.hand.headerWrong")
        assert "commission_bps 10000 for 500" in (await page.text_content("#header-check") or "")


async def test_the_page_signs_nothing_where_the_button_did_not_move_and_its_verdict_fails(
    server: Any, api: Api, browser: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RULES.md D3: hand 1 is dealt by the table's lowest seat, and the page keeps its
    signed header.  The house then deals hand 2 from another seat than the one the
    button moves to (made dishonest in memory): the page commits nothing,
    says why, and its verdict on the hand, with the page's evidence holding hand 1's
    header, is ``evidence`` (docs/fairness.md §15 rule 3) — as is ``rummy-verify``'s,
    while the transcript alone verifies."""
    from service.tablecore import steps as steps_module

    no_declares(monkeypatch)  # the bot's first-turn declare would end a hand before the clock drops the person
    table_id = await api.table(seats=4, point_value=1, turn_seconds=3, max_missed_turns=1, min_players=2)
    person = await new_person(api, "Dara")
    p = await api.player("d3-page-bot")
    bot = PatientBot(server.url, p["token"], table_id, fast=True, key=p["signer"])
    async with seated_with_a_bot(browser, server.url, person, table_id, bot) as page:
        hand_1 = await first_hand_verified(page)
        honest = steps_module.dealer_after  # the house cheats: any seat but the one the button moves to
        monkeypatch.setattr(steps_module, "dealer_after", lambda o, last: next(s for s in o if s != honest(o, last)))
        kept = await sit_again_for_the_next_hand(page, hand_1)
        assert kept == hand_1 + 1
        assert "is dealt by seat" in (await page.text_content("#header-check") or "")
        await verdict_fails_evidence(page, kept)
        t = await shown_transcript(page, api)
        header = t["log"][0]["header"]
        _mine, commit = seat_and_commit(t, person["id"])
        assert commit is None  # nothing signed where the button did not move
        key = bytes.fromhex(header["public_key"])
        assert verify_transcript(t, key).ok  # alone, the hand looks sound
        # the page's items of both hands, as its evidence download holds them
        evidence = await page.evaluate(f"[...RummyTable.evidence({hand_1}), ...RummyTable.evidence({kept})]")
        (before,) = [e["body"] for e in evidence if e["purpose"] == "header" and e["body"]["hand_no"] == hand_1]
        want = dealer_after(sorted(s["seat"] for s in header["seats"]), before["dealer"])
        assert header["dealer"] != want
        report = verify_transcript(t, key, evidence)
        assert report.failure is not None and report.failure.check == "evidence", report.failure
        assert (report.failure.expected, report.failure.found) == (want, header["dealer"])


async def header_refused(page: Page, bot: PatientBot, says: str, why: str) -> str:
    """The page was shown a header it must not sign under: it commits nothing and says
    why (``says``, in what it shows); the bot refuses it too (``why`` in each reason it
    gives).  What the page shows."""
    await page.wait_for_function(
        "() => { const h = RummyTable.state.t.hand; return !!(h && h.header && h.headerWrong); }",
        timeout=60_000,
    )
    shown = await page.text_content("#header-check") or ""
    assert says in shown, shown
    assert not await page.evaluate("!!RummyTable.state.t.hand.committed")
    await wait_for(lambda: bool(bot.shunned), timeout=60)
    assert all(why in reason for reason in bot.shunned.values()), bot.shunned
    return shown


async def test_the_page_signs_nothing_under_a_seed_window_below_the_floor(
    server: Any, api: Api, browser: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RULES.md D21: a house that gives one hand a 1 ms reveal window (made dishonest
    in memory, as a server started with less is refused) shows the page a header it
    must not sign under: the page commits nothing and says why."""
    no_declares(monkeypatch)
    table_id = await api.table(seats=4, point_value=1, turn_seconds=3, max_missed_turns=1, min_players=2)
    core = server.app[TABLES][table_id].core
    monkeypatch.setattr(core, "cfg", dataclasses.replace(core.cfg, reveal_ms=1))  # the house cheats
    person = await new_person(api, "Ines")
    p = await api.player("d21-page-bot")
    bot = PatientBot(server.url, p["token"], table_id, fast=True, key=p["signer"], max_hands=1)
    async with seated_with_a_bot(browser, server.url, person, table_id, bot) as page:
        shown = await header_refused(page, bot, "seed window reveal_ms of 1 ms", "D21")
        assert "D21" in shown, shown


async def test_the_page_signs_nothing_under_a_first_hand_not_dealt_by_the_lowest_seat(
    server: Any, api: Api, browser: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RULES.md D3: nothing before a table's first hand moves the button, so its lowest
    seat deals it.  A house that deals hand 1 from its highest seat (made dishonest in
    memory) shows the page a header it must not sign under: the page commits nothing
    and says why, the bot refuses it too, and the page's own verdict on the hand fails
    ``chain`` (docs/fairness.md §14), as ``rummy-verify``'s does."""
    from service.tablecore import steps as steps_module

    honest = steps_module.dealer_after
    monkeypatch.setattr(steps_module, "dealer_after", lambda o, last: max(o) if last is None else honest(o, last))
    no_declares(monkeypatch)
    table_id = await api.table(seats=4, point_value=1, turn_seconds=3, max_missed_turns=1, min_players=2)
    person = await new_person(api, "Fenna")
    p = await api.player("d3-first-page-bot")
    bot = PatientBot(server.url, p["token"], table_id, fast=True, key=p["signer"], max_hands=1)
    async with seated_with_a_bot(browser, server.url, person, table_id, bot) as page:
        await header_refused(page, bot, "a table's first hand's (D3)", "first hand")
        assert await page.evaluate("RummyTable.state.t.hand.hand_no") == 1
        await page.wait_for_function(VERDICT, arg=1, timeout=90_000)
        assert await page.get_attribute("#auto-verdict", "data-ok") == "false"
        assert await page.get_attribute("#auto-verdict", "data-check") == "chain"
        t = await shown_transcript(page, api)
        header = t["log"][0]["header"]
        assert header["dealer"] == max(s["seat"] for s in header["seats"]) != min(s["seat"] for s in header["seats"])
        report = verify_transcript(t, bytes.fromhex(header["public_key"]))
        assert report.failure is not None and report.failure.check == "chain", report.failure


async def test_a_header_listing_another_key_gets_no_commitment_and_a_hand_ended_away_is_shown(
    server: Any, api: Api, browser: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key the signed header lists for the person's seat is not the page's (another
    device registered its own after the page did): the page says so and commits
    nothing, and signs no move in that hand.  The page then loses the network, and the
    hand ends meanwhile (the clock drops the seat, D16): back online, the page says so
    and shows the result from the published transcript.

    The table's clock stands still but for what the test skips (``SkipClock(wall=False)``),
    and the test skips it only once the page is offline, and only while the clock would
    charge the person alone: the seat cannot be dropped before the page goes offline,
    nor the bot be charged for a move it is slow to send on a busy machine."""
    # The bot never declares: a first-turn declare (about 1 deal in 100 with its
    # strategy) would end the hand before the clock drops the person
    no_declares(monkeypatch)
    table_id = await api.table(seats=4, point_value=1, turn_seconds=3, max_missed_turns=1, min_players=2)
    actor, clock = await clocked(server, table_id, SkipClock(wall=False))  # time only as skipped
    person = await new_person(api, "Omar")
    p = await api.player("steady-bot")
    other = PatientBot(server.url, p["token"], table_id, fast=True, key=p["signer"], max_hands=1)
    tasks: list[asyncio.Task[None]] = []
    try:
        async with person_page(browser) as (context, page, _console):
            await sign_in(page, server.url, person["token"], "Omar")
            mine = (await me(api, person["token"]))["public_key"]
            await page.goto(server.url + f"/#/table/{table_id}")
            await page.locator("#seats button.sit-here").first.click()
            await page.wait_for_function(
                "() => RummyTable.state.t.seats && Object.keys(RummyTable.state.t.seats).length === 1"
            )
            substitute = Signer.generate().public_bytes.hex()  # a strict key: the server refuses others (bad_key)
            await api.call("PUT", "/api/me/key", token=person["token"], body={"public_key": substitute}, expect=200)
            tasks = start_bots([other])
            await wait_for(lambda: len(actor.t.seats) == 2, timeout=60)  # the bot sits
            await clock.skip([actor], 120, until=lambda: actor.hand is not None)  # what waits for the deal
            assert actor.hand is not None and actor.hand.phase is HandPhase.COMMIT
            await page.wait_for_function(
                "() => document.getElementById('alert-text').textContent.includes('does not list your key')",
                timeout=60_000,
            )
            assert "The header lists another key for you" in (await page.text_content("#key-check") or "")
            async with page.expect_download() as dl:  # the signed proof of the substitution
                await page.click("#download-header")
            proof = json.loads(pathlib.Path(await (await dl.value).path()).read_text())
            assert proof["i"] == 0 and proof["sig"]
            assert any(s["player_key"] == substitute for s in proof["header"]["seats"])
            # the hand goes on without the person's seed or moves, and without the page
            hand_id = (await page_state(page))["hand_id"]
            assert await page.evaluate("!RummyTable.state.t.results")  # the page has seen no end of it
            await context.set_offline(True)
            await page.evaluate("RummyTable.dropConnection()")
            assert actor.hand is not None and actor.hand.phase is HandPhase.COMMIT  # the hand still on
            seat_no = actor.hand.seat_of(person["id"])

            def person_alone_charged() -> bool:
                hand = actor.hand
                return (
                    hand is not None and hand.phase is not HandPhase.FINISHING and actor.core.charged(hand) == [seat_no]
                )

            transcript: dict[str, Any] = {}
            # the clock drops the seat (D16) and the hand ends: it moves only while it would
            # charge the person alone (the bot's commit, reveal and moves come at its pace);
            # only a hang takes 150 s
            deadline = asyncio.get_running_loop().time() + 150
            while asyncio.get_running_loop().time() < deadline:
                hand = actor.hand
                if hand is not None and hand.phase is not HandPhase.FINISHING:
                    if person_alone_charged():
                        await clock.skip([actor], 1.0, until=lambda: not person_alone_charged())
                    else:
                        await asyncio.sleep(0.05)
                    continue
                transcript = await api.call("GET", f"/api/hands/{hand_id}/transcript", token=None)
                if "log" in transcript:
                    break
                await asyncio.sleep(0.2)
            assert "log" in transcript, transcript
            await context.set_offline(False)
            await page.wait_for_function(conn("open"), timeout=60_000)
            await page.wait_for_function(
                "() => document.getElementById('notice').textContent.includes('the hand ended while you were away')"
            )
            await page.locator("#results-table").wait_for(timeout=60_000)
            assert await page.locator("#results-table tbody tr").count() == 2
            assert verify_transcript(transcript, await server_key(api)).ok
            header = transcript["log"][0]["header"]
            seat = next(s for s in header["seats"] if s["player_id"] == person["id"])
            assert seat["player_key"] == substitute != mine
            commits = {c["seat"]: c["commit"] for c in transcript["log"][1]["commitments"]["commits"]}
            assert commits[seat["seat"]] is None
            signed = [r for r in transcript["log"] if r.get("psig") and r["action"]["seat"] == seat["seat"]]
            assert signed == []
            evidence = await page.evaluate(f"RummyTable.evidence({transcript['hand_no']})")
            # heads, and the header it refused (its proof, §15): no ack, no player item — nothing signed
            assert {e["purpose"] for e in evidence} == {"head", "header"}
            (kept,) = [e for e in evidence if e["purpose"] == "header"]
            assert kept["body"] == header and kept["sig"] == transcript["log"][0]["sig"]
            assert "Warning: hand" in (await page.text_content("#log") or "")
            row = page.locator(f'#results-table tr[data-seat="{seat["seat"]}"]')
            assert (await row.locator("td.how").text_content() or "").strip() == "dropped by the clock"
            assert await row.locator("td.points").get_attribute("data-points") == "20"
    finally:
        await stop_bots(tasks)
