"""WebSocket handshakes that wait for a slow server instead of failing (issue 20, item 5).

A handshake looks the player's token (and its table's worker) up in the database
before it accepts.  Starved of CPU, a server answered such handshakes ``503`` by the
thousand, and each client came straight back.  Now a handshake waits for the database
up to ``Config.handshake_wait`` seconds, with at most ``Config.handshake_queue``
handshakes of a process waiting at once; one more is answered ``503 busy`` at once,
and every 503 carries ``Retry-After`` (service.middleware).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from service.errors import ServiceError


@dataclass
class HandshakeQueue:
    """The handshakes of this process waiting for the database."""

    limit: int
    waiting: int = 0

    @contextlib.contextmanager
    def admit(self) -> Iterator[None]:
        """One handshake's wait; a 503 ``busy`` ServiceError when the queue is full."""
        if self.waiting >= self.limit:
            raise ServiceError(
                f"{self.waiting} connections are waiting for this server; try again shortly", code="busy", status=503
            )
        self.waiting += 1
        try:
            yield
        finally:
            self.waiting -= 1
