"""The browser verifier (service/web/rummypf/*.js, service/web/verify.html) in a real
headless Chromium.

The JavaScript is an independent implementation of docs/fairness.md. These tests run
it on the published vectors (verifier/vectors/), on tampered variants made here
(tests/webverify_cases.py, and the 2026-12 amendments' in tests/webverify_amendments.py),
and compare its verdicts with rummy-verify's (run only as a black box, in one test).
Tampered transcripts are re-signed with the vectors' test signing key (and, for player
moves, with test player keys made here: tests/webverify_tooling.py), so that each variant
fails where it is meant to and not merely at the signature.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import os
import pathlib
import re
import secrets
import sys
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from playwright.async_api import Browser, Page

from service.webpage import inline_page
from tests.browser import new_page, serve_directory
from tests.webverify_amendments import build_amendment_cases
from tests.webverify_cases import (
    V1V,
    V2E,
    V2H,
    V2VS,
    Builder,
    Case,
    expected_checks,
    transcript_cases,
)
from tests.webverify_tooling import (
    ALL_CHECKS,
    CHECKS_V2,
    SERVER_PUB,
    SMALL_ORDER_KEYS,
    V1,
    V2,
    VECTORS,
    actions,
    amended_verdict,
    dump,
    encode_y,
    load,
    non_canonical_key,
    off_curve_key,
    pub_hex,
    r_not_canonical,
    read_vector,
    reseal,
    s_plus_l,
    vector_names,
)
from tests.webverify_tooling import (
    P as P_FIELD,
)

# one worker for this module under -n: the tampered variants (some 16,000 bodies
# re-signed) are made once, and verified in Chromium once (js_verify_built)
pytestmark = pytest.mark.xdist_group("web_verifier")

ROOT = pathlib.Path(__file__).resolve().parent.parent
WEB = ROOT / "service" / "web"


def build_cases() -> list[Case]:
    """The tampered and amended variants (the same every call: made once a process, two
    tests verify them, and making them re-signs some 16,000 bodies)."""
    return list(_built_cases())


@functools.cache
def _built_cases() -> tuple[Case, ...]:
    b = Builder()
    transcript_cases(b)
    build_amendment_cases(b)
    return tuple(b.cases)


def evidence_pairs() -> list[tuple[str, str]]:
    """(evidence vector, the v2 transcript vector of the same hand)."""
    pairs = []
    for p in sorted(VECTORS.glob("*evidence*.json")):
        items = read_vector(p.name)
        items = items["evidence"] if isinstance(items, dict) else items
        heads = [it for it in items if isinstance(it, dict) and it.get("purpose") == "head"]
        for tname in vector_names():
            t = load(tname)
            if t["protocol"] == V2 and heads and any(r["h"] == heads[0]["body"]["h"] for r in t["log"]):
                pairs.append((p.name, tname))
    return pairs


# ------------------------------------------------------------------ the browser


#: what js_verify hands the page, by a one-time key: the page fetches it from its own
#: origin (/cases/KEY) instead of taking some 16 MB of transcripts through Playwright's
#: pipe, which took 8-11 s of a cross-check at load 8
_PAYLOADS: dict[str, bytes] = {}


async def _payload(request: web.Request) -> web.Response:
    body = _PAYLOADS.pop(request.match_info["key"], None)
    if body is None:
        raise web.HTTPNotFound()
    return web.Response(body=body, content_type="application/json")


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def base_url() -> AsyncIterator[str]:
    """service/web over http on 127.0.0.1, and js_verify's cases at /cases/KEY."""
    async with serve_directory(WEB, {"/cases/{key}": _payload}) as url:
        yield url


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def window(browser: Browser) -> AsyncIterator[tuple[Page, list[str]]]:
    """One page (a window of its own context) for the module's tests, and the
    JavaScript errors seen on it.  Chromium spends about half a CPU-second opening a
    window, as much as loading the page: the tests share the window and each loads the
    page afresh (``page``).  The verifier page keeps nothing across loads (no cookie, no
    storage), and no test adds a handler or a route to it."""
    errors: list[str] = []
    async with new_page(browser, errors) as p:
        yield p, errors


@pytest_asyncio.fixture(loop_scope="session")
async def page(window: tuple[Page, list[str]], base_url: str) -> AsyncIterator[Page]:
    """verify.html freshly loaded; a JavaScript error while the test runs fails it."""
    p, errors = window
    errors.clear()
    await p.goto(f"{base_url}/verify.html")
    await p.wait_for_function("() => document.body.dataset.ready === 'true'")
    yield p
    assert not errors, f"JavaScript errors on the page: {errors}"


