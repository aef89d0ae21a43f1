"""A network partition between the server and PostgreSQL (for the audit's reproducers).

While partitioned, nothing crosses either way: bytes are queued, as TCP queues and
retransmits them.  When a side closes its end *during* the partition, its FIN (and
whatever it still had queued) is lost with the partition, as after a partition longer
than the sender's retransmissions (Linux gives an orphaned socket's FIN up after about
tcp_orphan_retries): the other side never hears of the close, and PostgreSQL's
backend stays, idle, with its session (and its session's advisory locks) until its TCP
keepalive ends it (two hours and more by default).  When the partition heals, queued
bytes of live connections go on; new connections made during the partition wait for
the heal (a SYN retransmitted).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections import deque


class Partition:
    SOCKET = ".s.PGSQL.5432"

    def __init__(self, target_dsn: str, listen_dir: str) -> None:
        m = re.search(r"host=([^&]+)", target_dsn)
        assert m
        self.target_dsn = target_dsn
        self.target = f"{m.group(1)}/{self.SOCKET}"
        self.listen_dir = listen_dir
        self.open = asyncio.Event()
        self.open.set()
        self.ghosts: list[asyncio.StreamWriter] = []  # PostgreSQL's ends whose client's close was lost
        self.writers: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None
        self._trap: bytes | None = None  # cut_after_executed: the SQL to wait for

    def cut_after_executed(self, sql: bytes) -> None:
        """The partition begins as PostgreSQL answers the execution of the next
        statement containing ``sql`` (it ran: its locks are taken), before the client
        hears of it."""
        self._trap = sql

    def dsn(self, database: str) -> str:
        out = re.sub(r"host=[^&]+", f"host={self.listen_dir}", self.target_dsn)
        return re.sub(r"/[^/?]*\?", f"/{database}?", out, count=1)

    async def start(self) -> Partition:
        self._server = await asyncio.start_unix_server(self._accept, f"{self.listen_dir}/{self.SOCKET}")
        return self

    def cut(self) -> None:
        self.open.clear()

    def heal(self) -> None:
        self.open.set()

    async def stop(self) -> None:
        self.heal()
        for w in [*self.writers, *self.ghosts]:
            with contextlib.suppress(Exception):
                w.transport.abort()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _accept(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        self.writers.add(cw)
        await self.open.wait()  # a connection attempt during the partition waits for the heal
        try:
            sr, sw = await asyncio.open_unix_connection(self.target)
        except OSError:
            cw.transport.abort()
            return
        self.writers.add(sw)
        state: dict[str, bool] = {}
        a = asyncio.create_task(self._pipe(cr, sw, state, up=True))
        b = asyncio.create_task(self._pipe(sr, cw, state, up=False))
        done, _ = await asyncio.wait([a, b], return_when=asyncio.FIRST_COMPLETED)
        ghost = any(t.result() == "lost" for t in done if not t.cancelled() and t.exception() is None)
        for t in (a, b):
            t.cancel()
        await asyncio.gather(a, b, return_exceptions=True)
        if ghost and a in done:  # the client's close was lost: PostgreSQL keeps its end
            self.writers.discard(sw)
            self.ghosts.append(sw)
            cw.transport.abort()
            return
        for w in (cw, sw):
            with contextlib.suppress(Exception):
                w.transport.abort()

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, state: dict[str, bool], up: bool
    ) -> str:
        queue: deque[bytes] = deque()
        more = asyncio.Event()

        async def flush() -> None:
            while True:
                await more.wait()
                more.clear()
                while queue:
                    await self.open.wait()
                    writer.write(queue.popleft())
                    await writer.drain()

        flusher = asyncio.create_task(flush())
        try:
            while True:
                try:
                    data = await reader.read(65536)
                except (ConnectionError, OSError):
                    data = b""
                if not data:
                    if not self.open.is_set():
                        return "lost"  # closed during the partition: its FIN never arrives
                    while queue:  # closed with the network up: what it sent arrives, then the close
                        await asyncio.sleep(0.01)
                    return "closed"
                if up and self._trap is not None and self._trap in data:
                    self._trap = None
                    state["armed"] = True
                if not up and state.get("armed"):
                    if b"2\x00\x00\x00\x04" in data:  # BindComplete: the statement was executed
                        state["bound"] = True
                    if state.get("bound") and b"Z\x00\x00\x00\x05" in data:
                        state["armed"] = False
                        self.cut()  # the answer is lost with the partition
                queue.append(data)
                more.set()
        finally:
            flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await flusher
