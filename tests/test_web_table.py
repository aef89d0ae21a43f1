"""The lobby and table client (``/``: service/web/index.html and its modules in service/web/table/) in a
real headless Chromium, against the real server (PostgreSQL, WebSockets on 127.0.0.1).

A scripted person signs in with a token, finds a table in the lobby, sits, and plays
whole hands through the page's buttons against the reference bots
(:class:`service.bots.Bot`); the page registers its own key, commits and reveals its
seed, signs every move, keeps its evidence, and shows the result with a link to
``/verify``, where every check passes.  Other tests: a move out of turn, a dropped
connection, the lobby, and the routes that serve the pages.  The tests take the
README's pictures; they are written to the folder named by ``RUMMY_SCREENSHOTS``
(``RUMMY_SCREENSHOTS=docs/screenshots`` refreshes the README's), else to a temporary
folder, so a test run never changes the checkout.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pathlib
import re
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from playwright.async_api import Browser, BrowserContext, Page, ViewportSize

from service.bots import Bot
from tests.conftest import Api, wait_for
from tests.heldbot import HeldBot, no_declares
from verifier.fairness import PROTOCOL_V2
from verifier.signing import verify as signature_ok
from verifier.transcript import verify_transcript

SHOTS = pathlib.Path(os.environ.get("RUMMY_SCREENSHOTS") or tempfile.gettempdir() + "/rummy-screenshots")
VIEWPORT: ViewportSize = {"width": 1280, "height": 800}


# ----------------------------------------------------------------------------- helpers
@contextlib.asynccontextmanager
async def person_page(browser: Browser) -> AsyncIterator[tuple[BrowserContext, Page, list[str]]]:
    """A fresh browser profile (its own localStorage and IndexedDB) at 1280×800; any
    JavaScript error on a page of it fails the test."""
    context = await browser.new_context(viewport=VIEWPORT, accept_downloads=True, device_scale_factor=1)
    errors: list[str] = []
    console: list[str] = []

    def watch(page: Page) -> None:
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}"))

    context.on("page", watch)
    page = await context.new_page()
    try:
        yield context, page, console
    except BaseException as e:
        # a test that failed (a wait that timed out, most often) says what the page was
        # showing and what it logged: its errors are otherwise lost with the exception
        e.add_note(f"the page: {await _page_said(page)}")
        e.add_note(f"JavaScript errors on the page: {errors}\nconsole: {console[-30:]}")
        raise
    finally:
        await context.close()
    assert not errors, f"JavaScript errors on the page: {errors}\nconsole: {console[-30:]}"


async def _page_said(page: Page) -> Any:
    """The table page's view, connection, banner and hand, as far as it can say them."""
    try:
        return await asyncio.wait_for(
            page.evaluate(
                """() => {
                  const t = window.RummyTable && RummyTable.state.t, h = t && t.hand;
                  const text = (id) => {
                    const e = document.getElementById(id);
                    return e && !e.hidden ? e.textContent : null;
                  };
                  const hand = h
                    ? {hand_no: h.hand_no, phase: h.phase, me: !!(h.view && h.view.me), arr: !!h.arr}
                    : null;
                  return {view: document.body.dataset.view, conn: t ? t.conn : null, banner: text('banner'),
                          alert: text('alert'), hand, log: t ? t.log.slice(-8).map((l) => l.text) : null};
                }"""
            ),
            5,
        )
    except Exception as e:  # the page is gone or hangs: say so
        return f"not readable ({e!r})"


async def new_person(api: Api, name: str, deposit: int = 100_000) -> dict[str, Any]:
    """A player created without a key: the page makes and registers its own."""
    p: dict[str, Any] = await api.call("POST", "/api/players", body={"name": name, "deposit": deposit}, expect=201)
    return p


async def sign_in(page: Page, base: str, token: str, name: str) -> None:
    await page.goto(base + "/")
    await page.fill("#token-input", token)
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_function("() => document.body.dataset.view === 'lobby'", timeout=60_000)
    assert await page.text_content("#me-name") == name


async def at_the_table(page: Page, base: str, person: dict[str, Any], table_id: str) -> None:
    """Sign ``person`` in and open the table's page, its socket open.  The seats come
    over REST: a click before the socket is open is refused "not connected to the
    table" (the page's own message), which CI once saw."""
    await sign_in(page, base, person["token"], person["name"])
    await page.goto(base + f"/#/table/{table_id}")
    await page.wait_for_function(conn("open"), timeout=30_000)


async def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    await page.screenshot(path=str(path))
    assert path.stat().st_size > 10_000, f"the {name} picture is (nearly) empty"


def seated(bots: Sequence[Bot]) -> Callable[[], bool]:
    return lambda: all(b.seat is not None for b in bots)


def start_bots(bots: Sequence[Bot]) -> list[asyncio.Task[None]]:
    return [asyncio.create_task(b.run()) for b in bots]


async def stop_bots(tasks: list[asyncio.Task[None]]) -> None:
    for t in tasks:
        t.cancel()
    for t in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await t


@dataclass
class PatientBot(Bot):
    """A bot that never drops (so that the hand goes on while the person plays) and
    waits ``think`` seconds before each move (so that the person's page sees the other
    seat on turn for a while); otherwise the reference bot."""

    drops: bool = False
    think: float | None = 0.0


def hold(bots: list[HeldBot]) -> Callable[[], None]:
    """Stop the bots before their next moves (until each one's ``go`` is set again)."""

    def clear() -> None:
        for b in bots:
            b.go.clear()

    return clear


