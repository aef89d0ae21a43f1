"""An ack checked on receipt by the client that sent the move (docs/fairness.md §15,
"On receipt").

The evidence checks (:mod:`verifier.evidence`) judge an ack against the transcript.
They cannot tell the move a player sent from the move the house says it received: a
refusal whose echo is not the player's move — another ``psig`` or ``prev``, another
move, an ``arrived`` from before the move was sent — can look justified (a signature
that does not verify, a stale ``prev``) or owe the seat less time, and no third party
can see otherwise.  Only the client that sent the move can, at once, while the seat's
turn still runs: this module is that check, pure, for the bots
(:mod:`service.bots`); the table page has its own (``service/web/table/evidence.js``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from verifier.fairness import canonical

SLACK_MS = 5_000  # how far the client's estimate of the server's clock may be off
ECHOED = ("table_id", "hand_no", "seat", "prev", "psig")


@dataclass(frozen=True)
class Sent:
    """A signed move as the client sent it."""

    table_id: str
    hand_no: int
    seat: int
    move: Mapping[str, Any]  # as signed (§9), with its seat
    prev: str  # the record's h it was signed over
    psig: str  # the client's signature
    at: int  # ms on the server's clock, as the client estimates it, when sent


@dataclass(frozen=True)
class Fault:
    """One field of an ack that does not echo the move sent."""

    field: str
    expected: Any
    found: Any

    def __str__(self) -> str:
        return f"{self.field}: expected {self.expected!r}, found {self.found!r}"


def echo_faults(body: Mapping[str, Any], sent: Sent, outcome: str) -> list[Fault]:
    """What of the ack's ``body`` is not the move ``sent``, answered with ``outcome``
    (``accepted`` for a reply, ``refused`` for an error); empty when it echoes it."""
    faults = [
        Fault(name, getattr(sent, name), body.get(name)) for name in ECHOED if body.get(name) != getattr(sent, name)
    ]
    move = body.get("move")
    found = _text(move) if isinstance(move, Mapping) else None
    if found is None or found != _text(sent.move):
        faults.append(Fault("move", dict(sent.move), move))
    if body.get("outcome") != outcome:
        faults.append(Fault("outcome", outcome, body.get("outcome")))
    arrived = body.get("arrived")
    if not isinstance(arrived, int) or isinstance(arrived, bool) or arrived < sent.at - SLACK_MS:
        faults.append(Fault("arrived", f">= {sent.at - SLACK_MS}", arrived))
    return faults


def _text(move: Mapping[str, Any]) -> bytes | None:
    try:
        return canonical(dict(move))
    except (TypeError, ValueError):  # not JSON data (a float, say): echoes nothing
        return None
