"""Adversarial vectors of voids (``verifier/vectors/adversarial/*.json``, made with
the others by verifier/vectors_adversarial.py): a void that replaces the records a
player holds, a void before the commitments over another record 0, and what the audits
of 2026-12-07 found (docs/fairness.md §15 rules 4, 7 and 8, D33)."""

from __future__ import annotations

import copy

from verifier import vectors
from verifier.chain import player_body, receipt_body, reveal_move
from verifier.fairness import PROTOCOL_V2, sha256
from verifier.hand import DrawClosed, Leave, TableRules, TimeOut, action_to_json
from verifier.vectors import TEST_SIGNER, VectorHand
from verifier.vectors_adversarial import TWO, Case, _first_drawer, failing, forge, fresh, passing, signed_item


def seeds_accepted_then_voided(name: str) -> VectorHand:
    """Two seats' commitments recorded and both seeds accepted (each seat holds its
    acks), then the hand voided before the reveals were recorded (D33)."""
    hand = VectorHand(name, 0, TWO, [1, 3], 3)
    rec = hand.rec
    hand._heads(rec.open(hand.now))
    hand.accept_header()
    hand._heads(rec.commitments(hand.commit_all({3: hand.now + 40, 1: hand.now + 80}), hand.now + 1_500))
    hand.reveal_all({3: hand.now + 1_540, 1: hand.now + 1_580})
    rec.void("the key that seals the server seed is gone: the hand cannot resume (D33)", hand.now + 1_600)
    return hand


def audit_2026_12_07(base: VectorHand) -> list[Case]:
    """Found by the audits of 2026-12-07 (a dishonest house, a lying player): what
    passed before and fails now (§15 rules 4, 7 and 8, D33)."""
    out: list[Case] = []
    # A won hand re-published as void, cut before the winning declare; the winner holds
    # no head of the record the void replaces (its socket dropped as it was pushed).
    honest = base.rec.transcript()
    winner = honest["result"]["winner"]
    cut = next(n for n in range(10, len(honest["log"]) - 1) if honest["log"][n]["action"]["seat"] != winner)
    t = copy.deepcopy(honest)
    void = {"type": "void", "reason": "a stored record does not reproduce (D33)", "i": cut}
    t["log"] = [*t["log"][:cut], {**void, "t": t["log"][cut - 1]["t"] + 1}]
    t["result"] = None
    held = [it for it in base.evidence[winner] if not (it["purpose"] == "head" and it["body"]["i"] == cut)]
    out.append(
        Case(
            "void-cuts-a-won-hand",
            f"seat {winner} won by a valid declare; the house re-published the hand as void at record {cut}, before "
            "it, and the winner holds heads and the declare's ack for records past the void: the house cut off "
            "records it had signed (§15.8, D33)",
            failing("evidence", cut),
            forge(t),
            held,
        )
    )
    # Refusals that misquote the move: the house's own refusal (busy) passed off as
    # justified, then the clock drops the seat (max_missed_turns 1).
    rules = TableRules(seats=4, point_value=10, commission_bps=500, turn_seconds=30, max_missed_turns=1)
    for name, what in (
        ("refused-misquoting-the-signature-then-dropped", "the player's signature with a bit flipped"),
        ("refused-misquoting-prev-then-dropped", "the player's real signature over an older record's link"),
    ):
        hand = VectorHand("adv-" + name, 0, rules, [1, 3], 3)
        hand.seed_phases()
        rec, seat = hand.rec, _first_drawer(hand)
        move = action_to_json(DrawClosed(seat))
        real = hand.sign(seat, rec.head, move)
        i = len(rec.records) - 1
        if "signature" in name:
            prev, sig = rec.head, real[:-2] + format(int(real[-2:], 16) ^ 1, "02x")
        else:
            prev, sig = rec.records[2]["h"], real
        for at in (5_000, 12_000, 20_000):
            hand.evidence[seat].append(rec.ack(seat, move, prev, sig, arrived=hand.turn_began + at, code="busy"))
        hand.act(TimeOut(seat), at=hand.turn_began + 30_000)
        out.append(
            Case(
                name,
                f"seat {seat}'s draw, sent three times in its turn, refused for the house's reason (busy) with acks "
                f"quoting {what}; then the clock dropped the seat at the turn's end: no table judges such a move, "
                "so the acks misquote it (§15.7, D35)",
                failing("evidence", i),
                rec.transcript(),
                hand.evidence[seat],
            )
        )
    # Every seed accepted (the house knows the deck), then a void before the reveals are
    # recorded that hides the server seed: a re-deal of the house's choosing.
    hand = seeds_accepted_then_voided("adv-void-after-seeds")
    rec = hand.rec
    out.append(
        Case(
            "void-after-seeds-accepted-hides-the-seed",
            "both seats' seeds accepted (each holds the ack), then the hand voided before the reveals were "
            "recorded, its server seed not revealed: the house could know the deck and void it (§15.8, D33)",
            failing("evidence", 2),
            rec.transcript(seed_revealed=False),
            hand.evidence[1],
        )
    )
    # The same, the seeds refused for the house's own reason (busy) instead: it holds them all the same.
    hand = VectorHand("adv-void-after-seeds-refused", 0, TWO, [1, 3], 3)
    rec = hand.rec
    hand._heads(rec.open(hand.now))
    hand.accept_header()
    hand._heads(rec.commitments(hand.commit_all({3: hand.now + 40, 1: hand.now + 80}), hand.now + 1_500))
    h1 = str(rec.records[1]["h"])
    for seat, at in ((3, 1_540), (1, 1_580)):
        move = reveal_move(seat, hand.seeds[seat])
        ack = rec.ack(seat, move, h1, hand.sign(seat, h1, move), arrived=hand.now + at, code="busy")
        hand.evidence[seat].append(ack)
    rec.void("the key that seals the server seed is gone: the hand cannot resume (D33)", hand.now + 1_600)
    out.append(
        Case(
            "void-after-seeds-refused-hides-the-seed",
            "both seats' reveals refused for the house's reason (busy) — the house holds the seeds all the same — "
            "then the hand voided before the reveals were recorded, its server seed not revealed (§15.8, D33)",
            failing("evidence", 2),
            rec.transcript(seed_revealed=False),
            hand.evidence[1],
        )
    )
    # The seeds accepted after record 1 was pushed, then the hand re-published with a
    # void in record 1's place (seed revealed): the seat's reveal ack names record 1's
    # link, and the void at 1 has another (§15 rule 7's first check, not rule 8).
    hand = seeds_accepted_then_voided("adv-void-replaces-the-commitments")
    rec = hand.rec
    t = copy.deepcopy(rec.transcript())
    void = {"type": "void", "reason": "a stored record does not reproduce (D33)", "i": 1, "t": hand.now + 1_600}
    t["log"] = [t["log"][0], void]
    held = [it for it in hand.evidence[1] if not (it["purpose"] == "head" and it["body"]["i"] == 1)]
    out.append(
        Case(
            "void-replaces-the-commitments-after-the-reveals",
            "both seats' seeds accepted after record 1 (the commitments) was pushed, then the hand re-published "
            "with a void in record 1's place, its server seed revealed; seat 1 holds no head of record 1 (its "
            "socket dropped as it was pushed) but the ack of its reveal, which names record 1's link: the void "
            "at 1 has another, so the house cut off a record it had made (§15.7, §15.8, D33)",
            failing("evidence", 1),
            forge(t),
            held,
        )
    )
    # Anyone can sign a player item for any key and seat: it is a claim, never proof.
    t3 = fresh(base)
    stranger = vectors.player_signer("adv-stranger", 3)
    body = player_body(base.rec.table_id, base.rec.hand_no, 3, stranger.public_bytes)
    out.append(
        Case(
            "player-item-forged-claims-substitution",
            "a player item signed by a fresh key for seat 3 of an honest hand: before, it failed evidence as "
            "proof of key substitution; it is only a claim (§15.4: warning key_claim)",
            passing("key_claim"),
            t3,
            [{"purpose": "player", "body": body, "sig": stranger.sign("player", body, PROTOCOL_V2)}],
        )
    )
    return out


