"""Group commit: the writes of many tables in one transaction.

Every write a table makes (a hand's records, and every other op: a seed, a sit, the
deal, a settlement…) goes to the process's :class:`GroupCommit` and waits for its own
answer before the table tells anyone — "stored before told" stays exactly true.
Writes of one lane (the store's choice: a hand's records and seeds, quick, apart from
the other ops, so they never wait behind a deal) that arrive within ``window`` seconds
of each other, or while the lane's batches are in flight, are handed together to the
store's batch function (:func:`service.tablestore.commit_batch`), which carries them
out in one transaction and answers one result per write: a value, or the exception
that write failed with (the others commit).  A write that finds its lane idle (no
batch in flight, none gathering) does not wait for the window: it goes at once, alone.
If the batch function raises (the transaction failed: the database went away, the
COMMIT failed), every write of the batch gets that error: an unknown outcome, after
which its table reloads.

This module is only the batching: it holds no SQL and makes no database call.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

W = TypeVar("W")

# The store's batch function: one result per write, in order — the write's answer, or
# the exception it alone failed with; raises if the whole batch failed.
Commit = Callable[[Sequence[W]], Awaitable[Sequence[Any]]]


@dataclass
class _Waiting(Generic[W]):
    write: W
    done: asyncio.Future[Any] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class _Lane(Generic[W]):
    """Writes of one kind: batched together, at most ``max_in_flight`` batches at once."""

    def __init__(self, owner: GroupCommit[W]) -> None:
        self.owner = owner
        self.batch: list[_Waiting[W]] = []
        self.flusher: asyncio.Task[None] | None = None
        self.in_flight = 0

    def add(self, waiting: _Waiting[W]) -> None:
        self.batch.append(waiting)
        if self.in_flight >= self.owner.max_in_flight:
            pass  # the batch in flight flushes this one when it is done
        elif len(self.batch) >= self.owner.max_batch:
            self.flush_now()
        elif self.owner.eager and self.in_flight == 0 and len(self.batch) == 1:
            # An idle lane: nothing to wait behind and nobody yet to batch with, so
            # the write goes at once.  Without this every write at a human pace
            # waited out the whole window for a batch of one.  Writes that come while
            # it is stored gather as before (for the window, or until a batch in
            # flight is done), so under load the batches still form.
            self.flush_now()
        elif self.flusher is None:
            self.flusher = asyncio.create_task(self.flush_soon())

    async def flush_soon(self) -> None:
        await asyncio.sleep(self.owner.window)
        self.flusher = None
        if self.in_flight < self.owner.max_in_flight:
            self.flush_now()

    def flush_now(self) -> None:
        max_batch = self.owner.max_batch
        batch, self.batch = self.batch[:max_batch], self.batch[max_batch:]
        if self.flusher is not None and asyncio.current_task() is not self.flusher:
            self.flusher.cancel()
            self.flusher = None
        if batch:
            self.in_flight += 1
            task = asyncio.create_task(self.owner._store(batch))
            task.add_done_callback(self.stored)

    def stored(self, task: asyncio.Task[None]) -> None:
        self.in_flight -= 1
        if not task.cancelled():
            task.exception()  # retrieved: each write's caller has it already
        if self.batch and self.in_flight < self.owner.max_in_flight:
            self.flush_now()  # these waited at least as long as the window


class GroupCommit(Generic[W]):
    """Batches the writes it is given and hands each batch to ``commit``.  ``lane``
    sorts writes into lanes batched apart (each with its own ``max_in_flight``), so
    that quick writes never wait in one batch behind slow ones; by default one lane."""

    def __init__(
        self,
        commit: Commit[W],
        *,
        window: float = 0.002,
        max_batch: int = 512,
        max_in_flight: int = 2,
        lane: Callable[[W], int] | None = None,
        observe: Callable[[float, int], None] | None = None,
        eager: bool = True,
    ) -> None:
        self.commit = commit
        self.window = window
        self.eager = eager  # a write that finds its lane idle goes at once
        self.max_batch = max_batch
        # At most this many batches at once per lane (so at most this many pooled
        # connections each): under load the next batch grows while they run, instead
        # of every table taking a connection of its own and starving the rest.
        self.max_in_flight = max_in_flight
        self.lane = lane
        self.observe = observe  # (seconds, batch size) after each batch
        self._lanes: dict[int, _Lane[W]] = {}
        self.statements = 0  # batches committed
        self.writes = 0  # writes in them

    @property
    def _in_flight(self) -> int:
        return sum(lane.in_flight for lane in self._lanes.values())

    async def write(self, w: W) -> Any:
        """Store ``w`` (with whatever else arrives meanwhile): its answer, or the
        exception it failed with, or the batch's."""
        waiting = _Waiting(w)
        key = 0 if self.lane is None else self.lane(w)
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = _Lane(self)
        lane.add(waiting)
        return await waiting.done

    async def _store(self, batch: list[_Waiting[W]]) -> None:
        started = time.perf_counter()
        try:
            results = await self.commit([b.write for b in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"the batch function answered {len(results)} results for {len(batch)} writes")
        except BaseException as e:
            for b in batch:
                if not b.done.done():
                    b.done.set_exception(e if isinstance(e, Exception) else RuntimeError("the write was cancelled"))
            if not isinstance(e, Exception):
                raise
            return
        for b, result in zip(batch, results, strict=True):
            if b.done.done():
                continue
            if isinstance(result, BaseException):
                b.done.set_exception(result)
            else:
                b.done.set_result(result)
        self.statements += 1
        self.writes += len(batch)
        if self.observe is not None:
            with contextlib.suppress(Exception):
                self.observe(time.perf_counter() - started, len(batch))
