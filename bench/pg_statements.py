"""What PostgreSQL does for the server's actions: its statements and its table scans.

    python bench/pg_statements.py                          # 12 tables, 3 windows of 10 s
    python bench/pg_statements.py --warmup 90              # after autovacuum's first ANALYZE
    PYTHONPATH=/tmp/old-tree python bench/pg_statements.py # another tree's server

Starts an embedded PostgreSQL of its own with ``pg_stat_statements`` loaded, runs
``bench/action_profile.py`` (one server in-process, one load client playing six-seat
tables as fast as they are acknowledged) against a fresh database in it, and prints,
for the whole run (set-up included), the statements that took the most execution time
(calls, ms a call, shared buffers a call) and the tables read whole (sequential
scans and the rows they read, against index scans).  A statement that reads hundreds
of buffers a call to store one row, or a table scanned once a batch, is the finding.
The counters are PostgreSQL's, not sampled: the figures move with the machine's load,
the buffers a call do not.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
from pathlib import Path

import asyncpg

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from service.embedded import EmbeddedPostgres  # noqa: E402

PRELOAD = "\nshared_preload_libraries = 'pg_stat_statements'\npg_stat_statements.track = 'all'\n"
DATABASE = "bench_statements"


def start(folder: Path) -> EmbeddedPostgres:
    """An embedded PostgreSQL in ``folder`` with pg_stat_statements preloaded."""
    pg = EmbeddedPostgres(folder)
    pg.start()  # initdb on the first start; the library is read at the next one
    pg.stop()
    conf = pg.pgdata / "postgresql.conf"
    conf.write_text(conf.read_text() + PRELOAD)
    pg.start()
    return pg


async def prepare(dsn: str) -> str:
    """A fresh database with the extension; its DSN."""
    admin = await asyncpg.connect(dsn)
    try:
        await admin.execute(f"CREATE DATABASE {DATABASE}")
    finally:
        await admin.close()
    db = dsn.replace("/postgres?", f"/{DATABASE}?")
    conn = await asyncpg.connect(db)
    try:
        await conn.execute("CREATE EXTENSION pg_stat_statements")
    finally:
        await conn.close()
    return db


async def report(dsn: str, top: int) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT calls, total_exec_time / calls AS ms, shared_blks_hit::float8 / calls AS buffers, "
            "regexp_replace(query, '\\s+', ' ', 'g') AS query FROM pg_stat_statements "
            "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1) AND calls > 0 "
            "ORDER BY total_exec_time DESC LIMIT $2",
            DATABASE,
            top,
        )
        print(f"\n{'calls':>8} {'ms/call':>8} {'buffers/call':>12}  statement (the most execution time first)")
        for r in rows:
            print(f"{r['calls']:>8} {r['ms']:>8.3f} {r['buffers']:>12.1f}  {r['query'][:100]}")
        tables = await conn.fetch(
            "SELECT relname, seq_scan, seq_tup_read, idx_scan, n_live_tup FROM pg_stat_user_tables "
            "WHERE seq_scan > 0 ORDER BY seq_tup_read DESC LIMIT $1",
            top,
        )
        print(f"\n{'table':<16} {'seq scans':>10} {'rows read':>12} {'index scans':>12} {'rows now':>9}")
        for t in tables:
            print(
                f"{t['relname']:<16} {t['seq_scan']:>10} {t['seq_tup_read']:>12} {t['idx_scan'] or 0:>12} "
                f"{t['n_live_tup']:>9}"
            )
    finally:
        await conn.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=int, default=12)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--windows", type=int, default=3)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--top", type=int, default=8, help="statements and tables shown")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pg-statements-") as folder:
        pg = start(Path(folder))
        try:
            dsn = asyncio.run(prepare(pg.dsn))
            profile = Path(__file__).resolve().parent / "action_profile.py"
            run = [sys.executable, str(profile), "--database-url", dsn, "--tables", str(args.tables)]
            run += ["--seconds", str(args.seconds), "--windows", str(args.windows), "--warmup", str(args.warmup)]
            subprocess.run(run, check=True)
            asyncio.run(report(dsn, args.top))
        finally:
            pg.stop()


if __name__ == "__main__":
    main()