def void_before_the_commitments_with_another_record_0() -> list[Case]:
    """Before rule 8 sets an item aside as after the void, what it says of the records
    the log has is checked (§15 rule 8, said plainly 2026-12-07): an accepted commit's
    ack and a commit receipt name record 0's link as their ``prev``, and a void at
    record 1 does not excuse one that names another header's (rummy-verify failed the
    ack and passed the receipt; the browser page passed both), nor an accepted ack for
    a seat the header does not list."""
    hand = VectorHand("adv-void-another-record-0", 0, TWO, [1, 3], 3)
    rec = hand.rec
    hand._heads(rec.open(hand.now))
    hand.accept_header()
    commits = hand.commit_all({3: hand.now + 40, 1: hand.now + 80})
    rec.void("the key that seals the server seed is gone: the hand cannot resume (D33)", hand.now + 1_600)
    t = rec.transcript()
    other = sha256(b"another header's record 0").hex()
    ev = hand.evidence[1]
    ack = next(it for it in ev if it["purpose"] == "ack")
    shown = signed_item(TEST_SIGNER, "ack", {**ack["body"], "prev": other})
    receipt = receipt_body(t["table_id"], t["hand_no"], 1, "commit", commits[1][0], other)
    unlisted = {**ack["body"], "seat": 2, "move": {**ack["body"]["move"], "seat": 2}}
    return [
        Case(
            "void-before-the-commitments-ack-over-another-record-0",
            "seat 1's commitment accepted with an ack signed over another record 0 (another header) than the "
            "transcript's, then the hand voided before the commitments were recorded: the ack's prev is checked "
            "against record 0, which the log has, before rule 8 sets the ack aside (§15.7, §15.8)",
            failing("evidence", 0),
            t,
            [*(it for it in ev if it is not ack), shown],
        ),
        Case(
            "void-before-the-commitments-receipt-over-another-record-0",
            "seat 1's commit receipt (the amendments' predecessor) signed over another record 0 than the "
            "transcript's, then the hand voided before the commitments were recorded: the receipt's prev is "
            "checked against record 0 before rule 8 sets it aside (§15.6, §15.8)",
            failing("evidence", 0),
            t,
            [*ev, signed_item(TEST_SIGNER, "receipt", receipt)],
        ),
        Case(
            "void-before-the-commitments-ack-for-a-seat-not-in-the-header",
            "an accepted commitment's ack for seat 2, which the header does not list, then the hand voided before "
            "the commitments were recorded: the ack's seat is checked against the header before rule 8 sets it "
            "aside (§15.7, §15.8; the browser page failed it, rummy-verify passed it)",
            failing("evidence", 0),
            t,
            [*ev, signed_item(TEST_SIGNER, "ack", unlisted)],
        ),
    ]


