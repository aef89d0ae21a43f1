"""The rummy-pf vectors: RFC 4231 first, then the derivation (checked by the
verifier and by an independent re-implementation written here), the transcripts
(v2, and the frozen v1 ones under the v1 rules), the evidence, and the regeneration
of every file byte for byte."""

from __future__ import annotations

import hashlib
import hmac
import json
import struct
from pathlib import Path
from typing import Any

import pytest

from verifier import fairness, vectors
from verifier.transcript import CHECKS_FOR, verify_transcript

DIR = Path(vectors.DIR)


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DIR / name).read_text(encoding="utf-8"))
    assert {"what", "produced_by", "checked_by"} <= set(data["_about"]), "each vector says where it came from"
    return data


def test_rfc4231_hmac_sha256() -> None:
    cases = load("rfc4231.json")["cases"]
    assert [c["case"] for c in cases] == [1, 2, 3, 4, 5, 6, 7]
    for c in cases:
        mac = hmac.new(bytes.fromhex(c["key"]), bytes.fromhex(c["data"]), hashlib.sha256).hexdigest()
        ours = fairness.hmac_sha256(bytes.fromhex(c["key"]), bytes.fromhex(c["data"])).hex()
        assert ours == mac
        if "hmac_sha256" in c:
            assert mac == c["hmac_sha256"], c["case"]
        else:
            assert mac[:32] == c["hmac_sha256_128"], c["case"]


# An independent re-implementation of the derivation, from docs/fairness.md alone:
# struct for the integers, an explicit byte buffer, its own Fisher-Yates loop.
def _lp(b: bytes) -> bytes:
    return struct.pack(">I", len(b)) + b


class _IndependentStream:
    def __init__(self, key: bytes, label: str) -> None:
        self.key, self.label, self.counter, self.pending = key, label.encode(), 0, bytearray()

    def u32(self) -> int:
        while len(self.pending) < 4:
            msg = _lp(self.label) + struct.pack(">Q", self.counter)
            self.pending += hmac.new(self.key, msg, hashlib.sha256).digest()
            self.counter += 1
        (value,) = struct.unpack(">I", bytes(self.pending[:4]))
        del self.pending[:4]
        return value

    def below(self, n: int) -> int:
        limit = (1 << 32) - ((1 << 32) % n)
        value = self.u32()
        while value >= limit:
            value = self.u32()
        return value % n


def _independent_shuffle(cards: list[int], key: bytes, label: str) -> list[int]:
    stream = _IndependentStream(key, label)
    deck = list(cards)
    i = len(deck) - 1
    while i > 0:
        j = stream.below(i + 1)
        deck[i], deck[j] = deck[j], deck[i]
        i -= 1
    return deck


def _independent_key(inputs: dict[str, Any]) -> tuple[bytes, bytes]:
    t = _lp(b"rummy-pf/v1/deal") + _lp(inputs["table_id"].encode()) + struct.pack(">Q", inputs["hand_no"])
    t += _lp(inputs["rules_id"].encode()) + struct.pack(">I", len(inputs["players"]))
    for p in sorted(inputs["players"], key=lambda p: p["seat"]):
        t += struct.pack(">I", p["seat"]) + _lp(p["player_id"].encode()) + _lp(bytes.fromhex(p["seed"]))
    return t, hmac.new(bytes.fromhex(inputs["server_seed"]), t, hashlib.sha256).digest()


