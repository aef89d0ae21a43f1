"""The table core's rules, driven step by step with a virtual clock (issue 17, D37):
no clock while a write is pending, hung or failing; a seat's grace counted from the
moment it can reach the table again; a paused/resumed pair, not a flood, and a
backoff between reloads when the store keeps failing; no deal before the seated
players are back or their grace is over; a lost lease lets the table go.  The store
is tests/sim's in-memory one; each op is answered only when the test says so."""

from __future__ import annotations

import dataclasses
import itertools
import random
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from service.keys import ServerKeys
from service.tablecore import io
from service.tablecore.clock import backoff
from service.tablecore.core import Mode, TableCore
from service.tablecore.phase import HandPhase
from service.tablecore.state import CoreConfig
from service.tablecore.steps import TOLD_LATE_MS
from service.tablestore import outcome
from tests.sim.store import SimStore
from verifier.chain import commit_move, move_body, reveal_move
from verifier.fairness import PROTOCOL_V2, player_commit
from verifier.hand import TableRules
from verifier.signing import Signer

CFG = CoreConfig(
    commit_ms=2000, reveal_ms=2000, next_hand_ms=500, grace_ms=5000, reach_ms=4000, hung_ms=1500, freeze_ms=3000
)
TURN_MS = 4000


class Harness:
    def __init__(self, players: int = 2, connected: bool = True, turn_ms: int = TURN_MS) -> None:
        rng = random.Random(7)
        self.keys = ServerKeys(Signer(Ed25519PrivateKey.from_private_bytes(rng.randbytes(32))), rng.randbytes(32))
        self.store = SimStore(self.keys, rng)
        self.store.rngs["t0"] = random.Random(1)
        self.store.add_table("t0", TableRules(seats=4, turn_seconds=turn_ms // 1000, max_missed_turns=3))
        self.store.tables["t0"].facts.head = "0" * 64
        self.signers: dict[str, Signer] = {}
        for k in range(players):
            pid = f"p{k}"
            self.signers[pid] = Signer(Ed25519PrivateKey.from_private_bytes(rng.randbytes(32)))
            self.store.add_player(pid, self.signers[pid].public_bytes, 10**6)
            self.store.tables["t0"].facts.seats[k] = pid
        self.core = TableCore("t0", self.keys, CFG)
        self.now = 0
        self.inflight: dict[int, io.Write | io.Load] = {}
        self.effects: list[tuple[int, io.Effect]] = []
        self.ids = 0
        self.step(io.Tick())
        self.answer_all()
        if connected:
            for pid in self.signers:
                self.step(io.Reach(pid, True))

    # -- driving ---------------------------------------------------------------------------
    def step(self, inp: io.Input, stalled: int = 0) -> list[io.Effect]:
        fx = self.core.step(inp, self.now, stalled)
        for e in fx:
            self.effects.append((self.now, e))
            if isinstance(e, io.Write | io.Load):
                self.inflight[e.op_id] = e
        return fx

    def answer(self, op_id: int, result: io.Result = io.Result.COMMITTED) -> None:
        e = self.inflight.pop(op_id)
        if isinstance(e, io.Load):
            if result is io.Result.COMMITTED:
                self.step(io.Outcome(op_id, result, self.store.load("t0", e.ended_of)))
            else:
                self.step(io.Outcome(op_id, result))
            return
        if result is not io.Result.COMMITTED:
            self.step(io.Outcome(op_id, result))
            return
        try:
            data = self.store.run("t0", self.store.tables["t0"].epoch, e.op)
        except Exception as err:
            self.step(outcome(op_id, err))
        else:
            self.step(io.Outcome(op_id, result, data))

    def answer_all(self) -> None:
        while self.inflight:
            self.answer(min(self.inflight))

    def advance(self, to: int, *, answer: bool = True) -> None:
        """Tick every 500 ms up to ``to`` (the shell's beat) and at each wake the core
        asks for, as the shell's timer does (a tick past it by more than the slack is
        a stall of the node, D37), answering ops as they come."""
        while self.now < to:
            wake = self.now + 500
            if self.core.armed is not None and self.now < self.core.armed < wake:
                wake = self.core.armed
            self.now = min(to, wake)
            self.step(io.Tick())
            if answer:
                self.answer_all()

    def full_disk(self, ms: int) -> None:
        """``ms`` of a store whose writes fail and whose loads work, in steps of 50 ms;
        the client on turn sends its draw again and again."""
        for _ in range(ms // 50):
            self.now += 50
            self.step(io.Tick())
            for op_id, e in sorted(self.inflight.items()):
                self.answer(op_id, io.Result.FAILED if isinstance(e, io.Write) else io.Result.COMMITTED)
            self.draw()

    def send(self, pid: str, kind: str, payload: dict[str, Any]) -> None:
        self.ids += 1
        self.step(io.Command(self.ids, kind, pid, payload))

    # -- looking -----------------------------------------------------------------------------
    def of(self, kind: type, since: int = -1) -> list[Any]:
        return [e for t, e in self.effects if isinstance(e, kind) and t >= since]

    def charges(self) -> list[tuple[int, io.Charge]]:
        return [(t, e) for t, e in self.effects if isinstance(e, io.Charge)]

    def told(self, message_type: str) -> list[int]:
        return [t for t, e in self.effects if isinstance(e, io.TellAll) and e.message["type"] == message_type]

    # -- playing -------------------------------------------------------------------------------
    def through_seeds(self) -> None:
        """Every seat commits and reveals: the hand is dealt."""
        self.advance(self.now + CFG.next_hand_ms + 500)
        hand = self.core.hand
        assert hand is not None and hand.phase is HandPhase.COMMIT
        seeds = {}
        for seat, pid in hand.players.items():
            seeds[seat] = bytes([seat + 1]) * 32
            c = player_commit(seat, seeds[seat])
            body = move_body("t0", hand.hand_no, hand.recorder.records[0]["h"], commit_move(seat, c))
            sig = self.signers[pid].sign("move", body, PROTOCOL_V2)
            self.send(pid, "commit", {"hand_no": hand.hand_no, "commit": c.hex(), "sig": sig})
            self.answer_all()
        assert hand.phase is HandPhase.REVEAL
        for seat, pid in hand.players.items():
            body = move_body("t0", hand.hand_no, hand.recorder.records[1]["h"], reveal_move(seat, seeds[seat]))
            sig = self.signers[pid].sign("move", body, PROTOCOL_V2)
            self.send(pid, "reveal", {"hand_no": hand.hand_no, "seed": seeds[seat].hex(), "sig": sig})
            self.answer_all()
        assert hand.phase is HandPhase.PLAY

    def on_turn(self) -> tuple[str, int]:
        hand = self.core.hand
        assert hand is not None and hand.recorder.state is not None
        seat = hand.recorder.state.turn
        return hand.players[seat], seat

    def draw(self) -> None:
        hand = self.core.hand
        assert hand is not None
        pid, seat = self.on_turn()
        move = {"kind": "draw_closed", "seat": seat}
        head = hand.recorder.head
        sig = self.signers[pid].sign("move", move_body("t0", hand.hand_no, head, move), PROTOCOL_V2)
        self.send(pid, "action", {"hand_no": hand.hand_no, "action": {"kind": "draw_closed"}, "prev": head, "sig": sig})


def turn_began(h: Harness) -> int:
    hand = h.core.hand
    assert hand is not None
    return hand.turn_began


# ----------------------------------------------------------------------------- the rules
def test_the_clock_charges_a_seat_that_does_not_move_at_its_turns_end() -> None:
    """The ground truth for the tests below: with no fault, the clock moves for the seat
    at the end of its turn (D16), not before."""
    h = Harness()
    h.through_seeds()
    began = turn_began(h)
    h.advance(began + TURN_MS + 1000)
    charges = h.charges()
    assert len(charges) == 1 and charges[0][1].kind == "play"
    assert began + TURN_MS <= charges[0][0] <= began + TURN_MS + 500


def test_no_clock_while_a_write_is_pending_one_paused_when_it_hangs_and_grace_after() -> None:
    """A write unanswered for hung_ms pauses the table (told once); no clock runs while it
    is pending, however long; once it answers, the seat on turn has its full grace."""
    h = Harness()
    h.through_seeds()
    began = turn_began(h)
    h.draw()  # its write hangs
    assert len(h.inflight) == 1
    h.advance(began + 30_000, answer=False)
    assert h.charges() == [], "the clock ran while a write was pending"
    assert len(h.told("paused")) == 1
    assert h.told("paused")[0] <= began + CFG.hung_ms + 500
    assert h.core.paused
    back = h.now
    h.answer_all()
    assert h.of(io.TellResumed) and not h.core.paused
    h.advance(back + CFG.grace_ms + TURN_MS)
    (at, charge), *_ = h.charges()
    assert at >= back + CFG.grace_ms, "charged within its grace after the store came back"


def hang_a_sit(h: Harness, balance: int) -> tuple[int, int]:
    """During a turn a player asks for a seat; the store hangs 20 s on the sit, then
    answers it (refused by rule, D20, with a balance of 0).  (turn began, store back)"""
    h.through_seeds()
    began = turn_began(h)
    h.store.add_player("walk_in", b"\x01" * 32, balance)
    h.now = began + 200
    h.send("walk_in", "sit", {"seat": 3})
    assert len(h.inflight) == 1  # the sit is the write in flight
    h.advance(began + 20_000, answer=False)
    assert h.told("paused") and h.charges() == []  # the hang was noticed; no clock meanwhile
    back = h.now
    h.answer_all()
    return began, back


def test_a_hang_that_ends_in_a_refusal_by_rule_ends_the_fault_with_grace_and_resumed() -> None:
    """Found by an audit (a real server, PostgreSQL stopped 8 and 15 s): a write that
    hung and then came back refused by rule (a sit the store judged: no key, no
    balance, the seat taken) ended the pause as if nothing had happened — the seat on
    turn was charged the moment the store answered, the hang taken out of its turn
    (D32, D37), and `resumed` never came.  Now the store's answer ends the fault as a
    commit does; and a later hang is told `paused` again."""
    h = Harness()
    began, back = hang_a_sit(h, 0)
    refusals = [e for e in h.of(io.Reply, since=back) if e.error is not None]
    assert [e.error.code for e in refusals] == ["insufficient_balance"]
    assert h.of(io.TellResumed, since=back), "paused was told, resumed never was"
    h.advance(back + CFG.grace_ms + TURN_MS + 1000)
    at, _ = h.charges()[0]
    assert at >= back + CFG.grace_ms and at >= began + TURN_MS + CFG.grace_ms, (at - back, at - began)
    assert h.core.hand is not None and h.core.hand.phase is HandPhase.PLAY  # one timeout: the hand goes on
    paused = len(h.told("paused"))
    h.draw()  # the store hangs again on the next move
    h.advance(h.now + CFG.hung_ms + 1000, answer=False)
    assert len(h.told("paused")) == paused + 1, "a second hang was not told"


def test_a_hang_that_ends_in_a_commit_gives_the_same_grace() -> None:
    """The control: the same hang answered by a stored sit."""
    h = Harness()
    began, back = hang_a_sit(h, 10**6)
    assert h.of(io.TellResumed, since=back)
    h.advance(back + CFG.grace_ms + TURN_MS + 1000)
    at, _ = h.charges()[0]
    assert at >= back + CFG.grace_ms and at >= began + TURN_MS + CFG.grace_ms


def test_a_frozen_node_takes_the_queued_move_first_and_gives_grace_from_the_thaw() -> None:
    """Frozen past the turn's end: at the thaw the move that waited in the queue is taken
    before any clock, and the next seat's clock has its full grace from the thaw."""
    h = Harness()
    h.through_seeds()
    began = turn_began(h)
    h.now = began + 20_000  # the node stood still for 20 s: no beat, no input
    h.draw()  # the move that waited in the queue arrives first at the thaw
    h.answer_all()
    h.step(io.Tick())
    assert h.charges() == [], "the clock fired ahead of a queued move"
    thaw = began + 20_000
    h.advance(thaw + CFG.grace_ms + TURN_MS)
    at, _ = h.charges()[0]
    assert at >= thaw + CFG.grace_ms


def test_a_turn_a_fault_cut_into_keeps_its_length_plus_the_grace_and_the_next_turn_its_own() -> None:
    """D32: a fault of the house that ends while a turn runs (here the node stood still
    for 4 s early in a 20 s turn, the player connected throughout) does not take its
    length out of the turn: the turn ends no earlier than its ordinary end plus the
    whole grace.  (Before, it ended at the later of its ordinary end and the grace
    after the thaw: the 4 s were the player's loss.)  The next turn, which began
    after the fault, ends at its ordinary end."""
    turn = 20_000
    h = Harness(turn_ms=turn)
    h.through_seeds()
    began = turn_began(h)
    h.advance(began + 1000)
    h.now = began + 5000  # no beat for 4 s (more than freeze_ms): the house was at fault
    h.step(io.Tick())
    h.advance(began + turn + CFG.grace_ms + 1000)
    (at, charge), *_ = h.charges()
    assert charge.kind == "play"
    assert began + turn + CFG.grace_ms <= at <= began + turn + CFG.grace_ms + 500, at - began
    nxt = turn_began(h)
    assert nxt >= at
    h.advance(nxt + turn + 1000)
    charges = h.charges()
    assert len(charges) == 2 and nxt + turn <= charges[1][0] <= nxt + turn + 500, charges


def test_a_store_that_keeps_failing_backs_off_and_pauses_once() -> None:
    """A full disk: every write fails, every load works.  The table reloads at most once
    per backoff step and tells its clients `paused` and `resumed` once, not on every
    reload; and its clock never runs meanwhile."""
    h = Harness()
    h.through_seeds()
    start = h.now
    h.draw()
    h.full_disk(20_000)
    loads = h.of(io.Load, since=start)
    assert 3 <= len(loads) <= 12, f"{len(loads)} reloads in 20 s"
    assert len(h.told("paused")) == 1 and len(h.of(io.TellResumed)) <= 1
    assert h.charges() == []


def test_the_backoff_between_reloads_never_exceeds_its_ceiling() -> None:
    """D37: at most ``retry_max`` between reloads of a store that keeps failing (a full
    disk: writes fail, loads work).  The outage drill's full disk found reloads 6.4 s
    apart under a 5 s ceiling: the spread was applied on top of the ceiling."""
    cfg = CoreConfig(retry_first_ms=200, retry_max_ms=5000)
    waits = [backoff(f"t{n}", streak, cfg) for n in range(200) for streak in range(1, 30)]
    assert max(waits) <= cfg.retry_max_ms
    at_ceiling = {backoff(f"t{n}", 25, cfg) for n in range(200)}
    assert len(at_ceiling) > 50 and min(at_ceiling) >= cfg.retry_max_ms // 2  # still spread, still backing off
    h = Harness()
    h.through_seeds()
    start = h.now
    h.draw()
    h.full_disk(60_000)
    loads = [t for t, e in h.effects if isinstance(e, io.Load) and t >= start]
    gaps = [b - a for a, b in itertools.pairwise(loads)]
    assert len(loads) >= 12 and max(gaps) <= CFG.retry_max_ms + 50, gaps


def test_a_store_that_refuses_writes_between_good_reloads_is_reported_throughout() -> None:
    """A full disk: loads work, writes are refused (SQLSTATE 53100), and now and then
    one fits (a page with room left) and commits.  Between its reloads the table serves
    (it is not paused), so paused alone left gaps in which /healthz said all clear (the
    outage drill saw it in 1 to 2 of 50 samples); from the first refusal on the table
    reports its store ``refusing`` at every step, a commit between refusals included,
    until ``refusing_ms`` after the last one."""
    h = Harness()
    h.through_seeds()
    h.draw()
    writes = 0
    gaps = 0
    for _ in range(400):  # 20 s of a full disk
        h.now += 50
        h.step(io.Tick())
        for op_id, e in sorted(h.inflight.items()):
            if isinstance(e, io.Write):
                writes += 1
                h.answer(op_id, io.Result.COMMITTED if writes % 4 == 0 else io.Result.FULL)
            else:
                h.answer(op_id)
        h.draw()
        if writes >= 1:
            assert h.core.paused or h.core.refusing, f"all clear at {h.now} while the disk is full"
            gaps += not h.core.paused
    assert writes >= 5 and gaps > 0  # a commit among them; served between reloads: paused alone said all clear
    last = h.core.refused_at
    assert last is not None
    h.now = last + CFG.refusing_ms  # the disk has room again: nothing refused for refusing_ms
    h.step(io.Tick())
    h.answer_all()
    assert not h.core.paused and not h.core.refusing


def test_a_store_that_was_away_is_not_reported_refusing_once_back() -> None:
    """A write fails because the store is away; the reloads fail until it is back: once
    the table resumes, nothing is reported (only a write refused again after a good
    reload is a store refusing writes)."""
    h = Harness()
    h.through_seeds()
    h.draw()
    for _ in range(100):  # 5 s away: every op fails
        h.now += 50
        h.step(io.Tick())
        for op_id in sorted(h.inflight):
            h.answer(op_id, io.Result.FAILED)
    h.advance(h.now + CFG.retry_max_ms + 1000)  # back: the reload works
    assert h.core.mode is Mode.SERVING and not h.core.paused and not h.core.refusing


def test_a_store_that_fails_again_after_a_good_reload_is_reported_refusing() -> None:
    """A store that answers reads but fails writes without saying why (the connection
    cut with each write) is a store refusing writes too, from its second failure."""
    h = Harness()
    h.through_seeds()
    h.draw()
    (op_id,) = [i for i, e in h.inflight.items() if isinstance(e, io.Write)]
    h.answer(op_id, io.Result.AMBIGUOUS)
    h.advance(h.now + CFG.retry_first_ms)  # the reload (after its backoff) works
    assert not h.core.refusing and h.core.mode is Mode.SERVING
    h.draw()
    (op_id,) = [i for i, e in h.inflight.items() if isinstance(e, io.Write)]
    h.answer(op_id, io.Result.AMBIGUOUS)
    assert h.core.refusing


def test_a_write_that_timed_out_backs_off_before_its_reload() -> None:
    """Issue 20, item 5: a write that times out (its outcome unknown) is not reloaded at
    once — starved of CPU, hundreds did, and every reload added to the storm — but
    after the first backoff step, spread by the table."""
    h = Harness()
    h.through_seeds()
    h.draw()
    (op_id,) = h.inflight
    failed_at = h.now
    h.step(outcome(op_id, TimeoutError()))
    assert h.of(io.Load, since=failed_at) == [] and h.core.mode is Mode.WAITING
    wait = backoff("t0", 1, CFG)
    h.now = failed_at + wait - 1
    h.step(io.Tick())
    assert h.of(io.Load, since=failed_at) == []
    h.now = failed_at + wait
    h.step(io.Tick())
    assert len(h.of(io.Load, since=failed_at)) == 1


def test_the_backoff_spreads_a_thousand_tables_and_doubles_to_its_ceiling() -> None:
    tables = [f"t_{n:04d}" for n in range(1000)]
    first = [backoff(t, 1, CFG) for t in tables]
    assert min(first) >= CFG.retry_first_ms // 2 and max(first) <= CFG.retry_first_ms
    assert len(set(first)) >= 90  # spread over the window, not one instant
    for t in tables[:50]:
        steps = [backoff(t, n, CFG) for n in range(1, 12)]
        bases = [min(CFG.retry_max_ms, CFG.retry_first_ms << (n - 1)) for n in range(1, 12)]
        assert all(b // 2 <= w <= b for w, b in zip(steps, bases, strict=True))  # never above the ceiling (D37)
    assert backoff("t0", 0, CFG) == 0  # no failure: no wait


def test_no_deal_before_the_seated_players_are_back_or_their_grace_is_over() -> None:
    """After a restart, a hand is not dealt while a seated player has yet to reconnect,
    until its grace is over; once every seated player is back it is dealt."""
    h = Harness(players=3, connected=False)
    loaded = h.now
    h.step(io.Reach("p0", True))
    h.step(io.Reach("p1", True))  # two are enough to deal (min_players 2), but p2 is seated too
    h.advance(loaded + CFG.reach_ms + CFG.grace_ms - 500)
    assert not h.of(io.Write), "a hand was dealt before p2 could come back"
    h.step(io.Reach("p2", True))
    h.advance(h.now + CFG.next_hand_ms + 1000)
    starts = [e for e in h.of(io.Write) if isinstance(e.op, io.StartOp)]
    assert len(starts) == 1 and {p for _, p in starts[0].op.candidates} == {"p0", "p1", "p2"}


def test_a_seated_player_who_does_not_come_back_sits_out_once_its_grace_is_over() -> None:
    h = Harness(players=3, connected=False)
    loaded = h.now
    h.step(io.Reach("p0", True))
    h.step(io.Reach("p1", True))
    h.advance(loaded + CFG.reach_ms + CFG.grace_ms + 1000)
    starts = [e for e in h.of(io.Write) if isinstance(e.op, io.StartOp)]
    assert len(starts) == 1 and starts[0].op.absent == ("p2",)


def stood_at(h: Harness) -> dict[str, tuple[int, str, int | None]]:
    """When each player was told stood up: (time, reason, hand)."""
    return {
        e["player_id"]: (t, e["reason"], e["hand_no"])
        for t, fx in h.effects
        if isinstance(fx, io.TellSeats)
        for e in fx.stood or ()
    }


def test_absent_seats_stand_up_after_the_away_time_when_too_few_are_connected_to_deal() -> None:
    """D34: with too few seats connected to try a hand, no hand counts an absent seat
    away; time does.  A seat stands up ``away_ms`` after it was last seen at a deal
    tried (from the load for one never seen), and not before; a moment's connection in
    which no deal was tried does not end its time away (a seat that flickered so held
    the table for ever: tests/test_lying_player.py); the connected seat stays."""
    away = CFG.away_ms
    h = Harness(players=3, connected=False)
    loaded = h.now
    h.step(io.Reach("p0", True))  # one connected: no hand can be dealt (min_players 2)
    h.advance(loaded + 30_000)
    tries = h.core.reach.tries
    h.step(io.Reach("p1", True))  # p1 comes and goes at once (no deal tried): still away from the load
    h.step(io.Reach("p1", False))
    assert h.core.reach.tries == tries
    h.advance(loaded + away - 500)
    assert stood_at(h) == {} and set(h.store.tables["t0"].facts.seats.values()) == {"p0", "p1", "p2"}
    h.advance(loaded + away + 2 * CFG.next_hand_ms + 1000)
    assert set(stood_at(h)) == {"p1", "p2"}  # never seen at a deal tried since the load: away from it
    for t, reason, hand_no in stood_at(h).values():
        assert loaded + away <= t <= loaded + away + 2 * CFG.next_hand_ms + 1000 and (reason, hand_no) == ("away", None)
    assert h.store.tables["t0"].facts.seats == {0: "p0"} == h.core.facts.seats  # the store and memory agree
    assert not [e for e in h.of(io.Write) if isinstance(e.op, io.StartOp)]  # no hand was tried


def test_an_absent_seat_is_stood_up_for_its_time_away_only_once_the_store_has_answered_since() -> None:
    """D34, D37 (the audit of the seams, h66): at a table too few are connected to deal
    at, an absent seat's time away runs out while the store has answered nothing since.
    The table writes nothing first (io.ProbeOp): answered, the seat is stood up at once;
    left hanging (the store hangs with no write in flight, and holds the player's way
    back too), the table pauses, and once it answers the time away counts from there."""
    away = CFG.away_ms
    h = Harness(players=2, connected=False)
    loaded = h.now
    h.step(io.Reach("p0", True))  # one connected: no hand can be dealt (min_players 2)
    h.advance(loaded + away - 500)
    assert stood_at(h) == {}
    while not h.inflight:  # the deal tried at the time away's end
        h.advance(h.now + 100, answer=False)
    (probe,) = h.inflight.values()
    assert isinstance(probe, io.Write) and isinstance(probe.op, io.ProbeOp) and stood_at(h) == {}
    answered = h.now
    h.answer_all()  # the probe, at once (one answered late is the tail of a stall: its grace first,
    # tests/test_audit_crash_slow_answer.py), then the stand-up written at once
    assert [type(e.op) for e in h.of(io.Write)][-2:] == [io.ProbeOp, io.StandAwayOp]
    assert stood_at(h) == {"p1": (answered, "away", None)}

    h = Harness(players=2, connected=False)
    loaded = h.now
    h.step(io.Reach("p0", True))
    h.advance(loaded + away - 500)
    h.advance(loaded + away + 30_000, answer=False)  # the probe hangs
    assert [type(e.op) for e in h.inflight.values() if isinstance(e, io.Write)] == [io.ProbeOp]
    assert h.core.paused and stood_at(h) == {}
    back = h.now
    h.answer_all()
    h.advance(back + away - 1000)
    assert stood_at(h) == {}, "the time the store hung counted against the absent seat"
    h.advance(back + away + 2 * CFG.next_hand_ms + 1000)
    t, reason, _ = stood_at(h)["p1"]
    assert back + away <= t and reason == "away"


def test_the_clocks_probe_answered_late_gives_the_absent_seat_its_grace_once_a_turn() -> None:
    """D37 (the audit of the seams, h66, finding 1): the seat on turn has no connection
    at its deadline and the store has answered nothing since; the clock writes a probe
    first (io.ProbeOp), which comes back 1 s later — less than hung_ms, so the table
    never paused: the tail of a hang it had not seen begin, which held the player's
    handshake too.  The seat is not charged as the hang ends: it keeps grace_ms from the
    answer (never past the turn's end plus a whole turn).  A probe back within
    TOLD_LATE_MS charges it at once; and a second slow probe in the same turn does not
    hold it again (a store slow at every probe still lets the clock end the turn)."""
    for late, again in ((1000, None), (100, None), (1000, 1000)):
        h = Harness()
        h.through_seeds()
        pid, _ = h.on_turn()
        h.step(io.Reach(pid, False))  # its own doing: the clock moves for it (D16)
        deadline = turn_began(h) + TURN_MS
        h.advance(deadline + late, answer=False)
        probes = [e for e in h.inflight.values() if isinstance(e, io.Write) and isinstance(e.op, io.ProbeOp)]
        assert len(probes) == 1 and len(h.inflight) == 1 and not h.core.paused and h.charges() == []
        answered = h.now
        h.answer_all()
        if late <= TOLD_LATE_MS:
            assert [t for t, _ in h.charges()] == [answered], "a probe back at once: the seat is charged then"
            continue
        assert h.charges() == [], "the seat was charged the moment the store answered the probe late"
        held = min(answered + CFG.grace_ms, deadline + TURN_MS)
        if again is None:
            h.advance(held + 1000)
            (at, charge), *_ = h.charges()
            assert held <= at <= held + 500 and charge.kind == "play"
            continue
        h.advance(held + again, answer=False)  # the clock's next probe, slow again
        assert h.charges() == [] and len(h.inflight) == 1
        second = h.now
        h.answer_all()
        (at, _), *_ = h.charges()
        assert at == second, "a second slow probe in the same turn held the seat again"


def a_deal_due_with_a_seat_absent() -> Harness:
    """Three seated, two connected; the absent seat's reach and grace run out and a
    hand falls due: the table writes a probe first (io.ProbeOp), left unanswered."""
    h = Harness(players=3, connected=False)
    for p in ("p0", "p1"):
        h.step(io.Reach(p, True))
    h.advance(CFG.reach_ms + CFG.grace_ms + 200, answer=False)
    (probe,) = h.inflight.values()
    assert isinstance(probe, io.Write) and isinstance(probe.op, io.ProbeOp) and h.core.hand is None
    return h


def test_a_deal_sits_an_absent_seat_out_only_once_the_store_has_answered_since_it_was_due() -> None:
    """D34, D37 (the audit of the seams, h66): a hand is due and a seat has no
    connection (its grace over).  The table writes nothing first (io.ProbeOp):
    answered, the hand is dealt without that seat; left hanging, the table pauses, and
    once it answers the absent seat has its reach and grace before a deal passes it over."""
    h = a_deal_due_with_a_seat_absent()
    h.answer_all()
    assert [type(e.op) for e in h.of(io.Write)][-2:] == [io.ProbeOp, io.StartOp]
    assert h.core.hand is not None and set(h.core.hand.players.values()) == {"p0", "p1"}

    h = Harness(players=3, connected=False)
    for p in ("p0", "p1"):
        h.step(io.Reach(p, True))
    h.advance(CFG.reach_ms + CFG.grace_ms + 30_000, answer=False)  # the probe hangs
    assert [type(e.op) for e in h.inflight.values() if isinstance(e, io.Write)] == [io.ProbeOp]
    assert h.core.paused and h.core.hand is None
    back = h.now
    h.answer_all()
    h.advance(back + CFG.reach_ms + CFG.grace_ms - 500)
    assert h.core.hand is None, "a hand was dealt past the absent seat within its reach and grace after the hang"
    h.advance(back + CFG.reach_ms + CFG.grace_ms + 2000)
    assert h.core.hand is not None and set(h.core.hand.players.values()) == {"p0", "p1"}


def test_the_away_time_starts_again_after_a_fault_of_the_house() -> None:
    """D34, D37: a node that stood still (no beat for freeze_ms) is the house's fault;
    a seat's time away counts again from the fault's end, as a grace does.  A seat that
    sat down with no connection is away from its sitting."""
    away = CFG.away_ms
    h = Harness(players=1, connected=True)
    h.store.add_player("p9", h.signers["p0"].public_bytes, 10**6)
    h.advance(5000)
    h.send("p9", "sit", {"seat": 3})  # by REST: no connection to the table
    h.answer_all()
    sat = h.now
    assert h.core.facts.seats == {0: "p0", 3: "p9"}
    h.advance(sat + away // 2)
    h.now += CFG.freeze_ms + 1000  # the node stood still
    h.step(io.Tick())
    thawed = h.now
    h.advance(sat + away + 5000)
    assert stood_at(h) == {}, "the time the house stood still counted against the absent seat"
    h.advance(thawed + away + 2 * CFG.next_hand_ms + 1000)
    t, reason, _ = stood_at(h)["p9"]
    assert thawed + away <= t and reason == "away"
    assert h.core.facts.seats == {0: "p0"}


def test_a_seat_that_cannot_cover_stands_up_after_the_away_time_the_house_faults_not_counted() -> None:
    """D34: two connected, one unable to cover its hold: no hand, and the seat that
    cannot is stood up (``cannot_cover``) once it could not at every deal tried for
    ``away_ms`` — counted from the end of the house's last fault (a node that stood
    still), for its balance may be held by a hand the fault held up elsewhere."""
    away = CFG.away_ms
    h = Harness(players=2, connected=True)
    h.store.available["p1"] = 0  # its balance held elsewhere
    h.store.total -= 10**6
    h.advance(away // 2)
    starts = [e.op for e in h.of(io.Write) if isinstance(e.op, io.StartOp)]
    assert len(starts) > 5 and all(op.stand_unable == () for op in starts)  # tried, and nobody stood
    h.now += CFG.freeze_ms + 1000  # the node stood still
    h.step(io.Tick())
    thawed = h.now
    h.advance(away + 5000)
    assert stood_at(h) == {}, "the time the house stood still counted against the seat"
    h.advance(thawed + away + 2 * CFG.next_hand_ms + 1000)
    t, reason, hand_no = stood_at(h)["p1"]
    assert thawed + away <= t and (reason, hand_no) == ("cannot_cover", None)
    assert h.core.facts.seats == {0: "p0"} == h.store.tables["t0"].facts.seats
    assert h.core.hand is None


def test_a_hand_dealt_leaves_a_seat_that_cannot_cover_to_the_count_of_hands() -> None:
    """D34: while hands are dealt, a seat that cannot cover sits them out and is counted
    in hands (max_away_hands); the time it could not cover before is forgotten."""
    away = CFG.away_ms
    h = Harness(players=3, connected=True)
    for p in ("p1", "p2"):
        h.store.available[p] = 0
        h.store.total -= 10**6
    h.advance(away - 10_000)
    h.store.available["p2"] = 10**6  # p2 can again: a hand is dealt to p0 and p2
    h.store.total += 10**6
    h.advance(h.now + 3000)
    assert h.core.hand is not None and set(h.core.hand.players.values()) == {"p0", "p2"}
    assert stood_at(h) == {} and h.core.reach.unable == {}  # D34 counts p1 in hands while hands are dealt


def test_a_seats_grace_starts_when_it_reconnects() -> None:
    """The store fails the move of the seat on turn, and its player's socket goes with
    it; the table reloads.  The player is back 3 s later: the clock does not charge it
    before 3 s + its full grace (nor before the reach bound for one who never came back)."""
    h = Harness()
    h.through_seeds()
    pid, _ = h.on_turn()
    h.draw()
    (op_id,) = h.inflight
    h.step(io.Reach(pid, False))
    h.answer(op_id, io.Result.FAILED)  # not stored: the table reloads, after its first backoff step
    h.advance(h.now + backoff("t0", 1, CFG), answer=False)
    assert any(isinstance(e, io.Load) for e in h.inflight.values())
    reloaded = h.now
    h.answer_all()
    assert h.core.mode is Mode.SERVING
    h.advance(reloaded + 3000)
    h.step(io.Reach(pid, True))
    h.advance(reloaded + 3000 + CFG.grace_ms + TURN_MS)
    at, _ = h.charges()[0]
    assert at >= reloaded + 3000 + CFG.grace_ms


def test_a_seat_with_no_connection_is_charged_only_once_the_store_has_answered_since_its_deadline() -> None:
    """D37 (the audit of the seams): the player on turn has no connection, and the store
    has answered nothing since the turn's deadline.  The clock writes nothing first (a
    probe, io.ProbeOp): answered, the seat is charged; left hanging (the store hangs
    with no write in flight, and holds the player's way back too), the table pauses,
    and once it answers the absent seat has its reach and grace after it.  A connected
    seat is charged at once, with no probe."""
    h = Harness()
    h.through_seeds()
    pid, _ = h.on_turn()
    h.step(io.Reach(pid, False))  # its own doing: D16, the clock moves for it
    began = turn_began(h)
    h.advance(began + TURN_MS + 100, answer=False)
    (probe,) = h.inflight.values()
    assert isinstance(probe, io.Write) and isinstance(probe.op, io.ProbeOp) and h.charges() == []
    h.answer_all()
    assert [c.kind for _, c in h.charges()] == ["play"]  # answered (at once): the seat is charged
    assert h.of(io.Write)[-1].op != probe.op  # and its timeout written

    h = Harness()
    h.through_seeds()
    pid, _ = h.on_turn()
    h.step(io.Reach(pid, False))
    began = turn_began(h)
    h.advance(began + TURN_MS + 30_000, answer=False)  # the probe hangs
    assert [type(e.op) for e in h.inflight.values() if isinstance(e, io.Write)] == [io.ProbeOp]
    assert h.charges() == [] and h.core.paused and len(h.told("paused")) == 1
    back = h.now
    h.answer_all()
    assert not h.core.paused
    h.advance(back + CFG.reach_ms + CFG.grace_ms + 1000)
    ((at, _),) = h.charges()
    assert at >= back + CFG.reach_ms + CFG.grace_ms, "charged before its reach and grace after the hang"

    h = Harness()
    h.through_seeds()
    began = turn_began(h)
    h.advance(began + TURN_MS + 500, answer=False)
    assert h.charges() and not any(isinstance(e.op, io.ProbeOp) for e in h.of(io.Write))


def test_a_lost_lease_lets_the_table_go_and_answers_moved() -> None:
    h = Harness()
    h.through_seeds()
    h.draw()  # in flight
    fx = h.step(io.LeaseEvent(io.Lease.LOST))
    assert [e for e in fx if isinstance(e, io.LetGo)] == [io.LetGo(False, "the lease was lost")]
    replies = [e for e in fx if isinstance(e, io.Reply)]
    assert replies and all(r.error is not None and r.error.code == "moved" for r in replies)
    h.send("p0", "sit", {})
    assert h.of(io.Reply)[-1].error.code == "moved"


def test_a_move_the_house_refused_keeps_the_seats_whole_turn() -> None:
    """D35: the store fails the move of the seat on turn; the table is back at once, but
    the seat is not charged before a whole turn from the refusal (longer than its grace)."""
    turn = 10_000
    assert turn > CFG.grace_ms
    h = Harness(turn_ms=turn)
    h.through_seeds()
    h.advance(turn_began(h) + turn - 2000)  # late in its turn
    h.draw()
    (op_id,) = h.inflight
    h.answer(op_id, io.Result.FAILED)
    refused = h.now
    h.advance(refused + backoff("t0", 1, CFG))  # the reload, after its first backoff step, works at once
    replies = h.of(io.Reply)
    assert replies[-1].error is not None and replies[-1].error.code == "unavailable"
    h.advance(refused + turn + 1000)
    at, _ = h.charges()[0]
    assert at >= refused + turn


def test_the_operator_cannot_void_a_hand_while_the_house_owes_a_seat_its_move() -> None:
    """D33, D35: the store fails the move of the seat on turn (refused ``unavailable``);
    an operator's void before a whole turn from the refusal would take the seat's move
    away (a house could so void a hand its friend was losing: §15 rule 7 fails it).
    It is refused ``void_owes_move`` until then, and taken after."""
    turn = 10_000
    h = Harness(turn_ms=turn)
    h.through_seeds()
    hand = h.core.hand
    assert hand is not None
    h.advance(turn_began(h) + 1000)
    h.draw()
    (op_id,) = h.inflight
    h.answer(op_id, io.Result.FAILED)
    refused = h.now
    h.advance(refused + backoff("t0", 1, CFG))  # the table is back
    assert h.of(io.Reply)[-1].error is not None and h.of(io.Reply)[-1].error.code == "unavailable"
    h.advance(refused + turn - 1)
    hand = h.core.hand  # the reloaded hand
    assert hand is not None
    h.send("operator", "void", {"hand_id": hand.hand_id, "reason": "stuck"})
    err = h.of(io.Reply)[-1].error
    assert err is not None and err.code == "void_owes_move" and "1 s more" in err.message, err
    assert not hand.recorder.voided
    h.advance(refused + turn)
    h.send("operator", "void", {"hand_id": hand.hand_id, "reason": "stuck"})
    h.answer_all()
    assert h.of(io.Reply)[-1].error is None
    assert hand.recorder.voided and hand.recorder.records[-1]["t"] >= refused + turn


def test_a_leave_whose_write_failed_is_taken_first_after_the_reload() -> None:
    """D15, D35: the seat off turn leaves (a move, signed over the newest record); its
    write fails and the reload finds it not stored.  It is not refused: it is taken
    again, first, before the move of the seat on turn that waited meanwhile (which is
    then stale).  Before, it was refused ``unavailable`` with an ack, and a house could
    take the other seat's declare first, counting the leaver's cards instead of its 40
    (the audit of 2026-12-07; docs/fairness.md §15 rule 7 now fails that)."""
    h = Harness(players=3)
    h.through_seeds()
    hand = h.core.hand
    assert hand is not None
    on_turn, _ = h.on_turn()
    leaver = next(p for p in hand.players.values() if p != on_turn)
    seat = hand.seat_of(leaver)
    assert seat is not None
    head, i = hand.recorder.head, len(hand.recorder.records)
    move = {"kind": "leave", "seat": seat}
    sig = h.signers[leaver].sign("move", move_body("t0", hand.hand_no, head, move), PROTOCOL_V2)
    h.send(leaver, "leave", {"hand_no": hand.hand_no, "prev": head, "sig": sig})
    leave_id = h.ids
    (op_id,) = h.inflight
    h.draw()  # the seat on turn draws meanwhile: it waits behind the leave's write
    draw_id = h.ids
    h.answer(op_id, io.Result.FAILED)  # not stored: the table reloads
    h.advance(h.now + backoff("t0", 1, CFG))
    replies = {r.cmd_id: r for r in h.of(io.Reply)}
    assert replies[leave_id].error is None and replies[leave_id].result["charged"] is True, replies[leave_id]
    reloaded = h.core.hand
    assert reloaded is not None
    record = reloaded.recorder.records[i]
    assert record["action"] == {"kind": "leave", "seat": seat}  # recorded where it was signed
    assert draw_id in replies and replies[draw_id].error is not None  # signed over the record before the leave


def test_a_leave_refused_while_the_table_waits_to_reload_keeps_the_seats_whole_turn() -> None:
    """D35: a leave in play is a move (D15).  Sent by the seat on turn while the table
    waits to reload (the operator's ``close`` failed to store), it is refused
    ``unavailable``, and the seat keeps its whole turn from that refusal, later than
    the fault's grace.  (A core that owed nothing for a refused leave, before
    2026-12-07, charged it a missed turn at the grace's end.)"""
    turn = 20_000
    h = Harness(turn_ms=turn)
    h.through_seeds()
    hand = h.core.hand
    assert hand is not None
    pid, seat = h.on_turn()
    h.advance(turn_began(h) + 15_000)
    h.send("operator", "close", {})
    (op_id,) = h.inflight
    h.answer(op_id, io.Result.FAILED)  # not stored: the table waits to reload
    assert h.core.mode is Mode.WAITING
    head = hand.recorder.head
    move = {"kind": "leave", "seat": seat}
    sig = h.signers[pid].sign("move", move_body("t0", hand.hand_no, head, move), PROTOCOL_V2)
    h.send(pid, "leave", {"hand_no": hand.hand_no, "prev": head, "sig": sig})
    refused = h.now
    reply = h.of(io.Reply)[-1]
    assert reply.cmd_id == h.ids and reply.error is not None and reply.error.code == "unavailable"
    h.advance(refused + turn + 2000)
    at, _ = h.charges()[0]
    assert at >= refused + turn, f"charged {refused + turn - at} ms before the whole turn its refused leave owed"


def test_a_second_void_of_a_hand_is_hand_over_whatever_the_table_has_moved_on_to() -> None:
    """The REST call checks the hand is in progress in the store, then asks the table;
    when the table has already voided it (the store's row not yet saying so), the
    answer is ``hand_over``, not ``no_such_hand`` (test_admin_cli saw it under load)."""
    h = Harness()
    h.through_seeds()
    hand = h.core.hand
    assert hand is not None
    h.send("operator", "void", {"hand_id": hand.hand_id, "reason": "stuck"})
    h.answer_all()
    assert h.of(io.Reply)[-1].error is None
    h.send("operator", "void", {"hand_id": hand.hand_id, "reason": "again"})
    err = h.of(io.Reply)[-1].error
    assert err is not None and err.code == "hand_over", err


def test_a_join_that_comes_before_the_table_has_loaded_gets_its_snapshot() -> None:
    """A table a worker has just taken (after a hand-over, or a reload) queues the
    commands that come while it loads; a join among them is answered with the
    snapshot once the table is loaded, not refused as an unknown command (the starved
    bench saw one ``bad_message`` answer to a join)."""
    h = Harness()
    h.core = TableCore("t0", h.keys, CFG)  # a fresh worker's: nothing loaded yet
    h.inflight.clear()
    h.send("p0", "snapshot", {"since": None})
    h.send("p1", "snapshot", {"since": {"hand_no": 1, "i": 0}})
    assert h.core.mode is Mode.LOADING and h.of(io.Reply) == []
    h.answer_all()
    replies = h.of(io.Reply)
    assert [r.cmd_id for r in replies] == [h.ids - 1, h.ids]
    for r in replies:
        assert r.error is None, r.error
        assert r.result["table_id"] == "t0" and r.result["seats"] == {"0": "p0", "1": "p1"}


def test_a_window_whose_record_was_stored_late_runs_from_when_it_was_told() -> None:
    """A stalled store (shorter than hung_ms: no pause, no grace) answers the hand's start
    1.4 s late: the header is told with 0.6 s of its 2 s commit window left.  Each seat
    keeps its whole window from the tell (D35), so commits sent a second after it count;
    before, the window closed on them and every seat was left out (CI's outage drill:
    three null commitments in a 2 s stall)."""
    h = Harness()
    h.core.cfg = dataclasses.replace(CFG, grace_ms=0)  # D37's grace after connecting would hide it
    h.advance(h.now + CFG.next_hand_ms, answer=False)
    (start,) = h.inflight.values()
    assert isinstance(start, io.Write) and isinstance(start.op, io.StartOp), start
    h.now += 1400  # less than hung_ms: the table is not paused, D37 gives no grace
    h.step(io.Tick())
    h.answer_all()
    hand = h.core.hand
    assert hand is not None and hand.phase is HandPhase.COMMIT and not h.told("paused")
    told = h.now
    assert told - hand.recorder.records[0]["t"] >= 1400
    assert h.core.deadline(hand) >= told + CFG.commit_ms  # the deadline the clients are told
    h.advance(told + 1000)
    assert hand.phase is HandPhase.COMMIT, "the window closed before the seats could commit"
    for seat, pid in hand.players.items():
        c = player_commit(seat, bytes([seat + 1]) * 32)
        body = move_body("t0", hand.hand_no, hand.recorder.records[0]["h"], commit_move(seat, c))
        sig = h.signers[pid].sign("move", body, PROTOCOL_V2)
        h.send(pid, "commit", {"hand_no": hand.hand_no, "commit": c.hex(), "sig": sig})
        h.answer_all()
    assert hand.phase is HandPhase.REVEAL
    assert all(c["commit"] is not None for c in hand.recorder.records[1]["commitments"]["commits"])


def test_a_seed_move_the_house_refused_keeps_the_window_its_hand_signed() -> None:
    """D35 after the table's settings changed (a restart with shorter seed windows): a
    seat whose commit the house refused keeps the whole commit window its hand's header
    signed, from the refusal, not today's setting.  Here the table is waiting to reload
    after another write failed (a newcomer's sit), so the commit is refused at once and
    only the table's note of the refusal keeps the seat's window; it used the configured
    500 ms, and the window closed on the seat 1.5 s early (D32's end after the fault,
    with no grace, is the signed window's)."""
    h = Harness()
    h.advance(h.now + CFG.next_hand_ms + 500)
    hand = h.core.hand
    assert hand is not None and hand.phase is HandPhase.COMMIT
    assert hand.recorder.commit_ms == CFG.commit_ms
    h.core.cfg = dataclasses.replace(CFG, commit_ms=500, grace_ms=0)  # today's settings
    began = int(hand.recorder.records[0]["t"])

    def commit(seat: int) -> None:
        hand = h.core.hand
        assert hand is not None
        pid = hand.players[seat]
        c = player_commit(seat, bytes([seat + 1]) * 32)
        body = move_body("t0", hand.hand_no, hand.recorder.records[0]["h"], commit_move(seat, c))
        sig = h.signers[pid].sign("move", body, PROTOCOL_V2)
        h.send(pid, "commit", {"hand_no": hand.hand_no, "commit": c.hex(), "sig": sig})

    h.advance(began + 1500)  # late in the signed window
    newcomer = Signer(Ed25519PrivateKey.from_private_bytes(bytes(range(32))))
    h.store.add_player("p9", newcomer.public_bytes, 10**6)
    h.send("p9", "sit", {})
    (op_id,) = h.inflight
    h.answer(op_id, io.Result.FAILED)  # the table waits, then reloads
    assert h.core.mode is Mode.WAITING
    commit(0)
    refused = h.now
    reply = h.of(io.Reply)[-1]
    assert reply.error is not None and reply.error.code == "unavailable"  # refused at once
    h.advance(refused + CFG.commit_ms - 500)  # past today's window, and D32's end
    hand = h.core.hand
    assert hand is not None and hand.phase is HandPhase.COMMIT, "the window closed on the refused seat"
    assert h.charges() == []
    commit(0)
    commit(1)
    h.answer_all()
    assert h.of(io.Reply)[-1].error is None
    hand = h.core.hand
    assert hand is not None and hand.phase is HandPhase.REVEAL
    assert all(c["commit"] is not None for c in hand.recorder.records[1]["commitments"]["commits"])


# ----------------------------------------------------------------------------- a clock that steps
