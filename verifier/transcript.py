"""Signed, hash-chained hand transcripts (rummy-pf/v1) and their verification.

A hand's log is a list of records, each chained to the one before:
``h_k = SHA-256(h_{k-1} ‖ canonical(record_k without "h"))``, starting from the
previous hand's head at the table (32 zero bytes for a table's first hand).  The
records are, in order: the signed header (server commitment), the signed list of
player commitments, the reveals, the deal (or a void), then one record per action.
The transcript adds the server seed, the derived deck, the result and a signature
over all of it.  docs/fairness.md is the byte-exact specification.

:class:`HandRecorder` writes a transcript as a hand is played (the server uses it,
and so does the vector generator); :func:`verify_transcript` runs every check of
FAIRNESS.md in order and stops at the first discrepancy.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from verifier.cards import card_of_id, deck_size
from verifier.errors import RuleError
from verifier.fairness import (
    PROTOCOL,
    canonical,
    deal_deck,
    derive_key,
    player_commit,
    reshuffler,
    rules_id,
    server_commit,
    sha256,
    transcript_input,
)
from verifier.hand import (
    Action,
    Event,
    HandState,
    Phase,
    TableRules,
    action_from_json,
    action_to_json,
    apply,
    deal,
)
from verifier.settle import settle
from verifier.signing import Signer, fingerprint
from verifier.signing import verify as verify_signature

GENESIS: Final = "00" * 32
CHECKS: Final = (
    "format",
    "signature",
    "server_commit",
    "player_seeds",
    "deck",
    "deal",
    "replay",
    "points",
    "penalties",
    "settlement",
    "chain",
)

REVEALED: Final = "revealed"
NO_COMMIT: Final = "no_commit"  # committed nothing in time: takes part with an empty seed (D21)
WITHHELD: Final = "withheld"  # committed but did not reveal: sits out, first drop (FAIRNESS.md)


def chain_link(prev_hex: str, record: Mapping[str, Any]) -> str:
    body = {k: v for k, v in record.items() if k != "h"}
    return sha256(bytes.fromhex(prev_hex) + canonical(body)).hex()


def dealt_seats(header: Mapping[str, Any], reveals: Sequence[Mapping[str, Any]]) -> list[tuple[int, str, bytes]]:
    """(seat, player_id, seed) of the seats the deck is derived from and dealt to:
    every seat but those that withheld their reveal."""
    ids = {int(s["seat"]): str(s["player_id"]) for s in header["seats"]}
    out = []
    for r in reveals:
        if r["status"] != WITHHELD:
            out.append((int(r["seat"]), ids[int(r["seat"])], bytes.fromhex(r["seed"])))
    return sorted(out)


def hand_key(header: Mapping[str, Any], reveals: Sequence[Mapping[str, Any]], server_seed: bytes) -> bytes:
    t = transcript_input(
        str(header["table_id"]), int(header["hand_no"]), str(header["rules_id"]), dealt_seats(header, reveals)
    )
    return derive_key(server_seed, t)


def start_hand(
    header: Mapping[str, Any], reveals: Sequence[Mapping[str, Any]], server_seed: bytes
) -> tuple[bytes, list[int], HandState | None, list[Event]]:
    """Key, deck, initial state and deal events; the state is None for a void hand
    (fewer than two seats dealt in, D29)."""
    rules = TableRules.from_json(header["rules"])
    key = hand_key(header, reveals, server_seed)
    deck = deal_deck(key, deck_size(rules.decks))
    players = [(s, pid) for s, pid, _ in dealt_seats(header, reveals)]
    ids = {int(s["seat"]): str(s["player_id"]) for s in header["seats"]}
    forfeits = [(int(r["seat"]), ids[int(r["seat"])]) for r in reveals if r["status"] == WITHHELD]
    if len(players) < 2:
        return key, deck, None, []
    state, events = deal(rules, players, int(header["dealer"]), deck, forfeits)
    return key, deck, state, events


# --------------------------------------------------------------------------- recording
@dataclass
class HandRecorder:
    """Builds a hand's records and transcript as the hand is played."""

    signer: Signer
    table_id: str
    hand_no: int
    rules: TableRules
    seats: Sequence[tuple[int, str]]
    dealer: int
    server_seed: bytes
    prev_head: str = GENESIS
    records: list[dict[str, Any]] = field(default_factory=list)
    header: dict[str, Any] = field(default_factory=dict)
    reveals: list[dict[str, Any]] = field(default_factory=list)
    key: bytes = b""
    deck: list[int] = field(default_factory=list)
    state: HandState | None = None

    @property
    def head(self) -> str:
        return self.records[-1]["h"] if self.records else self.prev_head

    def _link(self, record: dict[str, Any]) -> dict[str, Any]:
        """The record numbered and chained after the current head (not yet added)."""
        record = dict(record)
        record["i"] = len(self.records)
        record["h"] = chain_link(self.head, record)
        return record

    def _append(self, record: dict[str, Any]) -> dict[str, Any]:
        record = self._link(record)
        self.records.append(record)
        return record

    def commit(self) -> dict[str, Any]:
        """Record 0: the signed header with ``commit_S`` (FAIRNESS.md step 1)."""
        rules = self.rules.to_json()
        self.header = {
            "protocol": PROTOCOL,
            "table_id": self.table_id,
            "hand_no": self.hand_no,
            "rules": rules,
            "rules_id": rules_id(rules),
            "seats": [{"seat": s, "player_id": p} for s, p in sorted(self.seats)],
            "dealer": self.dealer,
            "commit_s": server_commit(self.server_seed).hex(),
            "prev_head": self.prev_head,
            "public_key": self.signer.public_bytes.hex(),
        }
        return self._append({"type": "header", "header": self.header, "sig": self.signer.sign("header", self.header)})

    def commitments(self, commits: Mapping[int, bytes | None]) -> dict[str, Any]:
        """Record 1: every seat's commitment (None: nothing sent in time), signed."""
        body = {
            "table_id": self.table_id,
            "hand_no": self.hand_no,
            "commits": [
                {"seat": s, "commit": None if commits.get(s) is None else commits[s].hex()}  # type: ignore[union-attr]
                for s, _ in sorted(self.seats)
            ],
        }
        return self._append({"type": "commitments", "commitments": body, "sig": self.signer.sign("commitments", body)})

    def reveal(self, seeds: Mapping[int, bytes | None], commits: Mapping[int, bytes | None]) -> dict[str, Any]:
        """Record 2: the reveals.  A seat with no commitment takes part with an empty
        seed; a seat that committed but revealed nothing (or a seed that does not
        match) withholds and sits out (FAIRNESS.md step 3)."""
        reveals = []
        for s, _ in sorted(self.seats):
            c, seed = commits.get(s), seeds.get(s)
            if c is None:
                reveals.append({"seat": s, "seed": "", "status": NO_COMMIT})
            elif seed is not None and player_commit(s, seed) == c:
                reveals.append({"seat": s, "seed": seed.hex(), "status": REVEALED})
            else:
                reveals.append({"seat": s, "seed": "", "status": WITHHELD})
        self.reveals = reveals
        return self._append({"type": "reveals", "reveals": reveals})

    def deal(self) -> tuple[dict[str, Any], list[Event]]:
        """Record 3: the deal from the derived deck, or a void (D29)."""
        self.key, self.deck, self.state, events = start_hand(self.header, self.reveals, self.server_seed)
        if self.state is None:
            return self._append({"type": "void", "reason": "fewer than two seats dealt in (D29)"}), []
        return self._append({"type": "deal", "events": [e.to_json() for e in events]}), events

    def prepare(self, action: Action, t: int | None = None) -> tuple[HandState, dict[str, Any], list[Event]]:
        """The state, chained record and events one action would give, changing
        nothing (raises RuleError if the action is illegal).  The server stores the
        record, then calls :meth:`accept`."""
        assert self.state is not None, "deal first"
        state, events = apply(self.state, action, reshuffler(self.key))
        record: dict[str, Any] = {
            "type": "action",
            "action": action_to_json(action),
            "events": [e.to_json() for e in events],
        }
        if t is not None:
            record["t"] = t
        return state, self._link(record), events

    def accept(self, state: HandState, record: dict[str, Any]) -> None:
        if record["i"] != len(self.records) or chain_link(self.head, record) != record["h"]:
            raise RuntimeError("the record does not follow the current head")
        self.records.append(record)
        self.state = state

    def act(self, action: Action, t: int | None = None) -> tuple[dict[str, Any], list[Event]]:
        """Apply one action (raises RuleError, recording nothing, if it is illegal)."""
        state, record, events = self.prepare(action, t)
        self.accept(state, record)
        return record, events

    @property
    def ended(self) -> bool:
        return self.state is None or self.state.phase is Phase.ENDED

    def transcript(self) -> dict[str, Any]:
        """The signed transcript; reveals the server seed (FAIRNESS.md step 6)."""
        result = None
        if self.state is not None and self.state.result is not None:
            r = self.state.result
            result = {
                "winner": r.winner,
                "reason": r.reason,
                "points": {str(s): p for s, p in sorted(r.settlement.points.items())},
                "settlement": r.settlement.to_json(),
            }
        decks = self.rules.decks
        body: dict[str, Any] = {
            "protocol": PROTOCOL,
            "table_id": self.table_id,
            "hand_no": self.hand_no,
            "log": self.records,
            "head": self.head,
            "server_seed": self.server_seed.hex(),
            "deck": list(self.deck),
            "deck_faces": [str(card_of_id(c, decks)) for c in self.deck],
            "result": result,
        }
        body["signature"] = self.signer.sign("transcript", _unsigned(body))
        return body


