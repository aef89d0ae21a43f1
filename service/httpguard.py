"""HTTP connections that cannot be held open for nothing (issue 18 item 6).

aiohttp reads a request's head for as long as the client likes: a "slowloris" client
that opens hundreds of sockets and sends a header byte now and then keeps each one
open for good.  Here a connection must deliver a complete request head within
``header_seconds`` of opening, or of the first byte of its next request, else it is
closed; an idle keep-alive connection (between requests) is closed after
``idle_seconds`` (aiohttp's keep-alive timeout).  A request being answered (and a
WebSocket, which is one long request) is not limited here: the handlers bound their
own reads (a body is at most 8 KiB, service.wire).

:class:`GuardedRunner` is ``web.AppRunner`` with these limits.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest
from aiohttp.web_server import Server

log = logging.getLogger("rummy.http")


@dataclass(frozen=True)
class HttpLimits:
    header_seconds: float = 10.0  # to send a whole request head (request line and headers)
    idle_seconds: float = 30.0  # a keep-alive connection between requests

    def __post_init__(self) -> None:
        for name in ("header_seconds", "idle_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 3600:
                raise ValueError(f"{name} must be more than 0 and at most 3600 seconds, not {value!r}")


class GuardedHandler(RequestHandler):
    """aiohttp's connection handler with a deadline for each request head."""

    def __init__(self, manager: Server, *, header_seconds: float, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._header_seconds = header_seconds
        self._head_deadline: asyncio.TimerHandle | None = None
        self._answering = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if not self._answering and data:
            self._arm()  # the first byte of a new request head: its clock starts

    def connection_lost(self, exc: BaseException | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    async def _handle_request(
        self,
        request: BaseRequest,
        start_time: float | None,
        request_handler: Callable[[BaseRequest], Awaitable[web.StreamResponse]],
    ) -> tuple[web.StreamResponse, bool]:
        self._answering = True
        self._disarm()
        try:
            return await super()._handle_request(request, start_time, request_handler)
        finally:
            self._answering = False

    def _arm(self) -> None:
        if self._head_deadline is None:
            self._head_deadline = self._loop.call_later(self._header_seconds, self._too_slow)

    def _disarm(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _too_slow(self) -> None:
        self._head_deadline = None
        if self._answering:
            return
        log.info("closed a connection that sent no complete request head in %.0f s", self._header_seconds)
        self.force_close()


class GuardedServer(Server):
    def __init__(self, *args: Any, header_seconds: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_seconds = header_seconds

    def __call__(self) -> RequestHandler:
        return GuardedHandler(self, loop=self._loop, header_seconds=self.header_seconds, **self._kwargs)


class GuardedRunner(web.AppRunner):
    """``web.AppRunner`` whose connections keep :class:`HttpLimits`."""

    def __init__(self, app: web.Application, *, limits: HttpLimits | None = None, **kwargs: Any) -> None:
        self.limits = limits or HttpLimits()
        super().__init__(app, keepalive_timeout=self.limits.idle_seconds, **kwargs)

    async def _make_server(self) -> Server:
        plain = await super()._make_server()
        return GuardedServer(
            plain.request_handler,
            request_factory=plain.request_factory,
            handler_cancellation=plain.handler_cancellation,
            loop=plain._loop,
            header_seconds=self.limits.header_seconds,
            **plain._kwargs,
        )
