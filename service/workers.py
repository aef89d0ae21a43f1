"""``rummy-table serve --workers N``: one process per core.

The first process — the supervisor — holds the data directory, starts the embedded
PostgreSQL when there is no ``DATABASE_URL``, prepares the database once (migrations,
the card room's keys, the operator token) and then starts N worker processes.  Each
worker is a node of a cluster on that database (docs/deploy.md): it owns a share of
the tables through their leases, with the same fencing and hand-over as nodes on
several machines.  Every worker listens on the server's port (``SO_REUSEPORT``: the
kernel spreads new connections) and on a port of its own, its public URL; a client
that reaches a worker which does not serve its table is sent to the one that does
(``wrong_node``, or a 307).  A worker that dies is started again, and its tables are
taken over by the others meanwhile.  SIGTERM reaches every worker; the supervisor
waits for them, then stops PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp

from service.errors import EXIT_OK, EXIT_USAGE, CliError
from service.startup import prepare
from verifier.signing import fingerprint_text

log = logging.getLogger("rummy.workers")
OPERATOR_ENV = "RUMMY_OPERATOR_TOKEN"
RESTART_BACKOFF = (0.5, 1.0, 2.0, 5.0)


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


@dataclass
class Worker:
    index: int
    port: int
    node_id: str
    public_url: str
    proc: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    started_at: float = 0.0


@dataclass
class Supervisor:
    """Starts, watches and stops the worker processes."""

    command: Sequence[str]  # ``python -m service.cli [-v] serve`` and the shared flags
    host: str
    port: int
    public_host: str
    count: int
    env: dict[str, str]
    page_url: str = ""  # where people open the pages (the server's port, or --public-url): origins the workers allow
    node_base: str = field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}")
    workers: list[Worker] = field(default_factory=list)

    def plan(self) -> None:
        for i in range(self.count):
            port = free_port(self.host)
            self.workers.append(Worker(i, port, f"{self.node_base}-w{i + 1}", f"http://{self.public_host}:{port}"))

    def start(self, w: Worker) -> None:
        w.proc = subprocess.Popen(  # noqa: S603 - our own CLI, with arguments we built
            [
                *self.command,
                "--worker-of",
                str(os.getpid()),
                "--host",
                self.host,
                "--port",
                str(w.port),
                "--shared-port",
                str(self.port),
                "--node-id",
                w.node_id,
                "--public-url",
                w.public_url,
                *(["--page-url", self.page_url] if self.page_url else []),
            ],
            env=self.env,
        )
        w.started_at = time.monotonic()

    async def wait_ready(self, timeout: float = 60) -> None:
        end = time.monotonic() + timeout
        async with aiohttp.ClientSession() as s:
            for w in self.workers:
                while True:
                    assert w.proc is not None
                    if w.proc.poll() is not None:
                        raise RuntimeError(f"worker {w.index + 1} exited with {w.proc.returncode} while starting")
                    with contextlib.suppress(aiohttp.ClientError, OSError, asyncio.TimeoutError):
                        async with s.get(w.public_url + "/healthz", timeout=aiohttp.ClientTimeout(total=2)) as r:
                            if r.status == 200:
                                break
                    if time.monotonic() > end:
                        raise RuntimeError(f"worker {w.index + 1} did not start within {timeout:g} s")
                    await asyncio.sleep(0.1)

    async def watch(self, stop: asyncio.Event) -> None:
        """Start again a worker that died (its tables move to the others meanwhile)."""
        while not stop.is_set():
            for w in self.workers:
                if w.proc is not None and w.proc.poll() is not None and not stop.is_set():
                    delay = RESTART_BACKOFF[min(w.restarts, len(RESTART_BACKOFF) - 1)]
                    if time.monotonic() - w.started_at > 60:
                        w.restarts = 0  # it ran a good while: start again at once next time
                    log.warning("worker %d exited with %s; starting it again", w.index + 1, w.proc.returncode)
                    print(
                        f"worker {w.index + 1} exited ({w.proc.returncode}); starting it again in {delay:g} s",
                        file=sys.stderr,
                        flush=True,
                    )
                    await asyncio.sleep(delay)
                    w.restarts += 1
                    if not stop.is_set():
                        self.start(w)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)

    async def stop(self, grace: float = 2.5) -> None:
        """SIGTERM to every worker at once; those still running after ``grace`` are killed."""
        for w in self.workers:
            if w.proc is not None and w.proc.poll() is None:
                w.proc.send_signal(signal.SIGTERM)
        end = time.monotonic() + grace
        for w in self.workers:
            if w.proc is None:
                continue
            while w.proc.poll() is None and time.monotonic() < end:
                await asyncio.sleep(0.02)
            if w.proc.poll() is None:
                w.proc.kill()
                w.proc.wait(5)


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host if host not in ("", "0.0.0.0", "::") else "", 0))  # noqa: S104 - a probe, closed at once
        return int(s.getsockname()[1])


async def watch_parent(parent: int) -> None:
    """A worker whose supervisor is gone stops by itself (SIGTERM to itself)."""
    while True:
        await asyncio.sleep(1.0)
        if os.getppid() != parent:
            log.error("the supervisor (pid %d) is gone: stopping", parent)
            os.kill(os.getpid(), signal.SIGTERM)
            return


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
        sup: Supervisor | None = None
        port = args.port or free_port(args.host)
        ground = await prepare(
            data_dir=data_dir,
            database_url=dsn,
            operator_token=os.environ.get(OPERATOR_ENV) or None,
            database_source=source,
        )  # one server per database, for all its workers: the supervisor holds the lock
        url, keys, token = ground.url, ground.keys, ground.new_operator_token
        try:
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
                f"database: {'embedded' if ground.embedded else source})",
                flush=True,
            )
            print(f"server key fingerprint: {fingerprint_text(keys.signer.fingerprint)}", flush=True)
            if token:
                print(f"operator token (shown once, keep it): {token}", flush=True)
            watcher = asyncio.create_task(sup.watch(stop))
            await stop.wait()
            print("shutting down", flush=True)
            await watcher
        finally:
            if sup is not None:
                await sup.stop()
            await ground.release(failed=sup is None)

    asyncio.run(main())
    return EXIT_OK
