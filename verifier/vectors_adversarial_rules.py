"""Adversarial vectors of a table's rules (``verifier/vectors/adversarial/*.json``, made
with the others by verifier/vectors_adversarial.py): a house that signs one hand's
header with other rules than its table's and settles the hand by them (RULES.md D38;
docs/fairness.md §14 ``rules``, §15 rule 3), and one that deals a hand with fewer
seats than its rules allow (D2, §13).  Found by the audit of 2026-12-07 (evening):
before, each such hand verified, and with the players' evidence."""

from __future__ import annotations

from typing import Any

from verifier.fairness import rules_id
from verifier.hand import TableRules
from verifier.vectors import VectorHand, greedy, play_hand
from verifier.vectors_adversarial import Case, failing, forge, fresh, passing, two_players

#: The table as it was opened, 5 % commission; and the rules the house signs into
#: hand 2's header to keep the whole pot.
TABLE = TableRules(seats=4, point_value=10, commission_bps=500)
RAISED = TableRules(seats=4, point_value=10, commission_bps=10_000)


def _hands(name: str, second: TableRules) -> tuple[VectorHand, VectorHand]:
    """Hands 1 and 2 of one table, chained, each ended by a valid declare."""
    one = play_hand(name, 0, TABLE, [1, 3], 3, greedy)
    two = play_hand(name, 1, second, [1, 3], 3, greedy, prev_head=str(one.rec.head))
    assert (one.rec.hand_no, two.rec.hand_no) == (1, 2) and one.rec.table_id == two.rec.table_id
    assert one.rec.ended and two.rec.ended and not one.rec.voided and not two.rec.voided
    return one, two


def _winners_items(one: VectorHand, two: VectorHand) -> tuple[int, list[dict[str, Any]]]:
    """What hand 2's winner's client kept over both hands (§15: every header it was shown)."""
    winner = two.rec.transcript()["result"]["winner"]
    return winner, [*one.evidence[winner], *two.evidence[winner]]


def fewer_than_min_players() -> Case:
    """A two-seat hand whose header says the table deals only with three (D2): the
    house dealt a hand its table's rules forbid."""
    t = fresh(two_players("adv-min-players"))
    header = t["log"][0]["header"]
    header["rules"] = {**header["rules"], "min_players": 3}
    header["rules_id"] = rules_id(header["rules"])
    return Case(
        "fewer-seats-than-min-players",
        "a hand of two seats under rules that deal only with three or more (min_players 3), re-signed by the server: "
        "§13 format (D2)",
        failing("format", 0),
        forge(t),
    )


def rules_changed() -> list[Case]:
    one, two = _hands("adv-rules", RAISED)
    settlement = two.rec.transcript()["result"]["settlement"]
    assert settlement["commission"] == settlement["pot"] > 0  # the cheat: the house keeps the pot
    winner, items = _winners_items(one, two)
    same_one, same_two = _hands("adv-rules-kept", TABLE)
    kept_winner, kept_items = _winners_items(same_one, same_two)
    return [
        Case(
            "rules-raised-for-one-hand",
            f"hand 2 of a table opened at 500 bps commission is signed and settled at 10 000 bps (the winner, seat "
            f"{winner}, gets nothing of the pot); the winner's evidence holds hand 1's signed header, at 500: two "
            "rule sets signed for one table, whose rules never change (§15 rule 3, D38)",
            failing("evidence", 0),
            two.rec.transcript(),
            items,
        ),
        Case(
            "rules-kept-across-hands",
            f"hand 2 of a table under the table's own rules, with seat {kept_winner}'s evidence of hands 1 and 2: "
            "hand 1's header gives the same rules (§15 rule 3, D38)",
            passing(),
            same_two.rec.transcript(),
            kept_items,
        ),
        Case(
            "folder-rules-raised",
            "hands 1 and 2 of one table, chained, signed by one key, hand 2 under a higher commission than hand 1: "
            "a table's rules never change (§14 rules, D38)",
            {"failed": {"hand-1.json": "rules", "hand-2.json": "rules"}, "findings": []},
            folder={"hand-1.json": one.rec.transcript(), "hand-2.json": two.rec.transcript()},
        ),
    ]
