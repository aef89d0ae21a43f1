"""The hand's own steps, from its start to its settlement, and the clock (D37).

:meth:`Steps.advance` moves the table on when nobody needs to be waited for (every
commitment in, the hand ended, a departure signed during the seed phases, a table
closing); :meth:`Steps.fire` does what the clock says once it has run out.  Each
step makes its record in memory and asks the store for one op; what it tells goes
out when the op has committed (:mod:`service.tablecore.core`).
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from service import fastjson, fastsig
from service.handrun import HandRun
from service.tablecore import io
from service.tablecore.clock import Reachability
from service.tablecore.phase import HandPhase
from service.tablecore.state import CoreConfig, TableFacts
from verifier.errors import RuleError
from verifier.hand import Action, HandState, TimeOut, action_to_json, dealer_after
from verifier.record import HandRecorder
from verifier.settle import hold_amount

if TYPE_CHECKING:
    from service.keys import ServerKeys

log = logging.getLogger("rummy.table")
TOLD_LATE_MS = 250  # a record told this long after its t: the seats it makes wait keep their whole window (D35)
#: the newest records a hand in progress holds besides its first four; older ones, once
#: stored, are forgotten and read back when the hand ends or a join asks for their
#: events (verifier.recordlog: held for the hand's life they were about 11 KB a table,
#: 2 MB a worker at 2,000 seats by tracemalloc)
RECENT_KEPT = 8


class StoredLogError(Exception):
    """The records the store gave back for a hand in progress are not the ones memory
    forgot (their chain does not hold): reload."""


class Steps:
    table_id: str
    keys: ServerKeys
    cfg: CoreConfig
    facts: TableFacts | None
    hand: HandRun | None
    reach: Reachability
    pending: io.Pending | None
    queue: collections.deque[io.Command]
    next_start: int | None
    handoff: bool
    hands_finished: int
    to_void: tuple[str, int | None] | None
    behind_deal: dict[int, int]
    untold_deal: int | None
    unreadable: io.VoidUnreadableOp | None
    stored_at: int

    def emit(self, effect: io.Effect) -> None:
        raise NotImplementedError

    def write(self, op: io.Op, now: int, **kw: Any) -> io.Pending:
        raise NotImplementedError

    def _let_go(self, why: str, *, release: bool) -> None:
        raise NotImplementedError

    @property
    def paused(self) -> bool:
        raise NotImplementedError

    # -- what is due ------------------------------------------------------------------
    def charged(self, hand: HandRun, phase: HandPhase | None = None) -> list[int]:
        """The seats the clock would charge if it ran out now (``phase``: the hand's,
        when the caller has it)."""
        if phase is None:
            phase = hand.phase
        if phase is HandPhase.COMMIT:
            return [s for s in hand.players if s not in hand.commits]
        if phase is HandPhase.REVEAL:
            rec = hand.recorder
            return [s for s in hand.players if rec.commit_of(s) is not None and s not in hand.seeds]
        if phase is HandPhase.PLAY:
            state = hand.recorder.state
            return [] if state is None else [state.turn]
        return []

    def deadline(self, hand: HandRun, phase: HandPhase | None = None) -> int | None:
        """The hand's clock: its deadline by the log, plus the grace when a fault of the
        house ended while it ran (D32), held back for every seat it would charge until
        that seat has had its grace (D37).  ``phase``: the hand's, when
        the caller has it."""
        if phase is None:
            phase = hand.phase
        base = hand.base_deadline(phase)
        if base is None:
            return None
        window = hand.window_ms(phase)  # the hand's own, not today's settings (D35)
        charged = self.charged(hand, phase)
        if charged:
            base = self.after_fault(hand, phase, base)
        for s in charged:
            base = max(base, self.reach.charge_from(hand.players[s], self.cfg, window))
        return base

    def tell_seats(self, stood: list[dict[str, Any]] | None = None) -> None:
        """Tell who sits where now, the table's status, and the seats this change stood
        up (``stood``, from :meth:`TableFacts.stand`)."""
        facts = self.facts
        assert facts is not None
        self.emit(io.TellSeats(facts.seats, facts.status, stood or []))

    @property
    def skew(self) -> int:
        raise NotImplementedError

    def shown(self, at: int | None) -> int | None:
        """A moment of the table's time on the shell's clock, which is the clock clients
        are told about (the two differ once that clock stepped back: ``TableCore.shown``)."""
        raise NotImplementedError

    def told_deadline(self, hand: HandRun) -> int | None:
        """The hand's deadline as clients are told it, and as it is stored."""
        return self.shown(self.deadline(hand))

    def after_fault(self, hand: HandRun, phase: HandPhase, end: int) -> int:
        """D32: when the house's last fault ended while this window or turn ran, it ends
        no earlier than its ordinary end plus the whole grace, so that the fault's
        length is not taken out of it (up to the grace); else at ``end``."""
        began = hand.began(phase)
        if began is None or began >= self.reach.recovered_at:
            return end
        return max(end, began + hand.window_ms(phase) + self.cfg.grace_ms)

    def due(self, now: int) -> int | None:
        """When the clock runs out next; None while the house is at fault or nothing waits."""
        if self.paused or self.pending is not None or self.facts is None:
            return None
        return self.due_by_rule(now)

    def due_by_rule(self, now: int) -> int | None:
        """When the clock runs out next by the rules, a write in flight or not."""
        if self.facts is None:
            return None
        hand = self.hand
        if hand is not None:
            phase = hand.phase
            if phase is HandPhase.DEAL or phase is HandPhase.FINISHING:
                return now
            return self.deadline(hand, phase)
        if self.next_start is None:
            return None
        at = self.next_start
        for p in self.facts.seats.values():  # no deal while a seated player may yet come back
            if p not in self.reach.connected:
                at = max(at, self.reach.charge_from(p, self.cfg))
        return at

    # -- moving on --------------------------------------------------------------------
    def advance(self, now: int) -> bool:
        """One step that waits for nobody; True if it did something."""
        facts = self.facts
        assert facts is not None
        if self.unreadable is not None:
            op, self.unreadable = self.unreadable, None
            log.error("table %s: hand %d voided without a transcript: %s", self.table_id, op.stored.hand_no, op.reason)

            # the seats asked to stand up as the hand ended stand up now (D36, D33; before,
            # only a hand that ended with a transcript stood them up: the audit h74)
            self.write(op, now, on_commit=lambda stood: self._stand_as_asked(stood or [], (), op.stored.hand_no, now))
            return True
        hand = self.hand
        if hand is None:
            if self.handoff:
                self._let_go("handed over between hands", release=True)
                return True
            if facts.status == "closing":
                self._close(now)
                return True
            self._schedule_start(now)
            return False
        if self.to_void is not None:
            reason, keep = self.to_void
            if keep is not None:
                self.to_void = (reason, None)
                self.write(io.QuarantineOp(hand.hand_id, keep, reason[:500]), now)
            else:
                self.to_void = None
                self.void(hand, reason, now)
            return True
        phase = hand.phase
        if phase is HandPhase.FINISHING:
            self.finish(hand, now)
            return True
        if phase is HandPhase.COMMIT and len(hand.commits) == len(hand.players):
            self.close_commits(hand, now)
            return True
        if phase is HandPhase.REVEAL and not self.charged(hand, phase):
            self.close_reveals(hand, now)
            return True
        return False

    def fire(self, now: int, due: int | None) -> bool:
        """The clock has run out (``due``, as :meth:`due` says now, is not after
        ``now``): its move (D16, D21, D29) or the next hand."""
        if due is None or due > now:
            return False
        hand = self.hand
        if hand is None:
            if self.stored_at < due and self._deal_passes_over_absent():
                # D34, D37: a seat with no connection sits a hand out (and is stood up
                # after max_away of them) only once the store has answered since the deal
                # was due, as the clock charges one (below).  Tried again once answered.
                self.write(io.ProbeOp(), now)
                return True
            self.next_start = None
            self.start(now)
            return True
        phase = hand.phase
        began = hand.began(phase)
        charged = self.charged(hand, phase)
        if self.stored_at < due and any(hand.players[s] not in self.reach.connected for s in charged):
            # D37: a seat with no connection is charged only once the store has answered
            # since its deadline.  A store that hangs unseen (no write in flight) holds the
            # player's way back as well — its handshake reads the store — and the clock's
            # own write would hang, then commit the charge once the store woke.  A probe
            # that hangs pauses the table like any hung write: the fault is the house's,
            # and the seat has its grace after it.  (Found by the audit of the seams.)
            # A probe answered late, yet before it counts as hung, is the tail of such a
            # hang: the absent seat keeps its grace from the answer (TableCore._answered_late).
            self.write(io.ProbeOp(), now)
            return True
        for s in charged:
            self.emit(io.Charge(hand.hand_id, s, phase.value, now, began))
        if phase is HandPhase.COMMIT:
            self.close_commits(hand, now)
        elif phase is HandPhase.REVEAL:
            self.close_reveals(hand, now)
        elif phase is HandPhase.DEAL:
            self.deal(hand, now)
        else:
            state = hand.recorder.state
            assert state is not None
            self.apply(hand, TimeOut(state.turn), None, now)  # D16: the clock moves for the seat
        return True

    def _deal_passes_over_absent(self) -> bool:
        """Whether a deal tried now would sit out a seated player with no connection:
        enough are connected to deal, and someone seated is not."""
        facts = self.facts
        assert facts is not None
        live = self.reach.connected
        connected = sum(1 for p in facts.seats.values() if p in live)
        return facts.rules.min_players <= connected < len(facts.seats)

    def _schedule_start(self, now: int) -> None:
        facts = self.facts
        assert facts is not None
        if facts.status != "open" or len(facts.seats) < facts.rules.min_players:
            self.next_start = None
        elif self.next_start is None:
            self.next_start = now + self.cfg.next_hand_ms

    # -- the start ----------------------------------------------------------------------
    def start(self, now: int) -> None:
        """A new hand for the connected seats that can cover their hold (D20); absent
        seats and those that cannot cover sit it out, and are stood up after
        ``max_away`` hands away (D34); when too few can cover for a hand to be dealt,
        those that could not for ``away_ms``; and when too few are connected to try
        one, the absent seats away for ``away_ms``."""
        facts = self.facts
        assert facts is not None
        rules = facts.rules
        reach = self.reach
        live = reach.connected
        candidates = tuple((s, p) for s, p in sorted(facts.seats.items()) if p in live)
        absent = tuple(p for p in facts.seats.values() if p not in live)
        reach.seated_now(absent)
        connected = {p for _, p in candidates}
        away_ms = self.cfg.away_ms
        if len(candidates) < rules.min_players and any(
            self.stored_at < reach.away_since(p) + away_ms <= now for p in absent
        ):
            # D34, D37: an absent seat is stood up for its time away only once the store
            # has answered since that time ran out.  A store that hangs unseen holds its
            # player's way back (the handshake reads the store), and the stand-up's write
            # would hang, then be stored once the store woke.  A probe that hangs is a hung
            # write: the time away counts again from its end.  Tried again once answered.
            # (Found by the audit of the seams, h66.)
            self.next_start = now
            self.write(io.ProbeOp(), now)
            return
        reach.tries += 1

        def stand(stood: Collection[str], at_hand: int | None) -> None:
            """D34: who had no connection was away; who had one could not be dealt in."""
            log.info("table %s: stood up (D34): %s", self.table_id, sorted(stood))
            told = facts.stand(set(stood) - connected, "away", "D34", at_hand, now)
            told += facts.stand(set(stood) & connected, "cannot_cover", "D34", at_hand, now)
            self.tell_seats(sorted(told, key=lambda e: e["seat"]))

        if len(candidates) < rules.min_players:
            # D34: no hand can count anyone away, so time does: a seat away for away_ms
            # stands up, lest absent seats hold the table for ever
            self.next_start = now + max(1000, self.cfg.next_hand_ms)
            gone = tuple(p for p in absent if now - reach.away_since(p) >= away_ms)
            if gone:
                self.write(io.StandAwayOp(gone), now, on_commit=lambda _: stand(gone, None))
            return
        hand_no = facts.next_hand_no
        need = hold_amount(rules.point_value)
        prev_dealer, prev_head = facts.dealer, facts.head

        def begin(st: io.Started) -> tuple[HandRun, int]:
            order = sorted(st.players)
            dealer = dealer_after(order, prev_dealer)  # D3
            recorder = HandRecorder(
                signer=self.keys.signer,
                table_id=self.table_id,
                hand_no=hand_no,
                rules=rules,
                seats=[(s, st.players[s], st.keys[st.players[s]]) for s in order],
                dealer=dealer,
                server_seed=st.seed,
                prev_head=prev_head,
                commit_ms=self.cfg.commit_ms,
                reveal_ms=self.cfg.reveal_ms,
                encode=fastjson.canonical,
                accepts=fastsig.accepts,
            )
            hand = HandRun(st.hand_id, hand_no, recorder, dict(st.players), dict.fromkeys(st.players, need))
            recorder.open(hand.next_t(now))
            return hand, dealer

        def started(data: tuple[HandRun, int, list[str]] | io.NotDealt) -> None:
            if isinstance(data, io.NotDealt):  # no hand: too few could be dealt in
                self.next_start = now + max(1000, self.cfg.next_hand_ms)
                reach.judged(data.unable, data.stood, now)
                if data.stood:
                    stand(data.stood, None)
                return
            reach.unable.clear()  # a hand: D34 counts who sat it out in hands
            hand, dealer, stood = data
            facts.next_hand_no = hand_no + 1
            facts.dealer = dealer
            self.hand = hand
            if stood:
                stand(stood, hand_no)
            self._tell_phase(hand)

        def refused(_: RuleError | None) -> None:
            self.next_start = now + max(1000, self.cfg.next_hand_ms)

        # D34: a connected seat that could not cover at every deal tried for away_ms
        unable = sorted(p for p in connected if (at := reach.unable_since(p)) is not None and now - at >= away_ms)
        op = io.StartOp(
            hand_no,
            candidates,
            absent,
            need,
            rules.min_players,
            facts.max_away,
            begin,
            self.shown,
            stand_unable=tuple(unable),
        )
        self.write(op, now, on_commit=started, on_refused=refused)
        # D36: a leave still queued as the deal is written came before it: it waited behind
        # the write in flight as the deal fell due (queued after the clock ran out, it does
        # not go before the deal: TableCore.arrivals), and is judged only once the deal is
        # stored.  It is judged as one that came while the deal was being written (a void
        # in the commit window), not as a leave in the seed phases: the leaver paid for a
        # hand it left before it was written, where a leave a moment later cost nothing
        # (the audit h90, tests/test_audit_client_deal_timing.py).
        for cmd in self.queue:
            if cmd.kind == "leave":
                self.behind_deal[cmd.cmd_id] = hand_no

    def _owe_if_told_late(self, hand: HandRun) -> None:
        """D35 for the house's own delay: a window or a turn runs from its record's
        ``t``, but a seat can act only once the record is told, after it is stored.  When
        the store was slow (a stalled database: CI's outage drill saw a 2 s stall close a
        2 s commit window before anyone had seen its header), each seat the running clock
        would charge keeps its whole window from the moment the record was told.  (The
        verifier bounds a window's close from below only; a later close is allowed.)"""
        if hand.recorder.records and self.stored_at - int(hand.recorder.records[-1]["t"]) > TOLD_LATE_MS:
            for seat in self.charged(hand):
                hand.owe(seat, self.stored_at)

    # -- the seed phases and the deal -----------------------------------------------------
    def _store(self, hand: HandRun, records: list[dict[str, Any]], now: int, **kw: Any) -> io.Pending:
        op = io.RecordsOp(hand.hand_no, hand.hand_id, tuple(records), self.told_deadline(hand), kw.pop("status", None))
        return self.write(op, now, **kw)

    def close_commits(self, hand: HandRun, now: int) -> None:
        everyone = len(hand.commits) == len(hand.players)
        hand.recorder.commitments(hand.commits, hand.next_t(now, 0 if everyone else hand.window_end()))
        self._store(hand, hand.recorder.records[1:2], now, on_commit=lambda _: self._tell_phase(hand))

    def _tell_phase(self, hand: HandRun) -> None:
        self._owe_if_told_late(hand)
        self.emit(io.TellPhase(hand, self.told_deadline(hand)))

    def close_reveals(self, hand: HandRun, now: int) -> None:
        rec = hand.recorder
        everyone = not self.charged(hand)
        rec.reveal(hand.seeds, hand.next_t(now, 0 if everyone else hand.window_end()))
        self.deal(hand, now)

    def deal(self, hand: HandRun, now: int) -> None:
        """Record 3: the deal, stored with the reveals in one write; the departures
        signed during the seed phases follow (advance)."""
        rec = hand.recorder
        record, events = rec.deal(hand.next_t(now))
        if rec.voided:  # no seat was dealt in (D29): finish follows
            self._store(hand, rec.records[2:4], now)
            return
        hand.note_turns(record)
        after = rec.state
        self._store(
            hand,
            rec.records[2:4],
            now,
            status="playing",
            on_commit=lambda _: self._told(hand, record, events, None, after),
        )

    def _told(
        self,
        hand: HandRun,
        record: dict[str, Any],
        events: list[Any],
        before: HandState | None,
        after: HandState | None,
        cmd: io.Command | None = None,
    ) -> None:
        """Tell a stored record: its events, and what changed from ``before`` to
        ``after`` (the whole view at the deal); the mover's update rides on the reply
        to ``cmd``."""
        cmd_id = None if cmd is None else cmd.cmd_id
        self._owe_if_told_late(hand)
        self.emit(io.TellUpdate(hand, record, events, self.told_deadline(hand), before, after, cmd_id))

    # -- moves ------------------------------------------------------------------------------
    def apply(
        self, hand: HandRun, action: Action, psig: dict[str, Any] | None, now: int, cmd: io.Command | None = None
    ) -> None:
        """Check, store, then tell: the one path every move takes."""
        rec = hand.recorder
        at_least = hand.turn_end() if isinstance(action, TimeOut) else 0
        before = rec.state
        state, record, events = rec.prepare(action, psig, hand.next_t(now, at_least))
        rec.accept(state, record)  # memory first; if the store fails, the table reloads
        hand.note_turns(record)
        i, h, t = record["i"], record["h"], record["t"]

        def ack(of: HandRun) -> io.Signed | None:
            """A player's move is answered with the server's signed ack (docs/fairness.md
            §15), which is also its record's signed head: ``arrived`` is the record's t."""
            if psig is None:  # the clock's move: nobody to answer
                return None
            move = action_to_json(action)
            return io.Signed(lambda: of.recorder.ack(action.seat, move, psig["prev"], psig["sig"], arrived=t, i=i, h=h))

        def committed(_: Any) -> dict[str, Any]:
            self._told(hand, record, events, before, state, cmd)
            rec.forget_stored(i + 1, RECENT_KEPT)  # stored: the database holds them (read_log)
            return {"i": i, "h": h, "ack": ack(hand)}

        def settled() -> dict[str, Any] | None:
            now_hand = self.hand
            if now_hand is None or now_hand.hand_id != hand.hand_id:
                return None  # the hand ended meanwhile; its result says what happened
            got = now_hand.recorder.records.get(i)  # a reload's replay holds every record
            return {"i": i, "h": h, "ack": ack(now_hand)} if got is not None and got["h"] == h else None

        self._store(hand, [record], now, cmd=cmd, on_commit=committed, settled=settled)

    # -- the end ----------------------------------------------------------------------------
    def void(
        self,
        hand: HandRun,
        reason: str,
        now: int,
        cmd: io.Command | None = None,
        answer: dict[str, Any] | None = None,
        unseat: str | None = None,
        **kw: Any,
    ) -> dict[str, Any]:
        """D33: a void record after what replays; finish follows (nothing is settled).
        ``answer``: what ``cmd`` is answered once it is stored (by default the void);
        ``unseat``: a player stood up in the same write (D36: the leave the void is
        for); ``kw`` goes to the write (its ``settled``, its ``on_commit``)."""
        hand.recorder.void(reason[:500], hand.next_t(now))
        result = answer if answer is not None else {"voided": hand.hand_id, "reason": reason}
        kw.setdefault("on_commit", lambda _: result)
        if unseat is not None:
            records = tuple(hand.recorder.records[-1:])
            op = io.UnseatOp(unseat, hand.hand_id, hand.hand_no, records, self.told_deadline(hand))
            self.write(op, now, cmd=cmd, **kw)
        else:
            self._store(hand, hand.recorder.records[-1:], now, cmd=cmd, **kw)
        return result

    def _stand_as_asked(self, stood: list[str], clock_dropped: Sequence[str], hand_no: int, now: int) -> None:
        """The store stood ``stood`` up as a hand ended: those the clock dropped (D31),
        and those who asked to stand up as it ended (D36, the operator); each told with
        its reason ("after_hand" when this node did not hear why: a reload in between)."""
        facts = self.facts
        assert facts is not None
        if stood:
            asked = set(stood) & set(facts.after_hand)
            clock = set(clock_dropped) & set(stood) - asked
            told = facts.stand(clock, "clock", "D31", hand_no, now)
            for player_id in sorted(set(stood) - clock):
                reason, rule = facts.after_hand.get(player_id, ("after_hand", None))
                told += facts.stand({player_id}, reason, rule, hand_no, now)
            self.tell_seats(told)
        facts.after_hand = {p: why for p, why in facts.after_hand.items() if p in facts.seats.values()}

    def finish(self, hand: HandRun, now: int) -> None:
        """Settle once (D19) or release (a void, D33), publish the transcript, free the
        table for the next hand.  The transcript is made as text from the records'
        (the ones memory forgot read back first: :meth:`_publish`)."""
        facts = self.facts
        assert facts is not None
        rec = hand.recorder
        if hand.transcript is None:
            gone = rec.records.forgotten
            if gone:  # the transcript holds every record
                self.write(
                    io.LogOp(hand.hand_id, hand.hand_no, gone.start, gone.stop),
                    now,
                    on_commit=lambda stored: self._publish(hand, stored),
                )
                return
            self._publish(hand, ())
        transcript = hand.transcript
        assert transcript is not None
        body = rec.transcript_body(hand.seed_revealed)
        last = rec.records[-1]  # never forgotten
        end = io.HandEnd(
            str(body["head"]),
            str(body["server_seed"]),
            body["result"],
            rec.voided,
            str(last["reason"]) if rec.voided else None,
        )
        settlement = None
        if not rec.voided:
            assert rec.state is not None and rec.state.result is not None
            settlement = rec.state.result.settlement
        dropped = hand.clock_dropped
        op = io.FinishOp(
            hand.hand_id,
            transcript,
            end.head,
            {s: (hand.players[s], hand.holds[s]) for s in hand.players},
            settlement,
            end.void_reason,
            # D31; and who memory knows asked to stand up as the hand ends (D36: a void
            # for a leave stood its seat up only here)
            tuple(hand.players[s] for s in hand.clock_dropped)
            + tuple(p for s, p in sorted(hand.players.items()) if p in facts.after_hand and s not in dropped),
        )

        absent = op.stand_up

        def finished(stood: list[str] | None) -> None:
            facts.head = end.head
            self._stand_as_asked(stood or [], absent, hand.hand_no, now)
            self.hand = None
            self.hands_finished += 1
            log.info("table %s: hand %d %s", self.table_id, hand.hand_no, "voided" if rec.voided else "settled")
            self.emit(io.TellResult(hand, end))

        self.write(op, now, on_commit=finished)

    def _publish(self, hand: HandRun, stored: Sequence[bytes]) -> None:
        """Make the hand's transcript, as text (:meth:`HandRecorder.transcript_text`:
        record by record, never a dict of its whole log, the stored records checked
        one at a time), and the seats the clock dropped.  Stored records that do not
        chain: :class:`StoredLogError` (the table reloads, D32)."""
        dropped: list[int] = []
        try:
            hand.transcript = hand.recorder.transcript_text(
                stored,
                seed_revealed=hand.seed_revealed,
                decode=fastjson.loads,
                each=lambda r: dropped.extend(clock_dropped((r,))),
            )
        except ValueError as e:
            raise StoredLogError(f"hand {hand.hand_no}: {e}") from None
        hand.clock_dropped = tuple(dropped)

    def read_log(
        self, hand: HandRun, now: int, cmd: io.Command | None = None, then: Callable[[], dict[str, Any]] | None = None
    ) -> None:
        """Read back the records memory forgot (they are stored: verifier.recordlog),
        hold them again once their chain checks (:meth:`HandRecorder.fill`), then
        ``then()`` gives the reply to ``cmd``.  Records the store gives back that do
        not chain are a store that lies or lost them: :class:`StoredLogError`, and the
        table reloads (its replay checks every stored record, D32)."""
        rec = hand.recorder
        gone = rec.records.forgotten

        def got(stored: Sequence[bytes]) -> dict[str, Any] | None:
            try:
                rec.fill([fastjson.loads(text) for text in stored])
            except ValueError as e:  # not JSON, or not the records'
                raise StoredLogError(f"hand {hand.hand_no}: {e}") from None
            return None if then is None else then()

        self.write(io.LogOp(hand.hand_id, hand.hand_no, gone.start, gone.stop), now, cmd=cmd, on_commit=got)

    def _close(self, now: int) -> None:
        """A closing table closes once its hand is over: every seat is stood up."""
        facts = self.facts
        assert facts is not None

        def closed(_: Any) -> dict[str, Any]:
            facts.status = "closed"
            told = facts.stand(set(facts.seats.values()), "closed", None, None, now)
            self.tell_seats(told)
            self.emit(io.TellAll({"type": "closed", "table_id": self.table_id, "message": "the table is closed"}))
            return {"id": self.table_id, "status": "closed"}

        self.write(io.CloseOp(), now, on_commit=closed)


def clock_dropped(records: Sequence[Mapping[str, Any]]) -> list[int]:
    """Seats the clock dropped (D31: stood up when the hand ends)."""
    return [
        int(e["seat"])
        for r in records
        for e in r.get("events", ())
        if e["kind"] == "drop" and e["data"].get("reason") == "clock"
    ]
