"""Helpers of the dishonest-house audits (tests/test_audit_house_*.py) that play
vector hands until the house has a move to cheat on."""

from __future__ import annotations

from collections.abc import Iterator

from verifier.fairness import reshuffler
from verifier.hand import Declare, Phase, Result, TableRules, apply
from verifier.vectors import VectorHand, greedy


def winning_declares(name: str, table: TableRules, seats: list[int]) -> Iterator[tuple[VectorHand, Declare, Result]]:
    """Vector hands ``name`` 0 to 199 at ``seats`` (dealt by ``seats[0]``), played with
    the greedy strategy: at each declare that would end its hand with the declarer
    the winner, the hand (that declare not yet made), the declare and the result it
    would give.  Asked for the next, the declare is made and play goes on."""
    for attempt in range(200):
        hand = VectorHand(name, attempt, table, seats, seats[0])
        hand.seed_phases()
        rec = hand.rec
        for _ in range(600):
            assert rec.state is not None
            if rec.ended:
                break
            state = rec.state
            action = greedy(state, state.turn)
            if isinstance(action, Declare):
                after, _ = apply(state, action, reshuffler(rec.key))
                if after.phase is Phase.ENDED and after.result is not None and after.result.winner == action.seat:
                    yield hand, action, after.result
            hand.act(action)
