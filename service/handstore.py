"""A hand's rows in PostgreSQL: the hand, its holds, its seeds, its records, its end.

Every write here is safe to repeat after an unknown outcome (a lost ``COMMIT`` reply):
records are inserted ``ON CONFLICT DO NOTHING`` and read back by key, a seed row is
written once, and a hand ends by one guarded status change, so a retry writes the same
bytes or finds what is stored and changes nothing.  When memory and the database
disagree, the table does not guess: it reloads the hand from here (:func:`load_hand`)
through the recorder, the same code path as a live hand (D32).

While a hand is live its records are stored twice: a public projection (what a
spectator may see) in ``record``, and the whole record sealed with the server's
AES-GCM key in ``sealed``; recovery opens the sealed copy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import asyncpg

from service import fastjson, ledger
from service.keys import ServerKeys
from verifier.settle import Settlement


class StoreConflict(Exception):
    """The database holds something else than this table believes: reload."""


def ts(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


def public_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """What a spectator may see of a record: events without their private parts, and
    no finish card in a declare (D24)."""
    out = dict(record)
    if "events" in out:
        out["events"] = [{**e, "private": {}} for e in out["events"]]
    if out.get("type") == "action" and out["action"].get("kind") == "declare":
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


async def insert_records(conn: asyncpg.Connection, hand_id: int, records: Sequence[SealedRecord]) -> None:
    """Store records; a record already stored with the same link is adopted, another
    record under the same number is a :class:`StoreConflict`."""
    for r in records:
        stored = await conn.fetchval(
            "INSERT INTO hand_records (hand_id, i, record, h, sealed) VALUES ($1, $2, $3::jsonb, $4, $5) "
            "ON CONFLICT (hand_id, i) DO NOTHING RETURNING h",
            hand_id,
            r.i,
            r.public,
            r.h,
            r.sealed,
        )
        if stored is None:
            existing = await conn.fetchval("SELECT h FROM hand_records WHERE hand_id = $1 AND i = $2", hand_id, r.i)
            if existing != r.h:
                raise StoreConflict(f"hand {hand_id} already holds another record {r.i}")


async def store_records(
    conn: asyncpg.Connection,
    hand_id: int,
    records: Sequence[SealedRecord],
    *,
    deadline: float | None,
    status: str | None = None,
) -> None:
    """Records and the hand's clock (in the caller's transaction)."""
    await insert_records(conn, hand_id, records)
    await conn.execute(
        "UPDATE hands SET deadline = $2, status = COALESCE($3, status) WHERE id = $1",
        hand_id,
        ts(deadline),
        status,
    )


COMMIT_SQL = (
    "WITH lk AS (SELECT 1 FROM table_leases WHERE table_id = $5 AND owner = $6 AND epoch = $7 FOR KEY SHARE), "
    "ins AS (INSERT INTO hand_seeds (hand_id, seat, commit, commit_psig) "
    "SELECT $1, $2, $3, $4 WHERE $7 < 0 OR EXISTS (SELECT 1 FROM lk) ON CONFLICT (hand_id, seat) DO NOTHING "
    "RETURNING 1) SELECT $7 < 0 OR EXISTS (SELECT 1 FROM lk) AS held, EXISTS (SELECT 1 FROM ins) AS done, "
    "(SELECT commit FROM hand_seeds WHERE hand_id = $1 AND seat = $2) AS stored"
)
REVEAL_SQL = (
    "WITH lk AS (SELECT 1 FROM table_leases WHERE table_id = $5 AND owner = $6 AND epoch = $7 FOR KEY SHARE), "
    "upd AS (UPDATE hand_seeds SET seed = $3, reveal_psig = $4, revealed_at = now() "
    "WHERE hand_id = $1 AND seat = $2 AND (seed IS NULL OR seed = $3) AND ($7 < 0 OR EXISTS (SELECT 1 FROM lk)) "
    "RETURNING 1) SELECT $7 < 0 OR EXISTS (SELECT 1 FROM lk) AS held, EXISTS (SELECT 1 FROM upd) AS done, "
    "NULL::bytea AS stored"
)


async def store_seed(
    conn: asyncpg.Connection,
    kind: str,
    lease: tuple[str, str, int],
    hand_id: int,
    seat: int,
    value: bytes,
    psig: str,
) -> bool:
    """A seat's accepted commitment (``kind`` "commit") or seed ("reveal"), in one
    statement that checks the table's lease (table id, owner, epoch; epoch < 0: none).
    The same value again changes nothing.  False if the lease is gone (fenced);
    StoreConflict if another value is stored."""
    row = await conn.fetchrow(COMMIT_SQL if kind == "commit" else REVEAL_SQL, hand_id, seat, value, psig, *lease)
    assert row is not None
    if not row["held"]:
        return False
    if not row["done"] and not (kind == "commit" and row["stored"] is not None and bytes(row["stored"]) == value):
        raise StoreConflict(f"hand {hand_id} seat {seat} has no commitment, or another {kind} is stored")
    return True


async def finish(
    conn: asyncpg.Connection,
    *,
    table_id: str,
    hand_id: int,
    transcript: Mapping[str, Any],
    holds: Mapping[int, tuple[str, int]],
    settlement: Settlement | None,
    void_reason: str | None,
    stand_up: Sequence[str] = (),
) -> list[str] | None:
    """End a hand once: settle (D19) or release every hold (a void, D33), publish the
    transcript, move the table's head, stand up ``stand_up`` and the seats the
    operator asked to stand up as the hand ends.  Returns the players stood up, or
    None, changing nothing, if the hand had already ended (a retry after an unknown
    outcome).  In the caller's transaction."""
    ended = await conn.fetchval(
        "UPDATE hands SET status = $2, transcript = $3::jsonb, ended_at = now(), deadline = NULL, "
        "void_reason = $4 WHERE id = $1 AND status IN ('seeding', 'playing') RETURNING id",
        hand_id,
        "ended" if settlement is not None else "void",
        json.dumps(transcript),
        void_reason,
    )
    if ended is None:
        return None
    if settlement is not None:
        await ledger.settle(conn, hand_id, holds, settlement)
    elif holds:
        await ledger.release(conn, {p: a for p, a in holds.values()}, hand_id)
    await conn.execute("UPDATE tables SET head = $2 WHERE id = $1", table_id, transcript["head"])
    rows = await conn.fetch(
        "DELETE FROM seats WHERE table_id = $1 AND (player_id = ANY($2::text[]) OR stand_after_hand) "
        "RETURNING player_id",
        table_id,
        list(stand_up),
    )
    return [str(r["player_id"]) for r in rows]


