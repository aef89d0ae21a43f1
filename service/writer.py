"""Group commit: the records of many tables in one statement.

A table that has made a record (a move, a seed phase closing, the deal) hands it to
the process's :class:`RecordWriter` and waits for its own record's commit before it
tells anyone — "stored before sent" stays exactly true.  Writes that arrive within
``window`` seconds of each other go to PostgreSQL together as one statement, which
is one transaction: it checks each table's lease (fencing, with a key-share lock
a takeover must wait for), inserts the records, and moves each hand's clock.  A table
whose lease is gone, or whose record clashes with a different one already stored, is
left out of the batch and told so; the others commit.  If the statement fails, every
table in it learns of an unknown outcome and reloads (service.table), as after any
failed write.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import asyncpg

from service.cluster import Fenced, Lease
from service.db import connection
from service.handstore import SealedRecord, StoreConflict, ts

log = logging.getLogger("rummy.writer")

WRITE_SQL = """
WITH w AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::timestamptz[], $6::text[])
        AS w(table_id, owner, epoch, hand_id, deadline, status)
), lk AS MATERIALIZED (
    SELECT l.table_id FROM table_leases l JOIN w
        ON l.table_id = w.table_id AND l.owner = w.owner AND l.epoch = w.epoch
    ORDER BY l.table_id  -- every statement that locks several leases locks them in this order: no deadlock
    FOR KEY SHARE OF l  -- fencing: a takeover (FOR UPDATE) waits for it; a renewal does not (service.cluster)
), r AS (
    SELECT * FROM unnest($7::bigint[], $8::int[], $9::text[], $10::text[], $11::bytea[])
        AS r(hand_id, i, record, h, sealed)
), clash AS (
    SELECT DISTINCT r.hand_id FROM r JOIN hand_records s ON s.hand_id = r.hand_id AND s.i = r.i AND s.h <> r.h
), ok AS (
    SELECT w.* FROM w
    WHERE (w.epoch < 0 OR w.table_id IN (SELECT table_id FROM lk)) AND w.hand_id NOT IN (SELECT hand_id FROM clash)
), ins AS (
    INSERT INTO hand_records (hand_id, i, record, h, sealed)
    SELECT r.hand_id, r.i, r.record::jsonb, r.h, r.sealed FROM r WHERE r.hand_id IN (SELECT hand_id FROM ok)
    ON CONFLICT (hand_id, i) DO NOTHING
    RETURNING hand_id
), upd AS (
    UPDATE hands SET deadline = ok.deadline, status = COALESCE(ok.status, hands.status)
    FROM ok WHERE hands.id = ok.hand_id
    RETURNING hands.id
)
SELECT
    COALESCE((SELECT array_agg(table_id) FROM lk), '{}') AS held,
    COALESCE((SELECT array_agg(table_id) FROM ok), '{}') AS ok,
    COALESCE((SELECT array_agg(hand_id) FROM clash), '{}') AS clash,
    (SELECT count(*) FROM ins) AS inserted,
    (SELECT count(*) FROM upd) AS updated
"""


@dataclass
class Write:
    """One table's write: its records and its hand's clock, under its lease."""

    lease: Lease | None  # None: no fencing (a table run outside a cluster, in tests)
    table_id: str
    hand_id: int
    records: list[SealedRecord]
    deadline: float | None
    status: str | None
    done: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class RecordWriter:
    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        window: float = 0.002,
        max_batch: int = 512,
        max_in_flight: int = 2,
        observe: Callable[[float, int], None] | None = None,
    ) -> None:
        self.pool = pool
        self.window = window
        self.max_batch = max_batch
        # At most this many statements at once (so at most this many pooled
        # connections): under load the next batch grows while they run, instead of
        # every table taking a connection of its own and starving the rest.
        self.max_in_flight = max_in_flight
        self.observe = observe  # (seconds, batch size) after each statement
        self._batch: list[Write] = []
        self._flusher: asyncio.Task[None] | None = None
        self._in_flight = 0
        self.statements = 0
        self.writes = 0

    async def write(self, w: Write) -> None:
        """Store ``w`` (with whatever else arrives meanwhile); raises Fenced,
        StoreConflict, or the database's error (an unknown outcome)."""
        self._batch.append(w)
        if self._in_flight >= self.max_in_flight:
            pass  # the statement in flight flushes this batch when it is done
        elif len(self._batch) >= self.max_batch:
            self._flush_now()
        elif self._flusher is None:
            self._flusher = asyncio.create_task(self._flush_soon())
        await w.done

    async def _flush_soon(self) -> None:
        await asyncio.sleep(self.window)
        self._flusher = None
        if self._in_flight < self.max_in_flight:
            self._flush_now()

    def _flush_now(self) -> None:
        batch, self._batch = self._batch[: self.max_batch], self._batch[self.max_batch :]
        if self._flusher is not None and asyncio.current_task() is not self._flusher:
            self._flusher.cancel()
            self._flusher = None
        if batch:
            self._in_flight += 1
            task = asyncio.create_task(self._store(batch))
            task.add_done_callback(self._stored)

    def _stored(self, task: asyncio.Task[None]) -> None:
        self._in_flight -= 1
        if not task.cancelled():
            task.exception()  # retrieved: each write's caller has it already
        if self._batch and self._in_flight < self.max_in_flight:
            self._flush_now()  # these waited at least as long as the window

    async def _store(self, batch: list[Write]) -> None:
        started = time.perf_counter()
        recs = [(w.hand_id, r) for w in batch for r in w.records]
        try:
            async with connection(self.pool) as conn:
                row = await conn.fetchrow(
                    WRITE_SQL,
                    [w.table_id for w in batch],
                    [w.lease.owner if w.lease else "" for w in batch],
                    [w.lease.epoch if w.lease else -1 for w in batch],
                    [w.hand_id for w in batch],
                    [ts(w.deadline) for w in batch],
                    [w.status for w in batch],
                    [h for h, _ in recs],
                    [r.i for _, r in recs],
                    [r.public for _, r in recs],
                    [r.h for _, r in recs],
                    [r.sealed for _, r in recs],
                )
        except BaseException as e:
            for w in batch:
                if not w.done.done():
                    w.done.set_exception(e if isinstance(e, Exception) else RuntimeError("the write was cancelled"))
            if not isinstance(e, Exception):
                raise
            return
        assert row is not None
        held, ok, clash = set(row["held"]), set(row["ok"]), set(row["clash"])
        for w in batch:
            if w.done.done():
                continue
            if w.lease is not None and w.table_id not in held:
                w.done.set_exception(Fenced(f"table {w.table_id}: this node's lease was taken over"))
            elif w.hand_id in clash or w.table_id not in ok:
                w.done.set_exception(StoreConflict(f"hand {w.hand_id} already holds another record"))
            else:
                w.done.set_result(None)
        self.statements += 1
        self.writes += len(batch)
        if self.observe is not None:
            with contextlib.suppress(Exception):
                self.observe(time.perf_counter() - started, len(batch))
