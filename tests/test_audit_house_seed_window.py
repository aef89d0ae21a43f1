"""Audit (h67, a dishonest house): the seed windows ``commit_ms`` and ``reveal_ms`` of a
signed header are the house's to choose, hand by hand, and nothing holds them.

The attack.  A heads-up table (seats 1 and 3; the house's friend at seat 1, the victim
at seat 3).  For one hand the house signs a header with ``reveal_ms = 1`` (the table's
seed window is 10 s, ``--seed-seconds``).  Both seats commit.  The friend's reveal is
taken the moment record 1 is pushed (the house knows its friend's seed, or waits for
it); record 2 is made one millisecond after record 1, before any client could answer
record 1, so the victim's reveal — sent at once by its client — finds the reveals
recorded and is refused (its ack names record 2: a stale move, justified, §15 rule 7).
The victim is ``withheld``: dealt nothing and charged a first drop (D29); with one
seat dealt in, the friend wins at once (D14, ``last_standing``).

What the player loses: 20 × point_value, paid to the friend (less commission), for a
hand it never had the chance to take part in.  (The same with ``commit_ms = 1``: every
honest seat is ``no_commit`` and plays on the empty seed, so the deck is the house's
and its friend's alone — with no ``no_player_seed`` warning, as the friend's seed
counted; §16's first guarantee is gone.)

The rule it breaks: docs/fairness.md §10 steps 2–3 (each seat sends its seed "within
``commit_ms``"/"``reveal_ms``": the windows are there so that a seat can), §16
("a seat that withholds its reveal … is dealt out and pays a first drop": the house
chooses who withholds), D21/D29 (a seed "not sent in time").  Nothing catches it:
§13 only bounds each window to 1 … 3 600 000 ms; ``time`` (§14.9) checks record 2
against ``reveal_ms`` as signed; the refusal of the late reveal is justified (rule 7:
record 2 is not record 1); rule 3 holds a kept header of another hand to the table's
``rules`` and ``dealer`` but not to its windows, which are not part of ``R`` (§4,
D38); and neither client checks the windows before committing (``Bot._wrong_header``,
``service/web/table/state.js`` ``headerWrong``).

Fixed in part (RULES.md D21's decision, docs/fairness.md §13): every seed window is
at least 2 000 ms, a shorter one fails ``format``, the server refuses to be started
with less, and the clients sign nothing under such a header.  A window between the
floor and the table's usual one, given to one hand, is still the house's choice.

Suggested fix (the rest): make the seed windows part of the table's fixed settings (in ``R`` and
``rules_id``, so D38's checks hold them), or give them a floor the verifier checks
(say ≥ 1000 ms) and have the clients refuse to commit under a header whose windows
are not the table's (as for its rules) — and hold a kept header of another hand of
the table to the same windows (§15 rule 3)."""

from __future__ import annotations

from typing import Any

from service.bots import Bot
from verifier.chain import reveal_move
from verifier.hand import TableRules
from verifier.schema import WINDOW_MS_MIN
from verifier.signing import Signer
from verifier.transcript import verify_transcript
from verifier.vectors import SEED_WINDOW_MS, TEST_SIGNER, VectorHand

KEY = TEST_SIGNER.public_bytes
TABLE = TableRules(seats=4, point_value=10, commission_bps=500)
FRIEND, VICTIM = 1, 3


