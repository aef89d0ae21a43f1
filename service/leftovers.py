"""What a killed server leaves behind, cleared by the next one on its data directory.

A server killed with SIGKILL cannot stop its workers; each stops by itself within
about a second of seeing its supervisor gone (``service.workers.watch_parent``), and
its embedded PostgreSQL gets a fast shutdown from its parent-death signal
(``service.embedded``).  The next server on that data directory holds its lock
(``DataDirLock``), which names the server that held it last: it waits for that
server's workers to be gone — killing those that outlive the wait — before it starts
its own, so the leases it frees (``service.cluster.forget_every_node``) are taken by
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
    """Live worker processes of the server ``supervisor`` on ``data_dir`` (their
    command line says ``--worker-of PID`` and ``--data-dir DIR``)."""
    import psutil

    want = data_dir.resolve()
    found = []
    for proc in psutil.process_iter(attrs=["cmdline"]):
        cmd = proc.info["cmdline"] or []
        try:
            i, j = cmd.index("--worker-of"), cmd.index("--data-dir")
            if cmd[i + 1] != str(supervisor) or proc.pid == os.getpid():
                continue
            if (Path(proc.cwd()) / cmd[j + 1]).resolve() == want and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        except (ValueError, IndexError, psutil.Error):
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
