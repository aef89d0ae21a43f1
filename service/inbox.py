"""A table's inputs: a first-in, first-out inbox that one task reads with a deadline.

The table's task waits for its next input or its beat, whichever comes first
(:meth:`service.table.TableActor.run`).  ``asyncio.wait_for(queue.get(), t)`` did that
with a task, a timeout and a cancellation every time the beat came first, which for an
idle table is every time: some 0.4 ms of CPU a beat, so 200 idle tables kept 7.6 % of
a core busy doing nothing (docs/benchmarks.md).  Here a wait is one future and one
timer handle, and a beat that comes first is a result, not an exception.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Final, Generic, TypeVar

T = TypeVar("T")


class Timeout:
    """What :meth:`Inbox.get` returns when its deadline came first."""

    def __repr__(self) -> str:
        return "TIMEOUT"


TIMEOUT: Final = Timeout()


class Inbox(Generic[T]):
    """Unbounded; any number of writers (``put_nowait``), one reader at a time."""

    def __init__(self) -> None:
        self._items: deque[T] = deque()
        self._waiter: asyncio.Future[None] | None = None

    def __len__(self) -> int:
        return len(self._items)

    def put_nowait(self, item: T) -> None:
        self._items.append(item)
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    async def get(self, timeout: float) -> T | Timeout:
        """The oldest item, waiting at most ``timeout`` seconds for one (``TIMEOUT`` then)."""
        if self._items:
            return self._items.popleft()
        if self._waiter is not None:
            raise RuntimeError("Inbox.get: one reader at a time")
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiter = waiter
        timer = loop.call_later(max(0.0, timeout), _wake, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None
        return self._items.popleft() if self._items else TIMEOUT


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
