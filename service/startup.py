"""Starting a server in this process: the database (embedded unless a URL is given),
the keys, the application and its listening sockets.  The command line, the workers
of ``serve --workers`` and the tests all start a server through here.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import asyncpg
from aiohttp import web

from service.app import NEW_OPERATOR_TOKEN, Config, make_app
from service.cluster import NodeSettings
from service.db import DataDirLock, EmbeddedPostgres
from service.errors import EXIT_UNREACHABLE, EXIT_USAGE, CliError
from service.keys import ServerKeys
from service.startchecks import (
    DatabaseUrl,
    check_database,
    check_key_files,
    database_error,
    first_missing,
    listen_error,
)
from service.table import Settings


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
        runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
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
