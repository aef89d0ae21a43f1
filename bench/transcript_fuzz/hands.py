"""The hands mutated: the vectors' transcripts (with a seat's evidence where a
vector has it), and honest hands played here at §13's bounds, each with evidence.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import pathlib
import random
from collections.abc import Callable
from typing import Any

from bench.transcript_fuzz.common import SEED, V1, VECTORS, clone
from verifier.hand import Declare, Discard, DrawClosed, Drop, HandState, Leave, TableRules, TimeOut, legal_actions
from verifier.vectors import VectorHand, greedy


@dataclasses.dataclass
class Base:
    name: str
    t: dict[str, Any]
    allow_v1: bool = False
    evidence: list[Any] | None = None  # a seat's evidence for this hand, when known


def _vector(path: pathlib.Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def vector_bases() -> list[Base]:
    out: list[Base] = []
    for p in sorted(VECTORS.glob("*transcript*.json")):
        t = _vector(p)["transcript"]
        out.append(Base(p.name, t, allow_v1=t.get("protocol") == V1))
    ev = _vector(VECTORS / "v2-evidence-4seat-two-players-seat1.json")
    for b in out:
        if b.name == "v2-transcript-4seat-two-players.json":
            out.append(Base(b.name + " +evidence", copy.deepcopy(b.t), evidence=ev["evidence"]))
            break
    for p in sorted((VECTORS / "adversarial").glob("*.json")):
        doc = _vector(p)
        e = doc["_about"]["expect"]
        name = "adversarial/" + p.name
        if "transcript" in doc:
            evidence = doc.get("evidence") if e.get("with_evidence") else None
            out.append(Base(name, doc["transcript"], allow_v1=bool(e.get("allow_v1")), evidence=evidence))
        for f, t in sorted(doc.get("folder", {}).items()):
            out.append(Base(f"{name}::{f}", t, allow_v1=bool(e.get("allow_v1"))))
    return out


def random_policy(rng: random.Random, *, wild: float) -> Callable[[HandState, int], Any]:
    """The greedy strategy, and with probability ``wild`` any legal move (a drop, a
    leave, the clock, a wrong declare, a draw from the open pile)."""

    stall = [rng.choice([0, 0, 0, 120, 220])]  # moves that keep the hand going, for reshuffles

    def policy(state: HandState, seat: int) -> Any:
        if stall[0] > 0:
            stall[0] -= 1
            acts = legal_actions(state, seat)
            if state.seat(seat).drawn_this_turn is not None:
                card = state.seat(seat).drawn_this_turn
                return next(a for a in acts if a.kind == "discard" and getattr(a, "card", None) == card)
            kinds = [a.kind for a in acts]
            want = "draw_open" if "draw_open" in kinds and rng.random() < 0.3 else "draw_closed"
            return acts[kinds.index(want)] if want in kinds else rng.choice(acts)
        if rng.random() < wild:
            acts = legal_actions(state, seat)
            declares = [a for a in acts if isinstance(a, Declare)]
            others = [a for a in acts if not isinstance(a, Declare | Drop | Leave | TimeOut)]
            roll = rng.random()
            if roll < 0.04 and declares:
                return rng.choice(declares)
            if roll < 0.08:
                return rng.choice([a for a in acts if isinstance(a, Drop | Leave | TimeOut)] or acts)
            if roll < 0.15:
                return TimeOut(seat)
            return rng.choice(others or acts)
        return greedy(state, seat)

    return policy


#: rules a house may choose (§13's bounds), each with seats, dealer, no_commit, withhold
_PLAYED = [
    (TableRules(4, 7_692_307_692_307, 9_999, 1, 1, 2), [0, 1, 2, 3], 3, (), ()),
    (TableRules(8, 1, 10_000, 3600, 100, 8), list(range(8)), 7, (2,), ()),
    (TableRules(6, 3, 0, 30, 2, 3), [0, 2, 5], 5, (), (2,)),
    (TableRules(4, 5, 1_234, 10, 3, 2), [1, 2], 2, (), (1,)),
    (TableRules(6, 7_692_307_692_307, 10_000, 7, 1, 2), [0, 1, 2, 3, 4, 5], 0, (0, 1), ()),
    (TableRules(8, 1_000, 333, 60, 3, 2), [0, 3, 4, 7], 4, (), ()),
    (TableRules(4, 2, 5_000, 5, 2, 2), [0, 1, 2, 3], 1, (0, 1, 2, 3), ()),
    (TableRules(6, 17, 250, 15, 3, 2), [1, 4], 4, (), ()),
    (TableRules(4, 7_692_307_692_307, 1, 30, 3, 4), [0, 1, 2, 3], 0, (), ()),
    (TableRules(8, 99, 777, 20, 4, 3), [0, 1, 2, 5, 6, 7], 6, (1,), (5,)),
    (TableRules(6, 1, 0, 30, 3, 2), [2, 3], 2, (), (2, 3)),
    (TableRules(4, 3, 1_000, 30, 3, 2), [0, 2, 3], 3, (0,), (2,)),
    (TableRules(6, 3, 100, 30, 3, 2), [0, 2, 4], 2, (), (2,)),  # the dealer withheld: 4 plays first
]


class _Played(VectorHand):
    """A hand that also has seats leave when it is not their turn (D25), and moves the
    table refuses: for a reason the rules justify (an illegal move), or for one of the
    house's own (``busy``: the seat keeps its whole turn from the refusal, D35, which
    the clock then respects)."""

    rng: random.Random

    def play(self, policy: Callable[[HandState, int], Any], max_actions: int = 600) -> None:
        n = 0
        owed = 0  # the clock may not charge the seat on turn before this (a refusal of the house's)
        while not self.rec.ended and n < max_actions:
            state = self.rec.state
            assert state is not None
            others = [s for s in state.playing() if s != state.turn]
            if others and self.rng.random() < 0.004:
                self.act(Leave(self.rng.choice(others)))
                n += 1
                continue
            action = policy(state, state.turn)
            roll = self.rng.random()
            if roll < 0.03 and not isinstance(action, TimeOut):
                self.refuse(action, "busy", at=self.now + self.rng.choice([1, 300, 2_000]))
                owed = self.now + 1000 * self.rec.rules.turn_seconds
            elif roll < 0.05:  # a move the rules refuse (justified): a draw in the discard phase, or vice versa
                in_discard = state.phase.value == "discard"
                illegal = DrawClosed(state.turn) if in_discard else Discard(state.turn, 0)
                self.refuse(illegal, "wrong_phase", at=self.now + 5)
            if isinstance(action, TimeOut):
                at = max(self.now, self.turn_began + 1000 * self.rec.rules.turn_seconds, owed) + 1
                self.act(action, at=at)
            else:
                self.act(action)
            newest = self.rec.records.newest()
            if newest is not None and any(e.get("kind") == "turn" for e in newest["events"]):
                owed = 0
            n += 1


def played_bases(seed: int, copies: int = 3) -> list[Base]:
    """Honest hands played here (a house may choose any rules within §13's bounds): the
    recorder writes them, and both verifiers must pass them; each with a seat's
    evidence, or every seat's pooled."""
    out = []
    for n, (rules, seats, dealer, no_commit, withhold) in enumerate(_PLAYED * copies):
        rng = random.Random(seed * 1000 + n)
        name = f"fuzz{n}"
        hand = _Played(name, rng.randrange(3), rules, seats, dealer)
        hand.rng = rng
        hand.seed_phases(no_commit=no_commit, withhold=withhold)
        hand.play(random_policy(rng, wild=rng.choice([0.05, 0.2, 0.5, 0.8])), max_actions=900)
        t = hand.rec.transcript()
        if rng.random() < 0.3 and len(t["log"]) < 60:
            ev = [it for s in sorted(hand.evidence) for it in hand.evidence[s]]
        else:
            ev = hand.evidence[rng.choice(sorted(hand.evidence))]
        out.append(Base(f"played/{name} {rules.seats}-seat", clone(t), evidence=clone(ev)))
    return out


@functools.cache
def bases(seed: int = SEED) -> tuple[Base, ...]:
    return tuple(vector_bases() + played_bases(seed))