async def bot(api: Api, server_url: str, table_id: str, name: str) -> HeldBot:
    """A bot for one hand that never drops (as PatientBot) and moves at once, until the
    test clears its ``go`` (tests/heldbot.py)."""
    p = await api.player(name)
    b = HeldBot(server_url, p["token"], table_id, fast=True, key=p["signer"], max_hands=1, drops=False, think=0.0)
    b.go.set()
    return b


async def server_key(api: Api) -> bytes:
    k = await api.call("GET", "/api/fairness/key", token=None)
    return bytes.fromhex(k["public_key_hex"])


async def me(api: Api, token: str) -> dict[str, Any]:
    data: dict[str, Any] = await api.call("GET", "/api/me", token=token, expect=200)
    return data


async def page_state(page: Page) -> dict[str, Any]:
    """What the page holds about the hand (its own state, read for assertions)."""
    state: dict[str, Any] = await page.evaluate(
        """() => {
          const t = RummyTable.state.t, h = t && t.hand;
          return h ? {hand_no: h.hand_no, hand_id: h.hand_id, newest: h.newest, seat: h.seat,
                      cards: h.view && h.view.me ? h.view.me.cards : null,
                      turn: h.view ? h.view.turn : null, phase: h.view ? h.view.phase : null,
                      committed: h.committed, revealed: h.revealed, keyOk: h.keyOk, conn: t.conn}
                   : {conn: t ? t.conn : null};
        }"""
    )
    return state


def conn(state: str) -> str:
    """A page function: true when the table page's connection is in ``state``."""
    return f"() => (document.getElementById('conn-state') || {{dataset: {{}}}}).dataset.state === '{state}'"


MY_MOVE = """() => {
  if (!document.querySelector('#results').hidden) return 'results';
  const mine = document.querySelector('#turn-status').dataset.myTurn === 'true';
  if (!mine) return false;
  const s = document.querySelector('#suggestion');
  if (!document.querySelector('#btn-draw-closed').disabled && s.dataset.move.startsWith('draw')) return 'draw';
  if ((s.dataset.move === 'discard' || s.dataset.move === 'declare') && s.dataset.card) return 'discard';
  return false;
}"""


async def arrangement(page: Page) -> list[list[int]]:
    arr: list[list[int]] = await page.evaluate("RummyTable.state.t.hand.arr")
    return arr


async def select(page: Page, card: str) -> None:
    """Select a card of the hand (a click selects, a second click would unselect)."""
    button = page.locator(f'#hand button[data-card="{card}"]')
    if await button.get_attribute("aria-pressed") != "true":
        await button.click()
    assert await button.get_attribute("aria-pressed") == "true"


async def finish_turn(page: Page, *, picture: bool = False, declare: bool = True) -> tuple[str, bytes | None]:
    """With 14 cards: (sort and take a picture,) select the card the page suggests and
    discard it, or declare when the page says the hand is complete — unless
    ``declare`` is False (a test that needs the hand to go on): then the card is
    discarded, a legal move in every hand."""
    move = await page.get_attribute("#suggestion", "data-move")
    card = await page.get_attribute("#suggestion", "data-card")
    assert move in ("discard", "declare") and card
    assert await page.locator("#hand button.hand-card").count() == 14
    if move == "declare" and not declare:
        move = "discard"
    png = None
    if picture:
        if await page.is_visible("#notice"):
            await page.click("#notice")  # read, and put away
        await page.click("#btn-sort")
        await select(page, card)
        png = await page.screenshot()
    await select(page, card)
    button = "#btn-declare" if move == "declare" else "#btn-discard"
    assert await page.is_enabled(button)
    await page.click(button)
    await page.wait_for_function(
        f"""() => !document.querySelector('#results').hidden
             || !document.querySelector('#hand button[data-card="{card}"]')""",
        timeout=60_000,
    )
    return move, png


async def play_my_turn(page: Page, *, picture: bool = False, declare: bool = True) -> tuple[str, bytes | None]:
    """Wait for my turn (or the results) and play it through the buttons: draw where
    the page suggests, then discard the card it suggests (or declare, unless
    ``declare`` is False).  Returns ('results', None) or the move made and, with
    ``picture``, a screenshot of the table taken just before it."""
    handle = await page.wait_for_function(MY_MOVE, timeout=60_000)
    if await handle.json_value() == "draw":
        move = await page.get_attribute("#suggestion", "data-move")
        await page.click("#btn-draw-open" if move == "draw_open" else "#btn-draw-closed")
        handle = await page.wait_for_function(MY_MOVE, timeout=60_000)
    if await handle.json_value() == "results":
        return "results", None
    return await finish_turn(page, picture=picture, declare=declare)


