"""Starting a server: the one path the command line, the supervisor of ``serve
--workers`` and the tests all take.

:func:`prepare` makes a server's ground once, before any worker: the data directory
held, the key files checked and loaded (created on first run), the database (the
embedded PostgreSQL unless a URL is given) reached, locked for this server
(:class:`service.db.ServerLock`), migrated, checked to belong to this card room, and
its operator token installed.  :func:`start_app` serves the application on that
ground in this process; a worker of ``serve --workers`` takes its supervisor's ground
with :func:`attach`.  :func:`start_server` is both in one call.  Whatever fails is
undone, and a data directory the start created is removed again.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

import asyncpg
from aiohttp import web

from service import connbudget, nodes, store
from service.api_public import make_metrics_app
from service.app import Config, make_app
from service.cluster import NodeSettings
from service.db import ACQUIRE_TIMEOUT, DataDirLock, EmbeddedPostgres, ServerLock, migrate
from service.errors import EXIT_UNREACHABLE, EXIT_USAGE, CliError
from service.handover import Receiver
from service.httpguard import GuardedRunner, HttpLimits
from service.internal import SIBLINGS, Siblings, make_internal_app
from service.keys import ServerKeys
from service.leftovers import clear_old_workers
from service.startchecks import DatabaseUrl, check_database, check_key_files, database_error, first_missing, listen
from service.table import Settings
from service.worker import WorkerPlan
from verifier.signing import fingerprint_text

DB_ERRORS = (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError)


@dataclass
class Prepared:
    """A server's ground: its keys, its database, and what holds them for it."""

    data_dir: Path
    keys: ServerKeys
    url: DatabaseUrl
    new_operator_token: str | None = None  # made on this first run: printed once
    embedded: EmbeddedPostgres | None = None
    dir_lock: DataDirLock | None = None
    db_lock: ServerLock | None = None
    created: Path | None = None  # the outermost directory this start created

    async def release(self, *, failed: bool = False) -> None:
        """Let go of the database's lock, stop the embedded PostgreSQL, let go of the
        data directory (and remove it again if this start created it and ``failed``)."""
        try:
            if self.db_lock is not None:
                await self.db_lock.release()
            if self.embedded is not None:
                await asyncio.to_thread(self.embedded.stop)
        finally:
            if self.dir_lock is not None:
                self.dir_lock.release()
            if failed and self.created is not None:
                shutil.rmtree(self.created, ignore_errors=True)  # nothing half-created


def announce(
    url: str,
    *,
    data_dir: Path,
    embedded: bool,
    source: object,
    fingerprint: str,
    operator_token: str | None,
    workers: int | None = None,
) -> None:
    """What ``serve`` prints once it serves (one process or a supervisor of workers):
    where, on what, the server key's fingerprint, and a new operator token once."""
    count = f"{workers} workers; " if workers is not None else ""
    print(
        f"rummy-table serving on {url}  ({count}data: {data_dir.resolve()}, "
        f"database: {'embedded' if embedded else source})",
        flush=True,
    )
    print(f"server key fingerprint: {fingerprint_text(fingerprint)}", flush=True)
    if operator_token:
        print(f"operator token (shown once, keep it): {operator_token}", flush=True)


async def _start_embedded(embedded: EmbeddedPostgres) -> str:
    starting = asyncio.ensure_future(asyncio.to_thread(embedded.start))
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:  # Ctrl-C: let the start finish, so that it can be stopped
        with contextlib.suppress(Exception):
            await starting
        raise
    except (subprocess.SubprocessError, OSError, AssertionError) as e:
        raise CliError(
            EXIT_UNREACHABLE,
            f"the embedded PostgreSQL did not start ({type(e).__name__}); see {embedded.log_file}"
            f" and PostgreSQL's own log, {embedded.pgdata / 'log'}",
        ) from e


