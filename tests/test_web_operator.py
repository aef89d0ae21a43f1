"""The operator page (``/operator``, issue 18 item 1) in a real headless Chromium
against the session's server: a table created from its form is in ``GET
/api/tables`` with exactly the values entered (and in the audit log); a value out of
its limits shows the server's typed error, creates nothing and is audited as refused; closing a table, once
confirmed, closes it (and cancelling does not); a wrong token shows ``unauthorized``
and changes nothing; the token is never in localStorage, sessionStorage, a cookie or
the address.  Its policy and headers are checked over plain HTTP."""

from __future__ import annotations

import re
from typing import Any

import aiohttp
from playwright.async_api import Browser, Page

from service.startup import Running
from tests.browser import new_page
from tests.conftest import OPERATOR, Api
from tests.test_web_hardening import csp_of

CREATED = re.compile(r"Created table (\S+)\.")


async def open_page(page: Page, server: Running, token: str | None = OPERATOR) -> None:
    await page.goto(server.url + "/operator")
    await page.wait_for_selector("body[data-ready]")
    if token is not None:
        await page.fill("#token", token)
        await page.click("#token-form button[type=submit]")
        await page.wait_for_function(
            "() => /accepted|refused/.test(document.getElementById('token-state').textContent)"
        )


async def fill_table(page: Page, **values: str) -> None:
    for name, value in values.items():
        if name == "seats":
            await page.select_option("#seats", value)
        else:
            await page.fill(f"#{name}", value)


async def table_ids(api: Api) -> list[str]:
    return [t["id"] for t in (await api.call("GET", "/api/tables"))["tables"]]


async def storage_of(page: Page) -> str:
    """Everything the page could have kept: both storages, its cookies, its address."""
    kept = await page.evaluate(
        """() => JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage), document.cookie,
                                location.href])"""
    )
    return str(kept) + repr(await page.context.cookies())


async def test_the_page_creates_a_table_with_exactly_the_values_entered(
    server: Running, api: Api, browser: Browser
) -> None:
    entered = {
        "seats": 8,
        "point_value": 7,
        "commission_bps": 250,
        "turn_seconds": 45,
        "max_missed_turns": 4,
        "min_players": 3,
        "max_away_hands": 5,
    }
    async with new_page(browser) as page:
        await open_page(page, server)
        assert "accepted" in await page.text_content("#token-state")
        await fill_table(page, **{k: str(v) for k, v in entered.items()})
        await page.click("#create")
        await page.wait_for_function("() => /Created table/.test(document.getElementById('status').textContent)")
        m = CREATED.search(await page.text_content("#status") or "")
        assert m is not None
        table_id = m.group(1)
        # the list on the page shows it, open, with a Close button
        row = page.locator(f"#tables-body tr[data-table='{table_id}']")
        await row.wait_for()
        assert (await row.locator(".status-cell").text_content()) == "open"
        assert OPERATOR not in await storage_of(page)
    listed = next(t for t in (await api.call("GET", "/api/tables"))["tables"] if t["id"] == table_id)
    assert {k: listed[k] for k in entered} == entered
    assert listed["status"] == "open" and listed["seated"] == []
    audit = (await api.call("GET", "/api/admin/audit?limit=20"))["audit"]
    done = [a for a in audit if a["action"] == "create_table" and a["outcome"] == "done"]
    assert any(a["params"] == entered for a in done), audit


async def test_a_value_out_of_its_limits_shows_the_typed_error_and_creates_nothing(
    server: Running, api: Api, browser: Browser
) -> None:
    before = await table_ids(api)
    async with new_page(browser) as page:
        await open_page(page, server)
        await fill_table(page, commission_bps="10001")
        await page.click("#create")
        error = page.locator("#error")
        await error.wait_for(state="visible")
        text = await error.text_content() or ""
        assert text.startswith("bad_table: ") and "commission_bps" in text, text
        assert "Nothing was created" in (await page.text_content("#status") or "")
        # a number that is not an integer is sent as typed, and refused the same way
        await fill_table(page, commission_bps="0", point_value="1.5")
        await page.click("#create")
        await page.wait_for_function("() => /point_value/.test(document.getElementById('error').textContent)")
        assert (await error.text_content() or "").startswith("bad_table: ")
    assert await table_ids(api) == before
    # each refusal is an operator action refused, in the audit log
    audit = (await api.call("GET", "/api/admin/audit?limit=20"))["audit"]
    refused = [a["outcome"] for a in audit if a["action"] == "create_table" and a["outcome"].startswith("refused")]
    assert any("bad_table" in o and "commission_bps" in o and "10001" in o for o in refused), audit
    assert any("bad_table" in o and "point_value" in o for o in refused), audit


