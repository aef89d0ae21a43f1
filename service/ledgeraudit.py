"""The ledger's audit for /metrics: run at most every :data:`AUDIT_SECONDS`, its last
figures kept for the scrapes in between (``GET /api/ledger`` audits every time).  A
scrape waits at most :data:`PATIENCE_SECONDS` for an audit: a database that hangs
leaves the audit running in the background and the scrape gets the last figures, with
their age (``rummy_ledger_audit_age_seconds``), instead of no metrics at all while the
operator most needs them."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import asyncpg

from service import ledger
from service.db import connection

log = logging.getLogger("rummy.app")

#: The ledger's audit (service.ledger.summary) reads the whole ledger, so its cost grows
#: with the card room's history: /metrics runs it at most this often (seconds), and the
#: scrapes in between show the last audit's figures.
AUDIT_SECONDS = 60.0
#: How long a scrape waits for an audit it started or found running (seconds).
PATIENCE_SECONDS = 2.0


@dataclass
class LedgerAudit:
    """The last audit's figures for /metrics, and when it ran (``now``'s clock)."""

    every: float = AUDIT_SECONDS
    now: Callable[[], float] = time.monotonic
    patience: float = PATIENCE_SECONDS
    figures: dict[str, int | bool] = field(default_factory=dict)
    at: float | None = None
    runs: int = 0
    running: asyncio.Task[None] | None = None  # the audit under way: scrapes at once share it

    async def refresh(self, pool: asyncpg.Pool) -> dict[str, int | bool]:
        """The figures, audited again first when the last audit is ``every`` old — if
        the audit is done within ``patience``; else the last figures (the audit goes
        on, and a later scrape gets its figures)."""
        if self.running is None and (self.at is None or self.now() - self.at >= self.every):
            self.running = asyncio.ensure_future(self._audit(pool))
        if self.running is not None:
            await asyncio.wait({self.running}, timeout=self.patience)
        return self.figures

    def age(self) -> float | None:
        """Seconds since the last completed audit (None: none yet)."""
        return None if self.at is None else self.now() - self.at

    async def _audit(self, pool: asyncpg.Pool) -> None:
        try:
            async with connection(pool) as conn:
                self.figures = await ledger.summary(conn)
            self.at, self.runs = self.now(), self.runs + 1
        except Exception as e:  # the database is away or refuses: the last figures stand, and age
            log.warning("the ledger's audit for /metrics failed: %r", e)
        finally:
            self.running = None

    async def close(self) -> None:
        """An audit under way is cancelled (the server stops)."""
        task = self.running
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
