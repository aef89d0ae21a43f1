"""Audit of faults (helper h84): a leave sent while the table waits to reload after
the deal's write failed.

The fault.  Between two hands the table writes the next deal (``io.StartOp``) and the
store fails it: an error, or the COMMIT's answer lost (stored or not).  The table
drops its memory and waits a backoff (``Mode.WAITING``) before it reloads.  A player
who leaves in that moment — the last result on its screen, the table told ``paused``
— was refused ``unavailable``.  Its client sends the leave again once the table is
back; by then the reload found the deal stored (the answer was lost), or dealt the
hand again a ``next_hand_delay`` later, and the leave is D36's leave "in the seed
phases": the seat is dealt in, its seed missed, and once dealt the clock plays for
it until it drops it (40 points with ``max_missed_turns`` 3).  A leave that came a
moment earlier, while the deal's write was in flight, is judged before that hand
(D36, ``TableCore.behind_deal``); one that came while the house was recovering from
that same write's failure came no later in the hand's life (nobody had been told the
hand), yet was charged for it.

Who pays: the leaver, for a hand it left before the house had told anyone it was
dealt, because the house's write failed.

Fixed (D36, ``TableCore._command``): a leave with no signature (no hand move) that
reaches the table while it waits to reload, or reloads, after a failed deal's write
is kept like a leave behind the deal and judged first once the table is back: a void
of the hand if the deal was stored, a plain leave if not.
"""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from service.startup import Running
from service.tablecore import io
from service.tablecore.core import Mode
from tests.conftest import wait_for
from tests.pgproxy import PgProxy
from tests.seams import Sockets
from tests.test_audit_crash_leave_behind_deal import (
    HANDS,
    ann_seated_bo_joined,
    deal_in_flight,
    play_out,
    total,
    voided_for_the_leave,
)
from tests.test_recovery import proxied  # noqa: F401 (the fixture)
from tests.test_tablecore import Harness

LOAD = r"SELECT id, hand_no, status, seed_nonce"  # a table's load of its unfinished hand (service.tablestore)


@pytest.mark.parametrize("stored", [True, False], ids=["deal-stored", "deal-not-stored"])
@pytest.mark.parametrize("when", [Mode.WAITING, Mode.LOADING], ids=["waiting", "loading"])
def test_a_leave_sent_while_the_table_recovers_from_a_failed_deal_is_judged_before_that_hand(
    stored: bool, when: Mode
) -> None:
    """Ann and bo sit; the first deal's write comes back without an answer (stored or
    not).  While the table waits to reload (or reloads), bo leaves and closes his page.
    His leave is judged first once the table is back: the hand voided if its deal was
    stored, bo simply stood up if not; bo pays nothing, and nobody is charged."""
    h = Harness()
    before = {p: total(h, p) for p in ("p0", "p1")}
    deal = deal_in_flight(h)
    h.inflight.pop(deal.op_id)
    if stored:
        h.store.run("t0", h.store.tables["t0"].epoch, deal.op)
    h.step(io.Outcome(deal.op_id, io.Result.AMBIGUOUS))
    assert h.core.mode is Mode.WAITING
    if when is Mode.LOADING:
        h.advance(h.core.retry_at or 0, answer=False)
        assert h.core.mode is Mode.LOADING
    h.send("p1", "leave", {})
    cmd_id = h.ids
    h.step(io.Reach("p1", False))
    early = [e for e in h.of(io.Reply) if e.cmd_id == cmd_id]
    assert not early, f"the leave was answered while the table was at fault: {early[0].error or early[0].result}"
    h.advance(h.now + 30_000)
    (reply,) = [e for e in h.of(io.Reply) if e.cmd_id == cmd_id]
    assert reply.error is None and reply.result["charged"] is False, reply
    assert ("voided" in reply.result) is stored
    assert h.core.facts is not None and "p1" not in h.core.facts.seats.values()
    assert h.core.hand is None, "ann alone is not dealt a hand"
    assert {p: total(h, p) for p in ("p0", "p1")} == before
    assert {p: h.store.held[p] for p in ("p0", "p1")} == {"p0": 0, "p1": 0}
    assert h.charges() == []


def test_a_leave_refused_while_waiting_after_a_failed_deal_was_charged_when_sent_again() -> None:
    """What the fix prevents, as the client saw it before: bo's leave refused while the
    table waited after the failed deal, sent again after the reload found the deal
    stored.  Now the first leave is kept, so the hand is voided; the leave sent again
    finds bo without a seat (``not_seated``) and he pays nothing for the hand."""
    h = Harness()
    before = total(h, "p1")
    deal = deal_in_flight(h)
    h.inflight.pop(deal.op_id)
    h.store.run("t0", h.store.tables["t0"].epoch, deal.op)  # the deal stored, its answer lost
    h.step(io.Outcome(deal.op_id, io.Result.AMBIGUOUS))
    h.send("p1", "leave", {})
    h.advance(h.now + 1000)  # the table is back
    h.send("p1", "leave", {})  # bo's client sends it again
    again = h.ids
    h.step(io.Reach("p1", False))
    h.answer_all()
    (reply,) = [e for e in h.of(io.Reply) if e.cmd_id == again]
    assert reply.error is not None and reply.error.code == "not_seated", reply
    if h.core.hand is not None:  # (before the fix: bo was dealt in and the clock played for him)
        play_out(h, "p0")
    assert total(h, "p1") == before
    assert [c for _, c in h.charges() if c.seat == 1] == []


@pytest.mark.timeout(300)
async def test_on_a_real_server_a_leave_sent_while_the_table_reloads_after_a_lost_deal_is_not_charged(
    proxied: tuple[Running, PgProxy],  # noqa: F811
) -> None:
    """A server alone, its PostgreSQL behind the proxy.  Ann sits, then bo; the deal is
    stored and PostgreSQL's answer to its COMMIT is lost (the connection cut), and the
    reload that follows is held in PostgreSQL's socket.  Bo leaves meanwhile and closes
    his page once answered.  The hand is voided in its commit window (D36): ann is
    told so, bo is stood up, and neither pays anything.  (Before: bo's leave was
    judged after the load as a leave in the seed phases, and the clock played for him
    until it dropped him.)"""
    server, proxy = proxied
    async with aiohttp.ClientSession() as session, Sockets(proxy) as sockets:
        table, b, ca, cb, before, actor = await ann_seated_bo_joined(server, session, sockets)
        proxy.withhold(LOAD, forward=True)  # the reload's read of the hand waits in the proxy
        proxy.drop_commit_reply(HANDS)  # the deal is stored; its answer is lost
        assert (await cb.request({"type": "sit", "table_id": table}))["type"] == "reply"
        await wait_for(lambda: proxy.dropped and actor.core.mode is Mode.LOADING and proxy.holding > 0, timeout=60)
        leave = asyncio.create_task(cb.request({"type": "leave", "table_id": table}, timeout=60))
        await wait_for(lambda: len(actor.core.queue) > 0, timeout=30)  # bo's leave, waiting for the reload
        proxy.let_go()
        await voided_for_the_leave(server, actor, leave, ca, cb, b, before)
