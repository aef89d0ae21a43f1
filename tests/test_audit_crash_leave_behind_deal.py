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

Fixed (RULES.md D36, decision of 2026-12-07, night): a ``leave`` that came while the
deal that deals its seat in was being written came before that hand
(``TableCore.behind_deal``).  Once the deal is stored the house voids the hand in its
commit window (D33: nothing dealt, every hold released, the house's seed revealed — a
void before any commitment gives the house no deck to choose), stands the seat up and
deals again without it.  A deal's write that fails keeps such a leave for the reload
(``TableCore._keep``).  The other way — a header that lists a seat withdrawn before the
commitments — would change the protocol for a window of milliseconds on a healthy
store.  The tests below were the audit's two strict xfails; the control shows that a
leave a moment after the deal was stored is still D36's leave in the seed phases.
"""

from __future__ import annotations

import asyncio
import json
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
from tests.test_audit_crash_slow_answer import act, seed_move
from tests.test_recovery import proxied  # noqa: F401 (the fixture)
from tests.test_server import seat_two
from tests.test_tablecore import CFG, Harness
from verifier.transcript import verify_transcript

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


def published(h: Harness, hand_id: str) -> dict[str, Any]:
    """The transcript of ``hand_id`` as the table published it (its canonical JSON)."""
    finish = [e.op for e in h.of(io.Write) if isinstance(e.op, io.FinishOp) and e.op.hand_id == hand_id]
    assert finish, f"hand {hand_id} did not end"
    got: dict[str, Any] = json.loads(finish[-1].transcript)
    return got


def left_behind_the_deal(h: Harness, leaver: str) -> tuple[io.Write, io.Reply]:
    """The table writes a deal (its answer held: the store is slow); ``leaver`` leaves
    meanwhile and closes its page; the store answers, a stall short of a hang.  The
    deal's write and the answer to the leave."""
    deal = deal_in_flight(h)
    assert isinstance(deal.op, io.StartOp) and leaver in {p for _, p in deal.op.candidates}
    h.send(leaver, "leave", {})  # waits behind the deal
    cmd_id = h.ids
    h.step(io.Reach(leaver, False))
    h.advance(h.now + CFG.hung_ms - 100, answer=False)  # a stall, not a hang: nobody is told anything
    h.answer_all()
    (reply,) = [e for e in h.of(io.Reply) if e.cmd_id == cmd_id]
    return deal, reply


def test_a_player_whose_leave_waited_behind_the_deals_write_is_not_charged_for_that_hand() -> None:
    """Ann and bo sit; the first deal is being written when bo leaves the table and
    closes his page.  His leave came before the hand: the hand is voided in its commit
    window, nothing dealt (D36, D33), and neither pays anything; bo is stood up."""
    h = Harness()
    before = {p: total(h, p) for p in ("p0", "p1")}
    _, reply = left_behind_the_deal(h, "p1")
    assert reply.error is None and reply.result["charged"] is False and reply.result["after_hand"] is True
    hand_id = reply.result["voided"]
    assert h.core.hand is None, "the voided hand is over"
    transcript = published(h, hand_id)
    records = transcript["log"]
    assert [r["type"] for r in records] == ["header", "void"], "voided before any commitment"
    assert "seat 1 left while the hand was being dealt (D36)" in records[-1]["reason"]
    report = verify_transcript(transcript, h.keys.signer.public_bytes)
    assert report.ok, report.failure
    assert [c for _, c in h.charges() if c.hand_id == hand_id] == []
    assert {p: total(h, p) for p in ("p0", "p1")} == before
    assert {p: h.store.held[p] for p in ("p0", "p1")} == {"p0": 0, "p1": 0}, "the hand's holds released"
    assert h.core.facts is not None and "p1" not in h.core.facts.seats.values()
    h.advance(h.now + 10 * CFG.next_hand_ms)
    assert h.core.hand is None, "ann alone is not dealt a hand"


