"""Audit (h80, a dishonest house, round 3): what the house can still do with its own key.

Two findings, each an xfail test (strict) with its control:

1. A refused leave overtaken by a move the house dates 1 ms before the leave arrived
   (the h67 fix, ``leave_not_overtaken``, set such a record aside).  Fixed the same
   night: record ``i + 1`` is checked whatever its ``t`` (docs/fairness.md §15 rule 7).
2. The button moved by a phantom hand: a void hand of the table, dealt to a seat list
   of the house's choosing, that the victim is never shown (RULES.md D3: "a void hand
   moves the button like any other").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from verifier.batch import verify_folder
from verifier.hand import Leave, TableRules, dealer_after
from verifier.transcript import verify_transcript
from verifier.vectors import TEST_SIGNER, VectorHand, greedy, play_hand, winning_declares

KEY = TEST_SIGNER.public_bytes
TABLE = TableRules(seats=4, point_value=10, commission_bps=500)
SEATS = [1, 3]


# --------------------------------------------------------------------------- 1 the overtaken leave
def overtaken_leave(before: int) -> tuple[dict[str, Any], int, int, list[dict[str, Any]], list[dict[str, Any]]]:
    """The h67 hand: the victim's leave, sent while the friend (on turn, holding a
    winning 14) may declare, is refused ``busy``; the friend's declare is then recorded
    dated ``before`` ms before the leave's ``arrived`` (its own ack says the same).
    The transcript, the victim, its points, its evidence, and the friend's."""
    for hand, declare, result in winning_declares("audit-r3-leave", TABLE, SEATS):
        victim = next(s for s in SEATS if s != declare.seat)
        if result.settlement.points[victim] <= 40:
            continue
        ack = hand.refuse(Leave(victim), "busy", at=hand.now + 2_000)
        arrived = ack["body"]["arrived"]
        hand.act(declare, at=arrived - before)
        t = hand.rec.transcript()
        return t, victim, t["result"]["points"][str(victim)], hand.evidence[victim], hand.evidence[declare.seat]
    raise RuntimeError("no vector hand in which the loser counts more than 40")


def test_a_refused_leave_overtaken_by_a_later_move_is_caught() -> None:
    """Control: the h67 attack as it was (the declare dated 0.6 s after the refusal)."""
    t, _victim, points, evidence, _ = overtaken_leave(before=-600)
    assert points > 40
    report = verify_transcript(t, KEY, evidence)
    assert report.failure is not None and report.failure.check == "evidence", report.failure


def test_a_refused_leave_overtaken_by_a_move_dated_just_before_it_is_caught() -> None:
    """The attack.  Heads-up, the friend on turn has drawn and holds a winning 14 (the
    house sees every card).  The victim, counting well over 40, leaves (D15: 40, at
    any time).  The house refuses the leave ``busy`` at record i (the victim keeps the
    ack, arrived X) and records the friend's valid declare as record i + 1 dated
    X − 1 — the friend's move carries no time, and its ack (arrived X − 1, within the
    5 s slack an honest friend's client allows on receipt, §15 "On receipt") agrees.
    The victim is counted at its cards.

    What the player loses: its count minus 40 points × point value (here 40 → the
    count; up to 90 points a hand), exactly the h67 loss.

    The rule it breaks: §9 ("a leave is recorded right where it was signed, so the
    server cannot choose when it takes effect"), D15, D35; and the ack itself says
    record i was the last of the log when the leave was judged at X, while the log has
    a record i + 1 made at X − 1 by a table that was not failing (``busy``).

    Why nothing catches it: ``leave_not_overtaken`` looks only at the first record
    after i dated at or after ``arrived``; records dated before are "made before the
    leave came — stored as the store went away, its answer lost" (§15 rule 7) and not
    counted.  That exemption is for a store failure, but it applies to any refusal
    code and to any record, so the h67 fix is undone by dating one record 1 ms
    earlier.  Pooled with the friend's ack it still passes (the friend's ack is the
    house's word too).

    Fixed (2026-12-07, night): record ``i + 1`` is the record checked, whatever its
    ``t`` (an honest server never refuses a leave whose write's answer it lost: it
    takes it again after the reload, D35).  The suggested rule was: a record after a
    refusal's ``i`` dated before its ``arrived``
    contradicts the ack (``i`` was the last record when the move was judged) unless the
    refusal's code is one of the store-fault codes the server sends only while it
    cannot store (``unavailable``), and then the leave is owed as before: the first
    record after ``i`` that is another seat's move ending the hand settles the leaver
    at no more than 40 (or the server retakes the leave first on reload, D35); and a
    client's receipt check of another seat's record should not be the only bound on
    its date."""
    t, victim, points, evidence, friends = overtaken_leave(before=1)
    assert points > 40, "the victim is counted at its cards instead of the 40 of its leave"
    refused = next(e["body"] for e in evidence if e["purpose"] == "ack" and e["body"]["outcome"] == "refused")
    declared = t["log"][refused["i"] + 1]
    assert declared["action"]["kind"] == "declare" and declared["t"] == refused["arrived"] - 1
    for items in (evidence, [*evidence, *friends]):
        report = verify_transcript(t, KEY, items)
        assert not report.ok, f"seat {victim}'s leave was refused 'busy', a declare dated 1 ms before it ended the hand"
        assert report.failure is not None and report.failure.check == "evidence"
        assert report.failure.record == refused["i"] + 1, report.failure


# --------------------------------------------------------------------------- 2 the phantom hand
FRIEND, VICTIM, BOT = 3, 1, 0
NAME = "audit-r3-button"


