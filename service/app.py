"""The aiohttp application: its routes, its middlewares and its life.

The handlers live by what they serve — players (:mod:`service.api_players`), tables
(:mod:`service.api_tables`), the browser's session (:mod:`service.api_sessions`), the
operator's reads (:mod:`service.api_admin`), public reads (:mod:`service.api_public`),
the WebSocket (:mod:`service.api_ws`); what each does first at the edge in
:mod:`service.edge`; where a table is served in :mod:`service.routing`; resources in
:mod:`service.lifecycle`; every request passes :mod:`service.middleware`.
docs/api.md documents every route and message.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from service import (
    api_admin,
    api_players,
    api_public,
    api_sessions,
    api_tables,
    api_ws,
    lifecycle,
    memtrim,
    stallmeter,
    wire,
)
from service.appkeys import (
    BACKGROUND,
    CLUSTER,
    CONFIG,
    HEARTBEAT,
    LEDGER_AUDIT,
    LOADS,
    LOCK_LOST,
    METRICS,
    PLAYER_SOCKETS,
    POOL,
    SOCKETS,
    TABLES,
    WRITER,
    Config,
)
from service.headers import add_security_headers
from service.ledgeraudit import LedgerAudit
from service.measure import measure
from service.metrics import Metrics
from service.middleware import access_log, errors
from service.pace import PlayerSockets
from service.pages import add_page_routes
from service.routing import node_urls

__all__ = [
    "BACKGROUND",
    "CLUSTER",
    "CONFIG",
    "HEARTBEAT",
    "LEDGER_AUDIT",
    "LOADS",
    "METRICS",
    "POOL",
    "SOCKETS",
    "TABLES",
    "WRITER",
    "Config",
    "make_app",
]


def make_app(config: Config) -> web.Application:
    app = web.Application(middlewares=[measure, access_log, errors], client_max_size=wire.MAX_MESSAGE_BYTES * 2)
    app[CONFIG] = config
    app[METRICS] = Metrics()
    app[BACKGROUND] = set()
    app[LOCK_LOST] = asyncio.Event()
    app[LEDGER_AUDIT] = LedgerAudit()
    lifecycle.live_metrics(app)
    app[TABLES] = {}
    app[SOCKETS] = {}
    app[PLAYER_SOCKETS] = PlayerSockets(config.sockets_per_player)
    app.cleanup_ctx.append(stallmeter.metering)  # before the tables, which read it
    app.cleanup_ctx.append(lifecycle.database)
    app.cleanup_ctx.append(lifecycle.tables_and_leases)
    app.cleanup_ctx.append(memtrim.trimming)
    app.cleanup_ctx.append(api_ws.sweeping)
    app.on_shutdown.append(lifecycle.on_shutdown)
    add = app.router
    add.add_get("/healthz", api_public.health)
    add.add_post("/api/players", api_players.create_player)
    add.add_post("/api/players/{player_id}/deposit", api_players.deposit)
    add.add_post("/api/players/{player_id}/withdraw", api_players.withdraw)
    add.add_put("/api/me/key", api_players.set_key)
    add.add_post("/api/tables", api_tables.create_table)
    add.add_get("/api/tables", api_tables.list_tables)
    add.add_get("/api/tables/{table_id}", api_tables.table_detail)
    add.add_post("/api/tables/{table_id}/close", api_tables.close_table)
    add.add_post("/api/tables/{table_id}/seats/{seat}/stand", api_tables.stand_seat)
    add.add_post("/api/tables/{table_id}/sit", api_tables.sit)
    add.add_post("/api/tables/{table_id}/leave", api_tables.leave)
    add.add_get("/api/session", api_sessions.session_info)
    add.add_post("/api/session", api_sessions.sign_in)
    add.add_delete("/api/session", api_sessions.sign_out)
    add.add_post("/api/session/ticket", api_sessions.ticket)
    add.add_get("/api/me", api_players.me)
    add.add_get("/api/me/hands", api_players.my_hands)
    add.add_get("/api/hands/{hand_id}/transcript", api_public.transcript)
    add.add_post("/api/hands/{hand_id}/void", api_tables.void_hand)
    add.add_get("/api/fairness/key", api_public.fairness_key)
    add.add_get("/api/ledger", api_admin.ledger_summary)
    add.add_get("/api/admin/players", api_admin.admin_players)
    add.add_get("/api/admin/players/{player_id}", api_admin.admin_player)
    add.add_get("/api/admin/hands", api_admin.admin_hands)
    add.add_post("/api/admin/operator-token", api_admin.rotate_token)
    add.add_get("/api/admin/audit", api_admin.admin_audit)
    add.add_get("/api/openapi.json", api_public.openapi)
    add.add_get("/metrics", api_public.metrics)
    add.add_get("/ws", api_ws.websocket)
    add_page_routes(app, node_urls)
    add_security_headers(app)
    return app
