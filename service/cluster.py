"""Nodes and table leases: several servers on one PostgreSQL (docs/deploy.md).

Each table is owned by exactly one node through a row in ``table_leases`` (owner,
epoch, expiry).  The epoch rises on every takeover, and every write a table makes goes
through the group commit, whose batch checks — inside the write's own transaction, with
a key-share lock a takeover must wait for — that this node still holds that epoch
(service.tablestore).  So a node that lost its lease (paused, partitioned, slow) can
never write for that table again: its write raises :class:`Fenced`, and the table
stops.

A node renews its leases on a heartbeat, takes expired ones (at most its share, so
tables spread evenly over the live nodes), and on SIGTERM hands its tables over at
once.  Nodes hear of released and new tables through PostgreSQL ``LISTEN/NOTIFY`` and
take them without waiting for the next beat.  A server alone (no ``--node-id``) is a
cluster of one: it takes every table at start, holding the database's exclusive lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

import asyncpg

from service import nodes
from service.db import ACQUIRE_TIMEOUT, connect, connection
from service.worker import sibling_index

log = logging.getLogger("rummy.cluster")
CHANNEL = "rummy_cluster"


@dataclass(frozen=True)
class Lease:
    table_id: str
    owner: str
    epoch: int


# The lock modes are chosen so that renewing never waits for a write:
# * a write checks its lease with FOR KEY SHARE (fencing), held to its commit;
# * a renewal changes only expires_at, with FOR NO KEY UPDATE, which does not conflict
#   with KEY SHARE, so it never queues behind a write in flight (with FOR SHARE it did:
#   under load a renewal of 800 leases waited seconds behind open settlements, every
#   later write queued behind the renewal, and the leases ran out);
# * whatever changes the owner or the epoch (a takeover, a release) first locks the
#   row FOR UPDATE, which conflicts with KEY SHARE: it waits for, or skips, a table
#   whose write is in flight, and that write, once it can look, sees the new epoch.
# A statement that locks several leases locks them in table order (as the group
# commit's are taken, service.tablestore): two such statements never wait for each other
# in a circle.  $1 is the owner, $2 the tables, $3 their epochs.
RENEW_SQL: Final = """
WITH lk AS MATERIALIZED (  -- locked here, in table order, before the UPDATE touches them
    SELECT table_id FROM table_leases WHERE table_id = ANY($2::text[]) AND owner = $1
    ORDER BY table_id FOR NO KEY UPDATE
)
UPDATE table_leases l SET expires_at = now() + make_interval(secs => $4)
FROM unnest($2::text[], $3::bigint[]) AS o(t, e)
WHERE l.table_id = o.t AND l.epoch = o.e AND l.owner = $1 AND l.table_id IN (SELECT table_id FROM lk)
RETURNING l.table_id
"""
RELEASE_ALL_SQL: Final = """
WITH lk AS MATERIALIZED (  -- locked here, in table order, before the UPDATE touches them
    SELECT table_id FROM table_leases WHERE table_id = ANY($2::text[]) AND owner = $1
    ORDER BY table_id FOR UPDATE
)
UPDATE table_leases l SET owner = NULL, expires_at = now()
FROM unnest($2::text[], $3::bigint[]) AS o(t, e)
WHERE l.table_id = o.t AND l.epoch = o.e AND l.owner = $1 AND l.table_id IN (SELECT table_id FROM lk)
"""


# A live sibling's lease (service.siblings) is spared however late its renewal, up to
# this many lease periods overdue: beyond that its worker is wedged, not starved, and
# its tables are taken as a dead one's would be (fencing stops its writes).
SIBLING_PATIENCE_LEASES: Final = 12

# A heartbeat not done within this many lease periods is hung (its own connection:
# one backend stuck, a pooler that lost the session, a half-open TCP path), not slow:
# it is given up, its connection cut and made again on the next beat.  Its statements
# have no timeout of their own; before, one connection that hung held the heartbeat
# for ever — the watch let every lease go (rightly) and nothing took them again on
# this node (the audit h79, tests/test_audit_seams_processes.py).  Six leases is the
# pools' statement timeout at the default lease (30 s at 5 s).
HUNG_BEAT_LEASES: Final = 6


def share_of(live: int, total: int) -> int:
    """An even share of ``total`` open tables over ``live`` nodes (rounded up)."""
    return math.ceil(total / max(1, live))


class Fenced(Exception):
    """This node no longer holds the table's lease: another node owns it now."""


