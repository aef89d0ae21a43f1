"""What taking a pooled connection costs the server, beside the statement itself
(issue 20 item 2).  Prints figures; not a test.

    python bench/pool_cost.py [--statements 3000] [--rounds 3] [--database-url URL]

On an embedded PostgreSQL of its own (or ``--database-url``), with the group commit's pool
(``service.db.writer_pool``), one small statement (``SELECT 1``) is run
``--statements`` times three ways, alternated for ``--rounds`` rounds: *held* (one
connection acquired once: the statement alone), *pooled* (``service.db.connection``
around each: asyncpg's acquire and release every time, as the group commit did for
every batch) and, where the tree has it, *kept* (``service.db.KeptConnections``, as
the group commit does now).  Each figure is this process's CPU time
(``time.process_time``) a statement, in µs; the database's own CPU is not in it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import asyncpg

from service import db
from service.embedded import EmbeddedPostgres


async def _held(pool: asyncpg.Pool, n: int) -> None:
    async with pool.acquire() as conn:
        for _ in range(n):
            await conn.fetchval("SELECT 1")


async def _pooled(pool: asyncpg.Pool, n: int) -> None:
    for _ in range(n):
        async with db.connection(pool) as conn:
            await conn.fetchval("SELECT 1")


async def _kept(pool: asyncpg.Pool, n: int) -> None:
    kept = db.KeptConnections(pool, 1)
    try:
        for _ in range(n):
            async with kept.connection() as conn:
                await conn.fetchval("SELECT 1")
    finally:
        await kept.close()


async def measure(dsn: str, statements: int, rounds: int) -> dict[str, list[float]]:
    ways: dict[str, Callable[[asyncpg.Pool, int], Awaitable[None]]] = {"held": _held, "pooled": _pooled}
    if hasattr(db, "KeptConnections"):
        ways["kept"] = _kept
    pool = await db.writer_pool(dsn)
    out: dict[str, list[float]] = {w: [] for w in ways}
    try:
        for fn in ways.values():  # a warm-up: statements prepared, connections open
            await fn(pool, 100)
        for _ in range(rounds):
            for w, fn in ways.items():
                t = time.process_time()
                await fn(pool, statements)
                out[w].append((time.process_time() - t) / statements * 1e6)
    finally:
        await pool.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--statements", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--database-url", help="a PostgreSQL to use (default: an embedded one of its own)")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    if args.database_url:
        got = asyncio.run(measure(args.database_url, args.statements, args.rounds))
    else:
        with tempfile.TemporaryDirectory() as d:
            pg = EmbeddedPostgres(Path(d) / "pg")
            try:
                got = asyncio.run(measure(pg.start(), args.statements, args.rounds))
            finally:
                pg.stop()
    held = statistics.median(got["held"])
    print(f"CPU µs a statement, median of {args.rounds} rounds of {args.statements} (load {load:.1f}):")
    print("| way | µs a statement | rounds | beyond held |")
    print("|---|---|---|---|")
    for w, xs in got.items():
        m = statistics.median(xs)
        print(f"| {w} | {m:.1f} | {', '.join(f'{x:.1f}' for x in xs)} | {m - held:+.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
