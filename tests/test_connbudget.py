"""The server asks PostgreSQL for max_connections before it starts, and refuses with
one line and exit 6 when its workers' pools (and the other live nodes it knows of)
cannot fit (service/connbudget.py; docs/deploy.md, "Connections")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import asyncpg

from service import connbudget
from service.db import migrate
from service.errors import EXIT_CAPACITY
from tests.conftest import fresh_database

TIMEOUT = 120  # a bound only a hang exceeds


def serve(*flags: str, dsn: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "RUMMY_OPERATOR_TOKEN")}
    return subprocess.run(
        [sys.executable, "-m", "service.cli", "serve", "--port", "0", "--data-dir", str(data_dir)]
        + ["--database-url", dsn, *flags],
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT,
    )


async def limits(dsn: str) -> tuple[int, int]:
    conn = await asyncpg.connect(dsn)
    try:
        most = int(await conn.fetchval("SHOW max_connections"))
        reserved = int(await conn.fetchval("SHOW superuser_reserved_connections"))
        extra = await conn.fetchval("SELECT current_setting('reserved_connections', true)")
        return most, reserved + int(extra or 0)
    finally:
        await conn.close()


async def test_the_budget_reads_the_databases_limits(pg_dsn: str) -> None:
    most, reserved = await limits(pg_dsn)
    conn = await asyncpg.connect(pg_dsn)
    try:
        one = await connbudget.check(conn, 1)
        assert (one.max_connections, one.reserved, one.other_nodes) == (most, reserved, 0)
        assert one.need == connbudget.PER_WORKER + connbudget.PER_SERVER and one.fits
        too_many = (most - reserved) // connbudget.PER_WORKER + 1
        budget = await connbudget.read(conn, too_many)
        assert not budget.fits and budget.need > most - reserved
    finally:
        await conn.close()


async def test_serve_refuses_workers_whose_pools_cannot_fit(pg_dsn: str, tmp_path: Path) -> None:
    most, reserved = await limits(pg_dsn)
    workers = (most - reserved) // connbudget.PER_WORKER + 1  # one worker more than the database can hold
    assert workers <= 64, f"this test needs a PostgreSQL with max_connections below {64 * connbudget.PER_WORKER}"
    async with fresh_database(pg_dsn, "budget") as dsn:
        done = serve("--workers", str(workers), dsn=dsn, data_dir=tmp_path / "data")
        assert done.returncode == EXIT_CAPACITY, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert f"max_connections {most}" in lines[0] and f"{workers} worker(s)" in lines[0]
        assert "give fewer --workers, or raise max_connections" in lines[0]
        conn = await asyncpg.connect(dsn)
        try:  # refused before anything was written: no migration ran
            assert await conn.fetchval("SELECT to_regclass('schema_migrations')") is None
        finally:
            await conn.close()
    assert not (tmp_path / "data").exists(), "the data directory this start created is removed again"


async def test_a_node_counts_the_live_nodes_it_knows_of(pg_dsn: str, tmp_path: Path) -> None:
    most, reserved = await limits(pg_dsn)
    per_node = connbudget.PER_WORKER + connbudget.PER_SERVER
    room_for = (most - reserved) // per_node  # nodes of one worker the database can hold
    async with fresh_database(pg_dsn, "budget") as dsn:
        conn = await asyncpg.connect(dsn)
        try:
            await migrate(conn)
            live = "INSERT INTO nodes (node_id, public_url, seen_at) VALUES ($1, $2, now() + interval '1 hour')"
            await conn.executemany(live, [(f"other{i}", f"http://127.0.0.1:{9000 + i}") for i in range(room_for - 1)])
            # a node that left (its heartbeat stopped) is not counted
            await conn.execute(
                "INSERT INTO nodes (node_id, public_url, seen_at) VALUES ('gone', 'http://x:1', '-infinity')"
            )
            budget = await connbudget.read(conn, 1, "n1")
            assert budget.other_nodes == room_for - 1 and budget.fits  # the last node that fits
            await conn.execute(live, "one-more", "http://127.0.0.1:1")
            assert not (await connbudget.read(conn, 1, "n1")).fits
        finally:
            await conn.close()
        done = serve("--node-id", "n1", "--public-url", "http://127.0.0.1:1", dsn=dsn, data_dir=tmp_path / "n1")
        assert done.returncode == EXIT_CAPACITY, done.stderr
        assert f"+ {room_for} other live node(s)" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_the_doc_quotes_the_refusal_as_the_server_writes_it() -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "deploy.md").read_text(encoding="utf-8")
    line = "rummy-table: " + connbudget.Budget(max_connections=100, reserved=3, workers=16, other_nodes=0).refusal()
    assert f"    {line}\n" in doc
    assert connbudget.PER_WORKER == 12 and "at most **12** connections" in doc
