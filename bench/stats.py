"""Chi-square tests for the shuffle statistics (standard library only)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def chi2_sf(x: float, df: int) -> float:
    """P(X ≥ x) for X ~ χ²(df): the regularized upper incomplete gamma Q(df/2, x/2),
    by its series or its continued fraction (Numerical Recipes, gammq)."""
    if x <= 0:
        return 1.0
    a, z = df / 2.0, x / 2.0
    log_front = -z + a * math.log(z) - math.lgamma(a)
    if z < a + 1:
        term = total = 1.0 / a
        n = a
        for _ in range(100_000):
            n += 1
            term *= z / n
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(log_front))
    tiny = 1e-300
    b = z + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, 100_000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            break
    return min(1.0, math.exp(log_front) * h)


def card_position_chi2(counts: Sequence[Sequence[int]], decks: int) -> tuple[float, int, float]:
    """χ² of a card × position count table from ``decks`` shuffles; each row and
    column sums to ``decks``, so df = (n − 1)²."""
    n = len(counts)
    expected = decks / n
    stat = sum((c - expected) ** 2 / expected for row in counts for c in row)
    df = (n - 1) ** 2
    return stat, df, chi2_sf(stat, df)


def hypergeometric(population: int, successes: int, draws: int) -> list[float]:
    total = math.comb(population, draws)
    return [
        math.comb(successes, k) * math.comb(population - successes, draws - k) / total
        for k in range(min(successes, draws) + 1)
    ]


def goodness_of_fit(observed: Sequence[int], probabilities: Sequence[float]) -> tuple[float, int, float]:
    """χ² goodness of fit, merging the tail categories whose expected count is < 5."""
    n = sum(observed)
    obs, exp = list(observed), [p * n for p in probabilities]
    while len(exp) > 2 and exp[-1] < 5:
        exp[-2] += exp.pop()
        obs[-2] += obs.pop()
    stat = sum((o - e) ** 2 / e for o, e in zip(obs, exp, strict=True))
    df = len(exp) - 1
    return stat, df, chi2_sf(stat, df)
