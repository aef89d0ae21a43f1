"""Players, tokens, tables and seats in PostgreSQL."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

import asyncpg

from service import ledger
from service.errors import EXIT_REFUSED, ServiceError
from service.keys import ServerKeys
from verifier.hand import TableRules
from verifier.settle import hold_amount

TOKEN_BYTES = 32


def new_token() -> str:
    """A bearer token: base64url of 32 random bytes that never begins with "-", so a person
    can paste it after ``--token`` on a command line (argparse would take it for an option)."""
    while True:
        token = secrets.token_urlsafe(TOKEN_BYTES)
        if not token.startswith("-"):
            return token


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def same_hash(a: bytes, b: bytes) -> bool:
    return hmac.compare_digest(a, b)


class StoreError(ServiceError):
    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message, code=code, status=status)


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
        with _key_in_use():
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
    lists the key in force when it was dealt.  A key is one player's: another's is
    refused (``key_in_use``, D36), so no hand lists one key for two seats."""
    with _key_in_use():
        await conn.execute("UPDATE players SET public_key = $2 WHERE id = $1", player_id, public_key)


@contextlib.contextmanager
def _key_in_use() -> Iterator[None]:
    try:
        yield
    except asyncpg.UniqueViolationError as e:
        if e.constraint_name != "players_public_key_unique":
            raise
        raise StoreError(
            "key_in_use", "this public key is registered to another player: register your own", 409
        ) from None


async def player_by_token(conn: asyncpg.Connection, token: str) -> Player | None:
    row = await conn.fetchrow(
        "SELECT id, name, is_bot, token_hash FROM players WHERE token_hash = $1", token_hash(token)
    )
    if row is None or not same_hash(bytes(row["token_hash"]), token_hash(token)):
        return None
    return Player(row["id"], row["name"], row["is_bot"])


SESSION_DAYS = 30


#: the two kinds of a player's secrets with a life: a browser session, a socket's ticket
_ISSUE: Final = {
    "sessions": (
        "DELETE FROM sessions WHERE expires_at < now()",
        "INSERT INTO sessions (id_hash, player_id, expires_at) VALUES ($1, $2, now() + $3)",
    ),
    "ws_tickets": (
        "DELETE FROM ws_tickets WHERE expires_at < now()",
        "INSERT INTO ws_tickets (id_hash, player_id, expires_at) VALUES ($1, $2, now() + $3)",
    ),
}


async def _issue(conn: asyncpg.Connection, kind: str, player_id: str, life: timedelta) -> str:
    """A new secret of ``kind`` for the player, good for ``life`` (returned once; only
    its hash is kept); those past their expiry are swept on the way."""
    sweep, insert = _ISSUE[kind]
    value = new_token()
    await conn.execute(sweep)
    await conn.execute(insert, token_hash(value), player_id, life)
    return value


async def create_session(conn: asyncpg.Connection, player_id: str, days: int = SESSION_DAYS) -> str:
    """A new browser session for the player (its id)."""
    return await _issue(conn, "sessions", player_id, timedelta(days=days))


async def player_by_session(conn: asyncpg.Connection, session: str) -> Player | None:
    """The player of a live session, or None (unknown or expired)."""
    row = await conn.fetchrow(
        "SELECT p.id, p.name, p.is_bot, s.id_hash FROM sessions s JOIN players p ON p.id = s.player_id "
        "WHERE s.id_hash = $1 AND s.expires_at > now()",
        token_hash(session),
    )
    return _holder(row, session)


def _holder(row: asyncpg.Record | None, secret: str) -> Player | None:
    """The player of a row found by ``secret``'s hash, its hash compared again in
    constant time; None for no row."""
    if row is None or not same_hash(bytes(row["id_hash"]), token_hash(secret)):
        return None
    return Player(row["id"], row["name"], row["is_bot"])


TICKET_SECONDS = 60


async def create_ticket(conn: asyncpg.Connection, player_id: str, seconds: int = TICKET_SECONDS) -> str:
    """A one-time ticket for the player's WebSocket to another node of the card room."""
    return await _issue(conn, "ws_tickets", player_id, timedelta(seconds=seconds))


