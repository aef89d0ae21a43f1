"""Settlement in integer HT (D18–D20)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from verifier.errors import RuleError
from verifier.settle import hold_amount, settle


def test_d19_commission_rounds_down() -> None:
    # Losers pay 37 and 86 points at 1 HT/point: pot 123; 2.5 % is 3.075 → 3.
    s = settle({0: 0, 1: 37, 2: 86}, 0, 1, 250)
    assert (s.pot, s.commission) == (123, 3)
    assert dict(s.deltas) == {0: 120, 1: -37, 2: -86}
    assert sum(s.deltas.values()) + s.commission == 0


def test_point_value_multiplies() -> None:
    s = settle({3: 80, 5: 0}, 5, 25, 1000)
    assert s.pot == 2000 and s.commission == 200 and s.deltas[5] == 1800 and s.deltas[3] == -2000


def test_d20_hold_is_the_most_a_hand_can_cost() -> None:
    assert hold_amount(25) == 130 * 25


@pytest.mark.parametrize(
    "points,winner,pv,bps",
    [
        ({0: 0, 1: 10}, 0, 1.5, 0),  # floats never (D18)
        ({0: 0, 1: 10}, 0, 1, 10_001),
        ({0: 0, 1: 131}, 0, 1, 0),
        ({0: 5, 1: 10}, 0, 1, 0),  # the winner scores 0
        ({0: 0, 1: 10}, 2, 1, 0),
        ({0: 0, 1: -1}, 0, 1, 0),
    ],
)
def test_bad_settlements_are_errors(points: dict[int, int], winner: int, pv: int, bps: int) -> None:
    with pytest.raises(RuleError):
        settle(points, winner, pv, bps)


@given(
    st.dictionaries(st.integers(0, 7), st.integers(0, 130), min_size=1, max_size=7),
    st.integers(1, 10**6),
    st.integers(0, 10_000),
)
def test_property_every_settlement_balances(losers: dict[int, int], pv: int, bps: int) -> None:
    points = {8: 0, **losers}
    s = settle(points, 8, pv, bps)
    assert sum(s.deltas.values()) + s.commission == 0
    assert 0 <= s.commission <= s.pot
    assert s.commission == s.pot * bps // 10_000
    assert all(d >= -130 * pv for d in s.deltas.values())
