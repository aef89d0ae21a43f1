"""Bench only: tracemalloc snapshots of a server's processes.

``bench/load.py --tracemalloc DIR`` puts this directory first on the server's
``PYTHONPATH``, so every Python process of that server (the supervisor and each
worker) imports it at start-up: it starts tracemalloc with ``RUMMY_BENCH_TRACEMALLOC_FRAMES``
frames and, from a daemon thread, dumps a snapshot every ``RUMMY_BENCH_TRACEMALLOC_EVERY``
seconds into ``RUMMY_BENCH_TRACEMALLOC_DIR`` as ``<pid>-<n>.snap``.  Nothing in
``service/`` knows about it; ``bench/tracemem/compare.py`` reads the snapshots.
"""

from __future__ import annotations

import os
import threading
import time
import tracemalloc


def _start(where: str) -> None:
    every = float(os.environ.get("RUMMY_BENCH_TRACEMALLOC_EVERY", "120"))
    tracemalloc.start(int(os.environ.get("RUMMY_BENCH_TRACEMALLOC_FRAMES", "10")))

    def dump() -> None:
        n = 0
        while True:
            time.sleep(every)
            snap = tracemalloc.take_snapshot()
            # written whole under another name, then renamed: a process that ends (or
            # is killed) mid-dump leaves no half-written .snap for compare.py to choke on
            path = os.path.join(where, f"{os.getpid()}-{n:03d}.snap")
            snap.dump(path + ".part")
            os.replace(path + ".part", path)
            n += 1

    threading.Thread(target=dump, name="tracemalloc-dump", daemon=True).start()


if os.environ.get("RUMMY_BENCH_TRACEMALLOC_DIR"):
    _start(os.environ["RUMMY_BENCH_TRACEMALLOC_DIR"])
