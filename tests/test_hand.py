"""The hand state machine (D2–D20): worked examples and random play-outs."""

from __future__ import annotations

import json

import pytest

from tests.playout import check_invariants, play, seeded_reshuffle
from verifier.cards import Card, card_of_id, deck_size
from verifier.errors import PhaseError, RuleError
from verifier.hand import (
    Declare,
    Discard,
    DrawClosed,
    DrawOpen,
    Drop,
    HandState,
    Leave,
    Phase,
    Status,
    TableRules,
    TimeOut,
    action_from_json,
    action_to_json,
    apply,
    can,
    deal,
    seat_view,
    verify,
)

RULES = TableRules(seats=4, point_value=10, commission_bps=500, max_missed_turns=3)
NOOP = seeded_reshuffle(1)


def make_deck(rules: TableRules, hands: list[str], indicator: str, open_card: str, closed_top: str = "") -> list[int]:
    """A deck that deals ``hands`` (one string of 13 faces per player, in turn
    order, first player first), then the indicator, the open card and the closed
    pile starting with ``closed_top``; the rest in id order."""
    decks = rules.decks
    free: dict[Card, list[int]] = {}
    for i in range(deck_size(decks)):
        free.setdefault(card_of_id(i, decks), []).append(i)

    def take(face: str) -> int:
        return free[Card.parse(face)].pop(0)

    n = len(hands)
    dealt = [[take(f) for f in h.split()] for h in hands]
    deck = [dealt[p][k] for k in range(13) for p in range(n)]
    deck += [take(indicator), take(open_card)]
    deck += [take(f) for f in closed_top.split()]
    used = set(deck)
    deck += [i for i in range(deck_size(decks)) if i not in used]
    return deck


WINNER = "AS 2S 3S 4H 5H 6H 9D 9C 9S KC KD 7H 2C"  # with 7 wild and a 3H drawn: complete
OTHER = "AD 3D 5D 7D 9H JH KH 2H 4C 6C 8C TC QD"


def two_player_hand(closed_top: str = "3H", indicator: str = "7C", players: tuple[int, int] = (0, 2)) -> HandState:
    deck = make_deck(RULES, [WINNER, OTHER], indicator, "8H", closed_top)
    state, _ = deal(RULES, [(players[0], "alice"), (players[1], "bob")], dealer=players[1], deck=deck)
    return state


def test_d3_d4_deal_order_wild_and_piles() -> None:
    deck = list(range(106))
    state, events = deal(RULES, [(0, "a"), (2, "b"), (3, "c")], dealer=2, deck=deck)
    # D3: first turn is the next seated player after the dealer: seat 3.
    assert state.turn == 3 and state.phase is Phase.DRAW
    # D4: one at a time from the first player: seat 3 gets 0, 3, 6, …; seat 0 gets 1, 4, …
    assert state.seat(3).cards == tuple(range(0, 39, 3))
    assert state.seat(0).cards == tuple(range(1, 39, 3))
    assert state.seat(2).cards == tuple(range(2, 39, 3))
    assert state.wild_indicator == 39 and state.open == (40,) and state.closed == tuple(range(41, 106))
    assert [e.kind for e in events] == ["deal", "hand", "hand", "hand", "turn"]
    check_invariants(state)


def test_d3_dealer_wraps() -> None:
    state, _ = deal(RULES, [(0, "a"), (1, "b")], dealer=3, deck=list(range(106)))
    assert state.turn == 0


def test_d1_eight_seat_table_deals_from_three_decks() -> None:
    rules = TableRules(seats=8)
    state, _ = deal(rules, [(s, f"p{s}") for s in range(8)], dealer=0, deck=list(range(159)))
    assert len(state.closed) == 159 - 8 * 13 - 2
    check_invariants(state)


def test_deal_rejects_bad_input() -> None:
    with pytest.raises(RuleError, match="permutation"):
        deal(RULES, [(0, "a"), (1, "b")], 0, list(range(105)) + [0])
    with pytest.raises(RuleError) as e:
        deal(RULES, [(0, "a")], 0, list(range(106)))
    assert e.value.code == "not_enough_players"
    with pytest.raises(RuleError):
        deal(RULES, [(0, "a"), (4, "b")], 0, list(range(106)))