def void_after_a_refused_declare() -> list[Case]:
    """A winning declare refused for the house's reason (``busy``) and the hand voided
    at the next record: the house took the win away by a void while it owed the seat
    its move (D33, D35; found by the audit of 2026-12-07).  And the same void once the
    whole turn it owed has passed: a stuck hand the operator may void."""
    rules = TableRules(seats=4, point_value=10, commission_bps=500)
    out: list[Case] = []
    for name, after, expect, what in (
        (
            "void-after-a-refused-winning-declare",
            1,
            None,
            "is refused 'busy' and the hand voided 1 ms later, with the seat's ack of the refusal: the house voided "
            "the hand while it owed the seat its move (§15 rule 7, D33, D35)",
        ),
        (
            "void-a-turn-after-a-refused-declare",
            1000 * rules.turn_seconds,
            passing("void"),
            "is refused 'busy' and the hand voided a whole turn (30 s) later, with the seat's ack of the refusal: the "
            "window the refusal owed has passed, and a stuck hand may be voided (§15 rule 7, D33, D35)",
        ),
    ):
        hand, declare, _result = next(vectors.winning_declares(f"adv-{name}", rules, [1, 3]))
        hand.refuse(declare, "busy", at=hand.now + 700)
        refused_at = hand.now
        hand.rec.void("voided by the operator: a stuck hand (D33)", refused_at + after)
        void_i = len(hand.rec.records) - 1
        out.append(
            Case(
                name,
                f"seat {declare.seat}'s declare, which would win the hand, {what}",
                failing("evidence", void_i) if expect is None else expect,
                hand.rec.transcript(),
                hand.evidence[declare.seat],
            )
        )
    return out


def declare_after_a_refused_leave() -> list[Case]:
    """A leave refused for the house's reason (``busy``) while the other seat is on turn,
    then that seat's winning declare taken first: the leaver is counted at its cards
    instead of the leave's 40 (D15, D35; found by the audit of 2026-12-07).  And the
    same refusal followed by the leaver's own leave: what an honest table records."""
    rules = TableRules(seats=4, point_value=10, commission_bps=500)
    out: list[Case] = []
    for name, honest, before in (
        ("declare-taken-before-a-refused-leave", False, False),
        ("declare-dated-before-a-refused-leave", False, True),
        ("refused-leave-then-taken", True, False),
    ):
        hand, declare, result = next(
            (h, d, r)
            for h, d, r in vectors.winning_declares(f"adv-{name}", rules, [1, 3])
            if r.settlement.points[3 if d.seat == 1 else 1] > 40  # the loser counts more than a leave's 40
        )
        victim = 3 if declare.seat == 1 else 1
        ack = hand.refuse(Leave(victim), "busy", at=hand.now + 100)
        refused_i = len(hand.rec.records) - 1
        if honest:
            hand.act(Leave(victim))  # heads-up: the leave ends the hand, the other seat wins
            expect, what = passing(), "then its leave recorded next, as an honest table does"
        elif before:  # the audit h80: dated 1 ms before the leave arrived, it was set aside
            hand.act(declare, at=ack["body"]["arrived"] - 1)
            expect = failing("evidence", refused_i + 1)
            what = (
                f"then seat {declare.seat}'s winning declare recorded next, dated 1 ms before the leave arrived: "
                f"record {refused_i} was the last when the leave was judged, so the declare overtook it, and seat "
                f"{victim} is counted {result.settlement.points[victim]} points instead of the leave's 40"
            )
        else:
            hand.act(declare)
            expect = failing("evidence", refused_i + 1)
            what = (
                f"then seat {declare.seat}'s winning declare taken first, 0.6 s later: seat {victim} is counted "
                f"{result.settlement.points[victim]} points instead of the leave's 40"
            )
        out.append(
            Case(
                name,
                f"seat {victim}'s leave, sent while seat {declare.seat} is on turn, is refused 'busy' (the seat keeps "
                f"the ack), {what} (§15 rule 7, D15, D35)",
                expect,
                hand.rec.transcript(),
                hand.evidence[victim],
            )
        )
    return out
