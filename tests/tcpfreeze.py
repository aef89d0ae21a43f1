"""A node that stands still, as its clients see it: a TCP proxy on 127.0.0.1 in front
of a server's port.  Frozen, it passes no byte either way and closes nothing, as a
process stopped with SIGSTOP (or a hung host) keeps its sockets open and says
nothing; a connection made meanwhile is taken, as the kernel's backlog takes it for a
stopped process, and never answered.  The server behind it runs on (a test hangs its
database too, so that it loses its leases and another node takes its tables)."""

from __future__ import annotations

import asyncio
import contextlib


class FreezeProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self._running = asyncio.Event()
        self._running.set()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> FreezeProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def freeze(self) -> None:
        self._running.clear()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for t in list(self._tasks):
            t.cancel()
        for w in list(self._writers):
            w.close()
        for t in list(self._tasks):
            with contextlib.suppress(BaseException):
                await t

    async def _accept(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(cw)
        try:
            await self._running.wait()  # frozen: taken, never answered
            try:
                sr, sw = await asyncio.open_connection("127.0.0.1", self.target_port)
            except OSError:
                cw.close()
                return
            self._writers.add(sw)
            await asyncio.gather(self._pipe(cr, sw), self._pipe(sr, cw))
        finally:
            self._tasks.discard(task)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                await self._running.wait()  # frozen: held, as a stopped process holds it
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        if self._running.is_set():  # a close crosses only while the node runs
            writer.close()