@dataclass
class NodeSettings:
    node_id: str = "solo"
    public_url: str = ""
    cluster: bool = False  # False: a server alone, which takes every table at start
    #: other nodes of a cluster may take this node's tables once its leases run out (a
    #: node of a cluster, or a worker of one): a lease it cannot renew in time is given
    #: up on its own clock, before another can take it (:meth:`Cluster.expire`)
    shared: bool = False
    lease_seconds: float = 5.0
    heartbeat_seconds: float = 1.0
    #: the node this process is a worker of (``serve --workers``: it holds leases as
    #: ``NODE/wN``); empty: this process is the node
    node_name: str = ""
    #: the steady clock (seconds) the leases are reckoned on: when each may run out, and
    #: whether the node stood still (:meth:`Cluster.expire`); a test gives its own
    clock: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)

    def sibling(self, holder: str) -> int | None:
        """The index of ``holder`` when it is another worker of this node."""
        if not self.node_name or holder == self.node_id:
            return None
        return sibling_index(self.node_name, holder)


StartTable = Callable[[Lease], None]
StopTable = Callable[[str], Awaitable[None]]
HandOff = Callable[[str], bool]  # ask a table to hand over after its hand; False if it cannot
LiveSiblings = Callable[[], Sequence[str]]  # the holder ids of this node's other workers alive now


