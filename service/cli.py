"""``rummy-table``: serve tables, seat bots, play a demo, operate the card room.

rummy-table serve [--host 127.0.0.1] [--port 8080] [--data-dir DIR] [--database-url URL] [--log-format text|json]
rummy-table bots --server URL --table ID --count N [--fast] [--hands N] [--deposit HT] [--operator-token T]
rummy-table demo [--seats 6] [--hands 3]
rummy-table admin [--server URL] [--token T] [--json] COMMAND …   (service/admin.py)
rummy-table --version

Everyday mistakes end in one line on stderr — what went wrong and what to do — and
the exit code of :data:`EXIT_CODES`; ``--debug`` adds the traceback.  Arguments, the
data directory, the database URL and the port are checked before anything is
created, and a data directory this run created is removed again when start-up fails.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import errno
import importlib.metadata
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import parse_qs, quote, unquote, urlsplit

import aiohttp
import asyncpg
from aiohttp import web

from service import admin, connbudget, store, tokenreset
from service.app import CONFIG, NEW_OPERATOR_TOKEN, Config, make_app
from service.cluster import NodeSettings, forget_every_node
from service.db import (
    ACQUIRE_TIMEOUT,
    DataDirLock,
    EmbeddedPostgres,
    ServerLock,
    ServerLocked,
    database_url_from_env,
    migrate,
)
from service.httpguard import GuardedRunner, HttpLimits
from service.keys import SEED_KEY_FILE, SIGNING_KEY_FILE, KeyFileError, ServerKeys
from service.keys import _load_or_create as read_key_file  # reads, as the file exists
from service.leftovers import clear_old_workers
from service.logsafe import SafeFormatter
from service.store import OperatorTokenMismatch
from service.table import Settings
from service.workers import Supervisor, default_workers, free_port, watch_parent
from verifier.signing import fingerprint_text

log = logging.getLogger("rummy")
OPERATOR_ENV = "RUMMY_OPERATOR_TOKEN"
PROG = "rummy-table"

EXIT_OK = 0
EXIT_FAILED = 1  # a check failed (demo)
EXIT_USAGE = 2  # usage or bad input
EXIT_UNREACHABLE = 3  # cannot reach the server or the database
EXIT_REFUSED = 4  # refused by the server or the database
EXIT_LOCKED = 5  # already running: the port, the data directory or the database is taken
EXIT_CAPACITY = 6  # the database cannot hold the connections this server would open (service/connbudget.py)
EXIT_INTERNAL = 70  # a fault of ours
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM
EXIT_PIPE = 141  # stdout closed under us (| head)

EXIT_CODES = f"""\
exit codes:
  {EXIT_OK:<4} done (serve: stopped by SIGINT/SIGTERM)
  {EXIT_FAILED:<4} a check failed (demo: a transcript or the ledger)
  {EXIT_USAGE:<4} usage or bad input: an argument, --data-dir, DATABASE_URL, a key file
  {EXIT_UNREACHABLE:<4} cannot reach the server or the database
  {EXIT_REFUSED:<4} refused by the server or the database (token, login, not found, not allowed)
  {EXIT_LOCKED:<4} already running: the port, the data directory or the database is in use
  {EXIT_CAPACITY:<4} the database's max_connections cannot hold this server's workers and pools
  {EXIT_INTERNAL:<4} internal error: run again with --debug and report the traceback
  {EXIT_INTERRUPTED:<4} interrupted (Ctrl-C or SIGTERM); bots leave their seats first
