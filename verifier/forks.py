"""Two signed items that tell one record of a hand two ways: a fork, seen on receipt by
the client that holds both (docs/fairness.md §15, "On receipt").

Every head, ack and receipt the server signs names the link ``h`` of a record of the
hand's log (a head and an ack their record ``i``; an accepted action's ack also the
record before it, by its ``prev``; a receipt record 0 or 1).  An honest server pushes a
record only once it is stored, so each record has one ``h`` for ever.  Two items that
verify under the hand's key and name two links for one record are a fork: the house
signed two histories of the hand, and the two items prove it by themselves — with no
transcript, against any transcript (the evidence check then fails on one of them, §15
rules 5–7), and whichever history it publishes.  ``rummy-verify DIR``'s ``fork`` check
finds two published transcripts of one hand; this finds the one a player was shown
beside another.

Pure, for the bots (:mod:`service.bots`); the table page has its own
(``service/web/table/evidence.js``).  Only items that verified are to be given here: a
bad signature proves nothing, so it can make no fork.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

SEED_RECORD = {"commit": 0, "reveal": 1}  # the record a seed's move is taken over (§15.6–7)
Seen = dict[tuple[str, int, int], tuple[str, Mapping[str, Any]]]  # (table, hand, i) -> the link, the item naming it


@dataclass(frozen=True)
class Link:
    """One item's word on one record: in hand (``table_id``, ``hand_no``), record ``i``
    has link ``h``."""

    table_id: str
    hand_no: int
    i: int
    h: str


@dataclass(frozen=True)
class Fork:
    """Two items that give record ``i`` of one hand two links."""

    table_id: str
    hand_no: int
    i: int
    expected: str  # the link the earlier item names
    found: str  # the link the later one names
    first: Mapping[str, Any]  # the earlier item, whole
    second: Mapping[str, Any]  # the later one

    def __str__(self) -> str:
        return (
            f"table {self.table_id}, hand {self.hand_no}: record {self.i} is {self.expected} by a "
            f"{self.first.get('purpose')} and {self.found} by a {self.second.get('purpose')}: "
            "the server signed two histories of this hand"
        )


def links(item: Mapping[str, Any]) -> tuple[Link, ...]:
    """What ``item`` (a §15 item) says the hand's records are; nothing for an item that
    names no record (a header, a player item) or is not well formed."""
    body = item.get("body")
    if not isinstance(body, Mapping):
        return ()
    table_id, hand_no = body.get("table_id"), body.get("hand_no")
    if not isinstance(table_id, str) or not _int(hand_no):
        return ()
    purpose = item.get("purpose")
    said: list[tuple[Any, Any]] = []
    if purpose in ("head", "ack"):
        said.append((body.get("i"), body.get("h")))
    if purpose == "ack" and body.get("outcome") == "accepted":
        move = body.get("move")
        kind = move.get("kind") if isinstance(move, Mapping) else None
        if kind in SEED_RECORD:
            said.append((SEED_RECORD[kind], body.get("prev")))  # taken over that record: prev is its link
        elif _int(body.get("i")):
            said.append((body["i"] - 1, body.get("prev")))  # an action's record follows the one it was signed over
    if purpose == "receipt" and body.get("kind") in SEED_RECORD:
        said.append((SEED_RECORD[body["kind"]], body.get("prev")))
    return tuple(Link(table_id, hand_no, i, h) for i, h in said if _int(i) and i >= 0 and isinstance(h, str))


def fork_with(seen: Seen, item: Mapping[str, Any]) -> Fork | None:
    """The fork ``item`` makes with what was ``seen`` before it ((table, hand, i) → the
    link and the item that named it), if any."""
    for link in links(item):
        had = seen.get((link.table_id, link.hand_no, link.i))
        if had is not None and had[0] != link.h:
            return Fork(link.table_id, link.hand_no, link.i, had[0], link.h, had[1], item)
    return None


def note(seen: Seen, item: Mapping[str, Any]) -> None:
    """Remember the links ``item`` names (the first word on a record stays)."""
    for link in links(item):
        seen.setdefault((link.table_id, link.hand_no, link.i), (link.h, item))


def forks(items: Iterable[Mapping[str, Any]]) -> list[Fork]:
    """Every fork among ``items``, in order: each item against those before it."""
    seen: Seen = {}
    found: list[Fork] = []
    for item in items:
        fork = fork_with(seen, item)
        if fork is not None:
            found.append(fork)
        note(seen, item)
    return found


def _int(x: Any) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)
