"""Commands at a table: each is checked against memory (a typed error changes
nothing), then either answered at once or turned into one store op whose commit
answers it (:mod:`service.tablecore.core`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from service.handrun import HandRun
from service.tablecore import io
from service.tablecore.errors import ClientError
from service.tablecore.phase import HandPhase
from service.tablecore.steps import Steps
from service.telling import iso_ms
from verifier.chain import commit_move, reveal_move
from verifier.errors import RuleError
from verifier.hand import Event, Leave, Status, action_from_json, action_to_json, seat_view
from verifier.record import HandRecorder
from verifier.settle import hold_amount


@dataclass(frozen=True)
class Judged:
    """A move the table judged (docs/fairness.md §15): what its signed ack names,
    whichever way the move is answered."""

    hand: HandRun
    seat: int
    move: dict[str, Any]
    prev: str
    psig: str
    arrived: int  # the table's clock when it judged the move (ms)
    i: int  # the last record of the log then (a move refused after a failed write names it, not the lost one)
    clock: tuple[str, int]  # the window or turn that ran then (HandRun.clock)

    def ack(self, code: str | None = None) -> dict[str, Any]:
        """Accepted (``code`` None: a commit or a reveal, acknowledged at the last
        record) or refused with ``code``; an accepted action's ack is made with its
        record (:meth:`service.tablecore.steps.Steps.apply`)."""
        rec = self.hand.recorder
        return rec.ack(self.seat, self.move, self.prev, self.psig, arrived=self.arrived, code=code, i=self.i)

    def signed(self, code: str | None = None) -> io.Signed:
        return io.Signed(lambda: self.ack(code))


class Commands(Steps):
    judged: Judged | None = None  # the move of the command in hand, once the table judged it

    def handle(self, cmd: io.Command, now: int) -> dict[str, Any] | None:
        """The reply now, or None: the reply comes when the command's op commits."""
        self.judged = None
        handler = _HANDLERS.get(cmd.kind)
        if handler is None:
            raise ClientError("bad_message", f"unknown command {cmd.kind!r}")
        return handler(self, cmd, now)

    def _sit(self, cmd: io.Command, now: int) -> dict[str, Any] | None:
        facts = self.facts
        assert facts is not None
        rules = facts.rules
        player_id = cmd.player_id
        if facts.status != "open":
            raise ClientError("table_closed", f"this table is {facts.status}: it deals no new hand")
        if player_id in facts.seats.values():
            raise ClientError("already_seated", "you already have a seat at this table")
        seat = cmd.payload.get("seat")
        if seat is None:
            free = [s for s in range(rules.seats) if s not in facts.seats]
            if not free:
                raise ClientError("table_full", "every seat is taken")
            seat = free[0]
        if not isinstance(seat, int) or isinstance(seat, bool) or not 0 <= seat < rules.seats:
            raise ClientError("no_such_seat", f"this table's seats are 0…{rules.seats - 1}")
        if seat in facts.seats:
            raise ClientError("seat_taken", f"seat {seat} is taken")
        result = {"seat": seat, "table_id": self.table_id}

        def seated(_: Any) -> dict[str, Any]:
            facts.seats[seat] = player_id
            self.reach.sat(player_id, now)
            facts.stood.pop(player_id, None)
            self.tell_seats()
            return result

        self.write(
            io.SitOp(player_id, seat, hold_amount(rules.point_value)),
            now,
            cmd=cmd,
            on_commit=seated,
            # (the facts the reload found: ``facts`` is the memory the failed write dropped)
            settled=lambda: result if self.facts is not None and self.facts.seats.get(seat) == player_id else None,
        )
        return None

    def _leave(self, cmd: io.Command, now: int) -> dict[str, Any] | None:
        facts = self.facts
        assert facts is not None
        player_id = cmd.player_id
        seat = next((s for s, p in facts.seats.items() if p == player_id), None)
        if seat is None:
            raise ClientError("not_seated", "you have no seat at this table")
        hand = self.hand
        records: tuple[dict[str, Any], ...] = ()
        tell: list[io.TellUpdate] = []
        result: dict[str, Any] = {"left": seat, "charged": False}
        # the player's seat in the hand: their table seat, unless they dropped, left and sat again meanwhile
        in_hand = None if hand is None else hand.seat_of(player_id)
        if hand is not None and in_hand is not None and not hand.recorder.ended:
            rec = hand.recorder
            state = rec.state
            if state is None:  # D36: leaving in the seed phases is no move of the hand
                after = {**result, "after_hand": True}
                if self._left_before(cmd, hand):
                    self._void_for_leave(cmd, hand, in_hand, after, now)
                    return None

                def later(_: Any) -> dict[str, Any]:
                    facts.after_hand[player_id] = ("left", "D36")
                    return after

                self.write(io.StandLaterOp(seat), now, cmd=cmd, on_commit=later)
                return None
            if state.seat(in_hand).status is Status.PLAYING:  # D15: 40 points, recorded where it was signed
                psig = _signed(cmd.payload, hand)
                move = {"kind": "leave", "seat": in_hand}
                self.judged = self._judge(hand, in_hand, move, psig["prev"], psig["sig"], now)
                old = state
                new, record, events = rec.prepare(Leave(in_hand), psig, hand.next_t(now))
                rec.accept(new, record)
                hand.note_turns(record)
                records = (record,)
                tell.append(io.TellUpdate(hand, record, events, None, old, new, cmd.cmd_id))
                i, t = record["i"], record["t"]
                ack = io.Signed(lambda: rec.ack(in_hand, move, psig["prev"], psig["sig"], arrived=t, i=i))
                result = {"left": seat, "charged": True, "ack": ack}

        def left(_: Any) -> dict[str, Any]:
            told = facts.stand({player_id}, "left", "D15" if result["charged"] else None, None, now)
            self.tell_seats(told)
            if tell and hand is not None:  # a leave on turn passes it on: told late, the next seat is owed (D35)
                self._owe_if_told_late(hand)
            for u in tell:
                assert hand is not None
                due = self.told_deadline(hand)
                self.emit(io.TellUpdate(u.hand, u.record, u.events, due, u.before, u.after, u.cmd_id))
            return result

        op = io.UnseatOp(player_id)
        if records and hand is not None:
            op = io.UnseatOp(player_id, hand.hand_id, hand.hand_no, records, self.told_deadline(hand))

        def settled() -> dict[str, Any] | None:  # on the facts the reload found (``facts`` was dropped)
            now_facts = self.facts
            return result if now_facts is not None and player_id not in now_facts.seats.values() else None

        self.write(op, now, cmd=cmd, on_commit=left, settled=settled)
        return None

    def _hand_for(self, cmd: io.Command) -> tuple[HandRun, int]:
        """The hand a move is for, and the mover's seat in it; a move for no hand the
        table is dealing, or from no seat of it, is refused unjudged (no ack, §15)."""
        hand = self.hand
        if hand is None:
            raise ClientError("no_hand", "no hand is being dealt at this table")
        if cmd.payload.get("hand_no") != hand.hand_no:
            raise ClientError("wrong_hand", f"the hand being dealt is number {hand.hand_no}")
        seat = hand.seat_of(cmd.player_id)
        if seat is None:
            raise ClientError("not_in_hand", "you take no part in this hand")
        return hand, seat

    def _judge(self, hand: HandRun, seat: int, move: dict[str, Any], prev: str, psig: str, now: int) -> Judged:
        """The move as the table judges it — only one its player signed over a record
        of the log: any other is refused unjudged, with no ack (docs/fairness.md §15;
        else a client could have an ack signed that quotes a ``prev`` of its choice,
        the guessed link of a record the log had not reached yet, and "prove" the
        house lied about when it judged the move)."""
        rec = hand.recorder
        if not rec.knows(prev):
            raise ClientError("unknown_head", "the move is signed over no record of this hand: sign it over the newest")
        rec.check_signed(seat, prev, move, psig)
        i = len(rec.records) - 1
        return Judged(hand, seat, move, prev, psig, arrived=hand.next_t(now), i=i, clock=hand.clock)

    def refusal_owes(self, cmd: io.Command) -> bool:
        """D35: whether the house's refusal of ``cmd`` (``unavailable``: the table
        reloading, or its write failed with ``cmd`` in the queue) owes its seat a whole
        window from now.  Only a move its player signed, over a record of the hand in
        progress, by a seat the running clock would charge: what a table would judge
        (docs/fairness.md §15).  Anything else the house refuses (junk, a move for
        another hand, unsigned, or by a seat no clock runs for) owes nothing (before, any
        of it did, and a client sending junk at each reload kept its turn a whole window
        from there instead of D32's grace: an audit found it)."""
        hand = self.hand
        if hand is None or hand.phase not in (HandPhase.COMMIT, HandPhase.REVEAL, HandPhase.PLAY):
            return False
        try:
            hand, seat = self._hand_for(cmd)
            if seat not in self.charged(hand):
                return False
            p, rec = cmd.payload, hand.recorder
            if cmd.kind in ("commit", "reveal"):
                value = bytes.fromhex(p["commit" if cmd.kind == "commit" else "seed"])
                prev, move = _seed_move(rec, seat, cmd.kind, value)
                sig = str(p["sig"])
            elif cmd.kind == "action":
                move = action_to_json(action_from_json({**p["action"], "seat": seat}))
                prev, sig = p["prev"], p["sig"]
            elif cmd.kind == "leave" and rec.state is not None:  # a leave in play is a move (D15)
                psig = _signed(p, hand)
                move, prev, sig = {"kind": "leave", "seat": seat}, psig["prev"], psig["sig"]
            else:
                return False
            if not rec.knows(prev):
                return False
            rec.check_signed(seat, prev, move, sig)
        except (RuleError, KeyError, TypeError, ValueError, AttributeError):
            return False
        return True

    @staticmethod
    def _in_phase(hand: HandRun, phase: HandPhase) -> None:
        if hand.phase is not phase:
            raise ClientError("wrong_phase", f"this needs the {phase} phase; the hand is in the {hand.phase} phase")

    def _seed(self, cmd: io.Command, now: int, kind: str) -> dict[str, Any] | None:
        commit = kind == "commit"
        hand, seat = self._hand_for(cmd)
        value, psig = bytes.fromhex(cmd.payload[kind if commit else "seed"]), str(cmd.payload["sig"])
        rec = hand.recorder
        prev, move = _seed_move(rec, seat, kind, value)
        judged = self.judged = self._judge(hand, seat, move, prev, psig, now)
        self._in_phase(hand, HandPhase.COMMIT if commit else HandPhase.REVEAL)
        held = hand.commits if commit else hand.seeds
        earlier = held.get(seat)
        if earlier is not None and earlier != (value, psig):
            if commit:
                raise ClientError("already_committed", "your commitment is already in")
            raise ClientError("already_revealed", "your seed is already in")
        if commit:
            rec.check_commit(seat, value, psig)
        else:
            rec.check_reveal(seat, value, psig)
        result = {"committed" if commit else "revealed": seat, "ack": judged.signed()}
        # The same move again is stored again (nothing changes but its arrival): the
        # record that will list it is never dated before an ack's ``arrived`` (§15.7),
        # even when the table is loaded on a clock behind this one first (D37).

        def stored(_: Any) -> dict[str, Any]:
            held[seat] = (value, psig)
            return result

        def settled() -> dict[str, Any] | None:
            now_hand = self.hand
            if now_hand is None or now_hand.hand_id != hand.hand_id:
                return None
            return result if seat in (now_hand.commits if commit else now_hand.seeds) else None

        op = io.SeedOp(kind, hand.hand_id, seat, value, psig, judged.arrived)
        self.write(op, now, cmd=cmd, on_commit=stored, settled=settled)
        return None

    def _commit(self, cmd: io.Command, now: int) -> dict[str, Any] | None:
        return self._seed(cmd, now, "commit")

    def _reveal(self, cmd: io.Command, now: int) -> dict[str, Any] | None:
        return self._seed(cmd, now, "reveal")

    def _action(self, cmd: io.Command, now: int) -> dict[str, Any] | None:
        hand, seat = self._hand_for(cmd)
        action = action_from_json({**cmd.payload["action"], "seat": seat})
        psig = {"prev": cmd.payload["prev"], "sig": cmd.payload["sig"]}
        self.judged = self._judge(hand, seat, action_to_json(action), psig["prev"], psig["sig"], now)
        self._in_phase(hand, HandPhase.PLAY)
        self.apply(hand, action, psig, now, cmd)
        return None

    def _left_before(self, cmd: io.Command, hand: HandRun) -> bool:
        """D36: ``cmd``, a leave, came while ``hand``'s deal was being written (it
        waited behind that write), and the hand has not left its commit window.  So
        may a leave of a seat that has not committed, in the commit window of a hand
        this core's first load found with no commitment stored (``untold_deal``): the
        last owner may have let the table go with the deal's write in flight, refusing
        the leave that waited behind it (``moved``, ``shutting_down``, or a crash),
        and the client sends it again here; before, it was judged a leave in the seed
        phases and the clock played for the seat until it dropped it: 40 points for a
        hand it had left before it was dealt (the audit h89,
        tests/test_audit_seams_lease_flap.py)."""
        if hand.phase is not HandPhase.COMMIT:
            return False
        if self.behind_deal.get(cmd.cmd_id) == hand.hand_no:
            return True
        seat = hand.seat_of(cmd.player_id)
        if self.untold_deal != hand.hand_no or seat is None or seat in hand.commits:
            return False
        self.behind_deal[cmd.cmd_id] = hand.hand_no  # kept, and judged again, as such a leave (D35)
        return True

    def _void_for_leave(self, cmd: io.Command, hand: HandRun, seat: int, after: dict[str, Any], now: int) -> None:
        """D36: a leave that came while ``hand``'s deal was being written came before
        the hand: the hand is voided in its commit window (D33: nothing dealt, every
        hold released, no seed revealed but the house's, which gives the house no deck
        to choose), the void stored as the leave's answer with the seat's stand-up, in one
        write (``io.UnseatOp`` with the void record), and the next deal goes without it.
        (Before, the seat stood up only with the hand's finish, from memory: a process
        killed, or a table let go, between the void and the finish kept the leaver
        seated after it was told it had left, and dealt it the next hand: the audit h84,
        tests/test_audit_fault_void_in_commit_window.py.)  A void whose write was not
        stored is judged again after the reload (:meth:`TableCore._take_again`); one
        stored whose answer was lost is answered from the reload (``settled``)."""
        facts = self.facts
        assert facts is not None
        player_id = cmd.player_id
        done = {**after, "voided": hand.hand_id}

        def stood(_: Any) -> dict[str, Any]:
            self.tell_seats(facts.stand({player_id}, "left", "D36", hand.hand_no, now))
            return done

        def settled() -> dict[str, Any] | None:
            now_facts, now_hand = self.facts, self.hand
            if now_facts is None or now_hand is None or now_hand.hand_id != hand.hand_id:
                return None
            if not now_hand.recorder.voided or player_id in now_facts.seats.values():
                return None
            return done

        self.void(
            hand,
            f"seat {seat} left while the hand was being dealt (D36)",
            now,
            cmd,
            done,
            on_commit=stood,
            settled=settled,
            unseat=player_id,
        )

    def _operator_void(self, cmd: io.Command, now: int) -> dict[str, Any] | None:
        hand = self.hand
        if hand is None or hand.hand_id != cmd.payload.get("hand_id"):
            # The REST call found this table's hand in progress in the store; the table
            # is past it now (voided or settled a moment ago): it is over, not unknown.
            raise ClientError("hand_over", "that hand is no longer in progress at this table")
        if hand.phase is HandPhase.FINISHING:
            raise ClientError("hand_over", "the hand has ended; it is being settled")
        owed = hand.owed_in_play()
        if owed > now:  # D33, D35; docs/fairness.md §15 rule 7 fails such a void
            raise ClientError(
                "void_owes_move",
                f"the house refused a seat's move and owes it its whole turn for {-(-(owed - now) // 1000)} s more"
                " (D35); void the hand after that (D33)",
            )
        self.void(hand, f"voided by the operator: {cmd.payload['reason']} (D33)", now, cmd)
        return None

    def _operator_close(self, cmd: io.Command, now: int) -> dict[str, Any] | None:
        """No new hand; the hand in progress finishes; then the table closes."""
        facts = self.facts
        assert facts is not None
        if facts.status != "open":
            return {"id": self.table_id, "status": facts.status}
        if self.hand is None:
            self._close(now)
            assert self.pending is not None
            self.pending.cmd = cmd
            return None

        def closing(_: Any) -> dict[str, Any]:
            facts.status = "closing"
            self.tell_seats()  # the open pages stop offering seats
            return {"id": self.table_id, "status": "closing"}

        self.write(io.StatusOp("closing"), now, cmd=cmd, on_commit=closing)
        return None

    def _operator_stand(self, cmd: io.Command, now: int) -> dict[str, Any] | None:
        """Stand a seat up: now, or — its player being in the hand in progress — as
        that hand ends (the hand goes on; the clock moves for an absent seat)."""
        facts = self.facts
        assert facts is not None
        seat = int(cmd.payload["seat"])
        player_id = facts.seats.get(seat)
        if player_id is None:
            raise ClientError("not_seated", f"seat {seat} is empty")
        hand = self.hand
        later = hand is not None and hand.seat_of(player_id) is not None and not hand.recorder.ended
        result = {"table_id": self.table_id, "seat": seat, "player_id": player_id, "now": not later}
        if later:

            def asked(_: Any) -> dict[str, Any]:
                facts.after_hand[player_id] = ("operator", None)
                return result

            self.write(io.StandLaterOp(seat), now, cmd=cmd, on_commit=asked)
            return None

        def stood(_: Any) -> dict[str, Any]:
            told = facts.stand({player_id}, "operator", None, None, now)
            self.tell_seats(told)
            return result

        self.write(io.UnseatOp(player_id), now, cmd=cmd, on_commit=stood)
        return None

    @staticmethod
    def forgotten_since(hand: HandRun, events_since: tuple[int, int]) -> bool:
        """A snapshot with the events after ``events_since`` needs records memory forgot."""
        gone = hand.recorder.records.forgotten
        after = events_since[1] if events_since[0] == hand.hand_no else -1
        return bool(gone) and after + 1 < gone.stop

    def snapshot_for(self, player_id: str, events_since: tuple[int, int] | None, now: int) -> dict[str, Any]:
        """Everything a (re)connecting player may see now: the table, and the hand in
        progress from their seat's point of view.  With ``events_since`` (hand_no, i),
        the hand's events after record i — all of them when that is another hand — as
        the seat may see them, each with its record's ``i``."""
        facts = self.facts
        assert facts is not None
        out: dict[str, Any] = {
            "table_id": self.table_id,
            "status": facts.status,  # open, closing (no new hand) or closed
            "rules": facts.rules.to_json(),
            "seats": {str(s): p for s, p in sorted(facts.seats.items())},
            "paused": self.paused,
            "hand": None,
            # why this player's seat was last stood up, while they have none (docs/api.md)
            "stood_up": None if player_id in facts.seats.values() else facts.stood.get(player_id),
        }
        hand = self.hand
        if hand is not None and hand.recorder.records:
            rec = hand.recorder
            seat = hand.seat_of(player_id)
            i = len(rec.records) - 1
            deadline = self.told_deadline(hand)
            second = rec.records[1] if len(rec.records) > 1 else None
            if second is not None and second.get("type") != "commitments":
                second = None  # a void in the commit window (D33, D36): no commitments were recorded
            out["hand"] = {
                "hand_no": hand.hand_no,
                "hand_id": hand.hand_id,
                "phase": hand.phase.value,
                "seat": seat,
                "deadline": iso_ms(deadline),
                "header": rec.records[0],
                "commitments": second,
                "committed": None if seat is None else (seat in hand.commits or rec.commit_of(seat) is not None),
                "revealed": seat in hand.seeds if seat is not None else None,
                "i": i,
                "h": rec.head,
                "head": hand.head(i),
                "view": None if rec.state is None else seat_view(rec.state, seat),
            }
            if events_since is not None:
                after = events_since[1] if events_since[0] == hand.hand_no else -1
                out["hand"]["events"] = [
                    {"i": r["i"], **Event.from_json(e).for_seat(seat)}
                    for r in rec.records[after + 1 :]
                    for e in r.get("events", ())
                ]
        return out


