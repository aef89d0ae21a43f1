"""An in-memory store with the semantics of service.tablestore on PostgreSQL: the
same ops, each applied whole or not at all, fenced by the table's lease epoch, safe
to repeat (records by (hand, i) and link, a seed row once, a hand ended once), and
the double-entry ledger of service.ledger (available and held per player, the
house's commission), which the simulator checks after every step."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from service import fastjson, handstore
from service.cluster import Fenced
from service.handrun import HandRun
from service.keys import ServerKeys
from service.tablecore import io
from service.tablecore.errors import ClientError
from service.tablecore.state import TableFacts
from verifier.hand import TableRules


@dataclass
class Hand:
    hand_id: int
    table_id: str
    hand_no: int
    seed: bytes
    nonce: bytes
    sealed: bytes
    players: dict[int, tuple[str, int]]
    status: str = "seeding"
    records: dict[int, dict[str, Any]] = field(default_factory=dict)  # i -> record (sealed when loaded)
    seeds: dict[int, list[Any]] = field(default_factory=dict)  # seat -> [commit, psig, seed, psig]
    arrived: dict[tuple[str, int], int] = field(default_factory=dict)  # (kind, seat) -> the latest ack's arrival
    transcript: dict[str, Any] | None = None  # as PostgreSQL's jsonb holds it: parsed
    transcript_text: bytes | None = None  # the text the table published (io.FinishOp)
    settlements: int = 0
    void_reason: str | None = None  # io.QuarantineOp's: a reload voids the hand for it (D33)


@dataclass
class Table:
    facts: TableFacts
    away: dict[str, int] = field(default_factory=dict)
    stand_after: set[int] = field(default_factory=set)
    epoch: int = 1


class SimStore:
    def __init__(self, keys: ServerKeys, rng: random.Random) -> None:
        self.keys = keys
        self.rng = rng
        self.tables: dict[str, Table] = {}
        self.player_keys: dict[str, bytes] = {}
        self.available: dict[str, int] = {}
        self.held: dict[str, int] = {}
        self.house = 0
        self.total = 0
        self.hands: dict[int, Hand] = {}
        self.by_table: dict[str, list[Hand]] = {}  # a table's hands in the order they began
        self.ended: list[int] = []  # hand ids in the order they ended
        self.rngs: dict[str, random.Random] = {}  # per table: its server seeds
        self.log_reads = 0  # io.LogOp answered
        #: hand id -> the indices of stored records whose sealed copy no longer opens (a
        #: record that does not replay, D33: tests/sim/dealfaults.py injects it)
        self.corrupt: dict[int, set[int]] = {}

    # -- setup ---------------------------------------------------------------------
    def add_player(self, player_id: str, key: bytes, balance: int) -> None:
        self.player_keys[player_id] = key
        self.available[player_id] = balance
        self.held[player_id] = 0
        self.total += balance

    def add_table(self, table_id: str, rules: TableRules, max_away: int = 3) -> None:
        self.tables[table_id] = Table(TableFacts(rules=rules, max_away=max_away, head="0" * 64))
        self.by_table[table_id] = []

    # -- the ledger ------------------------------------------------------------------
    def check_ledger(self) -> str | None:
        """Zero-sum and never negative; None when it holds."""
        for p in self.available:
            if self.available[p] < 0 or self.held[p] < 0:
                return f"player {p} has a negative balance ({self.available[p]} available, {self.held[p]} held)"
        got = sum(self.available.values()) + sum(self.held.values()) + self.house
        if got != self.total:
            return f"the ledger does not sum: {got} against {self.total}"
        return None

    # -- loads -------------------------------------------------------------------------
    def load(self, table_id: str, ended_of: int | None) -> io.Loaded:
        t = self.tables[table_id]
        f = t.facts
        facts = TableFacts(f.rules, f.max_away, dict(f.seats), f.head, f.dealer, f.next_hand_no, f.status)
        stored = None
        h = next((h for h in reversed(self.by_table[table_id]) if h.status in ("seeding", "playing")), None)
        if h is not None:
            stored = handstore.StoredHand(
                h.hand_id, h.hand_no, h.status, h.nonce, h.sealed, None, dict(h.players), void_reason=h.void_reason
            )
            for s, (c, cp, sd, rp) in h.seeds.items():
                if cp is not None:
                    stored.commits[s] = (c, cp)
                if sd is not None and rp is not None:
                    stored.seeds[s] = (sd, rp)
            for i, r in sorted(h.records.items()):  # sealed as PostgreSQL holds them (service.handstore)
                sr = handstore.seal(self.keys, table_id, h.hand_no, r)
                sealed = sr.sealed if i not in self.corrupt.get(h.hand_id, ()) else bytes(len(sr.sealed))
                stored.records.append((i, sr.public, sealed, sr.h))
        ended = None
        if ended_of is not None and (stored is None or stored.hand_id != ended_of):
            old = self.hands.get(ended_of)
            if old is not None and old.status in ("ended", "void"):
                ended = io.HandEnd.of(old.transcript)
        latest = self.by_table[table_id][-1] if self.by_table[table_id] else None
        return io.Loaded(facts, stored, ended, 0 if latest is None else self.last_t(latest))

    @staticmethod
    def last_t(latest: Hand) -> int:
        """The newest time the table signed in its latest hand: its newest record's
        ``t``, or a stored commitment's or seed's ``arrived`` when later
        (service.tablestore.last_record_t)."""
        newest = int(latest.records[max(latest.records)]["t"]) if latest.records else 0
        return max(newest, *latest.arrived.values()) if latest.arrived else newest

    # -- ops ------------------------------------------------------------------------------
    def run(self, table_id: str, epoch: int, op: io.Op) -> Any:
        t = self.tables[table_id]
        if isinstance(op, io.LogOp):  # a read: no lease asked (service.tablestore.read_log)
            self.log_reads += 1
            h = self.hands[op.hand_id]
            # each record's canonical JSON, as its sealed copy opens (service.tablestore.read_log)
            return [fastjson.canonical(h.records[i]) for i in range(op.start, op.stop) if i in h.records]
        if t.epoch != epoch:
            raise Fenced(f"table {table_id}: epoch {epoch} is not the lease's {t.epoch}")
        f = t.facts
        if isinstance(op, io.RecordsOp):
            self._records(op.hand_id, op.records)
            if op.status is not None:
                self.hands[op.hand_id].status = op.status
        elif isinstance(op, io.SeedOp):
            row = self.hands[op.hand_id].seeds.setdefault(op.seat, [None, None, None, None])
            if op.kind == "commit":
                if row[0] is not None and row[0] != op.value:
                    raise handstore.StoreConflict("another commitment is stored")
                row[0], row[1] = op.value, op.psig
            else:
                if row[0] is None or (row[2] is not None and row[2] != op.value):
                    raise handstore.StoreConflict("no commitment, or another seed")
                row[2], row[3] = op.value, op.psig
            key = (op.kind, op.seat)
            h = self.hands[op.hand_id]
            h.arrived[key] = max(h.arrived.get(key, 0), op.arrived)
        elif isinstance(op, io.SitOp):
            if self.available[op.player_id] < op.need:
                raise ClientError("insufficient_balance", "not enough", "D20")
            if op.seat in f.seats:
                raise ClientError("seat_taken", f"seat {op.seat} is taken")
            f.seats[op.seat] = op.player_id
            t.away[op.player_id] = 0
        elif isinstance(op, io.UnseatOp):
            if op.records and op.hand_id is not None:
                self._records(op.hand_id, op.records)
            f.seats = {s: p for s, p in f.seats.items() if p != op.player_id}
        elif isinstance(op, io.StandLaterOp):
            t.stand_after.add(op.seat)
        elif isinstance(op, io.StandAwayOp):
            f.seats = {s: p for s, p in f.seats.items() if p not in op.players}
        elif isinstance(op, io.ProbeOp):
            pass  # nothing to write: the store answers
        elif isinstance(op, io.StatusOp):
            f.status = op.status
        elif isinstance(op, io.CloseOp):
            f.seats = {}
            f.status = "closed"
        elif isinstance(op, io.StartOp):
            return self._start(table_id, t, op)
        elif isinstance(op, io.FinishOp):
            return self._finish(t, op)
        elif isinstance(op, io.VoidUnreadableOp):
            h = self.hands[op.stored.hand_id]
            if h.status not in ("seeding", "playing"):
                return None
            h.status = "void"
            self._release(h.players.values())
            f = t.facts
            gone = {p for s, p in f.seats.items() if s in t.stand_after}  # as service.tablestore._void_unreadable
            t.stand_after.clear()
            f.seats = {s: p for s, p in f.seats.items() if p not in gone}
            return sorted(gone)
        elif isinstance(op, io.QuarantineOp):
            h = self.hands[op.hand_id]
            h.records = {i: r for i, r in h.records.items() if i < op.keep}
            self.corrupt.pop(op.hand_id, None)  # the records that did not replay are set aside
            if h.status in ("seeding", "playing"):  # and why, in the same write (service.tablestore)
                h.void_reason = op.reason
        return None

    def _records(self, hand_id: int, records: tuple[dict[str, Any], ...]) -> None:
        h = self.hands[hand_id]
        for r in records:
            got = h.records.get(r["i"])
            if got is not None and got["h"] != r["h"]:
                raise handstore.StoreConflict(f"hand {hand_id} already holds another record {r['i']}")
        for r in records:
            h.records.setdefault(r["i"], r)

    def _start(self, table_id: str, t: Table, op: io.StartOp) -> tuple[HandRun, int, list[str]] | io.NotDealt:
        seed = self.rngs[table_id].randbytes(32)
        nonce, sealed = self.keys.seal_seed(seed, table_id, op.hand_no)
        players: dict[int, str] = {}
        for seat, p in op.candidates:
            if self.available[p] >= op.need:
                players[seat] = p
        f = t.facts
        if len(players) < op.min_players:  # no hand: who cannot be dealt in is stood up (D34)
            unable = tuple(p for _, p in op.candidates if p not in players.values())
            stood = tuple(p for p in unable if p in op.stand_unable)
            f.seats = {s: p for s, p in f.seats.items() if p not in stood}
            return io.NotDealt(unable, stood)
        hand_id = int(table_id[1:]) * 1_000_000 + op.hand_no  # the same ids when a table replays alone
        hand, dealer = op.begin(io.Started(hand_id, seed, players, {p: self.player_keys[p] for p in players.values()}))
        for p in players.values():  # the transaction commits from here on
            self.available[p] -= op.need
            self.held[p] += op.need
        h = Hand(hand_id, table_id, op.hand_no, seed, nonce, sealed, {s: (p, op.need) for s, p in players.items()})
        self.hands[hand_id] = h
        self.by_table[table_id].append(h)
        self._records(hand_id, (hand.recorder.records[0],))
        f.next_hand_no = op.hand_no + 1
        f.dealer = dealer
        dealt = set(players.values())
        for p in dealt:
            t.away[p] = 0
        for p in [*op.absent, *(p for _, p in op.candidates if p not in dealt)]:  # sat out: away (D34)
            t.away[p] = t.away.get(p, 0) + 1
        stood = [p for p in f.seats.values() if t.away.get(p, 0) >= op.max_away]
        f.seats = {s: p for s, p in f.seats.items() if p not in stood}
        return hand, dealer, stood

    def _release(self, holds: Any) -> None:
        for p, amount in holds:
            self.held[p] -= amount
            self.available[p] += amount

    def _finish(self, t: Table, op: io.FinishOp) -> list[str] | None:
        h = self.hands[op.hand_id]
        if h.status not in ("seeding", "playing"):
            return None
        h.status = "ended" if op.settlement is not None else "void"
        h.transcript, h.transcript_text = json.loads(op.transcript), op.transcript
        if op.settlement is not None:
            h.settlements += 1
            self.house += op.settlement.commission
            for seat, (p, amount) in op.holds.items():
                self.held[p] -= amount
                self.available[p] += amount + op.settlement.deltas.get(seat, 0)
        else:
            self._release(op.holds.values())
        self.ended.append(h.hand_id)
        f = t.facts
        f.head = op.head
        gone = {p for s, p in f.seats.items() if p in op.stand_up or s in t.stand_after}
        t.stand_after.clear()
        f.seats = {s: p for s, p in f.seats.items() if p not in gone}
        return sorted(gone)
