"""Audit of crashes, stalls and outages (helper h74): a leave queued behind a write the
store failed.

The fault.  A hand in play; the seat on turn draws, and the store fails that write (a
database restarted, a connection cut: the answer is an error, nothing stored).  A seat
off turn had signed a ``leave`` (D15: 40 points "at any time") that reached the table
while the draw was in flight, so it waited in the queue.  The table drops its memory
and reloads (D32); the draw in flight is refused ``unavailable`` with its signed ack
and the seat's whole turn (D35), but the leave that waited behind it is refused
``unavailable`` too — with no ack — and forgotten.  After the reload the seat on turn
sends its draw again, and the house records it before the leave, which the leaver's
client can only send again after it has heard the refusal.

Who pays: the leaver, when the move the house takes first ends the hand by counting its
cards — another seat's valid declare counts them at up to 80 points where the leave
cost 40 (D13, D15) — and it cannot show it was overtaken: a refusal of the queue
carries no ack, so §15 rule 7 (``verifier.evidence.owed_window``) has nothing to hold
against the log.  (Here only the order is shown: the draw of the seat on turn is the
record taken first.)

The rule it breaks: D35, "A leave signed in play (D15) is a move the rules allow like
any other: refused by the house, it leaves the seat its whole turn, and the house
takes no other seat's move before it within that turn … A leave whose write the store
did not take is therefore not refused: it is taken again, first, once the table is
back (``TableCore._take_again``)" — done for the leave whose own write failed, not for
one that waited behind another's.

Fixed (``TableCore._failed``): a signed leave that waited in the queue is not refused
when the write before it fails; it stays queued, behind the leave in flight if there
was one (``_take_again``), and is judged first once the table is back.
"""

from __future__ import annotations

from service.tablecore import io
from tests.test_tablecore import Harness
from verifier.chain import move_body
from verifier.fairness import PROTOCOL_V2


def test_a_leave_queued_behind_a_failed_write_is_taken_before_any_other_move() -> None:
    h = Harness(players=3)
    h.through_seeds()
    pid, seat = h.on_turn()
    hand = h.core.hand
    assert hand is not None
    leaver = next(p for s, p in hand.players.items() if s != seat)
    leaver_seat = hand.seat_of(leaver)
    assert leaver_seat is not None
    head = hand.recorder.head
    h.draw()  # the seat on turn: its write in flight
    move = {"kind": "leave", "seat": leaver_seat}
    sig = h.signers[leaver].sign("move", move_body("t0", hand.hand_no, head, move), PROTOCOL_V2)
    h.send(leaver, "leave", {"hand_no": hand.hand_no, "prev": head, "sig": sig})  # waits behind the draw
    leave_id = h.ids
    (op_id,) = h.inflight
    h.answer(op_id, io.Result.FAILED)  # the store fails the draw: the table reloads
    h.advance(h.now + 1000)  # the reload works
    h.draw()  # the seat on turn draws again
    h.answer_all()
    hand = h.core.hand
    assert hand is not None
    after = [r for r in hand.recorder.records if r.get("type") == "action"]
    first = after[0]["action"] if after else None
    (reply,) = [e for e in h.of(io.Reply) if e.cmd_id == leave_id]
    assert first == move, (
        f"the leave that waited behind the failed draw was refused "
        f"{reply.error.code if reply.error else reply.result!r} (ack: {getattr(reply.error, 'ack', None)}) "
        f"and another seat's move was recorded first: {first}"
    )
    assert reply.error is None and reply.result is not None and reply.result["charged"] is True
