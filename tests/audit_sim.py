"""Simulated card-room tables for the room audit (tests and bench only; never shipped).

A :class:`TableSim` plays a table's hands one after another through the verifier's
own recorder (:class:`verifier.record.HandRecorder`), as the server would: a test
server key signs, each player signs every move with its own test key, the hands
chain, and every transcript verifies.  The players are the bots' strategy
(:mod:`verifier.strategy`); the room's honest faults come from a seeded
``random.Random`` owned by the simulation: a player is absent from some hands, a
commitment or a reveal now and then misses its window (``no_commit``,
``withheld``), a turn now and then runs out on the clock.

A :class:`Grinder` is the dishonest dealer of docs/audit.md: it sees every revealed
seed, and for each set of honest seats it could claim never revealed (at most
``max_withhold`` of them, leaving two seats dealt in) it derives the deck that set
gives and keeps the one best for its colluding player — by the colluder's dealt
count (``criterion="deal"``) or by who wins a quick play-out of the hand with the
bots' strategy (``criterion="playout"``).  It grinds a share ``rate`` of the hands
its colluder sits in.  With ``via="void"`` it leaves the reveals alone and instead
voids, after the reveals, the hands in which its colluder is dealt the worst hand
(D33: "voided by the operator"), so that a new hand is dealt; with
``via="void_in_window"`` it voids them in the reveal window, once every seed it
waited for has come and before it writes the reveals (record 2): the deck is never
published, and only the table's ``void_rate`` can see it.
"""

from __future__ import annotations

import itertools
import json
import random
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from verifier import strategy
from verifier.audit import audit, read_folder
from verifier.chain import GENESIS, commit_move, move_body, reveal_move, start_hand
from verifier.fairness import PROTOCOL_V2, player_commit, reshuffler, sha256
from verifier.hand import Action, HandState, Phase, TableRules, TimeOut, action_to_json, apply
from verifier.record import HandRecorder
from verifier.signing import Signer

SERVER = Signer.from_seed(sha256(b"audit-sim server key: tests only, never for real hands"))
T0 = 1_767_225_600_000
WINDOW_MS = 10_000
VOID_REASON = "voided by the operator (D33)"


def player_key(table: str, player: str) -> Signer:
    return Signer.from_seed(sha256(f"audit-sim/{table}/{player}/key".encode()))


@dataclass(frozen=True)
class Grinder:
    colluder: str
    rate: float = 1.0
    max_withhold: int = 1
    criterion: Literal["deal", "playout"] = "deal"
    via: Literal["withhold", "void", "void_in_window"] = "withhold"


def play_out(state: HandState, key: bytes, cap: int = 600) -> HandState:
    """The hand played to its end by the strategy alone (the grinder's look-ahead)."""
    reshuffle = reshuffler(key)
    for _ in range(cap):
        if state.phase is Phase.ENDED:
            break
        state, _ = apply(state, strategy.choose(state, state.turn), reshuffle)
    return state


