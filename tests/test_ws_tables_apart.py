"""One socket at several tables: each table's answers are told in order, and a table
that does not answer (its write hung) holds up only its own (service.api_ws.Answers;
docs/api.md, "Silence")."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import asyncpg
import pytest

from service import api_ws
from service.app import TABLES
from service.startup import Running
from service.table import TableActor
from tests.conftest import Api, wait_for
from tests.skipclock import SkipClock, clocked
from tests.wsclient import Client
from verifier.fairness import player_commit


# ----------------------------------------------------------------------------- helpers
def _view(c: Client, table: str) -> dict[str, Any] | None:
    got = c.views.get(table)
    return None if got is None else got[2]


def _head(c: Client, table: str) -> str:
    """The newest record link ``c`` was told at ``table``."""
    for f in reversed(c.frames):
        if f.get("table_id") != table:
            continue
        if f.get("type") in ("update", "hand") and isinstance(f.get("head"), dict):
            return str(f["head"]["body"]["h"])
    raise AssertionError("no record seen yet")


async def _seeded(table: str, *clients: Client, clock: tuple[TableActor, SkipClock] | None = None) -> int:
    """Join, sit, commit and reveal at ``table`` (frames of other tables ignored);
    the hand number once it is dealt.  ``clock``: the table's, standing still; what
    the table waits for before it deals is skipped, not waited for."""
    for c in clients:
        assert (await c.request({"type": "join", "table_id": table}))["type"] == "reply"
        r = await c.request({"type": "sit", "table_id": table})
        assert r["type"] == "reply", r

    def phase(p: str) -> Any:
        return lambda f: f.get("type") == "hand" and f.get("table_id") == table and f.get("phase") == p

    if clock is not None:
        actor, still = clock
        dealt = phase("commit")
        await still.skip([actor], 120, until=lambda: all(any(dealt(f) for f in c.frames) for c in clients))
    seeds = {}
    for c in clients:
        frame = await c.wait_frame(phase("commit"))
        seat = c.seat_in(frame["record"])
        seeds[c] = (seat, bytes([seat + 7]) * 32)
        assert (await c.commit(frame["record"], player_commit(seat, seeds[c][1])))["type"] == "reply"
    for c in clients:
        frame = await c.wait_frame(phase("reveal"))
        assert (await c.reveal(frame["record"], *seeds[c]))["type"] == "reply"
    for c in clients:
        await c.wait_frame(lambda f: f.get("type") == "update" and f.get("table_id") == table and f.get("i") == 3)
    view = _view(clients[0], table)
    assert view is not None
    return int(frame["hand_no"])


def _on_turn(table: str, *clients: Client) -> Client:
    for c in clients:
        v = _view(c, table)
        if v is not None and v["turn"] == v["me"]["seat"]:
            return c
    raise AssertionError("nobody on turn")


def _act(
    c: Client, table: str, hand_no: int, action: dict[str, Any], timeout: float = 60, msg_id: str | None = None
) -> Any:
    v = _view(c, table)
    assert v is not None
    seat = int(v["me"]["seat"])
    prev = _head(c, table)
    sig = c.sign(table, hand_no, prev, {**action, "seat": seat})
    msg = {"type": "action", "table_id": table, "hand_no": hand_no, "action": action, "prev": prev, "sig": sig}
    return asyncio.create_task(c.request(msg, msg_id=msg_id, timeout=timeout))


# ----------------------------------------------------------------------------- a hung table
async def test_a_hung_write_at_one_table_does_not_charge_a_move_sent_in_time_at_another(
    server: Running, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """D35/D37 (and D16: only an expiry the player caused is a missed turn): ann plays
    at tables A and B over one WebSocket.  Table B's write hangs in the database (a
    row lock held by another session: the house's fault; B alone is paused), and a
    command of ann's for B waits in B's queue.  Her draw at table A is read, taken and
    answered while B's write still hangs: the socket's reader does not wait on B's
    answer (before, it did, up to 30 s, and A's clock moved for her: a missed turn the
    house's fault at another table caused).

    Nothing here waits on time: table A's clock stands still (time is the test's input,
    and it skips only the wait before A deals), so her turn at A cannot run out however
    busy the machine; B's row stays locked until her draw at A has been answered, and
    no answer is given up as ``busy`` meanwhile.  So the order is forced, not raced: a
    reader that waited on B's answer reads the draw only once B's write is given up
    (the pool's 30 s statement timeout refuses B's move ``unavailable``), and the test
    sees B answered before the draw."""
    monkeypatch.setattr(api_ws, "WAITING_SECONDS", 0.2)  # ann is told soon that her B command waits
    monkeypatch.setattr(api_ws, "TABLE_ANSWER_SECONDS", 3600.0)  # never ``busy`` here: B waits as long as held
    async with aiohttp.ClientSession() as session:
        api = Api(server.url, session)
        ta = await api.table(seats=4, point_value=1, turn_seconds=8, max_missed_turns=3)
        tb = await api.table(seats=4, point_value=1, turn_seconds=3600, max_missed_turns=3)
        a_clock = await clocked(server, ta, SkipClock(wall=False))  # A's time moves only as skipped
        actor_b = server.app[TABLES][tb]
        ann, bo, cy = await api.player("ann"), await api.player("bo"), await api.player("cy")
        async with (
            Client(server.url, ann["token"], ann["signer"]) as sa,
            Client(server.url, bo["token"], bo["signer"]) as sb,
            Client(server.url, cy["token"], cy["signer"]) as sc,
        ):
            hb = await _seeded(tb, sc, sa)  # B in play (its turns an hour long)
            ha = await _seeded(ta, sa, sb, clock=a_clock)  # A in play; its clock stands still from here on
            # A: bring the turn to ann
            if _on_turn(ta, sa, sb) is sb:
                assert (await _act(sb, ta, ha, {"kind": "draw_closed"}))["type"] == "reply"
                await wait_for(lambda: (_view(sb, ta) or {}).get("phase") == "discard")
                card = (_view(sb, ta) or {})["me"]["cards"][0]
                assert (await _act(sb, ta, ha, {"kind": "discard", "card": card}))["type"] == "reply"
                await wait_for(lambda: (_view(sa, ta) or {}).get("turn") == (_view(sa, ta) or {})["me"]["seat"])
            # B: its hand row locked by another session; the next write of B waits on it
            lock = await asyncpg.connect(pg_dsn)
            tx = lock.transaction()
            await tx.start()
            await lock.execute("SELECT 1 FROM hands WHERE table_id = $1 FOR UPDATE", tb)
            try:
                b_mover = _on_turn(tb, sa, sc)
                b_move = _act(b_mover, tb, hb, {"kind": "draw_closed"}, msg_id="b-move")  # B's write hangs
                await wait_for(lambda: actor_b.core.pending is not None, timeout=30)  # B is in that write
                held = "b-move"
                pending_b = None
                if b_mover is not sa:  # ann's own command for B waits behind B's write
                    held = "b-sit"
                    pending_b = asyncio.create_task(
                        sa.request({"type": "sit", "table_id": tb}, msg_id=held, timeout=60)
                    )
                # ann's socket has an answer of B's to tell, which B holds: read and taken, not answered
                await sa.wait_frame(lambda f: f.get("type") == "waiting" and f.get("id") == held, timeout=30)
                answer = await _act(sa, ta, ha, {"kind": "draw_closed"})  # at A, while B hangs
                b_told = [t.result() for t in (b_move, pending_b) if t is not None and t.done()]
                assert b_told == [] and actor_b.core.pending is not None, (
                    f"ann's draw at table A was answered ({answer.get('type')}) only once table B's hung write "
                    f"was given up ({b_told}): the socket's reader waited on B's answer before it read the draw"
                )
            finally:
                await tx.rollback()
                await lock.close()
            assert (await b_move)["type"] == "reply"
            if pending_b is not None:
                await pending_b
            timeouts = [
                f
                for f in sb.frames
                if f.get("type") == "update"
                and f.get("table_id") == ta
                and any(e.get("kind") == "clock" for e in f.get("events", ()))
            ]
            assert answer["type"] == "reply" and timeouts == [], (answer, timeouts)


# ----------------------------------------------------------------------------- Answers
async def test_answers_go_in_order_per_table_and_a_held_table_holds_only_its_own() -> None:
    """A table's answers are told in the order they were taken, each after the one
    before it; another table's are told meanwhile."""
    told: list[str] = []
    hold = asyncio.get_running_loop().create_future()

    def tell(name: str, wait: asyncio.Future[None] | None = None) -> Any:
        async def go() -> None:
            if wait is not None:
                await wait
            told.append(name)

        return go

    answers = api_ws.Answers()
    answers.after("b", tell("b1", hold))
    answers.after("b", tell("b2"))
    answers.after("a", tell("a1"))
    answers.after("a", tell("a2"))
    await wait_for(lambda: told == ["a1", "a2"] and len(answers.tasks) == 2)
    assert set(answers.last) == {"b"}
    hold.set_result(None)
    await wait_for(lambda: told == ["a1", "a2", "b1", "b2"])
    await wait_for(lambda: not answers.tasks and not answers.last)


