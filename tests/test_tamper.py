"""Tampering with a vector transcript makes verification fail at the check
responsible (issue 3, item 5).

A dishonest server can sign whatever it likes, so ``forge`` re-chains and re-signs
the tampered transcript with the vectors' test key: the signature check passes and
the check responsible for the changed thing must catch it.  Only the signature-byte
case is left unsigned."""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from verifier import vectors
from verifier.signing import Signer
from verifier.transcript import chain_link, verify_transcript

DIR = Path(vectors.DIR)
KEY = vectors.TEST_SIGNER.public_bytes
Mutation = Callable[[dict[str, Any]], None]


def load(name: str) -> dict[str, Any]:
    t: dict[str, Any] = json.loads((DIR / name).read_text(encoding="utf-8"))["transcript"]
    return t


def forge(t: dict[str, Any], *, rechain: bool = True, signer: Signer = vectors.TEST_SIGNER) -> dict[str, Any]:
    """Re-sign the header and commitments, re-chain the log, re-sign the whole."""
    log = t["log"]
    log[0]["sig"] = signer.sign("header", log[0]["header"])
    log[1]["sig"] = signer.sign("commitments", log[1]["commitments"])
    if rechain:
        h = log[0]["header"]["prev_head"]
        for rec in log:
            rec["h"] = h = chain_link(h, rec)
        t["head"] = h
    t["signature"] = signer.sign("transcript", {k: v for k, v in t.items() if k != "signature"})
    return t


def failing_check(t: dict[str, Any], key: bytes = KEY) -> str | None:
    report = verify_transcript(t, key)
    return None if report.ok else report.failure.check  # type: ignore[union-attr]


def records_with(t: dict[str, Any], kind: str, pred: Callable[[dict[str, Any]], bool] = lambda e: True) -> list[int]:
    return [i for i, r in enumerate(t["log"]) if any(e["kind"] == kind and pred(e) for e in r.get("events", []))]


def event(t: dict[str, Any], i: int, kind: str, pred: Callable[[dict[str, Any]], bool] = lambda e: True) -> Any:
    return next(e for e in t["log"][i]["events"] if e["kind"] == kind and pred(e))


# ----------------------------------------------------------------------------- mutations
def m_seed(t: dict[str, Any]) -> None:
    r = next(r for r in t["log"][2]["reveals"] if r["status"] == "revealed")
    r["seed"] = ("ff" if r["seed"][:2] != "ff" else "00") + r["seed"][2:]


def m_commitment(t: dict[str, Any]) -> None:
    c = next(c for c in t["log"][1]["commitments"]["commits"] if c["commit"])
    c["commit"] = "00" * 32


def m_server_seed(t: dict[str, Any]) -> None:
    t["server_seed"] = "11" * 32


def m_commit_s(t: dict[str, Any]) -> None:
    t["log"][0]["header"]["commit_s"] = "22" * 32


def m_deck(t: dict[str, Any]) -> None:
    t["deck"][0], t["deck"][1] = t["deck"][1], t["deck"][0]


def m_deck_faces(t: dict[str, Any]) -> None:
    t["deck_faces"][0] = "JK" if t["deck_faces"][0] != "JK" else "AS"


def m_dealt_card(t: dict[str, Any]) -> None:
    hands = [e for e in t["log"][3]["events"] if e["kind"] == "hand"]
    a, b = hands[0]["private"]["cards"], hands[1]["private"]["cards"]
    a[0], b[0] = b[0], a[0]


def m_wild(t: dict[str, Any]) -> None:
    deal = t["log"][3]["events"][0]["data"]
    deal["wild_indicator"] = (deal["wild_indicator"] + 1) % 106


def m_closed_draw(t: dict[str, Any]) -> None:
    i = records_with(t, "draw", lambda e: e["data"]["source"] == "closed")[0]
    ev = event(t, i, "draw", lambda e: e["data"]["source"] == "closed")
    ev["private"]["card"] = (ev["private"]["card"] + 1) % 106


