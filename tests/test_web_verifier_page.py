"""The verify page itself (service/web/verify.html) in a real headless Chromium: a
hand pasted, verified and replayed; a failure shown; evidence and a void; a file still
being read; a transcript fetched by hand id; the page inlined into one file and opened
from a file URL; evidence of another hand; v1 refused unless asked for.  The fixtures
(a browser page on the vectors' directory) are tests/test_web_verifier.py's."""

# The fixtures imported from tests/test_web_verifier.py are the tests' parameters here.
# ruff: noqa: F811

from __future__ import annotations

import hashlib
import json
import pathlib
import re
import shutil

import pytest
from playwright.async_api import Browser, Page

from service.webpage import inline_page
from tests.browser import new_page, serve_directory
from tests.test_web_verifier import WEB, base_url, page, window  # noqa: F401
from tests.webverify_cases import EVID, V1E, V2E, V2T, V2VS
from tests.webverify_tooling import (
    CHECKS_V1,
    CHECKS_V2,
    SERVER_PUB,
    V2,
    VECTORS,
    dump,
    events,
    fingerprint,
    load,
    reseal,
    seat_evidence,
)

pytestmark = pytest.mark.xdist_group("web_verifier")


DONE = "() => document.body.dataset.state === 'done' && document.querySelectorAll('#checks li').length > 0"


async def paste_and_verify(page: Page, text: str, key: str = "", evidence: str = "", allow_v1: bool = False) -> None:
    await page.evaluate(
        """([t, k, e]) => {
          document.getElementById('transcript').value = t;
          document.getElementById('key').value = k;
          document.getElementById('evidence').value = e;
        }""",
        [text, key, evidence],
    )
    await page.set_checked("#allow-v1", allow_v1)
    await page.click("#verify")
    await page.wait_for_function(DONE)


async def check_statuses(page: Page) -> dict[str, str]:
    return await page.evaluate(
        "() => Object.fromEntries([...document.querySelectorAll('#checks li')]"
        ".map(li => [li.dataset.check, li.dataset.status]))"
    )


async def test_page_verifies_and_replays_a_hand(page: Page) -> None:
    name = V2E if (VECTORS / V2E).exists() else V1E
    t = load(name)
    await paste_and_verify(page, (VECTORS / name).read_text(), key=SERVER_PUB)
    statuses = await check_statuses(page)
    names = CHECKS_V2 if t["protocol"] == V2 else CHECKS_V1
    assert list(statuses) == names
    assert {k: v for k, v in statuses.items() if k != "evidence"} == dict.fromkeys(
        [n for n in names if n != "evidence"], "passed"
    )
    assert await page.get_attribute("#verdict", "data-ok") == "true"
    assert await page.get_attribute("#key-pinned", "data-pinned") == "true"
    # one form of the fingerprint (§9): SHA-256 of the raw key, 64 hex digits in groups of four
    shown = await page.text_content("#key-fingerprint")
    assert shown == fingerprint(SERVER_PUB)
    assert shown is not None and shown.replace(" ", "") == hashlib.sha256(bytes.fromhex(SERVER_PUB)).hexdigest()
    assert re.fullmatch(r"[0-9a-f]{4}( [0-9a-f]{4}){15}", shown)
    assert (await page.text_content("#key-info .label")) == "server key fingerprint"
    assert await page.is_visible("#replay-panel")

    # step by step: the deal first, forward, back, then the slider to the end
    assert await page.get_attribute("#step-description", "data-kind") == "deal"
    assert await page.is_hidden("#final")
    dealt = len(t["log"][3]["events"][0]["data"]["seats"])
    assert await page.locator("#table .seat .cards").count() == dealt
    await page.click("#step-next")
    first = await page.get_attribute("#step-description", "data-kind")
    assert first in ("draw", "drop", "clock", "leave")
    await page.click("#step-next")
    await page.click("#step-prev")
    assert await page.get_attribute("#step-count", "data-step") == "1"
    total = int(await page.get_attribute("#step-slider", "max") or "0")
    assert total > 50
    await page.click("#step-last")
    assert await page.get_attribute("#step-description", "data-kind") == "end"
    assert await page.is_visible("#final")
    points = await page.evaluate(
        "() => Object.fromEntries([...document.querySelectorAll('#final-table tr[data-seat]')]"
        ".map(tr => [tr.dataset.seat, Number(tr.querySelector('[data-points]').dataset.points)]))"
    )
    assert points == {k: v for k, v in t["result"]["points"].items()}
    deltas = await page.evaluate(
        "() => Object.fromEntries([...document.querySelectorAll('#final-table tr[data-seat]')]"
        ".map(tr => [tr.dataset.seat, Number(tr.querySelector('[data-delta]').dataset.delta)]))"
    )
    assert deltas == t["result"]["settlement"]["deltas"]
    # the wild card is marked, red suits are red
    assert await page.locator("#table .card.wild").count() >= 1
    assert await page.locator("#table .card.red").count() >= 1
    # the slider moves the replay too
    await page.evaluate(
        "() => { const s = document.getElementById('step-slider');"
        " s.value = '0'; s.dispatchEvent(new Event('input')); }"
    )
    assert await page.get_attribute("#step-description", "data-kind") == "deal"


