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
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, TypeVar

from service.inbox import Inbox
from service.startup import Running
from service.table import TableActor
from service.tablecore import io
from tests.conftest import Api, wait_for
from tests.skipclock import SkipClock, clocked
from tests.test_server import by_turn, latest_view, seat_of, seat_two, seated, through_seeds
from tests.wsclient import Client
from verifier.fairness import player_commit
from verifier.transcript import verify_transcript

T = TypeVar("T")


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


def send_draw(c: Client, table: str, hand_no: int) -> asyncio.Task[dict[str, Any]]:
    """``c``'s signed draw, sent (written to the socket at the loop's next turn); its
    answer is the task's."""
    prev = c.head()
    sig = c.sign(table, hand_no, prev, {"kind": "draw_closed", "seat": seat_of(c)})
    msg = {"type": "action", "table_id": table, "hand_no": hand_no, "action": {"kind": "draw_closed"}}
    return asyncio.create_task(c.request({**msg, "prev": prev, "sig": sig}, msg_id="draw-1"))


async def dealt(actor: TableActor, clock: SkipClock, c: Client, seating: Awaitable[T]) -> T:
    """``seating`` (the clients sit, and so on) while the table's clock is skipped until
    ``c`` is dealt a hand: the wait before a deal is skipped, not waited for."""
    skip = asyncio.create_task(clock.skip([actor], 60, until=lambda: any(f.get("type") == "hand" for f in c.frames)))
    try:
        return await seating
    finally:
        await skip


@dataclass
class Turn:
    table: str
    hand_no: int
    actor: TableActor
    clock: SkipClock
    on_turn: Client
    other: Client


@contextlib.asynccontextmanager
async def a_turn(api: Api, server: Running) -> AsyncIterator[Turn]:
    """Two seated players dealt in at a table on a clock the test skips (5 s turns);
    the first turn runs.  The clock stands still but for what is skipped
    (``SkipClock(wall=False)``): the real time a busy machine takes between the test's
    steps is no time to the table, so neither makes a 2.4 s stall a freeze (D37) nor
    runs out what the seat keeps after it."""
    table, a, b = await seat_two(api, server, turn_seconds=5, max_missed_turns=3)
    actor, clock = await clocked(server, table, SkipClock(wall=False))
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        hand_no = await dealt(actor, clock, ca, through_seeds(table, ca, cb))
        c, other = by_turn(ca, cb)
        yield Turn(table, hand_no, actor, clock, c, other)


async def draw_across_a_stall(t: Turn, before: float, jump: float) -> None:
    """The seat on turn sends its draw ``before`` s before the turn's end, and the node
    stalls ``jump`` s before it reads it: the draw is taken (before the fixes the clock
    drew for the seat first, and its draw was refused ``stale_head``), no clock move."""
    await to_before_the_deadline(t.actor, t.clock, before)
    draw = send_draw(t.on_turn, t.table, t.hand_no)
    await asyncio.sleep(0)  # the draw is written to the socket; the server has not read it yet
    stall(t.actor, t.clock, jump)
    drawn = await draw
    assert drawn["type"] == "reply", drawn
    assert clock_moves(t.on_turn) == [], "the seat was charged for the node's stall"


async def discard_and_finish(api: Api, t: Turn) -> None:
    """The seat on turn discards (its turn kept what it had left), both leave, and the
    hand's transcript verifies with no timeout in it."""
    c = t.on_turn
    # half a second of the table's time on, past the turn's own end: what the seat kept
    # (at least a beat) is what lets its discard in, not a real time too short to notice
    await t.clock.skip([t.actor], 0.5)
    card = latest_view(c)["me"]["cards"][0]
    discarded = await c.act(t.table, t.hand_no, seat_of(c), {"kind": "discard", "card": card})
    assert discarded["type"] == "reply", discarded
    assert clock_moves(c) == [], "the seat was charged for the node's stall"
    for cl in (c, t.other):
        await cl.leave(t.table, t.hand_no, seat_of(cl))
    result = await c.wait_frame(lambda f: f.get("type") == "result", timeout=30)
    transcript = await api.call("GET", result["transcript"], expect=200)
    report = verify_transcript(transcript)
    assert report.ok, report.failure
    assert not any(r["type"] == "action" and r["action"]["kind"] == "timeout" for r in transcript["log"])


async def test_a_draw_sent_before_a_short_stall_across_the_deadline_is_taken_and_the_turn_goes_on(
    api: Api, server: Running
) -> None:
    async with a_turn(api, server) as t:
        # last awake 1.5 s before the turn's end; the wake comes 0.9 s after it (a
        # 2.4 s gap: under the 3 s of a freeze, which would give every seat its grace)
        await draw_across_a_stall(t, 1.5, 2.4)
        held = t.actor.core.hand.owed if t.actor.core.hand is not None else {}
        assert held, "the stall was not seen (it was taken for a freeze, or for nothing)"
        await discard_and_finish(api, t)


async def test_a_draw_sent_before_a_stall_of_a_tenth_of_a_second_across_the_deadline_is_taken(
    api: Api, server: Running
) -> None:
    """A stall shorter than ``stall_ms`` that the loop's meter has not counted (the
    table's wake is stepped first): the wake is 0.1 s late, more than the loop's jitter
    (``jitter_ms``), so the seat keeps as long again, at least ``settle_ms``, and its
    draw, read only after the stall, is taken; its discard follows within what it kept.
    (Before, the clock drew for the seat and its own draw was refused ``stale_head``.)"""
    async with a_turn(api, server) as t:
        await draw_across_a_stall(t, 0.05, 0.15)
        hand = t.actor.core.hand
        assert hand is not None and hand.settled and hand.owed, "the short stall was not seen"
        c = t.on_turn
        card = latest_view(c)["me"]["cards"][0]
        discarded = await c.act(t.table, t.hand_no, seat_of(c), {"kind": "discard", "card": card})
        assert discarded["type"] == "reply", discarded
        for cl in (c, t.other):
            await cl.leave(t.table, t.hand_no, seat_of(cl))
        result = await c.wait_frame(lambda f: f.get("type") == "result", timeout=30)
        report = verify_transcript(await api.call("GET", result["transcript"], expect=200))
        assert report.ok, report.failure