VERIFY_MANY = """async (url) => {
  const answer = await fetch(url);
  if (!answer.ok) throw new Error(`${url}: ${answer.status}`);
  const cases = await answer.json();
  const out = [];
  for (const c of cases) {
    const r = await RummyPF.verifyTranscript(c.text, {key: c.key, evidence: c.evidence, allowV1: c.allow_v1});
    out.push({ok: r.ok, failure: r.failure, passed: r.checks_passed, skipped: r.checks_skipped,
              warnings: r.warnings.map((w) => w.code), evidence: r.summary.evidence || null,
              fingerprint: r.summary.key_fingerprint || null});
  }
  return out;
}"""


async def js_verify(page: Page, cases: list[Case]) -> list[dict[str, Any]]:
    arg = [{"text": c.text, "key": c.key, "evidence": c.evidence, "allow_v1": c.allow_v1} for c in cases]
    key = secrets.token_hex(8)
    _PAYLOADS[key] = json.dumps(arg).encode("utf-8")
    try:
        return await page.evaluate(VERIFY_MANY, f"/cases/{key}")
    finally:
        _PAYLOADS.pop(key, None)


#: the page's verdicts on build_cases(), kept for this process: the two tests that need
#: them (the variants' expected failures, the cross-check against rummy-verify) verified
#: the same 216 transcripts in Chromium each; they run on one worker (xdist_group)
_BUILT_VERDICTS: list[list[dict[str, Any]]] = []


async def js_verify_built(page: Page) -> list[dict[str, Any]]:
    """js_verify(page, build_cases()), once a process (the page's code is the same file
    every time, and a fresh page verifies as the first did)."""
    if not _BUILT_VERDICTS:
        _BUILT_VERDICTS.append(await js_verify(page, build_cases()))
    return _BUILT_VERDICTS[0]


# ------------------------------------------------------------------ the primitives


async def test_rfc4231_hmac_in_webcrypto(page: Page) -> None:
    cases = json.loads((VECTORS / "rfc4231.json").read_text())["cases"]
    got = await page.evaluate(
        """async (cases) => {
          const B = RummyPF.bytes;
          const out = [];
          for (const c of cases) {
            out.push(B.bytesToHex(await RummyPF.crypto.hmacSha256(B.hexToBytes(c.key), B.hexToBytes(c.data))));
          }
          return out;
        }""",
        cases,
    )
    assert len(cases) == 7
    for c, mac in zip(cases, got, strict=True):
        if "hmac_sha256_128" in c:
            assert mac[:32] == c["hmac_sha256_128"], c["case"]
        else:
            assert mac == c["hmac_sha256"], c["case"]


DERIVE = """async (c) => {
  const F = RummyPF.fairness, B = RummyPF.bytes, inp = c.inputs;
  const decks = RummyPF.cards.decksFor(c.seats);
  const out = {commits: {}};
  out.rules_id = await F.rulesId(inp.rules);
  out.commit_s = await F.serverCommit(inp.server_seed);
  for (const p of inp.players) out.commits[p.seat] = await F.playerCommit(p.seat, p.seed);
  const T = F.buildT(inp.table_id, inp.hand_no, out.rules_id, inp.players);
  out.T = B.bytesToHex(T);
  const K = await F.deriveK(inp.server_seed, T);
  out.K = B.bytesToHex(K);
  const s1 = await F.Stream.create(K, "deal");
  out.blocks = [];
  for (let j = 0; j < c.deal_blocks.length; j++) out.blocks.push(B.bytesToHex(await s1.block(j)));
  const s2 = await F.Stream.create(K, "deal");
  out.u32 = [];
  for (let j = 0; j < c.deal_u32.length; j++) out.u32.push(await s2.nextU32());
  const s3 = await F.Stream.create(K, "deal");
  out.uniform = [];
  for (const u of c.deal_uniform) out.uniform.push({n: u.n, value: await s3.uniform(u.n)});
  out.deck = await F.deriveDeck(K, RummyPF.cards.packSize(decks));
  out.deck_faces = out.deck.map((id) => RummyPF.cards.face(id, decks));
  out.reshuffles = [];
  for (const r of [c.reshuffle, c.reshuffle_2]) out.reshuffles.push(await F.reshuffle(K, r.k, r.cards));
  return out;
}"""