def test_the_hand_is_dealt_again_without_the_player_who_left_behind_its_deal() -> None:
    """Three seats; bo leaves while the deal is written: the hand is voided, and the
    next deal (hand_no one more, the button moved on, D3) goes to ann and cy only."""
    h = Harness(players=3)
    deal, reply = left_behind_the_deal(h, "p1")
    assert isinstance(deal.op, io.StartOp)
    assert reply.error is None and "voided" in reply.result
    h.advance(h.now + 2 * CFG.next_hand_ms + 1000)
    hand = h.core.hand
    assert hand is not None, "no hand was dealt again"
    assert hand.hand_no == deal.op.hand_no + 1
    assert dict(hand.players) == {0: "p0", 2: "p2"}
    h.through_seeds()
    assert h.core.hand is hand and hand.phase is HandPhase.PLAY


def test_a_leave_that_came_after_the_deal_was_stored_is_a_leave_in_the_seed_phases() -> None:
    """The control: bo leaves a moment after the deal's write was answered.  That is
    D36's leave during the seed phases, as before: the hand goes on, the clock plays for
    bo and drops him (the fix above voids only for a leave that waited behind the deal)."""
    h = Harness()
    deal = deal_in_flight(h)
    h.answer(deal.op_id)
    hand = h.core.hand
    assert hand is not None and hand.phase is HandPhase.COMMIT
    h.send("p1", "leave", {})
    cmd_id = h.ids
    h.step(io.Reach("p1", False))
    h.answer_all()
    (reply,) = [e for e in h.of(io.Reply) if e.cmd_id == cmd_id]
    assert reply.error is None and reply.result == {"left": 1, "charged": False, "after_hand": True}
    charges = play_out(h, "p0")
    assert [c.seat for c in charges] and {c.seat for c in charges} == {1}
    assert not published(h, hand.hand_id)["log"][-1]["type"] == "void"


@pytest.mark.parametrize("stored", [True, False], ids=["deal-stored", "deal-not-stored"])
def test_a_leave_behind_a_deal_whose_write_failed_is_kept_for_the_reload(stored: bool) -> None:
    """The deal's write comes back without an answer (its COMMIT's answer lost, the
    deal stored or not): the table reloads.  Bo's leave, which waited behind it, is not
    refused ``unavailable`` (he could only send it again into the seed phases and pay
    for the hand, D36): it is judged once the table is back.  The deal stored: the hand
    is voided for it; not stored: bo simply leaves."""
    h = Harness()
    before = total(h, "p1")
    deal = deal_in_flight(h)
    h.send("p1", "leave", {})
    cmd_id = h.ids
    h.step(io.Reach("p1", False))
    h.inflight.pop(deal.op_id)
    if stored:
        h.store.run("t0", h.store.tables["t0"].epoch, deal.op)
    h.step(io.Outcome(deal.op_id, io.Result.AMBIGUOUS))
    assert not [e for e in h.of(io.Reply) if e.cmd_id == cmd_id], "the leave was refused with the write"
    h.advance(h.now + 30_000)
    (reply,) = [e for e in h.of(io.Reply) if e.cmd_id == cmd_id]
    assert reply.error is None and reply.result["charged"] is False
    assert ("voided" in reply.result) is stored
    assert "p1" not in (h.core.facts.seats.values() if h.core.facts else ())
    assert total(h, "p1") == before and h.store.held["p1"] == 0
    assert [c for _, c in h.charges() if c.seat == 1] == []


@pytest.mark.timeout(300)
async def test_on_a_real_server_a_leave_that_waited_behind_the_deal_is_not_charged(
    proxied: tuple[Running, PgProxy],  # noqa: F811
) -> None:
    """A server alone, its PostgreSQL behind the proxy.  Ann sits, then bo; the deal is
    stored and PostgreSQL's answer to its COMMIT is held back (a stalled store); bo
    leaves meanwhile, and closes his page once answered.  The hand is voided in its
    commit window (D36): ann is told so, bo is stood up, and neither pays anything."""
    server, proxy = proxied
    async with aiohttp.ClientSession() as session, Sockets(proxy) as sockets:
        table, b, ca, cb, before, actor = await ann_seated_bo_joined(server, session, sockets)
        proxy.hold_commit_reply(HANDS, 120)
        assert (await cb.request({"type": "sit", "table_id": table}))["type"] == "reply"
        await wait_for(lambda: proxy.holding > 0, timeout=60)  # the deal stored, its answer held
        pending = actor.core.pending
        assert pending is not None and isinstance(pending.op, io.StartOp), pending
        leave = asyncio.create_task(cb.request({"type": "leave", "table_id": table}, timeout=60))
        await wait_for(lambda: len(actor.core.queue) > 0, timeout=30)  # bo's leave, behind the deal
        proxy.let_go()
        await voided_for_the_leave(server, actor, leave, ca, cb, b, before)


