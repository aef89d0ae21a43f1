"""The ledger's audit for /metrics: run at most every :data:`AUDIT_SECONDS`, its last
figures kept for the scrapes in between (``GET /api/ledger`` audits every time)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import asyncpg

from service import ledger
from service.db import connection

#: The ledger's audit (service.ledger.summary) reads the whole ledger, so its cost grows
#: with the card room's history: /metrics runs it at most this often (seconds), and the
#: scrapes in between show the last audit's figures.
AUDIT_SECONDS = 60.0


@dataclass
class LedgerAudit:
    """The last audit's figures for /metrics, and when it ran (``now``'s clock)."""

    every: float = AUDIT_SECONDS
    now: Callable[[], float] = time.monotonic
    figures: dict[str, int | bool] = field(default_factory=dict)
    at: float | None = None
    runs: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # scrapes at once share one audit

    async def refresh(self, pool: asyncpg.Pool) -> dict[str, int | bool]:
        """The figures, audited again first when the last audit is ``every`` old."""
        async with self.lock:
            if self.at is None or self.now() - self.at >= self.every:
                async with connection(pool) as conn:
                    self.figures = await ledger.summary(conn)
                self.at, self.runs = self.now(), self.runs + 1
        return self.figures
