"""What a person can trust in the browser (issue 21), in a real headless Chromium
against the real server: the player token is out of reach of the page's scripts and
of other sites' pages; a hostile name can neither reorder the text around it nor
break a layout; /verify runs under its hash-based policy as served, and the same
bytes saved as a file verify a hand offline."""

from __future__ import annotations

import json
import pathlib
from typing import Any

from playwright.async_api import Browser, Page

from service.app import POOL
from service.startup import Running
from tests.browser import serve_directory
from tests.conftest import Api
from tests.test_web_table import conn, new_person, person_page, sign_in

VECTORS = pathlib.Path(__file__).resolve().parent.parent / "verifier" / "vectors"
VERIFIED = "() => document.body.dataset.state === 'done' && document.querySelector('#verdict').dataset.ok"


# ----------------------------------------------------------------------------- the token
async def test_no_script_can_read_the_player_token(
    server: Running, api: Api, tmp_path: pathlib.Path, browser: Browser
) -> None:
    """After signing in, neither document.cookie, localStorage, sessionStorage nor
    IndexedDB hold the token or the session; a page of another origin (another port of
    the same host: same site, so the browser sends the cookie) can neither open a
    WebSocket nor change anything with the session."""
    person = await new_person(api, "Kofi")
    table = await api.table(seats=4)
    (tmp_path / "other.html").write_text("<!doctype html><title>elsewhere</title><p>another site</p>")
    async with person_page(browser) as (context, page, console):
        await sign_in(page, server.url, person["token"], "Kofi")
        await page.goto(server.url + f"/#/table/{table}")
        await page.wait_for_function(conn("open"))  # the page's own socket: the cookie and its Origin
        cookies = await context.cookies(server.url)
        session = next(c for c in cookies if c["name"] == "rummy_session")
        assert session["httpOnly"] and session["sameSite"] == "Strict"
        seen = await page.evaluate(
            """async () => {
              const out = {cookie: document.cookie, local: [], session: [], idb: []};
              const all = (s) => Object.keys(s).map((k) => k + '=' + s.getItem(k));
              out.local = all(localStorage);
              out.session = all(sessionStorage);
              const db = await new Promise((ok, no) => {
                const r = indexedDB.open('rummypf-table', 1);
                r.onsuccess = () => ok(r.result);
                r.onerror = () => no(r.error);
              });
              const rows = await new Promise((ok) => {
                const r = db.transaction('keys').objectStore('keys').getAll();
                r.onsuccess = () => ok(r.result);
              });
              out.idb = rows.map((x) => JSON.stringify({pub: x.pub, created: x.created}));
              const exportable = rows.map((x) => x.privateKey.extractable);
              db.close();
              return {...out, exportable};
            }"""
        )
        assert seen["cookie"] == "", seen["cookie"]  # HttpOnly: not even its name
        everything = json.dumps(seen)
        assert person["token"] not in everything and session["value"] not in everything
        assert seen["exportable"] == [False]  # the signing key cannot leave the browser either
        # the page asked for nothing that is not there (the favicon was a 404)
        missing = [line for line in console if "Failed to load resource" in line]
        assert not missing, missing
        # another origin's page, in the same browser
        async with serve_directory(tmp_path) as elsewhere:
            other = await context.new_page()
            await other.goto(elsewhere + "/other.html")
            tried = await other.evaluate(
                """async (server) => {
                  const ws = await new Promise((done) => {
                    const s = new WebSocket(server.replace(/^http/, 'ws') + '/ws', ['rummy.v2']);
                    s.onopen = () => { s.close(); done('opened'); };
                    s.onerror = () => done('refused');
                  });
                  let put;
                  try {
                    const r = await fetch(server + '/api/me/key', {method: 'PUT', credentials: 'include',
                      headers: {'Content-Type': 'text/plain'}, body: JSON.stringify({public_key: '00'.repeat(32)})});
                    put = r.status;
                  } catch (e) { put = 'blocked'; }
                  return {ws, put};
                }""",
                server.url,
            )
            assert tried["ws"] == "refused", tried
            assert tried["put"] == "blocked", tried  # no CORS for it; and the server refused it (403), below
        me = await api.call("GET", "/api/me", token=person["token"])
        assert me["public_key"] != "00" * 32  # the key the page registered is still the one


# ----------------------------------------------------------------------------- names
def name_order(page: Page, selector: str) -> Any:
    """The x of the first and last characters of the text after a name's <bdi> in
    ``selector``: in order when the name could not reorder it."""
    return page.evaluate(
        """(sel) => {
          const box = document.querySelector(sel);
          const bdi = box.querySelector('bdi');
          const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
          let after = null, past = false;
          for (let n = walker.nextNode(); n; n = walker.nextNode()) {
            if (bdi.contains(n)) { past = true; continue; }
            if (past && n.textContent.trim().length > 1) { after = n; break; }
          }
          const at = (k) => {
            const r = document.createRange();
            r.setStart(after, k);
            r.setEnd(after, k + 1);
            return r.getBoundingClientRect().left;
          };
          const text = after.textContent, first = text.search(/\\S/), last = text.length - 1;
          return {text, first: at(first), last: at(last), bdiRight: bdi.getBoundingClientRect().right};
        }""",
        selector,
    )


