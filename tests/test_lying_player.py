"""A lying or hostile player against the table's clocks (D16, D32, D35, D37), on the
table core with a virtual clock (tests/test_tablecore.py's harness).  Found by an audit
of what a client that sends whatever it likes can gain in time, or cost the others:

- commands that each cost a write (a commitment sent again, a ``sit`` the store
  refuses), sent as fast as the store answers, kept the queue full as every write
  ended: the clock, which runs only between writes, never fired — a commit window
  open 30 s on, a 30 s turn not charged after 90 s, with no fault of the house;
- junk refused ``unavailable`` while the table reloads owed its sender a whole window
  (D35) from the refusal: 19 s more than D32's grace;
- a socket dropped just after a reload, and back just before ``reach_ms``, was taken
  as lost during the fault (as after a node that stood still): its grace waited for it;
- a seat that connected for a moment every ``away_ms`` at a table too few were
  connected to deal at was never dealt in (the next try came a second later) nor stood
  up (D34): any connection ended its time away, and the other player waited for ever.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from service.tablecore import io
from service.tablecore.core import Mode
from service.tablecore.phase import HandPhase
from service.tablecore.state import CoreConfig
from tests.test_tablecore import Harness, stood_at
from verifier.chain import commit_move, move_body
from verifier.fairness import PROTOCOL_V2, player_commit

TURN = 30_000  # the default turn
DEFAULTS = CoreConfig()  # grace 10 s, reach 10 s (12 s as the server sets it), hung 2 s


def harness(players: int = 2, **cfg: Any) -> Harness:
    """A harness on the default clocks (grace 10 s, 30 s turns), short seed windows."""
    h = Harness(players=players, turn_ms=TURN)
    h.core.cfg = dataclasses.replace(DEFAULTS, next_hand_ms=500, commit_ms=2000, reveal_ms=2000, **cfg)
    return h


def junk(h: Harness, pid: str) -> None:
    """A well-formed action no rule allows: for a hand that does not exist, signed by nobody."""
    h.send(pid, "action", {"hand_no": 999_999, "action": {"kind": "draw_closed"}, "prev": "00" * 32, "sig": "00" * 64})


def fail_next_write(h: Harness) -> None:
    """The store fails the write in flight (a database gone for a moment)."""
    (op_id,) = [k for k, e in h.inflight.items() if isinstance(e, io.Write)]
    h.answer(op_id, io.Result.FAILED)


def signed_commit(h: Harness, pid: str) -> dict[str, Any]:
    hand = h.core.hand
    assert hand is not None and hand.phase is HandPhase.COMMIT
    seat = hand.seat_of(pid)
    assert seat is not None
    c = player_commit(seat, bytes([seat + 1]) * 32)
    body = move_body("t0", hand.hand_no, hand.recorder.records[0]["h"], commit_move(seat, c))
    sig = h.signers[pid].sign("move", body, PROTOCOL_V2)
    return {"hand_no": hand.hand_no, "commit": c.hex(), "sig": sig}


LATENCY = 20  # ms a write takes (the group commit, PostgreSQL's fsync)
STEP = 10  # ms between the hostile client's messages (two sockets at 50 a second)
GRACE = DEFAULTS.grace_ms


def _flood(h: Harness, until: int, send: Callable[[], object]) -> None:
    """The hostile client sends a command every STEP ms; each write answers LATENCY ms
    after it went out."""
    issued: dict[int, int] = {}
    while h.now < until:
        h.now += STEP
        h.step(io.Tick())
        send()
        for op_id in sorted(h.inflight):
            issued.setdefault(op_id, h.now)
            if h.now - issued[op_id] >= LATENCY:
                h.answer(op_id)


def test_a_commitment_sent_again_and_again_does_not_hold_the_commit_window_open() -> None:
    h = harness(grace_ms=1000, reach_ms=1000)
    h.advance(h.now + 1000)
    hand = h.core.hand
    assert hand is not None and hand.phase is HandPhase.COMMIT
    opened = int(hand.recorder.records[0]["t"])
    payload = signed_commit(h, "p0")  # p0 commits; p1 (connected, honest or slow) does not
    h.send("p0", "commit", payload)
    h.answer_all()
    _flood(h, opened + 30_000, lambda: h.send("p0", "commit", payload))
    records = len(hand.recorder.records)
    assert records >= 2, "the commit window (2 s) is still open 30 s on: p0's repeated commitment held the clock"


def test_a_refused_sit_sent_again_and_again_does_not_hold_the_turn() -> None:
    h = harness()
    h.store.add_player("px", bytes(32), 0)  # the hostile's second account, with no balance
    h.through_seeds()
    h.advance(h.now + 12_000)
    hand = h.core.hand
    assert hand is not None
    began = hand.turn_began
    _flood(h, began + 3 * TURN, lambda: h.send("px", "sit", {}))
    assert h.charges(), "the turn (30 s) has run for 90 s: px's refused sits held the clock"


def _fault_on_turn(junk_sent: bool) -> tuple[int, int]:
    h = harness()
    h.store.add_player("px", bytes(32), 10**6)  # a third player who sits down mid-hand
    h.through_seeds()
    hand = h.core.hand
    assert hand is not None
    began = hand.turn_began
    pid, _ = h.on_turn()
    h.advance(began + TURN - 1000)  # the hostile seat sits on its turn; a second is left
    assert h.charges() == []
    h.send("px", "sit", {})  # someone else's write...
    fail_next_write(h)  # ...fails: the table backs off, then reloads (D37)
    assert h.core.mode is Mode.WAITING
    if junk_sent:
        h.now += 50
        junk(h, pid)  # refused `unavailable`: no rule allows it, nothing judged it
        (reply,) = [e for e in h.of(io.Reply, since=h.now) if e.error is not None]
        assert reply.error.code == "unavailable"
    h.advance(began + 2 * TURN + 5000)
    (at, charge), *_ = h.charges()
    assert charge.kind == "play"
    return began, at


def test_junk_sent_while_the_table_reloads_buys_no_time() -> None:
    began, honest = _fault_on_turn(junk_sent=False)
    # D32: the turn the fault cut into ends at its ordinary end plus the grace
    assert honest <= began + TURN + GRACE + 500
    began, hostile = _fault_on_turn(junk_sent=True)
    assert hostile <= began + TURN + GRACE + 500, (
        f"junk refused `unavailable` kept the turn {hostile - began - TURN - GRACE} ms past its graced end"
    )


def _fault_then(drop: bool) -> tuple[int, int]:
    h = harness()
    h.store.add_player("px", bytes(32), 10**6)
    h.through_seeds()
    hand = h.core.hand
    assert hand is not None
    began = hand.turn_began
    pid, _ = h.on_turn()
    h.advance(began + TURN - 1000)
    h.send("px", "sit", {})
    fail_next_write(h)  # a write fails: the table reloads 0.1-0.2 s later (its loop runs on)
    assert h.core.mode is Mode.WAITING
    while h.core.mode is not Mode.SERVING:
        h.now += 10
        h.step(io.Tick())
        h.answer_all()
    back = h.now
    if drop:
        h.now = back + 500
        h.step(io.Reach(pid, False))  # the hostile client drops its socket on purpose...
        h.advance(back + DEFAULTS.reach_ms - 10)
        h.step(io.Reach(pid, True))  # ...and is back just before reach_ms
    h.advance(began + 2 * TURN)
    (at, charge), *_ = h.charges()
    assert charge.kind == "play"
    return began, at


def test_dropping_the_socket_just_after_a_reload_buys_no_time() -> None:
    began, honest = _fault_then(drop=False)
    assert honest <= began + TURN + GRACE + 500  # D32: its ordinary end plus the grace
    began, hostile = _fault_then(drop=True)
    assert hostile <= began + TURN + GRACE + 500, (
        f"a socket dropped 0.5 s after the reload kept the turn {hostile - began - TURN - GRACE} ms longer"
    )


MINUTE = 60_000


def test_an_absent_seat_that_flickers_is_stood_up_in_its_time_away() -> None:
    """D34: a connection in which no deal was tried does not end a seat's time away:
    the seat that comes for 5 ms every ``away_ms - 20`` s is stood up ``away_ms`` after
    the load (it was never seen at a deal try), and the other player's table is free
    to deal again."""
    h = Harness(players=2, connected=False)
    loaded = h.now
    h.step(io.Reach("p0", True))  # p0 waits to play; p1 (hostile) is away
    cfg = h.core.cfg
    end = h.now + 10 * MINUTE
    while h.now < end and "p1" not in stood_at(h):
        h.advance(h.now + cfg.away_ms - 20_000)
        h.step(io.Reach("p1", True))  # a moment's connection...
        h.now += 5
        h.step(io.Reach("p1", False))  # ...and gone again
    assert "p1" in stood_at(h), "ten minutes on, p1 still holds its seat at a table that cannot deal without it"
    at, reason, hand_no = stood_at(h)["p1"]
    assert (reason, hand_no) == ("away", None)
    assert loaded + cfg.away_ms <= at <= loaded + cfg.away_ms + 2 * cfg.next_hand_ms + 1000
    assert not h.store.hands
