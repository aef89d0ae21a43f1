"""Audit of crashes, stalls and outages (helper h74): the tail of a database stall that
a write other than the clock's probe was waiting on.

The fault.  PostgreSQL stalls for a second or so (a checkpoint's fsync on a slow disk,
a lock held by a frozen session until ``idle_in_transaction_session_timeout`` ends it,
a hang that ends by itself): shorter than ``write_hung_seconds`` (2 s), so the table
never calls the store hung and tells nobody ``paused``.  Meanwhile:

* a seat with no connection — its player dropped its socket a moment before (a page
  reload, a phone changing networks) and opened a new one at once, whose handshake
  reads the store and so waits on the same stall — reaches its deadline;
* and the table happens to have a write in flight across that deadline: the other
  seat's reveal sent near the end of the reveal window, a third player sitting down at
  the table, a join that reads the log back, the operator standing a seat.

No clock runs while a write is pending (D37).  When the store answers, late, the write
commits and ``stored_at`` is now, after the deadline: the clock charges the absent seat
at once, with no probe (``Steps.fire``: "the store has answered since its deadline")
and no grace — in the same instant its player's held handshake gets through.  The seat
is charged a withheld reveal (D29: a first drop, 20 points × point value), a missed
commitment (an empty seed, D21), or a clock move (D16, D22; with ``max_missed_turns``
1 a clock drop, D15, and its seat stood up, D31).

The same stall with the probe in flight instead (no other write) charges nobody: a
probe answered more than ``TOLD_LATE_MS`` after it was written is the tail of a hang
the table did not see begin, and the absent seat keeps ``resume_grace`` from the answer
(h66 finding 1; now ``TableCore._answered_late`` for any write).  Which write happened to be waiting on the stall
decided whether the player paid.

Between hands, the probe itself was answered late without consequence: a deal due
while a seated player has no connection (``Steps.fire``), and D34's stand-up of a seat
away for ``away_seconds`` at a table too few are connected to deal at
(``Steps.start``), each write a probe first so that a store that hangs unseen does not
pass over a player whose way back it holds (h66 findings 2 and 3); a probe answered
late (the tail of such a hang) was taken as "the store has answered", and the deal sat
the absent seat out (at ``max_away_hands`` 1: stood up, D34), or the stand-up was
written, as the player's held handshake went through.

The rules it breaks: D37 ("a probe answered more than 250 ms after it was written, yet
before it counted as hung, is the tail of such a hang … the absent seat keeps the whole
grace from the answer"), D34 ("the house's faults stand nobody up … a probe that hangs
is the house's fault … the seat having its reach and grace before a deal passes it
over").

Fixed (``TableCore._answered_late``): any write the store answers more than
``TOLD_LATE_MS`` after it was written, yet before it counted as hung, is taken as the
tail of a stall, as the clock's probe is: each seat the running clock would charge now
whose player had no connection at some moment of the write keeps ``resume_grace`` from
the answer, once a window (``HandRun.hold_for_short_stall``, the cap and the once of
the probe's); between hands a deal (or a stand-up) that fell due during the write waits
as long, once a try.  Tested on the table core with the harness of
tests/test_tablecore.py (the store answers when the test says), and on a real server
whose PostgreSQL is held by tests/pgproxy.py.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import pytest

from service.startup import Running
from service.tablecore import io
from service.tablecore.phase import HandPhase
from service.tablecore.steps import TOLD_LATE_MS
from tests.conftest import Api, wait_for
from tests.pgproxy import PgProxy
from tests.seams import Sockets, both_commit
from tests.skipclock import skip_clock
from tests.test_audit_seams_db_hang import dropped, stored_records
from tests.test_recovery import proxied  # noqa: F401 (the fixture)
from tests.test_server import seat_two, seated
from tests.test_tablecore import CFG, TURN_MS, Harness, a_deal_due_with_a_seat_absent, stood_at, turn_began
from verifier.chain import commit_move, move_body, reveal_move
from verifier.fairness import PROTOCOL_V2, player_commit

LATE = 1000  # ms: the store's answer comes this long after the write (TOLD_LATE_MS < LATE < hung_ms)
assert TOLD_LATE_MS < LATE < CFG.hung_ms


def seed_move(h: Harness, pid: str, seat: int, kind: str, seed: bytes) -> dict[str, Any]:
    """A commitment or a reveal as the player signs it."""
    hand = h.core.hand
    assert hand is not None
    if kind == "commit":
        c = player_commit(seat, seed)
        body = move_body("t0", hand.hand_no, hand.recorder.records[0]["h"], commit_move(seat, c))
        return {"hand_no": hand.hand_no, "commit": c.hex(), "sig": h.signers[pid].sign("move", body, PROTOCOL_V2)}
    body = move_body("t0", hand.hand_no, hand.recorder.records[1]["h"], reveal_move(seat, seed))
    return {"hand_no": hand.hand_no, "seed": seed.hex(), "sig": h.signers[pid].sign("move", body, PROTOCOL_V2)}


def act(h: Harness, move: dict[str, Any]) -> None:
    """The seat on turn makes ``move``, signed over the newest record."""
    hand = h.core.hand
    assert hand is not None
    pid, seat = h.on_turn()
    head = hand.recorder.head
    sig = h.signers[pid].sign("move", move_body("t0", hand.hand_no, head, {**move, "seat": seat}), PROTOCOL_V2)
    h.send(pid, "action", {"hand_no": hand.hand_no, "action": move, "prev": head, "sig": sig})


def second_hand(h: Harness) -> None:
    """A first hand played for a while (past the grace every seat has from the table's
    load) and ended by a first drop; the table is at the second hand's commit window."""
    h.through_seeds()
    h.advance(h.now + TURN_MS + 2000)  # a turn the clock played: past every grace since the load
    act(h, {"kind": "drop"})
    h.answer_all()
    while h.core.hand is None or h.core.hand.hand_no < 2:
        h.advance(h.now + 100)
    assert h.core.hand.phase is HandPhase.COMMIT