def test_table_rules_are_validated_not_repaired() -> None:
    for bad in ({"seats": 5}, {"point_value": 0}, {"commission_bps": -1}, {"min_players": 1}, {"turn_seconds": 1.5}):
        with pytest.raises(RuleError):
            TableRules(**bad)  # type: ignore[arg-type]


def test_out_of_turn_and_phase_errors_change_nothing() -> None:
    state = two_player_hand()
    cases = [
        (DrawClosed(2), "not_your_turn"),
        (Discard(0, state.seat(0).cards[0]), "must_draw_first"),
        (Declare(0, state.seat(0).cards[0]), "must_draw_first"),
        (Drop(2), "not_your_turn"),
    ]
    for action, code in cases:
        before = state.to_json()
        with pytest.raises(RuleError) as e:
            apply(state, action, NOOP)
        assert e.value.code == code and e.value.rule is not None
        assert state.to_json() == before
        assert not can(state, action)
    state, _ = apply(state, DrawClosed(0), NOOP)
    for action, code in [
        (DrawClosed(0), "already_drawn"),
        (DrawOpen(0), "already_drawn"),
        (Drop(0), "cannot_drop_after_draw"),
        (Discard(0, state.seat(2).cards[0]), "card_not_in_hand"),
    ]:
        with pytest.raises(RuleError) as e:
            verify(state, action)
        assert e.value.code == code
    with pytest.raises(PhaseError):
        verify(state, Drop(0))


def test_open_draw_is_public_closed_draw_private() -> None:
    state = two_player_hand()
    s1, ev = apply(state, DrawOpen(0), NOOP)
    draw = ev[0]
    assert draw.kind == "draw" and draw.data["card"] == state.open[-1]
    assert draw.for_seat(2)["card"] == state.open[-1]
    s2, ev = apply(state, DrawClosed(0), NOOP)
    assert "card" not in ev[0].for_seat(2) and "card" not in ev[0].for_seat(None)
    assert ev[0].for_seat(0)["card"] == state.closed[0]


def test_d11_d12_valid_declare_ends_the_hand_and_settles() -> None:
    state = two_player_hand(closed_top="3H")
    state, _ = apply(state, DrawClosed(0), NOOP)
    finish = next(c for c in state.seat(0).cards if card_of_id(c, 2) == Card.parse("2C"))
    state, events = apply(state, Declare(0, finish), NOOP)
    assert state.phase is Phase.ENDED and state.result is not None
    assert state.result.winner == 0 and state.result.reason == "declare"
    bob_points = state.seat(2).points
    assert bob_points is not None and bob_points > 0
    s = state.result.settlement
    assert s.pot == bob_points * 10 and s.commission == s.pot * 500 // 10_000
    assert s.deltas == {0: s.pot - s.commission, 2: -s.pot}
    assert finish in state.out_of_play
    assert events[-1].kind == "end"
    check_invariants(state)
    with pytest.raises(PhaseError) as e:
        verify(state, DrawClosed(2))
    assert e.value.code == "hand_over"


def test_d12_wrong_declare_costs_80_and_play_goes_on() -> None:
    deck = make_deck(RULES, [OTHER, WINNER, WINNER.replace("2C", "3C")], "7C", "8H", "5S")
    state, _ = deal(RULES, [(0, "a"), (1, "b"), (3, "c")], dealer=3, deck=deck)
    state, _ = apply(state, DrawClosed(0), NOOP)
    held = list(state.seat(0).cards)
    state, events = apply(state, Declare(0, held[0]), NOOP)
    me = state.seat(0)
    assert me.status is Status.WRONG_DECLARE and me.points == 80 and me.cards == ()
    assert all(c in state.out_of_play for c in held)
    assert state.phase is Phase.DRAW and state.turn == 1
    assert events[0].data == {"valid": False, "points": 80}
    assert "cards" not in events[0].for_seat(1)  # the wrong hand stays hidden in play
    check_invariants(state)