async def test_derivation_vectors(page: Page) -> None:
    cases = json.loads((VECTORS / "derivation.json").read_text())["cases"]
    assert len(cases) >= 3
    for c in cases:
        got = await page.evaluate(DERIVE, c)
        assert got["rules_id"] == c["inputs"]["rules_id"]
        assert got["commit_s"] == c["commit_s"]
        assert got["commits"] == c["player_commits"]
        assert got["T"] == c["T"]
        assert got["K"] == c["K"]
        assert got["blocks"] == c["deal_blocks"]
        assert got["u32"] == c["deal_u32"]
        assert got["uniform"] == c["deal_uniform"]
        assert got["deck"] == c["deck"]
        assert got["deck_faces"] == c["deck_faces"]
        assert got["reshuffles"] == [c["reshuffle"]["closed"], c["reshuffle_2"]["closed"]]


async def test_strict_json_reader(page: Page) -> None:
    got = await page.evaluate(
        """() => {
          const J = RummyPF.jsonStrict, out = {};
          const tries = {
            ok: '{"a": [1, -2, "x\\\\u00e9\\\\ud83d\\\\ude00", true, null, {"b": 9007199254740991}]}',
            dup: '{"a": 1, "a": 2}', frac: '{"a": 1.0}', exp: '{"a": 1e3}', negzero: '{"a": -0}',
            big: '{"a": 9007199254740992}', lead0: '{"a": 01}', trail: '{"a": 1} x', comma: '{"a": 1,}',
            deep64: '{"a":' + '['.repeat(63) + ']'.repeat(63) + '}',
            deep65: '{"a":' + '['.repeat(64) + ']'.repeat(64) + '}',
            lone: '{"a": "\\\\udc00"}', ctrl: '{"a": "\\t"}', single: "{'a': 1}", nan: '{"a": NaN}',
          };
          for (const [k, v] of Object.entries(tries)) {
            try { out[k] = RummyPF.canonical(J.parse(v)); } catch (e) { out[k] = e.name; }
          }
          try { J.parse("x".repeat(17 * 1024 * 1024)); out.size = "read"; } catch (e) { out.size = e.name; }
          out.proto = Object.keys(J.parse('{"__proto__": {"x": 1}}')).join();
          return out;
        }"""
    )
    assert got.pop("ok") == '{"a":[1,-2,"xé😀",true,null,{"b":9007199254740991}]}'
    assert got.pop("deep64") == '{"a":' + "[" * 63 + "]" * 63 + "}"
    assert got.pop("proto") == "__proto__"
    assert got == dict.fromkeys(got, "ReadError")


async def test_score_api(page: Page) -> None:
    got = await page.evaluate(
        """() => [
          RummyPF.score(["AH","2H","3H","4S","5S","JK","7C","7D","7S","KH","QH","9C","8D"], "5D"),
          RummyPF.score(["AH","2H","3H","4H","5S","6S","7S","8S","9D","TD","JD","QD","KD"], "4C"),
          RummyPF.score(["KS","AS","2S","3D","3D","3D","9C","9C","TC","JC","QH","QH","QC"], "JK"),
          RummyPF.score(["AH","2H","3H","5S","6S","7S","8C","8C","JK","KH","KD","2C","4D"], "8D"),
        ]"""
    )
    # wild rank 5: Q-K-A hearts (pure), 5S 7D 8D (6-7-8 of diamonds), JK 7C 9C (7-8-9 of clubs);
    # loose 2H 3H 4S 7S = 16 (7C 7D 7S as a set would leave more)
    assert got[0]["points"] == 16 and not got[0]["valid_declare"]
    assert sorted(map(sorted, got[0]["groups"])) == [["5S", "7D", "8D"], ["7C", "9C", "JK"], ["AH", "KH", "QH"]]
    assert got[1]["points"] == 0 and got[1]["valid_declare"] and got[1]["loose"] == []
    # a printed-joker indicator: nothing is wild; K-A-2 is no sequence (D9), 3D 3D 3D no set (D10):
    # only the pure 9-Q of clubs is spared, D13 (b): 99 - 39
    assert got[2] == {
        "points": 60,
        "valid_declare": False,
        "groups": [["9C", "TC", "JC", "QC"]],
        "loose": got[2]["loose"],
    }
    # wild 8s: A-2-3H, 5-6-7S pure; 8C JK 4D and 8C KH KD; 2C loose (or 4D): the minimum is 2
    assert got[3]["points"] == 2


