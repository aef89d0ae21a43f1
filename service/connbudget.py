"""Does the database have room for this server's connections?

Each server process (each worker of ``serve --workers``) opens at most
:data:`PER_WORKER` connections: its two pools of :data:`service.db.POOL_SIZE` together
(the main pool and the group commit's), the lease heartbeat's own connection and the
``LISTEN`` connection (service/cluster.py).  Each
server (or node) holds one more for its lock on the database (:class:`service.db.ServerLock`).
A node of a cluster counts the other live nodes it can see in ``nodes`` as servers
of one worker each (a node runs one worker).  PostgreSQL keeps
``superuser_reserved_connections`` and ``reserved_connections`` (PostgreSQL 16 on)
for roles that a card room's login is not, so those slots are not counted as room.

:func:`check` reads the database's limits and refuses, with one line, a start that
cannot fit: better than a pool that fails under load with "too many clients"
(docs/deploy.md, "Connections").
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from service.db import POOL_SIZE
from service.errors import EXIT_CAPACITY, CliError

PER_WORKER = POOL_SIZE + 2  # the two pools, the lease heartbeat, LISTEN
PER_SERVER = 1  # the lock on the database, held by the server (by the supervisor of its workers)


class TooManyConnections(CliError):
    """The database cannot hold the connections this start would open (exit 6)."""

    def __init__(self, budget: Budget) -> None:
        super().__init__(EXIT_CAPACITY, budget.refusal())
        self.budget = budget


@dataclass(frozen=True)
class Budget:
    """What the database allows, and what this server (with the nodes it knows of) needs."""

    max_connections: int
    reserved: int  # superuser_reserved_connections + reserved_connections
    workers: int  # this server's worker processes
    other_nodes: int  # live nodes of the cluster besides this one

    @property
    def available(self) -> int:
        return self.max_connections - self.reserved

    @property
    def per_server(self) -> int:
        return self.workers * PER_WORKER + PER_SERVER

    @property
    def need(self) -> int:
        return self.per_server + self.other_nodes * (PER_WORKER + PER_SERVER)

    @property
    def fits(self) -> bool:
        return self.need <= self.available

    def refusal(self) -> str:
        nodes = f" + {self.other_nodes} other live node(s) × {PER_WORKER + PER_SERVER}" if self.other_nodes else ""
        return (
            f"the database allows {self.available} connections (max_connections {self.max_connections} "
            f"less {self.reserved} reserved) but this server needs {self.need} "
            f"({self.workers} worker(s) × {PER_WORKER} + {PER_SERVER}{nodes}): "
            "give fewer --workers, or raise max_connections (docs/deploy.md, 'Connections')"
        )


async def read(
    conn: asyncpg.Connection, workers: int, node_id: str | None = None, lease_seconds: float = 5.0
) -> Budget:
    """The database's limits and, for the node ``node_id`` of a cluster, how many other
    nodes are live (seen within ``lease_seconds``)."""
    max_connections = int(await conn.fetchval("SELECT current_setting('max_connections')::int"))
    reserved = int(
        await conn.fetchval(
            "SELECT current_setting('superuser_reserved_connections')::int"
            " + coalesce(current_setting('reserved_connections', true), '0')::int"
        )
    )
    others = 0
    if node_id is not None and await conn.fetchval("SELECT to_regclass('nodes') IS NOT NULL"):
        others = int(
            await conn.fetchval(
                "SELECT count(*) FROM nodes WHERE node_id <> $1 AND seen_at > now() - make_interval(secs => $2)",
                node_id,
                float(lease_seconds),
            )
        )
    return Budget(max_connections, reserved, workers, others)


async def check(
    conn: asyncpg.Connection, workers: int, node_id: str | None = None, lease_seconds: float = 5.0
) -> Budget:
    """:func:`read`, and :class:`TooManyConnections` when the need does not fit."""
    budget = await read(conn, workers, node_id, lease_seconds)
    if not budget.fits:
        raise TooManyConnections(budget)
    return budget
