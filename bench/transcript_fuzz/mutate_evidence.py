"""Mutations that read the evidence a seat kept of the hand (§15 rule 7): a void
about when a refused seat's turn ends, an accepted move dated before it arrived.
"""

from __future__ import annotations

import random
from typing import Any

from bench.transcript_fuzz.common import NotHere
from bench.transcript_fuzz.paths import header

_EVIDENCE: list[Any] = []  # the evidence of the hand being mutated (for the mutations that read it)


def _acks(outcome: str) -> list[dict[str, Any]]:
    return [
        it["body"]
        for it in _EVIDENCE
        if isinstance(it, dict)
        and it.get("purpose") == "ack"
        and isinstance(it.get("body"), dict)
        and it["body"].get("outcome") == outcome
        and it["body"].get("move", {}).get("kind") not in ("commit", "reveal")
    ]


def m_owed(t: dict[str, Any], rng: random.Random) -> str:
    """After a refusal the seat holds an ack of (D35): the hand voided, or the seat's
    clock moved, about when its whole turn from the refusal ends (§15 rule 7)."""
    acks = [b for b in _acks("refused") if isinstance(b.get("i"), int) and 3 <= b["i"] < len(t["log"]) - 1]
    if not acks:
        raise NotHere
    b = rng.choice(acks)
    log = t["log"]
    due = b["arrived"] + 1000 * header(t)["rules"]["turn_seconds"]
    k = b["i"] + rng.choice([1, 1, 2, 3])
    if k >= len(log):
        raise NotHere
    del log[k:]
    when = max(log[-1]["t"], due + rng.choice([-1, 0, 1, -1000]))
    log.append({"i": k, "t": when, "type": "void", "reason": "operator", "h": ""})
    t["result"] = None
    return f"void at {k} after seat {b['seat']}'s refusal at {b['i']}, t = due {when - due:+d}"


def m_backdate(t: dict[str, Any], rng: random.Random) -> str:
    """An accepted move's record dated before the move arrived (§15 rule 7), the
    records around it kept in order."""
    acks = [b for b in _acks("accepted") if isinstance(b.get("i"), int) and 4 <= b["i"] < len(t["log"])]
    if not acks:
        raise NotHere
    b = rng.choice(acks)
    log = t["log"]
    i = b["i"]
    log[i]["t"] = max(log[i - 1]["t"], b["arrived"] + rng.choice([-1, -1, 0, -500]))
    late = log[i]["t"] - b["arrived"]
    return f"record {i} (seat {b['seat']}'s accepted {b['move']['kind']}) dated {late:+d} from its arrival"
