"""Audit of faults (helper h84): a hand voided in its commit window, and a reload
or a restart that finds it so.

1. A hand voided before any commitment (the operator's void, D33; a leave that came
   behind the deal, D36) holds ``[header, void]``: record 1 is the void, not the
   commitments.  A player's snapshot of it — a join while the void or the finish is
   being written, or the ``resumed`` every client is pushed when a reload finds the
   hand so — read record 1 as the commitments (``HandRecorder.commit_of``) and raised
   ``KeyError('commitments')`` inside the table's step.  On a server that stops the
   table's task: every client told ``moved``, the table let go and loaded afresh.
   Fixed: record 1 counts as the commitments only when it is one.

2. D36's void for a leave that came behind the deal stood the leaver up only with the
   hand's finish, from memory (``facts.after_hand``).  A process killed (or a table
   let go: its task stopped, its lease lost) after the void was stored and answered —
   the leaver told ``left`` — and before the finish was stored forgot it: the table
   loaded afresh finished the void hand and kept the leaver seated, to be dealt in (and
   played for by the clock) at the next deal while its page is still open.
   Fixed: the void and the seat's stand-up are one write (``io.UnseatOp`` with the
   void record, ``Commands._void_for_leave``).
"""

from __future__ import annotations

from service.tablecore import io
from service.tablecore.core import TableCore
from service.tablecore.phase import HandPhase
from tests.test_audit_crash_leave_behind_deal import deal_in_flight, total
from tests.test_tablecore import CFG, Harness


def commit_window(h: Harness) -> int:
    """The first hand dealt (its header stored): its hand_id."""
    deal = deal_in_flight(h)
    h.answer(deal.op_id)
    hand = h.core.hand
    assert hand is not None and hand.phase is HandPhase.COMMIT
    return hand.hand_id


def test_a_join_while_a_void_in_the_commit_window_is_written_gets_its_snapshot() -> None:
    """The operator voids the hand in its commit window; ann's page joins while the
    void is being written.  She gets her snapshot (no commitments), and the table
    goes on: the hand ends void, and is dealt again."""
    h = Harness()
    hand_id = commit_window(h)
    h.send("operator", "void", {"hand_id": hand_id, "reason": "stuck"})
    assert any(isinstance(e, io.Write) for e in h.inflight.values()), "the void is being written"
    h.send("p0", "snapshot", {"since": None})  # before: KeyError('commitments') out of step()
    join = h.ids
    h.answer_all()
    (reply,) = [e for e in h.of(io.Reply) if e.cmd_id == join]
    assert reply.error is None, reply.error
    assert reply.result["hand"]["commitments"] is None and reply.result["hand"]["committed"] is False
    h.advance(h.now + 2 * CFG.next_hand_ms + 1000)
    assert h.core.hand is not None and h.core.hand.hand_id != hand_id, "the table dealt again"


def test_a_restart_that_finds_a_hand_voided_in_its_commit_window_serves_a_join() -> None:
    """The void is stored and the process dies before the finish; a fresh process
    loads the hand (``[header, void]``) and a page joins while it finishes it."""
    h = Harness()
    hand_id = commit_window(h)
    h.send("operator", "void", {"hand_id": hand_id, "reason": "stuck"})
    (void,) = [e for e in h.inflight.values() if isinstance(e, io.Write)]
    h.store.run("t0", h.store.tables["t0"].epoch, void.op)  # stored; then the process is killed
    h.inflight.clear()
    h.core = TableCore("t0", h.keys, CFG)  # a fresh process
    h.step(io.Tick())
    (load,) = h.inflight
    h.answer(load)  # the load; the finish goes out
    assert any(isinstance(e, io.Write) and isinstance(e.op, io.FinishOp) for e in h.inflight.values())
    h.send("p0", "snapshot", {"since": None})  # before: KeyError('commitments') out of step()
    join = h.ids
    h.answer_all()
    (reply,) = [e for e in h.of(io.Reply) if e.cmd_id == join]
    assert reply.error is None, reply.error


def test_a_leaver_told_it_left_by_a_void_stays_stood_up_across_a_restart_before_the_finish() -> None:
    """Bo's leave came behind the deal (D36): the void is stored and bo is answered
    ``left``/``voided``; the process is killed before the finish is stored.  The fresh
    process does not keep him seated: he left, and was told so.  (Before, it finished
    the void hand and kept bo seated; his page still open, he was dealt the next hand
    and the clock played for him.)"""
    h = Harness()
    before = total(h, "p1")
    deal = deal_in_flight(h)
    h.send("p1", "leave", {})
    leave = h.ids
    h.answer(deal.op_id)
    (void,) = [e for e in h.inflight.values() if isinstance(e, io.Write)]
    h.answer(void.op_id)  # the void stored and answered: bo is told he left
    (reply,) = [e for e in h.of(io.Reply) if e.cmd_id == leave]
    assert reply.error is None and "voided" in reply.result
    h.inflight.clear()  # the finish's write never reaches the store: the process is killed
    h.core = TableCore("t0", h.keys, CFG)
    h.step(io.Tick())
    h.answer_all()
    for pid in ("p0", "p1"):  # both pages reconnect (bo's never closed)
        h.step(io.Reach(pid, True))
    h.advance(h.now + 3 * CFG.grace_ms)
    assert h.core.facts is not None
    assert "p1" not in h.core.facts.seats.values(), "bo, told he had left, is seated again"
    assert [c for _, c in h.charges() if c.seat == 1] == []
    assert total(h, "p1") == before
