"""One public port: a WebSocket that reached the wrong worker is handed to its
table's worker inside the host.

Every worker of ``serve --workers`` accepts on the server's one port.  A WebSocket
names its table in its URL (``/ws?table=ID``); when the worker that accepted it does
not serve that table and a sibling does, it sends the connection itself — its file
descriptor, over a Unix datagram socket with ``SCM_RIGHTS`` — to the sibling,
together with the upgrade request's bytes, rebuilt from what it parsed (the request
line, the headers as sent, anything read after them), and lets go of its own
descriptor without a word: the TCP connection stays open in the sibling, whose HTTP
server reads the request as if it had accepted it.  From then on every frame goes
straight to the table's worker; the hand-over costs one owner look-up and one
``sendmsg`` per connection, nothing per move.  The request is marked
(:data:`MARK`), so a connection is handed over once at most.

(REST calls are not moved: a command for a sibling's table is forwarded over the
sibling's internal socket, :mod:`service.internal`.  The server does not end TLS
itself — a proxy in front does — so a descriptor is all the connection there is.)
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import errno
import logging
import os
import socket
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

log = logging.getLogger("rummy.handover")

MARK = "X-Rummy-Handed-Over"
MAX_HEAD = 64 * 1024  # a request head larger than this is served where it landed
SEND_SECONDS = 1.0  # a sibling whose queue stays full this long is not sent the connection


class HandedOver(web.Response):
    """What a handler returns once the connection went to a sibling: nothing is ever
    written from here (the connection is no longer this worker's)."""

    def __init__(self, to: int) -> None:
        super().__init__(status=204)
        self.to = to


def request_head(request: web.BaseRequest) -> bytes:
    """The request as its client sent it, for the sibling to read again."""
    v = request.version
    line = f"{request.method} {request.raw_path} HTTP/{v.major}.{v.minor}\r\n".encode("latin-1")
    mark = MARK.lower().encode()
    headers = b"".join(k + b": " + val + b"\r\n" for k, val in request.raw_headers if k.lower() != mark)
    # Bytes read after an upgrade request wait in the protocol (aiohttp keeps them
    # there until the WebSocket reader takes over); they belong to the connection.
    tail = getattr(request.protocol, "_message_tail", b"") or b""
    return line + headers + f"{MARK}: 1\r\n\r\n".encode() + bytes(tail)


async def hand_over(request: web.BaseRequest, path: Path) -> bool:
    """Send the request's connection to the worker listening at ``path``.  True: it
    is that worker's now, and this one has let go of it; False: it was not sent (no
    such worker right now, its queue full, the head too large) and is still ours."""
    transport = request.transport
    sock = transport.get_extra_info("socket") if transport is not None else None
    head = request_head(request)
    if sock is None or len(head) > MAX_HEAD:
        return False
    fds = array.array("i", [sock.fileno()])
    out = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    out.setblocking(False)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SEND_SECONDS
    try:
        while True:
            try:
                out.sendmsg([head], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)], 0, str(path))
                break
            except (BlockingIOError, InterruptedError):
                if loop.time() > deadline:
                    log.warning("worker at %s did not take a connection within %g s", path, SEND_SECONDS)
                    return False
                await asyncio.sleep(0.005)
            except OSError as e:
                if e.errno in (errno.ECONNREFUSED, errno.ENOENT, errno.ENOTSOCK, errno.EMSGSIZE):
                    return False  # the sibling is restarting, or gone
                raise
    finally:
        out.close()
    # Our descriptor closes; the sibling's keeps the connection open (no FIN is sent
    # while another descriptor holds the socket), and nothing is written from here.
    request.protocol.force_close()
    return True


class Receiver:
    """This worker's end: connections its siblings hand over, fed to its HTTP server
    as if it had accepted them."""

    def __init__(self, path: Path, server: web.Server, on_taken: Callable[[], None] | None = None) -> None:
        self.path = path
        self.server = server
        self.on_taken = on_taken
        self._sock: socket.socket | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # a socket left by this worker's previous life
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(str(self.path))
        os.chmod(self.path, 0o600)
        sock.setblocking(False)
        self._sock = sock
        asyncio.get_running_loop().add_reader(sock.fileno(), self._ready)

    def _ready(self) -> None:
        assert self._sock is not None
        while True:
            try:
                head, ancillary, _flags, _ = self._sock.recvmsg(MAX_HEAD, socket.CMSG_SPACE(4 * 4))
            except (BlockingIOError, InterruptedError):
                return
            fds: list[int] = []
            for level, kind, data in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    got = array.array("i")
                    got.frombytes(data[: len(data) - len(data) % got.itemsize])
                    fds.extend(got)
            for extra in fds[1:]:
                os.close(extra)  # one connection a message
            if fds:
                task = asyncio.create_task(self._take(head, fds[0]))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _take(self, head: bytes, fd: int) -> None:
        try:
            conn = socket.socket(fileno=fd)
        except OSError:
            os.close(fd)
            return
        try:
            conn.setblocking(False)
            _, protocol = await asyncio.get_running_loop().connect_accepted_socket(self.server, conn)
        except OSError as e:
            log.info("a handed-over connection was gone before it was taken (%s)", e)
            conn.close()
            return
        protocol.data_received(head)
        if self.on_taken is not None:
            self.on_taken()

    def close(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self._sock.fileno())
            self._sock.close()
            self._sock = None
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        for t in self._tasks:
            t.cancel()
