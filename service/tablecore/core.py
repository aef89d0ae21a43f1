"""The table's state machine: ``step(input, now) -> effects``.

One object per table holds its state (mutated in place, for speed; nothing outside
it changes it).  At most one store op is in flight: commands that arrive meanwhile
wait in order, and the clock waits too (D37: no clock while a write is pending).
Memory moves first for a record (the recorder accepts it), then the op goes out;
what it tells comes out of the core only once its outcome says committed (stored
before told).  A failed, conflicting or ambiguous write drops memory: the table
pauses, reloads from the store (D32), answers the command in flight by what is
stored, and resumes.  A fenced write or a lost lease lets the table go: every client
is told ``moved`` and its socket closed.  The hand's own steps are in
:mod:`service.tablecore.steps`, the commands in :mod:`service.tablecore.commands`.
"""

from __future__ import annotations

import collections
import logging
from enum import Enum
from typing import Any

from service.handrun import HandRun, restore
from service.keys import ServerKeys
from service.tablecore import io
from service.tablecore.clock import Reachability, backoff
from service.tablecore.commands import Commands
from service.tablecore.errors import ClientError, moved, unavailable
from service.tablecore.phase import HandPhase
from service.tablecore.state import CoreConfig, TableFacts
from service.tablecore.steps import TOLD_LATE_MS, StoredLogError
from verifier.errors import RuleError
from verifier.record import RestoreError

log = logging.getLogger("rummy.table")
HOUSE_REFUSALS = frozenset({"unavailable", "moved", "shutting_down"})  # the house's fault (D35)
MOVES = frozenset({"commit", "reveal", "action", "leave"})  # a leave in play is a move too (D15, D35)


class Mode(Enum):
    NEW = "new"  # not loaded yet
    LOADING = "loading"  # a load is in flight
    WAITING = "waiting"  # backing off before the next load
    SERVING = "serving"
    GONE = "gone"  # let go: another node serves the table, or it was handed over