def slow(h: Harness, until: int) -> int:
    """The write in flight is answered at ``until`` (the store stalled, not hung): the
    moment of the answer."""
    h.advance(until, answer=False)
    assert len(h.inflight) == 1 and not h.core.paused, "the write counted as hung"
    h.answer_all()
    return h.now


def test_an_absent_seat_is_not_charged_a_withheld_reveal_as_a_slow_write_of_another_seat_answers() -> None:
    """The reveal window: both seats committed; bo's socket drops (his own doing) and his
    new one waits on the stall; ann reveals 300 ms before the window's end, and the
    store answers her 1 s later.  Bo keeps his grace from the answer, as with a probe."""
    h = Harness()
    second_hand(h)
    hand = h.core.hand
    assert hand is not None
    seeds = {s: bytes([s + 1]) * 32 for s in hand.players}
    for s, p in hand.players.items():
        h.send(p, "commit", seed_move(h, p, s, "commit", seeds[s]))
        h.answer_all()
    assert hand.phase is HandPhase.REVEAL
    h.step(io.Reach("p1", False))
    end = int(hand.recorder.records[1]["t"]) + CFG.reveal_ms
    assert h.core.deadline(hand) == end, "bo's grace since the load is over: the window's end is his deadline"
    h.advance(end - 300)
    before = len(h.charges())
    h.send("p0", "reveal", seed_move(h, "p0", 0, "reveal", seeds[0]))
    answered = slow(h, end - 300 + LATE)
    assert h.charges()[before:] == [], (
        f"bo was charged a withheld reveal the moment a stall of the store ended ({LATE} ms after ann's reveal, "
        f"{answered - end} ms after his deadline): {h.charges()[before:]}"
    )
    held = min(answered + CFG.grace_ms, end + CFG.reveal_ms)  # never past the window's end plus a whole one
    h.advance(held + 1000)  # he does not come back: charged once his grace is over
    (at, charge), *_ = h.charges()[before:]
    assert held <= at <= held + 500 and charge.kind == "reveal"