def m_action(t: dict[str, Any]) -> None:
    i = next(i for i, r in enumerate(t["log"]) if r.get("action", {}).get("kind") == "discard")
    t["log"][i]["action"]["kind"] = "drop"


def m_order(t: dict[str, Any]) -> None:
    log = t["log"]
    i = next(i for i in range(4, len(log) - 1) if log[i]["action"]["seat"] != log[i + 1]["action"]["seat"])
    log[i], log[i + 1] = log[i + 1], log[i]
    log[i]["i"], log[i + 1]["i"] = i, i + 1


def m_counted_points(t: dict[str, Any]) -> None:
    end = t["log"][-1]["events"][-1]
    seat = next(iter(end["data"]["counted"]))
    end["data"]["counted"][seat]["points"] += 1


def m_result_points(t: dict[str, Any]) -> None:
    winner = str(t["result"]["winner"])
    t["result"]["points"][winner] = 1


def m_penalty(t: dict[str, Any]) -> None:
    i = records_with(t, "drop")[0]
    event(t, i, "drop")["data"]["points"] = 10


def m_wrong_declare_points(t: dict[str, Any]) -> None:
    i = records_with(t, "declare", lambda e: e["data"]["valid"] is False)[0]
    event(t, i, "declare", lambda e: e["data"]["valid"] is False)["data"]["points"] = 40


def m_tokens(t: dict[str, Any]) -> None:
    deltas = t["result"]["settlement"]["deltas"]
    loser = next(s for s, d in deltas.items() if d < 0)
    deltas[loser] += 1
    t["result"]["settlement"]["commission"] -= 1


def m_end_settlement(t: dict[str, Any]) -> None:
    t["log"][-1]["events"][-1]["data"]["settlement"]["commission"] += 1


MUTATIONS: dict[str, tuple[Mutation, str]] = {
    "seed": (m_seed, "player_seeds"),
    "commitment": (m_commitment, "player_seeds"),
    "server_seed": (m_server_seed, "server_commit"),
    "commit_s": (m_commit_s, "server_commit"),
    "deck": (m_deck, "deck"),
    "deck_faces": (m_deck_faces, "deck"),
    "dealt_card": (m_dealt_card, "deal"),
    "wild_indicator": (m_wild, "deal"),
    "closed_draw": (m_closed_draw, "replay"),
    "action": (m_action, "replay"),
    "order": (m_order, "replay"),
    "counted_points": (m_counted_points, "points"),
    "result_points": (m_result_points, "points"),
    "penalty": (m_penalty, "penalties"),
    "wrong_declare_points": (m_wrong_declare_points, "penalties"),
    "tokens": (m_tokens, "settlement"),
    "end_settlement": (m_end_settlement, "settlement"),
}
PLAYED = [
    "transcript-4seat-two-players.json",
    "transcript-6seat-everything.json",
    "transcript-8seat-seeds-and-leave.json",
]


def applicable(name: str, mutation: str) -> bool:
    t = load(name)
    try:
        MUTATIONS[mutation][0](copy.deepcopy(t))
    except (StopIteration, IndexError, KeyError):
        return False
    return True


CASES = [(n, m) for n in PLAYED for m in MUTATIONS if applicable(n, m)]


def test_the_rich_vector_admits_every_mutation() -> None:
    assert {m for n, m in CASES if n == "transcript-6seat-everything.json"} == set(MUTATIONS)


@pytest.mark.parametrize("name,mutation", CASES)
def test_tampering_fails_at_the_responsible_check(name: str, mutation: str) -> None:
    t = load(name)
    fn, check = MUTATIONS[mutation]
    fn(t)
    assert failing_check(forge(t)) == check


