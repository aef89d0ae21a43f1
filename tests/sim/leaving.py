"""Two worlds the simulator's fault model lacked, found by an audit (2026-12-07):

- :class:`LeaveWorld`: players leave.  The seat on turn signs a leave now and then (a
  move of the hand, D15; with three seats the turn passes on, D25), so does a seat off
  turn (a leave counts "at any time"), and a seat leaves in the seed phases (D36); a
  player without a seat sits again.  A leave stored slowly cut the next seat's turn
  (D35, told late), and a leave the house refused gave the seat nothing (D35).  Every
  hand in which the house refused a seat's leave with a signed ack is verified with
  those acks as the seat's evidence (docs/fairness.md §15 rule 7: the house took no
  other seat's move before it; found later that day).
  A player also leaves now and then while the table writes a deal that deals it in
  (its leave waits behind that write): once answered, that hand must end void, the
  leaver charged nothing in it (D36, decision of 2026-12-07, night).
- :class:`LostThenAway`: a write is stored but its answer is lost, and the store then
  stays away: the records it held are told only by the ``resumed`` of the reload that
  finds them, and the turn they began is whole from that tell (D35)."""

from __future__ import annotations

from typing import Any

from service.tablecore import io
from service.tablecore.core import TableCore
from service.tablecore.phase import HandPhase
from tests.sim.world import SECOND, Fault, Player, SimTable, Violation, World
from verifier.chain import move_body
from verifier.fairness import PROTOCOL_V2
from verifier.hand import Status
from verifier.transcript import verify_transcript


