"""The table's facts as the store holds them, and the core's settings."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from service.telling import iso_ms
from verifier.hand import TableRules

STOOD_KEPT = 1000  # players whose last stand-up a table remembers


@dataclass
class TableFacts:
    """A table's row and seats (the store is the truth; the core reloads them)."""

    rules: TableRules = field(default_factory=TableRules)
    max_away: int = 3
    seats: dict[int, str] = field(default_factory=dict)  # seat -> player id
    head: str = ""
    dealer: int | None = None
    next_hand_no: int = 1
    status: str = "open"  # open, closing (no new hand), closed
    #: player id -> why and when their seat was last stood up, for the snapshot of a
    #: player who comes back to find it gone (memory only: lost with a restart or a move)
    stood: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: player id -> (reason, rule) of a stand-up asked for during the hand, done as it ends
    after_hand: dict[str, tuple[str, str | None]] = field(default_factory=dict)

    def stand(
        self, players: Collection[str], reason: str, rule: str | None, hand_no: int | None, now: int
    ) -> list[dict[str, Any]]:
        """Stand these players' seats up (in memory; the store has it): what the
        ``table`` push tells everyone and a later snapshot tells the player.
        ``reason``: ``away`` (D34), ``cannot_cover`` (D34: connected, not dealt in for
        want of the hold), ``clock`` (D31), ``operator``, ``closed``, ``left``
        (D15 charged, D36 before the deal), ``after_hand`` (asked for during the hand,
        by whom not known to this node)."""
        out = []
        for seat, player_id in sorted(self.seats.items()):
            if player_id in players:
                entry = {"seat": seat, "player_id": player_id, "reason": reason, "rule": rule, "hand_no": hand_no}
                out.append(entry)
                self.stood.pop(player_id, None)
                self.stood[player_id] = {**entry, "at": iso_ms(now)}
        self.seats = {s: p for s, p in self.seats.items() if p not in players}
        while len(self.stood) > STOOD_KEPT:
            del self.stood[next(iter(self.stood))]
        return out


@dataclass(frozen=True)
class CoreConfig:
    """The table's clocks and bounds, in ms."""

    commit_ms: int = 10_000  # the commitment window (docs/fairness.md §10)
    reveal_ms: int = 10_000  # the reveal window
    next_hand_ms: int = 2_000  # between hands
    grace_ms: int = 10_000  # D32/D37: a seat's grace once it can reach the table again
    reach_ms: int = 10_000  # D37: how long a client is given to find the table's owner again
    away_ms: int = 120_000  # D34: a seat away this long at a table too few are connected to deal at stands up
    hung_ms: int = 2_000  # D37: a write unanswered this long means the store is hung
    freeze_ms: int = 3_000  # D37: a gap this long between the shell's beats means this node stood still
    beat_ms: int = 1_000  # the shell steps its core at least this often (service.table: beat_seconds)
    stall_ms: int = 250  # D37: a step this much later than the wake asked for (or the beat) is a stall
    jitter_ms: int = 10  # D37: a wake no later than this is on time (the loop's jitter); a later one is a short stall
    settle_ms: int = 100  # D37: after a short stall, the least time a seat keeps for its move, read at last, to step
    slew: int = 10  # D37: while ahead of its clock, the table's time runs at (slew - 1) / slew of its pace
    retry_first_ms: int = 200  # the first backoff step after repeated failures
    retry_max_ms: int = 5_000  # the backoff's ceiling
    refusing_ms: int = 10_000  # D37: a store that refused a table's write is reported this long after (2 backoffs)

    def __post_init__(self) -> None:
        if self.away_ms < 1000:
            raise ValueError(f"away_ms must be at least 1000 (a second), not {self.away_ms}")
        if self.slew < 2:
            raise ValueError(f"slew must be at least 2 (the table's time would stand still), not {self.slew}")