async def test_page_shows_a_failure(page: Page) -> None:
    t = load(V2E)
    drop = events(t, "drop")[0][0]
    drop["events"][0]["data"]["points"] = 40
    reseal(t)
    await paste_and_verify(page, dump(t))
    statuses = await check_statuses(page)
    assert statuses["penalties"] == "failed"
    assert statuses["settlement"] == "not-run" and statuses["points"] == "passed"
    assert await page.get_attribute("#verdict", "data-ok") == "false"
    assert await page.text_content("#failure-check") == "penalties"
    assert await page.text_content("#failure-record") == f"log record {drop['i']}"
    assert await page.text_content("#failure-expected") == "20"
    assert await page.text_content("#failure-found") == "40"
    assert await page.get_attribute("#key-pinned", "data-pinned") == "false"


async def test_page_evidence_and_void(page: Page) -> None:
    if not (VECTORS / EVID).exists():
        pytest.skip("no evidence vector yet")
    await paste_and_verify(page, (VECTORS / V2T).read_text(), evidence=(VECTORS / EVID).read_text())
    assert (await check_statuses(page))["evidence"] == "passed"
    n = len(json.loads((VECTORS / EVID).read_text())["evidence"])
    assert await page.get_attribute("#evidence-info", "data-applied") == str(n)
    assert (await page.text_content("#evidence-count") or "").startswith(f"{n} of {n} items applied")
    assert f"evidence: {n} of {n} items applied" in (await page.text_content("#verdict") or "")
    await paste_and_verify(page, (VECTORS / V2VS).read_text())
    statuses = await check_statuses(page)
    assert statuses["deal"] == "skipped" and statuses["chain"] == "passed"
    codes = await page.evaluate("() => [...document.querySelectorAll('#warnings li')].map(li => li.dataset.code)")
    assert codes == ["void", "seed_not_revealed"]
    assert await page.is_hidden("#replay-panel")


async def test_verify_waits_for_an_evidence_file_still_being_read(page: Page, tmp_path: pathlib.Path) -> None:
    """A person who chooses the evidence file and clicks Verify at once: the page reads
    the file asynchronously, and once verified without it while the read was still under
    way (test_web_table saw it on a busy machine).  Here every file read takes a second
    longer, so the click always comes first; the evidence must still be applied."""
    if not (VECTORS / EVID).exists():
        pytest.skip("no evidence vector yet")
    evidence_file = tmp_path / "evidence.json"
    evidence_file.write_text((VECTORS / EVID).read_text())
    await page.evaluate(
        """(t) => {
          const slow = Blob.prototype.arrayBuffer;
          Blob.prototype.arrayBuffer = function () {
            return new Promise((done) => setTimeout(done, 1000)).then(() => slow.call(this));
          };
          document.getElementById('transcript').value = t;
        }""",
        (VECTORS / V2T).read_text(),
    )
    await page.set_input_files("#file-evidence", str(evidence_file))
    await page.click("#verify")
    await page.wait_for_function(DONE)
    assert (await check_statuses(page))["evidence"] == "passed"
    n = len(json.loads((VECTORS / EVID).read_text())["evidence"])
    assert await page.get_attribute("#evidence-info", "data-applied") == str(n)


async def test_page_fetches_a_transcript_by_hand_id(browser: Browser, tmp_path: pathlib.Path) -> None:
    # a stand-in for the server's GET /api/hands/{id}/transcript, next to the page
    site = tmp_path / "site"
    shutil.copytree(WEB, site)
    (site / "api" / "hands" / "h-1").mkdir(parents=True)
    (site / "api" / "hands" / "h-1" / "transcript").write_text(dump(load(V2T)))
    async with serve_directory(site) as url, new_page(browser) as p:
        await p.goto(f"{url}/verify.html")
        await p.wait_for_function("() => document.body.dataset.ready === 'true'")
        assert await p.input_value("#server") == url
        await p.fill("#hand-id", "h-1")
        await p.click("#fetch")
        await p.wait_for_function(DONE)
        assert await p.get_attribute("#verdict", "data-ok") == "true"