REFERENCE_COUNT = """(args) => {
  const {hands, seed} = args;
  const C = RummyPF.cards, G = RummyPF.groups;
  let x = seed >>> 0;
  const rnd = (n) => { x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0; return x % n; };
  // a reference written differently from arrange.js: every collection of disjoint valid groups
  function reference(cards, wr) {
    const n = cards.length, full = (1 << n) - 1, groups = [];
    let total = 0, bestPure = -1;
    for (const c of cards) total += C.value(c, wr);
    for (let m = 1; m <= full; m++) {
      const sub = cards.filter((_, i) => m & (1 << i));
      if (sub.length < 3) continue;
      const kind = G.classify(sub, wr);
      if (!kind) continue;
      const value = sub.reduce((a, c) => a + C.value(c, wr), 0);
      groups.push({m, kind, value});
      if (kind === "pure") bestPure = Math.max(bestPure, value);
    }
    if (groups.length > 250) return null;
    let bestA = -1, declare = false;
    (function rec(k0, used, seqs, pure, val) {
      if (seqs >= 2 && pure) { bestA = Math.max(bestA, val); if (used === full) declare = true; }
      for (let k = k0; k < groups.length; k++) {
        const g = groups[k];
        if (g.m & used) continue;
        rec(k + 1, used | g.m, seqs + (g.kind === "set" ? 0 : 1), pure || g.kind === "pure", val + g.value);
      }
    })(0, 0, 0, false, 0);
    let points = total;
    if (bestPure >= 0) points = Math.min(points, total - bestPure);
    if (bestA >= 0) points = Math.min(points, total - bestA);
    return {points, declare, groups: groups.length};
  }
  const out = {checked: 0, skipped: 0, bad: [], maxGroups: 0, declares: 0};
  for (let h = 0; h < hands; h++) {
    const decks = rnd(3) === 0 ? 3 : 2, pack = decks * 53;
    const ids = new Set();
    const runs = rnd(3), sets = rnd(3);
    for (let r = 0; r < runs; r++) {
      const suit = rnd(4), start = rnd(13), len = 3 + rnd(4), deck = rnd(decks);
      for (let k = 0; k < len; k++) ids.add(deck * 52 + suit * 13 + ((start + k) % 13));
    }
    for (let r = 0; r < sets; r++) {
      const rank = rnd(13);
      for (let k = 0; k < 3 + rnd(2); k++) ids.add(rnd(decks) * 52 + rnd(4) * 13 + rank);
    }
    for (let k = 0; k < rnd(4); k++) ids.add(decks * 52 + rnd(decks));
    while (ids.size < 13) ids.add(rnd(pack));
    const hand = [...ids].slice(0, 13).map((id) => C.describe(id, decks));
    const wr = C.wildRankOf(C.describe(rnd(pack), decks));
    const ref = reference(hand, wr);
    if (!ref) { out.skipped++; continue; }
    out.maxGroups = Math.max(out.maxGroups, ref.groups);
    const got = RummyPF.arrange.count(hand, wr);
    // the arrangement shown must show the count (B.3)
    const kinds = got.groups.map((g) => G.classify(g.map((i) => hand[i]), wr));
    const seqs = kinds.filter((k) => k === "pure" || k === "impure").length;
    const shape = kinds.length === 0 || (kinds.length === 1 && kinds[0] === "pure") ||
      (seqs >= 2 && kinds.includes("pure"));
    const covered = [].concat(...got.groups, got.loose).sort((a, b) => a - b).join();
    const looseSum = got.loose.reduce((a, i) => a + C.value(hand[i], wr), 0);
    const fine = got.points === ref.points && got.valid_declare === ref.declare && !kinds.includes(null) && shape &&
      covered === [...hand.keys()].join() && looseSum === got.points;
    if (ref.declare) out.declares++;
    if (!fine) out.bad.push({hand: hand.map((c) => c.joker ? "JK" : C.RANKS[c.rank] + C.SUITS[c.suit]), wr, ref, got});
    out.checked++;
  }
  return out;
}"""


async def test_count_matches_a_reference_search(page: Page) -> None:
    """arrange.js (a dynamic programme over card subsets) against a plain enumeration of
    every collection of disjoint groups, on random hands built from runs, sets and jokers."""
    got = await page.evaluate(REFERENCE_COUNT, {"hands": 400, "seed": 20240601})
    assert not got["bad"], got["bad"][:3]
    assert got["checked"] >= 300 and got["declares"] >= 1, got


# ------------------------------------------------------------------ the vectors and tampered variants


NOT_SAID = "not said"
SINGLE_FILE_CHECKS = {*CHECKS_V2, "read"}


def about_verdict(about: Any) -> str | None:
    """The verdict a vector's `_about` names: its "expect" ({"ok", "check", …}) when it has
    one, else any field whose name holds "expect" or "verdict" (None for a pass, a check's
    name for a failure), NOT_SAID when it names none."""
    if not isinstance(about, dict):
        return NOT_SAID
    expect = about.get("expect")
    if isinstance(expect, dict) and isinstance(expect.get("ok"), bool):
        return None if expect["ok"] else str(expect.get("check"))
    for key, value in about.items():
        if not any(w in key.lower() for w in ("expect", "verdict")):
            continue
        text = json.dumps(value).lower()
        named = [c for c in re.findall(r"[a-z_]+", text) if c in ALL_CHECKS]
        if named:
            return named[0]
        if re.search(r"\b(ok|pass|passes|passed|valid)\b", text):
            return None
    return NOT_SAID


