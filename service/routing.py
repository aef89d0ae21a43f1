"""Where a table is served, seen from the worker a request reached: by a task of
this process, by another worker of this server (a WebSocket is handed over to it,
a REST command forwarded: :mod:`service.handover`, :mod:`service.internal`), by
another node (a redirect to that node's public URL: the only redirect there is), or
by nobody right now (between servers, closed, or no such table).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import asyncpg
from aiohttp import web

from service import nodes, store, wire
from service.appkeys import CLUSTER, CONFIG, POOL, TABLES
from service.db import ACQUIRE_TIMEOUT, connection
from service.edge import ApiError
from service.internal import SIBLINGS, RemoteTable
from service.table import ClientError, TableActor


@dataclass(frozen=True)
class Where:
    here: TableActor | None = None  # a task of this process serves it
    sibling: int | None = None  # another worker of this server does (its index)
    node_url: str | None = None  # another node does: its public URL
    status: str = ""  # nobody does: "missing", "closed" or "between" (servers)


async def where(app: web.Application, table_id: str, wait: float = ACQUIRE_TIMEOUT) -> Where:
    a = app[TABLES].get(table_id)
    if a is not None:
        assert isinstance(a, TableActor)
        return Where(here=a)
    node = app[CONFIG].node
    owner = await app[CLUSTER].owner_of(table_id, wait)
    if owner is not None and owner[0] != node.node_id:
        sibling = node.sibling(owner[0])
        if sibling is None:
            return Where(node_url=owner[1].rstrip("/"))
        if SIBLINGS in app:
            return Where(sibling=sibling)
    async with connection(app[POOL], wait) as conn:
        row = await store.table_row(conn, table_id)
    if row is None:
        return Where(status="missing")
    return Where(status="closed" if row["status"] == "closed" else "between")


def _nobody(table_id: str, status: str) -> tuple[int, str, str]:
    if status == "missing":
        return 404, "no_such_table", f"no table {table_id}"
    if status == "closed":
        return 409, "table_closed", f"table {table_id} is closed: it deals no new hand"
    return 503, "unavailable", f"table {table_id} is between servers right now; try again in a moment"


async def actor_unless_closed(request: web.Request, table_id: str) -> TableActor | RemoteTable | None:
    """The table's task here, or the sibling worker that serves it (a command is
    forwarded there); a table another node serves is a redirect to that node's public
    URL (307: the method and body are sent again).  A closed table nobody serves any
    more (it is never served again) is None: what can be said of it comes from its
    row.  Missing, or between servers right now: an error that says so."""
    table_id = wire.path_id(table_id, "a table id")
    w = await where(request.app, table_id)
    if w.here is not None:
        return w.here
    if w.sibling is not None:
        return RemoteTable(request.app[SIBLINGS], w.sibling, table_id)
    if w.node_url is not None:
        raise web.HTTPTemporaryRedirect(w.node_url + request.path_qs)
    if w.status == "closed":
        return None
    raise ApiError(*_nobody(table_id, w.status))


async def actor(request: web.Request, table_id: str) -> TableActor | RemoteTable:
    """The table, for a REST command (:func:`actor_unless_closed`); a closed table
    nobody serves is refused ``table_closed``."""
    a = await actor_unless_closed(request, table_id)
    if a is None:
        raise ApiError(*_nobody(table_id, "closed"))
    return a


async def elsewhere(request: web.Request, table_id: str) -> ClientError:
    """Why a WebSocket's ``join`` is not served on this connection: another node
    serves the table (its public URL in ``redirect``), another worker of this node
    does (connect again with ``?table=ID``: the node's own URL in ``redirect``), or
    nobody does right now."""
    w = await where(request.app, table_id)
    if w.node_url is not None or w.sibling is not None or w.here is not None:
        url = w.node_url or own_url(request)
        err = ClientError("wrong_node", f"table {table_id} is served by {url}/ws?table={table_id}: connect there")
        err.redirect = url  # type: ignore[attr-defined]
        return err
    return ClientError(*_nobody(table_id, w.status)[1:])


def own_url(request: web.Request) -> str:
    """This node's public URL, else the origin the request named."""
    url = request.app[CONFIG].node.public_url
    return url.rstrip("/") if url else f"{'https' if request.secure else 'http'}://{request.host}"


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
