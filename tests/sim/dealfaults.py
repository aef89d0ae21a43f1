"""A world whose faults aim at a hand's first moments and at its void (D33, D36; the
paths of 2026-12-07, night, which random faults almost never met: tests/sim/paths.py
counts them).  Among :class:`LeaveWorld`'s random faults and leaves, now and then:

- the deal's write fails (not stored, or stored with its answer lost) and a dealt
  player leaves while the table waits to reload or reloads (``TableCore._failed_deal_no``);
- the deal's write is slow with a leave behind it, and the node crashes or loses its
  lease meanwhile, the deal stored first or not: the leaver, never answered or refused
  ``moved``, sends its leave again to the new owner (as the bots do, the audit h83),
  whose first load finds the hand with no commitment (``TableCore.untold_deal``);
- the node crashes, or the store fails, between the void for a leave behind the deal
  (stored with the seat's stand-up, io.UnseatOp) and the hand's finish;
- a stored record of a hand in play stops replaying (its sealed copy damaged) as the
  table reloads: the records are set aside with the void's reason (io.QuarantineOp),
  and the node crashes, or the store fails, before the void is stored;
- every connection joins with a snapshot, and every ``resumed`` carries one (as
  service/table.py does), a hand voided in its commit window included.

The invariants, after every step (``Violation``, beside the world's own):

- holds: a player's held balance is the sum of its holds in the live hands of its
  table (no hold survives without a live hand), and the ledger sums;
- a void for a leave behind the deal is stored in one write with the leaver's
  stand-up: no store op holds one without the other;
- a player whose leave was answered is never dealt in by a deal written after the
  answer, unless it sat again;
- a leave that reached the owner while the deal that deals its player in was written,
  or while the table reloaded after that deal's write failed (nobody had been told
  the hand), answered while the hand, stored, was still in its commit window with no
  commitment of the leaver's, by the core that wrote the deal or by one whose first
  load found the hand with no commitment: the hand ends void and the leaver is
  charged nothing in it (no clock move, no drop, no 40);
- a hand whose unreplayable records were set aside ends void, never settled;
- liveness: a table with two willing seats connected to its owner, and no hand,
  deals within ``deal_bound`` ms of the end of the house's last fault (and of the
  last hand, connection or leave)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from service.tablecore import io
from service.tablecore.core import HOUSE_REFUSALS, TableCore
from tests.sim.leaving import LeaveWorld
from tests.sim.world import SECOND, Fault, Player, SimTable, Violation

D36_VOID = "left while the hand was being dealt"


@dataclass
class LeaveTry:
    """A player's unsigned leave, sent again until the table answers it."""

    cmd_id: int
    core: TableCore | None
    conn_at: int  # its socket (the player's connected_at then)
    sent_at: int
    refused: bool = False
    #: the deal it came behind, nobody told of it: (the core that wrote it, its op)
    pretell: tuple[TableCore, io.StartOp] | None = None