def vector_files() -> list[str]:
    """Every JSON file under verifier/vectors/ (the adversarial ones in their folder too)."""
    return sorted(str(p.relative_to(VECTORS)) for p in VECTORS.rglob("*.json"))


def vector_cases() -> list[Case]:
    """Every transcript in verifier/vectors/ with the verdict it must get: what its `_about`
    names (with the evidence, the box and the warnings it says), else (vectors signed before
    the 2026-12 amendments) the rule of the amendments it breaks, if any. v1 vectors with no
    verdict of their own are given with the box ticked, and once more without (refused).
    A folder vector's transcripts are given one by one: each must fail the single-file
    check its `_about` names for it, and pass when that is a check across files only."""
    out = []
    for n in vector_files():
        data = read_vector(n)
        if not isinstance(data, dict):
            continue
        about = data.get("_about")
        expect = about.get("expect") if isinstance(about, dict) else None
        allow = bool(isinstance(expect, dict) and expect.get("allow_v1"))
        if "folder" in data and isinstance(expect, dict):
            failed = expect.get("failed") or {}
            for fname, t in sorted(data["folder"].items()):
                check = failed.get(fname)
                want = check if check in SINGLE_FILE_CHECKS else None
                out.append(Case(f"{n} {fname}", json.dumps(t), want, allow_v1=allow or t["protocol"] == V1))
            continue
        if "transcript" not in data and "log" not in data:
            continue
        t = load(n)
        said = about_verdict(about)
        text = (VECTORS / n).read_text(encoding="utf-8")
        evidence = (
            json.dumps(data["evidence"]) if "evidence" in data and (not expect or expect.get("with_evidence")) else None
        )
        if said != NOT_SAID:
            case = Case(n, json.dumps(t), said, evidence=evidence, allow_v1=allow)
            if isinstance(expect, dict) and expect.get("ok") and "warnings" in expect:
                case.notes.append("warnings=" + ",".join(sorted(expect["warnings"])))
            out.append(case)
            continue
        out.append(Case(n, text, amended_verdict(t), allow_v1=t["protocol"] == V1))
        if t["protocol"] == V1:
            out.append(Case(f"{n}, no box ticked", text, "format", allow_v1=False, message="refused"))
    return out


async def test_every_vector_verifies(page: Page) -> None:
    cases = vector_cases()
    assert len(cases) >= 4
    results = await js_verify(page, cases)
    wrong = []
    for c, r in zip(cases, results, strict=True):
        got = verdict(r["ok"], r["failure"] and r["failure"]["check"])
        if got != verdict(c.expect is None, c.expect):
            wrong.append((c.name, verdict(c.expect is None, c.expect), f"{got} {r['failure']}"))
            continue
        if c.expect is None and "/" not in c.name and " " not in c.name:
            passed, skipped = expected_checks(load(c.name), evidence=c.evidence is not None)
            assert (r["passed"], r["skipped"]) == (passed, skipped), c.name
        if c.message:
            assert c.message in r["failure"]["message"], (c.name, r["failure"])
        for note in c.notes:
            if note.startswith("warnings="):
                want = {w for w in note.split("=", 1)[1].split(",") if w}
                assert set(r["warnings"]) == want, (c.name, r["warnings"])
    assert not wrong, "\n" + disagreement_table(wrong, ("vector", "expected", "JavaScript"))
    pairs = evidence_pairs()
    if any(p.name.startswith("v2-") for p in VECTORS.glob("*.json")):
        assert pairs, "the v2 evidence vector matches no transcript vector"
    for ename, tname in pairs:
        (r,) = await js_verify(
            page,
            [Case(ename, (VECTORS / tname).read_text(), None, evidence=(VECTORS / ename).read_text(), key=SERVER_PUB)],
        )
        assert r["ok"], (ename, r["failure"])
        assert r["passed"][-1] == "evidence", r
        assert r["evidence"]["applied"] == r["evidence"]["total"] > 0, r["evidence"]


async def test_warnings(page: Page) -> None:
    want = {
        V1V: {"v1_server_only", "withheld", "void"},
        V2VS: {"void", "seed_not_revealed"},
        V2H: {"withheld"},
        V2E: set(),
        "v2-transcript-void-all-withheld.json": {"withheld", "void"},
    }
    names = [n for n in want if (VECTORS / n).exists()]
    results = await js_verify(page, [Case(n, (VECTORS / n).read_text(), None, allow_v1=True) for n in names])
    for n, r in zip(names, results, strict=True):
        assert set(r["warnings"]) == want[n], n