class Cluster:
    """This node's membership and its leases."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        dsn: str,
        node: NodeSettings,
        start: StartTable,
        stop: StopTable,
        handoff: HandOff | None = None,
        live_siblings: LiveSiblings | None = None,
        observe: Callable[[float, float], None] | None = None,
    ) -> None:
        self.pool = pool
        self.dsn = dsn
        self.node = node
        self._start = start
        self._stop = stop
        self._handoff = handoff
        self._live_siblings = live_siblings
        self._observe = observe  # (seconds late, seconds taken) after each completed heartbeat
        self._handing: set[str] = set()
        # Tables taken beyond the share because no other node took them (a node below
        # its share that takes nothing): kept while the cluster looks the same — the
        # live nodes and the open tables it was taken under — and not handed to that
        # node again, which would leave the table without an owner for two more lease
        # periods, over and over (its players paused each time).
        self._kept: dict[str, tuple[int, int]] = {}
        self.owned: dict[str, Lease] = {}
        #: table -> the moment (the node's clock: this process's monotonic one) by which its lease may have
        #: run out in the database: lease_seconds after the start of the statement that
        #: last took or renewed it (the database's expiry is never earlier)
        self.valid: dict[str, float] = {}
        self.others_seen: list[str] = []  # the other live nodes' URLs at the last heartbeat
        self._wake = asyncio.Event()
        self._listener: asyncpg.Connection | None = None
        self._heart: asyncpg.Connection | None = None
        self._heart_lock = asyncio.Lock()
        self._creating: set[str] = set()  # tables whose creating transaction is open (add_table)
        self.takeovers = 0
        self.beats = 0  # heartbeats completed (tests wait for beats, not for seconds)
        self.lateness = 0.0  # seconds the last heartbeat ran after it was due (loop lag)
        #: the watch found that this node stood still (it woke a heartbeat or more late):
        #: until then the heartbeat may renew before :meth:`expire` gives any lease up
        self.stood_still_until = 0.0

    # -- life --------------------------------------------------------------------------
    async def join(self) -> None:
        async with self._own_connection() as conn:
            await nodes.register(conn, self.node.node_id, self.node.public_url, self.node.lease_seconds)
            # Tables created before leases existed (or by an older server) get a lease row.
            await conn.execute(
                "INSERT INTO table_leases (table_id) SELECT id FROM tables ON CONFLICT (table_id) DO NOTHING"
            )
        await self._listen()
        await self.acquire()

    async def run(self) -> None:
        """The heartbeat: be seen, renew, take what is free; never ends by itself.  On a
        node whose tables another node may take, a watch beside it gives up the leases
        the heartbeat could not renew in time (:meth:`expire`)."""
        watch = asyncio.create_task(self._watch(), name="cluster-lease-watch") if self.node.shared else None
        try:
            await self._beats()
        finally:
            if watch is not None:
                watch.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watch

    async def _watch(self) -> None:
        beat = self.node.heartbeat_seconds
        clock = self.node.clock
        while True:
            now = clock()
            await self.expire(now)
            soonest = min(self.valid.values(), default=now + self.node.lease_seconds) - beat
            nap = min(beat, max(0.05, soonest - now))
            planned = clock() + nap
            await asyncio.sleep(nap)
            woke = clock()
            if woke - planned > beat:
                # This node stood still (SIGSTOP, a hung host, starved of CPU), not its
                # database: the heartbeat renews at once, and the leases wait half a beat
                # for it.  Before, a stop of 4 s let every lease go on the spot, and every
                # client reconnected to a node that could have renewed (found by an audit).
                self.stood_still_until = woke + beat / 2
                self._wake.set()

    async def expire(self, now: float) -> None:
        """Give up, on this node's own clock, every lease that may run out within a
        heartbeat without a renewal: the heartbeat hangs on a database this node cannot
        reach (a partition, a stalled connection) while another node, which can, takes
        the table once its lease has run out.  Without this the node learnt of the loss
        only when the database answered it again: meanwhile its clients were told
        ``paused`` ("no clock runs") while the new owner's clock charged them (found by
        an audit: timeouts and a clock drop, D16, D31).  Their sockets are told ``moved``
        now, with the other nodes' addresses, so that they find the new owner within the
        reach D37 gives them, and a move this node refuses is refused before the new
        owner resumes (D32, D35).  A node that stood still itself gives the heartbeat
        half a beat to renew first (:meth:`_watch`)."""
        if now < self.stood_still_until:  # the heartbeat renews first (:meth:`_watch`)
            return
        late = sorted(t for t, until in self.valid.items() if until - self.node.heartbeat_seconds <= now)
        if not late:
            return
        log.warning(
            "node %s: the leases of %s could not be renewed in time; letting them go before another node takes them",
            self.node.node_id,
            " ".join(late),
        )
        await asyncio.gather(*(self.lost(t) for t in late))

    async def _beats(self) -> None:
        due = time.monotonic() + self.node.heartbeat_seconds
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), max(0.0, due - time.monotonic()))
            self._wake.clear()
            began = time.monotonic()
            self.lateness = max(0.0, began - due)  # how long the event loop kept the beat waiting
            if self.lateness > self.node.lease_seconds / 2:
                log.warning(
                    "node %s: the heartbeat ran %.1f s late (the lease is %.1f s): this process is starved of CPU",
                    self.node.node_id,
                    self.lateness,
                    self.node.lease_seconds,
                )
            try:
                await asyncio.wait_for(self.beat(), HUNG_BEAT_LEASES * self.node.lease_seconds)
                took = time.monotonic() - began
                if self._observe is not None:
                    with contextlib.suppress(Exception):  # a metric's fault is not the heartbeat's
                        self._observe(self.lateness, took)
                if took > self.node.lease_seconds / 2:
                    log.warning(
                        "node %s: a heartbeat took %.1f s (the lease is %.1f s): the node or its database is slow",
                        self.node.node_id,
                        took,
                        self.node.lease_seconds,
                    )
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the database is away: the tables pause on their own
                log.warning("node %s: heartbeat failed (%s: %s)", self.node.node_id, type(e).__name__, e or "hung")
                await self._drop_listener()
            due = time.monotonic() + self.node.heartbeat_seconds

    @contextlib.asynccontextmanager
    async def _own_connection(self) -> AsyncIterator[asyncpg.Connection]:
        """The heartbeat's own connection, never one of the pool's.  Under load every
        pooled connection can be busy for seconds; a renewal that waited for one lost
        the node its leases, the other node took those tables and lost its own the same
        way (seen at 1,666 tables on two workers: 9,814 leases lost in ten minutes).
        A connection that failed, or hung (:data:`HUNG_BEAT_LEASES`), is closed and made
        again on the next beat."""
        async with self._heart_lock:
            if self._heart is None or self._heart.is_closed():
                self._heart = await connect(self.dsn)
            try:
                yield self._heart
            except BaseException:
                await self._close_heart()
                raise

    async def _close_heart(self) -> None:
        conn, self._heart = self._heart, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), 2)

    async def beat(self) -> None:
        async with self._own_connection() as conn:
            await nodes.beat(conn, self.node.node_id)
            if self.node.shared:
                self.others_seen = await nodes.other_urls(conn, self.node.node_id, self.node.lease_seconds)
        await self.renew()
        await self.acquire()
        await self.rebalance()
        if self._listener is None or self._listener.is_closed():
            await self._listen()
        self.beats += 1

    async def leave(self) -> None:
        """SIGTERM: hand every table over now (its task is already stopped), and stop
        counting as a live node, so the others take a full share at once."""
        await self._close_heart()
        with contextlib.suppress(Exception):
            async with connection(self.pool) as conn:
                await nodes.leave(conn, self.node.node_id)
        self.valid.clear()
        if not self.owned:
            return
        tables = list(self.owned)
        epochs = [self.owned[t].epoch for t in tables]
        with contextlib.suppress(Exception):
            async with connection(self.pool) as conn:
                await conn.execute(
                    RELEASE_ALL_SQL,
                    self.node.node_id,
                    tables,
                    epochs,
                )
                await conn.execute("SELECT pg_notify($1, $2)", CHANNEL, "released")
                log.info("node %s: leaving; released tables %s", self.node.node_id, " ".join(sorted(tables)))
        self.owned.clear()
        await self._drop_listener()

    # -- leases ------------------------------------------------------------------------
    async def renew(self) -> None:
        if not self.owned:
            return
        renewing = dict(self.owned)
        tables = list(renewing)
        epochs = [renewing[t].epoch for t in tables]
        began = self.node.clock()
        async with self._own_connection() as conn:
            rows = await conn.fetch(
                RENEW_SQL,
                self.node.node_id,
                tables,
                epochs,
                self.node.lease_seconds,
            )
        kept = {r["table_id"] for r in rows}
        for t in kept:
            if self.owned.get(t) is renewing[t]:  # not let go meanwhile (a hand-over, the watch)
                self.valid[t] = began + self.node.lease_seconds
        # a table let go meanwhile (a hand-over: Cluster.release drops it from ours, then
        # clears its row), or let go and taken again under a new lease, was not lost: only
        # the leases still ours as they were are
        gone = [t for t in tables if t not in kept and self.owned.get(t) is renewing[t]]
        for table_id in gone:
            log.warning("node %s: lost the lease of table %s; letting it go", self.node.node_id, table_id)
        # together: stopping a table may wait up to a second for its command in hand,
        # and a heartbeat that stopped them one by one would let the other leases run out
        await asyncio.gather(*(self.lost(t) for t in gone))

    def forget(self, table_id: str) -> Lease | None:
        """This node holds the table's lease no more (lost, let go, handed over)."""
        self.valid.pop(table_id, None)
        return self.owned.pop(table_id, None)

    async def lost(self, table_id: str) -> None:
        if self.forget(table_id) is not None:
            await self._stop(table_id)

    async def acquire(self) -> None:
        """Take free and expired leases, up to this node's share of the open tables
        (all of them when alone), each with a new epoch; start their tables.  A table
        left free for two lease periods — every node thought itself full — is taken
        beyond the share: an open table is never left without an owner."""
        async with self._own_connection() as conn:
            stray = False
            began = self.node.clock()
            if self.node.cluster:
                look = await self.look(conn)
                want = share_of(*look) - len(await self.open_owned(conn))
                stray = want <= 0
                rows = await self._take(conn, 1, stray=True) if stray else await self._take(conn, want)
            else:
                rows = await self._take(conn, 1 << 30)
        for r in rows:
            if stray:
                self._kept[str(r["table_id"])] = look
            lease = Lease(str(r["table_id"]), self.node.node_id, int(r["epoch"]))
            self.owned[lease.table_id] = lease
            self.valid[lease.table_id] = began + self.node.lease_seconds
            self.takeovers += 1
            log.info("node %s: took table %s (epoch %d)", self.node.node_id, lease.table_id, lease.epoch)
            self._start(lease)

    async def _take(self, conn: asyncpg.Connection, limit: int, stray: bool = False) -> list[asyncpg.Record]:
        """Take up to ``limit`` open tables whose lease is free or has expired (with
        ``stray``, only those free for two lease periods or more)."""
        free_for = 2 * self.node.lease_seconds if stray else 0.0
        # a sibling worker alive on this host is late, not dead: its leases are spared
        spared = list(self._live_siblings()) if self._live_siblings is not None else []
        rows: list[asyncpg.Record] = await conn.fetch(
            "UPDATE table_leases l SET owner = $1, epoch = l.epoch + 1, "
            "expires_at = now() + make_interval(secs => $2) "
            "WHERE l.table_id IN (SELECT f.table_id FROM table_leases f JOIN tables t ON t.id = f.table_id "
            " WHERE t.status <> 'closed' AND (((f.owner IS NULL OR f.owner <> $1) "
            "   AND f.expires_at < now() - make_interval(secs => $6)) OR (NOT $6 > 0 AND f.owner = $1) OR NOT $4)"
            " AND NOT (f.table_id = ANY($5::text[]))"
            " AND NOT (COALESCE(f.owner = ANY($7::text[]), false)"
            "   AND f.expires_at > now() - make_interval(secs => $8))"
            " ORDER BY f.table_id LIMIT $3 FOR UPDATE SKIP LOCKED) "
            "RETURNING l.table_id, l.epoch",
            self.node.node_id,
            self.node.lease_seconds,
            limit,
            self.node.cluster,
            [*self.owned, *self._creating],
            free_for,
            spared,
            SIBLING_PATIENCE_LEASES * self.node.lease_seconds,
        )
        return rows

    async def open_owned(self, conn: asyncpg.Connection) -> set[str]:
        """The open tables among this node's: a closed table is out of the share (it
        deals no hand; counted, it left an open table without an owner)."""
        if not self.owned:
            return set()
        rows = await conn.fetch(
            "SELECT id FROM tables WHERE id = ANY($1::text[]) AND status <> 'closed'", list(self.owned)
        )
        return {str(r["id"]) for r in rows}

    async def look(self, conn: asyncpg.Connection) -> tuple[int, int]:
        """(live nodes, open tables): what a share is reckoned from."""
        live = await nodes.live_count(conn, self.node.lease_seconds)
        total = int(await conn.fetchval("SELECT COUNT(*) FROM tables WHERE status <> 'closed'"))
        return live, total

    async def rebalance(self) -> None:
        """Owning more open tables than an even share (a node joined): hand the extra
        ones over, each as its hand in progress ends — never in the middle of one —
        and only while another live node is below its share to take them."""
        if not self.node.cluster or self._handoff is None:
            return
        async with self._own_connection() as conn:
            look = await self.look(conn)
            share = share_of(*look)
            # a table kept after a hand-over nobody took stays while the cluster looks
            # the same; a node joining or leaving, or a table opening or closing, ends it
            self._kept = {t: seen for t, seen in self._kept.items() if seen == look and t in self.owned}
            mine = await self.open_owned(conn) - self._handing
            extra = len(mine - self._kept.keys()) - share
            if extra <= 0 or not await nodes.another_below(conn, self.node.node_id, self.node.lease_seconds, share):
                return
        for table_id in sorted(mine - self._kept.keys())[:extra]:
            if self._handoff(table_id):
                self._handing.add(table_id)

    async def release(self, table_id: str) -> None:
        """Give one table's lease up (its task has stopped), for another node to take."""
        lease = self.forget(table_id)
        self._handing.discard(table_id)
        if lease is None:
            return
        async with connection(self.pool) as conn:
            await conn.execute(
                "WITH lk AS (SELECT table_id FROM table_leases WHERE table_id = $1 AND owner = $2 AND epoch = $3 "
                "FOR UPDATE) UPDATE table_leases SET owner = NULL, expires_at = now() "
                "WHERE table_id IN (SELECT table_id FROM lk)",
                lease.table_id,
                lease.owner,
                lease.epoch,
            )
            await conn.execute("SELECT pg_notify($1, $2)", CHANNEL, "released")

    async def add_table(self, conn: asyncpg.Connection, table_id: str) -> Lease:
        """A table this node is creating, in the caller's transaction, is its own: the
        caller calls :meth:`adopt` once that transaction has committed (or
        :meth:`abandon`).  Until then the heartbeat neither renews it (it would not see
        the row, and call the lease lost) nor takes it as a table of its own to load."""
        self._creating.add(table_id)
        epoch = await conn.fetchval(
            "INSERT INTO table_leases (table_id, owner, epoch, expires_at) "
            "VALUES ($1, $2, 1, now() + make_interval(secs => $3)) RETURNING epoch",
            table_id,
            self.node.node_id,
            self.node.lease_seconds,
        )
        await conn.execute("SELECT pg_notify($1, $2)", CHANNEL, "created")
        return Lease(table_id, self.node.node_id, int(epoch))

    def adopt(self, lease: Lease) -> None:
        self._creating.discard(lease.table_id)
        self.owned[lease.table_id] = lease
        self.valid[lease.table_id] = self.node.clock() + self.node.lease_seconds

    def abandon(self, table_id: str) -> None:
        self._creating.discard(table_id)

    async def owner_of(self, table_id: str, wait: float = ACQUIRE_TIMEOUT) -> tuple[str, str] | None:
        """(node id, public URL) of the node that holds the table's lease now (a live
        sibling worker's, however late: service.siblings)."""
        async with connection(self.pool, wait) as conn:
            owner = await nodes.owner_of(conn, table_id, self.node.lease_seconds)
            if owner is None and self._live_siblings is not None:
                # a sibling starved of CPU renews late but still serves: it is still the owner
                late = await nodes.holder_of(conn, table_id)
                if late is not None and late[0] in self._live_siblings():
                    return late
            return owner

    async def others(self) -> list[str]:
        """The public URLs of the other live nodes (none for a server alone): where a
        client of this node may reconnect when this node goes down."""
        if not self.node.cluster:
            return []
        async with connection(self.pool) as conn:
            return await nodes.other_urls(conn, self.node.node_id, self.node.lease_seconds)

    # -- hearing of released and new tables --------------------------------------------
    async def _listen(self) -> None:
        if not self.node.cluster:
            return
        try:
            self._listener = await connect(self.dsn)
            await self._listener.add_listener(CHANNEL, self._notified)
        except (OSError, asyncpg.PostgresError, TimeoutError) as e:
            log.warning("node %s: cannot listen (%s); relying on the heartbeat", self.node.node_id, e)
            if self._listener is not None:  # connected, but LISTEN failed: not left open
                self._listener.terminate()
            self._listener = None

    def _notified(self, *_: object) -> None:
        self._wake.set()

    async def _drop_listener(self) -> None:
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._listener.close(), 2)
            self._listener = None
