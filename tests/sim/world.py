"""A deterministic simulation of many tables: the real table core
(service.tablecore), a simulated store (tests/sim/store.py), simulated players who
sign their moves with real Ed25519 keys, a virtual clock, and faults injected at the
boundaries where effects leave the core: a node crash, the store unreachable, hung,
slow or full, a COMMIT whose answer is lost, a lease lost and taken by another node,
a frozen node, a node that stalls a second or two or a moment across a deadline (its
late wake stepped before the moves that came meanwhile), clients that drop and come back after a random backoff,
slow readers.

Everything random comes from one seed; the same seed and fault list replay the same
run.  After every step the invariants are checked (:class:`Violation` names the
first broken one); see tests/test_sim.py and bench/sim_soak.py.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from service import fastjson
from service.keys import ServerKeys
from service.tablecore import io
from service.tablecore.core import TableCore
from service.tablecore.phase import HandPhase
from service.tablecore.state import CoreConfig
from tests.sim.schedule import KINDS, OWN, SECOND, STORE_WIDE, Fault, Schedule
from tests.sim.sigbook import BookedSigner, booked
from tests.sim.store import Hand, SimStore
from verifier.chain import commit_move, move_body, reveal_move
from verifier.fairness import PROTOCOL_V2, player_commit
from verifier.hand import Discard, Drop, Phase, TableRules, action_to_json, dealer_after
from verifier.signing import Signer
from verifier.transcript import verify_transcript

__all__ = ["KINDS", "OWN", "SECOND", "STORE_WIDE", "Fault", "Player", "SimTable", "Violation", "World"]

logging.getLogger("rummy.table").setLevel(logging.ERROR)  # the faults are many; their log is the trace

BEAT = SECOND  # the shell's steady tick (service.table: beat_seconds)
LEASE = 8 * SECOND  # a frozen node loses its leases after this long
TURN_MS = 4 * SECOND
TOLD_LATE_MS = 250  # D35: a record told this much after its t leaves each seat it makes wait its whole window


class Violation(AssertionError):
    def __init__(self, at: int, table: str, what: str) -> None:
        super().__init__(f"t={at / 1000:.3f}s table {table}: {what}")
        self.at, self.table, self.what = at, table, what


@dataclass
class Player:
    pid: str
    signer: Signer
    seat_table: str
    conn: TableCore | None = None  # the core this player's socket is attached to
    connected_at: int = 0
    left_at: int = 0  # when its socket to the table's owner last went
    #: D34: since when its time away counts: its last disconnection from a connection
    #: in which the owner tried a hand (a moment's connection with no deal tried in it
    #: does not end a seat's time away)
    away_from: int = 0
    look_gen: int = 0
    slow_until: int = 0
    seeds: dict[int, bytes] = field(default_factory=dict)  # hand id -> my seed


@dataclass
class SimTable:
    tid: str
    index: int
    core: TableCore | None = None
    epoch: int = 1
    players: list[Player] = field(default_factory=list)
    frozen_until: int = 0
    held: deque[io.Input] = field(default_factory=deque)  # inputs held while frozen
    held_at: dict[int, int] = field(default_factory=dict)  # id of a held input -> when it arrived
    stalled: int = 0  # frozen by a stall of this many ms (no fault of the house), not a freeze
    metered: bool = True  # the stall is told to the first step after it (False: a short one, not yet counted)
    arm_gen: int = 0
    lost_reply: int = 0  # the next n ops are applied but answered ambiguous
    clock_off: int = 0  # how far the clock of the table's nodes is behind the world's time (clock_back)
    # the house's fault, as the checker sees it (independently of the core)
    fault_open: bool = False
    fault_from: int = -(10**12)  # when the last fault began
    cause_end: int = 0
    ok_at: int = -(10**12)
    last_progress: int = 0
    touched: set[int] = field(default_factory=set)  # hand ids a fault touched
    reached: dict[str, int] = field(default_factory=dict)  # since ok_at: when each player could reach the owner
    paired_at: int | None = 0  # when the owner last told two seats or more taken (None: fewer now)
    refused: dict[str, int] = field(default_factory=dict)  # D35: when the house last refused a player's move
    # D35, told late: (hand id, the table's t of the record that began a turn) -> when the
    # owner first told it (the record's update, or a ``resumed`` whose reload found it)
    told: dict[tuple[Any, int], int] = field(default_factory=dict)
    cmds: dict[int, tuple[str, str]] = field(default_factory=dict)  # command id -> (player, kind)
    tried_at: int = -1  # D34: when the owner last tried a hand (its StartOp)
    seq: int = 0
    # the last inputs and what each did; formatted only when a failure is reported (lines())
    trace: deque[Any] = field(default_factory=lambda: deque(maxlen=80))
    rng: random.Random = field(default_factory=random.Random)

    def lines(self) -> list[str]:
        return [e if isinstance(e, str) else _line(*e) for e in self.trace]


class World:
    def __init__(
        self,
        seed: int,
        *,
        tables: int = 20,
        seats: int = 2,
        duration: int = 600 * SECOND,
        faults: list[Fault] | None = None,
        fault_rate: float = 1.0,
        store_fault_rate: float | None = None,
        clock_rate: float = 0.0,
        away_rate: float = 0.0,
        stall_rate: float = 0.0,
        short_stall_rate: float = 0.0,
        last_moment: float = 0.0,
        only: set[int] | None = None,
        stop_after_hands: int | None = None,
        verify_every: int = 25,
        curve_every: int = 10,
        cfg: CoreConfig | None = None,
    ) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        # The grace (1 s) is shorter than a turn (TURN_MS) and than the seed windows, as
        # with the defaults (10 s against 30 s): with a grace of 3 s the grace alone covered
        # every window the house owed after a refusal, and a restart that forgot them
        # (tests/test_owed_across_restart.py) went unseen; at 1 s seed 4 finds it in 30 s.
        self.cfg = cfg or CoreConfig(
            commit_ms=2000,
            reveal_ms=2000,
            next_hand_ms=500,
            grace_ms=1000,
            reach_ms=1000,
            hung_ms=1500,
            away_ms=20_000,
        )
        self.keys = ServerKeys(
            BookedSigner(Ed25519PrivateKey.from_private_bytes(self.rng.randbytes(32))), self.rng.randbytes(32)
        )
        self.store = SimStore(self.keys, self.rng)
        self.duration = duration
        self.last_moment = last_moment  # how often a seat on turn thinks until its turn's last 300 ms
        self.now = 0
        self.events: list[tuple[int, int, int, Callable[[], object]]] = []
        self._seq = 0
        self.tables: list[SimTable] = []
        self.hands_ended = 0
        self.verified = 0
        self.touched_ended = 0  # hands a fault touched: every one is verified
        self.untouched_ended = 0  # the others: every verify_every-th is verified
        self.verify_every = verify_every
        self.curve_every = curve_every  # every n-th transcript verified is checked on the curve alone
        self.on_curve = 0
        self.stood_away = 0  # seats stood up for their time away (D34)
        self.steps = 0
        self.stop_after_hands = stop_after_hands
        self.store_faults: list[Fault] = []
        self.injected: dict[str, int] = {}
        rules = TableRules(seats=4, turn_seconds=TURN_MS // 1000, max_missed_turns=2, min_players=2)
        self.n_tables = tables
        for n in range(tables):
            if only is not None and n not in only:
                continue
            tid = f"t{n}"
            self.store.add_table(tid, rules)
            # each table draws from its own stream: a table replays alone (shrinking)
            t = SimTable(tid, n, rng=random.Random(f"{seed}/{tid}"))
            self.store.rngs[tid] = random.Random(f"{seed}/{tid}/store")
            for k in range(seats):
                signer = BookedSigner(Ed25519PrivateKey.from_private_bytes(t.rng.randbytes(32)))
                pid = f"p{n}_{k}"
                self.store.add_player(pid, signer.public_bytes, 10**7)
                self.store.tables[tid].facts.seats[k] = pid
                t.players.append(Player(pid, signer, tid))
            self.tables.append(t)
        if faults is None:
            plan = Schedule(seed, self.rng, tables, duration)
            faults = (
                plan.random_faults(fault_rate, store_fault_rate)
                + plan.clock_faults(clock_rate)
                + plan.away_faults(away_rate)
                + plan.stall_faults(stall_rate)
                + plan.short_stall_faults(short_stall_rate)
            )
        self.by_index = {t.index: t for t in self.tables}
        self.faults = sorted(f for f in faults if f.kind in STORE_WIDE or f.table in self.by_index)
        for f in self.faults:
            self.at(f.at, lambda f=f: self._fault(f))
        for t in self.tables:
            self.at(t.rng.randrange(0, 200), lambda t=t: self._boot(t), t)
            self.at(BEAT, lambda t=t: self._beat(t), t)
        self.at(10 * SECOND, self._stall_check)

    def at(self, when: int, fn: Callable[[], object], t: SimTable | None = None) -> None:
        """Run ``fn`` at ``when``; events of one table at one moment keep their order
        whatever the other tables do (a table replays alone)."""
        if t is None:
            self._seq += 1
            heapq.heappush(self.events, (when, -1, self._seq, fn))
        else:
            t.seq += 1
            heapq.heappush(self.events, (when, t.index, t.seq, fn))

    def run(self) -> World:
        with booked():
            return self._run()

    def _run(self) -> World:
        while self.events:
            when, _, _, fn = heapq.heappop(self.events)
            if when > self.duration:
                break
            if self.stop_after_hands is not None and self.hands_ended >= self.stop_after_hands:
                break
            self.now = when
            fn()
        self._final_check()
        return self

    # -- feeding a core ---------------------------------------------------------------------
    def feed(self, t: SimTable, core: TableCore, inp: io.Input, stalled: int = 0) -> list[io.Effect]:
        if core is t.core and self.now < t.frozen_until:
            t.held.append(inp)
            t.held_at[id(inp)] = self.now
            return []
        if core.gone and not isinstance(inp, io.Command):
            return []
        self.steps += 1
        fx = core.step(inp, self.now - t.clock_off, stalled)  # the node's clock
        if not isinstance(inp, io.Tick) or any(not isinstance(e, io.Arm) for e in fx):
            t.trace.append((self.now, core is not t.core, inp, fx))  # a tick that did nothing is left out
        self._effects(t, core, fx)
        return fx

    def _effects(self, t: SimTable, core: TableCore, fx: list[io.Effect]) -> None:
        if core is t.core:
            self._note_told(t, core, fx)
        # a charge is judged by what was known of the house's faults when it was made
        charges = [(e, self._grace_of(t, core, e)) for e in fx if isinstance(e, io.Charge)]
        for e in fx:
            if isinstance(e, io.Write):
                if isinstance(e.op, io.StandAwayOp):
                    self._stand_away(t, core, e.op)
                elif isinstance(e.op, io.StartOp) and core is t.core:
                    t.tried_at = self.now
                self._write(t, core, e, charges)
                charges = []
            elif isinstance(e, io.Load):
                self._load(t, core, e)
            elif isinstance(e, io.Arm):
                if core is t.core and e.at is not None:
                    t.arm_gen += 1
                    gen = t.arm_gen
                    when = e.at + t.clock_off  # asked on the node's clock
                    self.at(max(when, self.now), lambda gen=gen: gen == t.arm_gen and self._tick(t), t)
            elif isinstance(e, io.Reply):
                sent = t.cmds.pop(e.cmd_id, None)
                if e.error is not None and e.error.code in ("unavailable", "moved", "shutting_down"):
                    if sent is not None and sent[1] in ("commit", "reveal", "action", "leave") and core is t.core:
                        t.refused[sent[0]] = self.now
                    self._retry_soon(t)
            elif isinstance(e, io.TellPhase | io.TellUpdate | io.TellResumed | io.TellSeats):
                if isinstance(e, io.TellSeats) and core is t.core:
                    if len(e.seats) < 2:
                        t.paired_at = None
                    elif t.paired_at is None:
                        t.paired_at = self.now
                self._look_all(t)
            elif isinstance(e, io.TellResult):
                self._look_all(t)
            elif isinstance(e, io.LetGo):
                for p in t.players:
                    if p.conn is core:
                        self._disconnect(t, p, reconnect=True)

    def _tick(self, t: SimTable) -> None:
        if t.core is not None:
            self.feed(t, t.core, io.Tick())

    def _beat(self, t: SimTable) -> None:
        self._tick(t)
        self.at(self.now + BEAT, lambda: self._beat(t), t)

    # -- the store, with its faults ------------------------------------------------------------
    def _store_fault(self, kind: str, when: int) -> Fault | None:
        if self.store_faults and self.store_faults[0].at + self.store_faults[0].duration < self.now - 60 * SECOND:
            self.store_faults = [f for f in self.store_faults if f.at + f.duration >= self.now - 60 * SECOND]
        for f in self.store_faults:
            if f.kind == kind and f.at <= when < f.at + f.duration:
                return f
        return None

    def _touch(self, t: SimTable, core: TableCore | None = None) -> None:
        """A fault touched the table's hand (and the one being started): its
        transcript will be verified."""
        core = core or t.core
        if core is None:
            return
        if core.hand is not None:
            t.touched.add(core.hand.hand_id)
        p = core.pending
        if p is not None and isinstance(p.op, io.StartOp):
            t.touched.add(t.index * 1_000_000 + p.op.hand_no)  # the store's id for it (tests/sim/store.py)

    def _house_fault(self, t: SimTable, cause_end: int) -> None:
        if not t.fault_open:
            t.fault_open = True
            t.fault_from = self.now
            t.trace.append(f"{self.now / 1000:.3f} HOUSE FAULT until at least {cause_end / 1000:.3f}")
        t.cause_end = max(t.cause_end, cause_end)
        self._touch(t)

    def _house_ok(self, t: SimTable) -> None:
        if t.fault_open and self.now >= t.cause_end:
            self._ok(t)

    def _ok(self, t: SimTable) -> None:
        t.fault_open = False
        t.ok_at = self.now
        t.reached = {p.pid: self.now for p in t.players if p.conn is not None and p.conn is t.core}
        t.trace.append(f"{self.now / 1000:.3f} HOUSE OK")

    def _latency(self, t: SimTable) -> int:
        if self._store_fault("slow", self.now) is not None:
            return t.rng.randrange(100, 3000)
        return t.rng.randrange(1, 6)

    def _answer_at(self, t: SimTable, kind_write: bool) -> tuple[int, io.Result | None]:
        """When and how an op sent now comes back (None: it applies)."""
        if not self.store_faults:
            return self.now + t.rng.randrange(1, 6), None
        if any(f.at <= self.now < f.at + f.duration for f in self.store_faults):
            self._touch(t)  # the store's fault met this table's op: its hand is verified
        lat = self._latency(t)
        f = self._store_fault("unreachable", self.now)
        if f is not None:
            return self.now + lat, io.Result.FAILED
        if kind_write and self._store_fault("full", self.now) is not None:
            return self.now + lat, io.Result.FULL
        h = self._store_fault("hung", self.now)
        if h is not None:
            return h.at + h.duration + lat, None
        return self.now + lat, None

    def _write(self, t: SimTable, core: TableCore, e: io.Write, charges: list[tuple[io.Charge, str | None]]) -> None:
        sent = self.now
        when, result = self._answer_at(t, True)
        epoch = t.epoch if core is t.core else t.epoch - 1

        def done() -> None:
            res, data, err = result, None, None
            if res is None and self._store_fault("unreachable", self.now) is not None:
                res = io.Result.AMBIGUOUS  # the connection broke with the COMMIT in flight
                if t.rng.random() < 0.5:
                    res = None
            if res is None:
                try:
                    data = self.store.run(t.tid, epoch, e.op)
                    res = io.Result.COMMITTED
                except Exception as exc:
                    from service.tablestore import outcome

                    o = outcome(e.op_id, exc)
                    res, err = o.result, o.error
                if isinstance(e.op, io.StartOp | io.FinishOp | io.VoidUnreadableOp):  # the ops that move money
                    self._check_money(t)
                if res is io.Result.COMMITTED and t.lost_reply and core is t.core:
                    t.lost_reply -= 1
                    res = io.Result.AMBIGUOUS
            if res in (io.Result.FAILED, io.Result.FULL, io.Result.AMBIGUOUS) or self.now - sent >= self.cfg.hung_ms:
                if core is t.core:
                    self._house_fault(t, self.now)
            if res is io.Result.COMMITTED:
                if core is t.core:
                    self._house_ok(t)
                    t.last_progress = self.now
                for c, bad in charges:  # the charge took effect: it must have been fair
                    if bad is not None:
                        raise Violation(c.at, t.tid, bad)
                if isinstance(e.op, io.FinishOp):
                    self._ended(t, e.op)
            if core.gone or (core is not t.core and t.core is not None and core not in (t.core,)):
                if not core.gone:
                    self.feed(t, core, io.Outcome(e.op_id, res, data, err))
                return
            self.feed(t, core, io.Outcome(e.op_id, res, data, err))

        self.at(when, done, t)

    def _load(self, t: SimTable, core: TableCore, e: io.Load) -> None:
        when, result = self._answer_at(t, False)

        def done() -> None:
            if core is not t.core:
                return
            if result is io.Result.FAILED or self._store_fault("unreachable", self.now) is not None:
                self._house_fault(t, self.now)
                self.feed(t, core, io.Outcome(e.op_id, io.Result.FAILED))
                return
            self._house_ok(t)
            self.feed(t, core, io.Outcome(e.op_id, io.Result.COMMITTED, self.store.load(t.tid, e.ended_of)))

        self.at(when, done, t)

    # -- nodes ----------------------------------------------------------------------------------
    def _boot(self, t: SimTable) -> None:
        """A node takes the table: a new core, loaded from the store; players find it."""
        core = TableCore(t.tid, self.keys, self.cfg)
        t.core = core
        t.held.clear()
        t.held_at.clear()
        self.feed(t, core, io.Tick())
        for p in t.players:
            self._disconnect(t, p, reconnect=True)

    def _fault(self, f: Fault) -> None:
        k = f.kind
        self.injected[k] = self.injected.get(k, 0) + 1
        if k in STORE_WIDE:
            self.store_faults.append(f)
            for t in self.tables:
                t.trace.append(f"{self.now / 1000:.3f} FAULT {f}")
            return
        t = self.by_index[f.table]
        t.trace.append(f"{self.now / 1000:.3f} FAULT {f}")
        self._touch(t)
        if k == "lost_reply":
            t.lost_reply += 1
        elif k == "crash":
            if t.core is None:
                return
            self._house_fault(t, self.now + f.duration)
            old, t.core = t.core, None
            old.refuse_all(_gone())
            for p in t.players:
                if p.conn is old:
                    self._disconnect(t, p, reconnect=True)
            t.epoch += 1
            self.store.tables[t.tid].epoch = t.epoch
            self.at(self.now + f.duration, lambda: self._boot(t), t)
        elif k == "takeover":
            self._takeover(t)
        elif k == "freeze":
            if t.core is None or self.now < t.frozen_until:
                return
            self._house_fault(t, self.now + f.duration)
            t.frozen_until = self.now + f.duration
            if f.duration > LEASE:  # its lease runs out: another node takes the table
                self.at(self.now + LEASE, lambda: self._takeover(t, frozen=True), t)
            self.at(self.now + f.duration, lambda: self._thaw(t), t)
        elif k in ("drop", "walk_away"):
            p = t.players[f.player % len(t.players)]
            if p.conn is not None and t.core is not None:
                self._disconnect(t, p, reconnect=True, after=f.duration)
        elif k == "slow_reader":
            p = t.players[f.player % len(t.players)]
            p.slow_until = self.now + f.duration
        elif k == "clock_back":
            t.clock_off += f.duration
        elif k == "stall":
            self._stall(t, f.duration, metered=True)
        elif k == "short_stall":
            # across the table's next wake (a deadline, or its beat), where a short one can
            # hide a move from the clock: it begins up to its length before the wake
            core = t.core
            wake = None if core is None or core.armed is None else core.armed + t.clock_off
            begin = self.now if wake is None or wake <= self.now else max(self.now, wake - t.rng.randrange(f.duration))
            self.at(begin, lambda: self._stall(t, f.duration, metered=False), t)

    def _stall(self, t: SimTable, duration: int, *, metered: bool) -> None:
        if t.core is None or self.now < t.frozen_until:
            return
        t.frozen_until, t.stalled, t.metered = self.now + duration, duration, metered
        self.at(self.now + duration, lambda: self._thaw(t), t)

    def _takeover(self, t: SimTable, frozen: bool = False) -> None:
        old = t.core
        if old is None:
            return
        self._house_fault(t, self.now)
        t.cause_end = self.now  # the new owner serves once it has loaded, whatever the old node does
        t.epoch += 1
        self.store.tables[t.tid].epoch = t.epoch
        held = list(t.held) if frozen else []
        t.held.clear()
        t.held_at.clear()
        t.stalled = 0
        was_frozen = t.frozen_until
        t.frozen_until = 0
        self._boot(t)
        if frozen:  # the old node thaws later: it hears it lost the lease then
            self.at(was_frozen, lambda: self._zombie(t, old, held), t)
        else:  # its heartbeat notices within a lease
            self.at(self.now + t.rng.randrange(0, LEASE), lambda: self.feed(t, old, io.LeaseEvent(io.Lease.LOST)), t)

    def _zombie(self, t: SimTable, old: TableCore, held: list[io.Input]) -> None:
        for inp in held:
            self.feed(t, old, inp)
        self.feed(t, old, io.LeaseEvent(io.Lease.LOST))

    def _thaw(self, t: SimTable) -> None:
        if t.frozen_until == 0 or self.now < t.frozen_until:
            return
        t.frozen_until = 0
        core = t.core
        if core is None:
            return
        held, t.held = list(t.held), deque()
        arrived, t.held_at = t.held_at, {}
        if t.stalled:  # the shell's order after a stall: the late wake before the sockets are read
            stalled, t.stalled = t.stalled, 0  # as the loop's meter counted it (service.stallmeter)
            # a short stall: how late the wake it asked for is stepped (its clock's jitter, or more)
            late = None if t.metered or core.armed is None else self.now - t.clock_off - core.armed
            told = stalled if t.metered else 0
            for c in (e for e in self.feed(t, core, io.Tick(), told) if isinstance(e, io.Charge)):
                unfair = self._charged_while_unread(t, core, c, held, arrived, late)
                if unfair is not None:
                    raise Violation(self.now, t.tid, unfair)
            for inp in held:
                self.feed(t, core, inp)
            return
        self._house_ok_at_thaw(t)
        for inp in held:
            self.feed(t, core, inp)
        self.feed(t, core, io.Tick())

    def _charged_while_unread(
        self,
        t: SimTable,
        core: TableCore,
        c: io.Charge,
        held: list[io.Input],
        arrived: dict[int, int],
        late: int | None = None,
    ) -> str | None:
        """D37: a seat charged as the node woke from a stall while its move for that
        window, arrived before the window's ordinary end, waited unread.  A stall the
        loop's meter has not counted whose wake came no more than ``jitter_ms`` after
        it was due (``late``) is the loop's jitter, as far as the core can tell: the
        simulator steps the wake first, the worst order (the real shell reads its
        sockets first at a wake for the clock, TableActor._read_first)."""
        hand = self.store.hands.get(c.hand_id)
        if hand is None or c.began is None:
            return None
        pid = hand.players[c.seat][0]
        if any(isinstance(inp, io.Reach) and inp.player_id == pid for inp in held):
            # it connected during the stall: a real socket's handshake waits for the
            # server, so nothing it sent could wait unread before it (the simulator's
            # players send as soon as they connect)
            return None
        window = {"commit": self.cfg.commit_ms, "reveal": self.cfg.reveal_ms}.get(c.kind, TURN_MS)
        end = c.began + t.clock_off - core.skew + window  # on the world's clock
        if late is not None and late <= core.cfg.jitter_ms:
            return None
        kind = {"commit": "commit", "reveal": "reveal"}.get(c.kind, "action")
        for inp in held:
            if (
                isinstance(inp, io.Command)
                and inp.player_id == pid
                and inp.kind == kind
                and inp.payload.get("hand_no") == hand.hand_no
                and arrived.get(id(inp), end + 1) <= end
            ):
                return (
                    f"seat {c.seat} charged ({c.kind}) as the node woke from a stall, while its {kind}, arrived "
                    f"{(end - arrived[id(inp)]) / 1000:.3f}s before its window's end, waited unread (D37)"
                )
        return None

    def _house_ok_at_thaw(self, t: SimTable) -> None:
        if self.now >= t.cause_end and t.fault_open:
            self._ok(t)

    # -- players --------------------------------------------------------------------------------
    def _disconnect(self, t: SimTable, p: Player, *, reconnect: bool, after: int | None = None) -> None:
        old = p.conn
        p.conn = None
        if old is not None and not old.gone and old is t.core:
            p.left_at = self.now
            if t.tried_at > p.connected_at:  # (a try at the same moment may have come first)
                p.away_from = self.now
            self.feed(t, old, io.Reach(p.pid, False))
        if reconnect:
            delay = after if after is not None else t.rng.randrange(100, 4000)
            self.at(self.now + delay, lambda: self._connect(t, p), t)

    def _connect(self, t: SimTable, p: Player) -> None:
        core = t.core
        if p.conn is not None:
            return
        if core is None or core.gone:
            self.at(self.now + t.rng.randrange(200, 3000), lambda: self._connect(t, p), t)
            return
        p.conn = core
        p.connected_at = self.now
        t.reached.setdefault(p.pid, self.now)
        self.feed(t, core, io.Reach(p.pid, True))
        self._look(t, p)

    def _look_all(self, t: SimTable) -> None:
        for p in t.players:
            self._look(t, p)

    def _retry_soon(self, t: SimTable) -> None:
        for p in t.players:
            self._look(t, p, t.rng.randrange(300, 2000))

    def _look(self, t: SimTable, p: Player, delay: int | None = None) -> None:
        p.look_gen += 1
        gen = p.look_gen
        think = delay if delay is not None else t.rng.randrange(50, 1200)
        if delay is None and self.last_moment and self._on_turn(p) and t.rng.random() < self.last_moment:
            think = TURN_MS - t.rng.randrange(0, 300)  # its move arrives in the turn's last moments
        if self.now < p.slow_until:
            think += t.rng.randrange(1000, 6000)
        self.at(self.now + think, lambda: gen == p.look_gen and self._act(t, p), t)

    @staticmethod
    def _on_turn(p: Player) -> bool:
        core = p.conn
        hand = None if core is None else core.hand
        if hand is None or hand.phase is not HandPhase.PLAY or hand.recorder.state is None:
            return False
        return hand.recorder.state.turn == hand.seat_of(p.pid)

    def _act(self, t: SimTable, p: Player) -> None:
        """What a bot does with what it was last told."""
        core = p.conn
        if core is None or core is not t.core or core.gone or core.facts is None:
            return
        facts = core.facts
        if p.pid not in facts.seats.values():
            if facts.status == "open" and len(facts.seats) < facts.rules.seats:
                self._send(t, p, "sit", {})
            return
        hand = core.hand
        if hand is None:
            return
        seat = hand.seat_of(p.pid)
        if seat is None:
            return
        rec = hand.recorder
        phase = hand.phase
        hb = (t.tid, hand.hand_no)
        if phase is HandPhase.COMMIT and seat not in hand.commits:
            seed = p.seeds.setdefault(hand.hand_id, t.rng.randbytes(32))
            c = player_commit(seat, seed)
            sig = p.signer.sign("move", move_body(*hb, rec.records[0]["h"], commit_move(seat, c)), PROTOCOL_V2)
            self._send(t, p, "commit", {"hand_no": hand.hand_no, "commit": c.hex(), "sig": sig})
        elif phase is HandPhase.REVEAL and seat not in hand.seeds and rec.commit_of(seat) is not None:
            seed = p.seeds.get(hand.hand_id)
            if seed is None:
                return
            sig = p.signer.sign("move", move_body(*hb, rec.records[1]["h"], reveal_move(seat, seed)), PROTOCOL_V2)
            self._send(t, p, "reveal", {"hand_no": hand.hand_no, "seed": seed.hex(), "sig": sig})
        elif phase is HandPhase.PLAY and rec.state is not None and rec.state.turn == seat:
            state = rec.state
            me = state.seat(seat)
            if state.phase is Phase.DRAW:
                first = not me.drawn_any and t.rng.random() < 0.3
                late = me.drawn_any and state.turn_no > len(state.seats) and t.rng.random() < 0.4
                move: dict[str, Any] = (
                    action_to_json(Drop(seat)) if first or late else {"kind": "draw_closed", "seat": seat}
                )
            else:
                cards = [c for c in me.cards if c != me.drawn_this_turn] or list(me.cards)
                move = action_to_json(Discard(seat, t.rng.choice(cards)))
            sig = p.signer.sign("move", move_body(*hb, rec.head, move), PROTOCOL_V2)
            body = {k: v for k, v in move.items() if k != "seat"}
            self._send(t, p, "action", {"hand_no": hand.hand_no, "action": body, "prev": rec.head, "sig": sig})

    def _send(self, t: SimTable, p: Player, kind: str, payload: dict[str, Any]) -> None:
        core = p.conn
        assert core is not None
        t.seq += 1
        cmd = io.Command(t.seq, kind, p.pid, payload)
        # a leave is a move only in play, signed (D15); in the seed phases it is none (D36)
        t.cmds[t.seq] = (p.pid, kind if kind != "leave" or "sig" in payload else "leave_unsigned")
        self.at(self.now + t.rng.randrange(1, 30), lambda: p.conn is core and self.feed(t, core, cmd), t)

    # -- the invariants --------------------------------------------------------------------------
    def _check_money(self, t: SimTable) -> None:
        bad = self.store.check_ledger()
        if bad is not None:
            raise Violation(self.now, t.tid, bad)

    def _note_told(self, t: SimTable, core: TableCore, fx: list[io.Effect]) -> None:
        """When the owner first told each turn: the update of the record that began it,
        or the ``resumed`` of a reload that found that record stored (its write's answer
        lost: nobody had been told it)."""
        for e in fx:
            if isinstance(e, io.TellUpdate) and any(ev.kind == "turn" for ev in e.events):
                t.told.setdefault((e.hand.hand_id, int(e.record["t"])), self.now)
            elif isinstance(e, io.TellResumed) and core.hand is not None and core.hand.phase is HandPhase.PLAY:
                t.told.setdefault((core.hand.hand_id, core.hand.turn_began), self.now)

    def _grace_of(self, t: SimTable, core: TableCore, c: io.Charge) -> str | None:
        """Why this clock charge is unfair, or None: no charge while the house is at
        fault, nor before the seat has had its full grace from the moment it could
        reach the table again (D37), nor, in a window or turn that began before the
        house's last fault, before its ordinary end plus the grace (D32).  The house
        is at fault for a table from the first of its ops a fault touched (failed,
        ambiguous, or unanswered for hung_ms), its node's crash, freeze or loss of the
        lease, until the table's first op succeeds after the fault's cause has ended
        (or its node thaws)."""
        if core is not t.core:
            return f"a node that no longer owns the table charged seat {c.seat}"
        if t.fault_open:
            return f"seat {c.seat} charged ({c.kind}) while the house is at fault"
        hand = self.store.hands.get(c.hand_id)
        if hand is None:
            return None
        pid = hand.players[c.seat][0]
        # the charge's times are the table's; the checker's are the world's: the table's
        # time runs behind the world's by its node's step back less what it kept (D37)
        lag = t.clock_off - core.skew
        at, began = c.at + lag, None if c.began is None else c.began + lag
        reach = min(t.reached.get(pid, t.ok_at + self.cfg.reach_ms), t.ok_at + self.cfg.reach_ms)
        refused = t.refused.get(pid)
        window = {"commit": self.cfg.commit_ms, "reveal": self.cfg.reveal_ms}.get(c.kind, TURN_MS)
        if refused is not None:
            if at < refused + window:
                return f"seat {c.seat} charged ({c.kind}) {(at - refused) / 1000:.3f}s after its move was refused (D35)"
        if at < reach + self.cfg.grace_ms:
            return (
                f"seat {c.seat} charged ({c.kind}) {(at - reach) / 1000:.3f}s after it could reach the table "
                f"again (the house was back at {t.ok_at / 1000:.3f}s); its grace is {self.cfg.grace_ms / 1000:.1f}s"
            )
        if began is not None and began < t.fault_from and at < began + window + self.cfg.grace_ms:
            return (
                f"seat {c.seat} charged ({c.kind}) {(at - began) / 1000:.3f}s into a window that began before "
                f"the house's fault ({t.fault_from / 1000:.3f}s): D32 gives it {window / 1000:.1f}s and the "
                f"{self.cfg.grace_ms / 1000:.1f}s grace"
            )
        told = None if c.began is None or c.kind != "play" else t.told.get((c.hand_id, c.began))
        if told is not None and began is not None and told - began > TOLD_LATE_MS and at < told + TURN_MS:
            return (
                f"seat {c.seat} charged (play) {(at - told) / 1000:.3f}s after its turn was first told, "
                f"{(told - began) / 1000:.3f}s after the t of the record that began it (D35: a turn told late is "
                "whole from the tell)"
            )
        return None

    def _stand_away(self, t: SimTable, core: TableCore, op: io.StandAwayOp) -> None:
        """D34: a seat stood up for its time away is one nobody has played from for
        ``away_ms``, the house's faults not counted: its player has had no socket to the
        table's owner in which a hand was tried since at least ``away_ms`` ago (a
        moment's connection with no deal tried in it does not count), and the house has
        not been at fault since then either."""
        self.stood_away += len(op.players)
        for p in t.players:
            if p.pid not in op.players:
                continue
            if p.conn is core:
                raise Violation(self.now, t.tid, f"{p.pid} stood up as away while connected (D34)")
            since = max(p.away_from, t.ok_at)
            if t.fault_open or self.now - since < self.cfg.away_ms:
                raise Violation(
                    self.now,
                    t.tid,
                    f"{p.pid} stood up as away {(self.now - since) / 1000:.3f}s after it left or the house was "
                    f"back (D34 gives it {self.cfg.away_ms / 1000:.0f}s; the house at fault now: {t.fault_open})",
                )

    def _ended(self, t: SimTable, op: io.FinishOp) -> None:
        h = self.store.hands[op.hand_id]
        if h.settlements > 1:
            raise Violation(self.now, t.tid, f"hand {op.hand_id} settled twice")
        if h.transcript_text is not op.transcript or h.transcript is None:
            return  # a repeat: the hand had ended already
        if fastjson.canonical(h.transcript) != op.transcript:
            raise Violation(self.now, t.tid, f"hand {op.hand_id}'s transcript is not published as canonical JSON")
        self._dated_in_order(t.tid, self.store.by_table[t.tid][-2:])
        self._button_moved(t.tid, self.store.by_table[t.tid][-2:])
        self._dated_after_arrivals(t.tid, h)
        self.hands_ended += 1
        if op.hand_id in t.touched:
            t.touched.discard(op.hand_id)
            self.touched_ended += 1
        else:
            self.untouched_ended += 1
            if self.untouched_ended % self.verify_every:
                return
        self.verified += 1
        curve = (self.verified - 1) % self.curve_every == 0  # the first, the 11th, …
        self.on_curve += curve
        with booked(not curve):
            report = verify_transcript(h.transcript, self.keys.signer.public_bytes)
        if not report.ok:
            raise Violation(self.now, t.tid, f"hand {op.hand_id}'s transcript does not verify: {report.failure}")

    def verify_all(self) -> tuple[int, list[str]]:
        """Every transcript the store holds, verified (after a failure: the hands the
        run did not verify as they ended are verified then): how many, and what
        failed, one line each."""
        bad, n = [], 0
        with booked():
            for h in self.store.hands.values():
                if h.transcript is not None:
                    n += 1
                    report = verify_transcript(h.transcript, self.keys.signer.public_bytes)
                    if not report.ok:
                        bad.append(f"hand {h.hand_id} (table {h.table_id}): {report.failure}")
        return n, bad

    def _stall_check(self) -> None:
        """A table with seated, connected players that the house is not failing makes
        progress within the rules' bounds."""
        bound = 60 * SECOND
        for t in self.tables:
            core = t.core
            if core is None or t.fault_open or self.now < t.frozen_until:
                continue
            seated = core.facts.seats.values() if core.facts else ()
            live = [p for p in t.players if p.conn is core and p.pid in seated]
            if len(live) >= 2 and self.now - max(t.last_progress, t.ok_at, *(p.connected_at for p in live)) > bound:
                raise Violation(self.now, t.tid, f"stalled: no progress for {bound / 1000:.0f}s with players connected")
            if len(live) < 2 <= len(seated):  # D34: too few to deal; an absent seat stands up in time (fewer
                # seated than a hand needs leaves a seat free: nobody is held up, and the time counts from when
                # two were seated again).  Counted from the end of the store's last fault too: one that held the
                # stand-up's write is known here only once it answers
                store_ok = max((f.at + f.duration for f in self.store_faults if f.at <= self.now), default=0)
                for p in t.players:
                    away = self.now - max(p.left_at, t.ok_at, store_ok, t.paired_at or 0)
                    if p.pid in seated and p.conn is not core and away > self.cfg.away_ms + bound // 4:
                        raise Violation(self.now, t.tid, f"{p.pid} away {away / 1000:.0f}s still holds its seat (D34)")
        self.at(self.now + 10 * SECOND, self._stall_check)

    def _dated_in_order(self, tid: str, hands: list[Hand]) -> None:
        """D37 across hands: a hand's records are dated no earlier than the newest record
        of the table's hand before it (a table loaded between hands on a clock behind
        dated its next hand before the last one ended)."""
        for before, after in itertools.pairwise(hands):
            if before.records and after.records:
                end, start = int(before.records[max(before.records)]["t"]), int(after.records[min(after.records)]["t"])
                if start < end:
                    what = f"hand {after.hand_no} is dated {end - start} ms before hand {before.hand_no} ended"
                    raise Violation(self.now, tid, what)

    def _button_moved(self, tid: str, hands: list[Hand]) -> None:
        """D3 across hands: hand n+1 is dealt by the next of its seats after hand n's
        dealer, whatever the table went through between them (a reload, a move to
        another worker, a store that failed at the hand's start)."""
        for before, after in itertools.pairwise(hands):
            if after.hand_no == before.hand_no + 1 and 0 in before.records and 0 in after.records:
                last, header = before.records[0]["header"]["dealer"], after.records[0]["header"]
                want = dealer_after(sorted(e["seat"] for e in header["seats"]), last)
                if header["dealer"] != want:
                    what = f"hand {after.hand_no} is dealt by seat {header['dealer']}, not seat {want} (D3)"
                    raise Violation(self.now, tid, what)

    def _dated_after_arrivals(self, tid: str, h: Hand) -> None:
        """§15.7: record 1 is not dated before a commitment it lists arrived, nor
        record 2 before a seed it lists as revealed (each ``arrived`` as its ack said
        and the store kept it: a table loaded in the seed phases on a clock behind
        dated them before the moves they hold)."""
        for record, kind in ((1, "commit"), (2, "reveal")):
            rec = h.records.get(record)
            if rec is None or rec.get("type") not in ("commitments", "reveals"):
                continue
            if kind == "commit":
                held = [c["seat"] for c in rec["commitments"]["commits"] if c["commit"] is not None]
            else:
                held = [r["seat"] for r in rec["reveals"] if r["status"] == "revealed"]
            late = [(s, h.arrived[(kind, s)]) for s in held if h.arrived.get((kind, s), 0) > rec["t"]]
            if late:
                seat, arrived = max(late, key=lambda x: x[1])
                ahead = arrived - rec["t"]
                what = f"hand {h.hand_no}: record {record} is dated {ahead} ms before seat {seat}'s {kind} arrived"
                raise Violation(self.now, tid, what)

    def _final_check(self) -> None:
        for t in self.tables:
            if self.store.check_ledger() is not None:
                raise Violation(self.now, t.tid, str(self.store.check_ledger()))
            self._dated_in_order(t.tid, self.store.by_table[t.tid])
        for h in self.store.hands.values():
            if h.settlements > 1:
                raise Violation(self.now, h.table_id, f"hand {h.hand_id} settled twice")


