"""A worker process of ``serve --workers`` (``python -m service.worker``).

Its supervisor (:mod:`service.workers`) prepared the server's ground and bound its
public port; the worker gets its :class:`WorkerPlan` in the environment and the
listening sockets as inherited descriptors, and serves the application on them
beside its siblings (:func:`service.startup.start_app`).  It owns a share of the
tables through their leases as ``NODE/wN``.  A connection that reaches it for a
table a sibling serves is handed to that sibling inside the host (a WebSocket:
:mod:`service.handover`) or its command forwarded there (REST:
:mod:`service.internal`); clients only ever see the server's one public port.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import signal
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PLAN_ENV = "RUMMY_WORKER_PLAN"
log = logging.getLogger("rummy.worker")


@dataclass(frozen=True)
class WorkerPlan:
    """What a worker needs: who it is, where its siblings are, what it serves."""

    index: int  # 1…count
    count: int
    node: str  # the node's name; this worker holds leases as NODE/wINDEX
    public_url: str  # the node's: where clients reach every worker of it
    run_dir: str  # the server's Unix sockets (0700: this user only) and its metrics
    data_dir: str
    dsn: str
    fds: tuple[int, ...]  # the public listening sockets, inherited
    supervisor: int  # its pid: a worker whose supervisor is gone stops
    lease_seconds: float = 5.0
    cluster: bool = False  # True: a node of a cluster (--node-id); False: a server alone
    settings: dict[str, Any] = field(default_factory=dict)  # service.table.Settings
    verbose: bool = False
    log_format: str = "text"
    metrics_fds: tuple[int, ...] = ()  # serve --metrics-listen: its listening sockets, inherited

    @property
    def worker_id(self) -> str:
        return worker_id(self.node, self.index)

    def sock(self, index: int) -> Path:
        """A worker's internal HTTP socket (service.internal)."""
        return Path(self.run_dir) / f"w{index}.sock"

    def handoff(self, index: int) -> Path:
        """A worker's hand-over socket (service.handover)."""
        return Path(self.run_dir) / f"w{index}.hand"

    def to_env(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_env(cls, text: str) -> WorkerPlan:
        data = json.loads(text)
        data["fds"] = tuple(data["fds"])
        data["metrics_fds"] = tuple(data.get("metrics_fds", ()))
        return cls(**data)


def worker_id(node: str, index: int) -> str:
    """The lease holder ``NODE/wN`` ('/' is in no node id: unambiguous)."""
    return f"{node}/w{index}"


def sibling_index(node: str, holder: str) -> int | None:
    """The index of ``holder`` when it is a worker of ``node``, else None."""
    prefix = f"{node}/w"
    rest = holder[len(prefix) :] if holder.startswith(prefix) else ""
    return int(rest) if rest.isascii() and rest.isdigit() and len(rest) < 4 else None


async def watch_parent(parent: int) -> None:
    """A worker whose supervisor is gone stops by itself (SIGTERM to itself)."""
    while True:
        await asyncio.sleep(1.0)
        if os.getppid() != parent:
            log.error("the supervisor (pid %d) is gone: stopping", parent)
            os.kill(os.getpid(), signal.SIGTERM)
            return


async def serve(plan: WorkerPlan) -> None:
    from service import gctune, siblings
    from service.cluster import NodeSettings
    from service.startup import attach, start_app
    from service.table import Settings

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    orphan = asyncio.create_task(watch_parent(plan.supervisor))
    node = NodeSettings(
        node_id=plan.worker_id,
        public_url=plan.public_url,
        cluster=True,
        shared=plan.cluster,  # a worker of a node of a cluster: other nodes may take its tables
        lease_seconds=plan.lease_seconds,
        heartbeat_seconds=max(0.2, plan.lease_seconds / 5),
        node_name=plan.node,
    )
    siblings.write_stamp(plan.run_dir, plan.index)  # before it holds a lease: its siblings see it alive
    sockets = [socket.socket(fileno=fd) for fd in plan.fds]
    running = await start_app(
        attach(Path(plan.data_dir), plan.dsn),
        sockets=sockets,
        settings=Settings(**plan.settings),
        node=node,
        worker=plan,
        owns_ground=False,
        metrics_sockets=[socket.socket(fileno=fd) for fd in plan.metrics_fds] if plan.metrics_fds else None,
    )
    gctune.tune()  # start-up is done: freeze what it made, collect less often
    try:
        print(f"worker {plan.index} of {plan.count} ready (pid {os.getpid()}, {plan.worker_id})", flush=True)
        await stop.wait()
    finally:
        orphan.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await orphan
        await running.stop()


def main() -> int:
    from service.errors import EXIT_INTERNAL, EXIT_OK, ServiceError
    from service.logs import setup_logging

    plan = WorkerPlan.from_env(os.environ[PLAN_ENV])
    setup_logging(plan.verbose, plan.log_format)
    try:
        asyncio.run(serve(plan))
    except ServiceError as e:
        print(f"rummy-table worker {plan.index}: {e.message}", file=sys.stderr, flush=True)
        return e.exit_code
    except Exception:
        log.exception("worker %d failed", plan.index)
        return EXIT_INTERNAL
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
