"""Every answer a connection's message gets is collected (issue 20's memory, and the
"Future exception was never retrieved" lines found in the server's log): a move the
table refuses and answers itself, in order with its pushes, leaves no unread error
behind for asyncio to complain of when the connection's reply memory lets it go."""

from __future__ import annotations

import asyncio
import gc
import logging
from typing import Any

import pytest

from service import api_ws, table
from service.replies import REPLY_SECONDS, SENT_SECONDS
from service.startup import Running
from tests.conftest import Api, wait_for
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


async def test_a_sent_reply_is_kept_briefly_one_told_busy_until_it_is_sent(
    api: Api, server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """service.replies over a real socket: a reply the connection has sent is kept
    SENT_SECONDS (its client has it, or the connection is gone); one the client was
    told ``busy`` for is kept REPLY_SECONDS after its answer, until it is asked for
    again and sent, and then a repeat still gets it."""
    from service.appkeys import SOCKETS

    table = await api.table(seats=4, point_value=1)
    p = await api.player("asker")
    now = [5000.0]  # the memory's clock: still, so each bound is read exactly
    async with Client(server.url, p["token"], p["signer"]) as c:
        assert (await c.request({"type": "join", "table_id": table}))["type"] == "reply"
        (conn,) = [k for k in server.app[SOCKETS].values() if k.player_id == p["id"]]
        conn.replies.now = lambda: now[0]
        sat = await c.request({"type": "sit", "table_id": table}, msg_id="s1")
        assert sat["type"] == "reply"
        kept = conn.replies.recall("s1")
        assert kept is not None
        # The socket's handler marks it sent once its wait for the table returns, which
        # may come a turn of the loop after the client has read the reply.
        await wait_for(lambda: kept.sent and kept.until is not None)
        assert kept.until == now[0] + SENT_SECONDS
        # A table slower than the socket's wait: the client is told busy, nothing sent.
        monkeypatch.setattr(api_ws, "TABLE_ANSWER_SECONDS", 0)
        told = await c.request({"type": "leave", "table_id": table}, msg_id="l1")
        assert told["type"] == "error" and told["error"]["code"] == "busy", told
        await wait_for(lambda: (r := conn.replies.recall("l1")) is not None and r.text is not None)
        held = conn.replies.recall("l1")
        assert held is not None and not held.sent and held.until == now[0] + REPLY_SECONDS
        now[0] += SENT_SECONDS + 1  # past a sent reply's time, within this one's
        assert conn.replies.recall("s1") is None and conn.replies.recall("l1") is held
        again = await c.request({"type": "leave", "table_id": table}, msg_id="l1")
        assert again["type"] == "reply" and again["replayed"] is True, again
        assert again["result"]["left"] == sat["result"]["seat"], again
        assert held.sent and held.until == now[0] + SENT_SECONDS
        once_more = await c.request({"type": "leave", "table_id": table}, msg_id="l1")
        assert once_more == again  # the same reply, applied once
        # The connection sends nothing more: the server's sweep forgets the reply on time.
        assert [t for t in asyncio.all_tasks() if t.get_name() == "reply-sweep"]
        now[0] += SENT_SECONDS
        await wait_for(lambda: len(conn.replies) == 0)  # within SWEEP_SECONDS, unasked