Errors are one line on stderr; --debug adds the traceback."""

KEY_SIZE = 32  # both key files (service/keys.py)
REQUEST_SECONDS = 15.0  # every REST request of `bots` and `admin`
SEAT_SECONDS = 60.0  # bots that have not sat down by then are reported


class CliError(Exception):
    """An expected failure: one line for the person, and the exit code."""

    def __init__(self, code: int, message: str, server_code: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message = code, message
        self.server_code = server_code  # the server's error code, when the server refused


def version() -> str:
    try:
        return importlib.metadata.version("rummy-table")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


# ----------------------------------------------------------------------------- checks
def check_port(port: int) -> None:
    if not 0 <= port <= 65535:
        raise CliError(EXIT_USAGE, f"--port {port} is not a TCP port; give 1-65535 (0 picks a free one)")


def first_missing(path: Path) -> Path | None:
    """The outermost directory of ``path`` that does not exist yet (what creating it
    would create), or None when ``path`` exists."""
    missing = None
    p = path.absolute()
    while not p.exists():
        if p.is_symlink():
            raise CliError(EXIT_USAGE, f"cannot use the data directory {path}: {p} is a broken symbolic link")
        missing, p = p, p.parent
    return missing


def check_data_dir(path: Path) -> None:
    """The data directory is a directory we can write, or can be created."""
    missing = first_missing(path)
    if missing is None:
        if not path.is_dir():
            raise CliError(
                EXIT_USAGE, f"the data directory {path} is a file, not a directory; give --data-dir a directory"
            )
        where = path
    else:
        where = missing.parent
        if not where.is_dir():
            raise CliError(EXIT_USAGE, f"cannot create the data directory {path}: {where} is a file")
    if not os.access(where, os.W_OK | os.X_OK):
        raise CliError(EXIT_USAGE, f"cannot write in {where}; give --data-dir a directory you can write to")


@dataclass(frozen=True)
class DatabaseUrl:
    """What a PostgreSQL URL points at, for messages (never the password)."""

    dsn: str
    source: str  # "--database-url" or "DATABASE_URL"

    @property
    def parts(self) -> Any:
        return urlsplit(self.dsn)

    @property
    def password(self) -> str | None:
        pw = self.parts.password
        return unquote(pw) if pw else None

    @property
    def where(self) -> str:
        p = self.parts
        host = p.hostname or (parse_qs(p.query).get("host") or ["localhost"])[0]
        port = p.port or (parse_qs(p.query).get("port") or [5432])[0]
        user = f"{unquote(p.username)}@" if p.username else ""
        return f"{user}{host}:{port}{p.path or '/'}"

    def redact(self, text: str) -> str:
        pw = self.password
        for secret in {pw, self.parts.password} - {None, ""}:
            text = text.replace(str(secret), "***")
        return text

    def check(self) -> None:
        p = urlsplit(self.dsn)
        if p.scheme not in ("postgresql", "postgres"):
            raise CliError(
                EXIT_USAGE,
                f"{self.source} is not a PostgreSQL URL; give postgresql://USER:PASSWORD@HOST:PORT/DATABASE",
            )
        try:
            p.port  # noqa: B018 - parsing the port is the check
        except ValueError:
            raise CliError(
                EXIT_USAGE,
                f"{self.source} has a port that is not a number; give postgresql://USER:PASSWORD@HOST:PORT/DB",
            ) from None


def database_error(e: BaseException, url: DatabaseUrl) -> CliError:
    """One line for a failed connection to PostgreSQL."""
    at, src = url.where, url.source
    if isinstance(e, asyncpg.InvalidPasswordError):
        return CliError(EXIT_REFUSED, f"the database at {at} refused the password; fix the password in {src}")
    if isinstance(e, asyncpg.InvalidAuthorizationSpecificationError):
        return CliError(EXIT_REFUSED, f"the database at {at} refused the login ({e}); check the user in {src}")
    if isinstance(e, asyncpg.InvalidCatalogNameError):
        return CliError(EXIT_REFUSED, f"{e} at {at}; create it, or fix the database name in {src}")
    if isinstance(e, asyncpg.TooManyConnectionsError | asyncpg.CannotConnectNowError):
        return CliError(EXIT_UNREACHABLE, f"the database at {at} takes no connection now ({e}); try again shortly")
    if isinstance(e, asyncpg.PostgresError):
        return CliError(EXIT_REFUSED, f"the database at {at} refused: {url.redact(str(e))}")
    if isinstance(e, socket.gaierror):
        return CliError(EXIT_UNREACHABLE, f"cannot find the database host of {at} ({e.strerror}); check {src}")
    if isinstance(e, ConnectionRefusedError):
        return CliError(
            EXIT_UNREACHABLE,
            f"cannot reach the database at {at} (connection refused); is PostgreSQL running? check {src}",
        )
    if isinstance(e, TimeoutError):
        return CliError(
            EXIT_UNREACHABLE, f"the database at {at} did not answer within {ACQUIRE_TIMEOUT:g} s; check {src}"
        )
    if isinstance(e, OSError):
        return CliError(EXIT_UNREACHABLE, f"cannot reach the database at {at} ({e.strerror or e}); check {src}")
    return CliError(
        EXIT_USAGE,
        f"{src} is not a usable PostgreSQL URL ({url.redact(str(e))}); give postgresql://USER:PASSWORD@HOST:PORT/DB",
    )


async def check_connections(url: DatabaseUrl, workers: int, node: NodeSettings) -> None:
    """Refuse (:class:`connbudget.TooManyConnections`) a start whose connections the
    database cannot hold."""
    try:
        conn = await asyncpg.connect(url.dsn, timeout=ACQUIRE_TIMEOUT)
    except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
        raise database_error(e, url) from e
    try:
        await connbudget.check(conn, workers, node.node_id if node.cluster else None, node.lease_seconds)
    finally:
        await conn.close()


async def check_database(url: DatabaseUrl) -> None:
    """Connect once, before anything is created: a wrong URL, host, login or
    database is one line."""
    try:
        conn = await asyncpg.connect(url.dsn, timeout=ACQUIRE_TIMEOUT)
    except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError, ValueError) as e:
        raise database_error(e, url) from e
    await conn.close()


def listen_error(host: str, port: int, e: OSError) -> CliError:
    if e.errno == errno.EADDRINUSE:
        return CliError(EXIT_LOCKED, f"port {port} is in use on {host}; stop the other program or pick another --port")
    if e.errno == errno.EADDRNOTAVAIL:
        return CliError(EXIT_USAGE, f"--host {host} is not an address of this machine; give one of its addresses")
    if e.errno == errno.EACCES:
        return CliError(EXIT_USAGE, f"no permission to listen on port {port}; pick a --port above 1023")
    if isinstance(e, socket.gaierror):
        return CliError(EXIT_USAGE, f"--host {host} is not a known host name or address")
    return CliError(EXIT_USAGE, f"cannot listen on {host}:{port} ({e.strerror or e})")


def check_listen(host: str, port: int) -> None:
    """The host resolves to an address of this machine and the port is free there:
    bound and let go at once, as the server binds it (SO_REUSEADDR; an address family
    the machine lacks is skipped, as asyncio does)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise listen_error(host, port, e) from None
    unavailable: OSError | None = None
    bound = 0
    for family, kind, proto, _, addr in infos:
        with socket.socket(family, kind, proto) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                s.bind(addr)
                bound += 1
            except OSError as e:
                if e.errno != errno.EADDRNOTAVAIL:
                    raise listen_error(host, port, e) from None
                unavailable = e
    if not bound and unavailable is not None:
        raise listen_error(host, port, unavailable)


def check_key_files(data_dir: Path) -> None:
    """Read each key file that is there (KeyFileError if one cannot be used), so that
    a damaged one stops the start before the other is created."""
    for name in (SIGNING_KEY_FILE, SEED_KEY_FILE):
        path = data_dir / name
        if path.exists() or path.is_symlink():
            read_key_file(path, KEY_SIZE)