def test_an_absent_seat_on_turn_is_not_timed_out_as_a_slow_sit_of_a_newcomer_answers() -> None:
    """Play: the seat on turn has no connection (its player reconnecting through the
    stall); a third player sits down at the table 300 ms before that seat's deadline,
    and the store answers the sit 1 s later."""
    h = Harness()
    h.store.add_player("p9", h.signers["p0"].public_bytes, 10**6)
    h.through_seeds()
    pid, _ = h.on_turn()
    h.advance(turn_began(h) + TURN_MS - 1500)  # past the grace since the load
    h.step(io.Reach(pid, False))
    deadline = turn_began(h) + TURN_MS
    h.advance(deadline - 300)
    assert h.charges() == []
    h.send("p9", "sit", {"seat": 3})
    answered = slow(h, deadline - 300 + LATE)
    assert 3 in h.core.facts.seats
    assert h.charges() == [], f"the seat on turn was timed out as a stall of the store ended: {h.charges()}"
    held = min(answered + CFG.grace_ms, deadline + TURN_MS)
    h.advance(held + 1000)
    (at, charge), *_ = h.charges()
    assert held <= at <= held + 500 and charge.kind == "play"


def absent_on_turn_with_a_sit_written() -> tuple[Harness, str, int]:
    """The seat on turn drops its socket 1.5 s before its deadline; 0.3 s before it a
    newcomer's ``sit`` is written (its answer left to the test).  The harness, the
    absent player, the deadline."""
    h = Harness()
    h.store.add_player("p9", h.signers["p0"].public_bytes, 10**6)
    h.through_seeds()
    pid, _ = h.on_turn()
    h.advance(turn_began(h) + TURN_MS - 1500)
    h.step(io.Reach(pid, False))
    deadline = turn_began(h) + TURN_MS
    h.advance(deadline - 300)
    h.send("p9", "sit", {"seat": 3})
    return h, pid, deadline


def test_a_player_who_comes_back_during_the_slow_write_is_not_charged_as_it_answers() -> None:
    """As above, but the player's new socket gets through just before the table steps
    the store's late answer (the handshake's read answered first): connected when the
    write answers, it had no connection when its deadline passed."""
    h, pid, deadline = absent_on_turn_with_a_sit_written()
    h.advance(deadline - 300 + LATE, answer=False)
    h.step(io.Reach(pid, True))
    h.answer_all()
    assert h.charges() == [], f"the seat on turn was timed out as it came back through the stall: {h.charges()}"


def test_a_probe_answered_late_before_a_deal_does_not_sit_the_absent_seat_out() -> None:
    """D34: a hand is due, a seat has no connection (its grace over); the table probes
    the store first, and the probe comes back 1 s later — the tail of a hang that held
    that player's handshake.  The deal waits ``resume_grace`` from the answer."""
    h = a_deal_due_with_a_seat_absent()
    answered = slow(h, h.now + LATE)
    assert h.core.hand is None and h.core.pending is None, (
        "a hand was dealt past the absent seat the moment a stall of the store ended"
    )
    h.advance(answered + CFG.grace_ms + 2000)  # it does not come back: dealt without it then
    assert h.core.hand is not None and set(h.core.hand.players.values()) == {"p0", "p1"}


def test_a_probe_answered_late_does_not_stand_the_absent_seat_up() -> None:
    """D34: at a table too few are connected to deal at, an absent seat's time away runs
    out; the table probes the store first, and the probe comes back 1 s later.  The seat
    is not stood up at the answer: it has ``resume_grace`` first."""
    away = CFG.away_ms
    h = Harness(players=2, connected=False)
    loaded = h.now
    h.step(io.Reach("p0", True))
    h.advance(loaded + away - 500)
    while not h.inflight:  # the deal tried as the time away runs out: a probe first
        h.advance(h.now + 100, answer=False)
    (probe,) = h.inflight.values()
    assert isinstance(probe, io.Write) and isinstance(probe.op, io.ProbeOp) and stood_at(h) == {}
    answered = slow(h, h.now + LATE)
    assert stood_at(h) == {}, f"the absent seat was stood up as a stall of the store ended: {stood_at(h)}"
    h.advance(answered + CFG.grace_ms + 2 * CFG.next_hand_ms + 1000)
    t, reason, _ = stood_at(h)["p1"]
    assert t >= answered + CFG.grace_ms and reason == "away"