async def first_turn_with_keys_and_dragging(page: Page, before_discard: Callable[[], None] = lambda: None) -> str:
    """The person's first turn: drag a card into a group of its own and move another
    with Shift+→, draw with the key C, see the arrangement kept with the new card at
    its end, select the suggested card with Enter and discard it with D
    (``before_discard`` called just before)."""
    handle = await page.wait_for_function(MY_MOVE, timeout=60_000)
    if await handle.json_value() == "results":
        return "results"
    before = await arrangement(page)
    first = before[0][0]
    await page.drag_and_drop(f'#hand button[data-card="{first}"]', "#hand .new-group")
    arr = await arrangement(page)
    assert arr[-1] == [first] and first not in arr[0], arr
    if len(arr[0]) >= 2:
        a, b = arr[0][0], arr[0][1]
        await page.focus(f'#hand button[data-card="{a}"]')
        await page.keyboard.press("Shift+ArrowRight")
        moved = await arrangement(page)
        assert moved[0][:2] == [b, a], moved
        arr = moved
    await page.keyboard.press("c")  # draw closed, from the keyboard
    await page.wait_for_function(MY_MOVE, timeout=60_000)
    after = await arrangement(page)
    if await page.is_visible("#results"):
        return "results"
    drawn = [c for c in after[-1] if c not in arr[-1]]
    assert after[:-1] == arr[:-1] and after[-1][: len(arr[-1])] == arr[-1] and len(drawn) == 1, (arr, after)
    name = await page.locator(f'#hand button[data-card="{drawn[0]}"]').evaluate("e => e.innerText || e.textContent")
    assert "just drawn" in (await page.text_content(f'#hand button[data-card="{drawn[0]}"] .sr-only') or ""), name
    move = await page.get_attribute("#suggestion", "data-move")
    card = await page.get_attribute("#suggestion", "data-card")
    if move == "declare":
        return (await finish_turn(page))[0]
    await page.focus(f'#hand button[data-card="{card}"]')
    if await page.get_attribute(f'#hand button[data-card="{card}"]', "aria-pressed") == "true":
        # selected already (the arranging above selects the card it moves, and the
        # strategy may suggest discarding that very card): Enter toggles it off first
        await page.keyboard.press("Enter")
        assert await page.get_attribute(f'#hand button[data-card="{card}"]', "aria-pressed") == "false"
    await page.keyboard.press("Enter")
    assert await page.get_attribute(f'#hand button[data-card="{card}"]', "aria-pressed") == "true"
    before_discard()
    await page.keyboard.press("d")  # discard the selected card, from the keyboard
    await page.wait_for_function(
        f"""() => !document.querySelector('#results').hidden
             || !document.querySelector('#hand button[data-card="{card}"]')""",
        timeout=60_000,
    )
    return "discard"


async def table_with_a_held_bot(api: Api, base: str, name: str, bot_name: str) -> tuple[str, dict[str, Any], HeldBot]:
    """A four-seat table with turns of ``TURN``, a person (no key yet: the page makes
    it) and a bot that makes no move of its own until the test sets its ``go``."""
    table_id = await api.table(seats=4, point_value=1, turn_seconds=TURN, min_players=2)
    person = await new_person(api, name)
    p = await api.player(bot_name)
    bot = HeldBot(base, p["token"], table_id, fast=True, key=p["signer"], max_hands=1, drops=False)
    return table_id, person, bot


async def sit_with_the_bot_on_turn(page: Page, base: str, table_id: str) -> None:
    """Sit at ``table_id`` beside a held bot and, when the person is first, play its
    turn, so that the bot is on turn.  The person discards: a turn that declared would
    end the hand with its view still on the person's turn (CI once failed that way)."""
    await page.goto(base + f"/#/table/{table_id}")
    await page.locator("#seats button.sit-here").first.click()
    await page.wait_for_function(
        "() => { const t = RummyTable.state.t; return t && t.hand && t.hand.view && t.hand.view.me; }",
        timeout=60_000,
    )
    st = await page_state(page)
    if st["turn"] == st["seat"]:
        assert (await play_my_turn(page, declare=False))[0] == "discard"
    await page.wait_for_function(
        "() => document.querySelector('#turn-status').dataset.myTurn === 'false'", timeout=60_000
    )


def own_items_agree(evidence: list[Any], transcript: dict[str, Any], player_id: str, player_key: str) -> int:
    """docs/fairness.md §15: the page keeps the signed header it accepted (exactly
    record 0's header and signature) and its own ``player`` item (its key and seat,
    signed by that key, the key the header lists for the seat); beside them, only the
    headers of the table's other hands, under its rules (D38): how many."""
    record0, others = transcript["log"][0], [e for e in evidence if e["body"]["hand_no"] != transcript["hand_no"]]
    assert all(e["purpose"] == "header" and e["body"]["rules"] == record0["header"]["rules"] for e in others)
    headers = [e for e in evidence if e["purpose"] == "header" and e not in others]
    assert headers == [{"purpose": "header", "body": record0["header"], "sig": record0["sig"]}]
    players = [e for e in evidence if e["purpose"] == "player"]
    seat = next(s["seat"] for s in record0["header"]["seats"] if s["player_id"] == player_id)
    body = {
        "table_id": transcript["table_id"],
        "hand_no": transcript["hand_no"],
        "seat": seat,
        "player_key": player_key,
    }
    assert len(players) == 1 and players[0]["body"] == body, players
    assert signature_ok(bytes.fromhex(player_key), "player", body, players[0]["sig"], PROTOCOL_V2)
    return len(others)


# ----------------------------------------------------------------------------- the routes
async def test_pages_are_served_with_their_types_and_no_cache(server: Any) -> None:
    async with aiohttp.ClientSession() as s:
        async with s.get(server.url + "/") as r:
            assert r.status == 200
            assert r.headers["Content-Type"].startswith("text/html")
            assert r.headers["Cache-Control"] == "no-cache"
            assert "script-src 'self';" in r.headers["Content-Security-Policy"]
            text = await r.text()
            assert '<script type="module" src="/web/table/main.js"></script>' in text
        async with s.get(server.url + "/verify") as r:
            assert r.status == 200
            assert r.headers["Content-Type"].startswith("text/html")
            assert r.headers["Cache-Control"] == "no-cache"
            text = await r.text()
            assert "<script src=" not in text  # one self-contained file
            assert "RummyPF.verifyTranscript = verifyTranscript" in text
        for path, kind in [
            ("/web/table/main.js", "javascript"),
            ("/web/table/state.js", "javascript"),
            ("/web/rummypf/core.js", "javascript"),
            ("/web/table.css", "text/css"),
            ("/web/index.html", "text/html"),
        ]:
            async with s.get(server.url + path) as r:
                assert r.status == 200, path
                assert kind in r.headers["Content-Type"], (path, r.headers["Content-Type"])
                assert r.headers["Cache-Control"] == "no-cache", path
        # no directory listing, no way out of service/web
        for path in [
            "/web/",
            "/web/rummypf/",
            "/web/../app.py",
            "/web/%2e%2e/app.py",
            "/web/..%2fapp.py",
            "/web/nothing.js",
        ]:
            async with s.get(server.url + path) as r:
                assert r.status in (403, 404), (path, r.status)
                body = await r.text()
                assert "add_page_routes" not in body and "def make_app" not in body
        # the API is untouched
        async with s.get(server.url + "/api/tables") as r:
            assert r.status == 200
            assert "tables" in await r.json()