# ----------------------------------------------------------------------------- serve
@dataclass
class Running:
    """A served app: its base URL, the operator token if it was just created, and
    what to stop."""

    url: str
    runner: web.AppRunner
    embedded: EmbeddedPostgres | None
    new_operator_token: str | None
    app: web.Application
    dir_lock: DataDirLock | None = None

    async def stop(self) -> None:
        """Stop accepting, stop every clock, tell clients, close sockets, stop the
        database (issue 7: within 2 s whatever the number of clients)."""
        try:
            await self.runner.cleanup()
        finally:
            if self.embedded is not None:
                await asyncio.to_thread(self.embedded.stop)
            if self.dir_lock is not None:
                self.dir_lock.release()


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
    shared_port: int | None = None,
    page_urls: tuple[str, ...] = (),
    lock_data_dir: bool = True,
    http_limits: HttpLimits | None = None,
) -> Running:
    """Start the database (embedded unless a URL is given), the keys, the app.

    Expected failures raise :class:`CliError` (or :class:`ServerLocked`,
    :class:`KeyFileError`, :class:`OperatorTokenMismatch`) after undoing what this call started; a data directory
    this call created is removed again."""
    url = DatabaseUrl(database_url, database_source) if database_url is not None else None
    if url is not None:
        url.check()
        await check_database(url)
    created = first_missing(data_dir)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CliError(EXIT_USAGE, f"cannot create the data directory {data_dir} ({e.strerror or e})") from None
    embedded = None
    dir_lock = DataDirLock(data_dir)
    runner: web.AppRunner | None = None
    try:
        if lock_data_dir:
            dir_lock.acquire()  # a worker's supervisor holds it (service.workers)
        check_key_files(data_dir)  # a damaged key file stops us before anything is created
        keys = ServerKeys.load(data_dir)
        if url is None:
            embedded = EmbeddedPostgres(data_dir)
            starting = asyncio.ensure_future(asyncio.to_thread(embedded.start))
            try:
                dsn = await asyncio.shield(starting)
            except asyncio.CancelledError:  # Ctrl-C: let the start finish, so that stop() below stops it
                with contextlib.suppress(Exception):
                    await starting
                raise
            except (subprocess.SubprocessError, OSError, AssertionError) as e:
                raise CliError(
                    EXIT_UNREACHABLE,
                    f"the embedded PostgreSQL did not start ({type(e).__name__}); see {embedded.log_file}",
                ) from e
            url = DatabaseUrl(dsn, "the embedded PostgreSQL")
        node = node or NodeSettings()
        if lock_data_dir:  # a worker's supervisor counted the connections of all its workers
            await check_connections(url, 1, node)
        if not node.public_url and port:
            node = dataclasses.replace(node, public_url=f"http://{host}:{port}")
        app = make_app(
            Config(
                dsn=url.dsn,
                keys=keys,
                settings=settings or Settings(),
                operator_token=operator_token,
                node=node,
                page_urls=page_urls,
            )
        )
        runner = GuardedRunner(app, limits=http_limits, handle_signals=False, access_log=None, shutdown_timeout=1.0)
        try:
            await runner.setup()
        except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
            raise database_error(e, url) from e
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except OSError as e:
            raise listen_error(host, port, e) from e
        if shared_port is not None:  # a worker: the server's port too, shared with its siblings
            shared = web.TCPSite(runner, host, shared_port, reuse_port=True)
            try:
                await shared.start()
            except OSError as e:
                raise listen_error(host, shared_port, e) from e
    except BaseException:
        if runner is not None:
            await runner.cleanup()
        if embedded is not None:
            await asyncio.to_thread(embedded.stop)
        dir_lock.release()
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)  # nothing half-created
        raise
    bound = runner.addresses[0]
    served = f"http://{host}:{bound[1]}"
    token = app[NEW_OPERATOR_TOKEN][0] if app[NEW_OPERATOR_TOKEN] else None
    return Running(served, runner, embedded, token, app, dir_lock)


def lost_lock(holder: asyncio.Task[None], stop: asyncio.Event) -> None:
    if holder.cancelled() or holder.exception() is not None:  # only a lock another server took stops us
        return
    log.critical("another server took this database's lock while it was away: stopping")
    stop.set()


