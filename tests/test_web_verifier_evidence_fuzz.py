"""The page and rummy-verify on evidence the house could sign: a seeded fuzzer takes an
honest seat's evidence (§15) for a finished hand, the same hand voided at each phase,
and with refusals added, changes one field of one server item (its ``i``, ``h``,
``prev``, ``seat``, ``arrived``, ``outcome``, the move's seat; re-signed by the server,
whose key it holds — and, for a refusal, re-signed by the player too, since a liar
may be either), and asks both verifiers.  Their verdicts must agree: the check that
fails and the evidence item it names.  (Two implementations of §15, one written from
the spec alone: where they differ, one of them, or the spec, is wrong.)"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from playwright.async_api import Page

from tests.test_web_verifier import base_url, js_verify, page, window  # noqa: F401
from tests.webverify_cases import V2E, V2T, Case
from tests.webverify_tooling import (
    V2,
    ack_body,
    item,
    load,
    move_body,
    player_key,
    refused_ack,
    reseal,
    seat_evidence,
    sign,
)
from verifier.transcript import verify_transcript

SEED = 20261207
CASES = 400


def voided_at(n: int, *, seed_kept: bool = True, name: str = V2T) -> dict[str, Any]:
    """A vector's hand cut to its first ``n`` records and a void (resealed: this file's keys)."""
    t = load(name)
    log = t["log"][:n]
    log.append({"i": n, "t": log[-1]["t"] + 100, "type": "void", "reason": "test void", "h": ""})
    t["log"], t["result"], t["deck"], t["deck_faces"] = log, None, [], []
    if not seed_kept:
        t["server_seed"] = ""
    reseal(t)
    return t


def hands() -> list[dict[str, Any]]:
    out = []
    for name in (V2T, V2E):
        whole = load(name)
        reseal(whole)
        n = len(whole["log"])
        out += [whole, voided_at(1, name=name), voided_at(2, name=name), voided_at(2, seed_kept=False, name=name)]
        out += [voided_at(3, name=name), voided_at(n // 2, name=name)]
    return out


def with_refusals(t: dict[str, Any], seat: int, rng: random.Random) -> list[dict[str, Any]]:
    """The seat's evidence, and a refusal or two of moves it could have sent."""
    ev = seat_evidence(t, seat)
    log = t["log"]
    # what the seat held of the records a void replaced: its commit's ack (a void at 1),
    # its reveal's (a void at 2), sometimes as the receipts of the amendments' predecessor
    cut = len(log) - 1 if log[-1]["type"] == "void" and len(log) <= 3 else None
    if cut is not None:
        at = cut - 1
        move = (
            {"kind": "commit", "seat": seat, "commit": "cd" * 32}
            if at == 0
            else {"kind": "reveal", "seat": seat, "seed": "ab" * 32}
        )
        prev = log[at]["h"]
        psig = sign(player_key(seat), V2, "move", move_body(t, prev, move))
        ev.append(item("ack", ack_body(t, seat, move, prev, psig, at, log[at]["t"] + 5)))
        if rng.random() < 0.3:
            kind = str(move["kind"])
            value = move.get("commit", move.get("seed"))
            body = {"table_id": t["table_id"], "hand_no": t["hand_no"], "seat": seat, "kind": kind}
            ev.append(item("receipt", {**body, "value": value, "prev": prev}))
    for _ in range(rng.randint(0, 2)):
        i = rng.randrange(len(log))
        if i == 0:
            move = {"kind": "commit", "seat": seat, "commit": "cd" * 32}
        elif i == 1:
            move = {"kind": "reveal", "seat": seat, "seed": "ab" * 32}
        else:
            move = {"kind": "draw_closed", "seat": seat}
        ev.append(refused_ack(t, seat, move, i, log[i]["t"] + rng.choice((1, 500, 40_000))))
    return ev


