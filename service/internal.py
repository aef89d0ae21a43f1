"""How the workers of one server talk: each listens on a Unix socket of the server's
run directory (mode 0700: this user only), never on the network.

A REST command for a table a sibling serves (sit, leave, close, stand, void, the
table's state) is forwarded there and answered here, word for word: nothing is ever
redirected to a worker's own address.  ``/healthz`` asks every sibling how it is
(:mod:`service.health`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import aiohttp
from aiohttp import web

from service import health
from service.appkeys import METRICS, TABLES
from service.errors import OutcomeUnknown, ServiceError
from service.middleware import errors
from service.worker import WorkerPlan

log = logging.getLogger("rummy.internal")

MAIN = web.AppKey("main", web.Application)
ANSWER_SECONDS = 35.0  # the table answers within 30 s (service.table), or says it is busy


class Forwarded(ServiceError):
    """A sibling's answer that is an error, as the sibling gave it (its status, code,
    message, rule, and a refused move's signed ack)."""

    def __init__(self, status: int, error: dict[str, Any]) -> None:
        super().__init__(
            str(error.get("message", "")),
            code=str(error.get("code", "server_error")),
            status=status,
            rule=error.get("rule"),
        )
        self.ack = error.get("ack")


class SiblingAway(ServiceError):
    code, status = "unavailable", 503


class Siblings:
    """Calls to the other workers of this server over their internal sockets."""

    def __init__(self, plan: WorkerPlan) -> None:
        self.plan = plan
        self._sessions: dict[int, aiohttp.ClientSession] = {}

    def _session(self, index: int) -> aiohttp.ClientSession:
        s = self._sessions.get(index)
        if s is None or s.closed:
            s = aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(self.plan.sock(index))))
            self._sessions[index] = s
        return s

    async def call(self, index: int, method: str, path: str, body: Any = None, timeout: float = ANSWER_SECONDS) -> Any:
        """The sibling's JSON answer; its error answers raise :class:`Forwarded`, a
        sibling that cannot be reached :class:`SiblingAway` (nothing was sent).  A
        command (not a GET) the sibling was sent and did not answer may have been done
        there: :class:`OutcomeUnknown`, or ``busy`` (a TimeoutError, as the table's own
        wait says) when the sibling did not answer in time — never "unavailable", which
        tells the client that nothing was done and to send it again (a stand-up sent
        again stands up whoever sat down meanwhile)."""
        try:
            async with self._session(index).request(
                method, f"http://w{index}{path}", json=body, timeout=aiohttp.ClientTimeout(total=timeout)
            ) as r:
                data = await r.json()
                status = r.status
        except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as e:
            if method == "GET" or isinstance(e, aiohttp.ClientConnectorError):  # a read, or never sent
                raise SiblingAway(
                    f"worker {index} of this server does not answer right now ({type(e).__name__}); try again soon"
                ) from e
            if isinstance(e, TimeoutError):
                raise  # answered ``busy``: not answered in time; check before you try again
            log.warning("worker %d took %s %s and its answer was lost (%s)", index, method, path, type(e).__name__)
            raise OutcomeUnknown(
                f"worker {index} of this server took the command and its answer was lost ({type(e).__name__}):"
                " it may have been done; look before you send it again"
            ) from e
        if status >= 400:
            raise Forwarded(status, data.get("error", {}) if isinstance(data, dict) else {})
        return data

    async def close(self) -> None:
        for s in self._sessions.values():
            with contextlib.suppress(Exception):
                await s.close()
        self._sessions.clear()


SIBLINGS = web.AppKey("siblings", Siblings)