async def prepare(
    *,
    data_dir: Path,
    database_url: str | None,
    operator_token: str | None,
    database_source: str = "DATABASE_URL",
    node: str | None = None,
    workers: int = 1,
    lease_seconds: float = 5.0,
) -> Prepared:
    """A server's ground (module docstring).  ``node``: the id of a node of a
    cluster, which holds the database's lock shared with the other nodes, and its
    node id alone (a second live process with that id is refused); else this server
    holds the database alone.  Expected failures raise a :class:`service.errors.ServiceError` after
    undoing what this call started."""
    url = DatabaseUrl(database_url, database_source) if database_url is not None else None
    if url is not None:
        url.check()
        await check_database(url)
    created = first_missing(data_dir)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CliError(EXIT_USAGE, f"cannot create the data directory {data_dir} ({e.strerror or e})") from None
    dir_lock = DataDirLock(data_dir)
    ground: Prepared | None = None
    try:
        dir_lock.acquire()
        # a server killed before on this directory: its workers gone (killed if they outlive the wait)
        await asyncio.to_thread(clear_old_workers, dir_lock.previous, data_dir)
        check_key_files(data_dir)  # a damaged key file stops us before anything is created
        keys = ServerKeys.load(data_dir)
        ground = Prepared(data_dir, keys, url or DatabaseUrl("", ""), dir_lock=dir_lock, created=created)
        if url is None:
            ground.embedded = EmbeddedPostgres(data_dir)
            url = ground.url = DatabaseUrl(await _start_embedded(ground.embedded), "the embedded PostgreSQL")
        try:
            ground.db_lock = await ServerLock.acquire(url.dsn, shared=node is not None, node=node)
            conn = await asyncpg.connect(url.dsn, timeout=ACQUIRE_TIMEOUT)
        except DB_ERRORS as e:
            raise database_error(e, url) from e
        try:  # once, before any worker: room for them, the migrations, the keys, the operator token
            await connbudget.check(conn, workers, node, lease_seconds)  # TooManyConnections: exit 6
            await migrate(conn)
            await store.check_keys(conn, keys)
            ground.new_operator_token = await store.operator_token(conn, operator_token)
            if node is None:  # alone on this database (its lock is ours): every node row is a dead process's
                await nodes.forget_every_node(conn)
        except DB_ERRORS as e:
            raise database_error(e, url) from e
        finally:
            await conn.close()
    except BaseException:
        if ground is not None:
            await ground.release(failed=True)
        else:
            dir_lock.release()
            if created is not None:
                shutil.rmtree(created, ignore_errors=True)
        raise
    return ground


def attach(data_dir: Path, dsn: str) -> Prepared:
    """A worker's share of the ground its supervisor prepared: the keys (in the data
    directory the supervisor holds) and the database's URL; nothing to let go."""
    check_key_files(data_dir)
    return Prepared(data_dir, ServerKeys.load(data_dir), DatabaseUrl(dsn, "the supervisor's database"))


@dataclass
class Running:
    """A served app: its base URL, the operator token if it was just created, and
    what to stop."""

    url: str
    runner: web.AppRunner
    app: web.Application
    ground: Prepared
    owns_ground: bool = True  # False for a worker: its supervisor lets the ground go
    inside: Inside | None = None  # a worker's internal socket and hand-over receiver
    metrics_runner: web.AppRunner | None = None  # /metrics on an address of its own

    @property
    def new_operator_token(self) -> str | None:
        return self.ground.new_operator_token

    @property
    def embedded(self) -> EmbeddedPostgres | None:
        return self.ground.embedded

    async def stop(self) -> None:
        """Stop taking connections, stop every clock, tell clients, close sockets,
        then let the ground go (the database's lock, the embedded PostgreSQL, the data
        directory)."""
        try:
            if self.inside is not None:
                self.inside.receiver.close()  # no connection is handed to a worker going down
            if self.metrics_runner is not None:
                await self.metrics_runner.cleanup()
            await self.runner.cleanup()
        finally:
            try:
                if self.inside is not None:
                    await self.inside.close()
            finally:
                if self.owns_ground:
                    await self.ground.release()


@dataclass
class Inside:
    """What a worker of ``serve --workers`` serves besides the public port: its
    internal socket (service.internal) and its hand-over receiver (service.handover)."""

    runner: web.AppRunner
    receiver: Receiver
    siblings: Siblings

    async def close(self) -> None:
        self.receiver.close()
        await self.runner.cleanup()
        await self.siblings.close()


