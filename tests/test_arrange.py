"""Best-arrangement scoring (D11, D13): worked examples, properties, and agreement
with an independent exhaustive reference."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reference import reference_points
from tests.strategies import random_hand, structured_hand
from verifier.arrange import Case, best_arrangement
from verifier.cards import JOKER, Card, card_value, wild_rank_of
from verifier.groups import GroupKind, classify


def score(texts: str, wild: str) -> tuple[int, bool, Case, list[list[str]], list[str]]:
    cards = [Card.parse(t) for t in texts.split()]
    arr = best_arrangement(cards, wild_rank_of(Card.parse(wild)))
    groups, loose = arr.faces(cards)
    return arr.points, arr.valid_declare, arr.case, groups, loose


def test_case_a_only_loose_cards_count() -> None:
    points, valid, case, groups, loose = score("AS 2S 3S 4H 5H 6H 9D 9C 9S KC KD JK 2C", "7H")
    assert (points, valid, case) == (2, False, Case.SEQUENCES)
    assert loose == ["2C"]
    assert len(groups) == 4


def test_case_b_a_pure_run_but_no_second_sequence() -> None:
    # AS 2S 3S is the only sequence: it is spared (10 + 2 + 3), everything else counts.
    hand = "AS 2S 3S 9D 9C KC KD QC 5H 8H 5D 6C JD"
    points, valid, case, groups, _ = score(hand, "2C")
    total = sum(card_value(Card.parse(t), Card.parse("2C").rank) for t in hand.split())
    assert case is Case.PURE_ONLY and not valid
    assert groups == [["AS", "2S", "3S"]]
    assert points == total - 13  # the 2S is wild-rank here: worth 0


def test_case_b_spares_the_most_valuable_pure_run() -> None:
    # Five hearts in a row cannot make two sequences, so only one run is spared: the
    # whole of it (9 + 10 + 10 + 10 + 10), not a three-card part.
    hand = "9H TH JH QH KH 2S 9D 5C 8C 5D 6C 4D 2D"
    points, _, case, groups, _ = score(hand, "7C")
    assert case is Case.PURE_ONLY
    assert groups == [["9H", "TH", "JH", "QH", "KH"]]
    assert points == 2 + 9 + 5 + 8 + 5 + 6 + 4 + 2


def test_case_c_without_a_pure_sequence_everything_counts() -> None:
    hand = "4H JK 6H 9C 9D 9S KS KD KC 2D 5C 8S TD"
    points, valid, case, groups, loose = score(hand, "3C")
    assert case is Case.NOTHING and not valid and groups == []
    assert points == sum(card_value(Card.parse(t), Card.parse("3C").rank) for t in hand.split())


def test_most_a_hand_can_cost_is_130() -> None:
    points, valid, case, groups, loose = score("AS AS AH AH KS KS KH KH QD QD QC QC JD", "2C")
    assert points == 130 and case is Case.NOTHING and len(loose) == 13


def test_twelve_card_run_splits_into_two_pure_sequences() -> None:
    points, valid, case, groups, loose = score("2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS 2D", "4C")
    # 4S is wild-rank but used as itself; both halves are pure.  (The set 2D 2S 4S
    # would leave 3S loose: 3 points, not 2.)
    assert case is Case.SEQUENCES and loose == ["2D"] and points == 2
    assert len(groups) == 2
    assert all(classify([Card.parse(t) for t in g], Card.parse("4C").rank) is GroupKind.PURE for g in groups)


def test_valid_declare() -> None:
    points, valid, case, groups, loose = score("AS 2S 3S 4H 5H 6H 9D 9C 9S KC KD JK 7H", "7C")
    assert valid and points == 0 and loose == []


def test_zero_points_with_loose_wild_is_shown_grouped() -> None:
    # A loose wild card costs nothing; a valid declare shows every card in a group.
    points, valid, _, groups, loose = score("AS 2S 3S 4H 5H 6H 9D 9C 9S KC KD KS JK", "7C")
    assert valid and loose == [] and sum(len(g) for g in groups) == 13


def test_no_pure_sequence_no_declare_even_if_all_grouped() -> None:
    points, valid, case, _, _ = score("4H JK 6H 9C 9D 9S KS KD KC 2D 2C 2H 8S", "3C")
    assert not valid and case is Case.NOTHING


def test_wild_indicator_joker_makes_only_jokers_wild() -> None:
    # With a joker indicator the 7s are plain cards: 7H extends the heart run and
    # KC KD 7D count.  With 7 wild, 7D completes the kings.
    p_joker = score("AS 2S 3S 4H 5H 6H 9D 9C 9S KC KD 7H 7D", "JK")[0]
    p_seven = score("AS 2S 3S 4H 5H 6H 9D 9C 9S KC KD 7H 7D", "7C")[0]
    assert p_joker == 10 + 10 + 7 and p_seven == 0


def test_one_natural_and_two_wilds_is_a_sequence() -> None:
    # 8D + two wild cards makes the second sequence (D7), so case (a) applies.
    points, valid, case, groups, loose = score("AS 2S 3S 8D JK 7H KC QD 5C 9H TD JC 4H", "7C")
    assert case is Case.SEQUENCES


def check_arrangement(cards: list[Card], wild: int | None) -> None:
    arr = best_arrangement(cards, wild)
    used = sorted([i for g in arr.groups for i in g] + list(arr.loose))
    assert used == list(range(len(cards))), "every card exactly once"
    kinds = [classify([cards[i] for i in g], wild) for g in arr.groups]
    assert None not in kinds, "every group is valid"
    assert arr.points == sum(card_value(cards[i], wild) for i in arr.loose), "loose cards sum to the points"
    assert 0 <= arr.points <= 130
    if arr.case is Case.SEQUENCES:
        assert GroupKind.PURE in kinds and sum(1 for k in kinds if k and k.is_sequence) >= 2
    elif arr.case is Case.PURE_ONLY:
        assert kinds == [GroupKind.PURE]
    else:
        assert kinds == []
    assert arr.valid_declare == (arr.case is Case.SEQUENCES and not arr.loose)


@settings(max_examples=400, deadline=None)
@given(random_hand())
def test_property_arrangement_is_consistent_random(hw: tuple[list[Card], int | None]) -> None:
    check_arrangement(*hw)


@settings(max_examples=400, deadline=None)
@given(structured_hand())
def test_property_arrangement_is_consistent_structured(hw: tuple[list[Card], int | None]) -> None:
    check_arrangement(*hw)


@settings(max_examples=200, deadline=None)
@given(structured_hand(), st.randoms(use_true_random=False))
def test_property_points_do_not_depend_on_order(hw: tuple[list[Card], int | None], rnd: object) -> None:
    cards, wild = hw
    shuffled = list(cards)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    a, b = best_arrangement(cards, wild), best_arrangement(shuffled, wild)
    assert (a.points, a.valid_declare) == (b.points, b.valid_declare)


@settings(max_examples=200, deadline=None)
@given(st.one_of(random_hand(), structured_hand()), st.data())
def test_property_a_wild_card_for_a_loose_card_never_raises_points(
    hw: tuple[list[Card], int | None], data: st.DataObject
) -> None:
    cards, wild = hw
    arr = best_arrangement(cards, wild)
    if not arr.loose:
        return
    i = data.draw(st.sampled_from(arr.loose))
    replaced = list(cards)
    replaced[i] = JOKER
    assert best_arrangement(replaced, wild).points <= arr.points


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(random_hand(), random_hand(decks=3), structured_hand()))
def test_property_agrees_with_exhaustive_reference(hw: tuple[list[Card], int | None]) -> None:
    cards, wild = hw
    arr = best_arrangement(cards, wild)
    assert (arr.points, arr.valid_declare) == reference_points(cards, wild)