def _hand(attempt: int, seats: list[int], dealer: int, prev_head: str) -> VectorHand:
    hand = VectorHand(NAME, attempt, TABLE, seats, dealer, prev_head=prev_head)
    hand.seed_phases()
    hand.play(greedy)
    return hand


def phantom_table() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Hand 1 (seats 1 and 3, dealt by seat 1, the lowest: the friend at 3 plays first);
    hand 2 a phantom — seats 0 (a house bot) and 3, dealt by seat 3 (the next after 1 of
    its seats, D3), voided in its commit window; hand 3 (seats 1 and 3) dealt by the
    next after 3: seat 1 again, so the friend plays first again.  The three transcripts
    and the victim's evidence of the hands it was shown (1 and 3)."""
    one = play_hand(NAME, 0, TABLE, [VICTIM, FRIEND], VICTIM, greedy)
    two = VectorHand(NAME, 1, TABLE, [BOT, FRIEND], dealer_after([BOT, FRIEND], VICTIM), prev_head=str(one.rec.head))
    two.rec.open(two.now)
    two.rec.void("seat 0 left the table while the hand was being dealt (D36)", two.now + 3_000)
    three = _hand(2, [VICTIM, FRIEND], dealer_after([VICTIM, FRIEND], FRIEND), str(two.rec.head))
    ts = [one.rec.transcript(), two.rec.transcript(seed_revealed=False), three.rec.transcript()]
    assert [t["hand_no"] for t in ts] == [1, 2, 3]
    return ts, [*one.evidence[VICTIM], *three.evidence[VICTIM]]


def _folder(tmp_path: Path, ts: list[dict[str, Any]]) -> Path:
    folder = tmp_path / "table"
    folder.mkdir(parents=True)
    for t in ts:
        (folder / f"hand-{t['hand_no']}.json").write_text(json.dumps(t))
    return folder


def test_the_button_kept_between_two_played_hands_is_caught(tmp_path: Path) -> None:
    """Control: without the phantom, hand 2 dealt by seat 1 again (so the friend plays
    first twice) fails ``dealer`` in a directory and the victim's evidence (D3); dealt
    by seat 3, as D3 says, it passes both."""
    one = play_hand(NAME, 0, TABLE, [VICTIM, FRIEND], VICTIM, greedy)
    for dealer, ok in ((VICTIM, False), (FRIEND, True)):
        two = _hand(1, [VICTIM, FRIEND], dealer, str(one.rec.head))
        t2 = two.rec.transcript()
        report = verify_transcript(t2, KEY, [*one.evidence[VICTIM], *two.evidence[VICTIM]])
        assert report.ok is ok, report.failure
        out = verify_folder(_folder(tmp_path / f"d{dealer}", [one.rec.transcript(), t2]), KEY)
        assert out.ok is ok and [f.check for f in out.findings] == ([] if ok else ["dealer"])


@pytest.mark.xfail(
    strict=True,
    reason="h80: a void hand of the table moves the button (D3) whatever seats it lists, so a phantom hand the "
    "victim is never shown chooses who plays first in the next real hand",
)
def test_a_phantom_void_hand_does_not_choose_who_plays_first(tmp_path: Path) -> None:
    """The attack.  A heads-up table, the victim at seat 1, the house's friend at seat
    3.  Hand 1 is dealt by seat 1 (D3: the lowest), so the friend plays first.  By D3
    hand 2 is dealt by seat 3 and the victim plays first.  Instead the house makes a
    hand 2 the victim is never shown (it says the victim had no live connection at the
    deal, D34): seats 0 (a house bot) and 3, dealt by seat 3 — the next of its seats
    after seat 1, as D3 asks — and voided in its commit window ("seat 0 left while the
    hand was being dealt", D36).  Hand 3, the next one the two play, is dealt by the
    next after seat 3: seat 1 again, and the friend plays first again.  A phantom
    between every pair of real hands gives the friend the first turn in all of them.

    What the player loses: the first turn of every hand (the first draw, the first
    look at the open card) — the edge D3 exists to share out.  Low severity: an edge in
    play, not a charge; but D3 says "The house does not choose who plays first".

    The rule it breaks: RULES.md D3 (the button moves to the next seat each hand; the
    house does not choose who plays first), D34 (a seated, connected player is dealt
    in).  Why nothing catches it: every check holds — hand 2 chains from hand 1 and its
    dealer follows hand 1's among its own seats, hand 3 chains from hand 2 and follows
    it (``dealer``, ``chain``, no ``gap``); a void before the commitments needs no seed
    (§12) and no player's signature (the bot is the house's); the victim's kept
    headers are of hands 1 and 3, which §15 rule 3 compares only with the hand just
    before or after.  A void before any commitment gives the house no deck, so §17's
    audit does not weigh it either.

    Suggested rule: a hand voided before its commitments does not move the button (D3:
    nothing was dealt), so the next hand's dealer follows the last hand that reached
    its commitments; and a client that was seated and connected through a hand number
    it was never shown keeps the next header as proof and warns (the header of hand
    n + 2 after hand n's, with the player seated throughout)."""
    ts, evidence = phantom_table()
    deal_one, deal_three = ts[0]["log"][3]["events"][0]["data"], ts[2]["log"][3]["events"][0]["data"]
    assert deal_one["first"] == FRIEND and deal_three["first"] == FRIEND  # the friend plays first in both
    assert verify_transcript(ts[1], KEY).ok  # the phantom verifies alone
    report = verify_transcript(ts[2], KEY, evidence)
    out = verify_folder(_folder(tmp_path, ts), KEY)
    assert not out.ok or not report.ok, "the friend plays first in hands 1 and 3; a phantom void hand moved the button"
