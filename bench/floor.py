"""The floors: a bare aiohttp WebSocket + asyncpg server (issue 13, item 5), and a
like-for-like one that also does the protocol's unavoidable work (issue 20, item 1).

**Bare** (the default): each text message on ``/ws`` is stored as one row — the message
itself as JSON, a few hundred bytes like a table's record — by one ``INSERT`` committed
in its own transaction (PostgreSQL's default ``synchronous_commit``: the commit waits
for the WAL flush, as the table server's do), then answered with a reply naming the
row.  No authentication, no schema check, no signature, no game: what is left is the
cost of the raw stack (a WebSocket frame in, a durable commit, a frame out).

**Like-for-like** (``--like``): a socket says which table and seat it is and its
player's Ed25519 key in the query string (``/ws?table=T&seat=S&key=HEX``, the stand-in
for a login and ``PUT /api/me/key``).  Each ``action`` message then costs what the
protocol cannot do without (docs/fairness.md §9, §11, §15):

* the move body ``{table_id, hand_no, prev, move}`` as canonical JSON and **one Ed25519
  verify** of the player's signature over it (``prev`` must be the table's head);
* the record ``{i, type, move, sig}``, its chain link ``h`` (SHA-256 over the previous
  head and the canonical record) and **one Ed25519 signature by the server** (the signed
  head, purpose ``head``);
* **one durable insert and commit** of the record (as the bare floor);
* a **slim push** to every other socket of the same table — the record's ``i`` and
  ``h``, the signed head, the move's event and whose turn it is: a few hundred bytes,
  no seat view — and **one reply** to the acting socket.

No rules, no hands, no ledger: the gap between this floor and the table server is what
the server spends beyond the protocol's own work.

    python bench/floor.py --port 8091 --database-url postgresql://… [--like]

Both are one process.  Messages on one socket are handled one after another, as the
table server does; ``bench/load.py`` drives both with the same client as the real
server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
from aiohttp import WSMsgType, web
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from verifier.chain import chain_link, head_body, move_body  # noqa: E402
from verifier.record import PROTOCOL, player_signature_ok  # noqa: E402
from verifier.signing import Signer  # noqa: E402

POOL = web.AppKey("pool", asyncpg.Pool)
TABLES = web.AppKey("tables", dict)
SIGNER = web.AppKey("signer", Signer)
SEATS = 6
GENESIS = "0" * 64

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


def dumps(m: dict[str, Any]) -> str:
    return json.dumps(m, separators=(",", ":"))


async def websocket(request: web.Request) -> web.WebSocketResponse:
    """The bare floor: insert, commit, reply."""
    ws = web.WebSocketResponse(heartbeat=20, max_msg_size=64 * 1024, compress=False)  # as the project
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


# ----------------------------------------------------------------------------- like-for-like
@dataclass
class Table:
    table_id: str
    head: str = GENESIS
    i: int = 0
    sockets: dict[int, web.WebSocketResponse] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


def refuse(msg_id: Any, code: str, **more: Any) -> str:
    return dumps({"type": "error", "id": msg_id, "error": {"code": code, **more}})


async def like_websocket(request: web.Request) -> web.WebSocketResponse:
    """The like-for-like floor: verify, link, sign, insert and commit, push, reply."""
    q = request.query
    try:
        table_id, seat = str(q["table"]), int(q["seat"])
        key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(q["key"]))
    except (KeyError, ValueError):
        raise web.HTTPBadRequest(text="table, seat and key (64 hex digits) in the query string") from None
    ws = web.WebSocketResponse(heartbeat=20, max_msg_size=64 * 1024, compress=False)  # as the project
    await ws.prepare(request)
    app = request.app
    pool, signer = app[POOL], app[SIGNER]
    t: Table = app[TABLES].setdefault(table_id, Table(table_id))
    t.sockets[seat] = ws
    try:
        async for msg in ws:
            if msg.type != WSMsgType.TEXT:
                break
            try:
                m = json.loads(msg.data)
                msg_id, action, prev, sig = m.get("id"), dict(m["action"]), str(m["prev"]), m["sig"]
                hand_no = int(m["hand_no"])
            except (ValueError, KeyError, TypeError):
                await ws.send_str(refuse(None, "bad_message"))
                continue
            async with t.lock:
                if prev != t.head:
                    out = refuse(msg_id, "stale_head", h=t.head)
                else:
                    out = await _act(pool, signer, t, seat, msg_id, hand_no, action, prev, sig, key)
            try:
                await ws.send_str(out)
            except ConnectionError:
                break
    finally:
        if t.sockets.get(seat) is ws:
            del t.sockets[seat]
    return ws


async def _act(
    pool: asyncpg.Pool,
    signer: Signer,
    t: Table,
    seat: int,
    msg_id: Any,
    hand_no: int,
    action: dict[str, Any],
    prev: str,
    sig: Any,
    key: Ed25519PublicKey,
) -> str:
    move = {**action, "seat": seat}
    if not player_signature_ok(key, move_body(t.table_id, hand_no, prev, move), sig):
        return refuse(msg_id, "bad_signature")
    i = t.i + 1
    record: dict[str, Any] = {"i": i, "type": "move", "t": int(time.time() * 1000), "move": move, "sig": sig}
    record["h"] = h = chain_link(prev, record)
    body = head_body(t.table_id, hand_no, i, h)
    head = {"purpose": "head", "body": body, "sig": signer.sign("head", body, PROTOCOL)}
    async with pool.acquire(timeout=10) as db:
        await db.execute(INSERT, seat, i, dumps(record))  # its own transaction, committed
    t.head, t.i = h, i
    event = {"kind": action.get("kind"), "seat": seat}
    if action.get("kind") == "discard":
        event["card"] = action.get("card")
    drew = action.get("kind") == "draw_closed"
    push = dumps(
        {
            "type": "update",
            "table_id": t.table_id,
            "hand_no": hand_no,
            "i": i,
            "h": h,
            "head": head,
            "events": [event],
            "turn": {"seat": seat if drew else (seat + 1) % SEATS, "phase": "discard" if drew else "draw"},
        }
    )
    for other, ws in list(t.sockets.items()):
        if other != seat and not ws.closed:
            try:
                await ws.send_str(push)
            except ConnectionError:
                pass
    return dumps({"type": "reply", "id": msg_id, "ok": True, "result": {"i": i, "h": h, "head": head}})


# ----------------------------------------------------------------------------- serving
async def health(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


async def serve(host: str, port: int, dsn: str, pool_size: int, like: bool) -> None:
    pool = await asyncpg.create_pool(dsn, min_size=pool_size, max_size=pool_size, command_timeout=30)
    assert pool is not None
    async with pool.acquire() as db:
        await db.execute(SCHEMA)
    app = web.Application()
    app[POOL] = pool
    app[TABLES] = {}
    app[SIGNER] = Signer.generate()
    app.router.add_get("/ws", like_websocket if like else websocket)
    app.router.add_get("/healthz", health)
    runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    print(f"floor ({'like-for-like' if like else 'bare'}) serving on http://{host}:{port}", flush=True)
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
    ap.add_argument("--like", action="store_true", help="the like-for-like floor (verify, sign, push)")
    args = ap.parse_args(argv)
    asyncio.run(serve(args.host, args.port, args.database_url, args.pool, args.like))
    return 0


if __name__ == "__main__":
    sys.exit(main())