def serve_workers(args: argparse.Namespace, count: int, data_dir: Path, dsn: str | None, source: str) -> int:
    """The supervisor of ``count`` worker processes (service.workers)."""
    wildcard = args.host in ("", "::") or (args.host.count(".") == 3 and set(args.host) <= {"0", "."})
    public_host = urlsplit(args.public_url).hostname if args.public_url else (None if wildcard else args.host)
    if not public_host:
        raise CliError(EXIT_USAGE, "workers need a host their clients reach: give --public-url http://HOST")

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        url = DatabaseUrl(dsn, source) if dsn is not None else None
        if url is not None:
            await check_database(url)
        created = first_missing(data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        lock = DataDirLock(data_dir)
        embedded: EmbeddedPostgres | None = None
        sup: Supervisor | None = None
        db_lock: ServerLock | None = None
        port = args.port or free_port(args.host)
        try:
            lock.acquire()
            await asyncio.to_thread(clear_old_workers, lock.previous, data_dir)  # of a server killed before
            check_key_files(data_dir)
            keys = ServerKeys.load(data_dir)
            if url is None:
                embedded = EmbeddedPostgres(data_dir)
                url = DatabaseUrl(await asyncio.to_thread(embedded.start), "the embedded PostgreSQL")
            try:
                db_lock = await ServerLock.acquire(url.dsn)  # one server per database, for all its workers
                conn = await asyncpg.connect(url.dsn, timeout=ACQUIRE_TIMEOUT)
            except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
                raise database_error(e, url) from e
            try:  # the database, once, before the workers: room for them, migrations, the keys, the operator token
                await connbudget.check(conn, count)
                await migrate(conn)
                await store.check_keys(conn, keys)
                token = await store.operator_token(conn, os.environ.get(OPERATOR_ENV) or None)
                await forget_every_node(conn)  # our lock: the nodes in the database are dead workers
            finally:
                await conn.close()
            flags = [
                "--data-dir",
                str(data_dir),
                "--database-url",
                url.dsn,
                "--seed-seconds",
                str(args.seed_seconds),
                "--next-hand-delay",
                str(args.next_hand_delay),
                "--resume-grace",
                str(args.resume_grace),
                "--lease-seconds",
                str(args.lease_seconds),
                "--log-format",
                args.log_format,
                "--workers",
                "1",
            ]
            verbosity = ["-v"] if args.verbose else []
            env = dict(os.environ)
            if token:
                env[OPERATOR_ENV] = token
            sup = Supervisor(
                [sys.executable, "-m", "service.cli", *verbosity, "serve", *flags],
                args.host,
                port,
                public_host,
                count,
                env,
                page_url=(args.public_url or f"http://{public_host}:{port}").rstrip("/"),
            )
            sup.plan()
            for w in sup.workers:
                sup.start(w)
            await sup.wait_ready()
            print(
                f"rummy-table serving on http://{args.host}:{port}  ({count} workers; data: {data_dir.resolve()}, "
                f"database: {'embedded' if embedded else source})",
                flush=True,
            )
            print(f"server key fingerprint: {fingerprint_text(keys.signer.fingerprint)}", flush=True)
            if token:
                print(f"operator token (shown once, keep it): {token}", flush=True)
            watcher = asyncio.create_task(sup.watch(stop))
            holder = asyncio.create_task(db_lock.hold())  # the database's lock, again after a restart of it
            holder.add_done_callback(lambda t: lost_lock(t, stop))
            await stop.wait()
            holder.cancel()
            print("shutting down", flush=True)
            await watcher
        finally:
            if sup is not None:
                await sup.stop()
            if db_lock is not None:
                await db_lock.release()
            if embedded is not None:
                await asyncio.to_thread(embedded.stop)
            lock.release()
            if created is not None and sup is None:
                shutil.rmtree(created, ignore_errors=True)

    asyncio.run(main())
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    check_port(args.port)
    for flag, value, least in (
        ("--seed-seconds", args.seed_seconds, 0.1),
        ("--next-hand-delay", args.next_hand_delay, 0.0),
        ("--resume-grace", args.resume_grace, 0.0),
    ):
        if not least <= value <= 3600:
            raise CliError(EXIT_USAGE, f"{flag} {value:g} is out of range; give {least:g} to 3600 seconds")
    data_dir = Path(args.data_dir).expanduser()
    check_data_dir(data_dir)
    dsn = args.database_url or database_url_from_env()
    source = "--database-url" if args.database_url else "DATABASE_URL"
    if dsn is not None:
        DatabaseUrl(dsn, source).check()
    if args.worker_of is None:
        check_listen(args.host, args.port)
    # A node of a cluster is one worker (docs/deploy.md): --node-id alone means --workers 1.
    workers = (1 if args.node_id is not None else default_workers()) if args.workers is None else args.workers
    if not 1 <= workers <= 64:
        raise CliError(EXIT_USAGE, "--workers is 1 to 64")
    if args.worker_of is None and workers > 1:
        if args.node_id is not None:
            raise CliError(EXIT_USAGE, "a node of a cluster is one worker: give --node-id without --workers")
        return serve_workers(args, workers, data_dir, dsn, source)
    node = NodeSettings()
    if args.node_id is not None:
        if not re.fullmatch(r"[A-Za-z0-9_.:-]{1,64}", args.node_id):
            raise CliError(EXIT_USAGE, "--node-id is 1 to 64 letters, digits or _.:-")
        wildcard = args.host in ("", "::") or (args.host.count(".") == 3 and set(args.host) <= {"0", "."})
        public = args.public_url or ("" if wildcard else f"http://{args.host}:{args.port}")
        if not public.startswith(("http://", "https://")):
            raise CliError(EXIT_USAGE, "a node needs --public-url http(s)://HOST:PORT, where its clients reach it")
        if dsn is None:
            raise CliError(
                EXIT_USAGE, "the nodes of a cluster share one PostgreSQL: give --database-url or DATABASE_URL"
            )
        if not 1 <= args.lease_seconds <= 300:
            raise CliError(EXIT_USAGE, "--lease-seconds is 1 to 300")
        node = NodeSettings(
            node_id=args.node_id,
            public_url=public.rstrip("/"),
            cluster=True,
            lease_seconds=args.lease_seconds,
            heartbeat_seconds=max(0.2, args.lease_seconds / 5),
            worker=args.worker_of is not None,
        )

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)  # from the start: a signal during start-up stops cleanly
        if args.worker_of is not None:
            orphan = asyncio.create_task(watch_parent(args.worker_of))
        running = await start_server(
            host=args.host,
            port=args.port,
            data_dir=data_dir,
            database_url=dsn,
            database_source=source,
            operator_token=os.environ.get(OPERATOR_ENV) or None,
            settings=Settings(
                commit_seconds=args.seed_seconds,
                reveal_seconds=args.seed_seconds,
                next_hand_delay=args.next_hand_delay,
                resume_grace=args.resume_grace,
            ),
            node=node,
            shared_port=args.shared_port,
            page_urls=(args.page_url,) if args.page_url else (),
            lock_data_dir=args.worker_of is None,
        )
        try:
            if args.worker_of is not None:
                print(f"worker {node.node_id} serving on {running.url} and port {args.shared_port}", flush=True)
                await stop.wait()
                orphan.cancel()
                return
            signer = running.app[CONFIG].keys.signer
            print(
                f"rummy-table serving on {running.url}  (data: {data_dir.resolve()}, "
                f"database: {'embedded' if running.embedded else source})",
                flush=True,
            )
            print(f"server key fingerprint: {fingerprint_text(signer.fingerprint)}", flush=True)
            if running.new_operator_token:
                print(f"operator token (shown once, keep it): {running.new_operator_token}", flush=True)
            await stop.wait()
            print("shutting down", flush=True)
        finally:
            await running.stop()

    asyncio.run(main())
    return EXIT_OK


