"""Players, tokens, tables and seats in PostgreSQL."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any

import asyncpg

from service import ledger
from verifier.hand import TableRules
from verifier.settle import hold_amount

TOKEN_BYTES = 32


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def same_hash(a: bytes, b: bytes) -> bool:
    return hmac.compare_digest(a, b)


class StoreError(Exception):
    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


@dataclass(frozen=True)
class Player:
    id: str
    name: str
    is_bot: bool


async def create_player(
    conn: asyncpg.Connection,
    name: str,
    *,
    is_bot: bool = False,
    deposit: int = 0,
    public_key: bytes | None = None,
) -> tuple[Player, str]:
    """A new player, their accounts and their first deposit in one transaction, and
    their bearer token (returned once; only its hash is kept)."""
    token = new_token()
    player_id = "p_" + secrets.token_hex(8)
    async with conn.transaction():
        await conn.execute(
            "INSERT INTO players (id, name, token_hash, is_bot, public_key) VALUES ($1, $2, $3, $4, $5)",
            player_id,
            name,
            token_hash(token),
            is_bot,
            public_key,
        )
        await ledger.open_accounts(conn, player_id)
        if deposit:
            await ledger.deposit(conn, player_id, deposit)
    return Player(player_id, name, is_bot), token


async def set_public_key(conn: asyncpg.Connection, player_id: str, public_key: bytes) -> None:
    """The Ed25519 key the player signs moves with (rummy-pf/v2); each hand's header
    lists the key in force when it was dealt."""
    await conn.execute("UPDATE players SET public_key = $2 WHERE id = $1", player_id, public_key)


async def player_by_token(conn: asyncpg.Connection, token: str) -> Player | None:
    row = await conn.fetchrow(
        "SELECT id, name, is_bot, token_hash FROM players WHERE token_hash = $1", token_hash(token)
    )
    if row is None or not same_hash(bytes(row["token_hash"]), token_hash(token)):
        return None
    return Player(row["id"], row["name"], row["is_bot"])


async def player_exists(conn: asyncpg.Connection, player_id: str) -> bool:
    return bool(await conn.fetchval("SELECT 1 FROM players WHERE id = $1", player_id))


async def operator_token(conn: asyncpg.Connection, from_env: str | None) -> str | None:
    """The operator token's hash is kept in server_settings.  With a token in the
    environment, that token is the operator's; without one, a token is created on
    first run and returned (to be printed once); afterwards None is returned."""
    if from_env:
        await conn.execute(
            "INSERT INTO server_settings (key, value) VALUES ('operator_token_hash', $1) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            token_hash(from_env).hex(),
        )
        return None
    existing = await conn.fetchval("SELECT value FROM server_settings WHERE key = 'operator_token_hash'")
    if existing:
        return None
    token = new_token()
    await conn.execute(
        "INSERT INTO server_settings (key, value) VALUES ('operator_token_hash', $1) ON CONFLICT DO NOTHING",
        token_hash(token).hex(),
    )
    return token


async def is_operator(conn: asyncpg.Connection, token: str) -> bool:
    stored = await conn.fetchval("SELECT value FROM server_settings WHERE key = 'operator_token_hash'")
    return bool(stored) and same_hash(bytes.fromhex(stored), token_hash(token))


RULE_FIELDS = ("seats", "point_value", "commission_bps", "turn_seconds", "max_missed_turns", "min_players")


def rules_of(row: asyncpg.Record | dict[str, Any]) -> TableRules:
    return TableRules(**{k: int(row[k]) for k in RULE_FIELDS})


async def create_table(conn: asyncpg.Connection, rules: TableRules, *, max_away_hands: int = 3) -> str:
    table_id = "t_" + secrets.token_hex(6)
    await conn.execute(
        "INSERT INTO tables (id, seats, point_value, commission_bps, turn_seconds, max_missed_turns, min_players, "
        "max_away_hands) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        table_id,
        rules.seats,
        rules.point_value,
        rules.commission_bps,
        rules.turn_seconds,
        rules.max_missed_turns,
        rules.min_players,
        max_away_hands,
    )
    return table_id


async def table_row(conn: asyncpg.Connection, table_id: str) -> asyncpg.Record | None:
    return await conn.fetchrow("SELECT * FROM tables WHERE id = $1", table_id)


async def seats_of(conn: asyncpg.Connection, table_id: str) -> dict[int, str]:
    rows = await conn.fetch("SELECT seat, player_id FROM seats WHERE table_id = $1", table_id)
    return {int(r["seat"]): str(r["player_id"]) for r in rows}


async def list_tables(conn: asyncpg.Connection) -> list[dict[str, Any]]:
    rows = await conn.fetch("SELECT * FROM tables ORDER BY created_at, id")
    seats = await conn.fetch(
        "SELECT s.table_id, s.seat, s.player_id, p.name FROM seats s JOIN players p "
        "ON p.id = s.player_id ORDER BY s.seat"
    )
    by_table: dict[str, list[dict[str, Any]]] = {}
    for s in seats:
        by_table.setdefault(s["table_id"], []).append(
            {"seat": s["seat"], "player_id": s["player_id"], "name": s["name"]}
        )
    return [
        {
            "id": r["id"],
            **{k: int(r[k]) for k in RULE_FIELDS},
            "max_away_hands": int(r["max_away_hands"]),
            "hold": hold_amount(int(r["point_value"])),
            "seated": by_table.get(r["id"], []),
            "next_hand_no": r["next_hand_no"],
        }
        for r in rows
    ]


async def hand_history(conn: asyncpg.Connection, player_id: str, limit: int = 50) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        "SELECT h.id, h.table_id, h.hand_no, h.status, hp.seat, hp.hold, h.started_at, h.ended_at, "
        "h.transcript->'result'->'settlement'->'deltas'->>(hp.seat::text) AS delta, "
        "h.transcript->'result'->'points'->>(hp.seat::text) AS points "
        "FROM hand_players hp JOIN hands h ON h.id = hp.hand_id WHERE hp.player_id = $1 "
        "ORDER BY h.id DESC LIMIT $2",
        player_id,
        limit,
    )
    return [
        {
            "hand_id": r["id"],
            "table_id": r["table_id"],
            "hand_no": r["hand_no"],
            "status": r["status"],
            "seat": r["seat"],
            "points": None if r["points"] is None else int(r["points"]),
            "delta": None if r["delta"] is None else int(r["delta"]),
            "transcript": f"/api/hands/{r['id']}/transcript" if r["status"] in ("ended", "void") else None,
        }
        for r in rows
    ]