def disagreement_table(rows: Sequence[tuple[str, ...]], head: tuple[str, ...]) -> str:
    """A plain table: the first column as wide as its longest entry, the middle ones 20
    characters, the last as long as it is."""
    width = max(len(r[0]) for r in [*rows, head])

    def line(r: tuple[str, ...]) -> str:
        return "  ".join([f"{r[0]:<{width}}", *(f"{x:<20}" for x in r[1:-1]), r[-1]])

    return "\n".join([line(head), *(line(r) for r in rows)])


def verdict(ok: bool, check: str | None) -> str:
    return "ok" if ok else f"fail:{check}"


async def test_tampered_variants_fail_in_javascript(page: Page) -> None:
    cases = build_cases()
    assert len(cases) >= 60
    results = await js_verify_built(page)
    wrong = []
    for c, r in zip(cases, results, strict=True):
        got = verdict(r["ok"], r["failure"]["check"] if r["failure"] else None)
        want = verdict(c.expect is None, c.expect)
        if got != want:
            wrong.append((c.name, want, f"{got} {r['failure']}"))
        elif c.message and c.message not in r["failure"]["message"]:
            wrong.append((c.name, f"{want} ({c.message!r})", f"{got} {r['failure']['message']}"))
        elif c.allow_v1 and r["ok"]:
            assert "v1_server_only" in r["warnings"], c.name
    assert not wrong, "\n" + disagreement_table(wrong, ("variant", "expected", "JavaScript"))


async def test_failure_names_record_expected_found(page: Page) -> None:
    t = load(V2E)
    draw = next(r for r in actions(t, "draw_closed"))
    draw["events"][0]["private"]["card"] += 1
    reseal(t)
    (r,) = await js_verify(page, [Case("x", dump(t), "replay")])
    f = r["failure"]
    assert f["check"] == "replay" and f["record"] == draw["i"]
    assert f["expected"] == str(draw["events"][0]["private"]["card"] - 1)
    assert f["found"] == str(draw["events"][0]["private"]["card"])
    assert r["passed"] == CHECKS_V2[: CHECKS_V2.index("replay")]


# ------------------------------------------------------------------ the cross-check with rummy-verify


# rummy-verify's entry point (verifier.cli:main, what the console script runs) for each
# case, in one child process: the exit code and --json output of each run, read as a
# black box.  (A process per case spent ~0.6 s starting Python: 100 s for 150 cases.)
CLI_DRIVER = """
import contextlib, io, json, sys
from verifier.cli import main
results = []
for argv in json.load(sys.stdin):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    results.append([code, out.getvalue(), err.getvalue()])
json.dump(results, sys.stdout)
"""


def find_check(x: Any) -> str | None:
    """The failing check's name in rummy-verify's --json output, wherever it sits."""
    if isinstance(x, dict):
        for k in ("check", "failed_check", "failure"):
            v = x.get(k)
            if isinstance(v, str) and v in ALL_CHECKS:
                return v
        for v in x.values():
            got = find_check(v)
            if got:
                return got
    if isinstance(x, list):
        for v in x:
            got = find_check(v)
            if got:
                return got
    return None


async def run_rummy_verify(cases: list[Case], tmp: pathlib.Path) -> list[tuple[str, str, Any]]:
    """(verdict, detail, --json output) of rummy-verify for each case."""
    argvs = []
    for k, case in enumerate(cases):
        tfile = tmp / f"t{k}.json"
        tfile.write_text(case.text, encoding="utf-8")
        argv = ["--json"]
        if case.allow_v1:
            argv.append("--allow-v1")
        if case.key:
            argv += ["--key", case.key]
        argv.append(str(tfile))
        if case.evidence is not None:
            efile = tmp / f"e{k}.json"
            efile.write_text(case.evidence, encoding="utf-8")
            argv += ["--receipts", str(efile)]
        argvs.append(argv)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CLI_DRIVER,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    raw, err = await proc.communicate(json.dumps(argvs).encode())
    assert proc.returncode == 0, err.decode("utf-8", "replace")[-3000:]
    verdicts = []
    for code, out, errtext in json.loads(raw):
        try:
            data: Any = json.loads(out)
        except ValueError:
            data = None
        if code == 0:
            verdicts.append(("ok", "", data))
            continue
        check = find_check(data) or ("read" if code == 2 else "?")
        verdicts.append((f"fail:{check}", f"exit {code}: {(out or errtext)[:300]!r}", data))
    return verdicts


