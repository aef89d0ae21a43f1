"""D37: a stall of the node too short to be taken for standing still (a stop of a
second or two, a long collection, a starved process) charges no seat whose move
waited, unread, in its socket.  Found by an audit (a worker of ``serve --workers 2``
stopped 1.5-2 s across a deadline): the clock's late wake was stepped before the
socket was read, so the seat on turn was charged a missed turn — or, in the reveal
window, a first drop — for a move it had sent in time.

The stall is played on the table's own clock (tests/skipclock.py): the move is
written to the socket, then the clock jumps past the deadline and the table's wake
is stepped before the server reads the move, the order a real stall gives."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from service.startup import Running
from service.table import TableActor
from service.tablecore import io
from tests.conftest import Api
from tests.skipclock import SkipClock, clocked
from tests.test_server import latest_view, seat_of, seat_two, seated, through_seeds
from tests.wsclient import Client
from verifier.fairness import player_commit
from verifier.transcript import verify_transcript


def clock_moves(c: Client) -> list[dict[str, Any]]:
    return [e for f in c.frames if f.get("type") == "update" for e in f["events"] if e["kind"] == "clock"]


def stall(actor: TableActor, clock: SkipClock, jump: float) -> None:
    """The node stands still ``jump`` s (the table's clock jumps), and its late wake is
    stepped before anything the sockets hold is read."""
    clock.skipped += jump
    actor.inputs.put_nowait(io.Tick())


async def to_before_the_deadline(actor: TableActor, clock: SkipClock, before: float) -> None:
    armed = actor.core.armed
    assert armed is not None
    await clock.skip([actor], (armed - int(clock() * 1000)) / 1000 - before)


async def draw_across_a_stall(
    c: Client, actor: TableActor, clock: SkipClock, table: str, hand_no: int, jump: float, before: float
) -> dict[str, Any]:
    """``c`` sends a draw ``before`` s ahead of its turn's end, read only after the
    node stood still ``jump`` s."""
    seat = seat_of(c)
    await to_before_the_deadline(actor, clock, before)
    prev = c.head()
    sig = c.sign(table, hand_no, prev, {"kind": "draw_closed", "seat": seat})
    msg = {"type": "action", "table_id": table, "hand_no": hand_no, "action": {"kind": "draw_closed"}}
    draw = asyncio.create_task(c.request({**msg, "prev": prev, "sig": sig}, msg_id="draw-1"))
    await asyncio.sleep(0)  # the draw is written to the socket; the server has not read it yet
    stall(actor, clock, jump)
    return await draw


async def test_a_draw_sent_before_a_short_stall_across_the_deadline_is_taken_and_the_turn_goes_on(
    api: Api, server: Running
) -> None:
    table, a, b = await seat_two(api, server, turn_seconds=5, max_missed_turns=3)
    actor, clock = await clocked(server, table)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        hand_no = await through_seeds(table, ca, cb)
        view = latest_view(ca)
        c = ca if view["turn"] == view["me"]["seat"] else cb
        # last awake 1.5 s before the turn's end; the wake comes 0.9 s after it (a
        # 2.4 s gap: under the 3 s of a freeze, which would give every seat its grace)
        drawn = await draw_across_a_stall(c, actor, clock, table, hand_no, jump=2.4, before=1.5)
        assert drawn["type"] == "reply", drawn  # before: stale_head, the clock had drawn for the seat
        assert clock_moves(c) == [], "the seat was charged for the node's stall"
        held = actor.core.hand.owed if actor.core.hand is not None else {}
        assert held, "the stall was not seen (it was taken for a freeze, or for nothing)"
        card = latest_view(c)["me"]["cards"][0]
        discarded = await c.act(table, hand_no, seat_of(c), {"kind": "discard", "card": card})
        assert discarded["type"] == "reply", discarded  # the turn kept what it had left
        assert clock_moves(c) == []
        for cl in (ca, cb):
            await cl.leave(table, hand_no, seat_of(cl))
        result = await ca.wait_frame(lambda f: f.get("type") == "result", timeout=30)
    t = await api.call("GET", result["transcript"], expect=200)
    report = verify_transcript(t)
    assert report.ok, report.failure
    assert not any(r["type"] == "action" and r["action"]["kind"] == "timeout" for r in t["log"])


async def test_a_seat_with_no_connection_is_not_held_by_a_stall(api: Api, server: Running) -> None:
    """D16: the clock moves for an absent seat; nothing of it waits unread, so a stall
    across its deadline gives it nothing back."""
    table, a, b = await seat_two(api, server, turn_seconds=5, max_missed_turns=3)
    actor, clock = await clocked(server, table)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        hand_no = await through_seeds(table, ca, cb)
        view = latest_view(ca)
        c, other = (ca, cb) if view["turn"] == view["me"]["seat"] else (cb, ca)
        await c.__aexit__(None, None, None)  # the seat on turn goes away
        await asyncio.sleep(0.2)
        await to_before_the_deadline(actor, clock, 1.5)
        stall(actor, clock, 2.4)
        moved = await other.wait_frame(lambda f: f.get("type") == "update" and bool(clock_moves(other)), timeout=20)
        assert moved["i"] == 4
        assert not (actor.core.hand.owed if actor.core.hand is not None else {})
        await other.leave(table, hand_no, seat_of(other))
        await other.wait_frame(lambda f: f.get("type") == "result", timeout=30)


async def test_a_reveal_sent_before_a_short_stall_across_the_window_s_end_is_taken(api: Api, server: Running) -> None:
    """The audit's second case: the reveal was refused ``wrong_phase`` and the seat
    was forfeited a first drop (D29) for a reveal it had sent in time."""
    table, a, b = await seat_two(api, server, turn_seconds=30, max_missed_turns=3)
    actor, clock = await clocked(server, table)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        await seated(table, ca, cb)
        seeds = {}
        for c in (ca, cb):
            frame = await c.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "commit")
            seat = c.seat_in(frame["record"])
            seeds[c] = (seat, bytes([seat + 1]) * 32)
            assert (await c.commit(frame["record"], player_commit(seat, seeds[c][1])))["type"] == "reply"

        def revealing(f: dict[str, Any]) -> bool:
            return f.get("type") == "hand" and f.get("phase") == "reveal"

        frames = {c: await c.wait_frame(revealing) for c in (ca, cb)}
        assert (await ca.reveal(frames[ca]["record"], *seeds[ca]))["type"] == "reply"
        await to_before_the_deadline(actor, clock, 1.5)
        late = asyncio.create_task(cb.reveal(frames[cb]["record"], *seeds[cb]))
        await asyncio.sleep(0)  # written to the socket, not read yet
        stall(actor, clock, 2.4)
        revealed = await late
        assert revealed["type"] == "reply", revealed  # before: wrong_phase, and a forfeit of 20 points
        deal = await cb.wait_frame(lambda f: f.get("type") == "update" and f.get("i") == 3)
        assert not [e for e in deal["events"] if e["kind"] == "forfeit"], deal["events"]
        hand_no = deal["hand_no"]
        for c in (ca, cb):
            await c.leave(table, hand_no, seat_of(c))
        result = await ca.wait_frame(lambda f: f.get("type") == "result", timeout=30)
    t = await api.call("GET", result["transcript"], expect=200)
    assert verify_transcript(t).ok
    assert [r["status"] for r in t["log"][2]["reveals"]] == ["revealed", "revealed"]


async def test_a_draw_sent_before_a_stall_that_ends_as_the_turn_does_is_taken(api: Api, server: Running) -> None:
    """The stall the table cannot tell from its own wakes: the loop stands still 0.95 s
    from a second before the turn's end, so no wake of the table comes late — but the
    loop's meter counted the stall (service.stallmeter), and the seat keeps what it
    had: its draw, read only after the stall, leaves it time for its discard.  Here the
    whole loop stands still (server and client alike), and its order after the stall
    is the loop's own."""
    table, a, b = await seat_two(api, server, turn_seconds=5, max_missed_turns=3)
    actor, clock = await clocked(server, table)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        hand_no = await through_seeds(table, ca, cb)
        view = latest_view(ca)
        c = ca if view["turn"] == view["me"]["seat"] else cb
        await to_before_the_deadline(actor, clock, 1.0)
        prev = c.head()
        sig = c.sign(table, hand_no, prev, {"kind": "draw_closed", "seat": seat_of(c)})
        msg = {"type": "action", "table_id": table, "hand_no": hand_no, "action": {"kind": "draw_closed"}}
        draw = asyncio.create_task(c.request({**msg, "prev": prev, "sig": sig}, msg_id="draw-1"))
        await asyncio.sleep(0)  # the draw is written to the socket
        time.sleep(1.0)
        drawn = await draw
        assert drawn["type"] == "reply", drawn
        card = latest_view(c)["me"]["cards"][0]
        discarded = await c.act(table, hand_no, seat_of(c), {"kind": "discard", "card": card})
        assert discarded["type"] == "reply", discarded
        assert clock_moves(c) == [], "the seat was charged for the loop's stall"
        for cl in (ca, cb):
            await cl.leave(table, hand_no, seat_of(cl))