@pytest.mark.parametrize("stored", [True, False], ids=["void-stored", "void-not-stored"])
def test_a_void_for_a_leave_whose_write_failed_is_answered_or_made_again_after_the_reload(stored: bool) -> None:
    """Bo's leave waited behind the deal; the deal is answered, and the void made for
    the leave is written — and its answer lost (stored or not).  The table reloads:
    the void stored, the leave is answered from what the reload found; not stored, the
    leave is judged again first and the hand voided then.  Either way bo is stood up
    with the hand's finish and charged nothing."""
    h = Harness()
    before = total(h, "p1")
    deal = deal_in_flight(h)
    h.send("p1", "leave", {})
    cmd_id = h.ids
    h.answer(deal.op_id)
    (void,) = [e for e in h.inflight.values() if isinstance(e, io.Write) and isinstance(e.op, io.UnseatOp)]
    assert isinstance(void.op, io.UnseatOp) and [r["type"] for r in void.op.records] == ["void"]
    h.inflight.pop(void.op_id)
    if stored:
        h.store.run("t0", h.store.tables["t0"].epoch, void.op)
    h.step(io.Outcome(void.op_id, io.Result.AMBIGUOUS))
    h.advance(h.now + 30_000)
    (reply,) = [e for e in h.of(io.Reply) if e.cmd_id == cmd_id]
    assert reply.error is None and reply.result["voided"] == void.op.hand_id and reply.result["charged"] is False
    voids = [r for e in h.of(io.Write) if isinstance(e.op, io.UnseatOp) for r in e.op.records if r["type"] == "void"]
    assert len(voids) == (1 if stored else 2), "the void is made again only when it was not stored"
    assert h.core.facts is not None and "p1" not in h.core.facts.seats.values()
    assert total(h, "p1") == before and h.store.held["p1"] == 0
    assert [c for _, c in h.charges() if c.seat == 1] == []


async def voided_for_the_leave(
    server: Any,
    actor: Any,
    leave: asyncio.Task[dict[str, Any]],
    ca: Any,
    cb: Any,
    leaver: dict[str, Any],
    before: dict[str, Any],
) -> None:
    """D36: the leave (``leave``, of ``leaver`` at ``cb``) is answered with the void of
    the hand it came before, uncharged; the others are told the void, the leaver is
    stood up, and every hold is released (``before``: the balances before the deal)."""
    answered = await leave
    await cb.__aexit__(None, None, None)  # the leaver closes his page
    assert answered["type"] == "reply", answered
    assert answered["result"]["charged"] is False and "voided" in answered["result"], answered
    result = await ca.wait_frame(lambda f: f.get("type") == "result", timeout=60)
    assert result.get("void") is True and "(D36)" in str(result.get("void_reason")), result
    await wait_for(lambda: actor.core.hand is None and leaver["id"] not in actor.core.facts.seats.values())
    async with server.app[POOL].acquire() as conn:
        after = {pid: await ledger.balance(conn, pid) for pid in before}
    for pid, was in before.items():
        now = after[pid]
        assert (now.available, now.held) == (was.available + was.held, 0), (pid, was, now)


async def ann_seated_bo_joined(server: Any, session: aiohttp.ClientSession, sockets: Sockets) -> tuple[Any, ...]:
    """Ann and bo, each at a socket of ``sockets``, joined to a new table; ann seated
    (bo not yet: his sit makes the deal).  Returns the table, bo, their sockets, the
    balances before the deal and the table's actor."""
    table, a, b = await seat_two(Api(server.url, session), server, max_missed_turns=1)
    ca, cb = await sockets.open(server.url, a), await sockets.open(server.url, b)
    for c in (ca, cb):
        assert (await c.request({"type": "join", "table_id": table}))["type"] == "reply"
    assert (await ca.request({"type": "sit", "table_id": table}))["type"] == "reply"
    async with server.app[POOL].acquire() as conn:
        before = {p["id"]: await ledger.balance(conn, p["id"]) for p in (a, b)}
    return table, b, ca, cb, before, server.app[TABLES][table]
