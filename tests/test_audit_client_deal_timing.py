"""A lying or greedy client times the house's mercy (audit of 2026-12-08, helper h90).

Finding 1: a leave that waited behind the write *before* the deal.  Between two hands
the table deals at ``next_start``; a write it has in flight then (a probe, a colluder's
``sit`` the store refuses — a write that costs its sender nothing) holds the deal.  A
``leave`` that reaches the table while that write is pending, the deal already due,
is queued as a command that came after the clock ran out (``TableCore.arrivals``,
D37), so the deal is written first, with the leaver dealt in; the leave is judged
after the deal was stored, as D36's leave in the seed phases.  The leaver pays for a
hand it left before the deal was even written (the clock plays for its seat until it
drops it: 40, D15, D22), while a leave a few milliseconds later — during the deal's
own write — voids the hand and costs nothing (D36).  Which of the two an honest
leaver meets is the house's order of writes, and colluders at the table can make the
first one happen: a refused ``sit`` sent to land as the deal falls due (D36 "a leave
that reaches the table while the deal that deals its seat in is being written came
before the hand": this one came earlier still).
"""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from service.tablecore import io
from service.tablecore.phase import HandPhase
from tests.test_audit_crash_leave_behind_deal import published, total
from tests.test_tablecore import Harness
from verifier.signing import Signer


def _colluder(h: Harness, pid: str = "p9") -> None:
    """A player with a key who cannot cover the hold (D20): its ``sit`` is a write the
    store refuses, nothing changed."""
    key = Signer(Ed25519PrivateKey.from_private_bytes(bytes(range(32)))).public_bytes
    h.store.add_player(pid, key, 1)


def test_a_leave_that_waited_behind_the_write_before_the_deal_is_not_charged_for_that_hand() -> None:
    """Ann, bo and cy sit, all connected.  Just before the deal falls due, a colluder
    (no seat, too little balance) sends ``sit``: the store takes a while to refuse it.
    The deal falls due meanwhile; bo leaves and closes his page.  His leave came
    before the deal was written: he is not dealt in (or the hand is voided, D36), and
    pays nothing."""
    h = Harness(players=3)
    _colluder(h)
    before = total(h, "p1")
    start = h.core.next_start
    assert start is not None and h.core.hand is None
    h.advance(start - 20)
    h.send("p9", "sit", {"seat": 3})  # a write: the store will refuse it (D20)
    (sit,) = [e for e in h.inflight.values() if isinstance(e, io.Write) and isinstance(e.op, io.SitOp)]
    h.advance(start + 50, answer=False)  # the deal is due; the sit's write is pending
    assert h.core.hand is None and h.core.pending is not None
    h.send("p1", "leave", {})  # bo leaves before any deal is written
    cmd_id = h.ids
    h.advance(h.now + 50, answer=False)  # answered in 120 ms: a healthy store, no stall
    h.answer(sit.op_id)  # refused: insufficient_balance
    h.answer_all()
    h.step(io.Reach("p1", False))  # answered, bo closes his page
    (reply,) = [e for e in h.of(io.Reply) if e.cmd_id == cmd_id]
    assert reply.error is None and reply.result["charged"] is False, reply
    # before: {"left": 1, "charged": False, "after_hand": True}, and the clock played for
    # bo's seat until it dropped him: a missed commitment and three timeouts, 40 points
    hand_id = reply.result.get("voided")
    assert hand_id is not None, reply.result
    assert published(h, hand_id)["log"][-1]["type"] == "void"
    assert [c for _, c in h.charges() if c.hand_id == hand_id] == []
    h.advance(h.now + 2000)
    assert total(h, "p1") == before, "bo paid for a hand he left before its deal was written"
    assert h.store.held["p1"] == 0
    assert h.core.facts is not None and "p1" not in h.core.facts.seats.values()
    hand = h.core.hand
    assert hand is not None and dict(hand.players) == {0: "p0", 2: "p2"}, "dealt again without bo"
    h.through_seeds()
    assert hand.phase is HandPhase.PLAY


def test_control_a_leave_before_the_deal_fell_due_is_a_plain_leave() -> None:
    """The control: the same leave behind the same write, the deal not yet due: it is
    taken before the deal (a plain leave, no hand voided)."""
    h = Harness(players=3)
    _colluder(h)
    start = h.core.next_start
    assert start is not None
    h.advance(start - 200)
    h.send("p9", "sit", {"seat": 3})
    h.send("p1", "leave", {})
    cmd_id = h.ids
    h.advance(start - 100, answer=False)
    h.answer_all()
    (reply,) = [e for e in h.of(io.Reply) if e.cmd_id == cmd_id]
    assert reply.error is None and reply.result == {"left": 1, "charged": False}, reply
    h.advance(h.now + 1000)
    hand = h.core.hand
    assert hand is not None and dict(hand.players) == {0: "p0", 2: "p2"}
