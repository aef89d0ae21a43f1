"""The hand in progress at a table: its recorder, its phase, its clock.

A :class:`HandRun` is built in one of two ways, and only these: a new hand
(the core's start makes the header) or :func:`restore` from the stored
rows, which feeds every stored record through the recorder — the same code path the
live hand took (D32); the clock and its grace are the core's (D37).  Its phase is derived
from the recorder's log, never kept beside it: one record is the commit phase, two the
reveal phase, three (reveals stored, deal not yet) the deal, more is play, and an
ended or void log is finishing.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidTag

from service import fastjson, fastsig
from service.handstore import StoredHand
from service.keys import ServerKeys
from service.tablecore.phase import HandPhase
from verifier.errors import RuleError
from verifier.fairness import PROTOCOL_V2
from verifier.record import HandRecorder, RestoreError

log = logging.getLogger("rummy.hand")

HEADS_KEPT = 4  # signed heads a hand keeps, of its newest records (HandRun.head)
_BY_RECORDS = {1: HandPhase.COMMIT, 2: HandPhase.REVEAL, 3: HandPhase.DEAL}


@dataclass
class HandRun:
    """A hand in progress; pure (every time is passed in, in ms)."""

    hand_id: int
    hand_no: int
    recorder: HandRecorder
    players: dict[int, str]  # seat -> player id
    holds: dict[int, int]  # seat -> HT held (D20)
    commits: dict[int, tuple[bytes, str]] = field(default_factory=dict)  # accepted (commit, player signature)
    seeds: dict[int, tuple[bytes, str]] = field(default_factory=dict)  # accepted (seed, player signature)
    seed_revealed: bool = True  # False when the sealed server seed could not be opened (D33)
    turn_began: int = 0  # t (ms) of the record that began the current turn
    #: the server's signed head of record i, signed once and shared by the mover's and
    #: the other seats' updates and the snapshots; only the newest records' heads are
    #: asked for again, so only the newest HEADS_KEPT are kept (a hand in progress
    #: otherwise held one for each of its records)
    heads: dict[int, dict[str, Any]] = field(default_factory=dict)
    # D35: (clock, seat) -> the earliest ms that seat's window may close, after the house
    # refused a move of it that the rules allow (a refusal's arrival + the whole window)
    owed: dict[tuple[tuple[str, int], int], int] = field(default_factory=dict)
    #: D37: (clock, seat) -> the latest that stalls of the node may hold that window to
    #: (its deadline at the first stall plus the whole window)
    stall_cap: dict[tuple[tuple[str, int], int], int] = field(default_factory=dict)
    #: D37: the (clock, seat) windows a short stall of the node has held already (once each)
    settled: set[tuple[tuple[str, int], int]] = field(default_factory=set)
    #: once the hand has ended: its transcript's canonical JSON, and the seats the
    #: clock dropped (D31), made once as the hand finishes (TableSteps.finish)
    transcript: bytes | None = None
    clock_dropped: tuple[int, ...] = ()

    @property
    def phase(self) -> HandPhase:
        rec = self.recorder
        if rec.ended:
            return HandPhase.FINISHING
        return _BY_RECORDS.get(len(rec.records), HandPhase.PLAY)

    def seat_of(self, player_id: str) -> int | None:
        for s, p in self.players.items():
            if p == player_id:
                return s
        return None

    def head(self, i: int, h: str | None = None) -> dict[str, Any]:
        """Record i's signed head (docs/fairness.md §15), signed once; ``h`` its link
        when the caller holds the record (memory may have forgotten it: it is stored)."""
        got = self.heads.get(i)
        if got is None:
            got = self.heads[i] = self.recorder.head_evidence(i, h)
            while len(self.heads) > HEADS_KEPT:
                del self.heads[min(self.heads)]
        return got

    def next_t(self, now: int, at_least: int = 0) -> int:
        """A record time: now, never before the previous record, never before
        ``at_least`` (a window or a turn clock that has run out: docs/fairness.md
        check ``time``)."""
        newest = self.recorder.records.newest()
        return max(now, 0 if newest is None else int(newest["t"]), at_least)

    def window_end(self) -> int:
        """When the current seed window closes (ms): its announced end, or later when
        the house owes a seat that has not sent its move yet its whole window (D35)."""
        rec = self.recorder
        phase = HandPhase.COMMIT if len(rec.records) == 1 else HandPhase.REVEAL
        began = self.began(phase)
        assert began is not None
        end = began + self.window_ms(phase)
        if phase is HandPhase.COMMIT:
            waiting = [s for s in self.players if s not in self.commits]
        else:
            waiting = [s for s in self.players if rec.commit_of(s) is not None and s not in self.seeds]
        if not self.owed:
            return end
        clock = self.clock
        return max([end, *(self.owed.get((clock, s), 0) for s in waiting)])

    def turn_end(self) -> int:
        """When the turn's clock runs out (ms): ``turn_seconds`` after the turn began, or
        after a refusal the house owes the seat on turn (D35)."""
        state = self.recorder.state
        assert state is not None
        end = self.turn_began + 1000 * state.rules.turn_seconds
        return max(end, self.owed.get((self.clock, state.turn), 0)) if self.owed else end

    @property
    def clock(self) -> tuple[str, int]:
        """Which window or turn runs now: (phase, the ms the turn began, or 0)."""
        phase = self.phase
        return phase.value, self.turn_began if phase is HandPhase.PLAY else 0

    def began(self, phase: HandPhase | None = None) -> int | None:
        """When the clock that runs now began (ms): the record that opened the seed
        window, or the turn; None when no clock runs.  ``phase``: this hand's, when the
        caller has it."""
        if phase is None:
            phase = self.phase
        if phase is HandPhase.PLAY:
            return self.turn_began
        if phase is HandPhase.COMMIT:
            return int(self.recorder.records[0]["t"])
        if phase is HandPhase.REVEAL:
            return int(self.recorder.records[1]["t"])
        return None

    def window_ms(self, phase: HandPhase | None = None) -> int:
        """The whole window of the clock that runs now (ms), as this hand's header
        signed it (``commit_ms``, ``reveal_ms``) or its rules (the turn), never the
        table's settings of today.  ``phase``: this hand's, when the caller has it."""
        if phase is None:
            phase = self.phase
        rec = self.recorder
        if phase is HandPhase.COMMIT:
            return rec.commit_ms
        if phase is HandPhase.REVEAL:
            return rec.reveal_ms
        return 1000 * rec.rules.turn_seconds

    def owe(self, seat: int, arrived: int) -> None:
        """D35: the house refused a move of ``seat`` that the rules allow, at
        ``arrived``: the seat keeps its whole window from then."""
        self.hold(seat, arrived + self.window_ms())

    def owed_in_play(self) -> int:
        """D33, D35: when the last window the house owes a seat in play runs out (ms; 0
        when it owes none): the hand is not voided before then (a house that refused a
        winning declare for a reason of its own could void the hand instead)."""
        return max((until for (clock, _), until in self.owed.items() if clock[0] == HandPhase.PLAY.value), default=0)

    def hold_for_stall(self, seat: int, until: int, end: int) -> int:
        """D37: hold ``seat``'s window to ``until`` after a stall of the node, its
        deadline ``end``; never past that window's cap (its deadline at the first stall
        plus the whole window: a node late at every wake still ends its turns).  Returns
        how far it is held."""
        key = (self.clock, seat)
        until = min(until, self.stall_cap.setdefault(key, end + self.window_ms()))
        self.hold(seat, until)
        return until

    def hold_for_short_stall(self, seat: int, until: int, end: int) -> int | None:
        """D37: hold ``seat``'s window to ``until`` after a short stall of the node, once
        a window (a loop late at every wake, a busy machine's, does not hold a turn wake
        after wake); None when this window was held so once already."""
        key = (self.clock, seat)
        if key in self.settled:
            return None
        self.settled.add(key)
        return self.hold_for_stall(seat, until, end)

    def hold(self, seat: int, until: int) -> None:
        """The clock that runs now does not charge ``seat`` before ``until`` (D35's owed
        window; D37's time left after a stall of the node)."""
        if self.phase not in (HandPhase.COMMIT, HandPhase.REVEAL, HandPhase.PLAY):
            return
        key = (self.clock, seat)
        self.owed[key] = max(self.owed.get(key, 0), until)

    @property
    def deadline(self) -> float | None:
        """The hand's clock by its log and D35's owed windows, in seconds (the core
        holds it back further for D37's grace)."""
        due = self.base_deadline()
        return None if due is None else due / 1000

    def note_turns(self, record: dict[str, Any]) -> None:
        if any(e["kind"] == "turn" for e in record.get("events", ())):
            self.turn_began = int(record["t"])

    def base_deadline(self, phase: HandPhase | None = None) -> int | None:
        """When the hand's clock runs out by the log alone (ms): the seed window's
        end, the turn's end; None when nothing waits for a seat (the deal, the end).
        The grace of D37 is the core's (service.tablecore.clock).  ``phase``: this
        hand's, when the caller has it."""
        if phase is None:
            phase = self.phase
        if phase in (HandPhase.COMMIT, HandPhase.REVEAL):
            return self.window_end()
        if phase is HandPhase.PLAY:
            return self.turn_end()
        return None


@dataclass
class Restored:
    """The outcome of loading a stored hand."""

    run: HandRun
    void_reason: str | None = None  # set: the hand cannot resume and must be voided (D33)
    keep: int = 0  # records that replayed (those after them are set aside)


def restore(stored: StoredHand, keys: ServerKeys, table_id: str, *, trusted: HandRecorder | None = None) -> Restored:
    """Rebuild a stored hand through the recorder (D32), or say why it must be voided
    (D33).  Pure: no I/O.  ``trusted``: this process's recorder of the same hand (a
    reload after a failed write), whose checked signatures are not checked again."""
    players = {s: p for s, (p, _) in stored.players.items()}
    holds = {s: h for s, (_, h) in stored.players.items()}

    def opened(i: int, sealed: bytes | None, public: str) -> dict[str, Any]:
        if sealed is None:
            raise RestoreError(i, "the record was stored without its sealed copy")
        try:
            return dict(json.loads(keys.open_record(sealed, table_id, stored.hand_no, i)))
        except (InvalidTag, ValueError) as e:
            raise RestoreError(i, f"its sealed copy cannot be opened ({type(e).__name__})") from None

    try:
        seed = keys.open_seed(stored.seed_nonce, stored.seed_sealed, table_id, stored.hand_no)
    except (InvalidTag, ValueError):
        seed = None
    publics = [dict(json.loads(public)) for _, public, _, _ in stored.records]
    header = publics[0].get("header") if publics and publics[0].get("type") == "header" else None
    if not isinstance(header, dict) or header.get("protocol") != PROTOCOL_V2:
        raise RestoreError(0, "the hand has no rummy-pf/v2 header")
    rec = HandRecorder.from_header(keys.signer, header, seed or b"", fastjson.canonical, fastsig.accepts)
    if trusted is not None:
        rec.trust(trusted)
    run = HandRun(stored.hand_id, stored.hand_no, rec, players, holds)
    if seed is None:
        # The sealing key is gone: only what was stored in clear can be published — the
        # records with no hidden part, as far as their chain holds (header, commitments,
        # reveals).  The hand is voided without revealing its seed (D33).
        rec.adopt(publics)
        run.seed_revealed = False
        reason = "the key that seals the server seed cannot open it: the hand cannot resume"
        return Restored(run, reason, len(rec.records))
    records: list[dict[str, Any]] = []
    failure: RestoreError | None = None
    for i, public, sealed, _ in stored.records:
        try:
            records.append(opened(i, sealed, public))
        except RestoreError as e:
            failure = e
            break
    try:
        for r in records:
            rec.restore(r)
            run.note_turns(r)
    except RestoreError as e:
        failure = e
    finally:
        rec.trust(None)  # the replay is done: the old recorder is not kept alive by this one
    if failure is not None:
        return Restored(run, f"stored record {failure.i} does not replay: {failure.message}", len(rec.records))
    if len(rec.records) == 0:
        return Restored(run, "the hand has no stored header", 0)
    if stored.void_reason is not None:  # D33: its unreplayable records were set aside, the void not stored
        return Restored(run, stored.void_reason, len(rec.records))
    # Commitments and reveals accepted before the stop are kept (their signatures are
    # checked again when they become records).
    if len(rec.records) == 1:
        run.commits = {s: c for s, c in stored.commits.items() if s in players}
    if len(rec.records) == 2:
        for s, (seed_i, psig) in stored.seeds.items():
            try:
                rec.check_reveal(s, seed_i, psig)
                run.seeds[s] = (seed_i, psig)
            except RuleError:
                log.warning("hand %d: a stored reveal of seat %d does not check; it is left out", stored.hand_id, s)
    return Restored(run, None, len(rec.records))
