"""What the house owes a seat outlives the house's memory (D32, D35, D37).

A move the house refused (here: the store failed the write; the table reloaded and
answered ``unavailable`` with a signed ack) leaves the seat its whole turn from the
refusal (D35).  What the house owes is kept in the table core's memory
(``HandRun.owed``, ``Reachability.refused``): a restart of the process, or the table
moving to another node, before that turn had passed forgot it, and the new owner
re-armed the clock at the stored turn's end plus only ``resume_grace`` (D32), shorter
than a turn; the clock then moved for the seat before the window D35 owes, and the
verifier, given the player's ack, failed the hand.  Found by an audit (2026-12-03).
Now a hand loaded by a core of its own gives each seat its running clock would charge
the whole window from the resume (``TableCore._owe_what_was_forgotten``), which every
earlier refusal's window ends before.

The simulator (tests/sim/world.py) checks this invariant across crashes, but with
TURN_MS 4 s, grace 3 s and crashes of at least 1 s the grace alone always covered the
owed turn; with the defaults (30 s turns, 10 s grace) it does not.
"""

from __future__ import annotations

import json

from service.tablecore import io
from service.tablecore.clock import backoff
from service.tablecore.core import TableCore
from service.tablecore.errors import shutting_down
from tests.test_tablecore import CFG, Harness, turn_began
from verifier.transcript import verify_transcript

TURN = 10_000  # a turn longer than the grace (CFG.grace_ms = 5 s), as with the defaults (30 s vs 10 s)


def _restart(h: Harness, down_ms: int) -> None:
    """The process dies (its memory with it) and comes back ``down_ms`` later: a new
    core loads the table from the store; both players reconnect at once."""
    h.core.refuse_all(shutting_down())
    h.inflight.clear()
    h.now += down_ms
    h.core = TableCore("t0", h.keys, CFG)
    h.step(io.Tick())
    h.answer_all()
    for pid in h.signers:
        h.step(io.Reach(pid, True))


def _refused_draw(h: Harness) -> tuple[int, dict]:
    """Late in its turn the seat on turn draws; the store fails the write; the reload
    works and the draw is refused ``unavailable`` with a signed ack (D35, §15)."""
    h.through_seeds()
    h.advance(turn_began(h) + TURN - 2000)
    h.draw()
    (op_id,) = h.inflight
    h.answer(op_id, io.Result.FAILED)
    refused = h.now
    h.advance(refused + backoff("t0", 1, CFG))
    err = h.of(io.Reply)[-1].error
    assert err is not None and err.code == "unavailable"
    ack = err.ack.make()  # type: ignore[attr-defined]
    assert ack["body"]["outcome"] == "refused"
    return ack["body"]["arrived"], ack


def test_a_restart_after_a_refused_move_still_leaves_the_seat_its_whole_turn() -> None:
    h = Harness(turn_ms=TURN)
    arrived, ack = _refused_draw(h)
    pid, seat = h.on_turn()
    # Control: without the restart the core keeps the owed turn (tests/test_tablecore.py).
    assert h.core.deadline(h.core.hand) >= arrived + TURN  # type: ignore[arg-type]
    _restart(h, 1000)  # the server restarts 1 s later
    back = h.now
    h.advance(back + TURN + CFG.grace_ms + 1000)  # the whole turn from the resume, and the grace
    charges = [(t, c) for t, c in h.charges() if c.seat == seat]
    assert charges, "the clock never moved for the seat"
    at = charges[0][0]
    assert at >= arrived + TURN, (
        f"seat {seat} timed out {(at - arrived) / 1000:.1f}s after the house refused its draw "
        f"({(at - back) / 1000:.1f}s after the restart); D35 owes it a whole turn ({TURN / 1000:.0f}s)"
    )


def test_the_verifier_with_the_players_ack_accepts_the_hand_played_across_the_restart() -> None:
    h = Harness(turn_ms=TURN)
    arrived, ack = _refused_draw(h)
    _restart(h, 1000)
    # Nobody moves again: the clock plays for both seats until one is dropped (D16, D14).
    h.advance(h.now + 12 * TURN)
    finish = [e for _, e in h.effects if isinstance(e, io.Write) and isinstance(e.op, io.FinishOp)]
    assert finish, "the hand did not end"
    t = json.loads(finish[-1].op.transcript)  # published as its canonical JSON
    report = verify_transcript(t, h.keys.signer.public_bytes, [ack])
    assert report.ok, report.failure


# The same on a live server: tests/test_acks_and_keys.py, ...whole_turn[restarted].