@dataclass
class TableSim:
    table_id: str
    players: list[str]  # player i sits in seat i; the first is always present
    seed: int
    rules: TableRules = field(default_factory=lambda: TableRules(seats=4, point_value=10, commission_bps=500))
    presence: float = 0.85  # each other player's chance to sit in a hand
    no_commit_rate: float = 0.01
    withhold_rate: float = 0.01
    clock_rate: float = 0.01  # a draw turn left to the clock
    grinder: Grinder | None = None
    hand_no: int = 0
    head: str = GENESIS
    dealer: int = 0
    now: int = T0
    ground: int = 0  # hands in which the grinder left an honest seat out

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.keys = {p: player_key(self.table_id, p) for p in self.players}

    def hands(self, n: int) -> Iterator[dict[str, Any]]:
        for _ in range(n):
            yield self.hand()

    # -- one hand ------------------------------------------------------------------
    def _seated(self) -> list[int]:
        seats = [0] + [i for i in range(1, len(self.players)) if self.rng.random() < self.presence]
        if len(seats) < 2:
            seats.append(self.rng.randrange(1, len(self.players)))
        return sorted(seats)

    def _sign(self, rec: HandRecorder, seat: int, prev: str, move: dict[str, Any]) -> str:
        body = move_body(rec.table_id, rec.hand_no, prev, move)
        return self.keys[self.players[seat]].sign("move", body, PROTOCOL_V2)

    def hand(self) -> dict[str, Any]:
        self.hand_no += 1
        seats = self._seated()
        # D3: a table's first hand is dealt by its lowest seat; then the button moves on
        self.dealer = seats[0] if self.hand_no == 1 else next((s for s in seats if s > self.dealer), seats[0])
        base = f"audit-sim/{self.table_id}/{self.seed}/{self.hand_no}"
        rec = HandRecorder(
            signer=SERVER,
            table_id=self.table_id,
            hand_no=self.hand_no,
            rules=self.rules,
            seats=[(s, self.players[s], self.keys[self.players[s]].public_bytes) for s in seats],
            dealer=self.dealer,
            server_seed=sha256(f"{base}/server".encode()),
            prev_head=self.head,
            commit_ms=WINDOW_MS,
            reveal_ms=WINDOW_MS,
        )
        seeds = {s: sha256(f"{base}/{s}".encode()) for s in seats}
        self.now += 60_000
        rec.open(self.now)
        commits = {}
        for s in seats:
            if self.rng.random() >= self.no_commit_rate:
                c = player_commit(s, seeds[s])
                commits[s] = (c, self._sign(rec, s, rec.head, commit_move(s, c)))
        self.now += WINDOW_MS if len(commits) < len(seats) else 1_500
        rec.commitments(commits, self.now)
        arrived = {}
        for s in commits:
            if self.rng.random() >= self.withhold_rate:
                arrived[s] = (seeds[s], self._sign(rec, s, rec.head, reveal_move(s, seeds[s])))
        if self._void(rec, self._reveals(rec, arrived), "void_in_window"):
            rec.void(VOID_REASON, self.now + 1_000)  # every seed it waited for is in: it knows the deck
            t = rec.transcript()
            self.head = str(t["head"])
            return t
        out = self._grind(rec, arrived)
        kept = {s: v for s, v in arrived.items() if s not in out}
        self.now += WINDOW_MS if len(kept) < len(commits) else 1_200
        rec.reveal(kept, self.now)
        self.now += 5
        if self._void(rec, rec.reveals, "void"):
            rec.void(VOID_REASON, self.now)
        else:
            rec.deal(self.now)
            self._play(rec)
        t = rec.transcript()
        self.head = str(t["head"])
        return t

    def _void(self, rec: HandRecorder, reveals: list[dict[str, Any]], via: str) -> bool:
        """Whether the void-grinder (of ``via``) voids this hand: with ``reveals``, its
        colluder would be dealt the strictly worst hand."""
        g = self.grinder
        if g is None or g.via != via or g.colluder not in self.players:
            return False
        c = self.players.index(g.colluder)
        _, _, state, _ = start_hand(rec.header, reveals, rec.server_seed)
        if state is None or c not in state.playing() or len(state.playing()) < 2 or self.rng.random() >= g.rate:
            return False
        counts = {s: strategy.points_of(list(state.seat(s).cards), state) for s in state.playing()}
        if all(counts[c] > v for s, v in counts.items() if s != c):
            self.ground += 1
            return True
        return False

    def _grind(self, rec: HandRecorder, arrived: dict[int, tuple[bytes, str]]) -> set[int]:
        """The seats the grinder claims never revealed (none for an honest house)."""
        g = self.grinder
        if g is None or g.via != "withhold" or g.colluder not in self.players:
            return set()
        c = self.players.index(g.colluder)
        if c not in arrived or self.rng.random() >= g.rate:
            return set()
        honest = sorted(s for s in arrived if s != c)
        dealt_now = [s for s in rec.seat_numbers if s in arrived or rec.commit_of(s) is None]
        best: tuple[Any, ...] | None = None
        chosen: set[int] = set()
        for k in range(min(g.max_withhold, len(dealt_now) - 2) + 1):
            for out in itertools.combinations(honest, k):
                score = self._score(rec, arrived, set(out), c, g)
                if best is None or score < best:
                    best, chosen = score, set(out)
        self.ground += bool(chosen)
        return chosen

    @staticmethod
    def _reveals(
        rec: HandRecorder, arrived: dict[int, tuple[bytes, str]], out: frozenset[int] = frozenset()
    ) -> list[dict[str, Any]]:
        """The reveals record's entries if the seeds ``arrived`` but those of ``out``
        are recorded."""
        reveals = []
        for s in rec.seat_numbers:
            if rec.commit_of(s) is None:
                reveals.append({"seat": s, "seed": "", "status": "no_commit"})
            elif s in arrived and s not in out:
                reveals.append({"seat": s, "seed": arrived[s][0].hex(), "status": "revealed"})
            else:
                reveals.append({"seat": s, "seed": "", "status": "withheld"})
        return reveals

    def _score(
        self, rec: HandRecorder, arrived: dict[int, tuple[bytes, str]], out: set[int], c: int, g: Grinder
    ) -> tuple[int, ...]:
        reveals = self._reveals(rec, arrived, frozenset(out))
        key, _, state, _ = start_hand(rec.header, reveals, rec.server_seed)
        assert state is not None
        dealt = strategy.points_of(list(state.seat(c).cards), state)
        if g.criterion == "deal":
            return (dealt, len(out))
        end = play_out(state, key)
        won = end.result is not None and end.result.winner == c
        return (0 if won else 1, len(out), dealt)

    def _choose(self, state: HandState) -> Action:
        """The move on turn: the clock's at ``clock_rate`` of draws, else the seat's."""
        if state.phase is Phase.DRAW and self.rng.random() < self.clock_rate:
            return TimeOut(state.turn)
        return strategy.choose(state, state.turn)

    def _play(self, rec: HandRecorder, cap: int = 600) -> None:
        turn_began = self.now
        for _ in range(cap):
            state = rec.state
            if rec.ended or state is None:
                return
            action = self._choose(state)
            if isinstance(action, TimeOut):
                self.now = max(self.now, turn_began + 1000 * rec.rules.turn_seconds) + 1
                psig = None
            else:
                self.now += 700
                psig = {"prev": rec.head, "sig": self._sign(rec, action.seat, rec.head, action_to_json(action))}
            _, events = rec.act(action, psig, self.now)
            if any(e.kind == "turn" for e in events):
                turn_began = self.now
        raise AssertionError(f"hand {rec.hand_no} of {rec.table_id} did not end in {cap} actions")


