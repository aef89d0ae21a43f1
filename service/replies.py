"""The replies a connection remembers for its repeated message ids (docs/api.md,
"Client → server"): on one connection a repeated id is answered with the original
reply and never applied twice.

A reply is remembered from the moment its message is taken: while the table has not
answered, as the future of its answer (a repeat waits for it); once answered, as the
text to send again, for :data:`REPLY_SECONDS` from the answer — or, once the
connection has sent it (:meth:`ReplyMemory.delivered`), for :data:`SENT_SECONDS` from
then.  A reply sent on a live connection reaches its client or the connection dies
(and a new connection starts a new id space), so a repeat of its id is a client's own
retry that crossed the reply on the way: it comes within moments or never.  The
longer time is for a reply the client has not been sent: a table that has not
answered within ``TABLE_ANSWER_SECONDS`` tells the client ``busy``, to ask again for
it.  Most replies are sent; held 30 s, they were about 2 MB of each worker's heap at
1,600 seats (docs/benchmarks.md, "Sent replies remembered 5 s").  At most
:data:`REPLY_MEMORY` replies and :data:`REPLY_BYTES` characters of their texts are
kept; beyond either bound the oldest go first.  A pending reply is never forgotten
for its age (however late the table answers, the client may ask again for it), only
to keep the bounds.  Replies go oldest first, in their messages' order: one whose time
is up waits behind an older one still kept (a sent reply behind one told ``busy``),
within the bounds.

A connection trims its memory at each of its messages, and :func:`sweep_every` trims
every connection's each :data:`SWEEP_SECONDS`: a seat that sends nothing between its
turns (tens of seconds apart at six seats and a human pace) would otherwise keep its last
turn's replies until its next one, whatever their time.

Time is an input (``now``; the sweep's ``sleep``), so the bounds are tested without
waiting for them.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

#: the replies a connection remembers: at most this many, this many characters of
#: reply text, each for this long after it was answered, or after it was sent
REPLY_MEMORY: Final = 256
REPLY_BYTES: Final = 16 * 1024
REPLY_SECONDS: Final = 30.0
SENT_SECONDS: Final = 5.0
#: seconds between two sweeps of every connection's memory
SWEEP_SECONDS: Final = SENT_SECONDS

__all__ = [
    "REPLY_BYTES",
    "REPLY_MEMORY",
    "REPLY_SECONDS",
    "SENT_SECONDS",
    "SWEEP_SECONDS",
    "Reply",
    "ReplyMemory",
    "sweep_every",
]


@dataclass
class Reply:
    """A remembered reply: the future while the table has not answered, then its text
    (``until``: when the text is forgotten; ``sent``: the connection has sent it)."""

    future: asyncio.Future[dict[str, Any]] | None
    text: str | None = None
    until: float | None = None
    sent: bool = False


class ReplyMemory:
    """One connection's remembered replies, oldest first, within the bounds."""

    def __init__(
        self,
        now: Callable[[], float] = time.monotonic,
        *,
        count: int = REPLY_MEMORY,
        size: int = REPLY_BYTES,
        seconds: float = REPLY_SECONDS,
        sent_seconds: float = SENT_SECONDS,
    ) -> None:
        self.now = now
        self.count = count
        self.size = size
        self.seconds = seconds
        self.sent_seconds = sent_seconds
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
                entry.until = self.now() + (self.sent_seconds if entry.sent else self.seconds)
                self.bytes += len(entry.text)
                self.trim()

        reply.add_done_callback(answered)
        self.trim()

    def delivered(self, msg_id: str) -> None:
        """The connection has sent the reply to ``msg_id``: kept :attr:`sent_seconds`
        from now (from its answer, if it is sent before it is answered), never longer
        than it was to be kept."""
        entry = self._entries.get(msg_id)
        if entry is None:
            return
        entry.sent = True
        if entry.until is not None:
            entry.until = min(entry.until, self.now() + self.sent_seconds)
        self.trim()

    def recall(self, msg_id: str) -> Reply | None:
        """The reply remembered for ``msg_id``, if it is still kept."""
        self.trim()
        return self._entries.get(msg_id)

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0

    def _forget(self, msg_id: str) -> None:
        gone = self._entries.pop(msg_id, None)
        if gone is not None:
            self.bytes -= len(gone.text or "")

    def trim(self) -> None:
        """Forget what is past its time, and the oldest beyond the bounds."""
        r = self._entries
        now = self.now()
        while r:
            oldest = next(iter(r.values()))
            expired = oldest.until is not None and oldest.until <= now
            if not (expired or len(r) > self.count or self.bytes > self.size):
                return
            _, gone = r.popitem(last=False)
            self.bytes -= len(gone.text or "")


async def sweep_every(
    seconds: float,
    memories: Callable[[], Iterable[ReplyMemory]],
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> None:
    """Forever: wait ``seconds``, then trim each of ``memories()``."""
    while True:
        await sleep(seconds)
        for memory in memories():
            memory.trim()
