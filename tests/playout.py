"""Random play-outs of whole hands through the state machine (tests only).

The deck order and the choices come from a seeded ``random.Random`` owned by the
test — game code never touches a random number generator.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from verifier.arrange import best_arrangement
from verifier.cards import card_of_id, deck_size
from verifier.hand import (
    Action,
    Declare,
    Discard,
    DrawClosed,
    DrawOpen,
    Drop,
    Event,
    HandState,
    Leave,
    Phase,
    Reshuffle,
    Status,
    TableRules,
    TimeOut,
    apply,
    deal,
    legal_actions,
)
from verifier.settle import hold_amount


def seeded_reshuffle(seed: int) -> Reshuffle:
    def reshuffle(k: int, cards: list[int]) -> list[int]:
        out = list(cards)
        random.Random(seed * 1000 + k).shuffle(out)
        return out

    return reshuffle


@dataclass
class Playout:
    states: list[HandState] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    events: list[list[Event]] = field(default_factory=list)


def check_invariants(state: HandState) -> None:
    """What must hold after every action."""
    pack = deck_size(state.rules.decks)
    assert sorted(state.all_cards()) == list(range(pack)), "every card accounted for, once"
    for s in state.seats:
        if s.status is Status.PLAYING and state.phase is not Phase.ENDED:
            expected = 14 if (s.seat == state.turn and state.phase is Phase.DISCARD) else 13
            assert len(s.cards) == expected, f"seat {s.seat} holds {len(s.cards)}"
        elif s.status not in (Status.PLAYING, Status.DECLARED):
            assert s.cards == () and s.points is not None
    if state.phase is not Phase.ENDED:
        for s in state.seats:
            legal = legal_actions(state, s.seat)
            if s.seat != state.turn:
                # Not on turn: nothing but leaving the table (D15) is ever legal.
                assert [a.kind for a in legal] in ([], ["leave"]), legal
    again = HandState.from_json(json.loads(json.dumps(state.to_json())))
    assert again == state, "state round-trips through its serialised form"


def choose(state: HandState, rng: random.Random, turns_cap: int, exits: float = 1.0) -> Action:
    """A random but plausible move for the seat on turn.  ``exits`` scales how
    often a seat leaves, drops or declares wrongly (lower: longer hands)."""
    seat = state.seat(state.turn)
    if rng.random() < 0.01 * exits:
        return Leave(rng.choice(state.playing()))
    if rng.random() < 0.05:
        return TimeOut(seat.seat)
    if state.phase is Phase.DRAW:
        if rng.random() < 0.02 * exits or state.turn_no > turns_cap:
            return Drop(seat.seat)
        return DrawOpen(seat.seat) if (state.open and rng.random() < 0.3) else DrawClosed(seat.seat)
    decks = state.rules.decks
    for card in seat.cards:
        kept = list(seat.cards)
        kept.remove(card)
        if best_arrangement([card_of_id(c, decks) for c in kept], state.wild_rank).valid_declare:
            return Declare(seat.seat, card)
    if rng.random() < 0.01 * exits:
        return Declare(seat.seat, rng.choice(seat.cards))  # most likely wrong: 80 points
    return Discard(seat.seat, rng.choice(seat.cards))


def play(
    rules: TableRules,
    n_players: int,
    seed: int,
    *,
    turns_cap: int = 300,
    exits: float = 1.0,
    deck: list[int] | None = None,
    check: Callable[[HandState], None] = check_invariants,
) -> Playout:
    rng = random.Random(seed)
    seats = sorted(rng.sample(range(rules.seats), n_players))
    if deck is None:
        deck = list(range(deck_size(rules.decks)))
        rng.shuffle(deck)
    state, events = deal(rules, [(s, f"p{s}") for s in seats], rng.choice(seats), deck)
    out = Playout([state], [], [events])
    reshuffle = seeded_reshuffle(seed)
    check(state)
    while state.phase is not Phase.ENDED:
        action = choose(state, rng, turns_cap, exits)
        state, events = apply(state, action, reshuffle)
        out.states.append(state)
        out.actions.append(action)
        out.events.append(events)
        check(state)
    result = state.result
    assert result is not None
    s = result.settlement
    assert sum(s.deltas.values()) + s.commission == 0, "settlement balances to zero"
    hold = hold_amount(rules.point_value)
    assert all(hold + d >= 0 for d in s.deltas.values()), "no balance goes negative"
    return out
