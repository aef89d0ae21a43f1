"""Hypothesis strategies shared by the tests: hands from a real pack."""

from __future__ import annotations

from hypothesis import strategies as st

from verifier.cards import JOKER, Card, card_of_id, wild_rank_of


@st.composite
def random_hand(draw: st.DrawFn, decks: int = 2) -> tuple[list[Card], int | None]:
    """13 distinct physical cards and a wild indicator, as a deal would give."""
    ids = draw(st.lists(st.integers(0, decks * 53 - 1), min_size=14, max_size=14, unique=True))
    return [card_of_id(i, decks) for i in ids[:13]], wild_rank_of(card_of_id(ids[13], decks))


@st.composite
def structured_hand(draw: st.DrawFn) -> tuple[list[Card], int | None]:
    """Runs and sets with wild cards mixed in, then a few random cards: the hands
    where the search has real work to do."""
    wild = draw(st.one_of(st.none(), st.integers(0, 12)))
    cards: list[Card] = []
    while len(cards) < 13:
        room = 13 - len(cards)
        if room < 3:
            cards += [draw(st.sampled_from(FACES_AND_JOKER)) for _ in range(room)]
            break
        if draw(st.booleans()):
            length = draw(st.integers(3, min(room, 7)))
            suit = draw(st.integers(0, 3))
            start = draw(st.integers(1, 15 - length))
            cards += [Card(suit, (p - 1) % 13) for p in range(start, start + length)]
        else:
            size = draw(st.integers(3, min(room, 4)))
            rank = draw(st.integers(0, 12))
            suits = draw(st.permutations(range(4)))[:size]
            cards += [Card(s, rank) for s in suits]
    for _ in range(draw(st.integers(0, 4))):
        cards[draw(st.integers(0, 12))] = draw(st.sampled_from(FACES_AND_JOKER))
    order = draw(st.permutations(range(13)))
    return [cards[i] for i in order], wild


@st.composite
def crowded_hand(draw: st.DrawFn) -> tuple[list[Card], int | None]:
    """The shapes the search finds hardest (bench/score_worst.py): one or two suits
    crowded over a few ranks, with copies from a two- or three-deck pack, cards of
    the wild rank and printed jokers among them, and maybe a stray card."""
    decks = draw(st.sampled_from((2, 3)))
    suits = draw(st.lists(st.integers(0, 3), min_size=1, max_size=2, unique=True))
    lo = draw(st.integers(0, 8))
    hi = draw(st.integers(lo + 3, 12))
    wild = draw(st.one_of(st.none(), st.integers(lo, hi), st.integers(0, 12)))
    cards = [JOKER] * draw(st.integers(0, decks if wild is None else min(decks, 2)))
    faces = [Card(s, r) for s in suits for r in range(lo, hi + 1)]
    strays = draw(st.integers(0, 2))
    while len(cards) < 13:
        pool = FACES_AND_JOKER[:52] if len(cards) >= 13 - strays else faces
        free = [f for f in pool if cards.count(f) < decks] or [
            f for f in FACES_AND_JOKER[:52] if cards.count(f) < decks
        ]
        cards.append(draw(st.sampled_from(free)))
    order = draw(st.permutations(range(13)))
    return [cards[i] for i in order], wild


FACES_AND_JOKER = [Card(s, r) for s in range(4) for r in range(13)] + [JOKER]