def test_d14_wrong_declare_with_two_players_leaves_the_other_winner() -> None:
    state = two_player_hand(closed_top="5S")
    state, _ = apply(state, DrawClosed(0), NOOP)
    state, _ = apply(state, Declare(0, state.seat(0).cards[0]), NOOP)
    assert state.phase is Phase.ENDED and state.result is not None
    assert state.result.winner == 2 and state.result.reason == "last_standing"
    assert state.result.settlement.deltas[0] == -800


def test_d15_first_drop_20_then_middle_drop_40() -> None:
    deck = make_deck(RULES, [OTHER, WINNER, OTHER], "7C", "8H")
    state, _ = deal(RULES, [(0, "a"), (1, "b"), (2, "c")], dealer=2, deck=deck)
    state, _ = apply(state, Drop(0), NOOP)
    assert state.seat(0).points == 20 and state.seat(0).status is Status.DROPPED
    # Seat 1 draws and discards, then drops on its next turn: a middle drop.
    state, _ = apply(state, DrawClosed(1), NOOP)
    state, _ = apply(state, Discard(1, state.seat(1).cards[0]), NOOP)
    state, _ = apply(state, DrawClosed(2), NOOP)
    state, _ = apply(state, Discard(2, state.seat(2).cards[0]), NOOP)
    state, _ = apply(state, Drop(1), NOOP)
    assert state.seat(1).points == 40
    # Two seats out: seat 2 is the last one standing (D14) and wins.
    assert state.phase is Phase.ENDED and state.result is not None and state.result.winner == 2
    assert state.result.settlement.pot == (20 + 40) * 10
    check_invariants(state)


def test_d15_leaving_costs_40_at_any_time() -> None:
    deck = make_deck(RULES, [OTHER, WINNER, OTHER], "7C", "8H")
    state, _ = deal(RULES, [(0, "a"), (1, "b"), (2, "c")], dealer=2, deck=deck)
    state, events = apply(state, Leave(2), NOOP)  # not on turn
    assert state.seat(2).points == 40 and state.turn == 0 and state.phase is Phase.DRAW
    state, _ = apply(state, DrawClosed(0), NOOP)
    state, _ = apply(state, Leave(0), NOOP)  # on turn, holding 14 cards
    assert state.phase is Phase.ENDED and state.result is not None and state.result.winner == 1
    check_invariants(state)


def test_d16_clock_moves_then_drops() -> None:
    state = two_player_hand()
    top = state.closed[0]
    state, events = apply(state, TimeOut(0), NOOP)
    # The clock drew the top closed card and discarded it.
    assert [e.kind for e in events] == ["clock", "draw", "discard", "turn"]
    assert state.open[-1] == top and state.seat(0).missed == 1
    assert events[1].data["by_clock"] is True
    state, _ = apply(state, DrawClosed(2), NOOP)
    state, _ = apply(state, Discard(2, state.seat(2).cards[0]), NOOP)
    state, _ = apply(state, TimeOut(0), NOOP)
    assert state.seat(0).missed == 2
    state, _ = apply(state, DrawClosed(2), NOOP)
    state, _ = apply(state, Discard(2, state.seat(2).cards[0]), NOOP)
    state, events = apply(state, TimeOut(0), NOOP)
    # Third expiry in a row: dropped, and the clock's draws count as draws (D22): 40.
    assert [e.kind for e in events][:2] == ["clock", "drop"]
    assert state.seat(0).status is Status.DROPPED and state.seat(0).points == 40
    assert state.phase is Phase.ENDED


def test_d16_acting_in_time_resets_the_count() -> None:
    state = two_player_hand()
    state, _ = apply(state, TimeOut(0), NOOP)
    state, _ = apply(state, TimeOut(2), NOOP)
    state, _ = apply(state, DrawClosed(0), NOOP)
    state, _ = apply(state, Discard(0, state.seat(0).cards[0]), NOOP)
    assert state.seat(0).missed == 0 and state.seat(2).missed == 1


def test_d16_expiry_after_own_draw_discards_the_card_drawn() -> None:
    state = two_player_hand()
    taken = state.open[-1]
    state, _ = apply(state, DrawOpen(0), NOOP)
    state, events = apply(state, TimeOut(0), NOOP)
    assert [e.kind for e in events] == ["clock", "discard", "turn"]
    assert state.open[-1] == taken