async def quarantine_after(conn: asyncpg.Connection, hand_id: int, keep: int) -> int:
    """Move the records from number ``keep`` on aside (they did not replay, D33); in
    the caller's transaction."""
    moved = await conn.fetch(
        "DELETE FROM hand_records WHERE hand_id = $1 AND i >= $2 RETURNING i, record, sealed, h", hand_id, keep
    )
    for r in moved:
        await conn.execute(
            "INSERT INTO hand_records_quarantine (hand_id, i, record, sealed, h) VALUES ($1, $2, $3, $4, $5)",
            hand_id,
            r["i"],
            r["record"],
            r["sealed"],
            r["h"],
        )
    return len(moved)


# ----------------------------------------------------------------------------- loading
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


async def load_hand(conn: asyncpg.Connection, table_id: str) -> StoredHand | None:
    """The table's unfinished hand, whatever its phase, or None."""
    row = await conn.fetchrow(
        "SELECT id, hand_no, status, seed_nonce, seed_sealed, deadline FROM hands "
        "WHERE table_id = $1 AND status IN ('seeding', 'playing') ORDER BY hand_no DESC LIMIT 1",
        table_id,
    )
    if row is None:
        return None
    hand_id = int(row["id"])
    players = {
        int(r["seat"]): (str(r["player_id"]), int(r["hold"]))
        for r in await conn.fetch("SELECT seat, player_id, hold FROM hand_players WHERE hand_id = $1", hand_id)
    }
    out = StoredHand(
        hand_id,
        int(row["hand_no"]),
        str(row["status"]),
        bytes(row["seed_nonce"]),
        bytes(row["seed_sealed"]),
        None if row["deadline"] is None else row["deadline"].timestamp(),
        players,
    )
    for r in await conn.fetch(
        "SELECT seat, commit, commit_psig, seed, reveal_psig FROM hand_seeds WHERE hand_id = $1", hand_id
    ):
        if r["commit_psig"] is not None:
            out.commits[int(r["seat"])] = (bytes(r["commit"]), str(r["commit_psig"]))
        if r["seed"] is not None and r["reveal_psig"] is not None:
            out.seeds[int(r["seat"])] = (bytes(r["seed"]), str(r["reveal_psig"]))
    out.records = [
        (int(r["i"]), str(r["record"]), None if r["sealed"] is None else bytes(r["sealed"]), str(r["h"]))
        for r in await conn.fetch(
            "SELECT i, record::text AS record, sealed, h FROM hand_records WHERE hand_id = $1 ORDER BY i", hand_id
        )
    ]
    return out


async def ended_hand(conn: asyncpg.Connection, hand_id: int) -> asyncpg.Record | None:
    """A hand's row once it has ended or been voided (for telling players after a reload)."""
    return await conn.fetchrow(
        "SELECT id, hand_no, status, transcript::text AS transcript FROM hands "
        "WHERE id = $1 AND status IN ('ended', 'void')",
        hand_id,
    )
