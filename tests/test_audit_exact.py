"""verifier/exact.py: the room audit's exact tails, against brute-force enumeration."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest

from verifier.exact import Stratum, Tail, hypergeometric_tail, rank_sum_tail, tarone


def frac(t: Tail) -> Fraction:
    return Fraction(t.num, t.den)


@pytest.mark.parametrize("ns", [[2], [3], [2, 3], [4, 4, 2], [8, 2, 5, 3], [3] * 7])
def test_rank_sum_tail_is_the_uniform_rank_sum_law(ns: list[int]) -> None:
    outcomes = list(itertools.product(*(range(n) for n in ns)))
    total = sum(n - 1 for n in ns)
    for observed in range(-1, total + 2):
        brute = Fraction(sum(1 for o in outcomes if sum(o) >= observed), len(outcomes))
        t = rank_sum_tail(ns, observed)
        assert frac(t) == brute, (ns, observed)
        assert Fraction(t.min_num, t.den) == Fraction(1, math.prod(ns))


def test_rank_sum_tail_is_conservative_with_ties() -> None:
    """Counts drawn i.i.d. from a law with many ties (what a fair deal of equal hands
    gives: exchangeable): counting only strict wins, P(p ≤ x) ≤ x for every x."""
    values = {0: Fraction(1, 2), 1: Fraction(1, 3), 2: Fraction(1, 6)}
    seats = [3, 2, 3]  # three hands
    hands = [list(itertools.product(values, repeat=n)) for n in seats]
    law: dict[Fraction, Fraction] = {}
    for deal in itertools.product(*hands):
        prob = math.prod((math.prod(values[v] for v in d) for d in deal), start=Fraction(1))
        beaten = sum(sum(1 for other in d[1:] if d[0] < other) for d in deal)
        p = frac(rank_sum_tail(seats, beaten))
        law[p] = law.get(p, Fraction(0)) + prob
    assert sum(law.values()) == 1
    for x in sorted(law):
        assert sum(q for p, q in law.items() if p <= x) <= x


def brute_hypergeometric(strata: list[Stratum], observed: int) -> Fraction:
    """Every way to choose each stratum's drawn items, equally likely."""
    per = []
    for s in strata:
        items = [1] * s.marked + [0] * (s.total - s.marked)
        per.append([sum(items[i] for i in c) for c in itertools.combinations(range(s.total), s.drawn)])
    outcomes = list(itertools.product(*per))
    return Fraction(sum(1 for o in outcomes if sum(o) >= observed), len(outcomes))


def test_fisher_one_sided_lady_tasting_tea() -> None:
    tea = Stratum(total=8, marked=4, drawn=4)
    assert frac(hypergeometric_tail([tea], 4)) == Fraction(1, 70)
    assert frac(hypergeometric_tail([tea], 3)) == Fraction(17, 70)
    assert frac(hypergeometric_tail([tea], 0)) == 1
    assert Fraction(hypergeometric_tail([tea], 2).min_num, 70) == Fraction(1, 70)


@pytest.mark.parametrize(
    "strata",
    [
        [Stratum(6, 2, 3)],
        [Stratum(6, 2, 3), Stratum(5, 4, 2)],
        [Stratum(4, 1, 1), Stratum(7, 3, 5), Stratum(3, 3, 2)],  # the last is not informative
        [Stratum(9, 5, 6), Stratum(2, 1, 1)],
    ],
)
def test_stratified_tail_is_the_convolution_of_hypergeometrics(strata: list[Stratum]) -> None:
    top = sum(min(s.drawn, s.marked) for s in strata)
    for observed in range(top + 2):
        assert frac(hypergeometric_tail(strata, observed)) == brute_hypergeometric(strata, observed), observed


def test_informative() -> None:
    assert Stratum(10, 3, 4).informative
    assert not Stratum(10, 0, 4).informative  # nobody won
    assert not Stratum(10, 10, 4).informative  # every hand won
    assert not Stratum(10, 3, 10).informative  # every hand in the tested group
    assert not Stratum(10, 3, 0).informative
    with pytest.raises(ValueError):
        Stratum(3, 4, 1)


def test_tiny_tails_keep_their_logarithm() -> None:
    t = rank_sum_tail([4] * 600, 3 * 600)  # every hand the best of four: 4^-600
    assert t.value == 0.0 and t.num == 1
    assert t.log10 == pytest.approx(-600 * math.log10(4))


def test_tarone_counts_only_tests_that_can_reach_the_threshold() -> None:
    a = Fraction(1, 1000)
    assert tarone([], a) == 1
    assert tarone([Fraction(1, 2)] * 50, a) == 1  # none can reach 0.001: K = 1
    assert tarone([Fraction(1, 10**9)] * 3 + [Fraction(1, 3)] * 100, a) == 3
    assert tarone([Fraction(1, 10**6)] * 5, a) == 5
    # K = 1, 2, 3: all five can reach a/K (3e-4 ≤ a/3); K = 4: only two can reach 2.5e-4
    mixed = [Fraction(1, 10**6)] * 2 + [Fraction(3, 10**4)] * 3
    assert tarone(mixed, a) == 4
