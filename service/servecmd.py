"""``rummy-table serve``: the arguments checked, then a server in this process
(:mod:`service.startup`) or a supervisor of worker processes (:mod:`service.workers`).

The server's modules are imported only once the arguments have passed their checks:
a mistake is told without loading the server (a tenth of a second, not half a
second of CPU).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
from pathlib import Path
from typing import TYPE_CHECKING

from service.envnames import OPERATOR_TOKEN_ENV, database_url_from_env
from service.errors import EXIT_LOCKED, EXIT_OK, EXIT_USAGE, CliError
from service.startchecks import DatabaseUrl, check_data_dir, check_listen, check_port
from verifier.schema import WINDOW_MS_MIN

if TYPE_CHECKING:
    from service.cluster import NodeSettings


def cmd_serve(args: argparse.Namespace) -> int:
    check_port(args.port)
    for flag, value, least in (
        ("--seed-seconds", args.seed_seconds, WINDOW_MS_MIN / 1000),
        ("--next-hand-delay", args.next_hand_delay, 0.0),
        ("--resume-grace", args.resume_grace, 0.0),
        ("--away-seconds", args.away_seconds, 1.0),
    ):
        if not least <= value <= 3600:
            raise CliError(EXIT_USAGE, f"{flag} {value:g} is out of range; give {least:g} to 3600 seconds")
    data_dir = Path(args.data_dir).expanduser()
    check_data_dir(data_dir)
    dsn = args.database_url or database_url_from_env()
    source = "--database-url" if args.database_url else "DATABASE_URL"
    if dsn is not None:
        DatabaseUrl(dsn, source).check()
    check_listen(args.host, args.port)
    args.metrics_listen = metrics_address(args.metrics_listen, args.host, args.port)
    # A node of a cluster is one worker (docs/deploy.md): --node-id alone means --workers 1.
    workers = (1 if args.node_id is not None else default_workers()) if args.workers is None else args.workers
    if not 1 <= workers <= 64:
        raise CliError(EXIT_USAGE, "--workers is 1 to 64")
    if args.node_id is not None and workers > 1:
        raise CliError(EXIT_USAGE, "a node of a cluster is one worker: give --node-id without --workers")
    if args.lease_seconds is not None and args.node_id is None and workers == 1:
        # said, not ignored: a server of one process alone holds no lease
        raise CliError(
            EXIT_USAGE, "--lease-seconds is for a node of a cluster (--node-id) or a server of several workers"
        )
    node = node_settings(args, dsn)
    if workers > 1:
        from service.workers import serve_workers

        return serve_workers(args, workers, data_dir, dsn, source, node)

    from service import gctune
    from service.app import CONFIG
    from service.appkeys import LOCK_LOST
    from service.startup import announce, start_server
    from service.table import Settings

    async def main() -> bool:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)  # from the start: a signal during start-up stops cleanly
        running = await start_server(
            host=args.host,
            port=args.port,
            data_dir=data_dir,
            database_url=dsn,
            database_source=source,
            operator_token=os.environ.get(OPERATOR_TOKEN_ENV) or None,
            settings=Settings(
                commit_seconds=args.seed_seconds,
                reveal_seconds=args.seed_seconds,
                next_hand_delay=args.next_hand_delay,
                resume_grace=args.resume_grace,
                away_seconds=args.away_seconds,
            ),
            node=node,
            metrics_listen=args.metrics_listen,
        )
        gctune.tune()  # start-up is done: freeze what it made, collect less often
        try:
            announce(
                running.url,
                data_dir=data_dir,
                embedded=running.embedded is not None,
                source=source,
                fingerprint=running.app[CONFIG].keys.signer.fingerprint,
                operator_token=running.new_operator_token,
            )
            lost = running.app[LOCK_LOST]
            waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(lost.wait())]
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for w in waits:
                w.cancel()
            if lost.is_set():  # another server serves this database: down, clients told, not restarted
                print("another server took this database's lock: shutting down", flush=True)
            else:
                print("shutting down", flush=True)
        finally:
            await running.stop()
        return lost.is_set()

    return EXIT_LOCKED if asyncio.run(main()) else EXIT_OK


def default_workers() -> int:
    """One worker per core this process may run on."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def node_settings(args: argparse.Namespace, dsn: str | None) -> NodeSettings:
    """A server alone (its public URL, when given), or a node of a cluster
    (docs/deploy.md): its id, the URL its clients reach it at, its leases."""
    public = (args.public_url or "").rstrip("/")
    if public and not public.startswith(("http://", "https://")):
        raise CliError(EXIT_USAGE, "--public-url is http(s)://HOST[:PORT], where clients reach this server")
    from service.cluster import NodeSettings

    lease = 5.0 if args.lease_seconds is None else args.lease_seconds
    if not 1 <= lease <= 300:
        raise CliError(EXIT_USAGE, "--lease-seconds is 1 to 300")
    beat = max(0.2, lease / 5)
    if args.node_id is None:  # a server alone; its workers, when it has several, hold leases of this length
        return NodeSettings(public_url=public, lease_seconds=lease, heartbeat_seconds=beat)
    if not re.fullmatch(r"[A-Za-z0-9_.:-]{1,64}", args.node_id):
        raise CliError(EXIT_USAGE, "--node-id is 1 to 64 letters, digits or _.:-")
    wildcard = args.host in ("", "::") or (args.host.count(".") == 3 and set(args.host) <= {"0", "."})
    public = public or ("" if wildcard else f"http://{args.host}:{args.port}")
    if not public:
        raise CliError(EXIT_USAGE, "a node needs --public-url http(s)://HOST:PORT, where its clients reach it")
    if dsn is None:
        raise CliError(EXIT_USAGE, "the nodes of a cluster share one PostgreSQL: give --database-url or DATABASE_URL")
    return NodeSettings(
        node_id=args.node_id,
        public_url=public,
        cluster=True,
        shared=True,
        lease_seconds=lease,
        heartbeat_seconds=beat,
    )


def metrics_address(text: str | None, host: str, port: int) -> tuple[str, int] | None:
    """``--metrics-listen HOST:PORT`` ([IPv6]:PORT too), checked like ``--port``."""
    if text is None:
        return None
    m = re.fullmatch(r"\[?([^\[\]]*?)\]?:([0-9]{1,5})", text.strip())
    if m is None or not 1 <= int(m.group(2)) <= 65535:
        raise CliError(EXIT_USAGE, f"--metrics-listen {text!r}: give HOST:PORT, e.g. 127.0.0.1:9108")
    where = (m.group(1), int(m.group(2)))
    if where == (host, port):
        raise CliError(EXIT_USAGE, "--metrics-listen must be another address than the server's --host and --port")
    check_listen(*where)
    return where