async def test_closing_a_table_asks_first_and_then_closes_it(server: Running, api: Api, browser: Browser) -> None:
    keep = await api.table(seats=4)
    close = await api.table(seats=4)
    async with new_page(browser) as page:
        await open_page(page, server)
        # cancelled: nothing happens
        await page.click(f"#tables-body tr[data-table='{keep}'] button.close-table")
        await page.locator("#confirm").wait_for(state="visible")
        assert keep in (await page.text_content("#confirm-id") or "")
        await page.click("#confirm-no")
        await page.locator("#confirm").wait_for(state="hidden")
        # confirmed: the table closes
        await page.click(f"#tables-body tr[data-table='{close}'] button.close-table")
        await page.locator("#confirm").wait_for(state="visible")
        await page.click("#confirm-yes")
        await page.wait_for_function(
            f"() => /Table {close} is (closing|closed)/.test(document.getElementById('status').textContent)"
        )
        statuses: dict[str, Any] = {}

        async def poll() -> None:
            for tid in (keep, close):
                statuses[tid] = (await api.call("GET", f"/api/tables/{tid}"))["status"]

        for _ in range(200):  # an empty table closes at once; the bound only catches a hang
            await poll()
            if statuses[close] == "closed":
                break
            await page.wait_for_timeout(100)
        assert statuses == {keep: "open", close: "closed"}
        await page.click("#refresh")
        await page.wait_for_function(
            f"""() => {{ const r = document.querySelector("#tables-body tr[data-table='{close}']");
                      return r && r.querySelector('.status-cell').textContent === 'closed'
                             && !r.querySelector('button.close-table'); }}"""
        )
        assert OPERATOR not in await storage_of(page)
    audit = (await api.call("GET", "/api/admin/audit?limit=20"))["audit"]
    assert any(a["action"] == "close_table" and a["target"] == close and a["outcome"] == "done" for a in audit)
    assert not any(a["action"] == "close_table" and a["target"] == keep for a in audit)


async def test_a_wrong_token_shows_unauthorized_and_changes_nothing(
    server: Running, api: Api, browser: Browser
) -> None:
    table_id = await api.table(seats=4)
    before = await table_ids(api)
    wrong = "not-the-operator-token-" + "x" * 20
    async with new_page(browser) as page:
        await open_page(page, server, token=wrong)
        error = page.locator("#error")
        assert (await error.text_content() or "").startswith("unauthorized: "), await error.text_content()
        assert "refused" in (await page.text_content("#token-state") or "")
        await page.click("#forget")  # the message cleared: each refusal below shows it anew
        assert await error.is_hidden()
        await page.click("#create")
        assert (await error.text_content() or "").startswith("unauthorized")
        await page.click("#forget")
        await page.click(f"#tables-body tr[data-table='{table_id}'] button.close-table")
        assert not await page.locator("#confirm").is_visible()
        assert (await error.text_content() or "").startswith("unauthorized")
        assert wrong not in await storage_of(page)
    assert await table_ids(api) == before
    assert (await api.call("GET", f"/api/tables/{table_id}"))["status"] == "open"


async def test_the_page_runs_only_its_own_files_and_cannot_be_framed(server: Running) -> None:
    async with aiohttp.ClientSession() as s, s.get(server.url + "/operator") as r:
        html = await r.text()
        csp = csp_of(r)
        assert r.status == 200 and r.headers["X-Frame-Options"] == "DENY"
        assert csp["default-src"] == ["'none'"] and csp["script-src"] == ["'self'"]
        assert csp["style-src"] == ["'self'"] and csp["connect-src"] == ["'self'"]
        assert csp["frame-ancestors"] == ["'none'"] and csp["form-action"] == ["'none'"]
        assert r.headers["Cache-Control"] == "no-cache"
    assert not re.search(r"<script\b(?![^>]*\bsrc=)", html), "no inline script"
    assert not re.search(r"<style\b|\bstyle=|\bon[a-z]+=", html), "no inline style or handler"
    assert "localStorage" not in html and 'src="/web/operator/operator.js"' in html