class LeaveWorld(World):
    def __init__(self, *a: Any, leave_rate: float = 0.05, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.leave_rate = leave_rate
        self.leaves = 0
        #: (table, hand_no) -> the acks of the house's refusals of a leave in that hand
        self.refused_leaves: dict[tuple[str, int], list[dict[str, Any]]] = {}
        self.refusals_verified = 0
        #: table -> (the deal's op_id, its hand_no, who it deals in) while the world has
        #: not answered it
        self.dealing: dict[str, tuple[int, int, frozenset[str]]] = {}
        #: (table, cmd_id) -> (hand_no, player): leaves fed to the table while a deal that
        #: deals the player in was being written, and (table, hand_no) -> player: those
        #: answered without an error (the hand must end void)
        self.behind: dict[tuple[str, int], tuple[int, str]] = {}
        self.left_before: dict[tuple[str, int], str] = {}
        self.voided_for_leaves = 0

    def feed(self, t: SimTable, core: TableCore, inp: io.Input, stalled: int = 0) -> list[io.Effect]:
        dealing = self.dealing.get(t.tid)
        # (a frozen node's input is held, and fed again when it thaws)
        if dealing is not None and core is t.core and self.now >= t.frozen_until:
            op_id, hand_no, dealt = dealing
            if isinstance(inp, io.Outcome) and inp.op_id == op_id:
                del self.dealing[t.tid]
            elif isinstance(inp, io.Command) and inp.kind == "leave" and inp.player_id in dealt:
                self.behind[(t.tid, inp.cmd_id)] = (hand_no, inp.player_id)
        return super().feed(t, core, inp, stalled)

    def _effects(self, t: SimTable, core: TableCore, fx: list[io.Effect]) -> None:
        for e in fx:
            if isinstance(e, io.Write) and isinstance(e.op, io.StartOp) and core is t.core:
                dealt = frozenset(p for _, p in e.op.candidates)
                self.dealing[t.tid] = (e.op_id, e.op.hand_no, dealt)
                self.left_before.pop((t.tid, e.op.hand_no), None)  # that hand_no was not dealt before
                self._leave_while_dealing(t, core, dealt)
            elif isinstance(e, io.Load | io.LetGo) and core is t.core:
                self.dealing.pop(t.tid, None)
            if isinstance(e, io.Reply) and (t.tid, e.cmd_id) in self.behind:
                hand_no, pid = self.behind.pop((t.tid, e.cmd_id))
                if e.error is None:
                    self.left_before[(t.tid, hand_no)] = pid
            ack = None if not isinstance(e, io.Reply) or e.error is None else getattr(e.error, "ack", None)
            if ack is not None and t.cmds.get(e.cmd_id, ("", ""))[1] == "leave" and core is t.core:
                item = ack.make()
                self.refused_leaves.setdefault((t.tid, item["body"]["hand_no"]), []).append(item)
        super()._effects(t, core, fx)

    def _leave_while_dealing(self, t: SimTable, core: TableCore, dealt: frozenset[str]) -> None:
        """Now and then a player the deal in flight deals in leaves the table."""
        if t.rng.random() < self.leave_rate * 4:
            live = [p for p in t.players if p.pid in dealt and p.conn is core]
            if live:
                self.leaves += 1
                self._send(t, t.rng.choice(live), "leave", {})

    def _ended(self, t: SimTable, op: io.FinishOp) -> None:
        super()._ended(t, op)
        h = self.store.hands[op.hand_id]
        hand_no = None if h.transcript is None else h.transcript["hand_no"]
        leaver = self.left_before.pop((t.tid, hand_no), None) if hand_no is not None else None
        if leaver is not None and leaver in {p for p, _ in op.holds.values()}:
            if op.settlement is not None:
                raise Violation(
                    self.now,
                    t.tid,
                    f"hand {op.hand_id} was settled with {leaver} in it, whose leave came while its deal was "
                    "being written and was answered (D36: the hand is voided for it)",
                )
            self.voided_for_leaves += 1
        items = None if h.transcript is None else self.refused_leaves.pop((t.tid, h.transcript["hand_no"]), None)
        if items:
            assert h.transcript is not None
            report = verify_transcript(h.transcript, self.keys.signer.public_bytes, items)
            self.refusals_verified += 1
            if not report.ok:
                raise Violation(self.now, t.tid, f"hand {op.hand_id} with its refused leaves: {report.failure}")

    def _act(self, t: SimTable, p: Player) -> None:
        core = p.conn
        hand = None if core is None or core is not t.core or core.gone or not core.facts else core.hand
        seat = None if hand is None else hand.seat_of(p.pid)
        if hand is not None and seat is not None:
            rec = hand.recorder
            state = rec.state
            playing = state is not None and state.seat(seat).status is Status.PLAYING
            if (
                hand.phase is HandPhase.PLAY
                and state is not None
                and playing
                and (state.turn == seat or t.rng.random() < 0.2)
            ):
                if t.rng.random() < self.leave_rate:
                    move = {"kind": "leave", "seat": seat}
                    sig = p.signer.sign("move", move_body(t.tid, hand.hand_no, rec.head, move), PROTOCOL_V2)
                    self.leaves += 1
                    self._send(t, p, "leave", {"hand_no": hand.hand_no, "prev": rec.head, "sig": sig})
                    return
            elif hand.phase is HandPhase.COMMIT and t.rng.random() < self.leave_rate / 2:
                self.leaves += 1
                self._send(t, p, "leave", {})
                return
        super()._act(t, p)


class LostThenAway(World):
    """When a write's answer is lost (a ``lost_reply`` fault), the store goes away for
    ``away`` ms from that moment."""

    def __init__(self, *a: Any, away: int = 8 * SECOND, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.away = away

    def feed(self, t: SimTable, core: TableCore, inp: io.Input, stalled: int = 0) -> list[io.Effect]:
        if isinstance(inp, io.Outcome) and inp.result is io.Result.AMBIGUOUS and core is t.core:
            if not any(f.at <= self.now < f.at + f.duration for f in self.store_faults):
                self.store_faults.append(Fault(self.now, "unreachable", 0, self.away))
        return super().feed(t, core, inp, stalled)


def lost_then_away(starts: range) -> list[str]:
    """One table, a lost answer at each of ``starts`` (ms) and the store away 8 s after
    it: the violations found (none, with a core that owes the turns it tells late)."""
    found = []
    for x in starts:
        w = LostThenAway(1, tables=1, duration=x + 40 * SECOND, faults=[Fault(x, "lost_reply", 0, 0)])
        try:
            w.run()
        except AssertionError as e:
            found.append(f"lost answer at {x} ms: {e}")
    return found
