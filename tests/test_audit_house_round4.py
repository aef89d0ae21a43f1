"""Audit (h85, a dishonest house, round 4): downgrades, relaxed checks, and what a
player's evidence shows.

Sound (controls below): a v2 hand re-published as rummy-pf/v1 is refused unless asked
for, refuted by the player's evidence, and cannot be spliced into a table's published
history (the next v2 hand's ``prev_head`` pins the original's head: ``chain``); a
table's history planned as v1 up to the victim's hand passes a directory only with
``--allow-v1`` (its warning) and fails the victim's evidence.

Two findings, each with its control (the first a strict xfail, the second fixed):

1. A winning declare refused ``busy`` and overtaken, within the turn the refusal owed,
   by a leave of the house's friend (40 instead of its count): the mirror of h67/h80's
   refused leave, which ``leave_not_overtaken`` checks for leaves only.
2. A hand the victim was seated in (its real key listed) but never shown: the clock
   drops it (40).  Its evidence of the hands around fails the single transcript ("no
   item … proves nothing") but the directory passed: ``evidence`` was skipped for a
   transcript of a directory the evidence holds no item for, even one that seats the
   player's own key.  Fixed (§14): such a transcript fails ``evidence`` in a
   directory too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from verifier.batch import verify_folder
from verifier.hand import Action, HandState, Leave, TableRules, TimeOut, dealer_after
from verifier.transcript import verify_transcript
from verifier.vectors import TEST_SIGNER, VectorHand, greedy, play_hand, winning_declares
from verifier.vectors_adversarial import downgrade

KEY = TEST_SIGNER.public_bytes
TABLE = TableRules(seats=4, point_value=10, commission_bps=500)
SEATS = [1, 3]
FRIEND, VICTIM = 1, 3


def _folder(where: Path, ts: list[dict[str, Any]]) -> Path:
    where.mkdir(parents=True)
    for t in ts:
        (where / f"hand-{t['hand_no']}.json").write_text(json.dumps(t))
    return where


# --------------------------------------------------------------------------- sound: downgrades
def _table(name: str, victim_hand: int) -> list[VectorHand]:
    """Hands 1 … victim_hand + 1 of a heads-up table, chained, the button moving (D3)."""
    hands: list[VectorHand] = []
    dealer, prev = FRIEND, None
    for n in range(victim_hand + 1):
        hand = play_hand(name, n, TABLE, SEATS, dealer, greedy, prev_head=prev, hand_no=n + 1)
        hands.append(hand)
        dealer, prev = dealer_after(SEATS, dealer), str(hand.rec.head)
    return hands


def test_a_v1_copy_spliced_into_a_tables_history_breaks_the_chain(tmp_path: Path) -> None:
    """Hand 2 of 3 re-published as v1 (so its moves are the server's word alone): with
    --allow-v1, the directory fails it twice over — ``downgrade`` (hand 1 is v2) and
    ``chain`` (hand 3 starts from the original's head) — and so does the victim's
    evidence alone."""
    hands = _table("audit-r4-splice", 2)
    ts = [h.rec.transcript() for h in hands]
    ts[1] = downgrade(ts[1])
    out = verify_folder(_folder(tmp_path / "t", ts), KEY, allow_v1=True)
    assert sorted(f.check for f in out.findings) == ["chain", "downgrade"], out.findings
    report = verify_transcript(ts[1], KEY, hands[1].evidence[VICTIM], allow_v1=True)
    assert report.failure is not None and report.failure.check == "evidence"


def test_a_table_published_as_v1_up_to_the_victims_hand_fails_its_evidence(tmp_path: Path) -> None:
    """The house plans ahead: every hand up to the victim's is published as v1 and the
    next v2 hand chains from the v1 copy (so neither ``chain`` nor ``downgrade``, which
    looks only at v1 hands numbered at or after a v2 one, can see it).  A directory
    accepts that only with --allow-v1 and its warning ``v1_server_only``; the victim's
    evidence refutes its hand (Appendix C), in the directory too."""
    name = "audit-r4-planned"
    one = play_hand(name, 0, TABLE, SEATS, FRIEND, greedy, hand_no=1)
    v1_one = downgrade(one.rec.transcript())
    two = play_hand(name, 1, TABLE, SEATS, VICTIM, greedy, prev_head=v1_one["head"], hand_no=2)
    ts = [v1_one, two.rec.transcript()]
    folder = _folder(tmp_path / "t", ts)
    assert not verify_folder(folder, KEY).ok  # v1 is refused unless asked for
    allowed = verify_folder(folder, KEY, allow_v1=True)
    assert allowed.ok and any("v1_server_only" in r.warnings for r in allowed.results)
    evidence = [*one.evidence[VICTIM], *two.evidence[VICTIM]]
    out = verify_folder(folder, KEY, evidence, allow_v1=True)
    assert [r.failure["check"] for r in out.results if r.failure] == ["evidence"]


# --------------------------------------------------------------------------- 1 the overtaken declare
def overtaken_declare(after: int) -> tuple[dict[str, Any], int, int, int, list[dict[str, Any]]]:
    """A heads-up hand in which a seat is about to declare validly while its opponent
    (the house's friend) counts more than 40.  The declare is refused ``busy`` (the
    winner keeps the ack); the friend's leave is recorded ``after`` ms after the
    refusal's arrival and ends the hand (D14: the winner is last standing, the friend
    pays the 40 of a leave).  The transcript, the winner, the friend, what the friend
    would have paid, and the winner's evidence."""
    for hand, declare, result in winning_declares("audit-r4-declare", TABLE, SEATS):
        friend = next(s for s in SEATS if s != declare.seat)
        owed = result.settlement.points[friend]
        if owed <= 40:
            continue
        ack = hand.refuse(declare, "busy", at=hand.now + 2_000)
        hand.act(Leave(friend), at=ack["body"]["arrived"] + after)
        t = hand.rec.transcript()
        assert t["result"]["winner"] == declare.seat and t["result"]["reason"] == "last_standing"
        return t, declare.seat, friend, owed, hand.evidence[declare.seat]
    raise RuntimeError("no vector hand in which the loser counts more than 40")


def test_a_friends_leave_a_whole_turn_after_a_refused_declare_passes() -> None:
    """Control: the friend's leave a whole turn after the refusal (the winner's window
    ran out; it did not send its declare again) is the friend's right (D15)."""
    t, winner, _friend, _owed, evidence = overtaken_declare(after=1000 * TABLE.turn_seconds)
    assert verify_transcript(t, KEY, evidence).ok


@pytest.mark.xfail(
    strict=True,
    reason="h85: after a refused action the house may take another seat's move first within the owed turn; "
    "leave_not_overtaken holds only a refused leave to that (a refused winning declare overtaken by the "
    "friend's leave passes)",
)
def test_a_refused_winning_declare_overtaken_by_the_friends_leave_is_caught() -> None:
    """The attack.  Heads-up, the victim on turn holds a winning 14 and declares; its
    opponent, the house's friend, counts more than 40.  The house (which sees every
    card, and the declare) refuses it ``busy`` — the victim keeps the signed ack — and
    0.6 s later records a ``leave`` its friend signed on cue (D15: at any time).  The
    friend pays 40 instead of its count; the victim wins last standing.  (With more
    seats each friend leaves so, and the victim's declare, sent again, is taken after.)

    What the player loses: (the friend's count − 40) × point value, less commission —
    up to 90 points a hand; the house keeps its friend's money.

    The rule it breaks: D35 ("the seat keeps its whole window from that moment"), §16
    ("the server cannot censor a move it acknowledged"), and the very reason §15 rule 7
    gives for a refused leave: the house chose the order of two moves, taking the
    later one first.  Why nothing catches it: rule 7 holds the record after a refusal
    to the refused seat's move only when the refused move is a ``leave``
    (``leave_not_overtaken``); for any other action it only bounds the seat's own
    ``timeout`` and a ``void`` (``no_clock_move_before``, ``no_void_before``), and the
    friend's leave is neither.

    Not fixed in the verifier: an honest server can produce this log (a declare
    refused ``unavailable`` as the store failed, a leave queued behind it judged next,
    D35's ``_failed``), so the rule needs the server first — take a refused move of
    the seat on turn again, first, as it does a leave (``TableCore._take_again``), or
    judge no other seat's leave while it owes one — and then the check: after a
    refusal of an action the rules allow, record ``i + 1`` dated before the owed turn
    ends is that seat's own move (``leave_not_overtaken`` for every action).  Note that
    a house that judges the declare late (after the friend's leave) instead of
    refusing it signs nothing this rule can see; only the client can bound an ack's
    ``arrived`` from above (§15 "On receipt" bounds it from below only)."""
    t, winner, friend, owed, evidence = overtaken_declare(after=600)
    assert t["result"]["points"][str(friend)] == 40 < owed  # the friend pays 40, not its count
    assert verify_transcript(t, KEY).ok
    report = verify_transcript(t, KEY, evidence)
    assert not report.ok, f"seat {winner}'s winning declare was refused 'busy' and its opponent left 0.6 s later"
    assert report.failure is not None and report.failure.check == "evidence"


# --------------------------------------------------------------------------- 2 the hand never shown
def clock_plays_the_victim(state: HandState, seat: int) -> Action:
    return TimeOut(seat) if seat == VICTIM else greedy(state, seat)


def unshown_hand(tmp_path: Path) -> tuple[Path, dict[str, Any], list[dict[str, Any]]]:
    """Hands 1 and 3 played by both; hand 2 lists the victim's seat and its real key,
    but the victim's client is never sent its header (so commits nothing and keeps no
    item of it): the clock plays the seat and drops it (D16).  The folder, hand 2 and
    the victim's evidence (hands 1 and 3, as its client kept them)."""
    name = "audit-r4-unshown"
    one = play_hand(name, 0, TABLE, SEATS, FRIEND, greedy, hand_no=1)
    two = VectorHand(name, 1, TABLE, SEATS, VICTIM, prev_head=str(one.rec.head), hand_no=2)
    two.seed_phases(no_commit=(VICTIM,))
    two.play(clock_plays_the_victim)
    three = play_hand(name, 2, TABLE, SEATS, FRIEND, greedy, prev_head=str(two.rec.head), hand_no=3)
    ts = [one.rec.transcript(), two.rec.transcript(), three.rec.transcript()]
    assert ts[1]["result"]["points"][str(VICTIM)] == 40 and ts[1]["result"]["winner"] == FRIEND
    return _folder(tmp_path / "t", ts), ts[1], [*one.evidence[VICTIM], *three.evidence[VICTIM]]


def test_a_hand_never_shown_fails_the_victims_evidence_alone(tmp_path: Path) -> None:
    """Control: the single transcript with the victim's evidence fails (§15 rule 1)."""
    _folder_, two, evidence = unshown_hand(tmp_path)
    report = verify_transcript(two, KEY, evidence)
    assert report.failure is not None and report.failure.check == "evidence"
    assert "no item of this evidence is for" in report.failure.message


def test_a_hand_that_seats_the_victims_key_unshown_fails_the_directory(tmp_path: Path) -> None:
    """The attack.  The victim sits at a heads-up table, connected throughout.  The
    house deals hand 2 to both seats — the header lists the victim's registered key,
    which the house knows — but never sends it to the victim (it says the victim's
    connection dropped right after the deal: D16, a disconnected seat keeps its seat
    and its clock).  The victim commits nothing (``no_commit``), the clock plays its
    seat (two clock draws, D22) and drops it at the third expiry (40, D15); the
    house's friend wins.  Hands 1 and 3 are played normally, so the victim's kept
    headers hold hand 2 to the table's rules and button (§15 rule 3), which it keeps.

    What the player loses: 40 × point value for a hand it was never shown.

    The rule it breaks: D34 (a seat with no live connection at the deal sits the hand
    out).  What shows it: the victim's evidence holds nothing of hand 2, whose header
    lists the key the victim's own ``player`` items name.  ``rummy-verify hand-2.json
    --receipts`` fails (§15 rule 1, the control above); ``rummy-verify DIR --receipts``
    skips ``evidence`` for hand 2 and passes the directory — the folder verdict is
    more lenient than the single file's, for the one transcript that charges the
    player.

    Suggested fix (§14, directory evidence; the browser verifier and vectors to
    agree): a transcript of a directory whose header lists, for a seat, a key that a
    ``player`` item of the evidence names for that table, and for which the evidence
    holds no item, fails ``evidence`` as a single transcript does (or, at least, is
    reported: "your key is seated in hand N, and your evidence holds nothing of it");
    the client should likewise warn when a hand number of a table it sat at through
    is never shown (h80's suggestion)."""
    folder, _two, evidence = unshown_hand(tmp_path)
    out = verify_folder(folder, KEY, evidence)
    assert not out.ok, "hand 2 charged the victim 40 for a hand it was never shown; the directory passes"
    failed = {Path(r.path).name: r.failure for r in out.results if r.failure is not None}
    assert list(failed) == ["hand-2.json"], failed
    assert failed["hand-2.json"]["check"] == "evidence" and "never shown" in failed["hand-2.json"]["message"]


def test_a_hand_the_evidence_does_not_seat_is_still_skipped_in_a_directory(tmp_path: Path) -> None:
    """Control: the victim's items of hand 1 without its ``player`` item name no key
    of their own, so hands 2 and 3, of which they hold nothing, are skipped as before
    and the directory passes."""
    folder, _two, victim = unshown_hand(tmp_path)
    one = [x for x in victim if x["body"]["hand_no"] == 1]
    stranger = [x for x in one if x["purpose"] != "player"]
    out = verify_folder(folder, KEY, stranger)
    assert out.ok, [(r.path, r.failure) for r in out.results if r.failure]
