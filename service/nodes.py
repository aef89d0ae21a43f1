"""The ``nodes`` table: who serves this card room, and who is live.

A row is a lease holder — a server alone, a node of a cluster, or one worker of
``serve --workers`` — with the public URL its clients reach.  A holder is **live**
while it beats: seen within one lease period.  This module is the one place where
liveness is decided; the leases (:mod:`service.cluster`), the redirects and the pages'
origins ask here.
"""

from __future__ import annotations

from typing import Final

import asyncpg

# Rows of holders gone for good (not seen for FORGET_SECONDS, or ten leases, and owning
# no live lease) are deleted when a holder registers: holder ids of ``serve --workers``
# carry the supervisor's pid, so each restart adds new ones (issue 17: 28 after 14
# restarts).
FORGET_SECONDS: Final = 60.0
PRUNE_SQL: Final = """
DELETE FROM nodes n WHERE n.node_id <> $1 AND n.seen_at < now() - make_interval(secs => $2)
AND NOT EXISTS (SELECT 1 FROM table_leases l WHERE l.owner = n.node_id AND l.expires_at > now())
"""


async def register(conn: asyncpg.Connection, node_id: str, public_url: str, lease_seconds: float) -> None:
    """This holder starts (again): seen now, with its public URL; the rows of holders
    long gone are deleted."""
    await conn.execute(
        "INSERT INTO nodes (node_id, public_url) VALUES ($1, $2) ON CONFLICT (node_id) DO UPDATE "
        "SET public_url = EXCLUDED.public_url, seen_at = now(), started_at = now()",
        node_id,
        public_url,
    )
    await conn.execute(PRUNE_SQL, node_id, max(FORGET_SECONDS, 10 * lease_seconds))


async def forget_every_node(conn: asyncpg.Connection) -> int:
    """For a server that holds the database's exclusive lock (``ServerLock``), before
    its holders start: every row is of a process that is gone (the dead workers of a
    killed server), so their leases are released — the new holders take those tables
    at once instead of waiting for them to run out — and their rows deleted, so no
    client is sent to them.  Returns how many rows were deleted.  The epochs stay: a
    takeover raises them, and fencing holds as ever."""
    async with conn.transaction():
        await conn.execute("UPDATE table_leases SET owner = NULL, expires_at = '-infinity' WHERE owner IS NOT NULL")
        deleted = await conn.execute("DELETE FROM nodes")
    return int(deleted.split()[-1])


async def beat(conn: asyncpg.Connection, node_id: str) -> None:
    await conn.execute("UPDATE nodes SET seen_at = now() WHERE node_id = $1", node_id)


async def leave(conn: asyncpg.Connection, node_id: str) -> None:
    """This holder stops: no longer live, at once (the others take a full share)."""
    await conn.execute("UPDATE nodes SET seen_at = '-infinity' WHERE node_id = $1", node_id)


async def live_count(conn: asyncpg.Connection, lease_seconds: float) -> int:
    return int(
        await conn.fetchval(
            "SELECT COUNT(*) FROM nodes WHERE seen_at > now() - make_interval(secs => $1)", lease_seconds
        )
    )


async def another_below(conn: asyncpg.Connection, node_id: str, lease_seconds: float, share: int) -> bool:
    """Is another live holder serving fewer open tables than ``share``?"""
    return bool(
        await conn.fetchval(
            "SELECT EXISTS (SELECT 1 FROM nodes n WHERE n.seen_at > now() - make_interval(secs => $1)"
            " AND n.node_id <> $2 AND (SELECT COUNT(*) FROM table_leases l JOIN tables t ON t.id = l.table_id"
            "  WHERE l.owner = n.node_id AND l.expires_at > now() AND t.status <> 'closed') < $3)",
            lease_seconds,
            node_id,
            share,
        )
    )


async def other_urls(conn: asyncpg.Connection, node_id: str, lease_seconds: float) -> list[str]:
    """The public URLs of the other live holders, in their order."""
    rows = await conn.fetch(
        "SELECT public_url FROM nodes WHERE seen_at > now() - make_interval(secs => $1)"
        " AND node_id <> $2 AND public_url <> '' ORDER BY node_id",
        lease_seconds,
        node_id,
    )
    return [str(r["public_url"]) for r in rows]


async def owner_of(conn: asyncpg.Connection, table_id: str, lease_seconds: float) -> tuple[str, str] | None:
    """(holder, public URL) of whoever holds the table's lease now; a holder not seen
    for half a lease is away, and nobody is sent there.  (It beats five times a lease.
    One that cannot renew gives its leases up on its own clock a beat before they can
    run out — ``Cluster.expire`` — and tells their clients ``moved``; sent back to it
    until its lease ran out, they waited on a node that could not serve them while
    the next owner's clock ran.  Until the table is taken it is between servers.)"""
    row = await conn.fetchrow(
        "SELECT l.owner, n.public_url FROM table_leases l JOIN nodes n ON n.node_id = l.owner "
        "WHERE l.table_id = $1 AND l.expires_at > now() AND n.seen_at > now() - make_interval(secs => $2)",
        table_id,
        lease_seconds / 2,
    )
    return None if row is None else (str(row["owner"]), str(row["public_url"]))


async def holder_of(conn: asyncpg.Connection, table_id: str) -> tuple[str, str] | None:
    """(holder, public URL) of whoever the table's lease names, live or late."""
    row = await conn.fetchrow(
        "SELECT l.owner, n.public_url FROM table_leases l JOIN nodes n ON n.node_id = l.owner WHERE l.table_id = $1",
        table_id,
    )
    return None if row is None else (str(row["owner"]), str(row["public_url"]))


async def public_urls(conn: asyncpg.Connection) -> list[str]:
    """Every public URL this card room's holders were reached at (the pages' origins)."""
    rows = await conn.fetch("SELECT DISTINCT public_url FROM nodes WHERE public_url <> ''")
    return [str(r["public_url"]) for r in rows]