# ----------------------------------------------------------------------------- interruptible runs
class Interrupt:
    """Set by SIGINT/SIGTERM, which also cancel the run once (cleanup in ``finally``
    blocks runs to its end; a second signal is ignored)."""

    def __init__(self) -> None:
        self.signalled = False


def run_interruptible(main: Callable[[Interrupt], Awaitable[int]]) -> int:
    async def runner() -> int:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        state = Interrupt()

        def on_signal() -> None:
            if not state.signalled:
                state.signalled = True
                task.cancel()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal)
        try:
            return await main(state)
        except asyncio.CancelledError:
            if not state.signalled:
                raise
            task.uncancel()
            print(f"{PROG}: interrupted", file=sys.stderr, flush=True)
            return EXIT_INTERRUPTED
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)

    return asyncio.run(runner())


# ----------------------------------------------------------------------------- bots
def check_server_url(server: str, flag: str = "--server") -> str:
    """An http(s) URL with a host; returned without a trailing slash."""
    try:
        return admin.check_server_url(server, flag)
    except admin.AdminError as e:
        raise CliError(e.code, e.message) from None


async def rest(
    session: aiohttp.ClientSession, server: str, method: str, path: str, token: str | None = None, body: Any = None
) -> Any:
    """One request with the session's timeout; failures as :class:`CliError`."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        async with session.request(method, server + path, json=body, headers=headers) as r:
            text = await r.text()
            status = r.status
    except (aiohttp.ClientConnectorError, aiohttp.ServerDisconnectedError, ConnectionError) as e:
        raise CliError(
            EXIT_UNREACHABLE, f"cannot reach {server} ({_reason(e)}); is `rummy-table serve` running there? (--server)"
        ) from e
    except TimeoutError as e:
        raise CliError(EXIT_UNREACHABLE, f"{server} did not answer within {REQUEST_SECONDS:g} s") from e
    except aiohttp.ClientError as e:
        raise CliError(EXIT_UNREACHABLE, f"cannot talk to {server} ({_reason(e)})") from e
    try:
        data = json.loads(text)
    except ValueError:
        raise CliError(
            EXIT_UNREACHABLE, f"{server} answered {method} {path} with something that is not JSON: is it rummy-table?"
        ) from None
    if status >= 400:
        err = data.get("error") if isinstance(data, dict) else None
        code = str(err.get("code")) if isinstance(err, dict) else None
        what = f"{err.get('message')} ({code})" if isinstance(err, dict) else f"HTTP {status}"
        raise CliError(
            EXIT_UNREACHABLE if status >= 500 else EXIT_REFUSED, f"the server refused {method} {path}: {what}", code
        )
    return data


def _reason(e: BaseException) -> str:
    if isinstance(e, aiohttp.ClientConnectorError):
        err = e.os_error
        return os.strerror(err.errno) if err.errno else (err.strerror or str(err))
    return str(e) or type(e).__name__


async def preflight_bots(
    session: aiohttp.ClientSession, server: str, token: str, table_id: str, count: int, deposit: int
) -> dict[str, Any]:
    """Before any player is created: the server answers, the token is the operator's,
    the table exists, is open, has room for ``count`` bots, and ``deposit`` lets a bot
    sit.  Returns the table."""
    health = await rest(session, server, "GET", "/healthz")
    if not (isinstance(health, dict) and health.get("ok") is True):
        raise CliError(EXIT_UNREACHABLE, f"{server}/healthz does not answer like a rummy-table server: {health!r:.80}")
    try:
        await rest(session, server, "GET", "/api/ledger", token)
    except CliError as e:
        if e.code == EXIT_REFUSED:
            raise CliError(
                EXIT_REFUSED,
                f"the server at {server} refused the operator token; give the right --operator-token or {OPERATOR_ENV}",
            ) from None
        raise
    table: dict[str, Any] | None = None
    try:
        table = await rest(session, server, "GET", f"/api/tables/{quote(table_id, safe='')}")
    except CliError as e:
        if e.server_code not in ("no_such_table", "bad_request", "not_found"):
            raise
    if table is None:
        tables = (await rest(session, server, "GET", "/api/tables")).get("tables", [])
        table = next((t for t in tables if t.get("id") == table_id), None)  # a server without GET /api/tables/{id}
        if table is None:
            known = ", ".join(str(t.get("id")) for t in tables[:5]) or "none yet"
            raise CliError(
                EXIT_REFUSED,
                f"no table {table_id!r} on {server} (tables: {known}); `rummy-table admin tables` lists them",
            )
    status = table.get("status", "open")
    if status != "open":
        raise CliError(EXIT_REFUSED, f"table {table_id} is {status}: it takes no new players")
    seats, taken = int(table["seats"]), len(table.get("seated", []))
    if count > seats - taken:
        raise CliError(
            EXIT_USAGE,
            f"table {table_id} has {seats} seats, {taken} taken: room for {seats - taken} bots, not {count}; "
            "lower --count",
        )
    hold = int(table.get("hold", 0))
    if deposit < hold:
        raise CliError(
            EXIT_USAGE, f"a seat at table {table_id} needs {hold} HT available (D20); give --deposit {hold} or more"
        )
    return dict(table)


def hands_played(bot: Any, seat: int | None) -> int:
    """The ended hands the bot was dealt into (its seat scored)."""
    if seat is None:
        return 0
    hands = {
        r.get("hand_no")
        for r in bot.hands_seen
        if str(seat) in ((r.get("result") or {}).get("points") or {})
        or str(seat) in (((r.get("result") or {}).get("settlement") or {}).get("deltas") or {})
    }
    return len(hands)


SIT_REFUSALS = {
    "table_full",
    "table_closed",
    "seat_taken",
    "insufficient_balance",
    "no_player_key",
    "no_such_table",
    "bad_message",
}


async def drive_bots(bots: list[Any], table_id: str, server: str, out: Any = sys.stdout) -> None:
    """Run the bots until they are done; report each hand; refuse to wait silently
    for bots that cannot sit.  Whatever happens — done, an error, Ctrl-C — every bot is
    stopped (and leaves its seat) and each one's seat and hands are printed."""
    from service.bots import BotStop

    tasks = [asyncio.create_task(b.run(), name=f"bot-{n + 1}") for n, b in enumerate(bots)]
    seats: dict[int, int] = {}
    reported: set[int] = set()
    loop = asyncio.get_running_loop()
    start = loop.time()
    announced = False
    try:
        while True:
            for n, b in enumerate(bots):
                if b.seat is not None:
                    seats[n] = b.seat
                refused = [e for e in b.errors if e.get("error", {}).get("code") in SIT_REFUSALS]
                if refused and n not in seats:
                    err = refused[-1]["error"]
                    raise CliError(
                        EXIT_REFUSED, f"bot-{n + 1} could not sit at table {table_id}: {err['message']} ({err['code']})"
                    )
            if not announced and len(seats) == len(bots):
                announced = True
                print(f"bots seated at table {table_id}: seats {', '.join(map(str, sorted(seats.values())))}", file=out)
            for b in bots:
                for r in b.hands_seen:
                    if r.get("hand_no") not in reported:
                        reported.add(r.get("hand_no"))
                        res = r.get("result") or {}
                        what = (
                            f"void ({r.get('void_reason')})"
                            if r.get("void")
                            else f"winner seat {res.get('winner')} ({res.get('reason')})"
                        )
                        print(f"hand {r.get('hand_no')}: {what}", file=out, flush=True)
            for n, t in enumerate(tasks):
                if t.done() and not t.cancelled() and t.exception() is not None:
                    e = t.exception()
                    code = EXIT_REFUSED if isinstance(e, BotStop) else EXIT_UNREACHABLE
                    raise CliError(code, f"bot-{n + 1} stopped: {e}") from e
            if all(t.done() for t in tasks):
                return
            if len(seats) < len(bots) and loop.time() - start > SEAT_SECONDS:
                raise CliError(
                    EXIT_UNREACHABLE,
                    f"only {len(seats)} of {len(bots)} bots sat down at table {table_id} within {SEAT_SECONDS:g} s; "
                    f"is {server} answering? (-v shows the bots' errors)",
                )
            await asyncio.sleep(0.2)
    finally:
        for t in tasks:
            t.cancel()
        for t in tasks:  # Bot.run leaves its seat when cancelled
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        for n, b in enumerate(bots):
            seat = seats.get(n)
            where = f"seat {seat}" if seat is not None else "never sat"
            print(
                f"bot-{n + 1} ({b.player_id or 'not connected'}): {where}, {hands_played(b, seat)} hands played",
                file=out,
                flush=True,
            )