class DealFaultWorld(LeaveWorld):
    def __init__(
        self, *a: Any, aim_rate: float = 0.3, corrupt_rate: float = 0.02, deal_bound: int = 20 * SECOND, **kw: Any
    ) -> None:
        super().__init__(*a, **kw)
        self.aim_rate = aim_rate
        self.corrupt_rate = corrupt_rate
        self.deal_bound = deal_bound
        self.aimed: Counter[str] = Counter()  # the aimed faults injected, by kind
        self._fate: tuple[str, int] | None = None  # the fate of the write being sent (_write)
        self.fates: dict[str, tuple[str, int]] = {}  # table -> the fate of the owner's next write
        #: table -> (its owner, the op of its deal in flight (or failed, until the owner reloads))
        self.deal_writes: dict[str, tuple[TableCore, int, io.StartOp]] = {}
        self.reloading: dict[str, tuple[TableCore, io.StartOp]] = {}  # a failed deal, until reloaded
        self.made_by: dict[int, io.StartOp] = {}  # hand id -> the op that dealt it
        self.tries: dict[tuple[str, str], LeaveTry] = {}
        self.left: set[tuple[str, str]] = set()  # (table, player): leave answered, not sat again since
        self.first_load: dict[TableCore, tuple[int, bool]] = {}  # its first load: (hand_no, no commitment)
        self.must_void: dict[tuple[str, int], str] = {}  # (table, hand_no) -> the leaver
        self.charges: set[tuple[int, int]] = set()  # (hand id, seat) the clock charged, stored
        self._charging: list[tuple[int, int]] = []
        self.carried: dict[tuple[TableCore, int], list[tuple[int, int]]] = {}  # a write's charges
        self.quarantined: set[int] = set()
        self.pretold_voids = 0  # hands voided as must_void asked
        self.dealt_at: dict[str, int] = {}  # table -> when its owner last had a deal stored or a hand end
        self.broken: Violation | None = None  # found as the store applied an op (raised after the step)
        self.store.run = self._run_op  # type: ignore[method-assign]
        self._store_run = type(self.store).run.__get__(self.store)

    # -- the store: one write holds a D36 void and its stand-up, or neither -----------------
    def _run_op(self, table_id: str, epoch: int, op: io.Op) -> Any:
        """The store's op, checked as it applies (a violation is raised after the step:
        the world takes what the store raises for the store's own answer)."""
        got = self._store_run(table_id, epoch, op)
        if isinstance(op, io.UnseatOp | io.RecordsOp) and op.hand_id is not None:
            for r in op.records:
                if r.get("type") == "void" and D36_VOID in str(r.get("reason")):
                    h = self.store.hands[op.hand_id]
                    seat = int(str(r["reason"]).split()[1])
                    pid = h.players[seat][0]
                    if not isinstance(op, io.UnseatOp) or op.player_id != pid:
                        self.broken = self.broken or Violation(
                            self.now,
                            table_id,
                            f"hand {op.hand_id}'s void for {pid}'s leave was stored "
                            "without the seat's stand-up (D36: one write)",
                        )
                    if pid in self.store.tables[table_id].facts.seats.values():
                        self.broken = self.broken or Violation(
                            self.now, table_id, f"{pid} still seated after the void for its leave"
                        )
        if isinstance(op, io.QuarantineOp):
            self.quarantined.add(op.hand_id)
        if isinstance(op, io.StartOp) and isinstance(got, tuple):
            self.dealt_at[table_id] = self.now
            self.made_by[got[0].hand_id] = op
            for _, pid in op.candidates:
                if (table_id, pid) in self.left and pid in got[0].players.values():
                    self.broken = self.broken or Violation(
                        self.now,
                        table_id,
                        f"hand {op.hand_no} dealt {pid} in, whose leave was answered "
                        "before its deal was written (D15, D36)",
                    )
        return got

    # -- aimed faults ----------------------------------------------------------------------
    def _answer_at(self, t: SimTable, kind_write: bool) -> tuple[int, io.Result | None]:
        fate = self._fate
        if fate is None:
            return super()._answer_at(t, kind_write)
        self._touch(t)
        kind, ms = fate
        if kind == "failed":
            return self.now + t.rng.randrange(1, 6), io.Result.FAILED
        if kind == "lost":
            t.lost_reply += 1  # applied, its answer lost
            return self.now + t.rng.randrange(1, 6), None
        return self.now + ms, None  # slow

    def _write(self, t: SimTable, core: TableCore, e: io.Write, charges: list[Any]) -> None:
        self._fate = self.fates.pop(t.tid, None) if core is t.core else None
        try:
            super()._write(t, core, e, charges)
        finally:
            self._fate = None

    def _aim(self, t: SimTable, core: TableCore, e: io.Write) -> None:
        """Now and then a fault aimed at the write the owner sends."""
        rng, op = t.rng, e.op
        if isinstance(op, io.StartOp):
            self.deal_writes[t.tid] = (core, e.op_id, op)
            if rng.random() >= self.aim_rate:
                return
            dealt = [p for p in t.players if p.pid in {q for _, q in op.candidates} and p.conn is core]
            kind = rng.choice(("fail_then_leave", "lost_then_leave", "slow_leave_crash", "slow_leave_takeover"))
            self.aimed[kind] += 1
            if kind in ("fail_then_leave", "lost_then_leave"):
                self.fates[t.tid] = ("failed" if kind == "fail_then_leave" else "lost", 0)
                if dealt:
                    p = rng.choice(dealt)
                    self.at(self.now + rng.randrange(3, 260), lambda: self._leave_now(t, p), t)
                return
            slow = rng.randrange(300, 1400)
            self.fates[t.tid] = ("slow", slow)
            if dealt:
                self._leave_now(t, rng.choice(dealt))
            stored = rng.random() < 0.5
            self.at(self.now + rng.randrange(40, slow), lambda: self._lose_node(t, core, op, stored, kind), t)
        elif isinstance(op, io.FinishOp) and op.void_reason is not None and D36_VOID in op.void_reason:
            r = rng.random()  # between the void (stored with the stand-up) and the finish
            if r < 0.4:
                self.aimed["crash_before_finish"] += 1
                self.at(self.now, lambda: self._crash(t, core), t)
            elif r < 0.7:
                self.aimed["finish_failed"] += 1
                self.fates[t.tid] = ("failed", 0)
        elif isinstance(op, io.RecordsOp) and op.hand_id in self.quarantined:
            r = rng.random()  # between the records set aside (and why) and the void
            if r < 0.4:
                self.aimed["crash_before_void"] += 1
                self.at(self.now, lambda: self._crash(t, core), t)
            elif r < 0.7:
                self.aimed["void_failed"] += 1
                self.fates[t.tid] = ("failed", 0)
        elif isinstance(op, io.QuarantineOp) and rng.random() < 0.3:
            self.aimed["quarantine_lost"] += 1
            self.fates[t.tid] = ("lost", 0)
        elif isinstance(op, io.RecordsOp) and core.hand is not None and core.hand.recorder.state is not None:
            h = self.store.hands.get(op.hand_id or -1)
            if h is not None and len(h.records) >= 3 and rng.random() < self.corrupt_rate:
                # a stored record stops replaying, and the table reloads (its node crashed)
                self.aimed["corrupt_then_crash"] += 1
                self.store.corrupt.setdefault(h.hand_id, set()).add(max(h.records))
                t.touched.add(h.hand_id)
                self.at(self.now, lambda: self._crash(t, core), t)

    def _crash(self, t: SimTable, core: TableCore) -> None:
        if t.core is core and not core.gone:
            self._fault(Fault(self.now, "crash", t.index, t.rng.randrange(50, 1500)))

    def _lose_node(self, t: SimTable, core: TableCore, op: io.StartOp, stored: bool, kind: str) -> None:
        """The node stops (a crash) or loses its lease with the deal's write in flight;
        the deal stored first, or not (its write fenced)."""
        if t.core is not core or core.gone or core.pending is None or core.pending.op is not op:
            return
        if stored:
            try:
                self.store.run(t.tid, t.epoch, op)
            except Exception:  # (a conflict: the write's own answer will say)
                return
            self._check_money(t)
        self.aimed[f"{kind}_{'stored' if stored else 'unstored'}"] += 1
        if kind == "slow_leave_crash":
            self._crash(t, core)
        else:
            self._fault(Fault(self.now, "takeover", t.index, 0))

    def _leave_now(self, t: SimTable, p: Player) -> None:
        core = p.conn
        if core is None or core is not t.core or core.facts is None or p.pid not in core.facts.seats.values():
            return
        if (t.tid, p.pid) in self.tries:
            return
        self.leaves += 1
        self._send(t, p, "leave", {})

    # -- leaves, sent again until answered ----------------------------------------------------
    def _send(self, t: SimTable, p: Player, kind: str, payload: dict[str, Any]) -> None:
        cmd_id = t.seq + 1  # (super()._send's command; its scheduling takes the next number)
        super()._send(t, p, kind, payload)
        if kind == "leave" and "sig" not in payload:
            old = self.tries.get((t.tid, p.pid))
            pretell = None if old is None else old.pretell
            self.tries[(t.tid, p.pid)] = LeaveTry(cmd_id, p.conn, p.connected_at, self.now, pretell=pretell)
            self.at(self.now + t.rng.randrange(500, 2500), lambda: self._again(t, p), t)

    def _again(self, t: SimTable, p: Player) -> None:
        """A leave not answered is sent again once refused by the house, or lost with
        its socket (as the bots do, the audit h83)."""
        got = self.tries.get((t.tid, p.pid))
        if got is None:
            return
        core = p.conn
        if core is None or core is not t.core or core.gone or core.facts is None:
            self.at(self.now + t.rng.randrange(500, 2500), lambda: self._again(t, p), t)
        elif got.refused or got.core is not core or got.conn_at != p.connected_at:
            self._send(t, p, "leave", {})
        else:
            self.at(self.now + t.rng.randrange(500, 2500), lambda: self._again(t, p), t)

    def _act(self, t: SimTable, p: Player) -> None:
        if (t.tid, p.pid) not in self.tries:  # a leaver waits for its leave's answer
            super()._act(t, p)

    def _connect(self, t: SimTable, p: Player) -> None:
        was = p.conn
        super()._connect(t, p)
        if (t.tid, p.pid) in self.tries:  # a leave not answered goes again on the new socket
            self.at(self.now + t.rng.randrange(20, 200), lambda: self._again(t, p), t)
        if was is None and p.conn is not None and p.conn is t.core:
            self._send(t, p, "snapshot", {"since": None})  # a join

    def feed(self, t: SimTable, core: TableCore, inp: io.Input, stalled: int = 0) -> list[io.Effect]:
        owner = core is t.core and self.now >= t.frozen_until
        if owner and isinstance(inp, io.Command) and inp.kind == "leave" and "sig" not in inp.payload:
            got = self.tries.get((t.tid, inp.player_id))
            dealing, writing, failed = self.dealing.get(t.tid), self.deal_writes.get(t.tid), self.reloading.get(t.tid)
            if got is not None and got.cmd_id == inp.cmd_id and got.pretell is None:
                if dealing is not None and writing is not None and writing[1] == dealing[0]:
                    if inp.player_id in dealing[2]:
                        got.pretell = (core, writing[2])
                elif failed is not None and failed[0] is core:
                    if inp.player_id in {p for _, p in failed[1].candidates}:
                        got.pretell = failed
        if isinstance(inp, io.Outcome):
            carried = self.carried.pop((core, inp.op_id), None)
            if carried is not None and inp.result is io.Result.COMMITTED:
                self.charges.update(carried)
        if owner and isinstance(inp, io.Outcome):
            writing = self.deal_writes.get(t.tid)
            if writing is not None and inp.op_id == writing[1] and writing[0] is core:
                if inp.result not in (io.Result.COMMITTED, io.Result.REFUSED, io.Result.FENCED):
                    self.reloading[t.tid] = (core, writing[2])
            elif inp.op_id == core.load_id and inp.result is io.Result.COMMITTED:
                self.reloading.pop(t.tid, None)
                if core.facts is None:
                    s = inp.data.stored
                    if s is not None:
                        self.first_load[core] = (s.hand_no, len(s.records) == 1 and not s.commits)
        return super().feed(t, core, inp, stalled)

    # -- effects ---------------------------------------------------------------------------------
    def _effects(self, t: SimTable, core: TableCore, fx: list[io.Effect]) -> None:
        owner = core is t.core
        self._charging = []
        for e in fx:
            if isinstance(e, io.Write) and self._charging:
                self.carried[(core, e.op_id)] = self._charging
                self._charging = []
            if isinstance(e, io.Write) and owner:
                self._aim(t, core, e)
            elif isinstance(e, io.Charge):  # taken once the write that carries it is stored
                self._charging.append((e.hand_id, e.seat))
            elif isinstance(e, io.Reply):
                self._answered(t, core, e)
            elif isinstance(e, io.TellResumed) and owner:
                for p in t.players:  # as service/table.py: a `resumed` carries a snapshot
                    if p.conn is core:
                        core.snapshot_for(p.pid, None, core.time_at(self.now - t.clock_off))
        super()._effects(t, core, fx)
        self._check_holds(t)

    def _answered(self, t: SimTable, core: TableCore, e: io.Reply) -> None:
        sent = t.cmds.get(e.cmd_id)
        if sent is None:
            return
        pid, kind = sent
        key = (t.tid, pid)
        if kind == "sit" and e.error is None:
            self.left.discard(key)
        got = self.tries.get(key)
        if kind != "leave_unsigned" or got is None:
            return
        if e.error is not None:
            if e.error.code not in HOUSE_REFUSALS:
                del self.tries[key]  # (not seated: an earlier one of its leaves was taken)
            elif got.cmd_id == e.cmd_id:
                got.refused = True
            return
        del self.tries[key]
        self.left.add(key)
        self._expect_void(t, core, pid, got)

    def _expect_void(self, t: SimTable, core: TableCore, pid: str, got: LeaveTry) -> None:
        """D36: the leave came behind the deal (nobody had been told the hand) and was
        judged in the stored hand's commit window, with no commitment of the leaver's,
        by the core that wrote the deal or by one whose first load found no commitment."""
        if got.pretell is None:
            return
        writer, op = got.pretell
        n = op.hand_no
        h = next((h for h in reversed(self.store.by_table[t.tid]) if h.hand_no == n), None)
        if (
            h is None
            or self.made_by.get(h.hand_id) is not op
            or h.status not in ("seeding", "void")
            or pid not in {p for p, _ in h.players.values()}
        ):
            return
        if set(h.records) - {0, 1} or (1 in h.records and h.records[1].get("type") != "void"):
            return  # past the commit window
        seat = next(s for s, (p, _) in h.players.items() if p == pid)
        if h.seeds.get(seat, [None])[0] is not None:
            return
        first = self.first_load.get(core)
        if writer is not core and first != (n, True):
            return
        self.must_void[(t.tid, n)] = pid

    def _ended(self, t: SimTable, op: io.FinishOp) -> None:
        h = self.store.hands[op.hand_id]
        first = h.transcript_text is op.transcript and h.settlements <= 1
        if op.hand_id in self.quarantined:
            self.refused_leaves.pop((t.tid, h.hand_no), None)  # acks past the cut fail, as they should (D33)
        super()._ended(t, op)
        if not first:
            return
        self.dealt_at[t.tid] = self.now
        if op.hand_id in self.quarantined and op.settlement is not None:
            raise Violation(
                self.now,
                t.tid,
                f"hand {op.hand_id} was settled after its unreplayable records were set aside (D33: it is voided)",
            )
        pid = self.must_void.pop((t.tid, h.hand_no), None)
        if pid is None:
            return
        seat = next(s for s, (p, _) in h.players.items() if p == pid)
        if op.settlement is not None:
            raise Violation(
                self.now,
                t.tid,
                f"hand {op.hand_id} was settled with {pid} in it, whose leave came "
                "before anyone was told the hand (D36: it is voided)",
            )
        if (op.hand_id, seat) in self.charges:
            raise Violation(
                self.now,
                t.tid,
                f"{pid} was charged in hand {op.hand_id}, whose leave came before anyone was told the hand (D36)",
            )
        self.pretold_voids += 1

    # -- invariants ----------------------------------------------------------------------------
    def _check_holds(self, t: SimTable) -> None:
        if self.broken is not None:
            raise self.broken
        live = [h for h in self.store.by_table[t.tid][-3:] if h.status in ("seeding", "playing")]
        for p in t.players:
            want = sum(amount for h in live for q, amount in h.players.values() if q == p.pid)
            if self.store.held[p.pid] != want:
                raise Violation(
                    self.now,
                    t.tid,
                    f"{p.pid} has {self.store.held[p.pid]} held, its live hands "
                    f"hold {want} (no hold survives without a live hand)",
                )
        bad = self.store.check_ledger()
        if bad is not None:
            raise Violation(self.now, t.tid, bad)

    def _stall_check(self) -> None:
        """Liveness: a table with two willing seats connected to its owner and no hand
        deals within ``deal_bound`` of the end of the house's last fault, of its last
        hand, of their connections and of the last disconnection of a seat."""
        for t in self.tables:
            core = t.core
            if core is None or core.facts is None or t.fault_open or self.now < t.frozen_until:
                continue
            store_ok = max((f.at + f.duration for f in self.store_faults if f.at <= self.now), default=0)
            for (tid, pid), got in self.tries.items():
                late = self.now - max(got.sent_at, t.ok_at, store_ok)
                if tid == t.tid and got.core is core and not got.refused and late > self.deal_bound:
                    raise Violation(self.now, t.tid, f"{pid}'s leave is not answered after {late / 1000:.1f}s")
            if core.hand is not None or core.pending is not None or core.facts.status != "open":
                continue
            seated = set(core.facts.seats.values())
            live = [p for p in t.players if p.conn is core and p.pid in seated and (t.tid, p.pid) not in self.tries]
            if len(live) < 2:
                continue
            since = max(
                t.ok_at,
                store_ok,
                self.dealt_at.get(t.tid, 0),
                *(p.connected_at for p in live),
                *(p.left_at for p in t.players if p.pid in seated),
            )
            if self.now - since > self.deal_bound:
                raise Violation(
                    self.now,
                    t.tid,
                    f"no deal for {(self.now - since) / 1000:.1f}s with "
                    f"{len(live)} willing seats connected and the house not at fault",
                )
        super()._stall_check()

    def _final_check(self) -> None:
        super()._final_check()
        for tid, hands in self.store.by_table.items():
            live = [h for h in hands if h.status in ("seeding", "playing")]
            if len(live) > 1:
                raise Violation(self.now, tid, f"{len(live)} hands live at once")
