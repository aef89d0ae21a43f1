"""Audit of the seams between processes (helper h89): a table that changes hands.

The fault.  Between two hands the table writes the next deal (``io.StartOp``) and a
player leaves meanwhile: its leave waits in the queue behind that write, and D36 has
the house void the hand for it once the deal is stored ("left while the hand was being
dealt", ``TableCore.behind_deal``).  But the table may change hands with the deal's
write in flight: the node lets the lease go on its own clock because it could not
renew it in time (``Cluster.expire``: the write, already sent, is stored once the
database answers — the lease is still the node's there), or the heartbeat finds it
lost, or the node is sent SIGTERM (``TableActor.stop`` lets the write finish, but the
void it then makes for the leave is never written), or the worker is killed.  The
leave is refused ``moved`` (``shutting_down``, or never answered), and nothing of it is
stored.  The player's client sends it again to the new owner, which finds the hand in
its commit window: D36's leave "in the seed phases" — the seat is dealt in, its seed
missed, and the clock plays for it until it drops it: 40 points (``max_missed_turns``
3) for a hand it had left before anyone was told it was dealt.

Who pays: the leaver, for the house's handover.

Fixed (D36, ``Commands._left_before``): a core whose first load finds a hand in its
commit window with no commitment stored cannot know whether its last owner refused a
leave behind that deal — as it cannot know which moves it refused (D32, D35) — so a
leave of a seat that has not committed, in that hand's commit window, is judged as one
that came while the deal was being written: the hand is voided, the seat stood up,
nobody charged.  A hand with a commitment stored had been told: a leave then is D36's
leave in the seed phases, as before (the control below).

What was checked and found sound (the simulator, ``test_tables_that_change_hands_every_
few_seconds_on_clocks_that_disagree_keep_every_invariant``): a table taken over every
1 to 3 s (in every phase, with writes in flight), each new owner's clock up to 40 s
behind or ahead of the last one's, players leaving in play, in the seed phases and
behind deals: no seat charged while the house was at fault or within its grace, no
turn charged before its whole window from the takeover (D32), no record dated before
the one before it (D37), every transcript verifies, the ledger balances.
"""

from __future__ import annotations

import random

from service.tablecore import io
from service.tablecore.core import TableCore
from service.tablecore.errors import shutting_down
from service.tablecore.phase import HandPhase
from tests.sim.leaving import LeaveWorld
from tests.sim.world import Fault, SimTable
from tests.test_audit_crash_leave_behind_deal import deal_in_flight, play_out, total
from tests.test_audit_crash_slow_answer import seed_move
from tests.test_tablecore import CFG, Harness


def taken_over(h: Harness) -> None:
    """Another node (or a new process) takes the table: a new epoch, a new core loaded
    from the store, both players connected to it again."""
    h.store.tables["t0"].epoch += 1
    h.core = TableCore("t0", h.keys, CFG)
    h.step(io.Tick())
    h.answer_all()
    for p in ("p0", "p1"):
        h.step(io.Reach(p, True))


def bo_leaves_again_at_the_new_owner(h: Harness, before: dict[str, int]) -> None:
    """Bo's client sends its refused leave again and closes; the hand the old owner
    dealt is voided for it, bo is stood up, and nobody pays anything."""
    hand = h.core.hand
    assert hand is not None and hand.phase is HandPhase.COMMIT and 1 in hand.players
    h.send("p1", "leave", {})
    again = h.ids
    h.step(io.Reach("p1", False))
    h.answer_all()
    (reply,) = [e for e in h.of(io.Reply) if e.cmd_id == again]
    assert reply.error is None, reply.error
    assert reply.result["charged"] is False and reply.result.get("voided") == hand.hand_id, reply.result
    if h.core.hand is not None:  # (before the fix: bo was dealt in and the clock played for him)
        play_out(h, "p0")
    assert h.core.facts is not None and "p1" not in h.core.facts.seats.values()
    assert {p: total(h, p) for p in before} == before
    assert [c for _, c in h.charges() if c.seat == 1] == []


def test_a_leave_behind_a_deal_refused_moved_as_the_lease_went_is_not_charged_at_the_new_owner() -> None:
    """Ann and bo sit; the deal is being written when bo leaves; the node lets the
    lease go (it could not renew it in time) and refuses bo's leave ``moved``; the
    deal's write is stored all the same.  At the new owner bo's leave, sent again,
    voids the hand (D36), as it would have at the old one."""
    h = Harness()
    before = {p: total(h, p) for p in ("p0", "p1")}
    deal = deal_in_flight(h)
    h.send("p1", "leave", {})
    first = h.ids
    assert first in h.core.behind_deal
    h.step(io.LeaseEvent(io.Lease.LOST))
    (reply,) = [e for e in h.of(io.Reply) if e.cmd_id == first]
    assert reply.error is not None and reply.error.code == "moved"
    h.inflight.pop(deal.op_id)
    h.store.run("t0", h.store.tables["t0"].epoch, deal.op)  # stored: the lease was still the node's there
    taken_over(h)
    bo_leaves_again_at_the_new_owner(h, before)


