"""Audit of crashes, stalls and outages (helper h74): a leave that waited behind the
deal's write.

The fault.  Between two hands (the last result on the players' screens, the next deal
``next_hand_delay`` away) a player leaves the table.  The house is writing the next
deal at that moment (``io.StartOp``: the hand's row, each seat's hold, its header —
one transaction, which locks every dealt player's accounts and the house's, so a
settlement of another table, a frozen session holding an account until
``idle_in_transaction_session_timeout``, or a stall of PostgreSQL all hold it up), and
the table takes one write at a time: the ``leave`` waits in the queue behind it.  The
deal is stored with the leaver dealt in (it was connected when the deal was written),
and only then is the leave judged: the hand is in its seed phases, so it is D36's
leave "before the deal" — no move of the hand, the seat stood up when the hand ends,
and "until then the hand goes on as for any absent seat": its commitment is missed,
and once dealt the clock plays for it until it drops it.

Who pays: the leaver, for a hand it left before the house had dealt it (its leave
reached the table first; the house's write was what it waited behind).  Here, with
``max_missed_turns`` 3, the clock draws and discards for it three times and drops it:
a middle drop, 40 points × point value (D15, D22), and its hold is held meanwhile.  A
client still connected at the deal may sign a ``leave`` then (D36): 40 points too.  The
window is the deal's write: milliseconds on a healthy store, a second or two on one
that stalls, as long as a hang lasts (D37: "no hand is dealt" while the house is at
fault — yet this one is, with a player in it who had left during the fault).

The rules it breaks: D37 (the house is at fault while a write is pending; a command
that came while one was in flight, before the clock ran out, is taken in order — here
the order is the house's write first, whose outcome the command could not have known)
and D34/D36's intent (a player who has left is not dealt in; "sitting out" costs
nothing).

Not fixed: the header is signed and stored with the leaver in it before the leave is
judged, and the protocol has no record for a seat withdrawn before its commitment.
Suggested fix: a ``leave`` from a seated player that reaches the table while a deal
that deals it in is being written is taken as a leave *before* that deal: once the
deal is stored, the house voids the hand at once in its commit window (D33: nothing
dealt, every hold released, the seed revealed — a void before any commitment gives
the house no deck to choose) and deals again without the leaver; or the header gains
a way to list a seat withdrawn before the commitments (a null seat that is never
dealt, nor charged).  The simulator (tests/sim) never leaves a table between hands
while a deal is in flight.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import pytest

from service import ledger
from service.app import POOL, TABLES
from service.startup import Running
from service.tablecore import io
from service.tablecore.phase import HandPhase
from tests.conftest import Api, wait_for
from tests.pgproxy import PgProxy
from tests.seams import Sockets
from tests.skipclock import skip_clock
from tests.test_audit_crash_slow_answer import act, seed_move
from tests.test_recovery import proxied  # noqa: F401 (the fixture)
from tests.test_server import latest_view, seat_of, seat_two
from tests.test_tablecore import CFG, Harness
from verifier.fairness import player_commit

HANDS = r"INSERT INTO hands \("  # a hand's start (service.tablestore's _deal)


def deal_in_flight(h: Harness) -> io.Write:
    """Time passes until the table writes a deal; its answer is held: the write."""
    for _ in range(200):
        starts = [e for e in h.inflight.values() if isinstance(e, io.Write) and isinstance(e.op, io.StartOp)]
        if starts:
            return starts[0]
        h.advance(h.now + 50, answer=False)
    raise AssertionError("no deal was written")


def total(h: Harness, pid: str) -> int:
    return h.store.available[pid] + h.store.held[pid]


def play_out(h: Harness, mover: str) -> list[Any]:
    """``mover`` plays every turn of its own (a closed draw, the drawn card discarded),
    and commits and reveals its seed; the clock plays for the other seat; until the
    hand has ended.  The clock's charges of the hand."""
    hand = h.core.hand
    assert hand is not None
    seat = hand.seat_of(mover)
    assert seat is not None
    seed = bytes([seat + 1]) * 32
    h.send(mover, "commit", seed_move(h, mover, seat, "commit", seed))
    h.answer_all()
    while hand.phase is HandPhase.COMMIT:
        h.advance(h.now + 100)
    h.send(mover, "reveal", seed_move(h, mover, seat, "reveal", seed))
    h.answer_all()
    for _ in range(10_000):
        if h.core.hand is not hand:
            return [c for _, c in h.charges() if c.hand_id == hand.hand_id]
        state = hand.recorder.state
        if state is not None and hand.phase is HandPhase.PLAY and hand.players[state.turn] == mover:
            if state.seat(state.turn).drawn_this_turn is None:
                h.draw()
            else:
                act(h, {"kind": "discard", "card": state.seat(state.turn).drawn_this_turn})
            h.answer_all()
            continue
        h.advance(h.now + 250)
    raise AssertionError("the hand did not end")