def _gone() -> Any:
    from service.tablecore.errors import shutting_down

    return shutting_down()


def _line(now: int, old: bool, inp: io.Input, fx: list[io.Effect]) -> str:
    done = [_effect(e) for e in fx if not isinstance(e, io.Arm)]
    return f"{now / 1000:.3f} {'old node: ' if old else ''}{_short(inp)} -> {', '.join(done) or '-'}"


def _effect(e: io.Effect) -> str:
    if isinstance(e, io.Write):
        return f"write {e.op_id} {type(e.op).__name__}"
    if isinstance(e, io.Load):
        return f"load {e.op_id}"
    if isinstance(e, io.Reply):
        return f"reply {e.cmd_id}" + (f" {e.error.code}" if e.error is not None else "")
    if isinstance(e, io.TellAll):
        return f"tell {e.message['type']}"
    if isinstance(e, io.Charge):
        return f"CHARGE seat {e.seat} ({e.kind})"
    return type(e).__name__


def _short(inp: io.Input) -> str:
    if isinstance(inp, io.Command):
        return f"cmd {inp.kind} {inp.player_id} {str(inp.payload.get('action', ''))[:40]}"
    if isinstance(inp, io.Outcome):
        return f"outcome {inp.op_id} {inp.result.value}{' ' + inp.error.code if inp.error else ''}"
    return type(inp).__name__ + ("" if not isinstance(inp, io.Reach) else f" {inp.player_id} {inp.connected}")
