"""A real ``rummy-table serve --workers N`` in a process of its own, for the tests of
issue 18 (one public port, the whole server's health and metrics, admin every time)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from tests.test_cli_errors import free_port


@dataclass
class WorkerServer:
    proc: subprocess.Popen[bytes]
    url: str
    token: str
    log: Path
    dsn: str | None = None  # its database, when the test gave one

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def worker_pids(self) -> dict[int, int]:
        """Each worker's newest pid, from its 'ready' line."""
        return {int(i): int(p) for i, p in re.findall(r"worker (\d+) of \d+ ready \(pid (\d+)", self.text())}

    def ready_count(self, index: int) -> int:
        return len(re.findall(rf"worker {index} of \d+ ready", self.text()))


@contextlib.asynccontextmanager
async def worker_server(
    data_dir: Path,
    *,
    workers: int = 2,
    dsn: str | None = None,
    extra: tuple[str, ...] = (),
    node: str | None = None,
    token: str | None = None,
    expect_exit: int = 0,
) -> AsyncIterator[WorkerServer]:
    """Start the server (its own embedded PostgreSQL unless ``dsn``), wait until it
    says it serves, yield it, and stop it with SIGTERM (it must exit 0).  ``node``: a
    node of a cluster instead (``--node-id node``, one worker, its public URL its own
    port: docs/deploy.md), which needs ``dsn``; ``token``: the operator token (the
    other nodes' on their database), else a new one; ``expect_exit``: its exit status
    (when the test makes it go down by itself)."""
    token = token or "op-" + os.urandom(12).hex()
    port = free_port()
    log = data_dir.parent / f"{data_dir.name}.log"
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["RUMMY_OPERATOR_TOKEN"] = token
    db = ["--database-url", dsn] if dsn else []
    shape = (
        ["--workers", str(workers)] if node is None else ["--node-id", node, "--public-url", f"http://127.0.0.1:{port}"]
    )
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "service.cli",
                "serve",
                *shape,
                "--port",
                str(port),
                "--data-dir",
                str(data_dir),
                *db,
                *extra,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    server = WorkerServer(proc, f"http://127.0.0.1:{port}", token, log, dsn)
    try:
        deadline = time.time() + 120
        while "rummy-table serving on" not in server.text():
            assert proc.poll() is None and time.time() < deadline, server.text()[-3000:]
            await asyncio.sleep(0.1)
        yield server
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            # Waited for without blocking the loop: what the test runs on it (a proxy
            # to the database, tests/pgproxy.py) must go on serving the server's
            # shutdown, which releases its leases and closes its connections.
            try:
                await asyncio.to_thread(proc.wait, 60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
    assert proc.returncode == expect_exit, server.text()[-3000:]