def mutate(t: dict[str, Any], ev: list[dict[str, Any]], rng: random.Random) -> tuple[str, list[dict[str, Any]]]:
    """One field of one server item changed, the item re-signed."""
    ev = copy.deepcopy(ev)
    k = rng.choice([j for j, it in enumerate(ev) if it["purpose"] in ("ack", "head", "receipt")])
    it = ev[k]
    b = it["body"]
    log = t["log"]
    seats = [s["seat"] for s in log[0]["header"]["seats"]]
    fields = {"ack": ["i", "h", "arrived", "seat"], "head": ["i", "h"], "receipt": ["seat", "prev"]}[it["purpose"]]
    if it["purpose"] == "ack":
        fields += ["prev", "outcome", "prev_resigned", "move"]
    fields += ["hand", "malformed"]
    f = rng.choice(fields)
    if f == "i":
        b["i"] = rng.choice([b["i"] - 1, b["i"] + 1, len(log), rng.randrange(len(log))])
        b["i"] = max(0, b["i"])
        if rng.random() < 0.5 and b["i"] < len(log):
            b["h"] = log[b["i"]]["h"]  # a consistent lie: another record, its own link
    elif f == "h":
        b["h"] = rng.choice([r["h"] for r in log] + ["ee" * 32])
    elif f == "arrived":
        b["arrived"] = rng.choice(
            [b["arrived"] - 1_000, b["arrived"] + 1_000_000, 0, log[min(b["i"], len(log) - 1)]["t"] - 1]
        )
    elif f == "seat":
        s = rng.choice([x for x in range(8) if x != b["seat"]])
        b["seat"] = s
        if "move" in b and rng.random() < 0.5:
            b["move"]["seat"] = s
    elif f == "outcome":
        if b["outcome"] == "accepted":
            b["outcome"], b["code"] = "refused", rng.choice(["busy", "unavailable", "stale_head", "not_your_turn"])
        else:
            b["outcome"], b["code"] = "accepted", None
    elif f == "hand":
        if rng.random() < 0.5:
            b["table_id"] = "another-table"
        else:
            b["hand_no"] += 1
    elif f == "malformed":  # not a signed object of §15's forms: it fails where it stands
        del b[rng.choice(sorted(b))]
    elif f == "move":
        m = b["move"]
        if m["kind"] == "commit":
            m["commit"] = "ef" * 32
        elif m["kind"] == "reveal":
            m["seed"] = "ef" * 32
        elif m["kind"] in ("discard", "declare"):
            m["card"] = rng.randrange(52)
        else:
            b["move"] = {"kind": rng.choice(["draw_open", "drop", "leave", "timeout"]), "seat": m["seat"]}
        if rng.random() < 0.5 and b["move"]["seat"] in seats:
            b["psig"] = sign(player_key(b["move"]["seat"]), V2, "move", move_body(t, b["prev"], b["move"]))
    else:
        b["prev"] = rng.choice([r["h"] for r in log] + ["ee" * 32])
        if f == "prev_resigned" and b["move"]["seat"] in seats:
            b["psig"] = sign(player_key(b["move"]["seat"]), V2, "move", move_body(t, b["prev"], b["move"]))
    ev[k] = item(it["purpose"], b)
    return f"item {k} ({it['purpose']}) {f}", ev


def cases() -> list[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    rng = random.Random(SEED)
    hs = hands()
    out = []
    for n in range(CASES):
        t = hs[n % len(hs)]
        seats = [s["seat"] for s in t["log"][0]["header"]["seats"]]
        ev = with_refusals(t, rng.choice(seats), rng)
        what, bad = mutate(t, ev, rng)
        out.append((f"{n}: hand of {len(t['log'])} records; {what}", t, bad))
    return out


Verdict = tuple[bool, str | None, int | None, Any]


def verdict_of_page(r: dict[str, Any]) -> Verdict:
    """ok, the failing check, the evidence item it names; when it passed, the counts
    and whether evidence was skipped (every item after the void, rule 8)."""
    f = r["failure"]
    if f is not None:
        return (bool(r["ok"]), f["check"], f.get("item"), None)
    c = r["evidence"]
    counts = (c["total"], c["applied"], c["other_hands"], c["after_void"], "evidence" in r["skipped"])
    return (bool(r["ok"]), None, None, counts)


def verdict_of_python(t: dict[str, Any], ev: list[dict[str, Any]]) -> Verdict:
    rep = verify_transcript(copy.deepcopy(t), evidence=copy.deepcopy(ev))
    f = rep.failure
    if f is None:
        c = rep.summary["evidence"]
        counts = (c["items"], c["checked"], c["other_hands"], c["after_void"], "evidence" in rep.checks_skipped)
        return (rep.ok, None, None, counts)
    item_no = None
    if f.check == "evidence" and f.message.startswith("evidence item "):
        item_no = int(f.message.split()[2])
    return (rep.ok, f.check, item_no, None)


async def test_the_page_and_rummy_verify_agree_on_evidence_the_house_could_sign(page: Page) -> None:  # noqa: F811
    cs = cases()
    rs = await js_verify(page, [Case(name, json.dumps(t), None, evidence=json.dumps(ev)) for name, t, ev in cs])
    bad, failed = [], 0
    for (name, t, ev), r in zip(cs, rs, strict=True):
        js, py = verdict_of_page(r), verdict_of_python(t, ev)
        failed += not py[0]
        if js != py:
            bad.append(f"{name}: page {js} {r['failure'] and r['failure']['message'][:160]} | rummy-verify {py}")
    assert failed >= CASES // 4, f"only {failed} of {CASES} tampered files failed: the fuzzer tampers too little"
    assert not bad, f"{len(bad)} of {CASES} disagree:\n" + "\n".join(bad)
