"""Exact tail probabilities for the room audit (docs/audit.md), in integers.

Every distribution here is a product of small polynomials with integer
coefficients, so a tail probability is one fraction ``num / den`` of Python
integers — no normal approximation and no rounding until the figure is shown
(:attr:`Tail.value` is the correctly rounded float, :attr:`Tail.log10` its
logarithm, which stays finite when the float underflows to 0).

- :func:`rank_sum_tail` — the sum of a seat's ranks among the hands dealt with it,
  each rank uniform on 0 … n − 1 when the deck is fair;
- :func:`hypergeometric_tail` — the sum over strata of hypergeometric counts
  (Fisher's exact test is one stratum; several strata make the exact conditional
  test of a stratified 2×2 table);
- :func:`tarone` — Bonferroni over the tests that can reach the threshold at all
  (Tarone 1990): a test whose smallest possible p-value is above the threshold
  cannot be flagged, so it does not dilute the others.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class Tail:
    """``P(T ≥ observed)`` and the smallest value it could have taken (``P(T = max)``),
    both as exact fractions over ``den``."""

    num: int
    min_num: int
    den: int

    @property
    def value(self) -> float:
        return self.num / self.den

    @property
    def min_value(self) -> float:
        return self.min_num / self.den

    @property
    def log10(self) -> float:
        return math.log10(self.num) - math.log10(self.den)

    def at_most(self, threshold: Fraction) -> bool:
        return Fraction(self.num, self.den) <= threshold

    def min_at_most(self, threshold: Fraction) -> bool:
        return Fraction(self.min_num, self.den) <= threshold


def _times(poly: list[int], factor: Sequence[int]) -> list[int]:
    out = [0] * (len(poly) + len(factor) - 1)
    for i, a in enumerate(poly):
        if a:
            for j, b in enumerate(factor):
                if b:
                    out[i + j] += a * b
    return out


def _tail(coefficients: list[int], observed: int) -> Tail:
    """The upper tail of the law whose ``P(T = k)`` is ``coefficients[k] / sum``."""
    den = sum(coefficients)
    top = max(k for k, c in enumerate(coefficients) if c)
    return Tail(sum(coefficients[max(0, observed) :]), coefficients[top], den)


def rank_sum_tail(ns: Sequence[int], observed: int) -> Tail:
    """``P(S ≥ observed)`` for ``S`` the sum, over hands with ``ns`` seats dealt in
    (each ≥ 2), of the number of other dealt seats a given seat beats strictly.

    With a fair deck the ``n`` dealt hands of a hand are exchangeable, so with ties
    broken at random the seat's rank — the number of others it beats — is uniform on
    0 … n − 1, independently from hand to hand; counting strict wins only, ties never
    count, so ``S`` is at most that rank sum and this tail, computed for uniform ranks,
    is an upper bound of the true one (a conservative p-value)."""
    if any(n < 2 for n in ns):
        raise ValueError("a hand in this test has at least two seats dealt in")
    poly = [1]
    for n in ns:
        # times (1 + x + … + x^(n−1)) = (1 − x^n) / (1 − x): a difference, then a running sum
        poly = poly + [0] * (n - 1)
        for k in range(len(poly) - 1, n - 1, -1):
            poly[k] -= poly[k - n]
        for k in range(1, len(poly)):
            poly[k] += poly[k - 1]
    return _tail(poly, observed)


@dataclass(frozen=True)
class Stratum:
    """One 2×2 table: ``total`` items, ``marked`` of them with the property counted
    (a win), ``drawn`` of them in the group tested (hands with a seat left out)."""

    total: int
    marked: int
    drawn: int

    def __post_init__(self) -> None:
        if not (0 <= self.marked <= self.total and 0 <= self.drawn <= self.total):
            raise ValueError(f"not a 2×2 table: {self}")

    @property
    def informative(self) -> bool:
        """Whether the count can take more than one value given the margins."""
        lo = max(0, self.drawn + self.marked - self.total)
        return min(self.drawn, self.marked) > lo

    def coefficients(self) -> tuple[int, list[int]]:
        """(lowest count, [C(marked, k)·C(total − marked, drawn − k) for k from it])."""
        lo = max(0, self.drawn + self.marked - self.total)
        hi = min(self.drawn, self.marked)
        return lo, [
            math.comb(self.marked, k) * math.comb(self.total - self.marked, self.drawn - k) for k in range(lo, hi + 1)
        ]


def hypergeometric_tail(strata: Sequence[Stratum], observed: int) -> Tail:
    """``P(T ≥ observed)`` for ``T`` the sum over the strata of the marked items among
    the drawn, each stratum's count hypergeometric given its margins (the exact
    conditional test of a stratified 2×2 table; one stratum is Fisher's one-sided exact
    test).  ``observed`` counts every stratum, informative or not."""
    shift = 0
    poly = [1]
    for s in strata:
        lo, coefficients = s.coefficients()
        shift += lo
        poly = _times(poly, coefficients)
    return _tail(poly, observed - shift)


def tarone(min_values: Sequence[Fraction], alpha: Fraction) -> int:
    """Tarone's K: the smallest K ≥ 1 such that at most K tests can reach ``alpha / K``
    (their smallest possible p-value is at most it).  Flagging a test when its p-value
    is at most ``alpha / K`` keeps the chance of any false flag at most ``alpha``."""
    k = 1
    while sum(1 for m in min_values if m <= alpha / k) > k:
        k += 1
    return k