def test_a_store_slow_at_every_write_still_ends_the_turn() -> None:
    """The hold is once a window, as the probe's: a store that answers every write late
    still lets the clock end an absent seat's turn (no table stands still for ever)."""
    h, pid, deadline = absent_on_turn_with_a_sit_written()
    first = slow(h, deadline - 300 + LATE)
    held = min(first + CFG.grace_ms, deadline + TURN_MS)
    h.advance(held - 300)
    assert h.charges() == []
    h.send("p9", "leave", {})  # another slow write, across the held deadline
    second = slow(h, held - 300 + LATE)
    (at, charge), *_ = h.charges()
    assert at == second and charge.kind == "play", "a second slow write in the same turn held the seat again"


# ----------------------------------------------------------------------------- a real server
@pytest.mark.timeout(300)
async def test_on_a_real_server_a_reveal_written_into_a_stall_does_not_charge_the_absent_seat(
    proxied: tuple[Running, PgProxy],  # noqa: F811
) -> None:
    """A server alone, its PostgreSQL behind the proxy, the tables' clock skipped (the
    set-up of tests/test_audit_seams_db_hang.py; reveal windows of 2 s, grace 1 s).
    Both seats commit; bo's socket drops and PostgreSQL hangs as he opens a new one;
    ann reveals half a second before the window's end and her write waits on the hang;
    1.2 s of the table's clock pass (under ``write_hung_seconds``); PostgreSQL answers
    again.  Bo, through at last, reveals: his seed is dealt with, not withheld."""
    server, proxy = proxied
    clock = skip_clock(server)
    async with aiohttp.ClientSession() as session, Sockets(proxy) as sockets:
        table, a, b = await seat_two(Api(server.url, session), server)
        ca, cb = await sockets.open(server.url, a), await sockets.open(server.url, b)
        await seated(table, ca, cb)
        hand_no, seeds, frame = await both_commit(ca, cb)
        commitments = frame["record"]
        clock.still = time.time()  # from here the tables' time is only what the test skips
        actor = await dropped(server, table, cb)  # bo's own doing
        end = (int(commitments["t"]) + 2000) / 1000  # the reveal window's end (the fixture's 2 s)
        await clock.skip([actor], end - 0.5 - clock())
        assert actor.core.hand is not None and actor.core.hand.phase is HandPhase.REVEAL
        proxy.hang()
        reconnect = await sockets.held_by_the_hang(server.url, b)
        reveal = asyncio.create_task(ca.reveal(commitments, *seeds[ca]))
        await wait_for(lambda: actor.core.pending is not None, timeout=30)
        await clock.skip([actor], 1.2, store_answers=False)  # past bo's deadline, under write_hung_seconds
        assert not actor.core.hung and not reconnect.done()
        proxy.let_go()
        assert (await asyncio.wait_for(reveal, 60))["type"] == "reply"
        back = await sockets.through()
        joined = await back.request({"type": "join", "table_id": table})
        assert joined["type"] == "reply", joined
        got = await back.reveal(commitments, *seeds[cb])
        await wait_for(lambda: actor.core.pending is None, timeout=30)
        reveals = [x for r in await stored_records(server, table, hand_no) if "reveals" in r for x in r["reveals"]]
        withheld = [x for x in reveals if x["status"] == "withheld"]
        assert withheld == [] and got["type"] == "reply", (
            f"bo's reveal was recorded withheld as a stall of PostgreSQL under write_hung_seconds ended, "
            f"ann's reveal waiting on it: {withheld}; his own reveal then: {got}"
        )