@pytest.mark.parametrize("name", [*PLAYED, "transcript-void.json"])
def test_signature_byte_and_pinned_key(name: str) -> None:
    t = load(name)
    assert failing_check(t) is None
    bad = copy.deepcopy(t)
    sig = bytearray(bytes.fromhex(bad["signature"]))
    sig[10] ^= 0x01
    bad["signature"] = sig.hex()
    assert failing_check(bad) == "signature"
    # Another key, pinned: the transcript is not that server's.
    other = Signer.from_seed(b"\x07" * 32)
    assert failing_check(t, other.public_bytes) == "signature"
    # Signed by another key altogether, with the real key pinned.
    assert failing_check(forge(copy.deepcopy(t), signer=other)) == "signature"
    # A header whose signature no longer matches, the rest re-signed.
    hdr = copy.deepcopy(t)
    hdr["log"][0]["header"]["dealer"] += 1
    hdr["signature"] = vectors.TEST_SIGNER.sign("transcript", {k: v for k, v in hdr.items() if k != "signature"})
    assert failing_check(hdr) == "signature"


@pytest.mark.parametrize("name", [*PLAYED, "transcript-void.json"])
def test_chain_link_and_head(name: str) -> None:
    t = load(name)
    t["log"][2]["h"] = "ab" * 32
    assert failing_check(forge(t, rechain=False)) == "chain"
    t = load(name)
    t["head"] = "cd" * 32
    assert failing_check(forge(t, rechain=False)) == "chain"
    t = load(name)
    t["log"][0]["header"]["prev_head"] = "ef" * 32
    assert failing_check(forge(t, rechain=False)) == "chain"


def test_void_vector_seed_tampering() -> None:
    for fn, check in [(m_seed, "player_seeds"), (m_server_seed, "server_commit"), (m_commit_s, "server_commit")]:
        t = load("transcript-void.json")
        fn(t)
        assert failing_check(forge(t)) == check


# Fields one transcript alone cannot judge, protected by the signatures only: the
# record time; the free text of a void record; prev_head (checked between
# consecutive hands of a table, test_verify_cli.py); and, for seats not dealt in, the
# player id, plus in a void hand the dealer and withheld commitments.
UNJUDGED = {("t",), ("reason",), ("prev_head",)}


def judged(t: dict[str, Any], path: tuple[Any, ...]) -> bool:
    if (path[-1],) in UNJUDGED or path[-1] in ("h", "sig"):
        return False
    dealt = {r["seat"] for r in t["log"][2]["reveals"] if r["status"] != "withheld"}
    if path[:4] == ("log", 0, "header", "seats") and path[-1] == "player_id":
        return t["log"][0]["header"]["seats"][path[4]]["seat"] in dealt
    if t["result"] is None and (
        path == ("log", 0, "header", "dealer") or path[:4] == ("log", 1, "commitments", "commits")
    ):
        return False
    return True


def scalar_paths(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in scalar_paths(v, (*path, k))]
    if isinstance(obj, list):
        return [p for i, v in enumerate(obj) for p in scalar_paths(v, (*path, i))]
    return [path]


def mutate_at(t: dict[str, Any], path: tuple[Any, ...]) -> None:
    parent = t
    for k in path[:-1]:
        parent = parent[k]
    v = parent[path[-1]]
    if isinstance(v, bool):
        parent[path[-1]] = not v
    elif isinstance(v, int):
        parent[path[-1]] = v + 1
    elif isinstance(v, str):
        parent[path[-1]] = (v[:-1] + ("0" if v[-1:] != "0" else "1")) if v else "x"
    else:
        parent[path[-1]] = 0


@pytest.mark.parametrize("name", [*PLAYED, "transcript-void.json"])
def test_any_single_value_changed_fails(name: str) -> None:
    """Every scalar anywhere in the log, the seeds, the deck and the result (a
    seeded sample of 60 per transcript) changed by one: verification fails."""
    base = load(name)
    paths = [
        p for p in scalar_paths({k: v for k, v in base.items() if k not in ("signature", "head")}) if judged(base, p)
    ]
    rng = random.Random(name)
    sample = rng.sample(paths, min(60, len(paths)))
    for path in sample:
        t = copy.deepcopy(base)
        mutate_at(t, path)
        assert failing_check(forge(t)) is not None, f"changing {path} went unnoticed"
