"""A refusal's ack names the record it was judged at (docs/fairness.md §15 rule 7, RULES.md D35).

``i`` is "the last record of the log when the table judged the move", and the house
signs the ack, so it chooses ``i``.  A house that named an *earlier* record than the
one the player signed its move over made ``prev`` differ from record ``i``'s ``h``,
and the verifier took the refusal for a stale move's (justified, nothing owed),
although the move is signed over record ``j > i``, which the published log holds (and
whose signed head the player keeps): the house could then charge the seat before the
window D35 owes it (a withheld reveal, a clock move) and the hand passed with the
player's evidence.  Found by an audit of the verifier (2026-12-03); now ``evidence``
fails such an ack (verifier.evidence.judged_at_the_last_record).

Each case is built twice: with the honest ``i`` (which fails ``evidence`` as D35
says) and with the earlier one (which must fail it too).
"""

from __future__ import annotations

import copy
from typing import Any

from verifier.chain import reveal_move
from verifier.fairness import player_commit
from verifier.hand import Discard, DrawClosed, TableRules, TimeOut, action_to_json
from verifier.transcript import Report, verify_transcript
from verifier.vectors import SEED_WINDOW_MS, TEST_SIGNER, VectorHand, greedy

KEY = TEST_SIGNER.public_bytes


def verdict(t: Any, evidence: Any) -> Report:
    return verify_transcript(t, KEY, evidence, debug=True)


def _withheld_after_refused_reveal(ack_at_record_0: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Seat 2 reveals 0.4 s before the reveal window closes; the house refuses it for
    its own reason (``unavailable``) and marks seat 2 ``withheld`` when the window
    closes: a first drop of 20 charged for a seed sent in time (D29, D35)."""
    hand = VectorHand("audit-reveal", 0, TableRules(seats=4, point_value=10), [0, 1, 2], 2)
    rec = hand.rec
    hand._heads(rec.open(hand.now))
    hand.accept_header()
    commits = {}
    for s in (0, 1, 2):
        c = player_commit(s, hand.seeds[s])
        move = {"kind": "commit", "seat": s, "commit": c.hex()}
        sig = hand.sign(s, rec.head, move)
        rec.check_commit(s, c, sig)
        hand.now += 40
        hand.evidence[s].append(rec.ack(s, move, rec.head, sig, arrived=hand.now))
        commits[s] = (c, sig)
    hand._heads(rec.commitments(commits, hand.now + 1000))
    move = reveal_move(2, hand.seeds[2])
    sig = hand.sign(2, rec.head, move)  # signed over record 1, as §9 says
    arrived = rec.records[1]["t"] + SEED_WINDOW_MS - 400
    # the honest ack names record 1 (the last record); the cheating one names record 0
    ack = rec.ack(2, move, rec.head, sig, arrived=arrived, code="unavailable", i=0 if ack_at_record_0 else None)
    hand.evidence[2].append(ack)
    seeds = {s: (hand.seeds[s], hand.sign(s, rec.head, reveal_move(s, hand.seeds[s]))) for s in (0, 1)}
    hand._heads(rec.reveal(seeds, rec.records[1]["t"] + SEED_WINDOW_MS))  # seat 2 withheld, 0.4 s after it
    hand.now = rec.records[2]["t"] + 5
    record, _ = rec.deal(hand.now)
    hand._heads(record)
    hand.turn_began = hand.now
    hand.play(greedy)
    assert rec.ended
    t = copy.deepcopy(rec.transcript())
    assert t["log"][2]["reveals"][2]["status"] == "withheld"
    assert t["result"]["points"]["2"] == 20  # charged a first drop
    return t, hand.evidence[2]


def test_an_honestly_named_refused_reveal_then_withheld_early_fails() -> None:
    t, evidence = _withheld_after_refused_reveal(ack_at_record_0=False)
    r = verdict(t, evidence)
    assert r.failure is not None and r.failure.check == "evidence", r.failure


def test_a_refused_reveal_acked_at_an_earlier_record_then_withheld_early_fails() -> None:
    """The ack says the last record was record 0 when the seed (signed over record 1,
    whose signed head the player holds) was judged: the house contradicts its own log,
    and charged seat 2 a withheld reveal before the window it owed (D35)."""
    t, evidence = _withheld_after_refused_reveal(ack_at_record_0=True)
    ack = next(it for it in evidence if it["purpose"] == "ack" and it["body"]["outcome"] == "refused")
    assert ack["body"]["i"] == 0 and ack["body"]["prev"] == t["log"][1]["h"]
    r = verdict(t, evidence)
    assert r.failure is not None and r.failure.check == "evidence", (
        "seat 2 paid a first drop (D29) for a seed the house refused 0.4 s before the window closed (D35); the "
        "ack naming record 0 for a move signed over record 1 was taken as a justified (stale) refusal"
    )


def _timed_out_after_refused_discard(ack_before_the_draw: bool) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
    """The seat on turn draws (accepted, acked), then discards 20 s into its 30 s
    turn; the house refuses the discard (``busy``) and moves the clock for it at the
    turn's ordinary end, 10 s later: a missed turn charged while the house owed it a
    whole turn (D35)."""
    hand = VectorHand("audit-discard", 0, TableRules(seats=4, turn_seconds=30), [0, 1], 1)
    hand.seed_phases()
    state = hand.rec.state
    assert state is not None
    seat = state.turn
    drew = hand.act(DrawClosed(seat))
    state = hand.rec.state
    assert state is not None
    card = state.seat(seat).drawn_this_turn
    assert card is not None
    move = action_to_json(Discard(seat, card))
    head = hand.rec.head  # the draw's record: the player signs its discard over it
    sig = hand.sign(seat, head, move)
    arrived = hand.turn_began + 20_000
    named = drew["i"] - 1 if ack_before_the_draw else None
    hand.evidence[seat].append(hand.rec.ack(seat, move, head, sig, arrived=arrived, code="busy", i=named))
    timed = hand.act(TimeOut(seat))
    assert timed["t"] < arrived + 30_000
    hand.play(greedy)
    assert hand.rec.ended
    return copy.deepcopy(hand.rec.transcript()), hand.evidence[seat], drew["i"]


def test_an_honestly_named_refused_discard_then_timed_out_early_fails() -> None:
    t, evidence, _ = _timed_out_after_refused_discard(ack_before_the_draw=False)
    r = verdict(t, evidence)
    assert r.failure is not None and r.failure.check == "evidence", r.failure


def test_a_refused_discard_acked_before_the_seats_own_draw_then_timed_out_early_fails() -> None:
    """The ack says the last record was the one before the seat's draw, although the
    discard is signed over the draw's record — which the house itself acknowledged as
    accepted earlier (an ack the player holds): a justified-looking refusal, then a
    clock move 10 s after it (D35 owes 30 s)."""
    t, evidence, drew = _timed_out_after_refused_discard(ack_before_the_draw=True)
    refused = next(it for it in evidence if it["purpose"] == "ack" and it["body"]["outcome"] == "refused")
    assert refused["body"]["i"] == drew - 1 and refused["body"]["prev"] == t["log"][drew]["h"]
    r = verdict(t, evidence)
    assert r.failure is not None and r.failure.check == "evidence", (
        "the clock moved for the seat 10 s after the house refused its discard (D35 owes a whole turn); the ack "
        "naming the record before the seat's own draw was taken as a justified (stale) refusal"
    )
