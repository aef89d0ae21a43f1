"""The table core's clock, driven step by step with a virtual clock (D37): a wall
clock that steps back or forward, a table ahead of its clock coming back to it, logs
written and loaded on clocks behind and ahead, and the node's stalls — long ones
(``stall_ms``), short ones (``jitter_ms`` to ``stall_ms``) and those only the loop's
meter counted.  The harness is tests/test_tablecore.py's."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from service.tablecore import io
from service.tablecore.core import TableCore
from service.tablecore.errors import unavailable
from service.tablecore.phase import HandPhase
from tests.test_audit_crash_slow_answer import seed_move
from tests.test_tablecore import CFG, TURN_MS, Harness, turn_began
from verifier.chain import move_body
from verifier.fairness import PROTOCOL_V2
from verifier.hand import Discard, action_to_json
from verifier.signing import Signer
from verifier.transcript import verify_transcript

HOUR = 3_600_000


def _finish_by_the_clock(h: Harness) -> dict[str, Any]:
    """Nobody moves: the clock drops the seat on turn (three missed turns) and the hand
    ends; its transcript, as the store holds it, verified."""
    hand = h.core.hand
    assert hand is not None
    h.advance(h.now + 4 * (TURN_MS + 500) + CFG.next_hand_ms)
    stored = h.store.hands[hand.hand_id]
    assert stored.transcript is not None, "the hand did not end"
    report = verify_transcript(stored.transcript, h.keys.signer.public_bytes)
    assert report.ok, report.failure
    times = [int(r["t"]) for r in stored.transcript["log"]]
    assert times == sorted(times)
    return stored.transcript


def _load_on_another_clock(h: Harness, offset: int) -> None:
    """The table loaded by a fresh core (a restart, or a node taking it over) whose
    clock is ``offset`` ms from the one that wrote its log."""
    h.core.refuse_all(unavailable())
    h.inflight.clear()
    h.now += offset  # the new owner's clock
    h.core = TableCore("t0", h.keys, CFG)
    h.step(io.Tick())
    h.answer_all()


def _stepped_back_mid_turn(ms: int) -> tuple[Harness, int]:
    """A hand dealt and, a second into its first turn, the clock steps back ``ms``:
    the harness and when that turn began (on the table's time)."""
    h = Harness()
    h.through_seeds()
    began = turn_began(h)
    h.advance(began + 1000)
    h.now -= ms
    h.step(io.Tick())
    assert h.core.skew == ms
    return h, began


def test_a_clock_that_steps_back_holds_no_turn() -> None:
    """D37: the wall clock steps back an hour in the middle of a turn (a corrected system
    clock).  The table's time goes on from where it was: the turn ends at its ordinary
    end (before, the seat on turn held the table for the hour, the records' times stood
    still), the deadline clients are told and the wake-up the shell is asked for are on
    the stepped clock (the moment it will read when the turn ends), and the hand that
    the clock then ends verifies."""
    h, began = _stepped_back_mid_turn(HOUR)
    arm = [e for _, e in h.effects if isinstance(e, io.Arm)][-1]
    # the wake-up is the moment the clock reads when the table's time reaches the turn's
    # end: a little later than the hour back, as the table's time gains on the clock
    # from the step (D37, CFG.slew)
    end = began + TURN_MS
    assert h.core.time_at(arm.at) >= end > h.core.time_at(arm.at - 1)
    assert end - HOUR < arm.at <= end - HOUR + TURN_MS // (CFG.slew - 1) + 1
    stepped = len(h.effects)
    h.advance(arm.at + 1000)
    charges = h.charges()
    assert len(charges) == 1 and charges[0][1].kind == "play", "the turn waited for the clock to catch up"
    assert arm.at <= charges[0][0] <= arm.at + 500
    (update, *_) = [e for _, e in h.effects[stepped:] if isinstance(e, io.TellUpdate)]
    turn = h.core.hand
    assert turn is not None
    end = turn.turn_began + TURN_MS
    assert h.core.time_at(update.deadline) >= end > h.core.time_at(update.deadline - 1)  # on the clock clients have
    transcript = _finish_by_the_clock(h)
    assert int(transcript["log"][-1]["t"]) > began  # the table's time never went back


def _play_after_a_miss(h: Harness) -> None:
    """The seat on turn draws and discards when the clock closed its last turn (one
    miss, never the three that drop it), and otherwise waits for the clock."""
    hand = h.core.hand
    if hand is None or hand.phase is not HandPhase.PLAY or h.core.pending is not None:
        return
    pid, seat = h.on_turn()
    state = hand.recorder.state
    assert state is not None
    me = next(x for x in state.seats if x.seat == seat)
    if me.missed == 0:
        return
    if me.drawn_this_turn is None:
        h.draw()
        h.answer_all()
        state = hand.recorder.state
        assert state is not None
        me = next(x for x in state.seats if x.seat == seat)
    card = next(c for c in me.cards if c != me.drawn_this_turn)
    move = action_to_json(Discard(seat, card))
    head = hand.recorder.head
    sig = h.signers[pid].sign("move", move_body("t0", hand.hand_no, head, move), PROTOCOL_V2)
    body = {k: v for k, v in move.items() if k != "seat"}
    h.send(pid, "action", {"hand_no": hand.hand_no, "action": body, "prev": head, "sig": sig})
    h.answer_all()


def test_a_table_ahead_of_its_clock_comes_back_to_it() -> None:
    """D37: the clock steps back a minute in the middle of a turn.  The table's time goes
    on from where it was, then gains on the clock by a tenth of its pace (``slew``) until
    the two meet, ten minutes later: the records come back to the clock's time and never
    go back.  Meanwhile every window and turn the clock closes closes where the deadline
    told to clients said it would (on their clock), and no later than a beat after."""
    minute = 60_000
    h, _ = _stepped_back_mid_turn(minute)
    stepped, since = h.now, len(h.effects)
    skews = []
    while h.core.skew > 0 and h.now < stepped + 2 * minute * CFG.slew:
        h.advance(h.now + 500)
        _play_after_a_miss(h)  # the clock closes every other turn of a seat; the hand goes on
        skews.append(h.core.skew)
    assert skews == sorted(skews, reverse=True) and skews[-1] == 0, "the table's time stays ahead of the clock"
    assert stepped + minute * CFG.slew <= h.now <= stepped + minute * CFG.slew + 500
    hand = h.core.hand
    assert hand is not None and hand.hand_no == 1 and hand.phase is HandPhase.PLAY
    transcript = _finish_by_the_clock(h)
    times = [int(r["t"]) for r in transcript["log"]]
    assert times[-1] - h.now < 5 * (TURN_MS + 500), "the records did not come back to the clock"
    # each charge falls on the first beat at or after the deadline last told (from the
    # step on: the turn in progress then was told its deadline on the clock before it)
    told: int | None = None
    checked = 0
    for at, e in h.effects[since:]:
        if isinstance(e, io.TellUpdate | io.TellPhase):
            told = e.deadline
        elif isinstance(e, io.Charge) and told is not None:
            assert told <= at < told + 500, (told, at, e)
            checked += 1
    assert checked >= 50, checked


def _hang_a_draw(h: Harness) -> int:
    """The seat on turn draws and the store does not answer: the index of the effects
    from then on."""
    since = len(h.effects)
    h.draw()
    assert h.core.pending is not None
    return since


def _paused(h: Harness, since: int) -> list[int]:
    """When the table told its clients ``paused``, from effect ``since`` on."""
    return [t for t, e in h.effects[since:] if isinstance(e, io.TellAll) and e.message["type"] == "paused"]


def test_a_write_hung_on_a_table_ahead_of_its_clock_is_timed_on_the_clock() -> None:
    """D37 while the table's time is ahead of its clock and gaining on it: a write
    unanswered for ``hung_ms`` on the clock pauses the table (the house is at fault),
    though less than ``hung_ms`` of the table's slower time has passed.  Timed on the
    table's time (the simulator's world 61206016 found it), the write was not hung
    yet, and a window that closed meanwhile charged its seat at once where D37 owes a
    grace."""
    h, _ = _stepped_back_mid_turn(HOUR)
    since = _hang_a_draw(h)
    sent = h.now
    h.advance(sent + CFG.hung_ms - 100, answer=False)
    assert not h.core.hung
    h.advance(sent + CFG.hung_ms, answer=False)
    assert h.core.hung, "a write unanswered for hung_ms on the clock did not pause the table"
    assert _paused(h, since) == [sent + CFG.hung_ms]
    arms = [e.at for _, e in h.effects[since:] if isinstance(e, io.Arm)]
    assert arms and arms[0] == sent + CFG.hung_ms  # the wake-up asked for, on the clock


def test_a_write_pending_when_the_clock_steps_back_is_found_hung_at_once() -> None:
    """D37: the clock steps back an hour while a write is pending, and the store hangs.
    How long the write waited across the step cannot be told (timed on the clock's
    forward run, ``TableCore.steady``, the step's own interval is lost: the simulator
    found a write 2.1 s slow timed at 1.3 s, and a seat charged as it answered), so the
    house takes it as hung at once — not an hour later when the clock has caught up
    (then no pause is told, and the grace D37 owes after a hung write is not given) —
    and tells `paused` once; the store's answer ends the fault with every grace."""
    h = Harness()
    h.through_seeds()
    h.advance(turn_began(h) + 500)
    since = _hang_a_draw(h)
    h.advance(h.now + 500, answer=False)
    assert not h.core.hung
    h.now -= HOUR
    h.step(io.Tick())
    assert h.core.skew >= HOUR - 1
    assert h.core.hung, "a write pending across a step back of the clock was not found hung"
    back = h.now
    h.advance(back + CFG.hung_ms + 1000, answer=False)
    assert len(_paused(h, since)) == 1
    h.answer_all()
    assert h.core.reach.recovered_at == h.core.last_now and h.of(io.TellResumed, since=back)


def test_a_log_written_ahead_of_the_clock_holds_no_turn() -> None:
    """D32, D37: the table is loaded by a fresh core (a restart, or a node taking it over)
    whose clock is an hour behind the one that wrote its log.  The hand's time goes on
    from its newest record: the seat on turn has its whole turn and the grace from the
    load, not an hour more, and the hand the clock then ends verifies."""
    h = Harness()
    h.through_seeds()
    began = turn_began(h)
    h.advance(began + 1000)
    _load_on_another_clock(h, -HOUR)
    for pid in h.signers:
        h.step(io.Reach(pid, True))
    loaded = h.now
    assert h.core.skew >= HOUR - 1000
    hand = h.core.hand
    assert hand is not None and hand.phase is HandPhase.PLAY and turn_began(h) == began
    told = h.core.told_deadline(hand)
    assert told is not None and loaded + CFG.grace_ms <= told <= loaded + TURN_MS + CFG.grace_ms
    h.advance(loaded + TURN_MS + CFG.grace_ms + 1000)
    charges = h.charges()
    assert charges and charges[0][1].kind == "play", "the turn waited for the clock to catch up"
    assert loaded + CFG.grace_ms <= charges[0][0] <= loaded + TURN_MS + CFG.grace_ms + 500
    _finish_by_the_clock(h)


def test_a_hand_dealt_after_a_load_on_a_clock_behind_is_dated_after_the_last() -> None:
    """D37 across hands: the table is loaded between hands by a fresh core (a restart,
    or a node taking it over) whose clock is an hour behind the one that ended the
    last hand.  No hand is in progress to catch up with, so the load goes on from the
    last hand's newest record: the next hand's header is not dated an hour before the
    end of the hand before it."""
    h = Harness()
    h.through_seeds()
    h.advance(h.now + 2 * (TURN_MS + 500))
    last = int(_finish_by_the_clock(h)["log"][-1]["t"])
    assert h.core.hand is None
    newcomer = Signer(Ed25519PrivateKey.from_private_bytes(bytes(range(32))))
    h.store.add_player("p9", newcomer.public_bytes, 10**6)
    h.store.tables["t0"].facts.seats[3] = "p9"  # the clock stood one seat up: a third player keeps a pair
    _load_on_another_clock(h, -HOUR)
    assert h.core.skew == last - h.now > HOUR - 60_000  # its time goes on from the last record
    for pid in h.store.tables["t0"].facts.seats.values():
        h.step(io.Reach(pid, True))
    h.advance(h.now + CFG.next_hand_ms + 1000)
    hand = h.core.hand
    assert hand is not None and hand.hand_no == 2, "no next hand was dealt"
    assert int(hand.recorder.records[0]["t"]) >= last, "the next hand is dated before the last one ended"


def test_a_log_loaded_on_a_clock_ahead_gives_the_seat_on_turn_its_whole_turn() -> None:
    """D32, D35 the other way: the table is loaded mid-turn by a fresh core whose clock
    is an hour ahead of the one that wrote its log (a node ahead, a restart after the
    clock was set forward).  By that clock the turn ran out an hour ago; the seat on
    turn is charged nothing for the hour: it keeps a whole turn from the load (not
    only the grace), and the deadline it is told says so."""
    turn = 20_000  # longer than the grace: the whole turn, not the grace, is what is owed
    h = Harness(turn_ms=turn)
    h.through_seeds()
    began = turn_began(h)
    h.advance(began + 1000)
    _load_on_another_clock(h, HOUR)
    loaded = h.now
    assert h.core.skew == 0 and h.charges() == []
    for pid in h.signers:
        h.step(io.Reach(pid, True))
    hand = h.core.hand
    assert hand is not None and turn_began(h) == began
    told = h.core.told_deadline(hand)
    assert told is not None and loaded + turn <= told <= loaded + turn + CFG.grace_ms + 1000, told - loaded
    h.advance(loaded + turn - 500)
    assert h.charges() == [], "charged before a whole turn from the load"
    h.advance(loaded + turn + CFG.grace_ms + 1000)
    charges = h.charges()
    assert charges and charges[0][1].kind == "play"
    assert loaded + turn <= charges[0][0] <= loaded + turn + CFG.grace_ms + 500


def test_a_clock_that_steps_forward_is_a_node_that_stood_still() -> None:
    """The other way: a clock that jumps an hour ahead charges nobody for the hour — the
    node stood still, every grace starts again (D37) — and the turn then ends a grace
    later, on the clock as it is."""
    h = Harness()
    h.through_seeds()
    began = turn_began(h)
    h.advance(began + 1000)
    h.now += HOUR
    jumped = h.now
    h.step(io.Tick())
    assert h.charges() == [] and h.core.skew == 0
    h.advance(jumped + CFG.grace_ms + 1000)
    charges = h.charges()
    assert len(charges) == 1 and jumped + CFG.grace_ms <= charges[0][0] <= jumped + CFG.grace_ms + 500


def test_a_short_stall_across_the_deadline_leaves_the_seat_on_turn_what_it_had() -> None:
    """D37: the node stalls 1.6 s from 0.6 s before the turn's end (too short for a
    freeze): as it wakes the seat on turn, connected, is not charged, and keeps the
    time it had left when the node was last awake (here a beat: 1 s) from the wake."""
    h = Harness()
    h.through_seeds()
    deadline = h.core.told_deadline(h.core.hand)  # type: ignore[arg-type]
    assert deadline is not None and deadline >= turn_began(h) + TURN_MS
    h.advance(deadline - 600)
    last = h.now
    h.now = deadline + 1000  # the stall: no step between
    h.step(io.Tick())
    assert h.charges() == [], "charged as the node woke from a stall"
    held = h.core.told_deadline(h.core.hand)  # type: ignore[arg-type]
    assert held == h.now + max(deadline - last, CFG.beat_ms)
    h.advance(held + 1000)
    charges = h.charges()
    assert len(charges) == 1 and held <= charges[0][0] <= held + 500


def test_a_stall_longer_than_the_window_leaves_the_seat_what_it_had() -> None:
    """D37: a stall short of a freeze can outlast a short window (a commit window of
    2 s here; the node stops 2.9 s from 0.6 s before its end).  As the node wakes the
    seats keep what they had left (a beat), from the wake, and a commitment read only
    then is taken: the cap (the deadline at the first stall plus the whole window) is
    counted from the stall's end when the stall passed it.  Found by the simulator
    (seed 24 of its leaving world): the seat was charged at the wake, its commitment,
    sent in time, still unread."""
    h = Harness()
    h.advance(h.now + CFG.next_hand_ms + 500)
    hand = h.core.hand
    assert hand is not None and hand.phase is HandPhase.COMMIT and hand.window_ms(hand.phase) == CFG.commit_ms
    deadline = h.core.told_deadline(hand)
    assert deadline is not None
    h.advance(deadline - 600)
    last = h.now
    h.now = last + CFG.freeze_ms - 100  # the stall: no step between, short of a freeze
    assert h.now > deadline + CFG.commit_ms
    h.step(io.Tick())
    assert h.charges() == [], "charged as the node woke from a stall"
    held = h.core.told_deadline(hand)
    assert held == h.now + max(deadline - last, CFG.beat_ms)
    seat = hand.seat_of("p0")
    assert seat is not None
    h.send("p0", "commit", seed_move(h, "p0", seat, "commit", b"s" * 32))  # sent in time, read only now
    h.answer_all()
    (reply,) = [e for e in h.of(io.Reply) if e.cmd_id == h.ids]
    assert reply.error is None, reply.error
    h.advance(held + 1000)
    assert [c.seat for _, c in h.charges()] == [1 - seat], "the other seat is charged once its time is up"


def test_a_node_late_at_every_wake_still_ends_the_turn_within_twice_its_window() -> None:
    """A node starved for good wakes 400 ms late every time: each late wake holds the
    seat on turn again, but never past its deadline at the first stall plus the whole
    turn, so the turn ends (D37's bound); an absent seat is held once, its grace from a
    late wake (a handshake may have waited in the stall), within the same bound."""
    for connected in (True, False):
        h = Harness(connected=connected)
        if not connected:
            for pid in h.signers:
                h.step(io.Reach(pid, True))
        h.through_seeds()
        on_turn, _ = h.on_turn()
        if not connected:
            h.step(io.Reach(on_turn, False))
        hand = h.core.hand
        assert hand is not None
        window = hand.window_ms(hand.phase)
        first = h.core.deadline(hand, hand.phase)
        assert first is not None
        for _ in range(100):
            if h.charges():
                break
            armed = h.core.armed
            wake = h.now + 1000 if armed is None else min(armed, h.now + 1000)
            h.now = wake + 400
            h.step(io.Tick())
            h.answer_all()
        charges = h.charges()
        assert charges, "a node late at every wake never ended the turn"
        assert charges[0][0] <= first + window + 400 + 1000  # the cap, then one more late wake
        if connected:
            assert charges[0][0] > first + 1000, "no late wake held the seat"
        else:
            assert len(hand.settled) == 1, f"an absent seat was held other than once: {hand.settled}"


def test_a_stall_the_loop_counted_holds_the_seat_though_the_wake_came_on_time() -> None:
    """A stop of a second that began a moment before the turn's end: the wake comes on
    time, but the shell's loop counted the stall (service.stallmeter) and the core
    takes it as its own (D37): the seat on turn keeps what it had; a hiccup of 200 ms
    (under ``stall_ms``) is a short stall: the seat keeps 200 ms more, once."""
    h = Harness()
    h.through_seeds()
    deadline = h.core.told_deadline(h.core.hand)  # type: ignore[arg-type]
    assert deadline is not None
    h.advance(deadline - 1)
    h.now = deadline
    h.step(io.Tick(), stalled=200)
    assert h.charges() == [], "charged as the loop woke from a short stall it counted"
    assert h.core.told_deadline(h.core.hand) == deadline + 200  # type: ignore[arg-type]
    h.advance(deadline + 1000)
    charges = h.charges()
    assert len(charges) == 1 and deadline + 200 <= charges[0][0] <= deadline + 200 + 10
    h = Harness()
    h.through_seeds()
    h.advance(deadline - 1)
    h.now = deadline
    h.step(io.Tick(), stalled=1000)
    assert h.charges() == [], "charged as the loop woke from a stall it counted"
    assert h.core.told_deadline(h.core.hand) == deadline + CFG.beat_ms  # type: ignore[arg-type]


def test_a_wake_a_tenth_of_a_second_late_holds_the_seat_on_turn_once_and_jitter_not_at_all() -> None:
    """D37's short stall: a wake more than ``jitter_ms`` and at most ``stall_ms`` late
    gives the connected seat whose clock ran out in it as long again as the wake was
    late, at least ``settle_ms``, once a window: the next late wake charges it (a loop
    late at every wake still ends its turns).  A wake within the jitter holds nothing,
    and an absent seat is not held (D16)."""
    cases = ((60, True, CFG.settle_ms), (180, True, 180), (CFG.jitter_ms, True, 0), (60, False, 0))
    for late, connected, held in cases:
        h = Harness(connected=connected)
        if not connected:
            for pid in h.signers:
                h.step(io.Reach(pid, True))
        h.through_seeds()
        if not connected:
            h.step(io.Reach(h.on_turn()[0], False))
        deadline = h.core.told_deadline(h.core.hand)  # type: ignore[arg-type]
        assert deadline is not None
        h.advance(deadline - 1)
        h.now = deadline + late  # the wake, due at the deadline, comes ``late`` ms late
        h.step(io.Tick())
        if not held:
            h.answer_all()  # an absent seat's charge waits for the store's answer to a probe (D37)
            assert len(h.charges()) == 1, (late, connected)
            continue
        assert h.charges() == [], f"charged as the node woke {late} ms late"
        assert h.core.told_deadline(h.core.hand) == h.now + held  # type: ignore[arg-type]
        h.now += held + late  # its next wake late again: no second hold
        h.step(io.Tick())
        assert len(h.charges()) == 1, "a second short stall held the same window again"
