"""The replies a connection remembers for its repeated message ids (docs/api.md,
"Client → server"): on one connection a repeated id is answered with the original
reply and never applied twice.

A reply is remembered from the moment its message is taken: while the table has not
answered, as the future of its answer (a repeat waits for it); once answered, as the
text to send again, for :data:`REPLY_SECONDS` from the answer.  At most
:data:`REPLY_MEMORY` replies and :data:`REPLY_BYTES` characters of their texts are
kept; beyond either bound the oldest go first.  A pending reply is never forgotten for
its age (a table that has not answered within ``TABLE_ANSWER_SECONDS`` tells the
client to ask again for it, however late), only to keep the bounds.

Time is an input (``now``), so the bounds are tested without waiting for them.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

#: the replies a connection remembers: at most this many, this many characters of
#: reply text, each for this long after it was answered
REPLY_MEMORY: Final = 256
REPLY_BYTES: Final = 16 * 1024
REPLY_SECONDS: Final = 30.0

__all__ = ["REPLY_BYTES", "REPLY_MEMORY", "REPLY_SECONDS", "Reply", "ReplyMemory"]


@dataclass
class Reply:
    """A remembered reply: the future while the table has not answered, then its text
    (``until``: when the text is forgotten)."""

    future: asyncio.Future[dict[str, Any]] | None
    text: str | None = None
    until: float | None = None


class ReplyMemory:
    """One connection's remembered replies, oldest first, within the bounds."""

    def __init__(
        self,
        now: Callable[[], float] = time.monotonic,
        *,
        count: int = REPLY_MEMORY,
        size: int = REPLY_BYTES,
        seconds: float = REPLY_SECONDS,
    ) -> None:
        self._now = now
        self.count = count
        self.size = size
        self.seconds = seconds
        self._entries: collections.OrderedDict[str, Reply] = collections.OrderedDict()
        self.bytes = 0  # characters of the texts kept

    def __len__(self) -> int:
        return len(self._entries)

    def remember(self, msg_id: str, reply: asyncio.Future[dict[str, Any]], text: Callable[[], str]) -> None:
        """Keep the reply to ``msg_id``: the future while it is pending, then its text
        (``text()``, built once when it is answered)."""
        self._forget(msg_id)
        entry = Reply(reply)
        self._entries[msg_id] = entry

        def answered(_: asyncio.Future[dict[str, Any]]) -> None:
            if self._entries.get(msg_id) is entry:
                entry.text = text()
                entry.future = None
                entry.until = self._now() + self.seconds
                self.bytes += len(entry.text)
                self._trim()

        reply.add_done_callback(answered)
        self._trim()

    def recall(self, msg_id: str) -> Reply | None:
        """The reply remembered for ``msg_id``, if it is still kept."""
        self._trim()
        return self._entries.get(msg_id)

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0

    def _forget(self, msg_id: str) -> None:
        gone = self._entries.pop(msg_id, None)
        if gone is not None:
            self.bytes -= len(gone.text or "")

    def _trim(self) -> None:
        r = self._entries
        now = self._now()
        while r:
            oldest = next(iter(r.values()))
            expired = oldest.until is not None and oldest.until <= now
            if not (expired or len(r) > self.count or self.bytes > self.size):
                return
            _, gone = r.popitem(last=False)
            self.bytes -= len(gone.text or "")
