"""A plain, deterministic playing strategy (used by the service's bots and by the
test-vector generator): keep what lowers the best-arrangement points, take the open
card when it helps, discard the costliest loose card, declare when valid, first-drop
a hopeless hand."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from verifier.arrange import best_arrangement
from verifier.cards import FACES, card_of_id, card_value
from verifier.hand import Action, Declare, Discard, DrawClosed, DrawOpen, Drop, HandState, Phase

HOPELESS = 80  # first-drop (20) a dealt hand whose best count is at least this


@lru_cache(maxsize=16384)
def _count(faces: tuple[int, ...], wild_rank: int | None) -> tuple[int, bool]:
    """(points, valid declare) of a hand given as sorted face indices: the count
    depends on the faces only, and a seat's hands repeat from one decision to the
    next (the kept 13 of one turn are the 13 held at the next)."""
    arr = best_arrangement([FACES[f] for f in faces], wild_rank)
    return arr.points, arr.valid_declare


def _faces(cards: list[int], decks: int) -> tuple[int, ...]:
    return tuple(sorted(card_of_id(c, decks).index for c in cards))


def points_of(cards: list[int], state: HandState) -> int:
    return _count(_faces(cards, state.rules.decks), state.wild_rank)[0]


@dataclass(frozen=True)
class Choice:
    card: int
    points: int
    valid: bool


def best_discard(cards: list[int], state: HandState) -> Choice:
    """The discard leaving the fewest points; ties go to the costlier card, then the
    higher id, so the choice is deterministic."""
    decks = state.rules.decks
    wild = state.wild_rank
    best: tuple[int, int, int] | None = None
    chosen = Choice(cards[0], 10**6, False)
    for c in sorted(set(cards), reverse=True):
        kept = list(cards)
        kept.remove(c)
        points, valid = _count(_faces(kept, decks), wild)
        if valid:
            return Choice(c, 0, True)
        key = (points, -card_value(card_of_id(c, decks), wild), -c)
        if best is None or key < best:
            best, chosen = key, Choice(c, points, False)
    return chosen


def choose(state: HandState, seat: int, *, allow_drop: bool = True) -> Action:
    """The strategy's move for ``seat``, which must be on turn."""
    me = state.seat(seat)
    cards = list(me.cards)
    if state.phase is Phase.DRAW:
        now = points_of(cards, state)
        if allow_drop and not me.drawn_any and now >= HOPELESS:
            return Drop(seat)
        if state.open:
            with_open = best_discard(cards + [state.open[-1]], state)
            if with_open.valid or with_open.points < now:
                return DrawOpen(seat)
        return DrawClosed(seat)
    pick = best_discard(cards, state)
    return Declare(seat, pick.card) if pick.valid else Discard(seat, pick.card)
