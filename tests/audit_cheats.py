"""Cheating card rooms for the room audit's blind spots (tests and bench only; never shipped).

:class:`CheatSim` is a :class:`tests.audit_sim.TableSim` whose house helps a friend
(a player it colludes with) in ways the protocol lets it deny (docs/fairness.md §16,
"Not guaranteed"), each transcript verifying:

- ``walkover``: the house sees every revealed seed, plays the honest deck out with
  the bots' strategy, and when its friend would not win it claims that every other
  seat's reveal never arrived (``withheld``, D29): its friend is the one seat dealt
  in and wins at once, each other seat paying a first drop.  Heads-up, that is one
  seat left out at a time.
- ``clock``: the house stays silent on an opponent's winning declare (no ack, so no
  proof it arrived) and lets the clock move for that seat instead (D16, D22: the
  clock discards the card the seat drew), while its friend is still in the hand.

``rate`` is the share of the chances it takes; its decisions come from a random
stream of their own, so an honest and a cheating table of one seed see the same
network faults until their hands differ.  :func:`room` builds a card room of several
tables, :func:`friend_edge` measures what the friend gained.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from tests.audit_sim import Grinder, TableSim, play_out
from verifier.chain import start_hand
from verifier.hand import Action, Declare, HandState, TableRules, TimeOut
from verifier.handfacts import HandFacts, hand_facts
from verifier.record import HandRecorder
from verifier.transcript import verify_transcript


@dataclass(frozen=True)
class Cheat:
    friend: str
    kind: Literal["walkover", "clock"]
    rate: float = 1.0


@dataclass
class CheatSim(TableSim):
    cheat: Cheat | None = None
    cheats: int = 0  # hands the house cheated in (walkovers given, declares silenced)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.cheat_rng = random.Random(f"cheat/{self.table_id}/{self.seed}")

    def _grind(self, rec: HandRecorder, arrived: dict[int, tuple[bytes, str]]) -> set[int]:
        c = self.cheat
        if c is None or c.kind != "walkover" or c.friend not in self.players:
            return super()._grind(rec, arrived)
        f = self.players.index(c.friend)
        others = {s for s in arrived if s != f}
        if f not in arrived or not others or self.cheat_rng.random() >= c.rate:
            return set()
        if any(rec.commit_of(s) is None for s in rec.seat_numbers if s != f):
            return set()  # a no_commit seat is dealt in anyway: no walkover
        key, _, state, _ = start_hand(rec.header, self._reveals(rec, arrived), rec.server_seed)
        assert state is not None
        end = play_out(state, key)
        if end.result is not None and end.result.winner == f:
            return set()  # its friend wins the honest deck: leave it be
        self.cheats += 1
        self.ground += 1
        return others

    def _play(self, rec: HandRecorder, cap: int = 600) -> None:
        c = self.cheat
        if c is None or c.kind != "clock" or c.friend not in self.players:
            super()._play(rec, cap)
            return
        self._friend_seat: int | None = self.players.index(c.friend)
        self._silenced = False
        try:
            super()._play(rec, cap)
        finally:
            self._friend_seat = None
        self.cheats += self._silenced

    def _choose(self, state: HandState) -> Action:
        """The seat's move, but a winning declare of another seat than the friend's, at
        the cheat's rate, is never acknowledged: the clock moves instead."""
        action = super()._choose(state)
        c, f = self.cheat, getattr(self, "_friend_seat", None)
        if (
            c is not None
            and f is not None
            and isinstance(action, Declare)
            and action.seat != f
            and f in state.playing()
            and self.cheat_rng.random() < c.rate
        ):
            self._silenced = True
            return TimeOut(action.seat)  # the declare is never acknowledged
        return action


@dataclass(frozen=True)
class TableSpec:
    table_id: str
    players: tuple[str, ...]
    seats: int = 4
    no_commit_rate: float = 0.01
    withhold_rate: float = 0.01
    clock_rate: float = 0.01
    cheat: Cheat | None = None
    grinder: Grinder | None = None


@dataclass
class Played:
    facts: list[HandFacts] = field(default_factory=list)
    cheats: int = 0
    ground: int = 0


def play_table(spec: TableSpec, seed: int, hands: int, *, verify: bool = True) -> Played:
    """Play ``hands`` hands of a table and reduce each to the facts the audit reads
    (each transcript verified first, as the audit does, unless ``verify`` is off)."""
    sim = CheatSim(
        spec.table_id,
        list(spec.players),
        seed=seed,
        rules=TableRules(seats=spec.seats, point_value=10, commission_bps=500),
        no_commit_rate=spec.no_commit_rate,
        withhold_rate=spec.withhold_rate,
        clock_rate=spec.clock_rate,
        grinder=spec.grinder,
        cheat=spec.cheat,
    )
    out = Played()
    for t in sim.hands(hands):
        if verify:
            report = verify_transcript(t)
            assert report.ok, (spec.table_id, t["hand_no"], report.failure)
        out.facts.append(hand_facts(t, f"{t['table_id']}-{t['hand_no']}"))
    out.cheats, out.ground = sim.cheats, sim.ground
    return out


def friend_edge(facts: Sequence[HandFacts], friend: str) -> dict[str, float]:
    """The friend's hands, wins, points and HT (sums, and per hand)."""
    hands = wins = points = ht = 0
    for h in facts:
        for s in h.seats:
            if s.player_id == friend and h.winner is not None:
                hands += 1
                wins += s.won
                points += s.points or 0
                ht += s.delta or 0
    return {
        "hands": hands,
        "wins": wins,
        "points": points,
        "ht": ht,
        "win_rate": wins / hands if hands else 0.0,
        "ht_per_hand": ht / hands if hands else 0.0,
    }