async def player_by_ticket(conn: asyncpg.Connection, ticket: str) -> Player | None:
    """The player of a live ticket, or None (unknown, used or expired).  A ticket
    opens one socket: it is used up here."""
    row = await conn.fetchrow(
        "WITH t AS (DELETE FROM ws_tickets WHERE id_hash = $1 AND expires_at > now() RETURNING id_hash, player_id) "
        "SELECT p.id, p.name, p.is_bot, t.id_hash FROM t JOIN players p ON p.id = t.player_id",
        token_hash(ticket),
    )
    return _holder(row, ticket)


async def end_session(conn: asyncpg.Connection, session: str) -> None:
    await conn.execute("DELETE FROM sessions WHERE id_hash = $1", token_hash(session))


async def player_exists(conn: asyncpg.Connection, player_id: str) -> bool:
    return bool(await conn.fetchval("SELECT 1 FROM players WHERE id = $1", player_id))


async def check_keys(conn: asyncpg.Connection, keys: ServerKeys) -> None:
    """The first server to start on a database records which keys it holds; every
    later start (another node, a restored data directory) must hold the same ones."""
    for key, value in (("signing_key_fingerprint", keys.signer.fingerprint), ("seal_key_check", keys.seal_check)):
        await conn.execute(
            "INSERT INTO server_settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING", key, value
        )
    rows = await conn.fetch(
        "SELECT key, value FROM server_settings WHERE key IN ('signing_key_fingerprint', 'seal_key_check')"
    )
    problem = keys.identity_problem({r["key"]: r["value"] for r in rows})
    if problem is not None:
        keys.forget_created()
        raise problem


class OperatorTokenMismatch(ServiceError):
    """RUMMY_OPERATOR_TOKEN is set, and is not the operator token this database holds."""

    exit_code = EXIT_REFUSED  # at start-up: never sent to a client


async def operator_token(conn: asyncpg.Connection, from_env: str | None) -> str | None:
    """The operator token, installed once: with a token in the environment and none
    stored yet, that token becomes the operator's; without one, a token is created on
    first run and returned (to be printed once); afterwards None is returned.  A token
    in the environment that differs from the stored one is refused, never silently
    swapped in (rotate it with ``POST /api/admin/operator-token``)."""
    active = await conn.fetchval("SELECT token_hash FROM operator_tokens WHERE retired_at IS NULL")
    if active is not None:
        if from_env and not same_hash(bytes(active), token_hash(from_env)):
            raise OperatorTokenMismatch(
                "RUMMY_OPERATOR_TOKEN is not this server's operator token; unset it, or rotate the token "
                "with 'rummy-table admin rotate-token' and use the new one"
            )
        return None
    token = from_env or new_token()
    await conn.execute("INSERT INTO operator_tokens (token_hash) VALUES ($1) ON CONFLICT DO NOTHING", token_hash(token))
    return None if from_env else token


async def operator_status(conn: asyncpg.Connection, token: str) -> str | None:
    """'active' for the operator token, 'retired:<when>' for one rotated away, else None."""
    row = await conn.fetchrow("SELECT retired_at FROM operator_tokens WHERE token_hash = $1", token_hash(token))
    if row is None:
        return None
    return "active" if row["retired_at"] is None else f"retired:{row['retired_at'].isoformat()}"


async def rotate_operator_token(conn: asyncpg.Connection) -> str:
    """A new operator token (returned once); the old one stops working at once."""
    token = new_token()
    async with conn.transaction():
        await conn.execute("UPDATE operator_tokens SET retired_at = now() WHERE retired_at IS NULL")
        await conn.execute("INSERT INTO operator_tokens (token_hash) VALUES ($1)", token_hash(token))
    return token


def _storable(value: Any) -> Any:
    """``value`` as PostgreSQL can store it: a NUL (which ``text`` and ``jsonb`` refuse)
    or a lone surrogate (no UTF-8) in any string written as its ``\\uXXXX`` escape.  A
    refusal's message may echo what a client sent: the drill fuzz's operator body
    ``{"\\u0000": null}`` made the audit's INSERT fail, and the refusal a 500."""
    if isinstance(value, str):
        if "\x00" not in value and value.isascii():
            return value
        return "".join(f"\\u{ord(c):04x}" if c == "\x00" or "\ud800" <= c <= "\udfff" else c for c in value)
    if isinstance(value, dict):
        return {_storable(k): _storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_storable(v) for v in value]
    return value


