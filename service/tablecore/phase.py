"""The phase of a hand at a table: the kernel's :class:`verifier.hand.Phase` (draw,
discard, ended) is the play phase's detail; before it come the seed windows and the
deal, after it the settlement."""

from __future__ import annotations

from enum import StrEnum


class HandPhase(StrEnum):
    COMMIT = "commit"  # record 0 stored: commitments are taken (docs/fairness.md §10)
    REVEAL = "reveal"  # record 1 stored: seeds are taken
    DEAL = "deal"  # record 2 stored, the deal not yet (only after a restart)
    PLAY = "play"  # the deal stored: the kernel's Phase says draw or discard
    FINISHING = "finishing"  # the log ended (or is void): to settle and publish


class TableStatus(StrEnum):
    OPEN = "open"
    CLOSING = "closing"  # no new hand; the hand in progress finishes
    CLOSED = "closed"
