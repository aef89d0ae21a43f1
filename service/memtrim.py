"""The C heap's free pages given back to the system every so often (glibc's ``malloc_trim``).

A server's RSS rose for about 25 minutes at human pace while its live Python objects
did not: 2,000 seats, tracemalloc in the workers, a worker's traced heap flat at 78–80 MB
from its third minute on, RSS still climbing (docs/benchmarks.md, "Memory over 30
minutes").  What grew was glibc's heap.  Every text longer than 512 bytes (a push,
a reply, a record's JSON) is a ``malloc`` of its own, freed a moment later; glibc
keeps the freed chunks between live ones, and gives memory back by itself only from
the top of the heap.  One ``malloc_trim(0)`` in one of those workers gave back
92 MB of its 437 MB.  Side by side over 30 minutes at 2,000 seats, a server without
the trim rose 5.7 % after its first five minutes and was still rising; with it, RSS
stayed within 1.4 % (docs/benchmarks.md, "what grew, and the trim").

:func:`trim_every` calls it every :data:`TRIM_SECONDS` from the application's
``cleanup_ctx`` (the clock and the call are parameters, so a test drives it without
waiting); each call's time goes to the ``rummy_malloc_trim_seconds`` histogram.
Where the C library has no ``malloc_trim`` (musl, macOS) nothing runs.
"""

from __future__ import annotations

import asyncio
import ctypes
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Final

from aiohttp import web

from service.appkeys import METRICS
from service.tasks import running

#: seconds between two trims: a trim holds the event loop for a few milliseconds
TRIM_SECONDS: Final = 30.0

Trim = Callable[[], object]


def libc_trim() -> Trim | None:
    """``malloc_trim(0)`` of the C library this process runs on, or None if it has none."""
    try:
        fn = ctypes.CDLL(None).malloc_trim  # the process's own symbols: glibc's, when it is glibc
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return lambda: fn(0)


async def trim_every(
    seconds: float,
    trim: Trim,
    took: Callable[[float], None] = lambda _s: None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> None:
    """Forever: wait ``seconds``, trim, and tell ``took`` how long the trim took."""
    while True:
        await sleep(seconds)
        start = time.perf_counter()
        trim()
        took(time.perf_counter() - start)


async def trimming(app: web.Application) -> AsyncIterator[None]:
    """The application's trimmer, for its ``cleanup_ctx``."""
    trim = libc_trim()
    if trim is None:
        yield
        return
    async with running(trim_every(TRIM_SECONDS, trim, app[METRICS].malloc_trim_seconds.observe), "malloc-trim"):
        yield