class RemoteTable:
    """A table a sibling serves: its commands are sent there."""

    def __init__(self, siblings: Siblings, index: int, table_id: str) -> None:
        self.siblings, self.index, self.table_id = siblings, index, table_id

    async def submit(self, kind: str, player_id: str, payload: dict[str, Any], timeout: float = 30) -> dict[str, Any]:
        # answer_by: the moment (the host's monotonic clock, the same in every worker) after
        # which the caller has given up; a sibling that reads the command only later (it
        # stood still meanwhile) refuses it, rather than do it long after its caller was
        # told busy
        answer_by = time.monotonic() + timeout
        body = {"kind": kind, "player_id": player_id, "payload": payload, "timeout": timeout, "answer_by": answer_by}
        result: dict[str, Any] = await self.siblings.call(
            self.index, "POST", f"/internal/tables/{self.table_id}/submit", body, timeout + 5
        )
        return result

    async def describe(self) -> dict[str, Any]:
        result: dict[str, Any] = await self.siblings.call(self.index, "GET", f"/internal/tables/{self.table_id}")
        return result


# ----------------------------------------------------------------------------- the sibling's side
def _local(request: web.Request) -> Any:
    main = request.app[MAIN]
    a = main[TABLES].get(request.match_info["table_id"])
    if a is None:  # it moved again meanwhile: the caller's client tries again
        raise ServiceError(
            "the table moved between this server's workers; try again in a moment", code="unavailable", status=503
        )
    return a


async def _submit(request: web.Request) -> web.Response:
    data = await request.json()
    a = _local(request)
    timeout = min(30.0, float(data.get("timeout", 30)))
    if "answer_by" in data:
        timeout = min(timeout, float(data["answer_by"]) - time.monotonic())
        if timeout <= 0:  # read after its caller gave up (this worker stood still): not done
            raise ServiceError(
                "the command reached the table's worker after its caller stopped waiting; nothing was done",
                code="unavailable",
                status=503,
            )
    result = await a.submit(str(data["kind"]), str(data["player_id"]), dict(data["payload"]), timeout=timeout)
    return web.json_response(result)


async def _describe(request: web.Request) -> web.Response:
    from service.api_tables import describe

    return web.json_response(describe(_local(request)))


async def _health(request: web.Request) -> web.Response:
    return web.json_response(await health.local(request.app[MAIN]))


async def _live(request: web.Request) -> web.Response:
    """This worker's gauges, for the metrics of the whole server."""
    return web.json_response(request.app[MAIN][METRICS].read_live())


def make_internal_app(main: web.Application) -> web.Application:
    app = web.Application(middlewares=[errors])
    app[MAIN] = main
    app.router.add_post("/internal/tables/{table_id}/submit", _submit)
    app.router.add_get("/internal/tables/{table_id}", _describe)
    app.router.add_get("/internal/health", _health)
    app.router.add_get("/internal/live", _live)
    return app


async def gather_live(siblings: Siblings, timeout: float = 2.0) -> list[dict[str, tuple[str, float]]]:
    """Every sibling's gauges (a sibling that does not answer adds nothing: its
    counters are in the shared files all the same)."""

    async def one(index: int) -> dict[str, tuple[str, float]]:
        try:
            got = await siblings.call(index, "GET", "/internal/live", timeout=timeout)
        except ServiceError:
            return {}
        return {str(k): (str(v[0]), float(v[1])) for k, v in got.items()} if isinstance(got, dict) else {}

    others = [i for i in range(1, siblings.plan.count + 1) if i != siblings.plan.index]
    return list(await asyncio.gather(*(one(i) for i in others)))


async def gather_health(siblings: Siblings, timeout: float = 2.0) -> list[dict[str, Any]]:
    """Every sibling's state, or why it gave none."""

    async def one(index: int) -> dict[str, Any]:
        try:
            state: dict[str, Any] = await siblings.call(index, "GET", "/internal/health", timeout=timeout)
            return state
        except ServiceError as e:
            return {"worker": index, "ok": False, "error": e.message}

    others = [i for i in range(1, siblings.plan.count + 1) if i != siblings.plan.index]
    return list(await asyncio.gather(*(one(i) for i in others)))