async def start_app(
    ground: Prepared,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    sockets: list[socket.socket] | None = None,
    settings: Settings | None = None,
    node: NodeSettings | None = None,
    worker: WorkerPlan | None = None,
    owns_ground: bool = True,
    metrics_sockets: list[socket.socket] | None = None,
    http_limits: HttpLimits | None = None,
) -> Running:
    """Serve the application on ``ground``: on ``sockets`` (a worker's, inherited
    from its supervisor), else on new ones at ``host:port``.  A worker also serves its
    internal socket and takes connections its siblings hand over.  On failure what
    this call started is stopped; the ground is the caller's to release.

    The public port and the metrics address keep ``http_limits`` (a whole request
    head within its seconds, idle connections closed: service.httpguard); so do the
    connections a sibling hands over, which this runner's server takes.  The internal
    socket (0600, siblings only) does not."""
    node = node or NodeSettings()
    if not node.public_url and port:
        node = dataclasses.replace(node, public_url=f"http://{host}:{port}")
    app = make_app(
        Config(
            dsn=ground.url.dsn,
            keys=ground.keys,
            settings=settings or Settings(),
            node=node,
            server_lock=ground.db_lock,
            metrics_elsewhere=metrics_sockets is not None,
        )
    )
    if worker is not None:
        app[SIBLINGS] = Siblings(worker)
    runner = GuardedRunner(app, limits=http_limits, handle_signals=False, access_log=None, shutdown_timeout=1.0)
    inside: Inside | None = None
    metrics_runner: web.AppRunner | None = None
    own_sockets = sockets is None
    try:
        if sockets is None:
            sockets = listen(host, port)
        try:
            await runner.setup()
        except DB_ERRORS as e:
            raise database_error(e, ground.url) from e
        for s in sockets:
            await web.SockSite(runner, s).start()
        if worker is not None:
            inside = await _start_inside(app, runner, worker)
        if metrics_sockets is not None:
            metrics_runner = GuardedRunner(
                make_metrics_app(app), limits=http_limits, handle_signals=False, access_log=None
            )
            await metrics_runner.setup()
            for s in metrics_sockets:
                await web.SockSite(metrics_runner, s).start()
    except BaseException:
        if metrics_runner is not None:
            await metrics_runner.cleanup()
        if inside is not None:
            await inside.close()
        await runner.cleanup()
        if own_sockets and sockets is not None:
            for s in sockets:
                s.close()
        raise
    bound = sockets[0].getsockname()[1]
    return Running(f"http://{host}:{bound}", runner, app, ground, owns_ground, inside, metrics_runner)


async def _start_inside(app: web.Application, runner: web.AppRunner, plan: WorkerPlan) -> Inside:
    internal = web.AppRunner(make_internal_app(app), handle_signals=False, access_log=None, shutdown_timeout=1.0)
    await internal.setup()
    path = plan.sock(plan.index)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # left by this worker's previous life
    await web.UnixSite(internal, str(path)).start()
    os.chmod(path, 0o600)
    assert runner.server is not None
    receiver = Receiver(plan.handoff(plan.index), runner.server)
    receiver.start()
    return Inside(internal, receiver, app[SIBLINGS])


async def start_server(
    *,
    host: str,
    port: int,
    data_dir: Path,
    database_url: str | None,
    operator_token: str | None,
    settings: Settings | None = None,
    database_source: str = "DATABASE_URL",
    node: NodeSettings | None = None,
    metrics_listen: tuple[str, int] | None = None,
    http_limits: HttpLimits | None = None,
) -> Running:
    """:func:`prepare` and :func:`start_app` in one call: a whole server in this
    process (and ``/metrics`` alone on ``metrics_listen``, when given)."""
    ground = await prepare(
        data_dir=data_dir,
        database_url=database_url,
        operator_token=operator_token,
        database_source=database_source,
        node=node.node_id if node is not None and node.cluster else None,
        lease_seconds=node.lease_seconds if node is not None else 5.0,
    )
    metrics_sockets: list[socket.socket] | None = None
    try:
        metrics_sockets = listen(*metrics_listen) if metrics_listen is not None else None
        return await start_app(
            ground,
            host=host,
            port=port,
            settings=settings,
            node=node,
            metrics_sockets=metrics_sockets,
            http_limits=http_limits,
        )
    except BaseException:
        for s in metrics_sockets or []:
            s.close()
        await ground.release(failed=True)
        raise