def _unsigned(t: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in t.items() if k != "signature"}


# --------------------------------------------------------------------------- verifying
@dataclass
class Failure:
    check: str
    message: str
    record: int | None = None
    expected: Any = None
    found: Any = None

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "message": self.message,
            "record": self.record,
            "expected": self.expected,
            "found": self.found,
        }


@dataclass
class Report:
    ok: bool
    failure: Failure | None
    summary: dict[str, Any]
    checks_passed: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "failure": None if self.failure is None else self.failure.to_json(),
            "checks_passed": self.checks_passed,
            "summary": self.summary,
        }


class _Fail(Exception):
    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


def _later_fields(ev: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(check, field) for each field of an event that a later check than "replay"
    judges: replay masks them, and that check compares them."""
    kind = ev.get("kind")
    data = ev.get("data")
    if kind in ("drop", "leave", "forfeit"):
        return [("penalties", "points")]
    if kind == "declare" and isinstance(data, dict) and data.get("valid") is False:
        return [("penalties", "points")]
    if kind == "end":
        return [("points", "counted"), ("settlement", "settlement")]
    return []


def _mask(ev: Mapping[str, Any]) -> dict[str, Any]:
    e = copy.deepcopy(dict(ev))
    data = e.get("data")
    if isinstance(data, dict):
        for _, f in _later_fields(ev):
            data.pop(f, None)
    return e


def verify_transcript(t: Any, pinned_key: bytes | None = None) -> Report:
    """Run every check in FAIRNESS.md order; stop at the first discrepancy."""
    passed: list[str] = []
    summary: dict[str, Any] = {}
    try:
        _verify(t, pinned_key, passed, summary)
    except _Fail as f:
        return Report(False, f.failure, summary, passed)
    return Report(True, None, summary, passed)


def _need(
    cond: bool, check: str, message: str, record: int | None = None, expected: Any = None, found: Any = None
) -> None:
    if not cond:
        raise _Fail(Failure(check, message, record, expected, found))


def _verify(t: Any, pinned: bytes | None, passed: list[str], summary: dict[str, Any]) -> None:
    # -- format ---------------------------------------------------------------------
    fmt = "format"
    _need(isinstance(t, dict), fmt, "a transcript is a JSON object")
    _need(t.get("protocol") == PROTOCOL, fmt, "unknown protocol", expected=PROTOCOL, found=t.get("protocol"))
    log = t.get("log")
    _need(isinstance(log, list) and len(log) >= 4, fmt, "the log needs header, commitments, reveals and deal")
    kinds = [r.get("type") if isinstance(r, dict) else None for r in log]
    _need(
        kinds[:3] == ["header", "commitments", "reveals"],
        fmt,
        "the log must open with header, commitments, reveals",
        found=kinds[:3],
    )
    _need(
        kinds[3] in ("deal", "void") and all(k == "action" for k in kinds[4:]),
        fmt,
        "after the reveals come the deal (or a void) and then actions only",
        found=kinds[3:],
    )
    header = log[0].get("header")
    _need(isinstance(header, dict), fmt, "the header record holds a header object", record=0)
    for name in ("table_id", "hand_no", "rules", "rules_id", "seats", "dealer", "commit_s", "prev_head", "public_key"):
        _need(name in header, fmt, f"the header lacks {name!r}", record=0)
    for name in ("server_seed", "deck", "result", "signature", "head"):
        _need(name in t, fmt, f"the transcript lacks {name!r}")
    _need(
        header.get("protocol") == PROTOCOL,
        fmt,
        "the header names another protocol",
        0,
        PROTOCOL,
        header.get("protocol"),
    )
    ident = [header.get("table_id"), header.get("hand_no")]
    _need(
        [t.get("table_id"), t.get("hand_no")] == ident,
        fmt,
        "the transcript and its header name different hands",
        None,
        ident,
        [t.get("table_id"), t.get("hand_no")],
    )
    body = log[1].get("commitments")
    _need(
        isinstance(body, dict) and [body.get("table_id"), body.get("hand_no")] == ident,
        fmt,
        "the commitments name another hand",
        1,
        ident,
        None if not isinstance(body, dict) else [body.get("table_id"), body.get("hand_no")],
    )
    _need(
        header.get("rules_id") == rules_id(header.get("rules") or {}),
        fmt,
        "the header's rules_id is not the hash of its rules",
        0,
        rules_id(header.get("rules") or {}),
        header.get("rules_id"),
    )
    try:
        public = bytes.fromhex(str(header["public_key"]))
        server_seed = bytes.fromhex(str(t["server_seed"]))
        rules = TableRules.from_json(header["rules"])
    except (ValueError, TypeError, RuleError) as e:
        raise _Fail(Failure(fmt, f"unreadable field: {e}", 0)) from None
    summary.update(
        {
            "table_id": header["table_id"],
            "hand_no": header["hand_no"],
            "seats": {str(s["seat"]): s["player_id"] for s in header["seats"]},
            "key_fingerprint": fingerprint(public),
            "key_pinned": pinned is not None,
        }
    )
    passed.append(fmt)

    # -- signature ------------------------------------------------------------------
    sig = "signature"
    if pinned is not None:
        _need(
            pinned == public,
            sig,
            "the transcript is signed by another key than the pinned one",
            expected=fingerprint(pinned),
            found=fingerprint(public),
        )
    _need(
        verify_signature(public, "transcript", _unsigned(t), str(t["signature"])),
        sig,
        "the transcript signature does not verify",
    )
    _need(
        verify_signature(public, "header", header, str(log[0].get("sig", ""))),
        sig,
        "the header signature does not verify",
        record=0,
    )
    _need(
        verify_signature(public, "commitments", log[1].get("commitments"), str(log[1].get("sig", ""))),
        sig,
        "the commitments signature does not verify",
        record=1,
    )
    passed.append(sig)

    # -- server commitment ------------------------------------------------------------
    _need(
        server_commit(server_seed).hex() == header["commit_s"],
        "server_commit",
        "SHA-256(server_seed) is not the committed commit_S",
        record=0,
        expected=header["commit_s"],
        found=server_commit(server_seed).hex(),
    )
    passed.append("server_commit")

    # -- player seeds ------------------------------------------------------------------
    ps = "player_seeds"
    seats = sorted(int(s["seat"]) for s in header["seats"])
    commits = {int(c["seat"]): c["commit"] for c in log[1]["commitments"]["commits"]}
    reveals = log[2]["reveals"]
    _need(sorted(commits) == seats, ps, "the commitments list the header's seats", 1, seats, sorted(commits))
    _need(sorted(int(r["seat"]) for r in reveals) == seats, ps, "the reveals list the header's seats", 2)
    for r in reveals:
        s, status, seed = int(r["seat"]), r["status"], str(r["seed"])
        c = commits[s]
        if status == REVEALED:
            _need(c is not None, ps, f"seat {s} revealed without a commitment", 2)
            found = player_commit(s, bytes.fromhex(seed)).hex()
            _need(found == c, ps, f"seat {s}'s seed does not match its commitment", 2, c, found)
        elif status == NO_COMMIT:
            _need(c is None and seed == "", ps, f"seat {s} is marked no_commit but has a commitment or seed", 2)
        elif status == WITHHELD:
            _need(c is not None and seed == "", ps, f"seat {s} is marked withheld without a commitment", 2)
        else:
            raise _Fail(Failure(ps, f"unknown reveal status {status!r}", 2))
    passed.append(ps)

    # -- deck ------------------------------------------------------------------------------
    key, deck, state, deal_events = start_hand(header, reveals, server_seed)
    _need(
        list(t["deck"]) == deck,
        "deck",
        "the deck is not the one derived from the seeds",
        None,
        deck[:13],
        list(t["deck"])[:13],
    )
    faces = [str(card_of_id(c, rules.decks)) for c in deck]
    _need(
        t.get("deck_faces") == faces,
        "deck",
        "the deck's faces do not match its card ids",
        None,
        faces[:13],
        (t.get("deck_faces") or [])[:13],
    )
    passed.append("deck")

    # -- deal --------------------------------------------------------------------------------
    if state is None:
        _need(
            log[3]["type"] == "void" and len(log) == 4 and t["result"] is None,
            "deal",
            "fewer than two seats were dealt in: the hand must be void (D29)",
            3,
        )
        summary["void"] = True
        passed.extend(["deal", "replay", "points", "penalties", "settlement"])
        _check_chain(t, header, log, passed)
        return
    _need(log[3]["type"] == "deal", "deal", "two or more seats were dealt in, but the hand is marked void", 3)
    expected = [_mask(e.to_json()) for e in deal_events]
    _compare_events("deal", 3, expected, [_mask(e) for e in log[3].get("events", [])])
    passed.append("deal")

    # -- replay ------------------------------------------------------------------------------
    reshuffle = reshuffler(key)
    produced: list[list[dict[str, Any]]] = [[e.to_json() for e in deal_events]]
    for rec in log[4:]:
        i = int(rec.get("i", -1))
        _need(state.phase is not Phase.ENDED, "replay", "an action after the hand ended", i)
        try:
            action = action_from_json(rec["action"])
            state, events = apply(state, action, reshuffle)
        except RuleError as e:
            raise _Fail(Failure("replay", f"illegal action: {e}", i, None, rec.get("action"))) from None
        expected = [_mask(e.to_json()) for e in events]
        _compare_events("replay", i, expected, [_mask(e) for e in rec.get("events", [])])
        produced.append([e.to_json() for e in events])
    _need(
        state.phase is Phase.ENDED and state.result is not None,
        "replay",
        "the log stops before the hand ends",
        len(log) - 1,
    )
    passed.append("replay")

    # -- points, penalties, settlement -------------------------------------------------------
    logged = [log[3].get("events", [])] + [rec.get("events", []) for rec in log[4:]]
    for check in ("points", "penalties"):
        for n, (exp_list, got_list) in enumerate(zip(produced, logged, strict=True)):
            for exp, got in zip(exp_list, got_list, strict=True):
                _check_later(check, n + 3, exp, got)
    result = t["result"]
    _need(isinstance(result, dict), "points", "the transcript has no result")
    final = state.result
    assert final is not None
    pts = {str(s): p for s, p in sorted(final.settlement.points.items())}
    penalised = {str(s.seat) for s in state.seats if s.status.value in ("dropped", "left", "wrong_declare", "forfeit")}
    for seat_key, p in pts.items():
        check = "penalties" if seat_key in penalised else "points"
        _need(
            result.get("points", {}).get(seat_key) == p,
            check,
            f"seat {seat_key}'s points in the result",
            None,
            p,
            result.get("points", {}).get(seat_key),
        )
    _need(
        result.get("winner") == final.winner and result.get("reason") == final.reason,
        "points",
        "the result's winner",
        None,
        [final.winner, final.reason],
        [result.get("winner"), result.get("reason")],
    )
    passed.extend(["points", "penalties"])
    recomputed = settle(final.settlement.points, final.winner, rules.point_value, rules.commission_bps).to_json()
    _need(
        result.get("settlement") == recomputed,
        "settlement",
        "the result's settlement arithmetic (D19)",
        None,
        recomputed,
        result.get("settlement"),
    )
    end_event = logged[-1][-1]
    _need(
        end_event.get("data", {}).get("settlement") == recomputed,
        "settlement",
        "the end event's settlement (D19)",
        len(log) - 1,
        recomputed,
        end_event.get("data", {}).get("settlement"),
    )
    passed.append("settlement")
    summary.update(
        {
            "winner": final.winner,
            "reason": final.reason,
            "points": pts,
            "deltas": recomputed["deltas"],
            "commission": recomputed["commission"],
            "pot": recomputed["pot"],
        }
    )
    _check_chain(t, header, log, passed)


def _compare_events(check: str, record: int, expected: list[dict[str, Any]], found: list[dict[str, Any]]) -> None:
    for n, (exp, got) in enumerate(zip(expected, found, strict=False)):
        if canonical(exp) != canonical(got):
            raise _Fail(Failure(check, f"event {n} ({exp.get('kind')}) differs", record, exp, got))
    _need(len(expected) == len(found), check, "a different number of events", record, len(expected), len(found))


def _check_later(check: str, record: int, exp: Mapping[str, Any], got: Mapping[str, Any]) -> None:
    for c, f in _later_fields(exp):
        if c == check:
            e, g = exp.get("data", {}).get(f), got.get("data", {}).get(f)
            _need(canonical(e) == canonical(g), check, f"{exp.get('kind')} event's {f}", record, e, g)


def _check_chain(
    t: Mapping[str, Any], header: Mapping[str, Any], log: Sequence[Mapping[str, Any]], passed: list[str]
) -> None:
    h = str(header["prev_head"])
    for n, rec in enumerate(log):
        _need(rec.get("i") == n, "chain", "records are numbered in order", n, n, rec.get("i"))
        h = chain_link(h, rec)
        _need(rec.get("h") == h, "chain", "the hash chain breaks", n, h, rec.get("h"))
    _need(t["head"] == h, "chain", "the head is not the last link", len(log) - 1, h, t["head"])
    passed.append("chain")