async def test_single_inlined_file_from_file_url(browser: Browser, tmp_path: pathlib.Path) -> None:
    html = inline_page(WEB / "verify.html")
    assert "<script src" not in html and 'rel="stylesheet"' not in html
    path = tmp_path / "verify-standalone.html"
    path.write_text(html, encoding="utf-8")
    requests: list[str] = []
    async with new_page(browser) as p:
        p.on("request", lambda req: requests.append(req.url))
        await p.goto(path.as_uri())
        await p.wait_for_function("() => document.body.dataset.ready === 'true'")
        assert await p.input_value("#server") == ""
        name = V2E if (VECTORS / V2E).exists() else V1E
        await paste_and_verify(p, (VECTORS / name).read_text())
        assert await p.get_attribute("#verdict", "data-ok") == "true"
        statuses = await check_statuses(p)
        assert statuses["signature"] == "passed" and statuses["replay"] == "passed"
        await p.click("#step-last")
        assert await p.get_attribute("#step-description", "data-kind") == "end"
    assert all(u.startswith("file://") for u in requests), requests


async def test_page_evidence_of_another_hand_fails_and_shows_its_count(page: Page) -> None:
    """Issue 21 item 3: another hand's evidence file said "every check passed" with 0 of 26
    items applied. It fails now, and the page shows the count."""
    t2 = load(V2T)
    reseal(t2)
    items = seat_evidence(t2, t2["log"][0]["header"]["seats"][1]["seat"])
    t = load(V2E)
    reseal(t)
    await paste_and_verify(page, dump(t), evidence=json.dumps(items))
    assert await page.get_attribute("#verdict", "data-ok") == "false"
    verdict_text = await page.text_content("#verdict") or ""
    assert "every check passed" not in verdict_text and "evidence" in verdict_text
    statuses = await check_statuses(page)
    assert statuses["evidence"] == "failed" and statuses["chain"] == "passed"
    assert await page.is_visible("#evidence-info")
    assert await page.get_attribute("#evidence-info", "data-applied") == "0"
    assert await page.get_attribute("#evidence-info", "data-other-hands") == str(len(items))
    count = await page.text_content("#evidence-count") or ""
    assert count.startswith(f"0 of {len(items)} items applied")
    assert "no item of this evidence is for table table-rich, hand 46" in (
        await page.text_content("#failure-message") or ""
    )
    # the counts are shown even when an earlier check fails and evidence is not reached
    t["log"][5]["t"] = t["log"][4]["t"] - 1
    reseal(t)
    await paste_and_verify(page, dump(t), evidence=json.dumps(items))
    statuses = await check_statuses(page)
    assert statuses["time"] == "failed" and statuses["evidence"] == "not-run"
    assert (await page.text_content("#evidence-count") or "").startswith(f"0 of {len(items)} items applied")
    assert "not checked" in (await page.text_content("#evidence-info") or "")


async def test_page_refuses_v1_unless_the_box_is_ticked(page: Page) -> None:
    text = (VECTORS / V1E).read_text()
    await paste_and_verify(page, text)
    assert await page.get_attribute("#verdict", "data-ok") == "false"
    assert (await check_statuses(page))["format"] == "failed"
    assert "accept rummy-pf/v1" in (await page.text_content("#failure-message") or "")
    label = await page.text_content("label.allow-v1")
    assert label is not None and label.strip() == "accept rummy-pf/v1: the server alone vouches for its moves"
    await paste_and_verify(page, text, allow_v1=True)
    assert await page.get_attribute("#verdict", "data-ok") == "true"
    codes = await page.evaluate("() => [...document.querySelectorAll('#warnings li')].map(li => li.dataset.code)")
    assert "v1_server_only" in codes and await page.is_visible("#warnings-box")
    # v2 evidence of the same hand refutes a v1 copy of it, box or no box
    v1_two = "transcript-4seat-two-players.json"
    await paste_and_verify(page, (VECTORS / v1_two).read_text(), evidence=(VECTORS / EVID).read_text(), allow_v1=True)
    assert (await check_statuses(page))["evidence"] == "failed"
    assert "downgrade" in (await page.text_content("#failure-message") or "")
