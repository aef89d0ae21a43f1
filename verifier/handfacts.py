"""What the room audit reads from one verified transcript (docs/audit.md).

:func:`hand_facts` reduces a transcript that passed every check of §14 to the few
facts the audit counts: who sat where, whose seed counted (each seat's reveal
status), what each seat was dealt and how good it was, each seat's clock moves,
the void and its reason, the winner, the points and the tokens.  It trusts what
the checks proved (the fields are typed, the deal is the deck's) and reads nothing
else; it never raises on a transcript that verified.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from verifier.arrange import best_arrangement
from verifier.cards import card_of_id, decks_for_seats, wild_rank_of
from verifier.hand import HAND_SIZE, deal_round_robin, first_after, rotation_from

REVEALED: Final = "revealed"
NO_COMMIT: Final = "no_commit"  # dealt in with the empty seed (D21)
WITHHELD: Final = "withheld"  # left out of the deal, charged a first drop (D29)
LEFT_OUT: Final = frozenset({NO_COMMIT, WITHHELD})


@dataclass(frozen=True)
class SeatFacts:
    """One seat of one hand.  ``status`` is None when the log ended before the
    reveals; ``deal_points`` is the best-arrangement count (D13) of the 13 cards the
    deck gives this seat with the hand's wild card, None when the deck is not
    published or the seat is not dealt in."""

    seat: int
    player_id: str
    player_key: str
    status: str | None
    dealt: bool
    deal_points: int | None
    turns: int  # turns begun (``turn`` events)
    timeouts: int  # clock moves (``timeout`` actions)
    own_moves: int  # actions of the seat's own (every action but ``timeout``)
    clock_drop: bool  # removed by the clock (D16)
    won: bool
    points: int | None
    delta: int | None  # HT, from the settlement

    @property
    def left_out(self) -> bool:
        """Withheld (left out of the deal) or no_commit (dealt in with no seed of its own)."""
        return self.status in LEFT_OUT

    @property
    def in_play(self) -> bool:
        """Dealt in, and not every turn of it played by the clock."""
        return self.dealt and not (self.timeouts > 0 and self.own_moves == 0)


@dataclass(frozen=True)
class HandFacts:
    path: str
    table_id: str
    hand_no: int
    seats: tuple[SeatFacts, ...]
    reached_reveals: bool  # the log holds the reveals (record 2): the server knew the deck
    #: the log holds the commitments (record 1): the reveal window opened, and the server
    #: may have known the deck before it wrote record 2 (every seed it waited for in)
    reached_window: bool
    void: str | None  # the void record's reason
    winner: int | None  # a seat; None for a void hand

    @property
    def dealt(self) -> list[SeatFacts]:
        return [s for s in self.seats if s.dealt]

    @property
    def in_play(self) -> int:
        return sum(1 for s in self.seats if s.in_play)

    @property
    def void_after_reveals(self) -> bool:
        return self.void is not None and self.reached_reveals

    @property
    def void_from_window(self) -> bool:
        """Voided once the reveal window had opened (in it, or after the reveals): a
        server that had every seed it waited for knew the deck, record 2 or not."""
        return self.void is not None and self.reached_window

    def others_left_out(self, seat: int) -> bool:
        return any(s.left_out for s in self.seats if s.seat != seat)


def deal_of(
    seats: Sequence[int], dealer: int, deck: Sequence[int], decks: int
) -> tuple[dict[int, list[int]], int | None]:
    """The cards each dealt seat gets from ``deck`` and the wild indicator
    (docs/fairness.md §8: round-robin from the next dealt seat after the dealer)."""
    order = sorted(seats)
    if not order or len(deck) < HAND_SIZE * len(order) + 1:
        return {}, None
    hands, pos = deal_round_robin(rotation_from(order, first_after(order, dealer)), deck)
    return hands, deck[pos]


def deal_points(cards: Sequence[int], indicator: int, decks: int) -> int:
    wild = wild_rank_of(card_of_id(indicator, decks))
    return best_arrangement([card_of_id(c, decks) for c in cards], wild).points


def _records(log: Sequence[Mapping[str, Any]], kind: str) -> list[Mapping[str, Any]]:
    return [r for r in log if r.get("type") == kind]


def hand_facts(t: Mapping[str, Any], path: str = "") -> HandFacts:
    """The facts of a transcript that verified (every check of §14 passed)."""
    log: Sequence[Mapping[str, Any]] = t["log"]
    header = log[0]["header"]
    decks = decks_for_seats(int(header["rules"]["seats"]))
    reveals = _records(log, "reveals")
    status = {int(r["seat"]): str(r["status"]) for r in reveals[0]["reveals"]} if reveals else {}
    dealt = [int(s["seat"]) for s in header["seats"] if reveals and status.get(int(s["seat"])) != WITHHELD]
    cards, indicator = deal_of(dealt, int(header["dealer"]), t["deck"], decks)

    turns: dict[int, int] = {}
    timeouts: dict[int, int] = {}
    own: dict[int, int] = {}
    clock_drops: set[int] = set()
    for r in log:
        for e in r.get("events", []):
            if e["kind"] == "turn":
                turns[e["seat"]] = turns.get(e["seat"], 0) + 1
            elif e["kind"] == "drop" and e["data"].get("reason") == "clock":
                clock_drops.add(e["seat"])
        if r.get("type") == "action":
            seat = int(r["action"]["seat"])
            bucket = timeouts if r["action"]["kind"] == "timeout" else own
            bucket[seat] = bucket.get(seat, 0) + 1

    result = t.get("result")
    voids = _records(log, "void")
    winner = int(result["winner"]) if result else None
    points = result["points"] if result else {}
    deltas = result["settlement"]["deltas"] if result else {}
    seats = []
    for s in header["seats"]:
        n = int(s["seat"])
        seats.append(
            SeatFacts(
                seat=n,
                player_id=str(s["player_id"]),
                player_key=str(s.get("player_key", "")),  # a v1 header lists no keys
                status=status.get(n),
                dealt=n in dealt,
                deal_points=None if indicator is None or n not in cards else deal_points(cards[n], indicator, decks),
                turns=turns.get(n, 0),
                timeouts=timeouts.get(n, 0),
                own_moves=own.get(n, 0),
                clock_drop=n in clock_drops,
                won=winner == n,
                points=int(points[str(n)]) if str(n) in points else None,
                delta=int(deltas[str(n)]) if str(n) in deltas else None,
            )
        )
    return HandFacts(
        path=path,
        table_id=str(t["table_id"]),
        hand_no=int(t["hand_no"]),
        seats=tuple(seats),
        reached_reveals=bool(reveals),
        reached_window=bool(reveals) or bool(_records(log, "commitments")),
        void=str(voids[0]["reason"]) if voids else None,
        winner=winner,
    )
