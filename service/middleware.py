"""What every request passes through: one access-log line, and one error answer.

Every error a client can cause is answered with a typed JSON error to that client
only: a :class:`service.errors.ServiceError` as it says, a rule the kernel or a
table refused (:class:`verifier.errors.RuleError`) with its status, a table that did
not answer in time ``busy``, a database that is away ``unavailable`` when nothing
was written, ``outcome_unknown`` when a write may have been (service.once).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from service.db import AWAY, REFUSING
from service.errors import ServiceError
from service.handover import HandedOver
from service.ledger import LedgerError
from verifier.errors import RuleError

log = logging.getLogger("rummy.app")


RETRY_AFTER_SECONDS = 2


def error_response(
    status: int, code: str, message: str, rule: str | None = None, ack: dict[str, Any] | None = None
) -> web.Response:
    body: dict[str, Any] = {"error": {"code": code, "message": message}}
    if rule:
        body["error"]["rule"] = rule
    if ack is not None:  # a move the table judged and refused: the server's signed ack (§15)
        body["error"]["ack"] = ack
    # a 503 is a server busy or between states, a 429 a client over its share: the
    # client is told when to come back
    headers = {"Retry-After": str(RETRY_AFTER_SECONDS)} if status in (429, 503) else None
    return web.json_response(body, status=status, headers=headers)


RULE_STATUS = {
    # A well-formed request the state of things refuses is a 409 (not a 400: nothing in
    # the request was wrong; not a 402, which RFC 9110 reserves).
    "insufficient_balance": 409,
    "ledger_full": 409,  # a balance would pass bigint (service.ledger._post)
    "no_player_key": 409,
    "seat_taken": 409,
    "already_seated": 409,
    "not_seated": 409,
    "no_such_seat": 409,  # seat 6 of a table of 4: the schema allows it, this table has none
    "table_full": 409,
    "hand_over": 409,
    "void_owes_move": 409,  # the house owes a seat its move (D35): the operator voids later (D33)
    "table_closed": 409,
    "no_such_hand": 404,
    "unavailable": 503,
    "shutting_down": 503,
}


def outcome_unknown(what: str) -> web.Response:
    """503 ``outcome_unknown``: a write that may have been done or not (``what`` says
    why nobody can tell); sent again with its Idempotency-Key it is done at most once."""
    return error_response(
        503, "outcome_unknown", f"{what}: what it asked may have been done or not; look before you send it again"
    )


access = logging.getLogger("rummy.access")


@web.middleware
async def access_log(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """One line per request (with ``--log-format json``, one JSON object)."""
    started = time.perf_counter()
    status = 500
    handed = False
    try:
        response = await handler(request)
        status = response.status
        handed = isinstance(response, HandedOver)
        return response
    except web.HTTPException as e:
        status = e.status
        raise
    finally:
        if handed:  # the worker that serves the table logs it
            access.debug("%s %s handed over to a sibling worker", request.method, request.path)
        elif request.path != "/ws" or status != 101:
            access.info(
                "%s %s %d %.1fms",
                request.method,
                request.path,
                status,
                (time.perf_counter() - started) * 1000,
                extra={"method": request.method, "path": request.path, "status": status, "remote": request.remote},
            )


@web.middleware
async def errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    try:
        return await handler(request)
    except LedgerError as e:  # insufficient_balance is the state's refusal (409), the rest bad input (400)
        return error_response(RULE_STATUS.get(e.code, e.status), e.code, e.message)
    except ServiceError as e:
        return error_response(e.status, e.code, e.message, e.rule, getattr(e, "ack", None))
    except RuleError as e:  # the kernel's errors and the server's ClientError
        return error_response(RULE_STATUS.get(e.code, 400), e.code, e.message, e.rule, getattr(e, "ack", None))
    except TimeoutError:
        return error_response(503, "busy", "the server did not answer in time; check before you try again")
    except web.HTTPRedirection:
        raise
    except web.HTTPException as e:
        if e.status >= 400:
            code = {404: "not_found", 405: "method_not_allowed", 413: "message_too_large"}.get(e.status, "bad_request")
            return error_response(e.status, code, e.reason)
        raise
    except (*AWAY, *REFUSING) as e:  # away, recovering, out of disk
        log.warning("%s %s: the database is away (%s)", request.method, request.path, type(e).__name__)
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return error_response(503, "unavailable", "the database is unavailable right now; nothing was changed")
        # A write cut off after it was sent may have been stored, and nothing here can
        # tell: ``unavailable`` promises that nothing was (service.once's commands and
        # the token's check say which they know).
        return outcome_unknown("the database went away while this request was being served")
    except Exception as e:  # a fault of the server's own (a bug): still a typed answer, and logged whole
        if request.path == "/ws" or isinstance(e, ConnectionError):
            raise  # a socket's own end (its response already begun), or a client gone: nothing to answer
        log.exception("%s %s: an internal error", request.method, request.path)
        code = "internal_error"  # before: aiohttp's plain-text 500 (the audit h82)
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return error_response(500, code, "the server failed to answer this request; nothing was changed")
        # A write whose outcome the server cannot tell: as when the database went away
        # mid-request (above), and a command sent again with its Idempotency-Key is done at
        # most once.  (A 500 here made the crash drill's cashier, which sends a deposit
        # again only after a 503 or no answer, report a problem once in CI: an exception
        # no handler maps, raised while the server and PostgreSQL were being killed; its
        # traceback is now logged.)
        return outcome_unknown("the server failed while serving this request")


class _QuietBadRequests(logging.Filter):
    """aiohttp logs a malformed HTTP request (an over-long header, a bad
    Content-Length) as an error with a traceback, though it is the client's fault and
    is answered 400: log it as one warning line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError) and exc.code == 400:
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.msg = f"{record.getMessage()}: refused a malformed request ({exc.message.splitlines()[0][:120]})"
            record.args = ()
            record.exc_info = None
            record.exc_text = None
        return True


logging.getLogger("aiohttp.server").addFilter(_QuietBadRequests())
