"""Cards, faces, physical card ids and decks (RULES.md D1, D5; FAIRNESS.md card ids).

A :class:`Card` is a *face* — ``7H``, ``TS``, ``JK`` — with a compact text form.
Two decks hold two physical ``7H`` cards; transcripts tell them apart by *card id*:
``id = deck*52 + suit*13 + rank`` (suits S H D C, ranks A 2 … 10 J Q K as 0 … 12),
printed jokers following at ``decks*52 + k``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from verifier.errors import RuleError

SUITS: Final = "SHDC"
RANKS: Final = "A23456789TJQK"
JOKER_RANK: Final = -1
JOKER_SUIT: Final = -1


@dataclass(frozen=True, slots=True, order=True)
class Card:
    """A card face.  ``rank`` 0…12 (A…K) and ``suit`` 0…3 (S H D C); a printed joker
    has both set to -1."""

    suit: int
    rank: int

    def __post_init__(self) -> None:
        if self.suit == JOKER_SUIT and self.rank == JOKER_RANK:
            return
        if not (0 <= self.suit < 4 and 0 <= self.rank < 13):
            raise ValueError(f"no such card: suit={self.suit} rank={self.rank}")

    @property
    def is_joker(self) -> bool:
        return self.rank == JOKER_RANK

    @property
    def index(self) -> int:
        """0…51 for a suited face (``suit*13 + rank``), 52 for a printed joker."""
        return 52 if self.rank == JOKER_RANK else self.suit * 13 + self.rank

    @classmethod
    def parse(cls, text: str) -> Card:
        """Parse ``7H``, ``TS``, ``10S`` (accepted on input), ``JK``; case-insensitive."""
        t = text.strip().upper()
        if t == "JK":
            return JOKER
        if t.startswith("10"):
            t = "T" + t[2:]
        if len(t) != 2 or t[0] not in RANKS or t[1] not in SUITS:
            raise RuleError("unknown_card", f"not a card: {text!r}", rule="D1")
        return cls(SUITS.index(t[1]), RANKS.index(t[0]))

    def __str__(self) -> str:
        if self.is_joker:
            return "JK"
        return RANKS[self.rank] + SUITS[self.suit]

    def __repr__(self) -> str:
        return f"Card.parse({str(self)!r})"


JOKER: Final = Card(JOKER_SUIT, JOKER_RANK)
FACES: Final[tuple[Card, ...]] = tuple(Card(s, r) for s in range(4) for r in range(13)) + (JOKER,)


def decks_for_seats(seats: int) -> int:
    """D1: 4- and 6-seat tables use 2 decks (+2 jokers), 8-seat tables 3 decks (+3 jokers)."""
    if seats in (4, 6):
        return 2
    if seats == 8:
        return 3
    raise RuleError("bad_table", f"a table has 4, 6 or 8 seats, not {seats}", rule="D1")


def deck_size(decks: int) -> int:
    """52 cards and one printed joker per deck (D1): 106 or 159."""
    return decks * 53


def card_of_id(card_id: int, decks: int) -> Card:
    """The face of a physical card id (FAIRNESS.md card ids)."""
    if not 0 <= card_id < deck_size(decks):
        raise RuleError("unknown_card", f"no card id {card_id} in a {decks}-deck pack", rule="D1")
    if card_id >= decks * 52:
        return JOKER
    within = card_id % 52
    return FACES[within]


@lru_cache(maxsize=8)
def face_texts(decks: int) -> tuple[str, ...]:
    """The face of each card id of the pack for ``decks`` decks, as text (``7H``, ``JK``),
    indexed by id: ``face_texts(d)[c] == str(card_of_id(c, d))``."""
    return tuple(str(card_of_id(c, decks)) for c in range(deck_size(decks)))


def card_id(face: Card, deck: int, decks: int) -> int:
    """The id of copy ``deck`` (0-based) of ``face``; for a joker ``deck`` is its ordinal ``k``."""
    if not 0 <= deck < decks:
        raise ValueError(f"copy {deck} out of range for {decks} decks")
    if face.is_joker:
        return decks * 52 + deck
    return deck * 52 + face.index


def card_value(card: Card, wild_rank: int | None) -> int:
    """Points a card costs when it counts (rules table): A K Q J 10 → 10, 2–9 → pip,
    printed jokers and the hand's wild rank → 0."""
    if card.is_joker or card.rank == wild_rank:
        return 0
    if card.rank == 0 or card.rank >= 9:
        return 10
    return card.rank + 1


def is_wild(card: Card, wild_rank: int | None) -> bool:
    """D5: printed jokers are always wild; the indicator's rank is wild in every suit,
    unless the indicator is itself a printed joker (``wild_rank`` is None)."""
    return card.is_joker or card.rank == wild_rank


def wild_rank_of(indicator: Card) -> int | None:
    """D5: the rank made wild by the indicator, or None when the indicator is a joker."""
    return None if indicator.is_joker else indicator.rank
