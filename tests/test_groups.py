"""Worked examples for the group rules D6–D10."""

import pytest

from verifier.cards import Card
from verifier.groups import GroupKind, classify

NO_WILD = Card.parse("2C").rank  # an indicator whose rank is absent from the groups below


def kind(texts: str, wild: str = "2C") -> GroupKind | None:
    indicator = Card.parse(wild)
    return classify([Card.parse(t) for t in texts.split()], None if indicator.is_joker else indicator.rank)


def test_d9_k_a_2_is_not_a_sequence() -> None:
    assert kind("KS AS 2S", "5H") is None
    assert kind("QS KS AS 2S", "5H") is None


def test_d9_ace_low_and_high() -> None:
    assert kind("AS 2S 3S", "5H") is GroupKind.PURE
    assert kind("QH KH AH", "5H") is GroupKind.PURE
    assert kind("AH 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH", "JK") is GroupKind.PURE


def test_d6_wild_rank_as_itself_keeps_a_run_pure() -> None:
    assert kind("6H 7H 8H", "7S") is GroupKind.PURE


def test_d7_wild_standing_in_makes_it_impure() -> None:
    assert kind("6H 7S 8H", "7D") is GroupKind.IMPURE
    assert kind("6H JK 8H") is GroupKind.IMPURE
    assert kind("6H JK 8H 9H JK") is GroupKind.IMPURE


def test_d6_printed_joker_never_pure() -> None:
    # A printed joker standing for 7H is still a printed joker.
    assert kind("6H JK 8H") is GroupKind.IMPURE


def test_d10_identical_cards_never_share_a_group() -> None:
    assert kind("7H 7H 7S") is None
    assert kind("5H 5H 6H 7H") is None
    assert kind("5H 6H 6H 7H") is None


def test_d10_two_printed_jokers_share_a_group() -> None:
    assert kind("9S 9D JK JK") is GroupKind.SET
    assert kind("5H JK JK") is GroupKind.IMPURE


def test_d10_wild_rank_cards_used_as_jokers_are_interchangeable() -> None:
    # Two 7H used as wild cards (7 is wild) stand in for other cards in one group.
    assert kind("4D 7H 7H", "7C") is GroupKind.IMPURE


def test_d7_three_wild_cards_alone_are_an_impure_sequence() -> None:
    assert kind("JK JK 7H", "7C") is GroupKind.IMPURE
    assert kind("7S 7H 7D", "7C") is GroupKind.IMPURE


def test_d8_sets() -> None:
    assert kind("9S 9H 9D") is GroupKind.SET
    assert kind("9S 9H 9D 9C") is GroupKind.SET
    assert kind("9S 9H JK") is GroupKind.SET
    assert kind("9S 9H 9D 9C JK") is None  # at most 4
    assert kind("9S 9H 8D") is None


def test_too_small() -> None:
    assert kind("AS 2S") is None
    assert kind("JK JK") is None


@pytest.mark.parametrize("texts", ["4H 5S 6H", "4H 5H 7H", "4H 6H 8H JK"])
def test_not_groups(texts: str) -> None:
    assert kind(texts) is None