def write_table(sim: TableSim, hands: int, folder: Path) -> list[dict[str, Any]]:
    """Play ``hands`` hands and write each transcript to ``folder``; returns them."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for t in sim.hands(hands):
        (folder / f"{t['table_id']}-{t['hand_no']:05d}.json").write_text(json.dumps(t), encoding="utf-8")
        out.append(t)
    return out


@dataclass(frozen=True)
class TableRun:
    """A simulated table audited on its own (what a worker process sends back)."""

    table_id: str
    hands: int
    counted: int
    left_out: int
    seat_hands: int
    ground: int
    flagged: tuple[tuple[str, str, float], ...]  # (test, subject, p) of every flagged test
    smallest_p: tuple[str, str, float] | None  # the test closest to a flag


def audit_table(sim: TableSim, hands: int, folder: Path) -> TableRun:
    """Play a table into ``folder``, audit the folder as ``rummy-verify audit`` does,
    and remove the files."""
    write_table(sim, hands, folder)
    try:
        found = read_folder(folder)
        report = audit(found.hands)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    table = report["tables"][0] if report["tables"] else {"left_out": 0, "seat_hands": 0}
    tests = report["tests"]
    return TableRun(
        sim.table_id,
        hands,
        len(found.hands),
        table["left_out"],
        table["seat_hands"],
        sim.ground,
        tuple((t["test"], t.get("player") or t.get("table"), t["p_value"]) for t in tests if t["flagged"]),
        (tests[0]["test"], tests[0].get("player") or tests[0].get("table"), tests[0]["p_value"]) if tests else None,
    )
