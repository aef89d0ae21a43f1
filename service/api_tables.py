"""Tables: created by the operator, listed, sat at and left, described, closed; a
seat stood up and a hand voided by the operator (D33).  A command for a table goes
to the task that serves it (:mod:`service.routing`)."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
from aiohttp import web

from service import store, wire
from service.appkeys import CLUSTER, POOL
from service.cluster import Lease
from service.db import connection
from service.edge import (
    ApiError,
    audited,
    body_json,
    int_or_none,
    operator_body,
    require_operator,
    require_player,
)
from service.internal import RemoteTable
from service.lifecycle import new_actor
from service.once import run_once
from service.routing import actor, actor_unless_closed
from service.table import TableActor
from verifier.hand import TableRules


async def create_table(request: web.Request) -> web.Response:
    """One transaction: the table, its lease and the audit row (service.once); with an
    ``Idempotency-Key``, sent again it is answered from the store and creates nothing."""
    await require_operator(request)
    data = await operator_body(request, "create_table", None, wire.NEW_TABLE, "bad_table")
    settings = dict(data)
    max_away = data.pop("max_away_hands", 3)
    cluster = request.app[CLUSTER]
    made: list[Lease] = []  # the lease of the table this request creates, if it does

    async def work(conn: asyncpg.Connection) -> tuple[int, dict[str, Any]]:
        rules = TableRules(**data)  # validated: a bad combination is an error, never repaired
        table_id = await store.create_table(conn, rules, max_away_hands=max_away)
        made.append(await cluster.add_table(conn, table_id))
        return 201, {"id": table_id, **rules.to_json(), "max_away_hands": max_away}

    check = "look for the table (GET /api/tables) before you create it again"
    try:
        answer = await run_once(request, "create_table", None, settings, work, keyed=True, check=check)
    except BaseException:
        for lease in made:  # not committed, or not known to be: the heartbeat decides
            cluster.abandon(lease.table_id)
        raise
    if not made:  # answered from the store: created by the first sending
        return answer
    cluster.adopt(made[0])  # committed: from now on the heartbeat renews it
    a = new_actor(request.app, made[0])
    a.start()
    # Until it is loaded here, or handed to another worker or node first (a share
    # evening out: the table exists all the same, served there).
    loaded = asyncio.create_task(a.loaded.wait())
    try:
        assert a.task is not None
        done, _ = await asyncio.wait({loaded, a.task}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
    finally:
        loaded.cancel()
    if not done:
        raise TimeoutError
    return answer


async def list_tables(request: web.Request) -> web.Response:
    async with connection(request.app[POOL]) as conn:
        return web.json_response({"tables": await store.list_tables(conn)})


async def sit(request: web.Request) -> web.Response:
    player = await require_player(request)
    data = await body_json(request, wire.SIT)
    a = await actor(request, request.match_info["table_id"])
    return web.json_response(await a.submit("sit", player.id, data))


async def leave(request: web.Request) -> web.Response:
    player = await require_player(request)
    data = await body_json(request, wire.LEAVE)
    a = await actor(request, request.match_info["table_id"])
    return web.json_response(await a.submit("leave", player.id, data))


def describe(a: TableActor) -> dict[str, Any]:
    """What the table's task knows that the database does not say: its status and
    the hand in progress."""
    hand = a.hand
    return {
        "status": a.t.status,
        "hand": None
        if hand is None
        else {"hand_id": hand.hand_id, "hand_no": hand.hand_no, "phase": hand.phase, "seats": sorted(hand.players)},
    }


async def table_detail(request: web.Request) -> web.Response:
    """A table served now, with what its task knows; a closed one whose task has let
    it go (it is never served again) from its row alone, with no hand in progress —
    not refused as ``table_closed``."""
    table_id = request.match_info["table_id"]
    a = await actor_unless_closed(request, table_id)
    async with connection(request.app[POOL]) as conn:
        row = await store.table_summary(conn, table_id)
    if row is None:
        raise ApiError(404, "no_such_table", f"no table {table_id}")
    if a is None:
        row["hand"] = None
    else:
        row.update(await a.describe() if isinstance(a, RemoteTable) else describe(a))
    return web.json_response(row)


async def close_table(request: web.Request) -> web.Response:
    """Closing a closed table answers that it is closed, as its task does, also once
    the task has let it go (a closed table is never served again): the same answer
    whichever worker, and whenever, the request reaches."""
    await require_operator(request)
    table_id = request.match_info["table_id"]
    a = await actor_unless_closed(request, table_id)
    work = _closed(table_id) if a is None else a.submit("close", "operator", {})
    return web.json_response(await audited(request, "close_table", table_id, {}, work))


async def _closed(table_id: str) -> dict[str, Any]:
    return {"id": table_id, "status": "closed"}


async def stand_seat(request: web.Request) -> web.Response:
    await require_operator(request)
    a = await actor(request, request.match_info["table_id"])
    seat = wire.check(wire.Obj({"seat": wire.Int(0, 7)}), {"seat": int_or_none(request.match_info["seat"])})["seat"]
    work = a.submit("stand", "operator", {"seat": seat})
    return web.json_response(await audited(request, "stand_seat", f"{a.table_id}/{seat}", {"seat": seat}, work))


async def void_hand(request: web.Request) -> web.Response:
    await require_operator(request)
    hand_id = wire.path_int(request.match_info["hand_id"], "a hand id")
    data = await operator_body(request, "void_hand", str(hand_id), wire.VOID)
    async with connection(request.app[POOL]) as conn:
        row = await conn.fetchrow("SELECT table_id, status FROM hands WHERE id = $1", hand_id)
    if row is None:
        raise ApiError(404, "no_such_hand", f"no hand {hand_id}")
    if row["status"] not in ("seeding", "playing"):
        raise ApiError(409, "hand_over", f"hand {hand_id} is {row['status']}")
    a = await actor(request, row["table_id"])
    work = a.submit("void", "operator", {"hand_id": hand_id, "reason": data["reason"]})
    return web.json_response(await audited(request, "void_hand", str(hand_id), data, work))
