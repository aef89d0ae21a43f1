"""Where a table is served: by a task of this process, by another node (a
redirect to its public URL), or by nobody right now (between servers).
"""

from __future__ import annotations

import contextlib

import asyncpg
from aiohttp import web

from service import nodes, store, wire
from service.appkeys import CLUSTER, CONFIG, POOL, TABLES
from service.db import connection
from service.edge import ApiError
from service.table import ClientError, TableActor


async def actor(request: web.Request, table_id: str) -> TableActor:
    """The table's task on this node; a table another node owns is a redirect there
    (307: the method and body are sent again)."""
    a = request.app[TABLES].get(wire.path_id(table_id, "a table id"))
    if a is not None:
        assert isinstance(a, TableActor)
        return a
    owner = await request.app[CLUSTER].owner_of(table_id)
    if owner is not None and owner[0] != request.app[CONFIG].node.node_id:
        raise web.HTTPTemporaryRedirect(owner[1].rstrip("/") + request.path_qs)
    async with connection(request.app[POOL]) as conn:
        exists = await store.table_row(conn, table_id)
    if exists is None:
        raise ApiError(404, "no_such_table", f"no table {table_id}")
    raise ApiError(503, "unavailable", f"table {table_id} is between servers right now; try again in a moment")


async def elsewhere(request: web.Request, table_id: str) -> ClientError:
    """Why a table is not served here: another node owns it (its URL in
    ``redirect``), it is between nodes, or there is no such table."""
    owner = await request.app[CLUSTER].owner_of(table_id)
    if owner is not None and owner[0] != request.app[CONFIG].node.node_id:
        err = ClientError("wrong_node", f"table {table_id} is served by {owner[1]}: connect there")
        err.redirect = owner[1]  # type: ignore[attr-defined]
        return err
    async with connection(request.app[POOL]) as conn:
        exists = await store.table_row(conn, table_id)
    if exists is None:
        return ClientError("no_such_table", f"no table {table_id}")
    return ClientError("unavailable", f"table {table_id} is between servers right now; try again in a moment")


# ----------------------------------------------------------------------------- the app
async def node_urls(request: web.Request) -> list[str]:
    """The public URLs of this card room's nodes (this one's alone when it has no
    cluster, or when the database cannot say)."""
    node = request.app[CONFIG].node
    urls = [node.public_url] if node.public_url else []
    if node.cluster:
        with contextlib.suppress(OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
            async with connection(request.app[POOL]) as conn:
                urls += await nodes.public_urls(conn)
    return urls