# ----------------------------------------------------------------------------- the lobby
async def test_lobby_lists_tables_with_stakes_and_players(server: Any, api: Api, browser: Browser) -> None:
    """An operator token creates a player in the page; a bad token gets plain words;
    the lobby shows each table's stakes, hold, commission and who sits where."""
    tables = [
        await api.table(seats=6, point_value=1, commission_bps=0, turn_seconds=30),
        await api.table(seats=4, point_value=5, commission_bps=250, turn_seconds=25),
        await api.table(seats=8, point_value=50, commission_bps=500, turn_seconds=45),
    ]
    closed = await api.table(seats=4)
    await api.call("POST", f"/api/tables/{closed}/close", body={}, expect=200)
    seated: list[tuple[str, dict[str, Any]]] = []
    for table_id, names in zip(tables, [["Asha", "Bilal", "Chen"], ["Dana", "Emre"], ["Farah"]], strict=True):
        for n in names:
            p = await api.player(n)
            await api.call("POST", f"/api/tables/{table_id}/sit", token=p["token"], body={}, expect=200)
            seated.append((table_id, p))
    try:
        async with person_page(browser) as (_, page, _console):
            await page.goto(server.url + "/")
            # a token the server does not know
            await page.fill("#token-input", "not-a-real-token")
            await page.get_by_role("button", name="Sign in").click()
            # what the alert says, not whether it still shows (it hides itself after 15 s)
            await page.wait_for_function(
                "() => document.getElementById('alert-text').textContent.includes('This token was not accepted')"
            )
            assert await page.evaluate("document.body.dataset.view") == "signin"
            # the operator creates a player with a deposit, and the page signs in as them
            await page.click("#operator-panel summary")
            await page.fill("#op-token", "test-operator-token")
            await page.fill("#new-name", "Gita")
            await page.fill("#new-deposit", "5000")
            await page.get_by_role("button", name="Create the player and sign in").click()
            await page.wait_for_function("() => document.body.dataset.view === 'lobby'", timeout=60_000)
            assert await page.text_content("#me-name") == "Gita"
            assert "5,000 HT" in (await page.text_content("#me-balance") or "")
            token = await page.text_content("#created-token")
            assert token and len(token) > 20
            # the page registered its own key for the new player
            who = await me(api, token)
            assert who["public_key"] is not None and len(who["public_key"]) == 64

            card = page.locator(f'article.tcard[data-table="{tables[1]}"]')
            await card.wait_for()
            assert await card.locator(".pv").text_content() == "5 HT"
            assert await card.locator(".hold").text_content() == "650 HT"
            assert await card.locator(".commission").text_content() == "2.5%"
            assert "2 / 4 seated" in (await card.locator(".count").text_content() or "")
            seats = await card.locator(".seat-list li").all_text_contents()
            assert seats == ["0Dana", "1Emre", "2free", "3free"]
            assert await card.get_by_role("button", name="Sit").is_enabled()
            # 8 seats at 50 a point: the hold (6,500) is more than Gita has
            big = page.locator(f'article.tcard[data-table="{tables[2]}"]')
            assert await big.locator(".hold").text_content() == "6,500 HT"
            assert await big.get_by_role("button", name="Sit").is_disabled()
            assert "Sitting needs 6,500 HT available" in (await big.locator(".short").text_content() or "")
            assert await page.locator(f'article.tcard[data-table="{closed}"]').count() == 0  # closed: not offered
            first = page.locator(f'article.tcard[data-table="{tables[0]}"]')
            assert "Asha" in (await first.locator(".seat-list").text_content() or "")
            # the token is kept: a reload signs in again by itself
            await page.reload()
            await page.wait_for_function("() => document.body.dataset.view === 'lobby'", timeout=60_000)
            assert await page.text_content("#me-name") == "Gita"
            await card.wait_for()
            assert await page.is_hidden("#alert") and await page.is_hidden("#notice")
            await shot(page, "lobby")
            # watching a table: no seat, and the free seats offered
            await card.get_by_role("button", name="Watch").click()
            await page.wait_for_function(conn("open"))
            assert "You are watching" in (await page.text_content("#mine-title") or "")
            assert await page.locator("#seats button.sit-here").count() == 2
            names = await page.locator("#seats .seat-name b").all_text_contents()
            assert sorted(names) == ["Dana", "Emre"]
            assert await page.is_hidden("#actions")
            assert "Waiting for the next hand" in (await page.text_content("#turn-status") or "")
    finally:
        for table_id, p in seated:
            await api.call("POST", f"/api/tables/{table_id}/leave", token=p["token"], body={})


