"""The table's facts as the store holds them, and the core's settings."""

from __future__ import annotations

from dataclasses import dataclass, field

from verifier.hand import TableRules


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


@dataclass(frozen=True)
class CoreConfig:
    """The table's clocks and bounds, in ms."""

    commit_ms: int = 10_000  # the commitment window (docs/fairness.md §10)
    reveal_ms: int = 10_000  # the reveal window
    next_hand_ms: int = 2_000  # between hands
    grace_ms: int = 10_000  # D32/D37: a seat's grace once it can reach the table again
    reach_ms: int = 10_000  # D37: how long a client is given to find the table's owner again
    hung_ms: int = 2_000  # D37: a write unanswered this long means the store is hung
    freeze_ms: int = 3_000  # D37: a gap this long between the shell's beats means this node stood still
    retry_first_ms: int = 200  # the first backoff step after repeated failures
    retry_max_ms: int = 5_000  # the backoff's ceiling
