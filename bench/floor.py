"""The floor: a bare aiohttp WebSocket + asyncpg server (issue 13, item 5).

Each text message on ``/ws`` is stored as one row — the message itself as JSON, a few
hundred bytes like a table's record — by one ``INSERT`` committed in its own
transaction (PostgreSQL's default ``synchronous_commit``: the commit waits for the WAL
flush, as the table server's do), then answered with a reply naming the row. No
authentication, no schema check, no signature, no game: what is left is the cost of
the raw stack (a WebSocket frame in, a durable commit, a frame out), which
``bench/load.py`` drives with the same client as the real server.

    python bench/floor.py --port 8091 --database-url postgresql://…

Messages on one socket are handled one after another, as the table server does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys

import asyncpg
from aiohttp import WSMsgType, web

POOL = web.AppKey("pool", asyncpg.Pool)

SCHEMA = """
CREATE TABLE IF NOT EXISTS floor_records (
    id bigserial PRIMARY KEY,
    conn integer NOT NULL,
    n integer NOT NULL,
    at timestamptz NOT NULL DEFAULT now(),
    body jsonb NOT NULL
)
"""
INSERT = "INSERT INTO floor_records (conn, n, body) VALUES ($1, $2, $3::jsonb) RETURNING id"


async def websocket(request: web.Request) -> web.WebSocketResponse:
    ws = web.WebSocketResponse(heartbeat=20, max_msg_size=64 * 1024)
    await ws.prepare(request)
    pool = request.app[POOL]
    conn_no = id(ws) & 0x7FFFFFFF
    n = 0
    async for msg in ws:
        if msg.type != WSMsgType.TEXT:
            break
        n += 1
        try:
            msg_id = json.loads(msg.data).get("id")
        except ValueError:
            msg_id = None
        async with pool.acquire(timeout=10) as db:
            row_id = await db.fetchval(INSERT, conn_no, n, msg.data)  # its own transaction, committed
        try:
            await ws.send_str(
                json.dumps({"type": "reply", "id": msg_id, "ok": True, "result": {"i": n, "row": row_id}})
            )
        except ConnectionError:  # the client went away (aiohttp's ClientConnectionResetError is one)
            break
    return ws


async def health(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


async def serve(host: str, port: int, dsn: str, pool_size: int) -> None:
    pool = await asyncpg.create_pool(dsn, min_size=pool_size, max_size=pool_size, command_timeout=30)
    assert pool is not None
    async with pool.acquire() as db:
        await db.execute(SCHEMA)
    app = web.Application()
    app[POOL] = pool
    app.router.add_get("/ws", websocket)
    app.router.add_get("/healthz", health)
    runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    print(f"floor serving on http://{host}:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()
    await pool.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--pool", type=int, default=10, help="asyncpg pool size (the table server's is 10)")
    args = ap.parse_args(argv)
    asyncio.run(serve(args.host, args.port, args.database_url, args.pool))
    return 0


if __name__ == "__main__":
    sys.exit(main())
