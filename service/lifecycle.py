"""The application's life: its database pool and lock, its tables and their leases
(:mod:`service.cluster`), and the way down on SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import asyncpg
from aiohttp import WSCloseCode, web

from service import siblings
from service.appkeys import (
    BACKGROUND,
    CLUSTER,
    CONFIG,
    HANDSHAKES,
    HEARTBEAT,
    LEDGER_AUDIT,
    LOADS,
    LOCK_LOST,
    METRICS,
    POOL,
    SOCKETS,
    TABLE_LOADS_AT_ONCE,
    TABLES,
    WRITER,
    WRITER_POOL,
)
from service.cluster import Cluster, Lease, LiveSiblings
from service.db import WRITER_POOL_SIZE, KeptConnections, ServerLock, create_pool, writer_pool
from service.handshakes import HandshakeQueue
from service.internal import SIBLINGS
from service.metrics import process_gauges
from service.table import TableActor
from service.tablestore import group_commit
from service.telling import Connection
from service.worker import worker_id

log = logging.getLogger("rummy.app")

#: how long the way out (SIGTERM) waits on a database that does not answer, a step at
#: a time (handing the leases over, giving the kept connections back, closing each
#: pool): the clients are told and the tables stopped before any of it, and a lease
#: not handed over runs out, so a hung database delays the exit by seconds, not by the
#: pools' 30 s statement timeout a connection
CLOSING_SECONDS = 2.0


async def bounded(step: Awaitable[Any], what: str, cut: Callable[[], None]) -> None:
    """One database step of the way out.  Not done within :data:`CLOSING_SECONDS`, the
    database is taken for hung: ``cut()`` aborts the pools' connections, so that what
    waits on them ends now (a cancelled query alone would wait for its connection's
    release, which asks the hung database to reset it), and the step is given up."""
    task = asyncio.ensure_future(step)
    done, _ = await asyncio.wait({task}, timeout=CLOSING_SECONDS)
    if not done:
        log.warning(
            "on the way out, the database did not answer %s in %.0f s: its connections cut", what, CLOSING_SECONDS
        )
        cut()
        task.cancel()
        await asyncio.wait({task}, timeout=CLOSING_SECONDS)
    if task.done() and not task.cancelled() and task.exception() is not None:
        log.warning("on the way out, %s failed: %r", what, task.exception())


def pools_cut(*pools: asyncpg.Pool | None) -> Callable[[], None]:
    """What :func:`bounded` calls when the database hangs: every connection of
    ``pools`` aborted (asyncpg's ``Pool.terminate``; a closed pool stays closed)."""

    def cut() -> None:
        for p in pools:
            if p is not None:
                p.terminate()

    return cut


async def database(app: web.Application) -> AsyncIterator[None]:
    """The pool and the group commit (the database was prepared before the app:
    service.startup), and the watch over the database's lock when this process holds
    it."""
    cfg = app[CONFIG]
    pool = await create_pool(cfg.dsn)
    try:
        writes = await writer_pool(cfg.dsn)
    except BaseException:
        await pool.close()
        raise
    kept = KeptConnections(writes, WRITER_POOL_SIZE)  # the group commit's, between its batches
    try:
        app[POOL] = pool
        app[WRITER_POOL] = writes
        app[WRITER] = group_commit(kept, window=cfg.settings.group_commit_seconds)
        app[LOADS] = asyncio.Semaphore(TABLE_LOADS_AT_ONCE)
        app[HANDSHAKES] = HandshakeQueue(cfg.handshake_queue)
        watchdog = None
        if cfg.server_lock is not None:
            watchdog = asyncio.create_task(keep_lock(app, cfg.server_lock), name="server-lock")
        try:
            yield
        finally:
            if watchdog is not None:
                watchdog.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watchdog
    finally:
        await app[LEDGER_AUDIT].close()  # an audit under way holds a connection of the pool
        cut = pools_cut(writes, pool)
        await bounded(kept.close(), "as the kept connections went back", cut)  # a batch in flight gives its own back
        await bounded(writes.close(), "as the writers' pool closed", cut)
        await bounded(pool.close(), "as the pool closed", cut)


async def keep_lock(app: web.Application, lock: ServerLock, every: float = 2.0) -> None:
    """Hold the one-server-per-database lock; if another server took it while the
    database was away, stop every table at once (two servers never write one table)
    and set LOCK_LOST: ``serve`` then goes down as at SIGTERM, its clients told, and
    exits EXIT_LOCKED.  This server's own session that the database kept is no other
    server's (ServerLock ends it and holds on)."""
    while True:
        await asyncio.sleep(every)
        try:
            held = await lock.keep()
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
            continue  # the database is away; the tables pause on their own
        if not held:
            log.critical("another server took this database's lock: stopping every table")
            await stop_tables(app)
            app[LOCK_LOST].set()  # serve goes down: its clients told, its leases let go (EXIT_LOCKED)
            return


async def tables_and_leases(app: web.Application) -> AsyncIterator[None]:
    """Take this node's leases and start their tables; keep the heartbeat; on the way
    out stop every table, then hand the leases over."""
    cfg = app[CONFIG]

    def start(lease: Lease) -> None:
        old = app[TABLES].get(lease.table_id)
        if old is not None:  # taken again with a new epoch: the old task can never write again
            task = asyncio.create_task(old.lose())
            app[BACKGROUND].add(task)
            task.add_done_callback(app[BACKGROUND].discard)
        new_actor(app, lease).start()

    async def stop(table_id: str) -> None:
        """The lease is lost: the table's clients are told ``moved`` and their sockets
        closed, exactly as when a write is fenced (they reconnect to the new owner)."""
        a = app[TABLES].pop(table_id, None)
        if a is not None:
            await a.lose(app[CLUSTER].others_seen)

    def handoff(table_id: str) -> bool:
        a = app[TABLES].get(table_id)
        if a is None:
            return False
        a.request_handoff()
        return True

    metrics = app[METRICS]

    def observe(late: float, took: float) -> None:
        metrics.heartbeat_late_seconds.observe(late)
        metrics.heartbeat_seconds.observe(took)

    cluster = Cluster(app[POOL], cfg.dsn, cfg.node, start, stop, handoff, live_siblings(app), observe)
    app[CLUSTER] = cluster
    await cluster.join()
    # Every table is loaded (its hand resumed or voided) before the server answers.
    await asyncio.gather(*(asyncio.wait_for(a.loaded.wait(), 60) for a in app[TABLES].values()))
    beat = asyncio.create_task(cluster.run(), name="cluster-heartbeat")
    app[HEARTBEAT] = beat
    try:
        yield
    finally:
        beat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beat
        await stop_tables(app)
        cut = pools_cut(app.get(POOL), app.get(WRITER_POOL))
        await bounded(cluster.leave(), "as the leases were handed over", cut)  # else they run out


def live_siblings(app: web.Application) -> LiveSiblings | None:
    """A worker of ``serve --workers``: which of its siblings are alive now (their
    leases are spared however late: service.siblings); None for a server alone."""
    if SIBLINGS not in app:
        return None
    plan = app[SIBLINGS].plan

    def alive() -> list[str]:
        others = (i for i in range(1, plan.count + 1) if i != plan.index)
        return [worker_id(plan.node, i) for i in others if siblings.alive(plan.run_dir, i, plan.supervisor)]

    return alive


def new_actor(app: web.Application, lease: Lease) -> TableActor:
    def lost(table_id: str, release: bool, failed: bool) -> None:
        """The table let go (fenced, handed over, or its task failed): forget it, and
        give a handed-over or failed table's lease up at once for a node to take."""
        if app[TABLES].get(table_id) is not a:
            return  # a newer actor serves the table (taken again, a new epoch): its lease is not ours to drop
        del app[TABLES][table_id]
        label = "failed" if failed else "handed_over" if release else "lost"
        app[METRICS].tables_let_go.labels(label).inc()
        if release:
            task = asyncio.create_task(app[CLUSTER].release(table_id))
            app[BACKGROUND].add(task)
            task.add_done_callback(app[BACKGROUND].discard)
        else:
            app[CLUSTER].forget(table_id)

    a = TableActor(
        lease.table_id,
        app[POOL],
        app[CONFIG].keys,
        app[CONFIG].settings,
        app[METRICS],
        lease=lease,
        on_lost=lost,
        writer=app[WRITER],
        loads=app[LOADS],
    )
    app[TABLES][lease.table_id] = a
    app[METRICS].tables_taken.inc()
    return a


async def stop_tables(app: web.Application) -> None:
    await asyncio.gather(*(a.stop() for a in list(app[TABLES].values())))


async def on_shutdown(app: web.Application) -> None:
    """SIGTERM/SIGINT: the listening socket is already closed; stop the heartbeat and
    every clock first (nothing is charged while the server goes down), hand the leases
    over, then tell every client, with the other nodes it may reconnect to, and close
    its socket.  Handed over first, a client that goes to another node at once is sent
    on to the table's new owner, not back to this one."""
    beat = app.get(HEARTBEAT)
    if beat is not None:
        beat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beat
    await stop_tables(app)
    servers: list[str] = []
    if CLUSTER in app:
        # The database may be away or hung: the leases then run out, and a hung one's
        # connections are cut here, so the clean-up's own try (tables_and_leases) and
        # the pools' close meet closed pools at once.
        await bounded(
            app[CLUSTER].leave(), "as the leases were handed over", pools_cut(app.get(POOL), app.get(WRITER_POOL))
        )
        with contextlib.suppress(Exception):
            servers = await asyncio.wait_for(app[CLUSTER].others(), 1.0)
    sockets = list(app[SOCKETS].items())
    for _, conn in sockets:
        conn.push(
            {"type": "shutdown", "message": "the server is going down; reconnect in a moment", "servers": servers}
        )

    async def close(ws: web.WebSocketResponse, conn: Connection) -> None:
        await asyncio.sleep(0.05)  # let the writer send the notice
        conn.close()
        with contextlib.suppress(Exception):
            await ws.close(code=WSCloseCode.GOING_AWAY, message=b"server shutting down")

    if sockets:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(close(ws, c) for ws, c in sockets)), 1.0)


