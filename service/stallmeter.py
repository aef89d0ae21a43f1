"""How long this process's event loop stood still (D37: a stall of the node).

A table learns that its node stalled from its own steps: one that comes more than
``stall_ms`` after the wake it asked for (or its beat).  A stall that ends just after
a table's wake was due is too short that way, though it was long — a stop of a second
that began a moment before the turn's end, with the seat's move waiting in the
socket.  So a task of the loop wakes every ``TICK_SECONDS`` and notes how late it
woke: each table asks, as it steps, for the longest stall that ended since its last
step, and its core takes that stall as its own (service.tablecore.core, ``_stalled``).

Durations on the loop's clock (monotonic), never moments of the tables' clock: a test
that skips the tables' clock ahead (tests/skipclock.py) stalls nothing.  One meter a
loop, found by the loop (:func:`of`); a loop with none (a test's bare table) reports
no stall.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Final

from aiohttp import web

from service.tasks import running

TICK_SECONDS: Final = 0.1
#: a wake later than this is a stall (the loop's own jitter under load stays below it)
SLACK_SECONDS: Final = 0.1
#: how long a stall is remembered (a table steps at least every beat)
KEPT_SECONDS: Final = 60.0

_meters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, StallMeter] = weakref.WeakKeyDictionary()


@dataclass
class StallMeter:
    """The loop's recent stalls: (when each ended, how long it was), loop seconds."""

    stalls: deque[tuple[float, float]] = field(default_factory=deque)

    def note(self, due: float, woke: float) -> None:
        """A wake due at ``due`` came at ``woke``."""
        if woke - due > SLACK_SECONDS:
            self.stalls.append((woke, woke - due))
        while self.stalls and self.stalls[0][0] < woke - KEPT_SECONDS:
            self.stalls.popleft()

    def longest_since(self, since: float) -> float:
        """The longest stall that ended after ``since`` (seconds; 0.0: none)."""
        return max((length for ended, length in self.stalls if ended > since), default=0.0)

    async def run(self, loop: asyncio.AbstractEventLoop) -> None:
        while True:
            due = loop.time() + TICK_SECONDS
            await asyncio.sleep(TICK_SECONDS)
            self.note(due, loop.time())


def of(loop: asyncio.AbstractEventLoop) -> StallMeter | None:
    """The running meter of ``loop``, if it has one."""
    return _meters.get(loop)


async def metering(app: web.Application) -> AsyncIterator[None]:
    """The loop's stall meter, for the application's ``cleanup_ctx``."""
    loop = asyncio.get_running_loop()
    if loop in _meters:  # one a loop (a test may run two servers on one loop)
        yield
        return
    meter = _meters[loop] = StallMeter()
    try:
        async with running(meter.run(loop), "stall-meter"):
            yield
    finally:
        _meters.pop(loop, None)
