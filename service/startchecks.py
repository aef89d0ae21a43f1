"""What ``rummy-table serve`` checks before it creates anything: the port, the data
directory, the database URL (and that it answers), the key files.  Each failure is a
:class:`service.errors.CliError`: one line, what to do, and the exit code.
"""

from __future__ import annotations

import errno
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from service.errors import EXIT_LOCKED, EXIT_REFUSED, EXIT_UNREACHABLE, EXIT_USAGE, CliError

# asyncpg, service.db and service.keys are imported where they are used: ``rummy-table
# serve`` checks its arguments (the port, the data directory, the URL's form, the
# address) before it loads the server, so a mistake is told at once.

KEY_SIZE = 32  # both key files (service/keys.py)


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
    import asyncpg

    from service.db import ACQUIRE_TIMEOUT

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


async def check_database(url: DatabaseUrl) -> None:
    """Connect once, before anything is created: a wrong URL, host, login or
    database is one line."""
    import asyncpg

    from service.db import ACQUIRE_TIMEOUT

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


def listen(host: str, port: int, backlog: int = 1024) -> list[socket.socket]:
    """The server's listening sockets on ``host:port``, one per address family of
    the host (``port`` 0: one free port, the same for each); bound and listening,
    for this process or, inherited, for the workers of ``serve --workers``, which
    all accept from them."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise listen_error(host, port, e) from None
    out: list[socket.socket] = []
    unavailable: OSError | None = None
    try:
        for family, kind, proto, _, addr in infos:
            s = socket.socket(family, kind, proto)
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                if port == 0 and out:  # the port the first address got
                    addr = (addr[0], out[0].getsockname()[1], *addr[2:])
                s.bind(addr)
                s.listen(backlog)
                s.setblocking(False)
            except OSError as e:
                s.close()
                if e.errno != errno.EADDRNOTAVAIL:
                    raise listen_error(host, port, e) from None
                unavailable = e
                continue
            out.append(s)
        if not out:
            raise listen_error(host, port, unavailable or OSError(errno.EADDRNOTAVAIL, "no address to listen on"))
    except BaseException:
        for s in out:
            s.close()
        raise
    return out


def check_key_files(data_dir: Path) -> None:
    """Read each key file that is there (KeyFileError if one cannot be used), so that
    a damaged one stops the start before the other is created."""
    from service.keys import SEED_KEY_FILE, SIGNING_KEY_FILE
    from service.keys import _load_or_create as read_key_file  # reads, as the file exists

    for name in (SIGNING_KEY_FILE, SEED_KEY_FILE):
        path = data_dir / name
        if path.exists() or path.is_symlink():
            read_key_file(path, KEY_SIZE)
