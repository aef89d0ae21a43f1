"""D35, "told late", and the house's refusals of a leave (found by an audit,
2026-12-07; the simulator's worlds of leaving players and of lost answers followed,
tests/sim/leaving.py).  A turn is timed from its record's ``t``, but a seat can act
only once the record is stored and told: told more than 250 ms late, each seat the
clock would charge keeps its whole window from the tell.  Two paths did not owe it:

- a move stored as the database went away (its answer lost, AMBIGUOUS), told only by
  the ``resumed`` of the reload that found it stored: the next seat got the grace
  (D32/D37, 10 s by default) of its 30 s turn, and the clock moved for it then;
- a leave by the seat on turn (D15, D25: the turn passes on) stored slowly, under
  ``hung_ms``: the next seat's turn lost the store's delay.

And a signed leave the house refused (``unavailable``, the table reloading) left the
seat nothing: the clock moved for it 1.5 s later, where D35 gives a whole turn from
the refusal of any move the rules allow (a draw's refusal was honoured)."""

from __future__ import annotations

import dataclasses

import pytest

from service.tablecore import io
from service.tablecore.core import Mode
from service.tablecore.phase import HandPhase
from service.tablecore.state import CoreConfig
from tests.test_tablecore import CFG, TURN_MS, Harness
from verifier.chain import move_body
from verifier.fairness import PROTOCOL_V2
from verifier.hand import Discard, Phase, action_to_json

TURN = 30_000  # the default turn
OUTAGE = 60_000
DEFAULTS = CoreConfig()  # the defaults: grace 10 s, reach 12 s, hung 2 s


def _discard(h: Harness) -> None:
    hand = h.core.hand
    assert hand is not None and hand.recorder.state is not None
    pid, seat = h.on_turn()
    me = hand.recorder.state.seat(seat)
    move = action_to_json(Discard(seat, me.cards[0]))
    head = hand.recorder.head
    sig = h.signers[pid].sign("move", move_body("t0", hand.hand_no, head, move), PROTOCOL_V2)
    body = {k: v for k, v in move.items() if k != "seat"}
    h.send(pid, "action", {"hand_no": hand.hand_no, "action": body, "prev": head, "sig": sig})


def test_a_turn_stored_before_an_outage_but_told_after_it_keeps_its_whole_turn() -> None:
    h = Harness(turn_ms=TURN)
    h.core.cfg = dataclasses.replace(DEFAULTS, next_hand_ms=500, commit_ms=2000, reveal_ms=2000)
    h.through_seeds()
    h.advance(h.now + 12_000)  # past the grace of the first connections
    hand = h.core.hand
    assert hand is not None and hand.recorder.state is not None
    a_pid, a_seat = h.on_turn()
    h.draw()
    h.answer_all()
    assert hand.recorder.state.phase is Phase.DISCARD
    _discard(h)
    ((op_id, write),) = h.inflight.items()
    assert isinstance(write, io.Write)
    # the database commits the discard, and goes away with the answer in flight
    h.store.run("t0", h.store.tables["t0"].epoch, write.op)
    del h.inflight[op_id]
    h.now += 5
    h.step(io.Outcome(op_id, io.Result.AMBIGUOUS))
    began_b = h.now
    # 60 s of a database that is away: every reload fails
    end = h.now + OUTAGE
    while h.now < end:
        h.now += 100
        h.step(io.Tick())
        for oid in sorted(h.inflight):
            h.answer(oid, io.Result.FAILED)
    assert h.charges() == []
    # the database is back: the next reload works
    while not h.of(io.TellResumed, since=end):
        h.now += 100
        h.step(io.Tick())
        h.answer_all()
    told = h.now  # B learns only now (the `resumed` snapshot) that it is on turn
    hand = h.core.hand
    assert hand is not None and hand.recorder.state is not None
    b_pid, b_seat = h.on_turn()
    assert b_seat != a_seat and hand.turn_began <= began_b
    b_began = hand.turn_began
    h.advance(told + TURN - 500)
    charged = [(t, c) for t, c in h.charges() if c.seat == b_seat]
    assert not charged, (
        f"seat {b_seat} charged ({charged[0][1].kind}) {(charged[0][0] - told) / 1000:.1f} s after it was first "
        f"told it was on turn (a {TURN / 1000:.0f} s turn; its record was stored {(told - b_began) / 1000:.1f}"
        " s before it was told)"
    )


