"""Audit (h67, a dishonest house): a leave refused "busy" so that the leaver is counted.

The attack.  A heads-up hand.  While its opponent (the house's friend) is on turn, the
victim, holding a hand that counts well over 40, leaves the table (D15: 40 points "at
any time"; A.3: a leave is legal for a playing seat at any time, on turn or not).
The house — which sees every card, and sees the friend about to declare — refuses the
leave for a reason of its own (``busy``: the victim keeps the signed ack) and takes the
friend's valid declare 0.6 s later as the next record.  The victim is counted at its
cards' value instead of paying the 40 of a leave.

What the player loses: its count minus 40 points, × point value (here ≥ 1 point; up to
90 points a hand: a count of 130 instead of 40).

The rule it breaks: §9 ("a leave is recorded right where it was signed, so the server
cannot choose when it takes effect"), D15, D35 (the refusal was the house's: the move
was legal, and the house signed that it judged it at the last record).  Why nothing
catches it: §15 rule 7 owes an unjustified refusal only its window — no ``timeout``
of the seat before ``arrived + turn_seconds`` (``owed_window``) — and a seat off turn
is never timed out: the hand ending by another seat's move is not a charge the rule
looks at.  The log shows the house refusing the victim at ``arrived`` and taking the
friend's move at a later ``t`` (the table could store then), and that the victim's
count exceeds 40: the verifier has what it needs.  (A silent house — no ack — is
§16's "server can stay silent"; this one signed its refusal.)

Fixed (2026-12-07, later): §15 rule 7 — after a refusal of a leave the rules do not
justify, the first record the house made from the leave's arrival on is that seat's
own move, or is dated a whole turn later (``verifier.evidence.owed_window``); the
server no longer refuses a leave whose write failed: it takes it again, first, after
the reload (``TableCore._take_again``).  The audit's suggestion was: D35 for a
leave — a leave refused for the house's reason (not justified by rule 7) must be
recorded before any other seat's move is accepted after the
refusal's ``arrived`` (else ``evidence`` fails), or the hand settles the seat at no more
than the leave's 40; the clients re-send a refused leave at once."""

from __future__ import annotations

from typing import Any

from verifier.hand import Leave, TableRules
from verifier.transcript import verify_transcript
from verifier.vectors import TEST_SIGNER, winning_declares

KEY = TEST_SIGNER.public_bytes
TABLE = TableRules(seats=4, point_value=10, commission_bps=500)
SEATS = [1, 3]


def refused_leave() -> tuple[dict[str, Any], int, list[dict[str, Any]]]:
    """The first vector hand in which a seat declares validly while its opponent's count
    is above 40: the opponent's leave, sent just before, is refused ``busy``."""
    for hand, declare, result in winning_declares("audit-refused-leave", TABLE, SEATS):
        victim = next(s for s in SEATS if s != declare.seat)
        if result.settlement.points[victim] > 40:
            hand.refuse(Leave(victim), "busy", at=hand.now + 100)
            hand.act(declare)  # 0.6 s after the refusal: the table stores moves again
            return hand.rec.transcript(), victim, hand.evidence[victim]
    raise RuntimeError("no vector hand in which the loser counts more than 40")


def test_a_leave_the_house_refused_before_taking_the_next_move_is_caught() -> None:
    t, victim, evidence = refused_leave()
    refused = next(e["body"] for e in evidence if e["purpose"] == "ack" and e["body"]["outcome"] == "refused")
    assert refused["move"] == {"kind": "leave", "seat": victim} and refused["code"] == "busy"
    declared = t["log"][refused["i"] + 1]
    assert declared["action"]["kind"] == "declare" and declared["t"] > refused["arrived"]
    points = t["result"]["points"][str(victim)]
    assert points > 40  # counted, where the leave would have cost 40
    report = verify_transcript(t, KEY, evidence)
    assert not report.ok, f"seat {victim}'s leave was refused 'busy', then the hand ended: it pays {points}, not 40"
    assert report.failure is not None and report.failure.check == "evidence"
    assert (
        report.failure.record == refused["i"] + 1
        and report.failure.found == f"declare of seat {declared['action']['seat']}"
    )


def test_a_refused_leave_followed_by_the_leavers_own_move_or_a_whole_turn_later_passes() -> None:
    """Controls: the same refusal, then the leaver's own leave is recorded next (the
    honest server takes a leave whose write failed first, after its reload); or the
    other seat's declare comes only once the whole turn the refusal owed has passed."""
    for name, later in (("audit-refused-leave-taken", False), ("audit-refused-leave-late", True)):
        for hand, declare, result in winning_declares(name, TABLE, SEATS):
            victim = next(s for s in SEATS if s != declare.seat)
            if result.settlement.points[victim] <= 40:
                continue
            hand.refuse(Leave(victim), "busy", at=hand.now + 100)
            if later:
                hand.act(declare, at=hand.now + 1000 * TABLE.turn_seconds)
            else:
                hand.act(Leave(victim))  # heads-up: the leave ends the hand
            report = verify_transcript(hand.rec.transcript(), KEY, hand.evidence[victim])
            assert report.ok, (name, report.failure)
            break
        else:
            raise RuntimeError("no vector hand in which the loser counts more than 40")