# ----------------------------------------------------------------------------- a whole hand
async def test_a_person_plays_whole_hands_in_the_page_and_verifies_them(
    server: Any, api: Api, tmp_path: Any, browser: Browser
) -> None:
    """Sign in, sit from the lobby, and play every turn through the buttons against two
    bots until the hand ends (again, with new bots, if a hand ended before the person
    had played three turns); the results show every seat's points and tokens; the link
    opens /verify, where every check passes with the page's own evidence."""
    table_id = await api.table(seats=4, point_value=2, commission_bps=500, turn_seconds=30, min_players=3)
    person = await new_person(api, "Maya")
    key = await server_key(api)
    async with person_page(browser) as (context, page, console):
        await sign_in(page, server.url, person["token"], "Maya")
        bots: list[HeldBot] = []
        tasks: list[asyncio.Task[None]] = []
        try:
            played = 0
            hand_no = 0
            for attempt in range(3):
                bots = [await bot(api, server.url, table_id, f"bot-{attempt}{k}") for k in "ab"]
                tasks = start_bots(bots)
                await wait_for(seated(bots), timeout=60)
                if attempt == 0:  # the person sits from the lobby
                    await page.click("#lobby-refresh")
                    card = page.locator(f'article.tcard[data-table="{table_id}"]')
                    await card.get_by_role("button", name="Sit").click()
                    await page.wait_for_function("() => document.body.dataset.view === 'table'")
                await page.wait_for_function(
                    """n => { const t = RummyTable.state.t;
                              return t && t.hand && t.hand.hand_no > n && t.hand.view && t.hand.view.me; }""",
                    arg=hand_no,
                    timeout=60_000,
                )
                st = await page_state(page)
                assert st["committed"] and st["revealed"] and st["keyOk"], st
                assert len(st["cards"]) == 13
                hand_no = st["hand_no"]
                if st["phase"] != "ended":  # (both bots may drop at once)
                    assert await page.locator("#hand button.hand-card").count() in (13, 14)
                assert "The signed header lists your key" in (await page.text_content("#key-check") or "")
                picture = None  # the table just before the person's last move
                # the bots hold their moves from the person's discard until the page
                # is back from its reload: a bot's quick declare ended the hand while
                # the page reloaded, and the page waited for a hand that was over
                move = await first_turn_with_keys_and_dragging(page, hold(bots))
                played = int(move != "results")
                if move != "results":
                    # a reload in the middle of the hand: the page finds its seat, its
                    # cards as the person arranged them, and its evidence again
                    kept = await arrangement(page)
                    items = len(await page.evaluate(f"RummyTable.evidence({hand_no})"))
                    await page.reload()
                    await page.wait_for_function(
                        "() => { const h = RummyTable.state.t && RummyTable.state.t.hand;"
                        " return h && h.view && h.view.me && h.arr; }",
                        timeout=60_000,
                    )
                    now = await arrangement(page)
                    assert now == kept
                    assert len(await page.evaluate(f"RummyTable.evidence({hand_no})")) >= items
                for b in bots:
                    b.go.set()
                while move != "results":
                    move, png = await play_my_turn(page, picture=True)
                    if move != "results":
                        played, picture = played + 1, png
                await stop_bots(tasks)  # they have left after their one hand
                if played >= 3:
                    break
                await page.click("#results-close")
            assert played >= 3, "no hand lasted three turns of the person's"
            assert picture is not None
            SHOTS.mkdir(parents=True, exist_ok=True)
            (SHOTS / "table.png").write_bytes(picture)

            # the results: every seat of the hand, its points and its tokens
            results = page.locator("#results")
            await results.locator("#results-table").wait_for(timeout=60_000)
            hand_id = (await page_state(page))["hand_id"]
            transcript = await api.call("GET", f"/api/hands/{hand_id}/transcript", token=None)
            assert transcript["hand_no"] == hand_no
            report = verify_transcript(transcript, key)
            assert report.ok, report
            header = transcript["log"][0]["header"]
            my_seat = next(s for s in header["seats"] if s["player_id"] == person["id"])
            assert my_seat["player_key"] == (await me(api, person["token"]))["public_key"]
            rows = results.locator("#results-table tbody tr")
            assert await rows.count() == len(header["seats"]) == 3
            settlement = transcript["result"]["settlement"]
            for s in header["seats"]:
                row = results.locator(f'#results-table tbody tr[data-seat="{s["seat"]}"]')
                assert await row.locator("td.points").get_attribute("data-points") == str(
                    settlement["points"][str(s["seat"])]
                )
                assert await row.locator("td.tokens").get_attribute("data-delta") == str(
                    settlement["deltas"][str(s["seat"])]
                )
            assert f"{settlement['commission']} HT" in (await page.text_content("#commission") or "")
            winner = transcript["result"]["winner"]
            assert "won" in (await results.locator(f'tr[data-seat="{winner}"] td.how').text_content() or "")
            await shot(page, "results")

            # the evidence the page kept agrees with the transcript (rummy-verify's own check)
            async with page.expect_download() as dl:
                await page.click("#download-evidence")
            evidence_file = tmp_path / "evidence.json"
            await (await dl.value).save_as(str(evidence_file))
            evidence = json.loads(evidence_file.read_text())
            kinds = {e["purpose"] for e in evidence}
            # the server's acks (the commit, the reveal, every action: issue 16) and the
            # heads it pushed, the header the page accepted and its own player item (§15)
            assert kinds == {"ack", "head", "header", "player"}, kinds
            others = own_items_agree(evidence, transcript, person["id"], my_seat["player_key"])
            with_evidence = verify_transcript(transcript, key, evidence)  # the whole file
            counts = with_evidence.summary["evidence"]
            assert (counts["checked"], counts["other_hands"]) == (len(evidence) - others, others), counts
            assert with_evidence.ok and "evidence" in with_evidence.checks_passed, with_evidence

            # the page verified the hand itself as its transcript arrived, with its evidence
            await page.wait_for_selector("#auto-verdict[data-ok]", timeout=60_000)
            assert await page.get_attribute("#auto-verdict", "data-ok") == "true"
            auto = await page.text_content("#auto-verdict") or ""
            assert "every check passed, with your evidence (" in auto and " checked)" in auto, auto
            # and what the page was shown at each record is what the published hand gives
            compared = re.search(
                r"the table you were shown is the published hand \((\d+) records compared, "
                r"the events you were told at (\d+) of them too\)",
                auto,
            )
            assert compared and int(compared.group(1)) >= 3 and int(compared.group(2)) >= 3, auto
            shown_wrong = await page.evaluate(
                """([t, k, n]) => {
                     const m = new Map(RummyTable.state.t.shown.get(n));
                     const [i, v] = [...m].find(([r]) => r > 3);
                     m.set(i, Object.assign({}, v, {closed_count: v.closed_count + 1}));
                     return RummyTable.verdictOf(t, k, RummyTable.evidence(n), m, RummyTable.state.me.id)
                       .then((x) => Object.assign(x, {record: i}));
                   }""",
                [json.dumps(transcript), key.hex(), hand_no],
            )
            assert shown_wrong["ok"] is False and shown_wrong["check"] == "shown", shown_wrong
            assert f"record {shown_wrong['record']}: " in shown_wrong["message"], shown_wrong
            assert "closed_count" in shown_wrong["message"], shown_wrong
            # ...and so are the events it was told: one the published record does not hold
            told_wrong = await page.evaluate(
                """([t, k, n]) => {
                     const m = new Map(RummyTable.state.t.shown.get(n));
                     const [i, v] = [...m].find(([r, x]) => r > 3 && x.events && x.events.length);
                     const events = v.events.slice();
                     events[0] = Object.assign({}, events[0], {by_clock: !events[0].by_clock});
                     m.set(i, Object.assign({}, v, {events}));
                     return RummyTable.verdictOf(t, k, RummyTable.evidence(n), m, RummyTable.state.me.id)
                       .then((x) => Object.assign(x, {record: i, kind: events[0].kind}));
                   }""",
                [json.dumps(transcript), key.hex(), hand_no],
            )
            assert told_wrong["ok"] is False and told_wrong["check"] == "shown", told_wrong
            assert f"record {told_wrong['record']}: the events you were told" in told_wrong["message"], told_wrong
            assert f"event 1, {told_wrong['kind']}: differs in by_clock" in told_wrong["message"], told_wrong
            # and the same verifier says no to a transcript that is not the game it was shown
            tampered = json.loads(json.dumps(transcript))
            tampered["log"][4]["h"] = "00" * 32
            no = await page.evaluate(
                "([t, k, n]) => RummyTable.verdictOf(t, k, RummyTable.evidence(n))",
                [json.dumps(tampered), key.hex(), hand_no],
            )
            assert no["ok"] is False and no["check"] and no["items"] > 0, no

            # follow the link to /verify: every check passes, with the evidence too
            async with context.expect_page() as new_page:
                await page.click("#verify-link")
            verify = await new_page.value
            await verify.set_viewport_size(VIEWPORT)
            await verify.wait_for_function(
                "() => document.body.dataset.state === 'done' && document.querySelector('#verdict').dataset.ok"
            )
            assert await verify.get_attribute("#verdict", "data-ok") == "true"
            assert await verify.get_attribute("#key-pinned", "data-pinned") == "true"
            await verify.set_input_files("#file-evidence", str(evidence_file))
            await verify.click("#verify")
            await verify.wait_for_function(
                """() => document.body.dataset.state === 'done'
                     && document.querySelector('li[data-check="evidence"]')
                     && document.querySelector('li[data-check="evidence"]').dataset.status === 'passed'"""
            )
            verdict = await verify.text_content("#verdict") or ""
            assert "Verified: every check passed" in verdict, verdict
            # the page read the whole file (acks, heads, the header, the player item): the
            # count it shows is the count rummy-verify applied
            n = with_evidence.summary["evidence"]["checked"]
            assert f"{n} of {len(evidence)} items applied" in verdict, verdict
            statuses = await verify.eval_on_selector_all("#checks li", "els => els.map(e => e.dataset.status)")
            assert statuses and all(s == "passed" for s in statuses), statuses
            # step into the replay, to a turn where the person acts
            await verify.evaluate("document.getElementById('replay-panel').scrollIntoView()")
            steps = await verify.evaluate("RummyPFPage && document.getElementById('step-slider').max")
            target = min(int(steps), 9)
            for _ in range(target):
                await verify.click("#step-next")
            assert await verify.get_attribute("#step-count", "data-step") == str(target)
            await verify.evaluate("document.getElementById('replay-panel').scrollIntoView()")
            await shot(verify, "verify-replay")
            csp = [line for line in console if "Content Security Policy" in line or "Refused to" in line]
            assert not csp, csp  # both pages ran under their policies without a refusal

            # "My hands": the hand, its result and tokens, its verify link and its evidence
            await page.goto(server.url + "/#/hands")
            row = page.locator(f'#hands-table tr[data-hand="{hand_id}"]')
            await row.wait_for()
            mine = str(my_seat["seat"])
            assert await row.locator("td.tokens").get_attribute("data-delta") == str(settlement["deltas"][mine])
            won = transcript["result"]["winner"] == my_seat["seat"]
            assert (await row.locator("td.result").text_content() or "").startswith("won" if won else "lost")
            link = await row.locator("a[data-verify]").get_attribute("href") or ""
            assert link.startswith(f"/verify?hand={hand_id}&key=") and key.hex() in link
            assert await row.locator("a[download]").get_attribute("href") == f"/api/hands/{hand_id}/transcript"
            async with page.expect_download() as dl:
                await row.locator("button.evidence").click()
            again = json.loads(pathlib.Path(await (await dl.value).path()).read_text())
            assert again == evidence  # the same file as from the results
            await shot(page, "hands")
        finally:
            await stop_bots(tasks)
            if any("error" in line.lower() for line in console):
                print("\n".join(console[-40:]))