def check_lists(data: Any) -> tuple[list[str], list[str]] | None:
    """rummy-verify's passed and skipped checks, when its --json output names them so."""
    if isinstance(data, dict) and isinstance(data.get("checks_passed"), list):
        return list(data["checks_passed"]), list(data.get("checks_skipped") or [])
    return None


class KnownDisagreement(Exception):
    """Only the disagreements listed in KNOWN_DISAGREEMENTS remain."""


# Disagreements that are questions about the text of docs/fairness.md, not bugs, each
# explained in the report: variant name -> (this verifier's verdict, rummy-verify's).
# None remain as of this writing; the test is an ordinary test while the list is empty.
KNOWN_DISAGREEMENTS: dict[str, tuple[str, str]] = {}


# some 260 transcripts, in Chromium and in rummy-verify, on a busy machine: only a hang needs more
@pytest.mark.timeout(600)
@pytest.mark.xfail(
    condition=bool(KNOWN_DISAGREEMENTS),
    strict=True,
    raises=KnownDisagreement,
    reason="spec questions where the two implementations read docs/fairness.md differently: see KNOWN_DISAGREEMENTS",
)
async def test_javascript_agrees_with_rummy_verify(page: Page, tmp_path: pathlib.Path) -> None:
    started = time.monotonic()
    vectors = vector_cases()
    vectors += [
        Case(f"{e} with {t}", (VECTORS / t).read_text(), None, evidence=(VECTORS / e).read_text())
        for e, t in evidence_pairs()
    ]
    cases = vectors + build_cases()

    async def in_javascript() -> list[dict[str, Any]]:
        return await js_verify(page, vectors) + await js_verify_built(page)

    js, py = await asyncio.gather(in_javascript(), run_rummy_verify(cases, tmp_path))  # two cores
    rows = []
    known = []
    lists = []  # for information: where the two name passed and skipped checks differently
    for c, r, (pv, detail, data) in zip(cases, js, py, strict=True):
        jv = verdict(r["ok"], r["failure"]["check"] if r["failure"] else None)
        theirs = check_lists(data)
        if jv == pv == "ok" and theirs is not None and theirs != (r["passed"], r["skipped"]):
            lists.append((c.name, "", "skipped " + ",".join(r["skipped"]), "skipped " + ",".join(theirs[1])))
        if jv == pv:
            continue
        want = verdict(c.expect is None, c.expect)
        if KNOWN_DISAGREEMENTS.get(c.name) == (jv, pv):
            known.append((c.name, want, jv, pv))
        else:
            rows.append((c.name, want, jv, f"{pv}  {detail}"))
    elapsed = time.monotonic() - started
    head = ("transcript", "expected", "JavaScript", "rummy-verify")
    print(
        f"\ncross-check: {len(cases)} transcripts in {elapsed:.1f} s; "
        f"{len(known)} known and {len(rows)} new disagreements"
    )
    if known:
        print(disagreement_table(known, head))
    if lists:
        print("passed/skipped checks named differently (not a verdict; see the report):")
        print(disagreement_table(lists, head))
    assert not rows, f"\n{len(rows)} of {len(cases)} disagree:\n" + disagreement_table(rows, head)
    if known:
        raise KnownDisagreement("\n" + disagreement_table(known, head))


STRICT = """async (c) => {
  const E = RummyPF.ed25519, B = RummyPF.bytes;
  const key = (h) => E.keyProblem(B.hexToBytes(h));
  const out = {small: c.small.map(key), good: c.good.map((g) => key(g.pub)), bad: {}};
  for (const [k, h] of Object.entries(c.badKeys)) out.bad[k] = key(h);
  out.sig = {};
  for (const [k, h] of Object.entries(c.sigs)) out.sig[k] = E.signatureProblem(B.hexToBytes(h));
  out.verified = [];
  for (const g of c.good) {
    const ok = await RummyPF.crypto.ed25519Verify(B.hexToBytes(g.pub), B.hexToBytes(g.sig), B.hexToBytes(g.msg));
    out.verified.push(ok);
  }
  // under the identity key, the constant signature verifies any message with a lax verifier: refused here
  out.identity = await E.verify(B.hexToBytes(c.small[0]), B.hexToBytes(c.constant), B.utf8("anything"));
  out.sPlusL = await E.verify(B.hexToBytes(c.good[0].pub), B.hexToBytes(c.sigs.s_plus_l), B.hexToBytes(c.good[0].msg));
  return out;
}"""