@pytest.mark.parametrize("impl", ["verifier", "independent"])
def test_derivation_vectors(impl: str) -> None:
    cases = load("derivation.json")["cases"]
    assert [c["seats"] for c in cases] == [4, 6, 8]
    for c in cases:
        inp = c["inputs"]
        pack = 159 if c["seats"] == 8 else 106
        canon = json.dumps({"ruleset": "rummy13/v1", "table": inp["rules"]}, sort_keys=True, separators=(",", ":"))
        assert hashlib.sha256(canon.encode()).hexdigest() == inp["rules_id"]
        if impl == "verifier":
            players = [(p["seat"], p["player_id"], bytes.fromhex(p["seed"])) for p in inp["players"]]
            t = fairness.transcript_input(inp["table_id"], inp["hand_no"], inp["rules_id"], players)
            key = fairness.derive_key(bytes.fromhex(inp["server_seed"]), t)
            stream = fairness.Stream(key, "deal")
            assert [stream.block(0).hex(), stream.block(1).hex()] == c["deal_blocks"]
            assert [stream.next_u32() for _ in range(8)] == c["deal_u32"]
            us = fairness.Stream(key, "deal")
            assert [us.uniform(u["n"]) for u in c["deal_uniform"]] == [u["value"] for u in c["deal_uniform"]]
            deck = fairness.deal_deck(key, pack)
            re1 = fairness.reshuffle_cards(key, 1, c["reshuffle"]["cards"])
            re2 = fairness.reshuffle_cards(key, 2, c["reshuffle_2"]["cards"])
            assert fairness.server_commit(bytes.fromhex(inp["server_seed"])).hex() == c["commit_s"]
            for p in inp["players"]:
                assert (
                    fairness.player_commit(p["seat"], bytes.fromhex(p["seed"])).hex()
                    == c["player_commits"][str(p["seat"])]
                )
        else:
            t, key = _independent_key(inp)
            ind = _IndependentStream(key, "deal")
            assert [ind.u32() for _ in range(8)] == c["deal_u32"]
            deck = _independent_shuffle(list(range(pack)), key, "deal")
            re1 = _independent_shuffle(sorted(c["reshuffle"]["cards"]), key, "reshuffle/1")
            re2 = _independent_shuffle(sorted(c["reshuffle_2"]["cards"]), key, "reshuffle/2")
            pc = {
                str(p["seat"]): hashlib.sha256(
                    _lp(b"rummy-pf/v1/pcommit") + struct.pack(">I", p["seat"]) + bytes.fromhex(p["seed"])
                ).hexdigest()
                for p in inp["players"]
            }
            assert pc == c["player_commits"]
        assert t.hex() == c["T"] and key.hex() == c["K"]
        assert deck == c["deck"] and sorted(deck) == list(range(pack))
        assert re1 == c["reshuffle"]["closed"] and re2 == c["reshuffle_2"]["closed"]


TRANSCRIPTS = sorted(p.name for p in DIR.glob("*transcript-*.json"))
V1 = sorted(p.name for p in DIR.glob("transcript-*.json"))
V2 = sorted(p.name for p in DIR.glob("v2-transcript-*.json"))


def test_there_are_enough_transcripts() -> None:
    assert len(V1) == 4 and len(V2) >= 7
    for name in ("transcript-6seat-everything.json", "v2-transcript-6seat-everything.json"):
        rich = load(name)["transcript"]
        kinds = set()
        for rec in rich["log"]:
            for e in rec.get("events", []):
                kinds.add(e["kind"])
                if e["kind"] == "draw":
                    kinds.add("draw_" + e["data"]["source"])
                if e["kind"] == "declare":
                    kinds.add("declare_" + ("valid" if e["data"]["valid"] else "wrong"))
                if e["kind"] == "drop":
                    kinds.add(f"drop_{e['data']['points']}")
        assert {"draw_open", "declare_wrong", "drop_20", "drop_40", "clock", "reshuffle", "declare_valid"} <= kinds


@pytest.mark.parametrize("name", TRANSCRIPTS)
def test_every_transcript_vector_verifies_with_the_pinned_key(name: str) -> None:
    t = load(name)["transcript"]
    v1 = t["protocol"] == "rummy-pf/v1"
    report = verify_transcript(t, vectors.TEST_SIGNER.public_bytes, allow_v1=v1)
    assert report.ok, report.failure
    assert report.checks_passed[0] == "format" and "chain" in report.checks_passed
    # issue 16: v1 only when asked, and then with the warning that the server alone vouches for it
    assert ("v1_server_only" in {w["code"] for w in report.warnings}) == v1
    if v1:
        refused = verify_transcript(t, vectors.TEST_SIGNER.public_bytes)
        assert (
            refused.failure is not None
            and refused.failure.check == "format"
            and "--allow-v1" in refused.failure.message
        )
    order = CHECKS_FOR[t["protocol"]]
    every = report.checks_passed + report.checks_skipped
    assert sorted(every, key=order.index) == list(order) and len(set(every)) == len(every)
    assert report.checks_passed == sorted(report.checks_passed, key=order.index)
    assert set(report.skip_reasons) == set(report.checks_skipped)


