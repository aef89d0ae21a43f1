"""What a killed server leaves behind, cleared by the next one on its data directory.

A server killed with SIGKILL cannot stop its workers; each stops by itself within
about a second of seeing its supervisor gone (``service.workers.watch_parent``), and
its embedded PostgreSQL gets a fast shutdown from its parent-death signal
(``service.embedded``).  The next server on that data directory holds its lock
(``DataDirLock``), which names the server that held it last: it waits for that
server's workers to be gone — killing those that outlive the wait — before it starts
its own, so the leases it frees (``service.nodes.forget_every_node``) are taken by
its own workers alone, and no client is sent to a worker that is dying.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from pathlib import Path

log = logging.getLogger("rummy.workers")
WAIT_SECONDS = 10.0  # a worker stops by itself within a few seconds of its supervisor's death


def workers_of(supervisor: int, data_dir: Path) -> list[int]:
    """Live worker processes of the server ``supervisor`` on ``data_dir``: processes
    running ``-m service.worker`` whose plan (the environment variable
    ``service.worker.PLAN_ENV``) names that supervisor and that data directory."""
    import psutil

    from service.worker import PLAN_ENV, WorkerPlan

    want = data_dir.resolve()
    found = []
    for proc in psutil.process_iter(attrs=["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if cmd[-2:] != ["-m", "service.worker"] or proc.pid == os.getpid():
            continue
        try:
            plan = WorkerPlan.from_env(proc.environ()[PLAN_ENV])
            if plan.supervisor == supervisor and Path(plan.data_dir).resolve() == want:
                if proc.status() != psutil.STATUS_ZOMBIE:
                    found.append(proc.pid)
        except (KeyError, ValueError, TypeError, psutil.Error):
            continue
    return found


def clear_old_workers(supervisor: int | None, data_dir: Path, wait: float = WAIT_SECONDS) -> list[int]:
    """Wait for the workers of the last server on ``data_dir`` to be gone; kill those
    still running after ``wait``.  Returns the pids that had to be killed."""
    if supervisor is None or supervisor == os.getpid():
        return []
    end = time.monotonic() + wait
    while (left := workers_of(supervisor, data_dir)) and time.monotonic() < end:
        time.sleep(0.1)
    for pid in left:
        log.warning("a worker (pid %d) of the server that held %s before outlived it: killing it", pid, data_dir)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return left
