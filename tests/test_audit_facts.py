"""verifier/handfacts.py: what the room audit reads from a hand, checked against the
signed v2 vectors by a second route (the deal record's own events)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from verifier.arrange import best_arrangement
from verifier.cards import card_of_id, decks_for_seats, wild_rank_of
from verifier.handfacts import hand_facts
from verifier.transcript import verify_transcript

VECTORS = sorted((Path(__file__).resolve().parent.parent / "verifier" / "vectors").glob("v2-transcript-*.json"))


def transcript(path: Path) -> dict[str, Any]:
    t: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["transcript"]
    return t


@pytest.mark.parametrize("path", VECTORS, ids=[p.stem for p in VECTORS])
def test_facts_agree_with_the_records(path: Path) -> None:
    t = transcript(path)
    assert verify_transcript(t).ok
    f = hand_facts(t, str(path))
    log = t["log"]
    header = log[0]["header"]
    assert (f.table_id, f.hand_no) == (t["table_id"], t["hand_no"])
    assert [(s.seat, s.player_id, s.player_key) for s in f.seats] == [
        (s["seat"], s["player_id"], s["player_key"]) for s in header["seats"]
    ]
    reveals = next((r["reveals"] for r in log if r["type"] == "reveals"), None)
    assert f.reached_reveals == (reveals is not None)
    if reveals is not None:
        assert {s.seat: s.status for s in f.seats} == {r["seat"]: r["status"] for r in reveals}
    assert f.void == next((r["reason"] for r in log if r["type"] == "void"), None)

    deal = next((r for r in log if r["type"] == "deal"), None)
    if deal is not None:  # the dealt cards, as record 3 lists them
        decks = decks_for_seats(header["rules"]["seats"])
        head = next(e for e in deal["events"] if e["kind"] == "deal")
        wild = wild_rank_of(card_of_id(head["data"]["wild_indicator"], decks))
        dealt = {e["seat"]: e["private"]["cards"] for e in deal["events"] if e["kind"] == "hand"}
        assert sorted(s.seat for s in f.dealt) == head["data"]["seats"] == sorted(dealt)
        for s in f.dealt:
            assert s.deal_points == best_arrangement([card_of_id(c, decks) for c in dealt[s.seat]], wild).points

    actions = [r["action"] for r in log if r["type"] == "action"]
    for s in f.seats:
        assert s.timeouts == sum(1 for a in actions if a["seat"] == s.seat and a["kind"] == "timeout")
        assert s.own_moves == sum(1 for a in actions if a["seat"] == s.seat and a["kind"] != "timeout")
        turns = sum(1 for r in log for e in r.get("events", []) if e["kind"] == "turn" and e["seat"] == s.seat)
        assert s.turns == turns
    result = t["result"]
    if result is None:
        assert f.winner is None and all(s.points is None and not s.won for s in f.seats)
    else:
        assert f.winner == result["winner"]
        assert {s.seat: s.points for s in f.seats} == {int(k): v for k, v in result["points"].items()}
        assert {s.seat: s.delta for s in f.seats} == {int(k): v for k, v in result["settlement"]["deltas"].items()}


def test_the_vectors_show_what_the_audit_counts() -> None:
    """Between them the vectors hold a clock move, a withheld and a no_commit seat, a
    void after the reveals (its deal known from the published deck) and one before."""
    facts = [hand_facts(transcript(p)) for p in VECTORS]
    seats = [s for f in facts for s in f.seats]
    assert any(s.timeouts for s in seats)
    assert any(s.status == "withheld" for s in seats) and any(s.status == "no_commit" for s in seats)
    mid = next(f for f in facts if f.void is not None and f.reached_reveals and f.dealt)
    assert all(s.deal_points is not None for s in mid.dealt)
    assert any(f.void is not None and not f.reached_reveals and not f.dealt for f in facts)
