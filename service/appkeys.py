"""What the application holds: its configuration and the typed keys of its state.

Resources live in the application's ``cleanup_ctx`` (:mod:`service.lifecycle`); the
state they make hangs off these typed ``web.AppKey``s, which every handler reads.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import asyncpg
from aiohttp import web

from service import pace
from service.cluster import Cluster, NodeSettings
from service.db import ServerLock
from service.handshakes import HandshakeQueue
from service.keys import ServerKeys
from service.ledgeraudit import LedgerAudit
from service.metrics import Metrics
from service.table import Settings
from service.tablestore import Batched
from service.writer import GroupCommit


@dataclass
class Config:
    dsn: str
    keys: ServerKeys
    settings: Settings = field(default_factory=Settings)
    heartbeat: float = 20.0
    node: NodeSettings = field(default_factory=NodeSettings)
    #: the database's one-server lock, when this process holds it (a server alone in
    #: its process); watched, so that two servers never write one table
    server_lock: ServerLock | None = None
    #: /metrics is served on an address of its own (serve --metrics-listen): on the
    #: public port it then needs the operator token from everyone, this machine too
    metrics_elsewhere: bool = False
    #: a WebSocket handshake waits this long for the database (its token, its table's
    #: worker) before it is answered 503 — a server starved of CPU is slow, not
    #: gone — and at most ``handshake_queue`` handshakes of a process wait at once
    #: (one more is answered 503 at once); every 503 carries Retry-After
    handshake_wait: float = 30.0
    handshake_queue: int = 512
    #: a socket may send ``message_burst`` messages at once, then ``message_rate`` a
    #: second; one beyond is read when its turn comes, not refused (service.pace)
    message_rate: float = pace.RATE
    message_burst: int = pace.BURST
    #: a process serves at most this many open sockets of one player (service.pace)
    sockets_per_player: int = pace.SOCKETS_PER_PLAYER

    def __post_init__(self) -> None:
        # refused here, not at each socket
        pace.Pace.full(0.0, self.message_rate, self.message_burst)
        pace.PlayerSockets(self.sockets_per_player)

    def own_urls(self) -> tuple[str, ...]:
        """Where people open this card room's pages on this node: its public URL."""
        return (self.node.public_url,) if self.node.public_url else ()


CONFIG = web.AppKey("config", Config)


POOL = web.AppKey("pool", asyncpg.Pool)  # loads, REST, the cluster, health (service.db.MAIN_POOL_SIZE)
WRITER_POOL = web.AppKey("writer_pool", asyncpg.Pool)  # the group commit's own (service.db.writer_pool)


TABLES = web.AppKey("tables", dict)  # table id -> TableActor


SOCKETS = web.AppKey("sockets", dict)  # WebSocketResponse -> Connection
PLAYER_SOCKETS = web.AppKey("player_sockets", pace.PlayerSockets)  # open sockets per player (service.pace)


CLUSTER = web.AppKey("cluster", Cluster)


BACKGROUND = web.AppKey("background", set)  # short tasks kept alive until done


#: set when another server took the database's lock (service.lifecycle.keep_lock): the
#: process's tables are stopped, and ``serve`` goes down with EXIT_LOCKED
LOCK_LOST = web.AppKey("lock_lost", asyncio.Event)


WRITER = web.AppKey[GroupCommit[Batched]]("writer")  # the group commit: every table write (service.tablestore)


LOADS = web.AppKey("loads", asyncio.Semaphore)  # tables loading at once (service.table)


HANDSHAKES = web.AppKey("handshakes", HandshakeQueue)  # handshakes waiting (service.handshakes)


HEARTBEAT = web.AppKey("heartbeat", asyncio.Task)  # the cluster's heartbeat (service.cluster)


TABLE_LOADS_AT_ONCE = 4  # of the main pool's 6 connections: REST and the cluster keep the rest


METRICS = web.AppKey("metrics", Metrics)


LEDGER_AUDIT = web.AppKey("ledger_audit", LedgerAudit)  # refreshed for /metrics just before it is drawn