def write_evidence(bots: list[Any], folder: Path) -> None:
    """Each bot's evidence file, DIR/PLAYER_ID.json (docs/fairness.md §15)."""
    folder.mkdir(parents=True, exist_ok=True)
    for b in bots:
        if b.player_id:
            n = b.write_evidence(folder / f"{b.player_id}.json")
            print(f"{b.player_id}: {n} evidence items in {folder / (b.player_id + '.json')}", flush=True)


def cmd_bots(args: argparse.Namespace) -> int:
    from service.bots import create_bots

    server = check_server_url(args.server)
    token = args.operator_token or os.environ.get(OPERATOR_ENV)
    if not token:
        raise CliError(EXIT_USAGE, f"give --operator-token or set {OPERATOR_ENV}")
    if args.count < 1:
        raise CliError(EXIT_USAGE, f"--count {args.count}: give at least 1 bot")
    if args.hands is not None and args.hands < 1:
        raise CliError(EXIT_USAGE, f"--hands {args.hands}: give at least 1 hand, or leave it out to play on")
    if args.deposit < 1:
        raise CliError(EXIT_USAGE, f"--deposit {args.deposit}: give a positive amount of HT")

    async def main(_: Interrupt) -> int:
        timeout = aiohttp.ClientTimeout(total=REQUEST_SECONDS)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            await preflight_bots(session, server, token, args.table, args.count, args.deposit)
            try:
                bots = await create_bots(
                    session,
                    server,
                    token,
                    args.table,
                    args.count,
                    deposit=args.deposit,
                    fast=args.fast,
                    hands=args.hands,
                )
            except (aiohttp.ClientError, TimeoutError) as e:
                raise CliError(EXIT_UNREACHABLE, f"lost {server} while creating the bots ({_reason(e)})") from e
            except RuntimeError as e:
                raise CliError(EXIT_REFUSED, str(e)) from e
        until = f"for {args.hands} hands" if args.hands else "until Ctrl-C"
        print(f"{len(bots)} bots joining table {args.table} at {server}, playing {until}", flush=True)
        try:
            await drive_bots(bots, args.table, server)
        finally:
            if args.evidence:
                write_evidence(bots, Path(args.evidence))
        return EXIT_OK

    return run_interruptible(main)


# ----------------------------------------------------------------------------- demo
async def _api(session: aiohttp.ClientSession, method: str, url: str, token: str, body: Any = None) -> Any:
    async with session.request(method, url, json=body, headers={"Authorization": f"Bearer {token}"}) as r:
        data = await r.json()
        if r.status >= 400:
            raise RuntimeError(f"{method} {url}: {r.status} {data}")
        return data


async def play_all(bots: list[Any], timeout: float) -> None:
    """Run the bots until each has played its hands or ``timeout`` passes; then, or
    when cancelled (Ctrl-C), stop every one (each leaves its seat) and wait for it."""
    tasks = [asyncio.create_task(b.run(), name=f"bot-{n + 1}") for n, b in enumerate(bots)]
    try:
        await asyncio.wait(tasks, timeout=timeout)
    finally:
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t


