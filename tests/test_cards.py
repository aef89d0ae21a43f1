"""Cards, ids and decks (RULES.md D1, FAIRNESS.md card ids)."""

import pytest

from verifier.cards import JOKER, Card, card_id, card_of_id, card_value, deck_size, decks_for_seats, wild_rank_of
from verifier.errors import RuleError


@pytest.mark.parametrize("text", ["AS", "TS", "KC", "7H", "2D", "JK"])
def test_text_round_trip(text: str) -> None:
    assert str(Card.parse(text)) == text


def test_ten_accepted_as_10_on_input() -> None:
    assert Card.parse("10S") == Card.parse("TS")
    assert str(Card.parse("10h")) == "TH"


@pytest.mark.parametrize("bad", ["", "1S", "11S", "ZS", "AX", "JOKER", "A", "10"])
def test_bad_card_is_a_typed_error(bad: str) -> None:
    with pytest.raises(RuleError) as e:
        Card.parse(bad)
    assert e.value.code == "unknown_card"


def test_d1_deck_sizes_follow_seat_count() -> None:
    assert decks_for_seats(4) == decks_for_seats(6) == 2
    assert decks_for_seats(8) == 3
    assert deck_size(2) == 106 and deck_size(3) == 159
    with pytest.raises(RuleError):
        decks_for_seats(5)


def test_card_ids_follow_fairness_md() -> None:
    # id = deck*52 + suit*13 + rank; suits S H D C; jokers after the suited cards.
    assert card_id(Card.parse("AS"), 0, 2) == 0
    assert card_id(Card.parse("KC"), 0, 2) == 51
    assert card_id(Card.parse("7H"), 1, 2) == 52 + 13 + 6
    assert card_id(JOKER, 0, 2) == 104 and card_id(JOKER, 1, 2) == 105
    assert card_id(JOKER, 2, 3) == 158
    for decks in (2, 3):
        faces = [card_of_id(i, decks) for i in range(deck_size(decks))]
        assert faces.count(JOKER) == decks
        assert faces.count(Card.parse("7H")) == decks
        assert len(set(faces)) == 53
    with pytest.raises(RuleError):
        card_of_id(106, 2)


def test_card_values_and_wild_rank() -> None:
    wild = wild_rank_of(Card.parse("7D"))
    assert [card_value(Card.parse(t), wild) for t in ("AS", "KH", "QD", "JC", "TS", "9S", "2C", "7H", "JK")] == [
        10,
        10,
        10,
        10,
        10,
        9,
        2,
        0,
        0,
    ]
    # D5: a printed-joker indicator makes only printed jokers wild.
    assert wild_rank_of(JOKER) is None
    assert card_value(Card.parse("7H"), None) == 7