# ----------------------------------------------------------------------------- out of turn, and reconnecting
TURN = 120


async def test_a_move_out_of_turn_is_refused_and_a_dropped_connection_rejoins(
    server: Any, api: Api, browser: Browser
) -> None:
    # A turn of two minutes: the held bot's turn must not run out while the test looks
    # at the page (on a machine busy with other work a 30 s turn once did, and the
    # turn came back to the person before the out-of-turn move was tried).
    # the bot moves only when the test says (while the page is away), never on a timer
    # that a busy machine outruns
    table_id, person, slow = await table_with_a_held_bot(api, server.url, "Noor", "slow-bot")
    tasks = start_bots([slow])
    try:
        async with person_page(browser) as (context, page, _console):
            # This person's computer clock is ten minutes fast: the turn clock still
            # counts down the server's deadline (hello carries the server's time).
            await context.add_init_script("Date.now = ((now) => () => now() + 600000)(Date.now);")
            await sign_in(page, server.url, person["token"], "Noor")
            await wait_for(lambda: slow.seat is not None, timeout=60)
            await sit_with_the_bot_on_turn(page, server.url, table_id)
            assert await page.is_disabled("#btn-draw-closed")
            assert await page.is_disabled("#btn-discard")
            before = await page_state(page)
            assert before["turn"] != before["seat"]
            await page.wait_for_function("() => !!(document.querySelector('.clock .clock-text') || {}).textContent")
            left = await page.text_content(".clock .clock-text") or ""
            assert left.endswith(" s") and 0 < int(left[:-2]) <= TURN, left
            # hello's time that reached the page late (here: the page's clock set back 5 s
            # after it) never shows more than the whole turn (it once showed "31 s")
            await page.evaluate("window.__now = Date.now; Date.now = () => window.__now() - 5000;")
            await page.wait_for_timeout(1500)  # a few ticks of the page's clocks
            left = await page.text_content(".clock .clock-text") or ""
            await page.evaluate("Date.now = window.__now;")
            assert left.endswith(" s") and 0 < int(left[:-2]) <= TURN, left

            # a move out of turn (as a click would send it in a race): refused in plain words
            ok = await page.evaluate("RummyTable.act('draw_closed')")
            assert ok is False
            await page.wait_for_function("() => document.getElementById('alert').dataset.code === 'not_your_turn'")
            assert "It is not your turn" in (await page.text_content("#alert-text") or "")
            assert "not_your_turn" in (await page.text_content("#alert-detail") or "")
            assert await page.get_attribute("#alert", "data-code") == "not_your_turn"
            after = await page_state(page)
            assert after["newest"] == before["newest"] and after["cards"] == before["cards"]  # nothing changed
            assert len(after["cards"]) == 13

            # the network goes away (the socket dies and cannot come back) while the bot moves
            await context.set_offline(True)
            await page.evaluate("RummyTable.dropConnection()")
            await page.wait_for_selector("#banner:not([hidden])")
            assert "Connection lost" in (await page.text_content("#banner") or "")
            await page.wait_for_function(conn("lost"))
            slow.go.set()  # the bot moves while the page is away
            newest = before["newest"]
            try:  # its draw and its discard
                await wait_for(lambda: bool(slow._records) and max(slow._records) >= newest + 2, timeout=60)
            except AssertionError:
                raise AssertionError((newest, sorted(slow._records), slow.errors)) from None
            # ...and is held again, so that the hand is still going when the person leaves
            # below (a fast bot once declared a complete hand first, and the results
            # covered the Leave button)
            slow.go.clear()
            await context.set_offline(False)
            await page.wait_for_function(conn("open"), timeout=60_000)
            await page.wait_for_function(
                "() => document.getElementById('notice').textContent.startsWith('Reconnected')"
            )
            note = await page.text_content("#notice") or ""
            assert note.startswith("Reconnected — ") and "moves happened while you were away" in note, note
            missed = int(note.split("— ")[1].split(" ")[0])
            assert missed >= 2
            # ...and what they were, in the table's log: the join asked for the events
            # since the newest record the page had seen
            log = await page.evaluate("RummyTable.state.t.log.map((l) => l.text)")
            k = max(n for n, line in enumerate(log) if line == "While you were away:")
            away = log[k + 1 : next(n for n in range(k, len(log)) if log[n].startswith("Reconnected"))]
            assert any("discarded" in line for line in away), log[-12:]
            assert any("pile" in line and "discarded" not in line for line in away), log[-12:]
            assert await page.is_hidden("#banner")

            # the hand goes on: the person plays a turn after the reconnect.  Its draw is
            # signed over a head that is not the newest (as when an update crosses the
            # move on the wire): refused as stale_head, the page signs it again over the
            # newest head, and it goes through
            assert await (await page.wait_for_function(MY_MOVE, timeout=60_000)).json_value() == "draw"
            drew = await page.evaluate(
                """async () => {
                  const h = RummyTable.state.t.hand, i = h.newest, newest = h.records.get(i);
                  const older = Math.max(...[...h.records.keys()].filter((k) => k < i));
                  h.records.set(i, h.records.get(older));
                  const sent = RummyTable.act("draw_closed");  // signed over an older record
                  h.records.set(i, newest);  // ...and the newest record is known again
                  return await sent;
                }"""
            )
            assert drew is True, await page.text_content("#alert")
            assert await page.is_hidden("#alert")
            await page.wait_for_function(MY_MOVE, timeout=60_000)
            assert (await finish_turn(page, declare=False))[0] == "discard"  # the hand goes on
            assert slow.connections == 1

            # and leaves in the middle of the hand: a signed leave, charged 40; the bot wins
            await page.wait_for_function(
                "() => !document.getElementById('btn-leave').disabled && !RummyTable.state.t.busy"
            )
            await page.click("#btn-leave")
            assert "Confirm: leave (40 points)" in (await page.text_content("#btn-leave") or "")
            await page.click("#btn-leave")
            await page.locator("#results-table").wait_for(timeout=60_000)
            hand_id = (await page_state(page))["hand_id"]
            transcript = await api.call("GET", f"/api/hands/{hand_id}/transcript", token=None)
            assert verify_transcript(transcript, await server_key(api)).ok
            leaves = [r for r in transcript["log"] if r.get("action", {}).get("kind") == "leave"]
            assert len(leaves) == 1 and leaves[0]["psig"] is not None
            mine = next(s["seat"] for s in transcript["log"][0]["header"]["seats"] if s["player_id"] == person["id"])
            assert transcript["result"]["points"][str(mine)] == 40
            row = page.locator(f'#results-table tr[data-seat="{mine}"]')
            assert (await row.locator("td.how").text_content() or "").strip() == "left the table"
            assert await row.locator("td.points").get_attribute("data-points") == "40"
            await page.click("#results-close")

            # the same table opened in a second tab: the first is told, and does not fight back
            second = await context.new_page()
            await second.goto(server.url + f"/#/table/{table_id}")
            await second.wait_for_function(conn("open"))
            await page.wait_for_function(conn("replaced"))
            assert "opened in another window" in (await page.text_content("#banner") or "")
            await page.wait_for_timeout(1500)  # no reconnecting by itself
            assert await page.get_attribute("#conn-state", "data-state") == "replaced"
            await page.get_by_role("button", name="Use it here").click()
            await page.wait_for_function(conn("open"))
            await second.wait_for_function(conn("replaced"))
            await second.close()

            # a table that loses its database pauses, and says so; the server going down too
            await page.evaluate(
                "RummyTable.receive({type: 'paused', table_id: RummyTable.state.t.id,"
                " message: 'the table cannot store right now'})"
            )
            assert "The table is paused" in (await page.text_content("#banner") or "")
            assert "paused" in (await page.text_content("#conn-state") or "")
            assert await page.text_content("#turn-status") == "The table is paused."
            await page.evaluate(
                "RummyTable.receive({type: 'resumed', table_id: RummyTable.state.t.id,"
                " snapshot: RummyTable.state.t.snapshot})"
            )
            assert await page.is_hidden("#banner")
            assert (await page.text_content("#notice") or "").startswith("The table is back")
            await page.evaluate("RummyTable.receive({type: 'shutdown', message: 'the server is going down'})")
            assert "The server is going down for a moment" in (await page.text_content("#banner") or "")
    finally:
        await stop_bots(tasks)