async def audit(
    conn: asyncpg.Connection, action: str, target: str | None, params: dict[str, Any], outcome: str
) -> None:
    await conn.execute(
        "INSERT INTO audit_log (action, target, params, outcome) VALUES ($1, $2, $3::jsonb, $4)",
        action,
        _storable(target),
        json.dumps(_storable(params)),
        _storable(outcome[:500]),
    )


@dataclass(frozen=True)
class StoredRequest:
    """An operator command stored with its ``Idempotency-Key`` (service.once)."""

    fingerprint: bytes
    status: int
    answer: dict[str, Any]


async def stored_request(conn: asyncpg.Connection, key: str) -> StoredRequest | None:
    row = await conn.fetchrow("SELECT fingerprint, status, answer FROM operator_requests WHERE key = $1", key)
    if row is None:
        return None
    return StoredRequest(bytes(row["fingerprint"]), int(row["status"]), json.loads(row["answer"]))


async def claim_request(conn: asyncpg.Connection, key: str, fingerprint: bytes, keep_days: int) -> bool:
    """Insert ``key``'s row in the caller's transaction: False when another
    transaction stored it first (one at the same moment is waited for).  Keys older
    than ``keep_days`` go."""
    await conn.execute("DELETE FROM operator_requests WHERE created_at < now() - make_interval(days => $1)", keep_days)
    got = await conn.fetchval(
        "INSERT INTO operator_requests (key, fingerprint) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING key",
        key,
        fingerprint,
    )
    return got is not None


async def answer_request(conn: asyncpg.Connection, key: str, status: int, answer: dict[str, Any]) -> None:
    """The answer to the command ``key`` claimed, in the same transaction."""
    await conn.execute(
        "UPDATE operator_requests SET status = $2, answer = $3::jsonb WHERE key = $1", key, status, json.dumps(answer)
    )


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
    return [_summary(r, by_table.get(r["id"], [])) for r in rows]


async def table_summary(conn: asyncpg.Connection, table_id: str) -> dict[str, Any] | None:
    """One table as :func:`list_tables` lists it, reading that table's row and seats only."""
    row = await table_row(conn, table_id)
    if row is None:
        return None
    seats = await conn.fetch(
        "SELECT s.seat, s.player_id, p.name FROM seats s JOIN players p "
        "ON p.id = s.player_id WHERE s.table_id = $1 ORDER BY s.seat",
        table_id,
    )
    return _summary(row, [{"seat": s["seat"], "player_id": s["player_id"], "name": s["name"]} for s in seats])


def _summary(r: asyncpg.Record, seated: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": r["id"],
        **{k: int(r[k]) for k in RULE_FIELDS},
        "max_away_hands": int(r["max_away_hands"]),
        "status": r["status"],
        "hold": hold_amount(int(r["point_value"])),
        "seated": seated,
        "next_hand_no": r["next_hand_no"],
    }


async def hand_history(conn: asyncpg.Connection, player_id: str, limit: int = 50) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        "SELECT h.id, h.table_id, h.hand_no, h.status, hp.seat, hp.hold, h.started_at, h.ended_at, "
        "h.transcript->'result'->'settlement'->'deltas'->>(hp.seat::text) AS delta, "
        "h.transcript->'result'->'points'->>(hp.seat::text) AS points, "
        "h.transcript->'result'->>'winner' AS winner "
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
            "winner": None if r["winner"] is None else int(r["winner"]),
            "ended_at": None if r["ended_at"] is None else r["ended_at"].isoformat(),
            "transcript": f"/api/hands/{r['id']}/transcript" if r["status"] in ("ended", "void") else None,
        }
        for r in rows
    ]


# ----------------------------------------------------------------------------- for the operator
def _like(q: str) -> str:
    return "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


