"""The evidence a player keeps (docs/fairness.md §15, issue 16), rule by rule: acks of
accepted and refused moves, the header the client accepted, the player's own key,
what the house owed a seat after a refusal (RULES.md D35), items after a void, and
the counts.  Hands are played through the recorder (verifier.vectors.VectorHand) as
a server plays them; tampered items are re-signed with the server's test key."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from verifier.chain import reveal_move
from verifier.fairness import PROTOCOL_V2, player_commit
from verifier.hand import DrawClosed, TableRules, TimeOut
from verifier.transcript import Report, verify_transcript
from verifier.vectors import SEED_WINDOW_MS, TEST_SIGNER, VectorHand, greedy

KEY = TEST_SIGNER.public_bytes


def verdict(t: Any, evidence: Any) -> Report:
    return verify_transcript(t, KEY, evidence, debug=True)


def resign(item: dict[str, Any], **changes: Any) -> dict[str, Any]:
    body = {**item["body"], **changes}
    return {"purpose": item["purpose"], "body": body, "sig": TEST_SIGNER.sign(item["purpose"], body, PROTOCOL_V2)}


def played(name: str = "ev", seats: tuple[int, ...] = (0, 1)) -> VectorHand:
    hand = VectorHand(name, 0, TableRules(seats=4, turn_seconds=30), list(seats), seats[-1])
    hand.seed_phases()
    return hand


def finish(hand: VectorHand) -> dict[str, Any]:
    hand.play(greedy)
    assert hand.rec.ended
    return copy.deepcopy(hand.rec.transcript())


def acks(items: list[dict[str, Any]], kind: str | None = None) -> list[int]:
    return [
        n
        for n, it in enumerate(items)
        if it["purpose"] == "ack" and (kind is None or it["body"]["move"]["kind"] == kind)
    ]


def test_an_honest_client_keeps_one_ack_per_move_and_it_all_agrees() -> None:
    hand = played()
    t = finish(hand)
    for seat, items in hand.evidence.items():
        moves = [r for r in t["log"] if r["type"] == "action" and r["psig"] and r["action"]["seat"] == seat]
        assert len(acks(items)) == 2 + len(moves)  # commit, reveal, every action
        r = verdict(t, items)
        assert r.ok, r.failure
        assert r.summary["evidence"]["checked"] == len(items)


def test_an_ack_whose_move_arrived_before_its_record_fails() -> None:
    hand = played()
    t = finish(hand)
    items = hand.evidence[0]
    n = acks(items, "reveal")[0]
    items[n] = resign(items[n], arrived=t["log"][1]["t"] - 1)
    r = verdict(t, items)
    assert r.failure is not None and r.failure.check == "evidence" and r.failure.record == 1
    assert f"evidence item {n} (ack)" in r.failure.message


def test_an_accepted_commitment_or_seed_the_log_does_not_hold_fails() -> None:
    hand = played()
    t = finish(hand)
    for kind, record, field in (("commit", 1, "commit"), ("reveal", 2, "seed")):
        items = copy.deepcopy(hand.evidence[1])
        n = acks(items, kind)[0]
        items[n] = resign(items[n], move={**items[n]["body"]["move"], field: "ee" * 32})
        r = verdict(t, items)
        assert r.failure is not None and r.failure.check == "evidence" and r.failure.record == record, r.failure


def test_a_refused_reveal_then_withheld_before_the_owed_window_fails_and_after_it_passes() -> None:
    """D35 for the reveal window: the table refused the seed for its own reason."""
    for late in (True, False):
        hand = VectorHand("ev-reveal", 0, TableRules(seats=4), [0, 1, 2], 2)
        rec = hand.rec
        rec.open(hand.now)
        hand.accept_header()
        commits = {}
        for s in (0, 1, 2):
            c = player_commit(s, hand.seeds[s])
            commits[s] = (c, hand.sign(s, rec.head, {"kind": "commit", "seat": s, "commit": c.hex()}))
        rec.commitments(commits, hand.now + 1000)
        move = reveal_move(2, hand.seeds[2])
        sig = hand.sign(2, rec.head, move)
        arrived = rec.records[1]["t"] + SEED_WINDOW_MS - 400
        ack = rec.ack(2, move, rec.head, sig, arrived=arrived, code="unavailable")
        seeds = {s: (hand.seeds[s], hand.sign(s, rec.head, reveal_move(s, hand.seeds[s]))) for s in (0, 1)}
        closes = rec.records[1]["t"] + SEED_WINDOW_MS if late else arrived + SEED_WINDOW_MS
        rec.reveal(seeds, closes)
        hand.now = closes + 5
        rec.deal(hand.now)
        hand.turn_began = hand.now
        t = finish(hand)
        r = verdict(t, [ack])
        if late:
            assert r.failure is not None and r.failure.check == "evidence" and r.failure.record == 2
            assert "D35" in r.failure.message
        else:
            assert r.ok, r.failure


def test_a_refusal_the_rules_justify_owes_nothing() -> None:
    """A stale prev, a move out of turn, a commit after the commitments: the clock may
    move for the seat at its usual time."""
    hand = played("ev-just")
    state = hand.rec.state
    assert state is not None
    seat, other = state.turn, 1 - state.turn
    head = hand.rec.head
    move = {"kind": "draw_closed", "seat": seat}
    stale = hand.rec.records[1]["h"]
    items = [
        hand.rec.ack(seat, move, stale, hand.sign(seat, stale, move), arrived=hand.now, code="x"),
        hand.rec.ack(
            other,
            {**move, "seat": other},
            head,
            hand.sign(other, head, {**move, "seat": other}),
            arrived=hand.now,
            code="not_your_turn",
        ),
    ]
    commit = {"kind": "commit", "seat": seat, "commit": "ab" * 32}
    items.append(
        hand.rec.ack(
            seat,
            commit,
            hand.rec.records[0]["h"],
            hand.sign(seat, hand.rec.records[0]["h"], commit),
            arrived=hand.now,
            code="wrong_phase",
        )
    )
    # a timeout is the server's own move (§9): a player's signed one is refused with reason,
    # whatever the code says
    timeout = {"kind": "timeout", "seat": seat}
    items.append(
        hand.rec.ack(seat, timeout, head, hand.sign(seat, head, timeout), arrived=hand.now + 1000, code="unavailable")
    )  # 1 s into the turn: were it the house's refusal, the timeout at its end would be 29 s early
    hand.act(TimeOut(seat))  # at the turn's end, no later
    t = finish(hand)
    r = verdict(t, items)
    assert r.ok, r.failure
    assert r.summary["evidence"] == {"items": 4, "checked": 4, "other_hands": 0, "after_void": 0}


@pytest.mark.parametrize("misquote", ["another seat's signature", "a bit flipped", "the real one over a stale prev"])
def test_a_refusal_that_misquotes_the_move_fails(misquote: str) -> None:
    """Found by an audit: a refusal quoting a signature that is not the seat's over the
    prev it names passed as justified, so the house's own refusal ("busy") owed the
    seat nothing and its clock dropped the seat.  No table judges such a move (§15):
    the ack misquotes the move the player sent, and evidence fails."""
    hand = played("ev-misquote")
    state = hand.rec.state
    assert state is not None
    seat, other = state.turn, 1 - state.turn
    head, stale = hand.rec.head, hand.rec.records[1]["h"]
    move = {"kind": "draw_closed", "seat": seat}
    real = hand.sign(seat, head, move)
    prev, sig = {
        "another seat's signature": (head, hand.sign(other, head, move)),
        "a bit flipped": (head, real[:-2] + format(int(real[-2:], 16) ^ 1, "02x")),
        "the real one over a stale prev": (stale, real),
    }[misquote]
    items = [hand.rec.ack(seat, move, prev, sig, arrived=hand.now + 1000, code="busy")]
    hand.act(TimeOut(seat))
    r = verdict(finish(hand), items)
    assert not r.ok and r.failure is not None and r.failure.check == "evidence"
    assert "misquotes it" in r.failure.message, r.failure.message


def test_a_refusal_of_a_move_signed_over_no_record_fails() -> None:
    """A table judges only a move signed over a record of its log (§15): an ack
    quoting a prev that is no record's link up to the one it names fails — before,
    a lying player could have one signed over the guessed link of the next record
    (the clock's move after its own draw) and "prove" the house named a false
    record."""
    hand = played("ev-noprev")
    state = hand.rec.state
    assert state is not None
    seat = state.turn
    move = {"kind": "draw_closed", "seat": seat}
    prev = "77" * 32
    items = [hand.rec.ack(seat, move, prev, hand.sign(seat, prev, move), arrived=hand.now, code="stale_head")]
    r = verdict(finish(hand), items)
    assert not r.ok and r.failure is not None and r.failure.check == "evidence"
    assert "no record of the log" in r.failure.message, r.failure.message


def test_a_house_refusal_of_a_legal_move_owes_the_whole_turn_from_its_arrival() -> None:
    hand = played("ev-owed")
    state = hand.rec.state
    assert state is not None
    seat = state.turn
    ack = hand.refuse(DrawClosed(seat), "busy", at=hand.turn_began + 29_000)
    record = hand.act(TimeOut(seat))  # 30 s after the turn began: 1 s after the refusal
    t = finish(hand)
    r = verdict(t, [ack])
    assert r.failure is not None and r.failure.check == "evidence" and r.failure.record == record["i"]
    assert r.failure.expected == f">= {ack['body']['arrived'] + 30_000}"


def test_items_for_records_a_void_came_before_are_counted_not_failed() -> None:
    hand = VectorHand("ev-void", 0, TableRules(seats=4), [0, 1], 1)
    rec = hand.rec
    rec.open(hand.now)
    hand.accept_header()
    c = player_commit(0, hand.seeds[0])
    move = {"kind": "commit", "seat": 0, "commit": c.hex()}
    sig = hand.sign(0, rec.head, move)
    rec.check_commit(0, c, sig)
    accepted = rec.ack(0, move, rec.head, sig, arrived=hand.now + 10)
    rec.void("voided by the operator (D33)", hand.now + 20)
    items = [*hand.evidence[0], accepted]
    r = verdict(rec.transcript(), items)
    assert r.ok, r.failure
    assert r.summary["evidence"] == {"items": len(items), "checked": 2, "other_hands": 0, "after_void": 1}
    # §15 rule 8: evidence that applies to nothing is skipped, never passed
    r = verdict(rec.transcript(), [accepted])
    assert r.ok, r.failure
    assert "evidence" in r.checks_skipped and "evidence" not in r.checks_passed
    assert "nothing could be checked" in r.skip_reasons["evidence"]
    assert r.summary["evidence"] == {"items": 1, "checked": 0, "other_hands": 0, "after_void": 1}
    # but a head of a record past the void: the server signed a record its transcript cut off
    head = {"purpose": "head", "body": {"table_id": rec.table_id, "hand_no": rec.hand_no, "i": 5, "h": "55" * 32}}
    head["sig"] = TEST_SIGNER.sign("head", head["body"], PROTOCOL_V2)
    r = verdict(rec.transcript(), [*items, head])
    assert not r.ok and r.failure is not None and r.failure.check == "evidence"
    assert "cut off records it had made" in r.failure.message, r.failure.message


def test_a_player_item_must_be_signed_by_its_own_key() -> None:
    hand = played("ev-player")
    t = finish(hand)
    items = [it for it in hand.evidence[0] if it["purpose"] == "player"]
    assert verdict(t, items).ok
    forged = resign(items[0])  # the server's key, not the player's
    r = verdict(t, [forged])
    assert r.failure is not None and "not signed by the player's own key" in r.failure.message


def test_malformed_acks_fail_as_items() -> None:
    hand = played("ev-shape")
    t = finish(hand)
    ack = hand.evidence[0][acks(hand.evidence[0])[-1]]
    bad = [
        resign(ack, code="unavailable"),  # accepted with a code
        resign(ack, outcome="refused", code=None),  # refused without one
        resign(ack, move={**ack["body"]["move"], "seat": 1}),  # another seat's move
        resign(ack, move={"kind": "commit", "seat": 0}),  # a commit without its commitment
        resign(ack, arrived=-1),
    ]
    for item in bad:
        r = verdict(t, [item])
        assert r.failure is not None and r.failure.check == "evidence", item
        assert "is not a signed item of §15" in r.failure.message