def test_d16_single_missed_turn_limit_drops_at_20() -> None:
    rules = TableRules(seats=4, max_missed_turns=1)
    state, _ = deal(rules, [(0, "a"), (1, "b"), (2, "c")], dealer=2, deck=list(range(106)))
    state, _ = apply(state, TimeOut(0), NOOP)
    assert state.seat(0).points == 20 and state.turn == 1


def test_d17_reshuffle_from_the_injected_stream() -> None:
    state = two_player_hand()
    calls: list[tuple[int, list[int]]] = []

    def reshuffle(k: int, cards: list[int]) -> list[int]:
        calls.append((k, list(cards)))
        return list(reversed(cards))

    seen_reshuffle = False
    while not seen_reshuffle:
        seat = state.turn
        before_open = state.open
        state, events = apply(state, DrawClosed(seat), reshuffle)
        if any(e.kind == "reshuffle" for e in events):
            seen_reshuffle = True
            k, cards = calls[0]
            assert k == 1 and cards == sorted(before_open[:-1])
            assert state.open == before_open[-1:]
            assert state.closed == tuple(reversed(cards))[1:]
            assert events[0].kind == "reshuffle" and events[0].private["closed"][0] == state.seat(seat).cards[-1]
            assert "closed" not in events[0].for_seat(seat)  # the new order is nobody's to see
        drawn = state.seat(seat).drawn_this_turn
        assert drawn is not None
        state, _ = apply(state, Discard(seat, drawn), reshuffle)
        check_invariants(state)
    assert state.reshuffles == 1


def test_views_never_show_other_hands_or_the_closed_pile() -> None:
    state = two_player_hand()
    view = seat_view(state, 0)
    text = json.dumps(view)
    assert view["me"]["cards"] == list(state.seat(0).cards)
    assert all("cards" not in s for s in view["seats"])
    assert "closed" not in view and view["closed_count"] == len(state.closed)
    spectator = seat_view(state, None)
    assert "me" not in spectator
    # Only seat 0's own hand appears among the ids in its view.
    assert str(state.seat(2).cards[0]) not in json.dumps(view["me"])
    assert len(text) > 0


def test_action_json_round_trip_and_malformed_actions() -> None:
    for a in [DrawClosed(1), DrawOpen(2), Discard(0, 17), Declare(3, 5, ((1, 2, 3),)), Drop(1), Leave(0), TimeOut(2)]:
        assert action_from_json(json.loads(json.dumps(action_to_json(a)))) == a
    for bad in [
        [],
        {"kind": "fly", "seat": 1},
        {"kind": "discard", "seat": 1},
        {"kind": "drop", "seat": "1"},
        {"kind": "drop", "seat": 1, "x": 2},
        {"kind": "discard", "seat": 1, "card": True},
    ]:
        with pytest.raises(RuleError) as e:
            action_from_json(bad)  # type: ignore[arg-type]
        assert e.value.code == "bad_action"


@pytest.mark.parametrize("seats,players", [(4, 2), (4, 4), (6, 3), (6, 5), (6, 6), (8, 5), (8, 7), (8, 8)])
@pytest.mark.parametrize("seed", range(6))
def test_random_playouts_keep_every_invariant(seats: int, players: int, seed: int) -> None:
    rules = TableRules(seats=seats, point_value=7, commission_bps=333)
    out = play(rules, players, seed * 31 + seats + players)
    final = out.states[-1]
    assert final.phase is Phase.ENDED and final.result is not None
    points = final.result.settlement.points
    assert points[final.result.winner] == 0
    assert all(0 <= p <= 130 for p in points.values())


def test_random_playouts_reach_reshuffles_and_declares() -> None:
    """The play-outs above are not vacuous: across seeds they exercise reshuffles,
    valid and wrong declares, drops, leaves and clock moves."""
    kinds: set[str] = set()
    valid = 0
    for seed in range(40):
        out = play(TableRules(seats=4), 2, 1000 + seed, turns_cap=400, exits=0.1 if seed % 2 else 1.0)
        for evs in out.events:
            for e in evs:
                kinds.add(e.kind)
                valid += e.kind == "declare" and e.data.get("valid") is True
    assert {"reshuffle", "drop", "leave", "clock", "declare"} <= kinds
    assert valid > 0
