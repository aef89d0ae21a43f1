"""A hand's rows as the table store writes and reads them — pure shapes, no SQL (the
SQL is all in :mod:`service.tablestore`): a record sealed for storing
(:class:`SealedRecord`, :func:`seal`, with its public projection
:func:`public_record`), an unfinished hand as loaded (:class:`StoredHand`, which the
table rebuilds through the recorder, D32), and :class:`StoreConflict`.

While a hand is live its records are stored twice: a public projection (what a
spectator may see) in ``record``, and the whole record sealed with the server's
AES-GCM key in ``sealed``; recovery opens the sealed copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from service import fastjson
from service.keys import ServerKeys


class StoreConflict(Exception):
    """The database holds something else than this table believes: reload."""


def ts(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


def public_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """What a spectator may see of a record: events without their private parts, no
    finish card in a declare (D24), and no player signature.  A signature is an oracle
    for what it signs: with ``prev`` and the seat's key, trying each of the 106 card ids
    names a declare's hidden finish card; and with it the record's ``h`` (the hash of
    the whole record) names the card a closed draw took (found by the audit of
    2026-12-07).  Without it neither can be tried; the sealed copy keeps it."""
    out = dict(record)
    if "events" in out:
        out["events"] = [{**e, "private": {}} for e in out["events"]]
    if out.get("type") == "action":
        out.pop("psig", None)
        if out["action"].get("kind") == "declare":
            out["action"] = {"kind": "declare", "seat": out["action"]["seat"]}
    return out


@dataclass
class SealedRecord:
    """A record ready to store: the whole record sealed, the projection public."""

    i: int
    h: str
    public: str
    sealed: bytes


def seal(keys: ServerKeys, table_id: str, hand_no: int, record: Mapping[str, Any]) -> SealedRecord:
    data = fastjson.canonical(record)
    return SealedRecord(
        int(record["i"]),
        str(record["h"]),
        fastjson.dumps(public_record(record)),
        keys.seal_record(data, table_id, hand_no, int(record["i"])),
    )


@dataclass
class StoredHand:
    """A hand in progress as the database has it."""

    hand_id: int
    hand_no: int
    status: str
    seed_nonce: bytes
    seed_sealed: bytes
    deadline: float | None
    players: dict[int, tuple[str, int]]  # seat -> (player id, hold)
    commits: dict[int, tuple[bytes, str]] = field(default_factory=dict)
    seeds: dict[int, tuple[bytes, str]] = field(default_factory=dict)
    records: list[tuple[int, str, bytes | None, str]] = field(default_factory=list)  # (i, public, sealed, h)
    # D33: the records that did not replay were set aside and the void not yet stored
    # (io.QuarantineOp stores why; a reload in between voids the hand for it)
    void_reason: str | None = None
