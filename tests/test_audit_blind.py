"""The room audit's power and blind spots (audit h92), on small cheating rooms.

Where the audit holds: a house that grinds a quarter of its friend's hands (claims
one honest seat's reveal never arrived when that deals its friend a better hand) is
flagged on its friend (``deal_advantage``) in a room of two tables, and the honest
room of the same seeds is not.

Where it is blind (strict xfails: each asserts the flag an audit should raise, and
fails today): a house that, when its friend would lose the honest deck, claims that
every other seat's reveal never arrived (its friend is then the one seat dealt in and
wins at once, D29), or that stays silent on an opponent's winning declare and lets
the clock move for it — at every table of the room, so that no table stands out.
Neither touches a hand that ``deal_advantage`` or ``win_advantage`` reads (a hand
with one seat dealt in is in neither; a clock move is no left-out seat), and the
table tests compare tables that all cheat alike.  bench/audit_blind.py prints the
figures at larger sizes.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.audit_cheats import Cheat, TableSpec, friend_edge, play_table
from tests.audit_sim import Grinder
from verifier.audit import audit
from verifier.handfacts import HandFacts

FRIEND = "F"
# each table: the friend and three players, two of whom also sit at the other table
SEATS = (("F", "a", "b", "c"), ("F", "c", "d", "a"))


def room(hands: int, *, cheat: Cheat | None = None, grinder: Grinder | None = None) -> list[HandFacts]:
    facts: list[HandFacts] = []
    for i, players in enumerate(SEATS):
        spec = TableSpec(f"t{i}", players, cheat=cheat, grinder=grinder)
        facts += play_table(spec, 9200 + i, hands).facts  # every transcript verified
    return facts


def flagged(report: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((t["test"], t.get("player") or t["table"]) for t in report["tests"] if t["flagged"])


@pytest.fixture(scope="module")
def honest() -> list[HandFacts]:
    return room(120)


def test_the_honest_room_is_not_flagged(honest: list[HandFacts]) -> None:
    report = audit(honest)
    assert report["tests_counted"] >= 1 and flagged(report) == []


def test_a_house_grinding_a_quarter_of_its_friends_hands_is_flagged_on_its_friend(honest: list[HandFacts]) -> None:
    facts = room(120, grinder=Grinder(FRIEND, rate=0.25))
    report = audit(facts)
    assert ("deal_advantage", FRIEND) in flagged(report)
    assert all(subject in (FRIEND, "t0", "t1") for _, subject in flagged(report))


@pytest.mark.xfail(
    strict=True,
    reason="blind spot: walkovers (every other seat claimed withheld, D29) leave one seat dealt in, which no "
    "player test reads; at every table alike, no table test sees them",
)
def test_walkovers_for_a_friend_at_every_table_are_flagged(honest: list[HandFacts]) -> None:
    facts = room(120, cheat=Cheat(FRIEND, "walkover", rate=0.15))
    gained = friend_edge(facts, FRIEND)["ht_per_hand"] - friend_edge(honest, FRIEND)["ht_per_hand"]
    assert gained > 15  # HT a hand at 10 HT a point (measured: +21.5, 15.6 -> 37.1): the edge is real
    assert flagged(audit(facts)) != []


@pytest.mark.xfail(
    strict=True,
    reason="blind spot: a silenced winning declare is a clock move, tested only table against table",
)
def test_silenced_declares_for_a_friend_at_every_table_are_flagged(honest: list[HandFacts]) -> None:
    facts = room(120, cheat=Cheat(FRIEND, "clock", rate=1.0))
    gained = friend_edge(facts, FRIEND)["ht_per_hand"] - friend_edge(honest, FRIEND)["ht_per_hand"]
    assert gained > 100  # measured: +157 HT a hand (15.6 -> 172.3), win rate 0.32 -> 0.54
    assert flagged(audit(facts)) != []
