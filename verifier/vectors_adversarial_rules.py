"""Adversarial vectors of a table's rules (``verifier/vectors/adversarial/*.json``, made
with the others by verifier/vectors_adversarial.py): a house that signs one hand's
header with other rules than its table's and settles the hand by them (RULES.md D38;
docs/fairness.md §14 ``rules``, §15 rule 3), and one that deals a hand with fewer
seats than its rules allow (D2, §13).  Found by the audit of 2026-12-07 (evening):
before, each such hand verified, and with the players' evidence.  Then one that keeps
the dealer's button where it was, so that the same seat plays first again (D3, §14
``dealer``, §15 rule 3; found later that day: nothing checked the dealer across
hands)."""

from __future__ import annotations

from typing import Any

from verifier.fairness import rules_id
from verifier.hand import TableRules
from verifier.signing import Signer
from verifier.vectors import VectorHand, greedy, label, play_hand
from verifier.vectors_adversarial import Case, failing, forge, fresh, passing, two_players

#: The table as it was opened, 5 % commission; and the rules the house signs into
#: hand 2's header to keep the whole pot.
TABLE = TableRules(seats=4, point_value=10, commission_bps=500)
RAISED = TableRules(seats=4, point_value=10, commission_bps=10_000)
#: The key a house "rotates" to for the hand it raises (a test key, like the vectors').
OTHER_KEY = Signer.from_seed(label("rummy-pf adversarial vectors: a second server key -- never use for real hands"))


def _hands(name: str, second: TableRules, dealer: int = 3) -> tuple[VectorHand, VectorHand]:
    """Hands 1 and 2 of one table, chained, each ended by a valid declare: hand 1 dealt
    by seat 1 (its lowest, D3), hand 2 by ``dealer`` (seat 3, the next seat, by D3)."""
    one = play_hand(name, 0, TABLE, [1, 3], 1, greedy)
    two = play_hand(name, 1, second, [1, 3], dealer, greedy, prev_head=str(one.rec.head))
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


def short_seed_window() -> Case:
    """A header whose reveal window is 1 ms, re-signed by the server: below the
    protocol's floor of 2 000 ms (D21), a window the house could close on an honest
    seat's seed (the audit of 2026-12-07)."""
    t = fresh(two_players("adv-seed-window"))
    t["log"][0]["header"]["reveal_ms"] = 1
    return Case(
        "seed-window-below-the-floor",
        "a hand whose header gives a reveal window of 1 ms, re-signed by the server: every seed window is at least "
        "2 000 ms (§13 format, D21)",
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


def rules_raised_under_a_new_key() -> Case:
    """Hand 2 signed by another key than hand 1, raised: the house "rotated" its key for
    the hand whose rules it changed.  Hand 2 starts from hand 1's head, so its signer
    vouches for hand 1 (§14 ``rules``, D38; the audit of 2026-12-07)."""
    one = play_hand("adv-rules-new-key", 0, TABLE, [1, 3], 1, greedy)
    two = play_hand("adv-rules-new-key", 1, RAISED, [1, 3], 3, greedy, prev_head=str(one.rec.head), server=OTHER_KEY)
    return Case(
        "folder-rules-raised-under-a-new-key",
        "hands 1 and 2 of one table, chained, hand 2 signed by another key than hand 1 and under a higher "
        "commission; verified with no pinned key, each under its own header's: hand 2's signer starts from hand 1's "
        "head, so it vouches for hand 1 as the hand before, whose rules were the table's (§14 rules, D38)",
        {"failed": {"hand-2.json": "rules"}, "findings": [], "unpinned": True},
        folder={"hand-1.json": one.rec.transcript(), "hand-2.json": two.rec.transcript()},
    )


def button_kept() -> list[Case]:
    """Hand 2 dealt by hand 1's dealer again (seat 1), so seat 3 plays first twice: the
    house chose who plays first (D3 moves the button to seat 3)."""
    one, two = _hands("adv-dealer", TABLE, dealer=1)
    items = [*one.evidence[1], *two.evidence[1]]  # seat 1's client kept both hands' items
    return [
        Case(
            "dealer-not-moved",
            "hand 2 of a table dealt by seat 1, hand 1's dealer, again (seat 3 plays first in both); seat 1's "
            "evidence holds hand 1's signed header: the button moves to the next seat each hand, seat 3 "
            "(§15 rule 3, D3)",
            failing("evidence", 0),
            two.rec.transcript(),
            items,
        ),
        Case(
            "dealer-not-moved-seen-from-the-hand-before",
            "hand 1 of the same table, with seat 1's evidence of hands 1 and 2: hand 2's signed header, dealt by "
            "seat 1 again, is the server's word that it did not move the button (§15 rule 3, D3)",
            failing("evidence", 0),
            one.rec.transcript(),
            items,
        ),
        Case(
            "folder-dealer-not-moved",
            "hands 1 and 2 of one table, chained, both dealt by seat 1: hand 2's dealer should be seat 3, the next "
            "seat of its header after hand 1's dealer (§14 dealer, D3)",
            {"failed": {"hand-2.json": "dealer"}, "findings": []},
            folder={"hand-1.json": one.rec.transcript(), "hand-2.json": two.rec.transcript()},
        ),
    ]
