"""Operator commands that store, told once (docs/api.md, "Sending a command again").

A command that changes the database runs in one transaction with its audit row,
and the answer says which of three things happened:

* it was stored (the answer), or refused and nothing stored (the refusal);
* the database went away before the COMMIT was sent: nothing was stored
  (``unavailable``);
* the connection broke while the COMMIT was on its way or its answer was, or the
  answer did not come within the statement timeout: PostgreSQL may have stored it or
  not, and this server cannot know (``outcome_unknown``).
  Before this module the last case was answered "nothing was changed", and a client
  that believed it and sent a deposit again could be credited twice.

A deposit, a withdrawal or a new table may carry an ``Idempotency-Key`` header: the key, a
fingerprint of what was asked and the answer are stored in the command's own
transaction, so the same command sent again with the same key is answered from the
store (``Idempotent-Replayed: true``) and moves or creates nothing; the same key with another
command is refused (409 ``idempotency_key_reused``: the state of things, the key
taken, refuses it).  Two sendings at once wait for each other on the key's row:
one does it, the other reads its answer.  A refused command stores no key:
sent again, it is judged again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import asyncpg
from aiohttp import web

from service import store
from service.appkeys import POOL
from service.db import AWAY, REFUSING, NothingStored, connection
from service.edge import audit_refusal
from service.errors import OutcomeUnknown, ServiceError
from service.wire import IDEMPOTENCY_HEADER, IDEMPOTENCY_KEY, IDEMPOTENT_REPLAYED
from verifier.errors import RuleError

log = logging.getLogger("rummy.once")

KEEP_DAYS = 7  # a key is remembered this long (sql/008_operator_requests.sql)

#: What a command does inside the transaction: its HTTP status and JSON answer.
Work = Callable[[asyncpg.Connection], Awaitable[tuple[int, dict[str, Any]]]]


@contextlib.asynccontextmanager
async def committing(conn: asyncpg.Connection, what: str, check: str) -> AsyncIterator[None]:
    """One transaction whose end is told apart: a body that fails rolls back (the
    database away before the COMMIT: :class:`NothingStored`); a COMMIT sent whose answer
    never came raises :class:`OutcomeUnknown`, its message ending with ``check``: how
    to learn what happened."""
    tx = conn.transaction()
    try:
        await tx.start()
    except (*AWAY, *REFUSING) as e:
        raise _not_stored(what) from e
    try:
        yield
    except BaseException as e:
        # No COMMIT was sent: rolled back here, or by PostgreSQL with the connection, or
        # by the pool (asyncpg rolls back a connection released inside a transaction)
        if not conn.is_closed():
            with contextlib.suppress(*AWAY, *REFUSING):
                await tx.rollback()
        if isinstance(e, (*AWAY, *REFUSING)):  # a statement not answered in time too (AWAY)
            raise _not_stored(what) from e
        raise
    if conn.is_closed():  # closed before the COMMIT was written: the transaction died with it
        raise _not_stored(what)
    try:
        await tx.commit()
    except (*AWAY, *REFUSING) as e:
        log.warning("the database's answer to the COMMIT of %s was lost (%s)", what, type(e).__name__)
        raise OutcomeUnknown(
            f"the database's answer to the COMMIT of {what} was lost ({type(e).__name__}): it may have been stored"
            f" or not; {check}"
        ) from e


def key_of(request: web.Request) -> str | None:
    """The request's ``Idempotency-Key``, if it has one: 8–100 letters, digits and
    ``._:-`` (a UUID fits)."""
    key = request.headers.get(IDEMPOTENCY_HEADER)
    if key is not None and not IDEMPOTENCY_KEY.fullmatch(key):
        raise ServiceError(
            f"{IDEMPOTENCY_HEADER} is 8 to 100 characters of letters, digits and . _ : - (a UUID fits)",
            code="bad_idempotency_key",
        )
    return key


def fingerprint(action: str, target: str | None, params: dict[str, Any]) -> bytes:
    return hashlib.sha256(json.dumps([action, target, params], sort_keys=True, separators=(",", ":")).encode()).digest()


#: How to learn whether a command without a key was stored, after ``outcome_unknown``
UNKEYED_CHECK = "look (the audit log has the command's row if it was) before you send it again"
KEYED_CHECK = f"send it again with the same {IDEMPOTENCY_HEADER} to learn which (without one: {UNKEYED_CHECK})"


async def run_once(
    request: web.Request,
    action: str,
    target: str | None,
    params: dict[str, Any],
    work: Work,
    *,
    keyed: bool = False,
    check: str = UNKEYED_CHECK,
) -> web.Response:
    """Run an operator command in one transaction with its audit row (refusals are
    audited too, in a transaction of their own); with ``keyed``, honour the
    request's ``Idempotency-Key``.  ``check``: what the answer ``outcome_unknown``
    tells the client to do."""
    what = f"the {action.replace('_', ' ')}"
    pool = request.app[POOL]
    mark = fingerprint(action, target, params)
    key: str | None = None
    try:
        key = key_of(request) if keyed else None
        async with connection(pool) as conn:
            if key is not None:
                stored = await _stored(conn, key, mark)
                if stored is not None:
                    return stored
            async with committing(conn, what, KEYED_CHECK if keyed else check):
                # a sending of the same key at the same moment waits here until this transaction ends
                if key is not None and not await store.claim_request(conn, key, mark, KEEP_DAYS):
                    raise _Taken  # sent twice at once: the other sending stored it meanwhile
                status, answer = await work(conn)
                await store.audit(conn, action, target, params, "done")
                if key is not None:
                    await store.answer_request(conn, key, status, answer)
    except _Taken:
        assert key is not None
        async with connection(pool) as conn:
            stored = await _stored(conn, key, mark)
        assert stored is not None, "a key's row is claimed and answered in one transaction"
        return stored
    except OutcomeUnknown as e:
        with contextlib.suppress(*AWAY, *REFUSING, ServiceError):  # the database is likely still away
            async with connection(pool) as conn:
                await store.audit(conn, action, target, params, f"unknown: {e.message}")
        raise
    except (ServiceError, RuleError) as e:
        if not isinstance(e, NothingStored):
            await audit_refusal(request, action, target, params, e)
        raise
    except (*AWAY, *REFUSING) as e:  # before the transaction began, or reading a stored answer
        raise _not_stored(what) from e
    return web.json_response(answer, status=status)


def _not_stored(what: str) -> NothingStored:
    return NothingStored(f"the database is unavailable or went away before {what} was stored; nothing was changed")


class _Taken(Exception):
    """The key's row was committed by another sending while this one waited for it."""


async def _stored(conn: asyncpg.Connection, key: str, mark: bytes) -> web.Response | None:
    """The first answer to ``key``, if a command with it was stored; a key sent with
    another command is refused."""
    row = await store.stored_request(conn, key)
    if row is None:
        return None
    if row.fingerprint != mark:
        raise ServiceError(
            f"this {IDEMPOTENCY_HEADER} was sent before with another command; a key is one command's"
            f" (kept {KEEP_DAYS} days)",
            code="idempotency_key_reused",
            status=409,
        )
    return web.json_response(row.answer, status=row.status, headers={IDEMPOTENT_REPLAYED: "true"})