@pytest.mark.xfail(
    strict=True,
    reason="D36/D37: a leave queued behind the deal's write is judged after it, as a leave in the seed "
    "phases: the leaver is dealt in, and the clock plays for it and drops it (not fixed: h74)",
)
def test_a_player_whose_leave_waited_behind_the_deals_write_is_not_charged_for_that_hand() -> None:
    """Ann and bo sit; the first deal is being written (its answer held: the store is
    slow) when bo leaves the table and closes his page.  Ann plays the hand out."""
    h = Harness()
    before = total(h, "p1")
    deal = deal_in_flight(h)
    assert isinstance(deal.op, io.StartOp) and {p for _, p in deal.op.candidates} == {"p0", "p1"}
    h.send("p1", "leave", {})  # waits behind the deal
    h.step(io.Reach("p1", False))
    h.advance(h.now + CFG.hung_ms - 100, answer=False)  # a stall, not a hang: nobody is told anything
    h.answer_all()
    (reply,) = [e for e in h.of(io.Reply) if e.cmd_id == h.ids]
    assert reply.error is None
    charges = play_out(h, "p0")
    mine = [c for c in charges if c.seat == 1]
    paid = before - total(h, "p1")
    assert mine == [] and paid == 0, (
        f"bo left before the hand was dealt to him (his leave waited behind the deal's write) and was "
        f"charged by the clock {[c.kind for c in mine]}, paying {paid} HT; his leave was answered {reply.result}"
    )


@pytest.mark.xfail(
    strict=True,
    reason="D36/D37: a leave queued behind the deal's write is judged after it, as a leave in the seed "
    "phases: the leaver is dealt in, and the clock drops it (not fixed: h74)",
)
@pytest.mark.timeout(300)
async def test_on_a_real_server_a_leave_that_waited_behind_the_deal_is_not_charged(
    proxied: tuple[Running, PgProxy],  # noqa: F811
) -> None:
    """A server alone, its PostgreSQL behind the proxy, the tables' clock skipped; a
    table whose seat is dropped at its first missed turn.  Ann sits, then bo; the deal
    is stored and PostgreSQL's answer to its COMMIT is held back (a stalled store); bo
    leaves meanwhile, and closes his page once answered.  Ann plays the hand out."""
    server, proxy = proxied
    clock = skip_clock(server)
    async with aiohttp.ClientSession() as session, Sockets(proxy) as sockets:
        table, a, b = await seat_two(Api(server.url, session), server, max_missed_turns=1)
        ca, cb = await sockets.open(server.url, a), await sockets.open(server.url, b)
        for c in (ca, cb):
            assert (await c.request({"type": "join", "table_id": table}))["type"] == "reply"
        assert (await ca.request({"type": "sit", "table_id": table}))["type"] == "reply"
        async with server.app[POOL].acquire() as conn:
            before = await ledger.balance(conn, b["id"])
        actor = server.app[TABLES][table]
        proxy.hold_commit_reply(HANDS, 120)
        assert (await cb.request({"type": "sit", "table_id": table}))["type"] == "reply"
        await wait_for(lambda: proxy.holding > 0, timeout=60)  # the deal stored, its answer held
        pending = actor.core.pending
        assert pending is not None and isinstance(pending.op, io.StartOp), pending
        leave = asyncio.create_task(cb.request({"type": "leave", "table_id": table}, timeout=60))
        await wait_for(lambda: len(actor.core.queue) > 0, timeout=30)  # bo's leave, behind the deal
        proxy.let_go()
        answered = await leave
        await cb.__aexit__(None, None, None)  # bo closes his page
        clock.still = time.time()  # from here the tables' time is only what the test skips
        header = (await ca.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "commit"))["record"]
        hand_no, seat = int(header["header"]["hand_no"]), ca.seat_in(header)
        dealt = [x["player_id"] for x in header["header"]["seats"]]
        assert (await ca.commit(header, player_commit(seat, b"a" * 32)))["type"] == "reply"
        tables = server.app[TABLES].values()

        def seen(kind: str) -> bool:
            return any(f.get("type") == kind or f.get("phase") == kind for f in ca.frames)

        await clock.skip(tables, 30, until=lambda: seen("reveal"))
        commitments = (await ca.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "reveal"))["record"]
        assert (await ca.reveal(commitments, seat, b"a" * 32))["type"] == "reply"
        await clock.skip(tables, 30, until=lambda: seen("result") or any(f.get("i") == 3 for f in ca.frames))
        for _ in range(3):
            if seen("result"):
                break
            view = latest_view(ca)
            if view["turn"] == view["me"]["seat"]:
                got = await ca.act(table, hand_no, seat_of(ca), {"kind": "draw_closed"})
                assert got["type"] == "reply", got
                await wait_for(lambda: latest_view(ca)["phase"] == "discard")
                card = latest_view(ca)["me"]["cards"][0]
                got = await ca.act(table, hand_no, seat_of(ca), {"kind": "discard", "card": card})
                assert got["type"] == "reply", got
            await clock.skip(tables, 60, until=lambda: seen("result"))
        await ca.wait_frame(lambda f: f.get("type") == "result", timeout=60)
        async with server.app[POOL].acquire() as conn:
            after = await ledger.balance(conn, b["id"])
        paid = before.available + before.held - after.available - after.held
        assert paid == 0, (
            f"bo left before the hand was dealt to him (his leave waited behind the deal's write: "
            f"answered {answered.get('result')}; dealt to {dealt}) and paid {paid} HT for it"
        )