async def test_a_wake_for_the_clock_gives_the_sockets_moves_a_few_turns_of_the_loop_first() -> None:
    """A stop of the loop that ends within the jitter after a deadline: the core sees no
    stall, but a move waits in a socket, and as the loop goes on the table's wake and
    the socket's bytes are ready in the same turn; the move then needs two more turns
    to reach the inbox (the socket's handler, then its frame).  The shell gives it
    those turns before it steps a wake for the clock (``TableActor._read_first``);
    not for a beat.  (Before, the wake went first: bench/stall_drill.py charged 10 of
    10 stops of 64 ms ending 5 ms after the deadline, a real ``serve`` and SIGSTOP; see
    docs/benchmarks.md.)"""
    loop = asyncio.get_running_loop()
    inbox: Inbox[str] = Inbox()
    due = SimpleNamespace(_armed=1_000, now=lambda: 1_000, inputs=inbox)  # the deadline's wake
    loop.call_soon(lambda: loop.call_soon(inbox.put_nowait, "draw"))  # two turns away
    assert await TableActor._read_first(due) is True  # type: ignore[arg-type]
    assert await inbox.get(0) == "draw"
    assert await TableActor._read_first(due) is False  # type: ignore[arg-type]  # none: the wake goes on
    beat = SimpleNamespace(_armed=2_000, now=lambda: 1_000, inputs=inbox)  # a beat before the deadline
    loop.call_soon(inbox.put_nowait, "later")
    assert await TableActor._read_first(beat) is False  # type: ignore[arg-type]  # at once: not waited for
    assert len(inbox) == 0
    await asyncio.sleep(0)
    assert len(inbox) == 1


async def test_a_wake_late_by_the_loop_s_jitter_alone_holds_nothing(api: Api, server: Running) -> None:
    """The other side of ``jitter_ms``: a wake 5 ms late is on time, and the clock
    moves for the seat on turn at once (D16), its window not held."""
    async with a_turn(api, server) as t:
        await to_before_the_deadline(t.actor, t.clock, 0.005)
        stall(t.actor, t.clock, 0.01)
        c = t.on_turn
        await c.wait_frame(lambda f: f.get("type") == "update" and bool(clock_moves(c)), timeout=20)
        hand = t.actor.core.hand
        assert hand is not None and not hand.settled and not hand.owed


async def test_a_seat_with_no_connection_keeps_its_grace_once_after_a_stall(api: Api, server: Running) -> None:
    """D16: the clock moves for an absent seat — but a stall of the node across its
    deadline held every new socket's handshake too, so the seat keeps its grace from
    the wake, once, never past the turn's end plus a whole turn, and then the clock
    moves (D37, amended after the audit h74; before, it was charged at the wake)."""
    async with a_turn(api, server) as t:
        gone = t.on_turn.player_id
        await t.on_turn.__aexit__(None, None, None)  # the seat on turn goes away
        await wait_for(lambda: gone not in t.actor.core.reach.connected)  # and the table has seen it go
        await to_before_the_deadline(t.actor, t.clock, 1.5)
        deadline = t.actor.core.armed
        assert deadline is not None
        stall(t.actor, t.clock, 2.4)
        hand = t.actor.core.hand
        assert hand is not None
        await wait_for(lambda: bool(hand.owed))  # the late wake stepped: the seat held
        assert list(hand.owed.values()) == [deadline + 5000]  # the cap: the turn's end plus a whole turn
        other = t.other
        assert clock_moves(other) == [], "the absent seat was charged at the wake"
        await t.clock.skip([t.actor], 6)
        moved = await other.wait_frame(
            lambda f: f.get("type") == "update" and any(e["kind"] == "clock" for e in f["events"]), timeout=20
        )
        assert moved["i"] == 4
        await other.leave(t.table, t.hand_no, seat_of(other))
        await other.wait_frame(lambda f: f.get("type") == "result", timeout=30)


async def test_a_reveal_sent_before_a_short_stall_across_the_window_s_end_is_taken(api: Api, server: Running) -> None:
    """The audit's second case: the reveal was refused ``wrong_phase`` and the seat
    was forfeited a first drop (D29) for a reveal it had sent in time."""
    table, a, b = await seat_two(api, server, turn_seconds=30, max_missed_turns=3)
    actor, clock = await clocked(server, table, SkipClock(wall=False))  # time only as skipped
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        await dealt(actor, clock, ca, seated(table, ca, cb))
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
    had: its draw, read only after the stall, leaves it time for its discard (which
    the clock took, without the meter).  Here the whole loop stands still (server and
    client alike), and its order after the stall is the loop's own."""
    async with a_turn(api, server) as t:
        await to_before_the_deadline(t.actor, t.clock, 1.0)
        draw = send_draw(t.on_turn, t.table, t.hand_no)
        await asyncio.sleep(0)  # the draw is written to the socket
        t.clock.skipped += 0.95  # the table's clock (it stands still but for what is skipped) ...
        time.sleep(0.95)  # ... and the loop's meter see the stop
        drawn = await draw
        assert drawn["type"] == "reply", drawn
        await discard_and_finish(api, t)
