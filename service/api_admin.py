"""The operator's reads and the token's rotation (docs/api.md, "Operating the card
room"): players, hands, the audit log, the ledger check."""

from __future__ import annotations

from typing import Any

import asyncpg
from aiohttp import web

from service import ledger, store, wire
from service.appkeys import POOL
from service.db import connection
from service.edge import ApiError, page, require_operator
from service.once import run_once
from service.wire import WireError


async def admin_players(request: web.Request) -> web.Response:
    await require_operator(request)
    limit, offset = page(request)
    q = request.query.get("q")
    if q is not None:
        q = wire.Text(1, 64).check(q, "q")
    async with connection(request.app[POOL]) as conn:
        players, total = await store.list_players(conn, q, limit, offset)
    return web.json_response({"players": players, "total": total})


async def admin_player(request: web.Request) -> web.Response:
    await require_operator(request)
    player_id = wire.path_id(request.match_info["player_id"], "a player id")
    async with connection(request.app[POOL]) as conn:
        found = [p for p in (await store.list_players(conn, player_id, 500, 0))[0] if p["id"] == player_id]
        if not found:
            raise ApiError(404, "no_such_player", f"no player {player_id}")
        holds = await conn.fetch(
            "SELECT hp.hand_id, h.table_id, hp.hold FROM hand_players hp JOIN hands h ON h.id = hp.hand_id "
            "WHERE hp.player_id = $1 AND h.status IN ('seeding', 'playing')",
            player_id,
        )
        hands = await store.hand_history(conn, player_id)
    out = found[0]
    out["holds"] = [{"hand_id": h["hand_id"], "table_id": h["table_id"], "amount": h["hold"]} for h in holds]
    out["hands"] = hands
    return web.json_response(out)


async def admin_hands(request: web.Request) -> web.Response:
    await require_operator(request)
    limit, offset = page(request)
    q = request.query
    status = q.get("status")
    if status is not None and status not in ("seeding", "playing", "ended", "void"):
        raise WireError("status is one of seeding, playing, ended, void", "bad_request")
    table = wire.path_id(q["table"], "table") if "table" in q else None
    player = wire.path_id(q["player"], "player") if "player" in q else None
    async with connection(request.app[POOL]) as conn:
        hands, total = await store.list_hands(
            conn, table=table, status=status, player=player, limit=limit, offset=offset
        )
    return web.json_response({"hands": hands, "total": total})


async def rotate_token(request: web.Request) -> web.Response:
    await require_operator(request)

    async def work(conn: asyncpg.Connection) -> tuple[int, dict[str, Any]]:
        return 201, {"token": await store.rotate_operator_token(conn)}

    # The new token is lost with the answer: if the old one is refused, reset it.
    check = "if the old token is now refused (token_rotated), set a new one with rummy-table admin reset-token"
    return await run_once(request, "rotate_operator_token", None, {}, work, check=check)


async def admin_audit(request: web.Request) -> web.Response:
    await require_operator(request)
    limit, offset = page(request)
    async with connection(request.app[POOL]) as conn:
        rows, total = await store.list_audit(conn, limit, offset)
    return web.json_response({"audit": rows, "total": total})


async def ledger_summary(request: web.Request) -> web.Response:
    await require_operator(request)
    async with connection(request.app[POOL]) as conn:
        return web.json_response(await ledger.summary(conn))
