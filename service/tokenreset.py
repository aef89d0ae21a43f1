"""``rummy-table admin reset-token``: a new operator token, set on the server's own
machine without the server's API — for a lost token (issue 18 item 6).

It writes to the database directly: the embedded PostgreSQL of ``--data-dir`` (the
server must be stopped: one process per data directory), or the PostgreSQL of
``--database-url`` / ``DATABASE_URL`` (the server may run: it checks the token in the
database on every request, so the new one works at once and the old one stops).  The
token is printed once; the audit log records the reset (who and where).  Whoever can
run this can read the database anyway: it grants nothing the machine's owner lacks.
"""

from __future__ import annotations

import asyncio
import getpass
import os
import socket
from pathlib import Path
from typing import TextIO

import asyncpg

from service import store
from service.admin import AdminError
from service.db import DataDirLock, EmbeddedPostgres, ServerLocked
from service.envnames import OPERATOR_TOKEN_ENV
from service.errors import EXIT_LOCKED, EXIT_UNREACHABLE, EXIT_USAGE

CONNECT_SECONDS = 10.0


async def reset_operator_token(data_dir: Path, database_url: str | None) -> str:
    """Retire the operator token and set a new one (returned), with an audit row."""
    lock = embedded = None
    if database_url is None:
        if not (data_dir / "pgdata").is_dir():
            raise AdminError(
                EXIT_USAGE,
                f"no card room's database in {data_dir}: give the --data-dir the server uses, "
                "or --database-url (DATABASE_URL) for a PostgreSQL of your own",
            )
        lock = DataDirLock(data_dir)
        try:
            lock.acquire()
        except ServerLocked as e:
            raise AdminError(EXIT_LOCKED, f"{e}; with DATABASE_URL the token can be reset while it runs") from None
    try:
        if lock is not None:
            embedded = EmbeddedPostgres(data_dir)
            database_url = await asyncio.to_thread(embedded.start)
        assert database_url is not None
        try:
            conn = await asyncpg.connect(database_url, timeout=CONNECT_SECONDS)
        except (OSError, asyncpg.PostgresError, TimeoutError) as e:
            raise AdminError(EXIT_UNREACHABLE, f"cannot reach the database ({type(e).__name__}: {e})") from None
        try:
            if not await conn.fetchval("SELECT to_regclass('operator_tokens') IS NOT NULL"):
                raise AdminError(EXIT_USAGE, "this database holds no card room (no operator_tokens table)")
            async with conn.transaction():
                token = await store.rotate_operator_token(conn)
                who = {"how": "admin reset-token", "user": getpass.getuser(), "host": socket.gethostname()}
                await store.audit(conn, "reset_operator_token", None, who, "done")
        finally:
            await conn.close()
        return token
    finally:
        if embedded is not None:
            await asyncio.to_thread(embedded.stop)
        if lock is not None:
            lock.release()


def run(data_dir: Path, database_url: str | None, out: TextIO) -> int:
    token = asyncio.run(reset_operator_token(data_dir, database_url or os.environ.get("DATABASE_URL") or None))
    out.write(
        f"new operator token (shown once, keep it): {token}\n"
        f"the old token no longer works; a running server takes the new one at once. "
        f"If {OPERATOR_TOKEN_ENV} is set where the server starts, set it to the new token.\n"
    )
    out.flush()
    return 0
