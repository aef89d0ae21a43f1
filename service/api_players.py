"""Players: created by the operator, deposits and withdrawals (double-entry, D18),
a player's key, what a player sees of themself."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
from aiohttp import web

from service import ledger, store, wire
from service.appkeys import POOL
from service.db import connection
from service.edge import ApiError, body_json, operator_body, require_operator, require_player, strict_key
from service.once import run_once


async def create_player(request: web.Request) -> web.Response:
    await require_operator(request)
    data = await operator_body(request, "create_player", None, wire.NEW_PLAYER)
    key = strict_key(data["public_key"]) if "public_key" in data else None

    async def work(conn: asyncpg.Connection) -> tuple[int, dict[str, Any]]:
        player, token = await store.create_player(
            conn, data["name"], is_bot=data.get("bot", False), deposit=data.get("deposit", 0), public_key=key
        )
        bal = await ledger.balance(conn, player.id)
        return 201, {"id": player.id, "name": player.name, "token": token, "available": bal.available}

    shown = {k: v for k, v in data.items() if k != "public_key"}
    check = "look for the player (GET /api/admin/players?q=NAME) before you create it again"
    return await run_once(request, "create_player", None, shown, work, check=check)


async def deposit(request: web.Request) -> web.Response:
    return await _move_money(request, "deposit", ledger.deposit)


async def withdraw(request: web.Request) -> web.Response:
    return await _move_money(request, "withdraw", ledger.withdraw)


async def _move_money(
    request: web.Request, action: str, move: Callable[[asyncpg.Connection, str, int], Awaitable[int]]
) -> web.Response:
    """A deposit or a withdrawal: double-entry, never below zero (D18)."""
    await require_operator(request)
    player_id = wire.path_id(request.match_info["player_id"], "a player id")
    data = await operator_body(request, action, player_id, wire.DEPOSIT, "bad_amount")

    async def work(conn: asyncpg.Connection) -> tuple[int, dict[str, Any]]:
        if not await store.player_exists(conn, player_id):
            raise ApiError(404, "no_such_player", f"no player {player_id}")
        await move(conn, player_id, data["amount"])
        bal = await ledger.balance(conn, player_id)
        return 200, {"id": player_id, "available": bal.available, "held": bal.held}

    # With an Idempotency-Key, sent again it is answered from the store (service.once)
    return await run_once(request, action, player_id, data, work, keyed=True)


async def set_key(request: web.Request) -> web.Response:
    player = await require_player(request)
    data = await body_json(request, wire.PLAYER_KEY)
    key = strict_key(data["public_key"])
    async with connection(request.app[POOL]) as conn:
        await store.set_public_key(conn, player.id, key)
    return web.json_response({"id": player.id, "public_key": data["public_key"]})


async def me(request: web.Request) -> web.Response:
    player = await require_player(request)
    async with connection(request.app[POOL]) as conn:
        bal = await ledger.balance(conn, player.id)
        holds = await conn.fetch(
            "SELECT hp.hand_id, h.table_id, hp.hold FROM hand_players hp JOIN hands h ON h.id = hp.hand_id "
            "WHERE hp.player_id = $1 AND h.status IN ('seeding', 'playing')",
            player.id,
        )
        seats = await conn.fetch("SELECT table_id, seat FROM seats WHERE player_id = $1", player.id)
        key = await conn.fetchval("SELECT public_key FROM players WHERE id = $1", player.id)
    return web.json_response(
        {
            "id": player.id,
            "name": player.name,
            "available": bal.available,
            "held": bal.held,
            "public_key": None if key is None else bytes(key).hex(),
            "holds": [{"hand_id": h["hand_id"], "table_id": h["table_id"], "amount": h["hold"]} for h in holds],
            "seats": [{"table_id": s["table_id"], "seat": s["seat"]} for s in seats],
        }
    )


async def my_hands(request: web.Request) -> web.Response:
    player = await require_player(request)
    async with connection(request.app[POOL]) as conn:
        return web.json_response({"hands": await store.hand_history(conn, player.id)})
