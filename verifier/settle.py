"""Settlement in integer HT minor units (RULES.md D18–D20).

Each loser pays points × point_value; the pot is what the losers pay; the house
keeps floor(pot × commission_bps / 10 000); the winner receives the rest.  Every
settlement balances to zero across winner, losers and house.  No floats anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from verifier.errors import RuleError

MAX_POINTS = 130  # D13/D20: the most a hand can cost a seat (13 cards × 10)
BPS = 10_000


@dataclass(frozen=True, slots=True)
class Settlement:
    """What each seat pays or receives.  ``deltas`` maps seat → signed HT change;
    ``commission`` goes to the house.  ``sum(deltas.values()) + commission == 0``."""

    winner: int
    point_value: int
    commission_bps: int
    points: Mapping[int, int]
    pot: int
    commission: int
    deltas: Mapping[int, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {
            "winner": self.winner,
            "point_value": self.point_value,
            "commission_bps": self.commission_bps,
            "points": {str(s): p for s, p in sorted(self.points.items())},
            "pot": self.pot,
            "commission": self.commission,
            "deltas": {str(s): d for s, d in sorted(self.deltas.items())},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Settlement:
        def ints(x: object) -> dict[int, int]:
            assert isinstance(x, dict)
            return {int(k): int(v) for k, v in x.items()}

        return cls(
            winner=int(str(data["winner"])),
            point_value=int(str(data["point_value"])),
            commission_bps=int(str(data["commission_bps"])),
            points=ints(data["points"]),
            pot=int(str(data["pot"])),
            commission=int(str(data["commission"])),
            deltas=ints(data["deltas"]),
        )


def _check_int(name: str, value: object, low: int, high: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise RuleError("bad_amount", f"{name} must be an integer, not {type(value).__name__}", rule="D18")
    if value < low or (high is not None and value > high):
        raise RuleError("bad_amount", f"{name}={value} is out of range", rule="D18")
    return value


def settle(points: Mapping[int, int], winner: int, point_value: int, commission_bps: int) -> Settlement:
    """D19: settle a hand.  ``points`` holds every seat that took part, the winner
    with 0."""
    _check_int("point_value", point_value, 1)
    _check_int("commission_bps", commission_bps, 0, BPS)
    if winner not in points:
        raise RuleError("bad_settlement", f"winner seat {winner} took no part", rule="D19")
    if points[winner] != 0:
        raise RuleError("bad_settlement", "the winner scores 0", rule="D12")
    for seat, p in points.items():
        _check_int(f"points of seat {seat}", p, 0, MAX_POINTS)
    pays = {s: p * point_value for s, p in points.items() if s != winner}
    pot = sum(pays.values())
    commission = pot * commission_bps // BPS
    deltas = {s: -amount for s, amount in pays.items()}
    deltas[winner] = pot - commission
    return Settlement(winner, point_value, commission_bps, dict(points), pot, commission, deltas)


def hold_amount(point_value: int) -> int:
    """D20: what a seat must have available, and has held, for each hand."""
    return MAX_POINTS * _check_int("point_value", point_value, 1)