async def test_a_hostile_name_is_isolated_and_cut(server: Running, api: Api, browser: Browser) -> None:
    """Names the API refuses today may be older than the rule: the page shows them in
    <bdi>, so a right-to-left override cannot reverse "· seat 2"; a 64-character name
    is cut with its whole self on hover, and no table card grows wider than its column."""
    table = await api.table(seats=4)
    person = await new_person(api, "placeholder")
    long = await api.player("long")
    evil = "Eve\u202e"
    long_name = "Bartholomew-Maximilian Featherstonehaugh-Cholmondeley of Llanfair"[:64]
    async with server.app[POOL].acquire() as c:  # as an older server let them in
        await c.execute("UPDATE players SET name = $2 WHERE id = $1", person["id"], evil)
        await c.execute("UPDATE players SET name = $2 WHERE id = $1", long["id"], long_name)
    await api.call("POST", f"/api/tables/{table}/sit", token=long["token"], body={"seat": 0}, expect=200)
    try:
        async with person_page(browser) as (_context, page, _console):
            await page.goto(server.url + "/")
            await page.fill("#token-input", person["token"])
            await page.get_by_role("button", name="Sign in").click()
            await page.wait_for_function("() => document.body.dataset.view === 'lobby'")
            card = page.locator(f'article.tcard[data-table="{table}"]')
            await card.wait_for()
            bdi = card.locator("li[data-seat='0'] bdi")
            assert await bdi.get_attribute("title") == long_name  # the whole name on hover
            assert await bdi.evaluate("e => e.scrollWidth > e.clientWidth")  # and cut on the card
            widths = await card.evaluate("e => [e.scrollWidth, e.clientWidth, e.parentElement.clientWidth]")
            assert widths[0] <= widths[1] <= widths[2], widths
            assert await page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
            await card.get_by_role("button", name="Sit").click()
            await page.wait_for_function(
                "() => RummyTable.state.t && Object.values(RummyTable.state.t.seats).length === 2"
            )
            await page.wait_for_selector("#mine-title bdi")
            order = await name_order(page, "#mine-title")
            assert order["text"].strip() == "· seat 1", order
            assert order["first"] < order["last"], order  # "· seat 1", not "1 taes ·"
            assert order["first"] >= order["bdiRight"] - 1, order  # after the name, not inside it
            assert await page.get_attribute("#mine-title bdi", "dir") == "auto"
            await page.locator("#btn-leave").click()
            await page.locator("#btn-leave").click()
            await page.wait_for_function("() => Object.values(RummyTable.state.t.seats).length === 1")
    finally:
        await api.call("POST", f"/api/tables/{table}/leave", token=long["token"], body={})


# ----------------------------------------------------------------------------- /verify
async def test_verify_runs_under_its_policy_and_saved_offline(
    server: Running, tmp_path: pathlib.Path, browser: Browser
) -> None:
    """The page as served, under its Content-Security-Policy (scripts and styles by
    hash), verifies a hand with no policy violation; the same bytes, saved as a file,
    verify it again from file:// without any request leaving the machine."""
    transcript = (VECTORS / "v2-transcript-4seat-two-players.json").read_text()
    async with person_page(browser) as (context, page, console):
        response = await page.goto(server.url + "/verify")
        assert response is not None and "sha256-" in response.headers["content-security-policy"]
        served = await response.text()
        await page.wait_for_function("() => document.body.dataset.ready === 'true'")
        await page.evaluate("t => { document.getElementById('transcript').value = t; }", transcript)
        await page.click("#verify")
        await page.wait_for_function(VERIFIED)
        assert await page.get_attribute("#verdict", "data-ok") == "true"
        assert not [m for m in console if "Content Security Policy" in m or "Refused to" in m], console
        saved = tmp_path / "verify.html"
        saved.write_text(served, encoding="utf-8")
        offline = await context.new_page()
        requests: list[str] = []
        offline.on("request", lambda r: requests.append(r.url))
        await context.set_offline(True)
        await offline.goto(saved.as_uri())
        await offline.wait_for_function("() => document.body.dataset.ready === 'true'")
        await offline.evaluate("t => { document.getElementById('transcript').value = t; }", transcript)
        await offline.click("#verify")
        await offline.wait_for_function(VERIFIED)
        assert await offline.get_attribute("#verdict", "data-ok") == "true"
        assert all(u.startswith(("file://", "data:")) for u in requests), requests


async def test_a_token_an_older_page_kept_is_traded_for_a_session_and_removed(
    server: Running, api: Api, browser: Browser
) -> None:
    """The page before sessions kept the token in localStorage: the new page trades it
    for a session once (the player stays signed in) and removes it."""
    person = await new_person(api, "Ola")
    async with person_page(browser) as (_context, page, _console):
        await page.goto(server.url + "/")
        await page.wait_for_function("() => document.body.dataset.ready === 'true'")
        await page.evaluate("t => localStorage.setItem('rummypf.token', t)", person["token"])
        await page.reload()
        await page.wait_for_function("() => document.body.dataset.view === 'lobby'", timeout=10_000)
        assert await page.text_content("#me-name") == "Ola"
        assert await page.evaluate("localStorage.getItem('rummypf.token')") is None
        await page.reload()  # the session alone, from now on
        await page.wait_for_function("() => document.body.dataset.view === 'lobby'", timeout=10_000)
        assert await page.text_content("#me-name") == "Ola"