async def run_demo(seats: int, hands: int, out: Any = sys.stdout) -> int:
    """An embedded stack in a temporary directory, a table full of bots, ``hands``
    hands played to the end, each transcript verified, the ledger checked."""
    from service.bots import create_bots
    from verifier.signing import load_public_key
    from verifier.transcript import verify_transcript

    if hands < 1:
        raise CliError(EXIT_USAGE, f"--hands {hands}: the demo plays at least 1 hand")
    failures = 0
    with tempfile.TemporaryDirectory(prefix="rummy-demo-") as tmp:
        token = "demo-operator-" + os.urandom(8).hex()
        running = await start_server(
            host="127.0.0.1",
            port=0,
            data_dir=Path(tmp),
            database_url=None,
            operator_token=token,
            settings=Settings(commit_seconds=5, reveal_seconds=5, next_hand_delay=0.2),
        )
        try:
            async with aiohttp.ClientSession() as session:
                base = running.url
                key = await _api(session, "GET", f"{base}/api/fairness/key", token)
                pinned = load_public_key(key["public_key_hex"])
                table = await _api(
                    session,
                    "POST",
                    f"{base}/api/tables",
                    token,
                    {"seats": seats, "point_value": 10, "commission_bps": 500, "turn_seconds": 30},
                )
                print(f"table {table['id']}: {seats} seats, 10 HT a point, 5% commission", file=out, flush=True)
                print(f"server key fingerprint: {fingerprint_text(key['fingerprint'])}", file=out, flush=True)
                bots = await create_bots(
                    session, base, token, table["id"], seats, deposit=10_000, fast=True, hands=hands
                )
                await play_all(bots, timeout=600)
                results = bots[0].hands_seen[:hands]
                for r in results:
                    transcript = await _api(session, "GET", f"{base}{r['transcript']}", token)
                    report = verify_transcript(transcript, pinned)
                    res = r["result"] or {}
                    pts = ", ".join(
                        f"seat {s}: {p} pts {res['settlement']['deltas'][s]:+d} HT"
                        for s, p in sorted(res.get("points", {}).items(), key=lambda x: int(x[0]))
                    )
                    verdict = "verified" if report.ok else f"VERIFY FAILED at {report.failure.check}"  # type: ignore
                    print(
                        f"hand {r['hand_no']}: winner seat {res.get('winner')} ({res.get('reason')}); {pts}; "
                        f"house +{res.get('settlement', {}).get('commission')} HT; transcript {verdict}",
                        file=out,
                        flush=True,
                    )
                    failures += not report.ok
                if len(results) < hands:
                    print(f"only {len(results)} of {hands} hands finished", file=out)
                    failures += 1
                summary = await _api(session, "GET", f"{base}/api/ledger", token)
                print(
                    f"ledger: deposited {summary['deposited']}, players {summary['players_available']} "
                    f"available + {summary['players_held']} held, house {summary['house_commission']}; "
                    f"balanced: {summary['ok']}",
                    file=out,
                    flush=True,
                )
                failures += not summary["ok"]
        finally:
            await running.stop()
    print("demo OK" if failures == 0 else f"demo FAILED ({failures} problems)", file=out, flush=True)
    return EXIT_OK if failures == 0 else EXIT_FAILED


def cmd_demo(args: argparse.Namespace) -> int:
    if args.hands < 1:
        raise CliError(EXIT_USAGE, f"--hands {args.hands}: the demo plays at least 1 hand")

    async def main(_: Interrupt) -> int:
        return await run_demo(args.seats, args.hands)

    return run_interruptible(main)


# ----------------------------------------------------------------------------- admin
def cmd_admin(args: argparse.Namespace) -> int:
    if args.admin_command == "reset-token":  # local, without the API (service.tokenreset)
        return tokenreset.run(args.data_dir, args.database_url, sys.stdout)
    return admin.run(args, sys.stdout)


# ----------------------------------------------------------------------------- logging
_RECORD_FIELDS = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, and whatever the record
    carries as ``extra=`` (``table_id``, ``hand_id``; the access log's ``method``,
    ``path``, ``status``, ``remote``)."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _RECORD_FIELDS and key not in out:
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, ensure_ascii=False)


def setup_logging(verbose: bool, log_format: str = "text") -> None:
    """WARNING and above from everyone on stderr; our own loggers (``rummy.*``) from
    INFO with ``-v``.  Embedded PostgreSQL logs to its data directory (service.db)."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(SafeFormatter())  # one line a record, whatever a client sent (service.logsafe)
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("rummy").setLevel(logging.INFO if verbose else logging.WARNING)


# ----------------------------------------------------------------------------- parser
class Parser(argparse.ArgumentParser):
    """Usage errors in one line (what is wrong, where to look), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message}; see {self.prog} --help\n")


def _common(parser: argparse.ArgumentParser, defaults: bool) -> None:
    """-v and --debug, before or after the command."""
    kw: dict[str, Any] = {} if defaults else {"default": argparse.SUPPRESS}
    parser.add_argument("-v", "--verbose", action="store_true", help="INFO logs of rummy-table on stderr", **kw)
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors", **kw)