DELAY = 1400  # a slow store, shorter than hung_ms (1500): no fault the core pauses for


def test_a_turn_passed_on_by_a_leave_stored_late_is_whole_from_its_tell() -> None:
    h = Harness(players=3)
    h.core.cfg = dataclasses.replace(CFG, grace_ms=0)  # D37's grace after connecting would hide it
    h.through_seeds()
    hand = h.core.hand
    assert hand is not None
    h.advance(h.now + 300)
    pid, seat = h.on_turn()
    head = hand.recorder.head
    move = {"kind": "leave", "seat": seat}
    sig = h.signers[pid].sign("move", move_body("t0", hand.hand_no, head, move), PROTOCOL_V2)
    h.send(pid, "leave", {"hand_no": hand.hand_no, "prev": head, "sig": sig})
    (op,) = h.inflight.values()
    assert isinstance(op, io.Write) and isinstance(op.op, io.UnseatOp) and op.op.records
    h.now += DELAY  # the store answers the leave late (not hung: no pause, no grace)
    h.step(io.Tick())
    h.answer_all()
    assert not h.told("paused")
    told = h.now
    nxt, nseat = h.on_turn()
    assert nseat != seat and hand.phase is HandPhase.PLAY
    assert told - hand.turn_began >= DELAY
    # the next seat was told its turn only now; D35: its whole turn from the tell
    h.advance(told + TURN_MS - 100)
    charged = [(t, c) for t, c in h.charges() if c.seat == nseat]
    assert not charged, (
        f"seat {nseat} charged ({charged[0][1].kind}) {charged[0][0] - told} ms after it was told its turn "
        f"(turn {TURN_MS} ms; the store's delay {DELAY} ms was taken out of it)"
    )


@pytest.mark.parametrize("kind", ["leave", "draw"])
def test_a_move_refused_while_the_table_reloads_keeps_its_whole_turn(kind: str) -> None:
    h = Harness(players=3)
    h.core.cfg = dataclasses.replace(CFG, grace_ms=500, reach_ms=500)
    h.through_seeds()
    hand = h.core.hand
    assert hand is not None
    began = hand.turn_began
    h.advance(began + 2900)
    pid, seat = h.on_turn()
    # a walk-in's sit: its write fails, the table waits to reload
    h.store.add_player("walk_in", b"\x01" * 32, 10**6)
    h.send("walk_in", "sit", {"seat": 3})
    ((op_id, _),) = h.inflight.items()
    h.now += 100
    h.answer(op_id, io.Result.FAILED)
    assert h.core.mode is Mode.WAITING
    refused_at = h.now
    head = hand.recorder.head
    if kind == "leave":
        move = {"kind": "leave", "seat": seat}
        sig = h.signers[pid].sign("move", move_body("t0", hand.hand_no, head, move), PROTOCOL_V2)
        h.send(pid, "leave", {"hand_no": hand.hand_no, "prev": head, "sig": sig})
    else:
        h.draw()
    (reply,) = [e for e in h.of(io.Reply, since=refused_at) if e.error is not None]
    assert reply.error.code == "unavailable"
    h.advance(refused_at + TURN_MS - 100)
    charged = [(t, c) for t, c in h.charges() if c.seat == seat]
    assert not charged, (
        f"seat {seat} charged ({charged[0][1].kind}) {charged[0][0] - refused_at} ms after the house refused its "
        f"{kind} (D35: a whole turn, {TURN_MS} ms)"
    )
