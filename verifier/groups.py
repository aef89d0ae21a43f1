"""Groups: pure and impure sequences and sets (RULES.md D6–D10).

:func:`classify` is the one validity check for a group of cards; the
best-arrangement search in :mod:`verifier.arrange` builds only groups this function
accepts, and the tests check every group the search returns against it.

Positions: a sequence lives on positions 1…14 — A=1, 2=2, …, K=13 and A again at 14
(ace low or high, D9).  A sequence is a window of at most 13 positions, so it can
never hold an ace at both ends: K-A-2 and A…K-A are rejected.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from verifier.cards import Card, is_wild


class GroupKind(StrEnum):
    PURE = "pure"  # D6: a sequence with no card standing in for another
    IMPURE = "impure"  # D7: a sequence using wild cards, or 3+ wild cards alone
    SET = "set"  # D8: 3 or 4 cards of one rank, different suits

    @property
    def is_sequence(self) -> bool:
        return self is not GroupKind.SET


MAX_RUN = 13  # positions in a sequence window: A..K or 2..A, never both aces (D9)


def _positions(ranks: Sequence[int], ace_high: bool) -> list[int]:
    return sorted(14 if (r == 0 and ace_high) else r + 1 for r in ranks)


def _is_consecutive(ranks: Sequence[int]) -> bool:
    """Distinct ranks forming one run, ace low or ace high (D9)."""
    if len(set(ranks)) != len(ranks):
        return False
    for ace_high in (False, True):
        pos = _positions(ranks, ace_high)
        if pos[-1] - pos[0] + 1 == len(pos):
            return True
        if 0 not in ranks:
            break
    return False


def _fits_run(ranks: Sequence[int], length: int) -> bool:
    """Distinct natural ranks that fit, with wild cards filling the rest, in one
    window of ``length`` positions (D7, D9)."""
    if len(set(ranks)) != len(ranks) or length > MAX_RUN:
        return False
    for ace_high in (False, True):
        pos = _positions(ranks, ace_high)
        if pos[-1] - pos[0] + 1 <= length:
            return True
        if 0 not in ranks:
            break
    return False


def classify(cards: Sequence[Card], wild_rank: int | None) -> GroupKind | None:
    """The strongest kind the cards form as one group, or None if they form none.

    PURE beats IMPURE beats SET: ``8D JK JK`` is an impure sequence (it is also a
    set, but a sequence counts for D11).  A wild-rank card may stand as itself in a
    pure sequence (D6); in impure sequences and sets a wild-rank card standing as
    itself is indistinguishable from one standing in for its own face, so it is
    treated as wild there.  Cards standing as themselves must all differ (D10).
    """
    n = len(cards)
    if n < 3:
        return None
    # D6: pure — no printed joker, one suit, consecutive; wild-rank cards as themselves.
    if not any(c.is_joker for c in cards) and len({c.suit for c in cards}) == 1:
        if _is_consecutive([c.rank for c in cards]):
            return GroupKind.PURE
    naturals = [c for c in cards if not is_wild(c, wild_rank)]
    # D7: three or more wild cards alone are an impure sequence.
    if not naturals:
        return GroupKind.IMPURE if n <= MAX_RUN else None
    # D7/D9/D10: naturals of one suit, distinct, fitting one window with wilds in the gaps.
    if len({c.suit for c in naturals}) == 1 and _fits_run([c.rank for c in naturals], n):
        return GroupKind.IMPURE
    # D8/D10: a set of 3 or 4, naturals of one rank and distinct suits.
    if n <= 4 and len({c.rank for c in naturals}) == 1:
        if len({c.suit for c in naturals}) == len(naturals):
            return GroupKind.SET
    return None