async def test_strict_ed25519(page: Page) -> None:
    """§9 in JavaScript: the eight small-order encodings, non-canonical and off-curve keys,
    S ≥ L and a non-canonical R are refused before WebCrypto is asked; good keys and
    signatures (RFC 8032 test 1, keys made by `cryptography`) verify."""
    good = [
        {
            "pub": "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
            "msg": "",
            "sig": "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
            "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
        }
    ]
    for n in range(6):
        k = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(f"strict test {n}".encode()).digest())
        msg = hashlib.sha256(f"message {n}".encode()).digest() * (n + 1)
        good.append({"pub": pub_hex(k), "msg": msg.hex(), "sig": k.sign(msg).hex()})
    bad_keys = {
        "non-canonical y": non_canonical_key(),
        "y = p": encode_y(P_FIELD),
        "off the curve": off_curve_key(),
        "x = 0, sign bit set": encode_y(1, 1),
        "y = p - 1, sign bit set": encode_y(P_FIELD - 1, 1),
    }
    sigs = {
        "s_plus_l": s_plus_l(good[0]["sig"]),
        "r_not_canonical": r_not_canonical(good[0]["sig"]),
        "r_x0_sign": encode_y(1, 1) + good[0]["sig"][64:],
        "good": good[1]["sig"],
    }
    got = await page.evaluate(
        STRICT,
        {"small": SMALL_ORDER_KEYS, "good": good, "badKeys": bad_keys, "sigs": sigs, "constant": "01" + "00" * 63},
    )
    assert all(p and "small order" in p for p in got["small"]), got["small"]
    assert got["good"] == [None] * len(good)
    assert got["verified"] == [True] * len(good)
    assert "canonical" in got["bad"]["non-canonical y"] and "canonical" in got["bad"]["y = p"]
    assert "curve" in got["bad"]["off the curve"]
    assert "sign bit" in got["bad"]["x = 0, sign bit set"] and "sign bit" in got["bad"]["y = p - 1, sign bit set"]
    assert "S ≥ L" in got["sig"]["s_plus_l"]
    assert "R is not a canonical" in got["sig"]["r_not_canonical"] and "sign bit" in got["sig"]["r_x0_sign"]
    assert got["sig"]["good"] is None
    assert got["identity"]["ok"] is False and "small order" in got["identity"]["problem"]
    assert got["sPlusL"]["ok"] is False and "S ≥ L" in got["sPlusL"]["problem"]
    # the vectors' own cases (verifier/vectors/ed25519_strict.json), when they are there
    strict_file = VECTORS / "ed25519_strict.json"
    if strict_file.exists():
        data = json.loads(strict_file.read_text())
        listed = {k["public_key"] for k in data["keys"] if k["verdict"] == "refused"}
        assert set(SMALL_ORDER_KEYS) <= listed
        verdicts = await page.evaluate(STRICT_VECTORS, data)
        for k, problem in zip(data["keys"], verdicts["keys"], strict=True):
            assert (problem is None) == (k["verdict"] == "accepted"), (k, problem)
        for sig, v in zip(data["signatures"], verdicts["signatures"], strict=True):
            assert v["ok"] == (sig["verdict"] == "valid"), (sig, v)


STRICT_VECTORS = """async (d) => {
  const E = RummyPF.ed25519, B = RummyPF.bytes, out = {keys: [], signatures: []};
  for (const k of d.keys) out.keys.push(E.keyProblem(B.hexToBytes(k.public_key)));
  for (const s of d.signatures) {
    out.signatures.push(await E.verify(B.hexToBytes(s.public_key), B.hexToBytes(s.signature), B.hexToBytes(s.message)));
  }
  return out;
}"""


PAGE_FILES = [
    "verify.html",
    "verify-page.js",
    "verify.css",
    *(f"rummypf/{p.name}" for p in sorted((WEB / "rummypf").glob("*.js"))),
]


def test_page_has_nothing_a_strict_csp_blocks() -> None:
    """A strict Content-Security-Policy (scripts by hash or file, no inline handlers, no
    eval, styles by class) leaves the page working: none of what it would block is used."""
    for name in PAGE_FILES:
        text = (WEB / name).read_text(encoding="utf-8")
        assert not re.search(r"\son[a-z]+\s*=", text), name  # onclick=, onload=, …
        assert not re.search(r"\bstyle\s*=", text), name  # style attributes
        assert not re.search(r"\beval\s*\(|new\s+Function\s*\(|setTimeout\(\s*[\"'`]", text), name
        assert "javascript:" not in text, name
        assert not re.search(r"setAttribute\(\s*[\"']style|\.style\.|cssText", text), name
    html = inline_page(WEB / "verify.html")
    assert not re.search(r"<[a-z][^>]*\s(on[a-z]+|style)\s*=", html)