# ----------------------------------------------------------------------------- a card under a tap
async def test_a_card_is_not_swapped_under_a_tap_by_another_seats_move(
    server: Any, api: Api, browser: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hand was drawn again whole on every push: a card (or "Move here") pressed
    while another seat moved was a new button by its release, and the tap was lost (a
    lost tap can cost a turn on the clock).  Now a group that shows the same is kept:
    the person's cards and a "Move here" are the same elements after the other seat
    draws and discards, and a tap on each still does what it says."""
    no_declares(monkeypatch)  # the bot's move must not end the hand
    table_id, person, held = await table_with_a_held_bot(api, server.url, "Ines", "held-bot")
    tasks = start_bots([held])
    try:
        async with person_page(browser) as (_context, page, _console):
            await sign_in(page, server.url, person["token"], "Ines")
            await wait_for(lambda: held.seat is not None, timeout=60)
            await sit_with_the_bot_on_turn(page, server.url, table_id)
            arr = await arrangement(page)
            assert len(arr) >= 2, arr
            card = arr[0][0]
            await select(page, str(card))  # "Move here" shows under the other groups
            newest = (await page_state(page))["newest"]
            marked = await page.evaluate(
                "() => Array.from(document.querySelectorAll('#hand button'),"
                " (b, i) => { b.__kept = i + 1; return i + 1; })"
            )
            assert len(marked) == 13 + len(arr) - 1, marked  # the cards and a "Move here" a group
            held.go.set()  # the bot draws and discards: two pushes, the piles and its seat change
            await page.wait_for_function(
                f"() => RummyTable.state.t.hand.newest >= {newest + 2}"
                " && document.querySelector('#turn-status').dataset.myTurn === 'true'",
                timeout=60_000,
            )
            kept = await page.evaluate(
                "() => Array.from(document.querySelectorAll('#hand button'), (b) => b.__kept || null)"
            )
            assert kept == marked, kept  # every button is the one that was there
            # a kept "Move here" still moves the selected card, and a kept card still selects
            await page.locator('#hand .move-here[data-group="1"]').click()
            moved = await arrangement(page)
            assert arr[1] + [card] in moved and sum(g.count(card) for g in moved) == 1, (arr, moved)
            other = arr[1][0]
            await page.locator(f'#hand button[data-card="{other}"]').click()
            assert await page.evaluate("RummyTable.state.t.selected") == other
    finally:
        held.go.set()
        await stop_bots(tasks)
