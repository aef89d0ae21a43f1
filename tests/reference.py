"""A slow, independent reference for best-arrangement scoring (tests only).

It shares nothing with :mod:`verifier.arrange` but the group validator: it tries
every subset of the hand as a group (2**13 subsets, each checked with
:func:`verifier.groups.classify`) and searches all partitions into disjoint valid
groups, memoised on the set of cards left.  (b) and (c) come straight from D13.
"""

from __future__ import annotations

from functools import cache

from verifier.cards import Card, card_value
from verifier.groups import GroupKind, classify


def reference_points(hand: list[Card], wild_rank: int | None) -> tuple[int, bool]:
    """(minimum points under D13, valid declare under D11) by exhaustive search."""
    n = len(hand)
    values = [card_value(c, wild_rank) for c in hand]
    total = sum(values)
    kinds: dict[int, GroupKind] = {}
    for m in range(1, 1 << n):
        if m.bit_count() >= 3:
            k = classify([hand[i] for i in range(n) if m >> i & 1], wild_rank)
            if k is not None:
                kinds[m] = k
    by_low: dict[int, list[int]] = {}
    for m in kinds:
        by_low.setdefault((m & -m).bit_length() - 1, []).append(m)

    def val(m: int) -> int:
        return sum(values[i] for i in range(n) if m >> i & 1)

    # (b): the most valuable pure run anywhere in the hand.
    pure_vals = [val(m) for m, k in kinds.items() if k is GroupKind.PURE]
    best = total
    if pure_vals:
        best = min(best, total - max(pure_vals))

    NEG = -(10**6)

    @cache
    def grouped(mask: int, nseq: int, pure: bool, loose_count: int) -> tuple[int, int]:
        """(max grouped value, -min loose count) achievable with the requirements."""
        if mask == 0:
            return (0, -loose_count) if nseq >= 2 and pure else (NEG, 0)
        b = (mask & -mask).bit_length() - 1
        out = grouped(mask & ~(1 << b), nseq, pure, loose_count + 1)
        for m in by_low.get(b, ()):
            if m & ~mask:
                continue
            k = kinds[m]
            r = grouped(mask & ~m, min(nseq + k.is_sequence, 2), pure or k is GroupKind.PURE, loose_count)
            if r[0] > NEG:
                r = (r[0] + val(m), r[1])
                out = max(out, r)
        return out

    g, neg_loose = grouped((1 << n) - 1, 0, False, 0)
    valid = g > NEG and g == total and neg_loose == 0
    if g > NEG:
        best = min(best, total - g)
    return best, valid
