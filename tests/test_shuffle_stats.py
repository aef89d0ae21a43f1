"""A small version of bench/shuffle_stats.py: 20,000 decks of 106 cards and 10,000
of 159 through the real derivation, with fixed seeds (reproducible, never flaky)."""

from __future__ import annotations

import pytest

from bench.shuffle_stats import run
from bench.stats import chi2_sf, hypergeometric


@pytest.mark.parametrize(
    "x,df,p",
    [
        (3.841458820694124, 1, 0.05),
        (6.634896601021214, 1, 0.01),
        (18.307038053275146, 10, 0.05),
        (124.34211340400407, 100, 0.05),
        (0.0, 5, 1.0),
    ],
)
def test_chi2_survival_function_matches_tables(x: float, df: int, p: float) -> None:
    assert chi2_sf(x, df) == pytest.approx(p, abs=1e-9)


def test_hypergeometric_sums_to_one() -> None:
    probs = hypergeometric(106, 2, 13)
    assert sum(probs) == pytest.approx(1.0) and len(probs) == 3
    assert probs[0] == pytest.approx((93 * 92) / (106 * 105))


@pytest.mark.parametrize("pack,decks", [(106, 20_000), (159, 10_000)])
def test_shuffles_pass_chi_square_at_99_percent(pack: int, decks: int) -> None:
    r = run(pack, decks, workers=1, base=b"test-shuffle-stats/")
    assert r["decks"] == decks
    assert r["p_card_position"] >= 0.01, r
    assert r["p_jokers"] >= 0.01, r


def test_the_statistic_sees_a_biased_shuffle() -> None:
    """The same test on a broken derivation (first card never moves) must fail."""
    from bench.stats import card_position_chi2

    pack, decks = 106, 2_000
    table = [[0] * pack for _ in range(pack)]
    for i in range(decks):
        # A rotation by i: uniform positions overall, but the fixed card 0 stays on top.
        order = [0] + [1 + (k + i) % (pack - 1) for k in range(pack - 1)]
        for pos, card in enumerate(order):
            table[card][pos] += 1
    assert card_position_chi2(table, decks)[2] < 0.01