class TableCore(Commands):
    def __init__(self, table_id: str, keys: ServerKeys, cfg: CoreConfig) -> None:
        self.table_id = table_id
        self.keys = keys
        self.cfg = cfg
        self.facts: TableFacts | None = None
        self.hand: HandRun | None = None
        self.mode = Mode.NEW
        self.queue: collections.deque[io.Command] = collections.deque()
        #: the cmd_ids of commands that came while a write was in flight and after the
        #: clock had run out: they do not go before the clock
        self.arrivals: set[int] = set()
        #: D36: the leaves that came while a deal's write was in flight, cmd_id → the
        #: hand_no of that deal: they came before the hand, which is voided for them
        self.behind_deal: dict[int, int] = {}
        self.pending: io.Pending | None = None
        self.unsettled: io.Pending | None = None  # the op in flight when the store failed
        self.load_id: int | None = None
        self.reach = Reachability()
        self.streak = 0  # failures since the last committed write
        self.paused_told = False  # `paused` went out in this streak
        self.resumed_told = False
        self.hung = False
        self.refused_at: int | None = None  # when the store last refused a write of this table
        self.retry_at: int | None = None
        self.next_start: int | None = None
        self.handoff = False
        self.last_now: int | None = None  # the table's time at its last step (ms)
        self.last_clock: int | None = None  # the clock it was given then
        #: ms the clock has run forward over this core's steps, a step back counted as
        #: none: the house's own timers run on it (a hung write; D37), neither slowed
        #: while the table's time gains on the clock nor held by a step back
        self.steady = 0
        #: how far the table's time ran ahead of the clock it is given (ms) at the clock
        #: ``_skew_clock``: the clock stepped back, or the table's stored log is ahead of
        #: it (D37, :meth:`_time`); it shrinks from then on (:meth:`skew_at`)
        self._skew = 0
        self._skew_clock = 0
        self.armed: int | None = None  # the wake-up last asked for, on the given clock
        self.hands_finished = 0
        self.to_void: tuple[str, int | None] | None = None  # a restored hand to void (D33), keep
        self.unreadable: io.VoidUnreadableOp | None = None
        self._ops = 0
        self.fx: list[io.Effect] = []
        self.stored_at = 0  # when the write being answered was stored (ms): the tells of its records are now
        #: D37: players whose connection came while the write in flight was pending, having
        #: had none (a store answering late held their way back too: ``_answered_late``)
        self.came_while_writing: set[str] = set()
        self._start_held: int | None = None  # the deal a late answer held last (once a try)
        #: D36: the hand_no of a hand this core's first load found in its commit window
        #: with no commitment stored: its last owner may never have told it, and a leave
        #: it refused behind that deal's write (it let the table go, or stopped) is
        #: judged here as one that came before the hand (``Commands._left_before``)
        self.untold_deal: int | None = None

    # -- the one entry ------------------------------------------------------------------
    def step(self, inp: io.Input, clock: int, stalled: int = 0) -> list[io.Effect]:
        """``clock``: the shell's clock (ms, the wall clock); the table runs on its own
        time, which never goes back (:meth:`_time`).  ``stalled``: the longest stall of
        the shell's loop that ended since its last step (ms; service.stallmeter)."""
        self.fx = fx = list[io.Effect]()
        now = self._time(clock, stalled)
        if isinstance(inp, io.Command):
            self._command(inp, now)
        elif isinstance(inp, io.Outcome):
            self._outcome(inp, now)
        elif isinstance(inp, io.Reach):
            if inp.connected:
                if self.pending is not None and inp.player_id not in self.reach.connected:
                    self.came_while_writing.add(inp.player_id)
                self.reach.connect(inp.player_id, now)
            else:
                facts = self.facts
                seated = facts is not None and inp.player_id in facts.seats.values()
                self.reach.disconnect(inp.player_id, now, seated=seated)
        elif isinstance(inp, io.LeaseEvent):
            if inp.kind is io.Lease.LOST:
                self._let_go("the lease was lost", release=False)
            else:
                self.handoff = True
        now = max(now, self.last_now or now)  # a load may have moved the table's time on
        self._arm(now, self._pump(now))
        return fx

    @property
    def paused(self) -> bool:
        return self.mode is not Mode.SERVING or self.hung

    @property
    def refusing(self) -> bool:
        """The store refused a write of this table within ``refusing_ms``: it said so
        (a full disk: SQLSTATE 53100), or a write failed again after the reload that
        followed a failed one (it answers reads, not writes).  The table serves between
        its reloads, yet its store is at fault: /healthz says so (D37).  A write that
        commits meanwhile does not end it: a full disk lets some through (a page with
        room left)."""
        at, now = self.refused_at, self.last_now
        return at is not None and now is not None and now - at < self.cfg.refusing_ms

    @property
    def ready(self) -> bool:
        """Loaded, and done with what a load may leave to do (a hand to void or settle)."""
        hand = self.hand
        return (
            self.mode is Mode.SERVING
            and self.pending is None
            and self.to_void is None
            and self.unreadable is None
            and (hand is None or hand.phase is not HandPhase.FINISHING)
        )

    @property
    def gone(self) -> bool:
        return self.mode is Mode.GONE

    def emit(self, effect: io.Effect) -> None:
        self.fx.append(effect)

    def reply(
        self, cmd: io.Command | None, result: dict[str, Any] | None = None, error: RuleError | None = None
    ) -> None:
        if cmd is not None:
            self.fx.append(io.Reply(cmd.cmd_id, result, error))
            if self.behind_deal:
                self.behind_deal.pop(cmd.cmd_id, None)
            if (
                error is not None
                and error.code in HOUSE_REFUSALS
                and cmd.kind in MOVES
                and self.last_now is not None
                and self.refusal_owes(cmd)
            ):
                self.reach.refused[cmd.player_id] = self.last_now  # D35: its whole window from now

    # -- time ---------------------------------------------------------------------------
    @property
    def skew(self) -> int:
        """How far the table's time is ahead of the clock at the last step (ms)."""
        return self.skew_at(self.last_clock)

    def skew_at(self, clock: int | None) -> int:
        """How far the table's time is ahead of ``clock``.  Once ahead, the table's time
        runs at ``slew - 1`` of ``slew`` parts of the clock's pace until it meets the
        clock again (D37): the records' times come back to the clock (an hour ahead
        takes ten hours at the default), and a turn or a window lasts a little longer
        on the clock, never less."""
        s = self._skew
        if s <= 0 or clock is None:
            return s
        return max(0, s - max(0, clock - self._skew_clock) // self.cfg.slew)

    def _reskew(self, clock: int, skew: int) -> None:
        self._skew, self._skew_clock = skew, clock

    def time_at(self, clock: int) -> int:
        """The table's time on ``clock`` (a read: nothing changes)."""
        now = clock + self.skew_at(clock)
        return now if self.last_now is None else max(now, self.last_now)

    def shown(self, at: int | None) -> int | None:
        """The moment the clock the table is given (the one clients are told about) will
        read when the table's time reaches ``at``: they differ while the table's time is
        ahead (:meth:`_time`), and it gains on the clock by one ``slew``-th of its pace
        until the two meet (:meth:`skew_at`)."""
        clock, skew = self.last_clock, self.skew
        if at is None or skew <= 0 or clock is None or at <= clock + skew:
            return None if at is None else at - skew
        met = self._skew_clock + self._skew * self.cfg.slew  # the clock at which the two meet
        if at >= met:
            return at
        # the fewest clock ms x after ``_skew_clock`` by which the table's time gains
        # ``d``: x - x // slew >= d
        base, slew = self._skew_clock, self.cfg.slew
        d = at - base - self._skew
        x = d + d // (slew - 1)
        while x - x // slew < d:
            x += 1
        while x > 0 and (x - 1) - (x - 1) // slew >= d:
            x -= 1
        return base + x

    def _time(self, clock: int, stalled: int = 0) -> int:
        """The table's time for a step on ``clock``.  It runs as the clock runs, but never
        back: a clock that stepped back (a corrected system clock, a node whose clock is
        behind the one before it) would otherwise hold every turn and window until it
        caught up again — a table stalled for as long as the step, the records' ``t``
        held still — so the table's time keeps running from where it was, ahead of the
        clock by the step (``skew``; what clients are told of a deadline is on their
        clock, :meth:`shown`), and gains on the clock a little at a time until the two
        meet (:meth:`skew_at`).  A clock that stepped forward is a node that stood
        still: every grace starts again (below, D37)."""
        now = clock + self.skew_at(clock)
        last, last_clock = self.last_now, self.last_clock
        if last is not None and now < last:
            log.warning("table %s: the clock went back %d ms; the table's time goes on", self.table_id, last - now)
            self._reskew(clock, last - clock)
            now = last
        if last_clock is not None:
            self.steady += max(0, clock - last_clock)
        self.last_now, self.last_clock = now, clock
        if self.mode is Mode.NEW:
            self._load(now)
            return now
        if last_clock is not None and clock - last_clock >= self.cfg.freeze_ms and self.mode is Mode.SERVING:
            # This node stood still (frozen, or its loop blocked): nobody could reach it.
            # Measured on the clock: the table's time runs slower while it is ahead.
            log.warning("table %s: no beat for %d ms; every grace starts again", self.table_id, clock - last_clock)
            self.reach.fault_over(now, stood_still=True)
        elif last is not None and last_clock is not None and self.mode is Mode.SERVING:
            # A stall too short to be taken for standing still (a stop of a second or
            # two, a long collection, a starved process): the step comes late, and a
            # move a seat sent before its deadline still waits in the socket unread.
            woke = last_clock + self.cfg.beat_ms
            if self.armed is not None:  # (asked for at once: at the last step)
                woke = max(last_clock, min(woke, self.armed))
            late = max(clock - woke, stalled)  # the loop's own count sees one that ended just after the wake
            if late > self.cfg.stall_ms:
                self._stalled(now, last, late)
            elif late > self.cfg.jitter_ms:
                self._settle(now, late)
        p = self.pending
        if p is not None and not self.hung:
            # Timed on the clock's run, as the freeze: the table's time runs slower while it
            # is ahead.  Across a step back of the clock how long the write has waited since
            # the last step cannot be told, so the house takes it as hung at once (D37), and
            # each seat has its grace once it answers (the simulator found a write 2 s slow,
            # timed at 1.3 s across a step back, and a seat charged as it answered).
            waited = self.steady - p.steady
            if waited >= self.cfg.hung_ms or (last_clock is not None and clock < last_clock):
                log.warning("table %s: a write has not answered for %d ms or more; pausing", self.table_id, waited)
                self.hung = True
                self._tell_paused()
        return now

    def _stalled(self, now: int, last: int, late: int) -> None:
        """D37: this node woke ``late`` ms after the wake it asked for (or its beat), a
        stall too short for a freeze.  The seats the running clock would charge, whose
        clock ran out during the stall or runs out within a beat of its end, keep the
        time they had left when the node was last awake (at ``last``, the table's time of
        its last step), at least a beat, counted from now: the stall is not taken out of
        their windows, and a move sent in time, read only now, is taken and leaves its
        turn what it had.  Never past the window's deadline at its first stall (or that
        stall's end, if later) plus the whole window (HandRun.hold_for_stall): a node
        late at every wake (starved for good) still ends its turns.
        A seat with no connection to the table keeps ``grace_ms`` from now instead, once
        a window, never past that window's cap (HandRun.hold_for_short_stall): a stopped
        process holds every handshake too, and a player whose new socket waited unread
        in the stall reaches the table before the clock charges it, as when the store
        answered late (``_answered_late``).  (Before, a stop of 1-3 s across a deadline
        charged the seat whose move waited in the socket: the clock's wake was stepped
        before the socket was read; and an absent seat got nothing back, charged at the
        wake before its held handshake had a turn of the loop: the audit h74.)"""
        hand = self.hand
        if hand is None:
            return
        phase = hand.phase
        every = self.charged(hand, phase)
        charged = [s for s in every if hand.players[s] in self.reach.connected]
        end = self.deadline(hand, phase)
        if end is None or end > now + self.cfg.beat_ms:
            return
        for seat in every:
            if seat not in charged:  # absent: its way back waited in the stall (D37)
                kept = hand.hold_for_short_stall(seat, now + self.cfg.grace_ms, end)
                if kept is not None and kept > now:
                    log.warning(
                        "table %s: woke %d ms late; absent seat %d keeps %d ms", self.table_id, late, seat, kept - now
                    )
        if not charged:
            return
        left = min(max(end - last, self.cfg.beat_ms), hand.window_ms(phase))
        # the cap counts from the stall's end when the stall outlasted the deadline: a
        # stall longer than the window (short of a freeze) would otherwise pass the cap
        # itself, and the seat keep nothing (the simulator, seed 24 of its leaving world)
        held = max(hand.hold_for_stall(seat, now + left, max(end, now)) for seat in charged)
        if held > now:
            log.warning("table %s: woke %d ms late; seats %s keep %d ms", self.table_id, late, charged, held - now)

    def _settle(self, now: int, late: int) -> None:
        """D37: this node woke ``late`` ms after the wake it asked for, more than the
        loop's jitter and less than a stall: a short stop, a long collection, a busy
        neighbour.  A deadline that ran out in it may hide a move sent in time and not
        yet read (the clock's wake is stepped first; the loop's meter may not have
        counted the stall yet).  The seats the clock would charge now keep as long again
        as the wake was late, at least ``settle_ms``: the move, read at last, is stepped
        first.  Once a window (HandRun.hold_for_short_stall), so a loop late at every
        wake still ends its turns, and never past the cap of a stall's hold.  A seat
        with no connection to the table is not held (D16)."""
        hand = self.hand
        if hand is None:
            return
        phase = hand.phase
        end = self.deadline(hand, phase)
        if end is None or end > now:
            return
        until = now + max(late, self.cfg.settle_ms)
        for seat in self.charged(hand, phase):
            if hand.players[seat] in self.reach.connected:
                held = hand.hold_for_short_stall(seat, until, end)
                if held is not None and held > now:
                    log.info("table %s: woke %d ms late; seat %d keeps %d ms", self.table_id, late, seat, held - now)

    def _arm(self, now: int, due: int | None) -> None:
        """The next wake-up, on the clock the shell runs: ``due`` is the table's time of
        the next deadline, as :meth:`_pump` left it."""
        at = None
        if self.mode is Mode.WAITING:
            at = self.shown(self.retry_at)
        elif self.mode is Mode.SERVING:
            p = self.pending
            if p is not None:
                clock = self.last_clock if self.last_clock is not None else now
                at = None if self.hung else clock + p.steady + self.cfg.hung_ms - self.steady
            else:
                at = self.shown(due)
        if at != self.armed:
            self.armed = at
            self.emit(io.Arm(at))

    # -- commands -----------------------------------------------------------------------
    def _command(self, cmd: io.Command, now: int) -> None:
        if self.mode is Mode.GONE:
            self.reply(cmd, error=moved())
        elif cmd.kind == "snapshot" and self.facts is not None:
            self._snapshot(cmd, now)
        elif cmd.kind == "leave" and not _signed_leave(cmd) and (deal_no := self._failed_deal_no()) is not None:
            # D36: a leave that came while the table recovers from a deal's failed write
            # came before that hand (nobody has been told it), as one that came while the
            # write was in flight: kept for the reload (``_keep``) and judged first then —
            # a void if the deal was stored, a plain leave if not.  Before, it was refused
            # ``unavailable`` while waiting (or judged after the load as a leave in the seed
            # phases while loading), and sent again it was charged for the hand (the audit
            # h84, tests/test_audit_fault_leave_while_waiting.py).
            self.behind_deal[cmd.cmd_id] = deal_no
            self.queue.append(cmd)
        elif self.mode is Mode.WAITING:
            self.reply(cmd, error=unavailable())
        else:
            if self.pending is not None and not self.paused:
                due = self.due_by_rule(now)
                if due is not None and due <= now:  # it came after the clock ran out
                    self.arrivals.add(cmd.cmd_id)
            if cmd.kind == "leave" and self.pending is not None and isinstance(self.pending.op, io.StartOp):
                self.behind_deal[cmd.cmd_id] = self.pending.op.hand_no
            self.queue.append(cmd)

    def _failed_deal_no(self) -> int | None:
        """The hand_no of the deal whose write failed, while the table waits to reload
        or reloads after it (the reload has not settled it yet)."""
        p = self.unsettled
        if self.mode in (Mode.WAITING, Mode.LOADING) and p is not None and isinstance(p.op, io.StartOp):
            return p.op.hand_no
        return None

    def _snapshot(self, cmd: io.Command, now: int) -> None:
        since = cmd.payload.get("since")
        events_since = (since["hand_no"], since["i"]) if since else (0, -1)
        hand = self.hand
        if hand is not None and self.forgotten_since(hand, events_since):
            # the events asked for are in records memory forgot: read them back first,
            # when no op is in flight (the join waits in the queue until then).  Memory
            # holds them again until the next record is stored (Steps.apply forgets
            # them then), so the joins queued behind this one, and any that come before
            # the next move, are answered without a read of their own: one read per
            # stored record however many joins ask (before, each join read the whole
            # log again, and a client sending joins held the table's moves behind them).
            # A client that joins after every move keeps the hand's log in memory: as
            # much as every table held before stored records were forgotten, no more.
            if self.mode is not Mode.SERVING or self.pending is not None:
                self.queue.append(cmd)
                return
            self.judged = None
            self.read_log(hand, now, cmd, lambda: self.snapshot_for(cmd.player_id, events_since, now))
            return
        self.reply(cmd, self.snapshot_for(cmd.player_id, events_since, now))

    def _pump(self, now: int) -> int | None:
        """Every step that can be taken now.  Returns when the clock runs out next
        (:meth:`due`, computed once as the last step found nothing to do; None when
        the pump stopped for a write in flight or because the table does not serve)."""
        if self.mode is Mode.WAITING and self.retry_at is not None and now >= self.retry_at:
            self._load(now)
        while self.mode is Mode.SERVING and self.pending is None:
            if self.queue:
                if (self.to_void is not None or self.unreadable is not None) and self.advance(now):
                    # D33: a hand the load found it must void is voided (its records that do
                    # not replay set aside first) before any command is judged.  Before, a
                    # move queued meanwhile was recorded on the log cut short, the hand went
                    # on from there, and one that ended it left a void the recorder refuses
                    # (the simulator, tests/sim/dealfaults.py, seed 16)
                    continue
                if self.queue[0].cmd_id in self.arrivals:
                    if self.advance(now):
                        continue
                    # D37: a move that waited in the queue is taken before the clock if
                    # it came before the clock ran out; one that came after (as the rules
                    # stood when it came) does not hold it.  Else commands that each cost
                    # a write (a commitment sent again, a sit the store refuses), sent as
                    # fast as the store answers, held every clock of the table for ever
                    # (an audit found it: tests/test_lying_player.py)
                    if self.fire(now, self.due(now)):
                        continue
                cmd = self.queue.popleft()
                self.arrivals.discard(cmd.cmd_id)
                if cmd.kind == "snapshot":  # a join that came before the table had loaded
                    self._snapshot(cmd, now)
                    continue
                try:
                    result = self.handle(cmd, now)
                except RuleError as e:  # the kernel's, or the server's own: nothing changed
                    if self.judged is not None:  # a move the table judged: its refusal is acknowledged (§15)
                        e.ack = self.judged.signed(e.code)  # type: ignore[attr-defined]
                    self.reply(cmd, error=e)
                else:
                    if result is not None:
                        self.reply(cmd, result)
                continue
            if self.advance(now):
                continue
            due = self.due(now)
            if self.fire(now, due):
                continue
            return due
        return None

    # -- the store ------------------------------------------------------------------------
    def write(self, op: io.Op, now: int, **kw: Any) -> io.Pending:
        self._ops += 1
        p = io.Pending(self._ops, op, now, self.steady, **kw)
        if p.cmd is not None:
            p.judged = self.judged
        self.pending = p
        if self.came_while_writing:
            self.came_while_writing = set()
        self.emit(io.Write(p.op_id, op))
        return p

    def _outcome(self, out: io.Outcome, now: int) -> None:
        if self.mode is Mode.GONE:
            return
        if self.mode is Mode.LOADING and out.op_id == self.load_id:
            self.load_id = None
            if out.result is io.Result.COMMITTED:
                self._loaded(out.data, now)
            else:
                self._failed(now, "the load failed")
            return
        p = self.pending
        if p is None or out.op_id != p.op_id:
            return  # an answer to an op memory has dropped (a reload came between)
        self.pending = None
        was_hung, self.hung = self.hung, False
        r = out.result
        if was_hung and (r is io.Result.COMMITTED or r is io.Result.REFUSED):
            # The store answered (a refusal by rule too: a sit it judged): the fault is over
            # (D37: every grace from now, and D32's turn lengthened).  A hang that ended in
            # a refusal went on as if nothing had happened, found by an audit: the seat on
            # turn was charged the moment the store answered, and `resumed` never came.
            self.reach.fault_over(now)
            self._tell_resumed()
            self.paused_told = self.resumed_told = False
        if r is io.Result.COMMITTED:
            self.streak = 0
            self.paused_told = self.resumed_told = False
            self.stored_at = now
            try:
                result = p.on_commit(out.data) if p.on_commit is not None else None
            except StoredLogError as e:  # a read's answer that memory cannot take (nothing changed)
                log.error("table %s: %s; reloading", self.table_id, e)
                self.unsettled = p
                self._failed(now, str(e))
                return
            self.fx.extend(p.after)
            if p.cmd is not None:
                self.reply(p.cmd, result if result is not None else {})
            if not was_hung:
                self._answered_late(p, now)
        elif r is io.Result.REFUSED:  # by rule: nothing was stored, memory had not moved
            if p.on_refused is not None:
                p.on_refused(out.error)
            self.reply(p.cmd, error=out.error or unavailable())
            if not was_hung:
                self._answered_late(p, now)
        elif r is io.Result.FENCED:
            self.reply(p.cmd, error=moved())
            self._let_go("this node's lease was taken over", release=False)
        else:  # failed, ambiguous, conflicting: memory is no longer trusted
            log.warning("table %s: a write came back %s; reloading", self.table_id, r.value)
            if r is io.Result.FULL or (self.streak > 0 and r is not io.Result.CONFLICT):  # (then the reload worked)
                self.refused_at = now
            self.unsettled = p
            self._failed(now, f"a write came back {r.value}")

    def _answered_late(self, p: io.Pending, now: int) -> None:
        """D37: the store answered ``p`` more than ``TOLD_LATE_MS`` after it was
        written, yet before it counted as hung: the tail of a stall the table did not
        see begin, which held the way back of every player with no connection as well
        (a new socket's handshake reads the store).  Whatever the write was (the
        clock's own probe, ``Steps.fire``; another seat's reveal, a newcomer's sit, a
        join's read): each seat the running clock would charge now, its player with
        no connection at some moment of the write, keeps ``grace_ms`` from the
        answer, once a window (``HandRun.hold_for_short_stall``, never past the
        window's end plus a whole one); between hands a deal (or D34's stand-up) that
        fell due meanwhile, with a seated player absent, waits as long, once a try.
        Before, the seat was charged (a withheld reveal, a timeout) the moment the
        store answered, in the instant its player's held handshake went through: the
        probe's grace was given only when the probe was the write that waited (the
        audit h74, tests/test_audit_crash_slow_answer.py)."""
        if now - p.since <= TOLD_LATE_MS:
            return
        came, live = self.came_while_writing, self.reach.connected
        hand = self.hand
        if hand is None:
            facts, at = self.facts, self.next_start
            if facts is None or at is None or at > now or at == self._start_held:
                return
            if any(pid not in live or pid in came for pid in facts.seats.values()):
                self.next_start = self._start_held = now + self.cfg.grace_ms
                log.warning(
                    "table %s: the store took %d ms to answer; a deal due meanwhile waits %d ms",
                    self.table_id,
                    now - p.since,
                    self.cfg.grace_ms,
                )
            return
        phase = hand.phase
        end = self.deadline(hand, phase)
        if end is None or end > now:
            return
        for seat in self.charged(hand, phase):
            pid = hand.players[seat]
            if pid in live and pid not in came:
                continue  # connected throughout: its move, if sent, waits in the queue (D37)
            held = hand.hold_for_short_stall(seat, now + self.cfg.grace_ms, end)
            if held is not None and held > now:
                log.warning(
                    "table %s: the store took %d ms to answer; seat %d keeps %d ms",
                    self.table_id,
                    now - p.since,
                    seat,
                    held - now,
                )

    def _failed(self, now: int, why: str) -> None:
        """The store failed (a write, a load): memory is dropped and the table reloads
        after a backoff.  What waited in the queue is refused ``unavailable`` — but a
        signed leave (D15, D35: a leave counts where it was signed, "at any time"),
        which stays queued and is judged first once the table is back, behind the leave
        in flight if there was one (:meth:`_take_again`).  Refused, it was overtaken by
        the moves sent again after the reload, with no ack to show it (the audit h74,
        tests/test_audit_crash_queued_leave.py); so does a leave that came while a deal
        was being written (:meth:`_keep`)."""
        self.streak += 1
        self._tell_paused()
        kept = collections.deque(cmd for cmd in self.queue if self._keep(cmd))
        for cmd in self.queue:
            if not self._keep(cmd):
                self.reply(cmd, error=unavailable())
        self.queue = kept
        self.arrivals.clear()
        wait = backoff(self.table_id, self.streak, self.cfg)
        if wait == 0:
            self._load(now)
        else:
            log.warning("table %s: %s; reloading in %d ms", self.table_id, why, wait)
            self.mode = Mode.WAITING
            self.retry_at = now + wait

    def _keep(self, cmd: io.Command) -> bool:
        """A command the store's failure does not refuse: a signed leave, or a leave
        that came while a deal was being written (D36: it came before that hand, whether
        the reload finds the deal stored or not)."""
        return _signed_leave(cmd) or cmd.cmd_id in self.behind_deal

    def _load(self, now: int) -> None:
        self._ops += 1
        self.load_id = self._ops
        self.mode = Mode.LOADING
        self.retry_at = None
        self.emit(io.Load(self._ops, None if self.hand is None else self.hand.hand_id))

    def _loaded(self, data: io.Loaded, now: int) -> None:
        """The table as the store has it; an unfinished hand is rebuilt through the
        recorder, whatever its phase (D32), or voided by rule (D33)."""
        old = self.hand
        first = self.facts is None
        if self.facts is not None:  # what memory alone knows of stand-ups survives a reload
            data.facts.stood, data.facts.after_hand = self.facts.stood, self.facts.after_hand
        self.facts = data.facts
        self.hand = None
        self.next_start = None
        self.to_void = None
        self.unreadable = None
        stored = data.stored
        if stored is not None:
            trusted = old.recorder if old is not None and old.hand_id == stored.hand_id else None
            try:
                restored = restore(stored, self.keys, self.table_id, trusted=trusted)
            except RestoreError as e:
                self.unreadable = io.VoidUnreadableOp(stored, f"the stored hand cannot be read: {e}")
            else:
                self.hand = run = restored.run
                if restored.void_reason is not None and not run.recorder.voided:
                    log.warning("table %s: hand %d is voided: %s", self.table_id, run.hand_no, restored.void_reason)
                    keep = restored.keep if restored.keep < len(stored.records) else None
                    self.to_void = (restored.void_reason, keep)
                elif run.phase is not HandPhase.FINISHING:
                    log.info("table %s: hand %d resumed in the %s phase", self.table_id, run.hand_no, run.phase)
        self.mode = Mode.SERVING
        now = self._catch_up(now, data.last_t)
        self.reach.fault_over(now)
        hand = self.hand
        if old is not None and hand is not None and hand.hand_id == old.hand_id and old.owed:
            hand.owed.update(old.owed)  # D35: what the house owed before this reload, it still owes
        elif first and hand is not None:
            self._owe_what_was_forgotten(hand, now)
            if hand.phase is HandPhase.COMMIT and not hand.commits and self.to_void is None:
                # D36: nobody has committed: the last owner may have let the table go (a
                # lease lost, a SIGTERM, a crash) with the deal's write in flight and a
                # leave behind it, which it refused ``moved`` (or never answered); this
                # core cannot know, as it cannot know the moves it refused (D32, D35)
                self.untold_deal = hand.hand_no
        if hand is not None and self.unsettled is not None and _stored_untold(self.unsettled.op, hand):
            # D35: the write in flight was stored but its answer was lost: its records
            # were never told, and are told only now (``resumed``); the window or turn
            # they began runs from its record's t, so each seat it would charge keeps its
            # whole window from now (as when a record is told late, Steps._owe_if_told_late)
            for seat in self.charged(hand):
                hand.owe(seat, now)
        p, self.unsettled = self.unsettled, None
        if p is not None and p.cmd is not None:
            result = p.settled() if p.settled is not None else None
            if result is not None:
                self.reply(p.cmd, result)
            else:
                self._refuse_unstored(p)
        if old is not None and data.ended is not None:
            if self.hand is None or self.hand.hand_id != old.hand_id:
                self.emit(io.TellResult(old, data.ended))
        if not first:
            self._tell_resumed()

    def _catch_up(self, now: int, last_t: int) -> int:
        """The table's time at a load: never before the newest record of the hand it
        loaded, nor of the hand before when none is in progress (``last_t``).  A log
        written on a clock ahead of this one (a node whose clock is ahead of this
        node's, or a restart after the clock stepped back) would otherwise hold the
        hand's clock until this clock caught up with it (:meth:`_time`), or date the
        next hand's records before the last one's."""
        hand = self.hand
        newest = None if hand is None else hand.recorder.records.newest()
        ahead = max(last_t, 0 if newest is None else int(newest["t"])) - now
        if ahead <= 0:
            return now
        log.warning("table %s: its log is %d ms ahead of the clock; its time goes on from it", self.table_id, ahead)
        clock = now - self.skew
        self._reskew(clock, now + ahead - clock)
        self.last_now = now + ahead
        return now + ahead

    def _owe_what_was_forgotten(self, hand: HandRun, now: int) -> None:
        """D32, D35: a hand loaded by a core of its own (a restart, a table taken over
        from another node) cannot know which moves the table's last owner refused —
        what the house owes is kept in memory, and every such refusal came before this
        moment.  So each seat the running clock would charge keeps its whole window
        from now: a refusal's owed window (its arrival + the window) always ends
        sooner."""
        for seat in self.charged(hand):
            hand.owe(seat, now)

    def _refuse_unstored(self, p: io.Pending) -> None:
        """The move in flight was not stored: refused ``unavailable``, with its ack when
        the table had judged it; D35: its seat keeps its whole window from the move's
        arrival, if that window or turn is still the one running.

        A leave in play is not refused: it is taken again, first, on the state the
        reload found (D15, D35: a leave counts where it was signed, "at any time", so a
        house that refused it could take another seat's move first — a declare that
        counts the leaver's cards instead of its 40; docs/fairness.md §15 rule 7 fails
        such a refusal).  Signed over the record that is still the newest, it is
        recorded there, before any command that waited; else it is refused as stale,
        as any move signed over an older record."""
        if self._take_again(p):
            return
        j = p.judged
        error = unavailable()
        if j is not None:
            error.ack = j.signed(error.code)  # type: ignore[attr-defined]
            hand = self.hand
            if hand is not None and hand.hand_id == j.hand.hand_id and hand.clock == j.clock:
                hand.owe(j.seat, j.arrived)
        self.reply(p.cmd, error=error)

    def _take_again(self, p: io.Pending) -> bool:
        """A leave in play whose write was not stored goes back to the head of the
        queue, to be judged again before anything else (:meth:`_refuse_unstored`); so
        does a leave that came while a deal was being written (D36), its void not
        stored."""
        if p.cmd is None or p.cmd.kind != "leave" or self.mode is not Mode.SERVING:
            return False
        if p.judged is None and p.cmd.cmd_id not in self.behind_deal:  # (D36: a void for a leave, too)
            return False
        self.queue.appendleft(p.cmd)
        return True

    def _tell_paused(self) -> None:
        if not self.paused_told:
            self.paused_told, self.resumed_told = True, False
            self.emit(
                io.TellAll(
                    {
                        "type": "paused",
                        "table_id": self.table_id,
                        "message": "the table cannot store right now; no clock runs until it is back",
                    }
                )
            )

    def _tell_resumed(self) -> None:
        if self.paused_told and not self.resumed_told:
            self.resumed_told = True
            self.emit(io.TellResumed())

    def _let_go(self, why: str, *, release: bool) -> None:
        log.warning("table %s: letting go (%s)", self.table_id, why)
        self.mode = Mode.GONE
        for p in (self.pending, self.unsettled):
            if p is not None:
                self.reply(p.cmd, error=moved())
        self.pending = self.unsettled = None
        for cmd in self.queue:
            self.reply(cmd, error=moved())
        self.queue.clear()
        self.arrivals.clear()
        self.behind_deal.clear()
        self.emit(io.LetGo(release, why))

    def refuse_all(self, error: ClientError) -> list[io.Effect]:
        """The shell stops: every command still waiting is answered."""
        self.fx = []
        for p in (self.pending, self.unsettled):
            if p is not None:
                self.reply(p.cmd, error=error)
        for cmd in self.queue:
            self.reply(cmd, error=error)
        self.queue.clear()
        self.arrivals.clear()
        self.behind_deal.clear()
        self.pending = self.unsettled = None
        self.mode = Mode.GONE
        return self.fx


def _signed_leave(cmd: io.Command) -> bool:
    """A leave signed over a record of a hand: a move of that hand (D15), which a
    failed write before it does not refuse (:meth:`TableCore._failed`)."""
    return cmd.kind == "leave" and "sig" in cmd.payload


def _stored_untold(op: io.Op, hand: HandRun) -> bool:
    """The op in flight when the store failed held records of ``hand`` (a move, a
    clock move, a leave, the deal, the seed windows' records, the hand's start) and the
    reload found them stored: they were never told."""
    if isinstance(op, io.StartOp):
        return op.hand_no == hand.hand_no
    if not isinstance(op, io.RecordsOp | io.UnseatOp) or not op.records or op.hand_id != hand.hand_id:
        return False  # the other ops hold no record (a seed's, a finish's, a read)
    last = op.records[-1]
    got = hand.recorder.records.get(int(last["i"])) if int(last["i"]) < len(hand.recorder.records) else None
    return got is not None and got["h"] == last["h"]