PLAYERS_COUNT = "SELECT COUNT(*) FROM players p WHERE ($1::text IS NULL OR p.id ILIKE $1 OR p.name ILIKE $1)"
PLAYERS_PAGE = (
    "SELECT p.id, p.name, p.is_bot, p.created_at,"
    " (SELECT balance FROM accounts WHERE id = 'player:' || p.id || ':available') AS available,"
    " (SELECT balance FROM accounts WHERE id = 'player:' || p.id || ':held') AS held,"
    " COALESCE((SELECT json_agg(json_build_object('table_id', s.table_id, 'seat', s.seat))::text"
    "  FROM seats s WHERE s.player_id = p.id), '[]') AS seats FROM players p"
    " WHERE ($1::text IS NULL OR p.id ILIKE $1 OR p.name ILIKE $1)"
    " ORDER BY p.created_at, p.id LIMIT $2 OFFSET $3"
)
HANDS_COUNT = (
    "SELECT COUNT(*) FROM hands h"
    " WHERE ($1::text IS NULL OR h.table_id = $1) AND ($2::text IS NULL OR h.status = $2) AND ($3::text IS NULL"
    " OR EXISTS (SELECT 1 FROM hand_players x WHERE x.hand_id = h.id AND x.player_id = $3))"
)
HANDS_PAGE = (
    "SELECT h.id, h.table_id, h.hand_no, h.status, h.started_at, h.ended_at, h.void_reason,"
    " COALESCE((SELECT json_agg(json_build_object('seat', hp.seat, 'player_id', hp.player_id)"
    " ORDER BY hp.seat)::text FROM hand_players hp WHERE hp.hand_id = h.id), '[]') AS players FROM hands h"
    " WHERE ($1::text IS NULL OR h.table_id = $1) AND ($2::text IS NULL OR h.status = $2) AND ($3::text IS NULL"
    " OR EXISTS (SELECT 1 FROM hand_players x WHERE x.hand_id = h.id AND x.player_id = $3))"
    " ORDER BY h.id DESC LIMIT $4 OFFSET $5"
)


async def list_players(
    conn: asyncpg.Connection, q: str | None, limit: int, offset: int
) -> tuple[list[dict[str, Any]], int]:
    like = _like(q) if q else None
    total = int(await conn.fetchval(PLAYERS_COUNT, like))
    rows = await conn.fetch(PLAYERS_PAGE, like, limit, offset)
    return [
        {
            "id": r["id"],
            "name": r["name"],
            "bot": r["is_bot"],
            "available": int(r["available"] or 0),
            "held": int(r["held"] or 0),
            "seats": json.loads(r["seats"]),
            "created_at": r["created_at"].isoformat(),
        }
        for r in rows
    ], total


async def list_hands(
    conn: asyncpg.Connection,
    *,
    table: str | None,
    status: str | None,
    player: str | None,
    limit: int,
    offset: int,
) -> tuple[list[dict[str, Any]], int]:
    total = int(await conn.fetchval(HANDS_COUNT, table, status, player))
    rows = await conn.fetch(HANDS_PAGE, table, status, player, limit, offset)
    return [
        {
            "hand_id": r["id"],
            "table_id": r["table_id"],
            "hand_no": r["hand_no"],
            "status": r["status"],
            "started_at": r["started_at"].isoformat(),
            "ended_at": None if r["ended_at"] is None else r["ended_at"].isoformat(),
            "void_reason": r["void_reason"],
            "players": json.loads(r["players"]),
            "transcript": f"/api/hands/{r['id']}/transcript" if r["status"] in ("ended", "void") else None,
        }
        for r in rows
    ], total


async def list_audit(conn: asyncpg.Connection, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    total = int(await conn.fetchval("SELECT COUNT(*) FROM audit_log"))
    rows = await conn.fetch(
        "SELECT id, at, action, target, params::text AS params, outcome FROM audit_log "
        "ORDER BY id DESC LIMIT $1 OFFSET $2",
        limit,
        offset,
    )
    return [
        {
            "id": r["id"],
            "at": r["at"].isoformat(),
            "action": r["action"],
            "target": r["target"],
            "params": json.loads(r["params"]),
            "outcome": r["outcome"],
        }
        for r in rows
    ], total
