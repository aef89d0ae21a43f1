"""The ``nodes`` table: who serves this card room, and who is live.

A row is a lease holder — a server alone, a node of a cluster, or one worker of
``serve --workers`` — with the public URL its clients reach.  A holder is **live**
while it beats: seen within one lease period.  This module is the one place where
liveness is decided; the leases (:mod:`service.cluster`), the redirects and the pages'
origins ask here.
"""

from __future__ import annotations

import asyncpg


async def register(conn: asyncpg.Connection, node_id: str, public_url: str) -> None:
    """This holder starts (again): seen now, with its public URL."""
    await conn.execute(
        "INSERT INTO nodes (node_id, public_url) VALUES ($1, $2) ON CONFLICT (node_id) DO UPDATE "
        "SET public_url = EXCLUDED.public_url, seen_at = now(), started_at = now()",
        node_id,
        public_url,
    )


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


async def owner_of(conn: asyncpg.Connection, table_id: str) -> tuple[str, str] | None:
    """(holder, public URL) of whoever holds the table's lease now."""
    row = await conn.fetchrow(
        "SELECT l.owner, n.public_url FROM table_leases l JOIN nodes n ON n.node_id = l.owner "
        "WHERE l.table_id = $1 AND l.expires_at > now()",
        table_id,
    )
    return None if row is None else (str(row["owner"]), str(row["public_url"]))


async def public_urls(conn: asyncpg.Connection) -> list[str]:
    """Every public URL this card room's holders were reached at (the pages' origins)."""
    rows = await conn.fetch("SELECT DISTINCT public_url FROM nodes WHERE public_url <> ''")
    return [str(r["public_url"]) for r in rows]
