"""The C heap's free pages go back to the system every so often (service/memtrim.py,
issue 20 item 4): the loop's clock and the trim are inputs, the real ``malloc_trim``
gives freed memory back, and every server runs the trimmer."""

from __future__ import annotations

import asyncio
import platform
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from service import memtrim
from service.appkeys import METRICS
from service.startup import Running

ROOT = Path(__file__).resolve().parent.parent
GLIBC = platform.libc_ver()[0] == "glibc"


async def test_each_beat_of_the_clock_trims_once_and_says_how_long_it_took() -> None:
    waits: list[float] = []
    trims: list[int] = []
    took: list[float] = []
    stop = asyncio.Event()

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) > 3:
            stop.set()
            await asyncio.Event().wait()  # the fourth wait never ends: the test stops the loop

    task = asyncio.ensure_future(memtrim.trim_every(7.5, lambda: trims.append(1), took.append, sleep))
    await asyncio.wait_for(stop.wait(), 30)  # a bound only a hang reaches
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert waits == [7.5] * 4
    assert len(trims) == 3 and len(took) == 3
    assert all(t >= 0 for t in took)


@pytest.mark.skipif(not GLIBC, reason="malloc_trim is glibc's")
def test_the_real_trim_gives_freed_heap_back_to_the_system() -> None:
    """Freed chunks between live ones stay in the process until the trim: a seventh of
    200 MB of texts kept, the rest freed, and RSS falls only when trimmed."""
    code = """
import random
from service import memtrim
from service.metrics import resident_bytes
def rss():
    return resident_bytes() // 1024
rnd = random.Random(1)
keep, junk = [], []
for i in range(40_000):
    (keep if i % 7 == 0 else junk).append(bytes(rnd.randint(600, 9000)))
junk.clear()
before = rss()
trim = memtrim.libc_trim()
trim()
print(before, rss())
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    before, after = map(int, p.stdout.split())
    assert before - after > 100_000, (before, after)  # KB: most of the freed 170 MB went back


async def test_every_server_runs_the_trimmer(server: Running) -> None:
    assert memtrim.libc_trim() is not None or not GLIBC
    names = {t.get_name() for t in asyncio.all_tasks()}
    assert ("malloc-trim" in names) == GLIBC
    text = generate_latest(server.app[METRICS].registry).decode()
    assert "rummy_malloc_trim_seconds_count" in text