def short_window_hand(reveal_ms: int, close_after: int = 1) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The hand above: its transcript and the victim's evidence as its client kept it
    (the header, its player item, its commit's accepted ack, its reveal's refused ack,
    and the signed head of every record it was sent)."""
    hand = VectorHand("audit-seed-window", 0, TABLE, [FRIEND, VICTIM], FRIEND)
    rec = hand.rec
    rec.reveal_ms = reveal_ms  # the house's choice for this one hand
    hand._heads(rec.open(hand.now))
    hand.accept_header()
    commits = hand.commit_all({FRIEND: hand.now + 40, VICTIM: hand.now + 80})
    t1 = rec.records[0]["t"] + 1_500
    hand._heads(rec.commitments(commits, t1))
    h1 = str(rec.records[1]["h"])
    seeds = hand.reveal_all({FRIEND: t1})  # the friend's seed, taken at once
    hand._heads(rec.reveal(seeds, t1 + close_after))  # the window closes a millisecond later
    # the victim's reveal, sent as record 1 reached it, is judged after record 2: refused
    move = reveal_move(VICTIM, hand.seeds[VICTIM])
    sig = hand.sign(VICTIM, h1, move)
    hand.evidence[VICTIM].append(rec.ack(VICTIM, move, h1, sig, arrived=t1 + 40, code="wrong_phase"))
    record, _ = rec.deal(t1 + 45)
    hand._heads(record)
    assert rec.ended
    return rec.transcript(), hand.evidence[VICTIM]


def test_the_honest_window_cannot_be_closed_on_the_victim() -> None:
    """Control: under the table's own 10 s window the same early close fails ``time``."""
    t, evidence = short_window_hand(SEED_WINDOW_MS, close_after=1)
    report = verify_transcript(t, KEY, evidence)
    assert report.failure is not None and report.failure.check == "time" and report.failure.record == 2


def test_a_one_millisecond_reveal_window_is_caught() -> None:
    t, evidence = short_window_hand(1)
    assert t["log"][0]["header"]["reveal_ms"] == 1
    statuses = {r["seat"]: r["status"] for r in t["log"][2]["reveals"]}
    assert statuses == {FRIEND: "revealed", VICTIM: "withheld"}
    settlement = t["result"]["settlement"]
    assert t["result"]["winner"] == FRIEND and settlement["deltas"][str(VICTIM)] == -20 * TABLE.point_value
    report = verify_transcript(t, KEY, evidence)
    assert not report.ok, "the victim was given 1 ms to reveal, charged 20 points, and the hand verifies"
    assert report.failure is not None and report.failure.check == "format" and "reveal_ms" in report.failure.message
    # the floor is 2 000 ms (D21): one below fails format, at the floor the header is well formed
    t, evidence = short_window_hand(WINDOW_MS_MIN - 1)
    assert (report := verify_transcript(t, KEY, evidence)).failure is not None and report.failure.check == "format"
    t, evidence = short_window_hand(WINDOW_MS_MIN)  # closed early: caught by time, as the control
    assert (report := verify_transcript(t, KEY, evidence)).failure is not None and report.failure.check == "time"


def test_the_bot_signs_nothing_under_a_header_with_a_one_millisecond_window() -> None:
    """The client's side: the bot committed to a header with a 1 ms reveal window (it
    checked the key, the table and hand, the rules and the dealer — not the windows);
    it now signs nothing under a window below the protocol's floor (D21)."""
    me = Signer.generate()
    bot = Bot("http://127.0.0.1:1", "token", "T", key=me)
    bot._rules = TABLE.to_json()
    entry = {"seat": VICTIM, "player_id": "me", "player_key": me.public_bytes.hex()}
    honest = {
        "table_id": "T",
        "hand_no": 2,
        "rules": TABLE.to_json(),
        "seats": [entry],
        "dealer": VICTIM,
        "commit_ms": SEED_WINDOW_MS,
        "reveal_ms": SEED_WINDOW_MS,
    }
    bot.evidence.append({"purpose": "header", "body": {**honest, "hand_no": 1}, "sig": "00" * 64})
    assert bot._wrong_header(2, honest, entry) is None
    assert "D21" in str(bot._wrong_header(2, {**honest, "reveal_ms": 1}, entry))
    assert "commit_ms" in str(bot._wrong_header(2, {**honest, "commit_ms": WINDOW_MS_MIN - 1}, entry))
    assert bot._wrong_header(2, {**honest, "commit_ms": WINDOW_MS_MIN, "reveal_ms": WINDOW_MS_MIN}, entry) is None