def test_a_leave_behind_a_deal_refused_as_the_node_stopped_is_not_charged_at_the_new_owner() -> None:
    """SIGTERM with the deal in flight: the shell lets the write finish and steps its
    answer (the deal stored), the core judges bo's leave behind it — a void — but the
    void's write is never run (the shell is stopping) and the leave is refused
    ``shutting_down``.  The next node finds the hand in its commit window; bo's leave,
    sent again, voids it (D36)."""
    h = Harness()
    before = {p: total(h, p) for p in ("p0", "p1")}
    deal = deal_in_flight(h)
    h.send("p1", "leave", {})
    first = h.ids
    h.answer(deal.op_id)  # the deal stored and stepped; the leave's void is written next ...
    voids = [e for e in h.inflight.values() if isinstance(e, io.Write) and isinstance(e.op, io.UnseatOp)]
    assert voids, "the leave behind the deal was judged a void"
    h.inflight.clear()  # ... but never runs: the shell is stopping
    fx = h.core.refuse_all(shutting_down())
    assert [e.error.code for e in fx if isinstance(e, io.Reply) and e.cmd_id == first and e.error] == ["shutting_down"]
    taken_over(h)
    bo_leaves_again_at_the_new_owner(h, before)


def test_a_leave_behind_a_deal_lost_with_a_killed_worker_is_not_charged_at_the_restarted_one() -> None:
    """The worker is killed with the deal's write in flight, which commits: its leave
    was never answered.  The restarted worker loads the hand; bo's leave, sent again,
    voids it (D36)."""
    h = Harness()
    before = {p: total(h, p) for p in ("p0", "p1")}
    deal = deal_in_flight(h)
    h.send("p1", "leave", {})
    h.inflight.pop(deal.op_id)
    h.store.run("t0", h.store.tables["t0"].epoch, deal.op)
    taken_over(h)
    bo_leaves_again_at_the_new_owner(h, before)


def test_control_a_leave_after_a_commitment_was_stored_is_a_leave_in_the_seed_phases() -> None:
    """A hand with a commitment stored had been told: a leave in its commit window at
    the new owner is D36's leave in the seed phases (stood up when the hand ends; the
    clock plays for the seat), as at the old owner."""
    h = Harness()
    deal_in_flight(h)
    h.answer_all()
    hand = h.core.hand
    assert hand is not None and hand.phase is HandPhase.COMMIT
    seed = bytes([1]) * 32
    h.send("p0", "commit", seed_move(h, "p0", 0, "commit", seed))  # ann commits
    h.answer_all()
    assert 0 in hand.commits
    taken_over(h)
    assert h.core.hand is not None and h.core.hand.phase is HandPhase.COMMIT and 0 in h.core.hand.commits
    h.send("p1", "leave", {})
    again = h.ids
    h.answer_all()
    (reply,) = [e for e in h.of(io.Reply) if e.cmd_id == again]
    assert reply.error is None and reply.result.get("after_hand") is True and "voided" not in reply.result


def test_control_a_seat_that_committed_cannot_void_the_restored_hand_by_leaving() -> None:
    """At the new owner ann commits first; her leave in the commit window afterwards is
    no leave behind the deal (she had been told the hand): D36's leave in the seed
    phases.  Bo's, who has not committed, still voids it."""
    h = Harness()
    deal = deal_in_flight(h)
    h.inflight.pop(deal.op_id)
    h.store.run("t0", h.store.tables["t0"].epoch, deal.op)
    taken_over(h)
    hand = h.core.hand
    assert hand is not None
    h.send("p0", "commit", seed_move(h, "p0", 0, "commit", bytes([1]) * 32))
    h.answer_all()
    h.send("p0", "leave", {})
    ann = h.ids
    h.answer_all()
    (reply,) = [e for e in h.of(io.Reply) if e.cmd_id == ann]
    assert reply.error is None and "voided" not in reply.result and reply.result.get("after_hand") is True
    h.send("p1", "leave", {})
    bo = h.ids
    h.answer_all()
    (reply,) = [e for e in h.of(io.Reply) if e.cmd_id == bo]
    assert reply.error is None and reply.result.get("voided") == hand.hand_id, reply.result


class FlappingWorld(LeaveWorld):
    """Each node that takes a table runs a clock of its own: up to ``skew`` ms behind
    or ahead of the world's (D37: the table's time never goes back)."""

    def __init__(self, *a: object, skew: int = 0, **kw: object) -> None:
        super().__init__(*a, **kw)  # type: ignore[arg-type]
        self.skew = skew
        self.clocks = random.Random(f"{self.seed}/clocks")

    def _boot(self, t: SimTable) -> None:
        if self.skew:
            t.clock_off = self.clocks.randrange(-self.skew, self.skew)
        super()._boot(t)


def test_tables_that_change_hands_every_few_seconds_on_clocks_that_disagree_keep_every_invariant() -> None:
    for seed, period, skew in ((1, 2000, 0), (2, 2000, 40_000), (3, 5000, 40_000)):
        rng = random.Random(seed)
        faults = []
        for table in range(3):
            at = 5000 + rng.randrange(period)
            while at < 120_000:
                faults.append(Fault(at, "takeover", table, 0))
                at += rng.randrange(period // 2, period * 3 // 2)
        w = FlappingWorld(seed, tables=3, duration=180_000, faults=faults, leave_rate=0.1, skew=skew)
        w.run()
        assert w.injected["takeover"] == len(faults) and w.hands_ended > 40, (w.injected, w.hands_ended)
        assert w.leaves > 20