async def test_a_socket_waits_for_room_beyond_its_pending_answers_and_cancels_them_as_it_closes() -> None:
    """At ``PENDING_ANSWERS`` still to be told the reader waits for one to be told
    before it reads on; a closing socket's are cancelled and awaited (nothing left
    pending to be destroyed)."""
    loop = asyncio.get_running_loop()
    holds = [loop.create_future() for _ in range(api_ws.PENDING_ANSWERS)]
    answers = api_ws.Answers()
    for i, h in enumerate(holds):
        answers.after(f"t{i % 3}", lambda h=h: h)
    room = asyncio.create_task(answers.room())
    await asyncio.sleep(0.05)
    assert not room.done()
    holds[0].set_result(None)
    await asyncio.wait_for(room, 5)
    await answers.close()
    assert not answers.tasks and not answers.last


async def test_a_ping_is_answered_while_a_table_is_held_and_a_repeat_gets_the_late_answer(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a table holds a message's answer, the socket answers ``ping`` at once;
    the held message is told ``busy``, and its id sent again gets the table's answer
    once it comes, marked replayed (the repeat waits on the answer's future, which
    the reply memory lets go of as it keeps the answer's text)."""
    monkeypatch.setattr(api_ws, "WAITING_SECONDS", 0.2)
    monkeypatch.setattr(api_ws, "TABLE_ANSWER_SECONDS", 2.0)
    held: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    real = api_ws._dispatch

    async def holding(request: Any, conn: Any, player: Any, data: dict[str, Any], *more: Any) -> Any:
        return held if data["type"] == "sit" else await real(request, conn, player, data, *more)

    monkeypatch.setattr(api_ws, "_dispatch", holding)
    async with aiohttp.ClientSession() as session:
        api = Api(server.url, session)
        table = await api.table(seats=4)
        p = await api.player("held")
        async with Client(server.url, p["token"], p["signer"]) as c:
            assert (await c.request({"type": "join", "table_id": table}))["type"] == "reply"
            sit = asyncio.create_task(c.request({"type": "sit", "table_id": table}, msg_id="s1"))
            await c.wait_frame(lambda f: f.get("type") == "waiting" and f.get("id") == "s1")
            assert (await c.request({"type": "ping"}, timeout=1))["result"] == {"pong": True}
            assert not sit.done()
            assert (await sit)["error"]["code"] == "busy"
            again = asyncio.create_task(c.request({"type": "sit", "table_id": table}, msg_id="s1"))
            await asyncio.sleep(0.3)
            held.set_result({"seat": 0})
            reply = await again
            assert reply["type"] == "reply" and reply.get("replayed") is True, reply
            assert (await c.request({"type": "ping"}))["type"] == "reply"  # the socket lives on