_HANDLERS = {
    "sit": Commands._sit,
    "leave": Commands._leave,
    "commit": Commands._commit,
    "reveal": Commands._reveal,
    "action": Commands._action,
    "void": Commands._operator_void,
    "close": Commands._operator_close,
    "stand": Commands._operator_stand,
}


def _seed_move(rec: HandRecorder, seat: int, kind: str, value: bytes) -> tuple[str, dict[str, Any]]:
    """A commitment's or a seed's move (§9) and the record it is signed over: record
    0's link for a commit; record 1's for a reveal (before record 1 there is no such
    prev: the head)."""
    if kind == "commit":
        return str(rec.records[0]["h"]), commit_move(seat, value)
    return (str(rec.records[1]["h"]) if len(rec.records) > 1 else rec.head), reveal_move(seat, value)


def _signed(payload: dict[str, Any], hand: HandRun) -> dict[str, Any]:
    """A leave from the deal on is a move: it carries the player's signature over the
    newest record (§9)."""
    if payload.get("hand_no") != hand.hand_no or "prev" not in payload or "sig" not in payload:
        raise ClientError(
            "signature_required",
            f"you are in hand {hand.hand_no}: leaving is a move, signed over the newest record of the hand "
            "(hand_no, prev, sig)",
        )
    return {"prev": payload["prev"], "sig": payload["sig"]}
