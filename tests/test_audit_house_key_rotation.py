"""Audit (h67, a dishonest house): a key rotation (docs/fairness.md §16) escapes D38.

The attack.  A heads-up table (seats 1 and 3; the house's friend at seat 1, the
victim at seat 3), point value 10.  Hand 1 is honest, signed with the server's key
K1.  For hand 2 the house "rotates" its key: it signs hand 2 — header, heads,
transcript — with a new key K2 (published at ``/api/fairness/key`` from hand 2 on, as
§16 asks of a rotation), and raises the point value in hand 2's header to 1000.  The
victim's client does what D38 tells it: it keeps the header and signs nothing in the
hand, so it commits nothing (``no_commit``) and the clock plays its seat until it
drops it (D16, D22: 40 points after two clock draws).  Its friend wins.

What the player loses: 40 × 1000 HT instead of nothing (or 40 × 10 had the rules been
the table's): the hold of D20 is the table's 130 × 10, so the house charges a hundred
times what the player agreed to risk a point.  The same with the commission raised to
10 000 bps in a hand the victim would win (the house keeps the pot).

The rule it breaks: RULES.md D38 (a table's rules never change; "two headers the
server signed for one table with different rules are the house's own proof"),
§16 ("any two headers the server signed for one table with different rules … fail the
check").  Why nothing catches it: §15 rule 3 holds a kept header of another hand to
this hand's rules only when it verifies under this transcript's key — "such an item
whose signature does not verify under that key — the server's key was rotated in
between, §16 — is counted with the other hands" (``check_table_header``); the
directory check ``rules`` groups hands by the key that signed them
(``batch.changed_rules``), so two keys are two tables.  Nothing ties K2 to K1: a
rotation is the operator's word.  (The same escape works for the dealer of D3 in the
evidence check; the directory check ``dealer`` does not look at keys and still
catches that one.)

The directory check is fixed (2026-12-07, later): hand n+1 that starts from hand
n's head vouches for hand n whatever key signed it (no other log hashes to that
head), so ``rules`` holds the two to one rule set across a change of key
(``batch.rules_across_keys``).  The evidence check is not: a kept header under
another key is bound to this hand by nothing the verifier holds — the victim's
client keeps hand 1's header and heads, not its records, so the link from that
header to hand 2's ``prev_head`` cannot be followed, and a header under an unknown
key is anyone's to sign.

Suggested fix: a rotation the verifier can check — the header of the first hand
under a new key carries a statement signed by the old key naming the new key and the
first hand (or the header carries the key history), and rule 3 / ``rules`` then hold
headers under the old key to the table's rules; until then, a header item of another
hand of the table under another key than this transcript's, chained to it by
``prev_head`` (the client kept both), should not be set aside silently."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from verifier.batch import verify_folder
from verifier.hand import Action, HandState, TableRules, TimeOut
from verifier.signing import Signer
from verifier.transcript import verify_transcript
from verifier.vectors import TEST_SIGNER, VectorHand, greedy, label, play_hand

K1 = TEST_SIGNER
K2 = Signer.from_seed(label("audit h67: the house's key from hand 2 on"))
TABLE = TableRules(seats=4, point_value=10, commission_bps=500)
RAISED = TableRules(seats=4, point_value=1000, commission_bps=500)
FRIEND, VICTIM = 1, 3


def clock_plays_the_victim(state: HandState, seat: int) -> Action:
    """The victim's client signs nothing under hand 2's header (D38): the clock moves."""
    return TimeOut(seat) if seat == VICTIM else greedy(state, seat)


def two_hands(second_key: Signer) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """Hands 1 (K1, the table's rules) and 2 (``second_key``, RAISED), chained, and the
    victim's evidence of both as its client kept it."""
    one = play_hand("audit-rotate", 0, TABLE, [FRIEND, VICTIM], FRIEND, greedy)  # D3: the lowest seat deals hand 1
    two = VectorHand(
        "audit-rotate", 1, RAISED, [FRIEND, VICTIM], VICTIM, prev_head=str(one.rec.head), server=second_key
    )
    two.seed_phases(no_commit=(VICTIM,))
    two.play(clock_plays_the_victim)
    t1, t2 = one.rec.transcript(), two.rec.transcript()
    assert t2["log"][0]["header"]["prev_head"] == t1["head"]
    return t1, t2, [*one.evidence[VICTIM], *two.evidence[VICTIM]]


def test_without_a_rotation_the_raised_hand_fails_the_victims_evidence() -> None:
    """Control: hand 2 signed with K1, as hand 1: rule 3 fails it (D38)."""
    _, t2, evidence = two_hands(K1)
    report = verify_transcript(t2, K1.public_bytes, evidence)
    assert report.failure is not None and report.failure.check == "evidence" and "D38" in report.failure.message


def _victims_loss(t2: dict[str, Any]) -> int:
    assert t2["log"][0]["header"]["public_key"] == K2.public_bytes.hex()
    assert t2["result"]["winner"] == FRIEND
    loss: int = -t2["result"]["settlement"]["deltas"][str(VICTIM)]
    assert loss == 40 * RAISED.point_value  # a clock drop, at a hundred times the table's point value
    return loss


@pytest.mark.xfail(
    strict=True,
    reason="h67: a header of another hand under another key is 'another era' (§15 rule 3): a house that rotates "
    "its key for one hand changes that hand's rules and the victim's kept headers pass",
)
def test_a_rotated_key_does_not_launder_a_raised_hand_past_the_victims_evidence() -> None:
    _, t2, evidence = two_hands(K2)
    _victims_loss(t2)
    report = verify_transcript(t2, K2.public_bytes, evidence)
    assert not report.ok, "hand 2 is dealt at 100x the table's point value and verifies with the victim's evidence"


def test_a_rotated_key_does_not_launder_a_raised_hand_past_the_directory(tmp_path: Path) -> None:
    t1, t2, _ = two_hands(K2)
    _victims_loss(t2)
    folder = tmp_path / "table"
    folder.mkdir()
    (folder / "hand-1.json").write_text(json.dumps(t1))
    (folder / "hand-2.json").write_text(json.dumps(t2))
    out = verify_folder(folder, None, None)
    assert all(r.ok for r in out.results)
    assert [f.check for f in out.findings] == ["rules"], out.findings
    (finding,) = out.findings
    assert finding.files == [str(folder / "hand-2.json")]  # hand 2's signer vouched for hand 1 by its prev_head
    assert K2.public_bytes.hex() in finding.message


def test_a_rotation_under_the_same_rules_is_no_finding(tmp_path: Path) -> None:
    """Control: hands 1 (K1) and 2 (K2), chained, both under the table's rules: a key
    the operator rotated between two hands is no breach of D38."""
    one = play_hand("audit-rotate-same", 0, TABLE, [FRIEND, VICTIM], FRIEND, greedy)
    two = play_hand(
        "audit-rotate-same", 1, TABLE, [FRIEND, VICTIM], VICTIM, greedy, prev_head=str(one.rec.head), server=K2
    )
    folder = tmp_path / "table"
    folder.mkdir()
    (folder / "hand-1.json").write_text(json.dumps(one.rec.transcript()))
    (folder / "hand-2.json").write_text(json.dumps(two.rec.transcript()))
    out = verify_folder(folder, None, None)
    assert all(r.ok for r in out.results) and out.findings == [], out.findings
