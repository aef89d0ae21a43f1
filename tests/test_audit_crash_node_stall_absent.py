"""Audit of crashes, stalls and outages (helper h74): a stall of the node that holds an
absent player's way back.

The fault.  The process that serves a table stands still for a second or two (SIGSTOP
of the worker, a VM paused, a long collection, a starved process): longer than
``stall_ms`` (250 ms), shorter than a freeze (three beats, 3 s), so D37 pauses
nothing.  Just before it, the player on turn dropped its socket (its own doing: a page
reload, a phone changing networks) and opened a new one at once; the kernel accepts
it, and its handshake waits, unread, in the stopped process.  The turn's deadline
falls inside the stall.  At the late wake the table probes the store (the seat has no
connection, ``Steps.fire``), the probe is answered at once, and the seat is charged
(a clock move, D16, D22; at ``max_missed_turns`` 1 a clock drop, D15, and its seat
stood up, D31) — before the held handshake, its token's lookup and its ``join`` have
had a turn of the loop.

Who pays: the player on turn, for a turn the house's own stall took the end of.  D37
gives a *connected* seat the time it had left when the node was last awake
(``TableCore._stalled``), and says of the others "a seat with no connection gets
nothing back (D16: the clock moves for an absent seat)": nothing of it waits unread.
Its new socket does: a stopped process holds every handshake as a hung store does.

The rule's own seams are uneven here: the same player, its way back held by a *store*
that stalls 1.9 s (the tail of a hang the table did not see begin), keeps its grace
from the answer (D37, ``TableCore._answered_late``: the clock's probe, h66, and any
write, h74); held by a node that stands still 3 s or more, it has its reach and grace
(``Reachability.fault_over``, ``stood_still``); held by a node that stands still 2.9 s
it has nothing.

Fixed (2026-12-07, later; D37 amended): ``TableCore._stalled`` gives such a seat its
grace from the wake, once a window.  The audit's suggested rule was: a stall of the
node longer than ``stall_ms`` across the deadline of a seat with no connection gives
that seat ``resume_grace`` from the wake, once a window and never past the window's
end plus a whole one (``HandRun.hold_for_short_stall``, as a late probe does), so that
a handshake the stall held reaches the table first; a node late at every wake still
ends the turn.
"""

from __future__ import annotations

from service.tablecore import io
from tests.test_tablecore import CFG, TURN_MS, Harness, turn_began

STALL = 2000  # ms: more than stall_ms, less than freeze_ms
assert CFG.stall_ms < STALL < CFG.freeze_ms


def test_an_absent_player_whose_new_socket_a_stall_of_the_node_held_is_not_charged_at_the_wake() -> None:
    h = Harness()
    h.through_seeds()
    pid, seat = h.on_turn()
    h.advance(turn_began(h) + TURN_MS - 1500)  # past the grace since the load
    h.step(io.Reach(pid, False))  # its socket drops; its new one is under way
    deadline = turn_began(h) + TURN_MS
    h.advance(deadline - 800)
    # the node stands still from here for STALL ms: the handshake waits, unread
    h.now += STALL
    h.step(io.Tick(), stalled=STALL)
    woke = h.now
    h.answer_all()  # the clock's probe (the seat has no connection), answered at once
    h.step(io.Reach(pid, True))  # the held handshake, through
    charged = [(t, c) for t, c in h.charges() if c.seat == seat]
    assert charged == [], (
        f"the seat on turn was charged {[t - woke for t, _ in charged]} ms after a {STALL} ms stall of the node "
        f"ended, before the new socket the stall held could reach the table"
    )
