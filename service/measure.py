"""The request metrics: every HTTP request counted by method, route and status,
and timed (:mod:`service.metrics`).  The outermost middleware, so that it sees the
answer the client gets, errors included.  A connection handed to another worker is
counted there, not here."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from service.appkeys import METRICS
from service.handover import HandedOver
from service.metrics import route_of

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def measure(request: web.Request, handler: Handler) -> web.StreamResponse:
    started = time.perf_counter()
    status: int | None = 500
    try:
        response = await handler(request)
        status = None if isinstance(response, HandedOver) else response.status
        return response
    except web.HTTPException as e:
        status = e.status
        raise
    finally:
        if status is not None:
            m = request.app[METRICS]
            route = route_of(request)
            m.requests.labels(request.method, route, str(status)).inc()
            m.request_seconds.labels(route).observe(time.perf_counter() - started)
            if status >= 500:
                m.server_errors.inc()
