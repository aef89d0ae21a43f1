"""The health of the whole server: the one place where it is decided.

``GET /healthz`` is answered for every worker of the server, whichever worker
receives it: its own state (:func:`local`) and each sibling's, asked over the
internal sockets (:mod:`service.internal`), are put together by :func:`decide`.
It never fails itself: a database that does not answer, paused tables, tables whose
database refuses their writes (a full disk, D37), a worker that does not answer make
it ``503`` with ``"status": "degraded"`` and the reasons.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from aiohttp import web

from service.appkeys import CONFIG, POOL, SOCKETS, TABLES
from service.db import connection

DATABASE_SECONDS = 2.0  # a database that takes longer to answer SELECT 1 is unhealthy


async def local(app: web.Application) -> dict[str, Any]:
    """This process's state: whether its database answers, its tables, the paused
    ones (waiting for their database, D32), its connections; ``problems`` says in
    words what is wrong, if anything."""
    problems: list[str] = []
    try:
        async with asyncio.timeout(DATABASE_SECONDS), connection(app[POOL]) as conn:
            await conn.fetchval("SELECT 1")
    except TimeoutError:
        problems.append(f"the database did not answer within {DATABASE_SECONDS:g} s")
    except Exception as e:  # whatever it is, it is the answer, never a 500
        problems.append(f"the database does not answer ({type(e).__name__}: {str(e)[:200]})")
    tables = list(app[TABLES].values())
    paused = sum(1 for a in tables if a.paused)
    if paused:
        problems.append(f"{paused} table(s) paused, waiting for their database")
    refusing = sum(1 for a in tables if a.refusing and not a.paused)
    if refusing:
        problems.append(
            f"{refusing} table(s) serving between reloads, but their database refuses their writes "
            "(is its disk full?): none stored since"
        )
    return {
        "worker": app[CONFIG].node.node_id,
        "pid": os.getpid(),
        "ok": not problems,
        "problems": problems,
        "tables": len(tables),
        "paused": paused,
        "connections": len(app[SOCKETS]),
    }


def decide(states: list[dict[str, Any]]) -> tuple[int, dict[str, Any]]:
    """The server is ok when every worker answered and is ok: 200, else 503 with
    ``"status": "degraded"`` and every worker's problems.  The tables and paused
    tables are the server's (summed); each worker's state is listed."""
    ok = all(s.get("ok") is True for s in states)
    problems = [
        f"{s.get('worker')}: {p}"
        for s in states
        for p in (s.get("problems") or ([s["error"]] if s.get("error") else []) or ([] if s.get("ok") else ["not ok"]))
    ]
    body = {
        "ok": ok,
        "status": "ok" if ok else "degraded",
        "problems": problems,
        "tables": sum(int(s.get("tables", 0)) for s in states),
        "paused": sum(int(s.get("paused", 0)) for s in states),
        "workers": states,
    }
    return (200 if ok else 503), body
