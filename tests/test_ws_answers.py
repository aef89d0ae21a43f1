"""Every answer a connection's message gets is collected (issue 20's memory, and the
"Future exception was never retrieved" lines found in the server's log): a move the
table refuses and answers itself, in order with its pushes, leaves no unread error
behind for asyncio to complain of when the connection's reply memory lets it go."""

from __future__ import annotations

import asyncio
import gc
import logging
from typing import Any

from service import api_ws, table
from service.startup import Running
from tests.conftest import Api
from tests.wsclient import Client

UNREAD = "exception was never retrieved"


async def test_refusals_the_table_answered_leave_no_unretrieved_exception(api: Api, server: Running) -> None:
    loop = asyncio.get_running_loop()
    seen: list[str] = []
    before = loop.get_exception_handler()

    def handler(lp: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        seen.append(str(context.get("message")))
        if before is not None:
            before(lp, context)
        else:
            lp.default_exception_handler(context)

    loop.set_exception_handler(handler)
    try:
        table = await api.table(seats=4, point_value=10)
        rich = await api.player("rich")
        poor = await api.player("poor", deposit=1299)  # 130 × 10 = 1300 needed (D20)
        async with (
            Client(server.url, rich["token"], rich["signer"]) as cr,
            Client(server.url, poor["token"], poor["signer"]) as cp,
        ):
            for c in (cr, cp):
                assert (await c.request({"type": "join", "table_id": table}))["type"] == "reply"
            assert (await cr.request({"type": "sit", "table_id": table}))["type"] == "reply"
            again = await cr.request({"type": "sit", "table_id": table})
            assert again["type"] == "error" and again["error"]["code"] == "already_seated", again
            short = await cp.request({"type": "sit", "table_id": table})
            assert short["type"] == "error" and short["error"]["code"] == "insufficient_balance", short
            await api.call("POST", f"/api/tables/{table}/leave", token=rich["token"], expect=200)
        # The connections are gone, and their reply memories with them.
        for _ in range(20):
            gc.collect()
            await asyncio.sleep(0.05)
    finally:
        loop.set_exception_handler(before)
    unread = [m for m in seen if UNREAD in m]
    assert unread == [], unread


async def test_an_answer_nobody_waits_for_any_more_is_let_go_quietly(api: Api, server: Running) -> None:
    """A caller that stopped waiting (a REST call past its timeout, a socket that
    answered ``busy`` and closed) drops the table's future; its refusal is not an
    error of the server's to log."""
    from service.appkeys import TABLES

    loop = asyncio.get_running_loop()
    seen: list[str] = []
    before = loop.get_exception_handler()
    loop.set_exception_handler(lambda lp, context: seen.append(str(context.get("message"))))
    try:
        table = await api.table(seats=4, point_value=1)
        p = await api.player("late")
        await api.call("POST", f"/api/tables/{table}/sit", token=p["token"], expect=200)
        actor = server.app[TABLES][table]
        fut = actor.enqueue("sit", p["id"], {})
        await asyncio.wait([fut], timeout=30)
        assert fut.done()
        del fut  # nobody reads it
        for _ in range(5):
            gc.collect()
            await asyncio.sleep(0.01)
        await api.call("POST", f"/api/tables/{table}/leave", token=p["token"], expect=200)
    finally:
        loop.set_exception_handler(before)
    assert [m for m in seen if UNREAD in m] == []


async def test_a_commands_unexpected_failure_is_logged_once(caplog: Any) -> None:
    """A table command that fails unexpectedly (not a rule error) is logged by the table
    as it fails, with its traceback; the socket's answer, ``server_error``, does not log
    it a second time.  An error that did not come from a table is still logged there."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[dict[str, Any]] = loop.create_future()
    fut.add_done_callback(table._refusal_read)  # as TableActor.enqueue does
    try:
        raise ValueError("a bug in a table command")
    except ValueError as e:
        fut.set_exception(e)
    with caplog.at_level(logging.ERROR):
        await asyncio.wait([fut])
        reply = api_ws._reply_for("m1", fut)
        assert reply["error"]["code"] == "server_error"
        failed = [r for r in caplog.records if r.exc_info and isinstance(r.exc_info[1], ValueError)]
        assert [r.getMessage() for r in failed] == ["a table command failed"], failed
        other: asyncio.Future[dict[str, Any]] = loop.create_future()
        other.set_exception(KeyError("elsewhere"))
        assert api_ws._reply_for("m2", other)["error"]["code"] == "server_error"
        assert any(r.getMessage() == "message m2 failed" for r in caplog.records)
