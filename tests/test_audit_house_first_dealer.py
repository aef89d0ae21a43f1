"""Audit (h67, a dishonest house): the dealer of a table's first hand is the house's
choice, though RULES.md D3 fixes it.

The attack.  Hand 1 of a table (``prev_head`` 64 zeros, which ``chain`` checks), seats 1
and 3.  D3: "A table's first hand is dealt by its lowest seat" — seat 1, so seat 3
plays first.  The house signs the header with seat 3 as dealer, so its friend at seat
1 plays first.  The hand verifies, alone, in a directory and with either player's
evidence; the clients sign under it (they check the dealer only against a kept header
of the hand before, and hand 1 has none).

What the player loses: the first turn (the first draw and the first look at the open
card) of the table's first hand, given to the house's friend — and, as the button then
moves by D3 from that dealer, the house's choice fixes who plays first in every later
hand of the table too (a house that opens tables for its friend picks the rotation).
Low severity: an edge in play, not a charge.

The rule it breaks: RULES.md D3 ("A table's first hand is dealt by its lowest seat";
"The house does not choose who plays first").  Why nothing catches it: §14 ``dealer``
and §15 rule 3 compare a hand's dealer only with the hand before it, and D3 / §16 say
"The dealer of a table's first hand is not checked" — yet for hand 1 the rule needs
nothing before it: the dealer is the lowest seat of its own header
(``dealer_after(seats, None)``, what the server deals by), and hand 1 is known by its
``hand_no`` (its ``prev_head`` is 64 zeros, checked).

Fixed (2026-12-07, night): §14 ``chain`` fails hand 1 of a v2 table whose dealer is not
the lowest seat of its header, for a single transcript too, and the bot (and the table
page) commit to no such header.  The published vectors that dealt hand 1 from another
seat are now their table's hand 2 (``verifier.vectors.VectorHand``), or dealt by the
lowest seat where two hands of one table are chained."""

from __future__ import annotations

from service.bots import Bot
from verifier.hand import TableRules
from verifier.signing import Signer
from verifier.transcript import verify_transcript
from verifier.vectors import TEST_SIGNER, greedy, play_hand

KEY = TEST_SIGNER.public_bytes
TABLE = TableRules(seats=4, point_value=10, commission_bps=500)
FRIEND, VICTIM = 1, 3


def test_a_first_hand_dealt_by_another_seat_than_the_lowest_is_caught() -> None:
    hand = play_hand("audit-first-dealer", 0, TABLE, [FRIEND, VICTIM], VICTIM, greedy, hand_no=1)
    t = hand.rec.transcript()
    assert t["hand_no"] == 1 and t["log"][0]["header"]["prev_head"] == "0" * 64
    deal = t["log"][3]["events"][0]
    assert deal["data"]["dealer"] == VICTIM and deal["data"]["first"] == FRIEND  # the friend plays first
    for evidence in (None, hand.evidence[VICTIM], hand.evidence[FRIEND]):
        report = verify_transcript(t, KEY, evidence)
        assert report.failure is not None, "hand 1 is dealt by seat 3, not its lowest seat 1 (D3), and verifies"
        assert report.failure.check == "chain" and report.failure.record == 0, report.failure
        assert (report.failure.expected, report.failure.found) == (FRIEND, VICTIM)


def test_a_first_hand_dealt_by_its_lowest_seat_verifies() -> None:
    """The control: the same table's hand 1 dealt by seat 1, its lowest."""
    hand = play_hand("audit-first-dealer", 0, TABLE, [FRIEND, VICTIM], FRIEND, greedy)
    t = hand.rec.transcript()
    assert t["hand_no"] == 1 and t["log"][0]["header"]["dealer"] == FRIEND
    report = verify_transcript(t, KEY, hand.evidence[VICTIM])
    assert report.ok, report.failure


def test_the_bot_signs_nothing_under_a_first_hand_not_dealt_by_the_lowest_seat() -> None:
    me = Signer.generate()
    bot = Bot("http://127.0.0.1:1", "token", "T", key=me)
    bot._rules = TABLE.to_json()
    entry = {"seat": VICTIM, "player_id": "me", "player_key": me.public_bytes.hex()}
    seats = [{"seat": FRIEND, "player_id": "friend", "player_key": "00" * 32}, entry]
    header = {
        "table_id": "T",
        "hand_no": 1,
        "rules": TABLE.to_json(),
        "seats": seats,
        "prev_head": "0" * 64,
        "commit_ms": 10_000,
        "reveal_ms": 10_000,
    }
    assert bot._wrong_header(1, {**header, "dealer": FRIEND}, entry) is None
    why = bot._wrong_header(1, {**header, "dealer": VICTIM}, entry)
    assert why is not None and "first hand" in why, why