def live_metrics(app: web.Application) -> None:
    def read() -> dict[str, Any]:
        tables = list(app[TABLES].values())
        totals = app[LEDGER_AUDIT].figures  # the last audit a scrape ran (service.ledgeraudit)
        out: dict[str, Any] = {
            "rummy_tables": ("Tables served", len(tables)),
            "rummy_tables_paused": ("Tables waiting for their database", sum(1 for a in tables if a.paused)),
            "rummy_hands_in_progress": ("Hands in progress", sum(1 for a in tables if a.hand is not None)),
            "rummy_seats": ("Seats taken", sum(len(a.t.seats) for a in tables)),
            "rummy_connections": ("Open WebSocket connections", len(app[SOCKETS])),
            **process_gauges(),
        }
        pools = [p for p in (app.get(POOL), app.get(WRITER_POOL)) if p is not None]
        if pools:
            opened, idle = sum(p.get_size() for p in pools), sum(p.get_idle_size() for p in pools)
            out["rummy_db_pool_connections"] = ("Database connections open in the pools", opened)
            out["rummy_db_pool_idle"] = ("Database connections idle in the pools", idle)
            out["rummy_db_pool_max"] = ("Database connections the pools may open", sum(p.get_max_size() for p in pools))
        for key in ("deposited", "players_available", "players_held", "house_commission"):
            if key in totals:
                out[f"rummy_ledger_{key}"] = (f"Ledger: {key.replace('_', ' ')} (HT minor units)", totals[key])
        if "ok" in totals:
            out["rummy_ledger_ok"] = ("1 when every ledger invariant holds", int(bool(totals["ok"])))
        age = app[LEDGER_AUDIT].age()
        if age is not None:  # the figures above are this old (a hung database: older than a minute)
            out["rummy_ledger_audit_age_seconds"] = ("Seconds since the ledger's last completed audit", round(age, 3))
        return out

    app[METRICS].add_live(read)