# What each vector cannot check (§14: "reported as skipped, never as passed") and
# the warnings it carries.
EXPECTED_SKIPS = {
    "transcript-void.json": (
        {"replay", "points", "penalties", "settlement", "evidence"},
        {"withheld", "void", "v1_server_only"},
    ),
    "transcript-8seat-seeds-and-leave.json": ({"evidence"}, {"withheld", "v1_server_only"}),
    "v2-transcript-headsup-withheld.json": ({"evidence"}, {"withheld"}),
    "v2-transcript-8seat-seeds-and-leaves.json": ({"evidence"}, {"withheld"}),
    "v2-transcript-void-all-withheld.json": (
        {"replay", "points", "penalties", "settlement", "evidence"},
        {"withheld", "void"},
    ),
    "v2-transcript-void-mid-hand.json": ({"points", "settlement", "evidence"}, {"void"}),
    "v2-transcript-void-seed-lost.json": (
        {
            "player_signatures",
            "server_commit",
            "player_seeds",
            "deck",
            "deal",
            "replay",
            "points",
            "penalties",
            "settlement",
            "evidence",
        },
        {"void", "seed_not_revealed"},
    ),
}


@pytest.mark.parametrize("name", TRANSCRIPTS)
def test_skipped_checks_and_warnings(name: str) -> None:
    report = verify_transcript(load(name)["transcript"], allow_v1=True)
    default = ({"evidence"}, set() if name.startswith("v2-") else {"v1_server_only"})
    skipped, warned = EXPECTED_SKIPS.get(name, default)
    assert set(report.checks_skipped) == skipped
    assert {w["code"] for w in report.warnings} == warned
    assert report.to_json()["warnings"] == report.warnings and report.to_json()["checks_skipped"] == list(
        report.checks_skipped
    )


def test_the_evidence_vector_agrees_with_its_transcript() -> None:
    t = load("v2-transcript-4seat-two-players.json")["transcript"]
    evidence = load("v2-evidence-4seat-two-players-seat1.json")["evidence"]
    assert {e["purpose"] for e in evidence} == {"ack", "head", "header", "player"}
    report = verify_transcript(t, vectors.TEST_SIGNER.public_bytes, evidence)
    assert report.ok, report.failure
    assert report.checks_passed[-1] == "evidence"
    assert report.summary["evidence"] == {
        "items": len(evidence),
        "checked": len(evidence),
        "other_hands": 0,
        "after_void": 0,
    }
    # The same evidence beside another hand's transcript proves nothing about it: it
    # fails (issue 16; it used to pass with every item "for other hands").
    other = verify_transcript(load("v2-transcript-6seat-everything.json")["transcript"], None, evidence)
    assert other.failure is not None and other.failure.check == "evidence"
    assert "no item of this evidence is for table" in other.failure.message
    assert other.summary["evidence"] == {
        "items": len(evidence),
        "checked": 0,
        "other_hands": len(evidence),
        "after_void": 0,
    }


def test_v1_transcripts_are_refused_unless_asked_and_their_evidence_always_fails() -> None:
    """Appendix C (issue 16): evidence given for a v1 transcript always fails — items of
    its hand refute a v1 copy, items of other hands prove nothing."""
    t = load("transcript-4seat-two-players.json")["transcript"]
    refused = verify_transcript(t, None)
    assert refused.failure is not None and refused.failure.check == "format"
    report = verify_transcript(t, None, allow_v1=True)
    assert report.ok and "evidence" in report.checks_skipped
    assert "player_signatures" not in report.checks_passed + report.checks_skipped
    for evidence in ([], load("v2-evidence-4seat-two-players-seat1.json")["evidence"]):
        with_evidence = verify_transcript(t, None, evidence, allow_v1=True)
        assert with_evidence.failure is not None and with_evidence.failure.check == "evidence"
        assert with_evidence.summary["evidence"]["checked"] == 0


def test_the_frozen_v1_vectors_are_unchanged() -> None:
    """rummy-pf/v1 transcripts are frozen: old evidence must keep its exact bytes."""
    for name, digest in vectors.V1_FROZEN.items():
        assert hashlib.sha256((DIR / name).read_bytes()).hexdigest() == digest, name


def test_regenerating_the_vectors_gives_the_same_bytes() -> None:
    fresh = vectors.all_files()
    on_disk = {
        p.relative_to(DIR).as_posix(): p.read_text(encoding="utf-8")
        for p in DIR.rglob("*.json")
        if p.name not in vectors.V1_FROZEN
    }
    assert set(fresh) == set(on_disk)
    for name, text in fresh.items():
        assert text == on_disk[name], f"{name} differs from what verifier/vectors.py generates"
