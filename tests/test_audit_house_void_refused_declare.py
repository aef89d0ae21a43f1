"""Audit (h67, a dishonest house): a won hand voided by refusing the winning declare.

The attack.  A heads-up hand (the house's friend and the victim).  The victim, on its
turn, declares validly: the declare would end the hand and make it the winner (D11,
D12).  The house refuses the move for a reason of its own (``busy``, an ack the victim
keeps) and, instead of taking it, voids the hand as "stuck" (D33: "The operator may
also void a stuck hand"), right after the last record the victim holds a head of.
Nothing is cut off (no head or ack past the void), the server seed is published, and
the refusal's ack, not justified by the rules, owed the victim only its window
(D35: no clock move before it ran out), which no clock move breaks.

What the player loses: the pot of a hand it had won (here the friend's count × the
point value, less commission); its friend pays nothing.  The house can do this every
time its friend is about to lose.

The rule it breaks: D33 (a void is for a hand that cannot resume, "never" to escape
an outcome: "a house that wanted a won hand void would cut it so" — §15 rule 8 fails
the cut; this void cuts nothing), D35 (the refusal was the house's: the move was legal
and the table could judge it, it signed so), §16 ("The server cannot censor a move it
acknowledged").  Why nothing catches it: §15 rule 7 judges an unjustified refusal
only by the window it owes (``owed_window``: no ``timeout`` of the seat before
``arrived + turn_seconds``); rule 8 fails a void only for records it cut or a seed it
hid; the void itself is left to the room audit (§16, §17), which can only weigh many
hands.  Yet the victim holds the house's own signature that a move ending the hand in
its favour was made, legal, at the last record, and refused for no reason of the rules.

Fixed (2026-12-07, later): RULES.md D33 and D35 — the house may not void a hand
while it owes a seat its move; §15 rule 7 fails a void dated before the whole turn
the refusal owed (``verifier.evidence.owed_window``), and the server refuses the
operator's void until then (``void_owes_move``).  The audit's suggestion was:
§15 rule 7/8 — an unjustified refusal (the house's) of a move that
would end the hand (a valid declare, or any move after which the replay ends the
hand) whose log then ends in a void at the next record fails ``evidence``: the house
owed the seat its move (D35) and voided instead; more generally a void may not
follow a house refusal of a legal move within the window that refusal owed (the seat
had the right to make that move again)."""

from __future__ import annotations

from typing import Any

from verifier.hand import TableRules
from verifier.transcript import verify_transcript
from verifier.vectors import TEST_SIGNER, winning_declares

KEY = TEST_SIGNER.public_bytes
TABLE = TableRules(seats=4, point_value=10, commission_bps=500)
SEATS = [1, 3]


def voided_win(after: int = 1) -> tuple[dict[str, Any], int, list[dict[str, Any]]]:
    """The first vector hand in which a seat declares validly: that declare is refused
    ``busy`` and the hand voided at the next record, ``after`` ms after the refusal.
    The transcript, the winner that was not, and its evidence."""
    for hand, declare, _result in winning_declares("audit-void-declare", TABLE, SEATS):
        hand.refuse(declare, "busy", at=hand.now + 700)
        hand.rec.void("the operator voided a stuck hand", hand.now + after)
        return hand.rec.transcript(), declare.seat, hand.evidence[declare.seat]
    raise RuntimeError("no vector hand with a valid declare")


def test_a_hand_voided_after_the_house_refused_its_winning_declare_is_caught() -> None:
    t, winner, evidence = voided_win()
    assert t["log"][-1]["type"] == "void" and t["result"] is None and t["server_seed"] != ""
    refused = [e["body"] for e in evidence if e["purpose"] == "ack" and e["body"]["outcome"] == "refused"]
    assert [(b["move"]["kind"], b["code"], b["i"]) for b in refused] == [("declare", "busy", len(t["log"]) - 2)]
    report = verify_transcript(t, KEY, evidence)
    assert not report.ok, f"seat {winner}'s winning declare was refused 'busy' and the hand voided; it verifies"
    assert report.failure is not None and report.failure.check == "evidence"
    assert report.failure.record == len(t["log"]) - 1 and "voided the hand" in report.failure.message
    assert report.failure.found == t["log"][-1]["t"]


def test_a_void_once_the_owed_turn_has_passed_is_not_the_refusals_fault() -> None:
    """Control: the same refusal, and the hand voided a whole turn after it (D35 owed
    the seat 30 s): the house may void a stuck hand then (D33)."""
    turn_ms = 1000 * TABLE.turn_seconds
    t, _winner, evidence = voided_win(after=turn_ms)
    report = verify_transcript(t, KEY, evidence)
    assert report.ok, report.failure
    early, _, evidence = voided_win(after=turn_ms - 1)
    report = verify_transcript(early, KEY, evidence)
    assert report.failure is not None and report.failure.expected == f">= {early['log'][-1]['t'] + 1}"
