"""``rummy-table serve --workers N``: one process per core, one public port.

The first process — the supervisor — prepares the server's ground once
(:func:`service.startup.prepare`: the data directory, the embedded PostgreSQL when
there is no ``DATABASE_URL``, the database's lock, the migrations, the keys, the
operator token), binds the server's port, and starts N worker processes
(:mod:`service.worker`) that inherit the listening sockets and all accept from them.
Each worker holds a share of the tables through their leases as ``NODE/wN``, with
the same fencing and hand-over as the nodes of a cluster.  A connection that reaches
a worker which does not serve its table reaches the one that does inside the host:
a WebSocket is handed over (:mod:`service.handover`), a REST command forwarded
(:mod:`service.internal`); no worker has a port of its own, and nothing is ever
redirected to one.  The workers' Unix sockets and the metrics they share live in the
server's run directory (:mod:`service.rundir`: in ``/dev/shm``, else ``DATA_DIR/run``;
mode 0700), made afresh at every start.  A
worker that dies is started again, and its tables are taken over by the others
meanwhile.  SIGTERM reaches every worker; the supervisor waits for them, then lets
the ground go.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from service import rundir
from service.cluster import NodeSettings
from service.envnames import OPERATOR_TOKEN_ENV
from service.errors import EXIT_INTERNAL, EXIT_LOCKED, EXIT_OK, CliError
from service.lifecycle import CLOSING_SECONDS
from service.metrics import MULTIPROC_ENV
from service.rundir import run_dir
from service.startchecks import listen
from service.startup import announce, prepare
from service.table import Settings
from service.worker import PLAN_ENV, WorkerPlan

log = logging.getLogger("rummy.workers")
RESTART_BACKOFF = (0.5, 1.0, 2.0, 5.0)
# Seconds the workers have to stop before they are killed: their way out on a hung
# database (service.lifecycle.on_shutdown) gives the leases' hand-over CLOSING_SECONDS,
# then as long again once its connections are cut, and the other nodes' names 1 s, and
# only then tells its clients; 2.5 s killed a worker on a busy machine before it told
# them (a busy run, 2026-12-06).  A second to spare: 6 s.
STOP_GRACE = 2 * CLOSING_SECONDS + 1.0 + 1.0
SIGNAL_SETTLE_SECONDS = 0.2  # a worker gone while starting: time for the same signal's handler here to run


@dataclass
class Worker:
    plan: WorkerPlan
    proc: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    started_at: float = 0.0


def lost_lock(holder: asyncio.Task[None], stop: asyncio.Event, lost: asyncio.Event) -> None:
    """The supervisor's lock keeper ended: only a lock another server took stops us
    (``lost``: the server exits EXIT_LOCKED, which its service manager does not restart)."""
    if holder.cancelled() or holder.exception() is not None:
        return
    log.critical("another server took this database's lock while it was away: stopping")
    lost.set()
    stop.set()


@dataclass
class Supervisor:
    """Starts, watches and stops the worker processes."""

    plans: list[WorkerPlan]
    env: dict[str, str]
    workers: list[Worker] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.workers = [Worker(p) for p in self.plans]

    def start(self, w: Worker) -> None:
        w.proc = subprocess.Popen(
            [sys.executable, "-m", "service.worker"],
            env={**self.env, PLAN_ENV: w.plan.to_env()},
            pass_fds=(*w.plan.fds, *w.plan.metrics_fds),
        )
        w.started_at = time.monotonic()

    async def wait_ready(self, stop: asyncio.Event, timeout: float = 60) -> bool:
        """Until every worker answers on its internal socket: True; False as soon as a
        signal has asked the server to stop.  A terminal's Ctrl-C and systemd's stop
        reach every process of the server, the workers too: a worker that exits then
        has done as it was told, and is no failure to report."""
        end = time.monotonic() + timeout
        for w in self.workers:
            path = str(w.plan.sock(w.plan.index))
            async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=path)) as s:
                while True:
                    assert w.proc is not None
                    if stop.is_set():
                        return False
                    if w.proc.poll() is not None:
                        # The signal that ended it reached this process at the same
                        # moment; its handler runs once the loop turns.
                        await asyncio.sleep(SIGNAL_SETTLE_SECONDS)
                        if stop.is_set():
                            return False
                        raise CliError(
                            EXIT_INTERNAL,
                            f"worker {w.plan.index} exited with {w.proc.returncode} while starting (its message above)",
                        )
                    with contextlib.suppress(aiohttp.ClientError, OSError, asyncio.TimeoutError):
                        async with s.get("http://w/internal/health", timeout=aiohttp.ClientTimeout(total=2)) as r:
                            if r.status == 200:
                                break
                    if stop.is_set():  # asked to stop while it asked (a signal is no late start)
                        return False
                    if time.monotonic() > end:
                        raise CliError(EXIT_INTERNAL, f"worker {w.plan.index} did not start within {timeout:g} s")
                    await asyncio.sleep(0.05)
        return True

    async def watch(self, stop: asyncio.Event, run: Path | None = None, data_dir: Path | None = None) -> None:
        """Start again a worker that died (its tables move to the others meanwhile).
        When the run directory ``run`` was removed under the server, make it again and
        start every worker again (their sockets and stamps were in it)."""
        while not stop.is_set():
            if run is not None and data_dir is not None and self._run_dir_again(run, data_dir):
                for w in self.workers:
                    if w.proc is not None and w.proc.poll() is None:
                        w.proc.send_signal(signal.SIGTERM)  # it hands its tables over and goes
                        w.restarts = 0
            for w in self.workers:
                if w.proc is not None and w.proc.poll() is not None and not stop.is_set():
                    if time.monotonic() - w.started_at > 60:
                        w.restarts = 0  # it ran a good while: its backoff starts over
                    delay = RESTART_BACKOFF[min(w.restarts, len(RESTART_BACKOFF) - 1)]
                    log.warning("worker %d exited with %s; starting it again", w.plan.index, w.proc.returncode)
                    print(
                        f"worker {w.plan.index} exited ({w.proc.returncode}); starting it again in {delay:g} s",
                        file=sys.stderr,
                        flush=True,
                    )
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), delay)
                    w.restarts += 1
                    if not stop.is_set():
                        self.start(w)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.2)

    @staticmethod
    def _run_dir_again(run: Path, data_dir: Path) -> bool:
        try:
            if not rundir.again(run, data_dir):
                return False
        except OSError as e:
            log.error("the run directory %s was removed, and cannot be made again: %s", run, e)
            return False
        log.error("the run directory %s was removed under the server: made again; every worker starts again", run)
        print(f"the run directory {run} was removed: every worker starts again", file=sys.stderr, flush=True)
        return True

    async def stop(self, grace: float = STOP_GRACE) -> None:
        """SIGTERM to every worker at once; those still running after ``grace`` are killed."""
        for w in self.workers:
            if w.proc is not None and w.proc.poll() is None:
                w.proc.send_signal(signal.SIGTERM)
        end = time.monotonic() + grace
        for w in self.workers:
            if w.proc is None:
                continue
            while w.proc.poll() is None and time.monotonic() < end:
                await asyncio.sleep(0.01)
            if w.proc.poll() is None:
                log.warning("worker %d did not stop within %g s: killed", w.plan.index, grace)
                w.proc.kill()
                w.proc.wait(5)


def serve_workers(
    args: argparse.Namespace, count: int, data_dir: Path, dsn: str | None, source: str, node: NodeSettings
) -> int:
    """The supervisor of ``count`` worker processes."""

    lost = asyncio.Event()  # another server took the database's lock (lost_lock)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        sockets: list[socket.socket] = listen(args.host, args.port)
        if args.metrics_listen is not None:
            try:
                metrics_sockets = listen(*args.metrics_listen)
            except BaseException:
                for s in sockets:
                    s.close()
                raise
            sockets_for_metrics = metrics_sockets
        else:
            sockets_for_metrics = []
        port = sockets[0].getsockname()[1]
        sup: Supervisor | None = None
        run: Path | None = None
        try:
            ground = await prepare(
                data_dir=data_dir,
                database_url=dsn,
                operator_token=os.environ.get(OPERATOR_TOKEN_ENV) or None,
                database_source=source,
                node=node.node_id if node.cluster else None,
                workers=count,
                lease_seconds=node.lease_seconds,
            )  # one server per database, for all its workers: the supervisor holds the lock
        except BaseException:
            for s in (*sockets, *sockets_for_metrics):
                s.close()
            raise
        try:
            run = run_dir(data_dir)
            for s in (*sockets, *sockets_for_metrics):
                s.set_inheritable(True)
            wildcard = args.host in ("", "::") or (args.host.count(".") == 3 and set(args.host) <= {"0", "."})
            public_url = node.public_url or ("" if wildcard else f"http://{args.host}:{port}")
            settings = Settings(
                commit_seconds=args.seed_seconds,
                reveal_seconds=args.seed_seconds,
                next_hand_delay=args.next_hand_delay,
                resume_grace=args.resume_grace,
                away_seconds=args.away_seconds,
            )
            plans = [
                WorkerPlan(
                    index=i,
                    count=count,
                    node=node.node_id,
                    public_url=public_url,
                    run_dir=str(run),
                    data_dir=str(data_dir.resolve()),
                    dsn=ground.url.dsn,
                    fds=tuple(s.fileno() for s in sockets),
                    metrics_fds=tuple(s.fileno() for s in sockets_for_metrics),
                    supervisor=os.getpid(),
                    lease_seconds=node.lease_seconds,
                    cluster=node.cluster,
                    # the numbers only: a clock (Settings.clock) cannot cross into another process,
                    # and a worker runs on its own steady clock anyway (service/steadyclock.py)
                    settings={k: v for k, v in vars(settings).items() if k != "clock"},
                    verbose=bool(args.verbose),
                    log_format=args.log_format,
                )
                for i in range(1, count + 1)
            ]
            env = {k: v for k, v in os.environ.items() if k != OPERATOR_TOKEN_ENV}  # the workers need no token
            (run / "metrics").mkdir(mode=0o700)
            env[MULTIPROC_ENV] = str(run / "metrics")  # every worker's counters, summed at a scrape
            sup = Supervisor(plans, env)
            for w in sup.workers:
                sup.start(w)
            if not await sup.wait_ready(stop):  # a signal during start-up: stop, as after it
                print("shutting down", flush=True)
                return
            announce(
                f"http://{args.host}:{port}",
                data_dir=data_dir,
                embedded=ground.embedded is not None,
                source=source,
                fingerprint=ground.keys.signer.fingerprint,
                operator_token=ground.new_operator_token,
                workers=count,
            )
            watcher = asyncio.create_task(sup.watch(stop, run, data_dir))
            holder: asyncio.Task[None] | None = None
            if ground.db_lock is not None:  # the database's lock, held again after a restart of it
                holder = asyncio.create_task(ground.db_lock.hold())
                holder.add_done_callback(lambda t: lost_lock(t, stop, lost))
            await stop.wait()
            if holder is not None:
                holder.cancel()
            print("shutting down", flush=True)
            await watcher
        finally:
            for s in (*sockets, *sockets_for_metrics):
                s.close()  # no new connection is accepted while the workers stop
            if sup is not None:
                await sup.stop()
            if run is not None:
                shutil.rmtree(run, ignore_errors=True)
            await ground.release(failed=sup is None)

    asyncio.run(main())
    return EXIT_LOCKED if lost.is_set() else EXIT_OK