def build_parser() -> argparse.ArgumentParser:
    ap = Parser(
        prog=PROG,
        description="Provably-fair 13-card rummy tables.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--version", action="version", version=f"{PROG} {version()}")
    _common(ap, defaults=True)
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    sp = sub.add_parser(
        "serve",
        help="serve tables (embedded PostgreSQL unless --database-url/DATABASE_URL)",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(sp, defaults=False)
    sp.add_argument("--host", default="127.0.0.1")
    sp.add_argument("--port", type=int, default=8080, help="1-65535, or 0 for any free port (default 8080)")
    sp.add_argument("--data-dir", default="./rummy-data", help="keys and the embedded database (default ./rummy-data)")
    sp.add_argument("--database-url", default=None, help="PostgreSQL URL (default: DATABASE_URL, else embedded)")
    sp.add_argument("--seed-seconds", type=float, default=10.0, help="how long seats have to commit, then reveal")
    sp.add_argument("--next-hand-delay", type=float, default=2.0, help="seconds between a hand's end and the next")
    sp.add_argument(
        "--resume-grace",
        type=float,
        default=10.0,
        help="seconds added to a resumed hand's clock after a restart or a database outage (D32)",
    )
    sp.add_argument(
        "--node-id",
        default=None,
        help="join a cluster of nodes on one PostgreSQL (DATABASE_URL) under this name (docs/deploy.md)",
    )
    sp.add_argument("--public-url", default=None, help="where clients reach this node (default http://HOST:PORT)")
    sp.add_argument(
        "--lease-seconds", type=float, default=5.0, help="how long a node's table leases last without renewal"
    )
    sp.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes, each owning a share of the tables (default: the number of cores; 1 with --node-id)",
    )
    sp.add_argument("--worker-of", type=int, default=None, help=argparse.SUPPRESS)
    sp.add_argument("--shared-port", type=int, default=None, help=argparse.SUPPRESS)
    sp.add_argument("--page-url", default=None, help=argparse.SUPPRESS)  # a worker: where people open the pages
    sp.add_argument(
        "--log-format", choices=("text", "json"), default="text", help="log lines on stderr: text, or one JSON a line"
    )
    sp.set_defaults(func=cmd_serve)
    bp = sub.add_parser(
        "bots",
        help="seat bots that play over the WebSocket",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(bp, defaults=False)
    bp.add_argument("--server", required=True, help="the server's URL, e.g. http://127.0.0.1:8080")
    bp.add_argument("--table", required=True)
    bp.add_argument("--count", type=int, required=True, help="how many bots (at most the table's free seats)")
    bp.add_argument("--fast", action="store_true", help="no think time")
    bp.add_argument("--deposit", type=int, default=100_000, help="HT minor units deposited for each bot")
    bp.add_argument("--hands", type=int, default=None, help="stop after this many hands")
    bp.add_argument(
        "--evidence",
        metavar="DIR",
        default=None,
        help="when the bots stop, write each one's evidence file (docs/fairness.md §15) to DIR/PLAYER_ID.json, "
        "for rummy-verify TRANSCRIPT --receipts FILE",
    )
    bp.add_argument("--operator-token", default=None, help=f"default: {OPERATOR_ENV}")
    bp.set_defaults(func=cmd_bots)
    dp = sub.add_parser(
        "demo",
        help="play a few hands with bots on a throw-away embedded stack",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(dp, defaults=False)
    dp.add_argument("--seats", type=int, default=6, choices=(4, 6, 8))
    dp.add_argument("--hands", type=int, default=3, help="at least 1")
    dp.set_defaults(func=cmd_demo)
    adm = sub.add_parser(
        "admin",
        help="operate the card room over the REST API with the operator token",
        description=admin.DESCRIPTION,
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(adm, defaults=False)
    admin.add_arguments(adm, common=lambda p: _common(p, defaults=False))
    adm.set_defaults(func=cmd_admin)
    return ap


# ----------------------------------------------------------------------------- main
def _fail(code: int, message: str, debug: bool) -> int:
    if debug:
        traceback.print_exc()
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)
    return code


# Options whose value is a secret token. A token may begin with "-" (RUMMY_OPERATOR_TOKEN
# is chosen by the operator, and tokens made before new tokens avoided it may), which
# argparse would read as the next option ("expected one argument"); such a value is glued
# to its option first, unless it is itself one of our options (then the token was
# forgotten, and argparse says so).  argparse has no public way to list a parser's
# options, hence ``_actions`` below.
SECRET_OPTIONS = ("--token", "--operator-token")


def option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of ``parser`` and of its sub-commands."""
    found: set[str] = set()
    for action in parser._actions:
        found.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= option_strings(sub)
    return found


def glue_secret_values(argv: Sequence[str], known: set[str]) -> list[str]:
    """``--token -abc`` -> ``--token=-abc`` for the options in SECRET_OPTIONS, when the
    value is not one of the ``known`` options."""
    out: list[str] = []
    items = list(argv)
    i = 0
    while i < len(items):
        item = items[i]
        if item in SECRET_OPTIONS and i + 1 < len(items):
            value = items[i + 1]
            if value.startswith("-") and value not in known:
                out.append(f"{item}={value}")
                i += 2
                continue
        out.append(item)
        i += 1
    return out


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = build_parser()
    given = sys.argv[1:] if argv is None else argv
    return parser.parse_args(glue_secret_values(given, option_strings(parser)))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    debug = bool(args.debug)
    setup_logging(bool(args.verbose), getattr(args, "log_format", "text"))
    try:
        code: int = args.func(args)
        return code
    except (CliError, admin.AdminError) as e:
        return _fail(e.code, e.message, debug)
    except ServerLocked as e:
        return _fail(EXIT_LOCKED, str(e), debug)
    except connbudget.TooManyConnections as e:
        return _fail(EXIT_CAPACITY, str(e), debug)
    except OperatorTokenMismatch as e:
        return _fail(EXIT_REFUSED, str(e), debug)
    except KeyFileError as e:
        return _fail(EXIT_USAGE, str(e), debug)
    except KeyboardInterrupt:
        return _fail(EXIT_INTERRUPTED, "interrupted", debug)
    except BrokenPipeError:
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PIPE
    except Exception as e:
        return _fail(
            EXIT_INTERNAL,
            f"internal error ({type(e).__name__}: {str(e)[:200]}); run again with --debug and report the traceback",
            debug,
        )


if __name__ == "__main__":
    sys.exit(main())
