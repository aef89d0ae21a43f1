"""The checks of docs/fairness.md §14, each its own function, run in order from one
table: :data:`CHECKS_V2` for rummy-pf/v2, :data:`CHECKS_V1` (Appendix C) for v1.

A check returns None when it passed, a :class:`Skip` when it cannot apply (a void
hand, §14), or raises :class:`Fail`; the runner (:func:`verifier.transcript.verify_transcript`)
names the failure after the table entry that raised it, so the check behind any
failure name is the function of that name here.  ``format`` runs first and types
every field (:mod:`verifier.schema`); no check reads a field before it.

Fields of events that a later check judges (penalty points, a valid declare's
groups, the end event's ``counted`` and ``settlement``) are left out of the replay's
comparison by one table, :func:`later_fields`, that both sides use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

from verifier.cards import card_of_id, card_value
from verifier.chain import (
    GENESIS,
    NO_COMMIT,
    REVEALED,
    WITHHELD,
    commit_move,
    link_of,
    reveal_move,
    start_hand,
)
from verifier.checkbase import (
    KEY_URL_HINT,
    Ctx,
    Fail,
    Skip,
    canon,
    fail,
    public_key,
    same,
    signature_ok,
    text_signature_ok,
)
from verifier.ed25519 import key_problem
from verifier.encoding import body_text, move_body_texts, without_member
from verifier.errors import RuleError
from verifier.evidence import check_evidence, check_evidence_v1
from verifier.fairness import PROTOCOL_V1, PROTOCOL_V2, PROTOCOLS, player_commit, reshuffler, server_commit
from verifier.groups import GroupKind, classify
from verifier.hand import Phase, Status, action_from_json, apply
from verifier.schema import SchemaError, check_transcript, render_path
from verifier.signing import fingerprint
from verifier.strictjson import json_data_problem

__all__ = ["CHECKS_V1", "CHECKS_V2", "CHECK_NAMES", "Ctx", "Fail", "Skip", "canon", "fail", "same", "table_for"]


def later_fields(ev: Mapping[str, Any]) -> Mapping[str, str]:
    """Field → check, for each field of an expected event that a check other than
    ``replay``'s event comparison judges (§14 check 8)."""
    kind = ev["kind"]
    data = ev["data"]
    if kind in ("drop", "leave", "forfeit"):
        return {"points": "penalties"}
    if kind == "declare":
        return {"points": "penalties"} if data.get("valid") is False else {"groups": "replay/B.3"}
    if kind == "end":
        return {"counted": "points", "settlement": "settlement"}
    return _NONE_MASKED


_NONE_MASKED: Final[Mapping[str, str]] = MappingProxyType({})  # most events: nothing masked, nothing allocated


def _events_differ(record: int, expected: list[dict[str, Any]], found: list[Any]) -> None:
    for n, (exp, got) in enumerate(zip(expected, found, strict=False)):
        masked = later_fields(exp)
        if (
            type(got) is not dict
            or not same(exp["kind"], got.get("kind"))
            or not same(exp["seat"], got.get("seat"))
            or not same(exp["private"], got.get("private"))
            or not isinstance(got.get("data"), dict)
            or not _same_but(exp["data"], got["data"], masked)
        ):
            shown = {**exp, "data": {k: v for k, v in exp["data"].items() if k not in masked}}
            fail(f"event {n} ({exp['kind']}) is not what the rules make", record, shown, got)
    if len(expected) != len(found):
        fail(
            "the record holds a different number of events than the rules make",
            record,
            [e["kind"] for e in expected],
            [e.get("kind") if isinstance(e, dict) else e for e in found],
        )


def _same_but(exp: Mapping[str, Any], got: Mapping[str, Any], masked: Mapping[str, str]) -> bool:
    if not masked:
        return (
            same(exp, got) if type(got) is dict else exp.keys() == got.keys() and all(same(exp[k], got[k]) for k in exp)
        )
    keys = {k for k in exp if k not in masked}
    if {k for k in got if k not in masked} != keys:
        return False
    return all(same(exp[k], got[k]) for k in keys)


def _cards(ids: Any) -> list[int] | None:
    """``ids`` as a list of card ids, else None."""
    if type(ids) is not list or any(type(c) is not int for c in ids):
        return None
    return ids


def _groups(groups: Any) -> list[list[int]] | None:
    if type(groups) is not list or any(type(g) is not list or any(type(c) is not int for c in g) for g in groups):
        return None
    return groups


def judge_groups(groups: list[list[int]], decks: int, wild: int | None) -> tuple[list[GroupKind], str | None]:
    """The kind of each group (Appendix B.1), or why one is not a group."""
    kinds: list[GroupKind] = []
    for g in groups:
        kind = classify([card_of_id(c, decks) for c in g], wild)
        if kind is None:
            return kinds, f"{[str(card_of_id(c, decks)) for c in g]} is not a valid group (Appendix B.1)"
        kinds.append(kind)
    return kinds, None


def _two_sequences_one_pure(kinds: Sequence[GroupKind]) -> bool:
    return sum(k.is_sequence for k in kinds) >= 2 and GroupKind.PURE in kinds


# --------------------------------------------------------------------------- 1 format
def check_format(ctx: Ctx) -> None:
    """§13: "The transcript must have exactly the fields of §12 and every record
    exactly the fields of §11 — no field missing, none extra — with these types."
    Also §2 for values handed over in memory: JSON data only (no float, no integer
    beyond 2⁵³ − 1, nesting at most 64); what :func:`verifier.strictjson.parse` read
    is JSON data already (``ctx.parsed``)."""
    t = ctx.t
    if type(t) is not dict:
        fail("a transcript is a JSON object", None, "an object", type(t).__name__)
    if t.get("protocol") not in PROTOCOLS:
        fail("unknown protocol", None, list(PROTOCOLS), t.get("protocol") if type(t.get("protocol")) is str else None)
    if t["protocol"] == PROTOCOL_V1 and not ctx.allow_v1:
        fail(
            f"a {PROTOCOL_V1} transcript is refused unless you ask for it (rummy-verify --allow-v1): it carries no "
            "player signatures, so the server alone vouches for its moves, and a server could re-publish a "
            f"{PROTOCOL_V2} hand as {PROTOCOL_V1} to escape the player checks (a downgrade)",
            None,
            PROTOCOL_V2,
            PROTOCOL_V1,
        )
    problem = None if ctx.parsed else json_data_problem(t)
    if problem:
        fail(f"not JSON data (§2): {problem}")
    try:
        shape = check_transcript(t, ctx.v2)
    except SchemaError as e:
        fail(f"{render_path(e.path)}: {e.message}", e.record, e.expected, e.found)
    ctx.shape = shape
    header = shape.header
    ctx.public = bytes.fromhex(header["public_key"])
    ctx.summary.update(
        {
            "protocol": t["protocol"],
            "table_id": t["table_id"],
            "hand_no": t["hand_no"],
            "seats": {str(s): shape.player_ids[s] for s in shape.seats},
            "key_fingerprint": fingerprint(ctx.public),
            "key_pinned": ctx.pinned is not None,
        }
    )
    if shape.void is not None:
        ctx.summary["void"] = shape.void


# --------------------------------------------------------------------------- 2 signature
def check_signature(ctx: Ctx) -> None:
    """§14.2: "the pinned key (if given) is the header's public_key; the transcript,
    header and commitments signatures verify under it." """
    s, t = ctx.s, ctx.t
    if ctx.pinned is not None and ctx.pinned != ctx.public:
        if ctx.pinned.hex() == fingerprint(ctx.public):
            fail(
                "the pinned value is the fingerprint of this transcript's key, not the key: a fingerprint is not a "
                f"key; pin the key itself ({KEY_URL_HINT})",
                None,
                "the server's public key",
                ctx.pinned.hex(),
            )
        fail(
            "the transcript is signed by another key than the pinned one (if you pinned a fingerprint: a "
            f"fingerprint is not a key; {KEY_URL_HINT})",
            None,
            ctx.pinned.hex(),
            ctx.public.hex(),
        )
    if ctx.pinned is not None and key_problem(ctx.pinned) is not None:
        fail(
            f"the pinned key is not a strict Ed25519 key (§9): {key_problem(ctx.pinned)}", None, None, ctx.pinned.hex()
        )
    key = public_key(ctx.public, "the header's public_key", 0)
    body = body_text(t, ctx.record_texts())  # canonical(t without "signature")
    if not text_signature_ok(key, ctx.protocol, "transcript", body, t["signature"]):
        fail("the transcript signature does not verify")
    if not signature_ok(key, ctx.protocol, "header", s.header, s.log[0]["sig"]):
        fail("the header signature does not verify", 0)
    if s.commitments is not None and not signature_ok(key, ctx.protocol, "commitments", s.commitments, s.log[1]["sig"]):
        fail("the commitments signature does not verify", 1)


# --------------------------------------------------------------------------- 3 player signatures
def check_player_signatures(ctx: Ctx) -> Skip | None:
    """§14.3: "every commit in record 1 and every revealed seed in record 2 carries a
    valid move signature (§9) by its seat's player_key; every action but timeout
    carries one over its prev, and prev is what §9 says; no timeout carries one." """
    s, t = ctx.s, ctx.t
    if s.commitments is None:
        return Skip("the log ends before the commitments (record 1): no player moved")
    keys = {
        e["seat"]: public_key(bytes.fromhex(e["player_key"]), f"seat {e['seat']}'s player_key", 0)
        for e in s.header["seats"]
    }

    body = move_body_texts(t["table_id"], t["hand_no"])  # body(prev, move) = canonical(move_body(…))

    def signed(seat: int, prev: str, move: Mapping[str, Any], sig: str) -> bool:
        return text_signature_ok(keys[seat], PROTOCOL_V2, "move", body(prev, move), sig)

    if s.commitments is not None:
        for c in s.commitments["commits"]:
            if c["commit"] is not None and not signed(
                c["seat"], ctx.h(0), commit_move(c["seat"], bytes.fromhex(c["commit"])), c["psig"]
            ):
                fail(f"seat {c['seat']}'s commitment is not signed by its player key over record 0", 1)
    if s.reveals is not None:
        for r in s.reveals:
            if r["status"] == REVEALED and not signed(
                r["seat"], ctx.h(1), reveal_move(r["seat"], bytes.fromhex(r["seed"])), r["psig"]
            ):
                fail(f"seat {r['seat']}'s seed is not signed by its player key over record 1", 2)
    for n in s.actions:
        rec = s.log[n]
        action, psig = rec["action"], rec["psig"]
        what = f"the {action['kind']} of seat {action['seat']}"
        if action["kind"] == "timeout":
            if psig is not None:
                fail("a timeout is the server's move and carries no player signature", n, None, psig)
            continue
        if psig is None:
            fail(f"{what} carries no player signature", n, "a signature by the seat's player key", None)
        prev = psig["prev"]
        if prev != ctx.h(n - 1):  # a leave too: it is recorded where it was signed (§9)
            fail(f"{what} is signed over another record than the one it follows", n, ctx.h(n - 1), prev)
        if not signed(action["seat"], prev, action, psig["sig"]):
            fail(f"{what} is not signed by seat {action['seat']}'s player key", n)
    return None


# --------------------------------------------------------------------------- 4 server commit
def check_server_commit(ctx: Ctx) -> Skip | None:
    """§14.4: "SHA-256(server_seed) = commit_s (skipped when server_seed is "")." """
    seed = ctx.t["server_seed"]
    if seed == "":
        return Skip("the server seed was not revealed (a void hand whose seed could not be opened, D33)")
    found = server_commit(bytes.fromhex(seed)).hex()
    if found != ctx.s.header["commit_s"]:
        fail("SHA-256(server_seed) is not the committed commit_s", 0, ctx.s.header["commit_s"], found)
    return None


# --------------------------------------------------------------------------- 5 player seeds
def check_player_seeds(ctx: Ctx) -> Skip | None:
    """§14.5: "every revealed seed matches its commitment; no_commit seats have no
    commitment; withheld seats have one (skipped when the log ends before record 2)." """
    s = ctx.s
    if s.reveals is None or s.commitments is None:
        return Skip("the log ends before the reveals (record 2)")
    commits = {c["seat"]: c["commit"] for c in s.commitments["commits"]}
    for r in s.reveals:
        seat, status, c = r["seat"], r["status"], commits[r["seat"]]
        if status == REVEALED:
            if c is None:
                fail(f"seat {seat} revealed a seed without a commitment", 2)
            found = player_commit(seat, bytes.fromhex(r["seed"])).hex()
            if found != c:
                fail(f"seat {seat}'s seed does not match its commitment", 2, c, found)
        elif status == NO_COMMIT and c is not None:
            fail(f"seat {seat} is marked no_commit but has a commitment in record 1", 2, None, c)
        elif status == WITHHELD and c is None:
            fail(f"seat {seat} is marked withheld but committed nothing in record 1", 2, "a commitment", None)
    return None


# --------------------------------------------------------------------------- 6 deck
def check_deck(ctx: Ctx) -> Skip | None:
    """§14.6: "the deck derived from the seeds (§6–8) is the published one (skipped,
    with deck [], when there is no seed or no reveals record)." """
    s, t = ctx.s, ctx.t
    if s.reveals is None or t["server_seed"] == "":
        # §12: "deck is the derived deck when the reveals are recorded, else []" (and []
        # when the seed could not be opened).
        if t["deck"]:
            fail("a deck is published for a hand whose deck cannot be derived (§12)", None, [], len(t["deck"]))
        if s.reveals is None:
            return Skip("the log ends before the reveals (record 2): no deck was derived")
        return Skip("the server seed was not revealed: the deck cannot be derived")
    try:
        ctx.key, ctx.deck, ctx.start, ctx.deal_events = start_hand(s.header, s.reveals, bytes.fromhex(t["server_seed"]))
    except RuleError as e:
        fail(f"the hand cannot be dealt: {e}", 3)
    if not t["deck"]:
        fail("no deck is published, but the reveals are recorded and the seed revealed (§12)", None, len(ctx.deck), [])
    if t["deck"] != ctx.deck:
        n = next(i for i, (a, b) in enumerate(zip(ctx.deck, t["deck"], strict=True)) if a != b)
        fail(
            f"the deck is not the one derived from the seeds (first difference at position {n})",
            None,
            ctx.deck[n],
            t["deck"][n],
        )
    return None


# --------------------------------------------------------------------------- 7 deal
def check_deal(ctx: Ctx) -> Skip | None:
    """§14.7: "record 3 is exactly what dealing that deck gives (Appendix A.2)";
    A.2: "With none [dealt in], there is no deal record: the log ends in a void"
    (v1, Appendix C: a void record 3 when fewer than two seats are dealt in)."""
    s = ctx.s
    if ctx.deck is None:
        return Skip("no deck was derived (see deck)")
    at3 = s.log[3]["type"] if len(s.log) > 3 else None
    if ctx.start is None:
        rule = "no seat" if s.v2 else "fewer than two seats"
        if at3 == "deal":
            fail(f"{rule} was dealt in: the hand is void, with no deal record (D29)", 3, "void", "deal")
        if at3 is None:
            return Skip("the hand was voided before the deal")
        return None
    if at3 != "deal":
        if s.v2:
            return Skip("the hand was voided before the deal")
        fail("two or more seats were dealt in, but the hand is marked void", 3, "deal", at3)
    expected = [e.to_json() for e in ctx.deal_events]
    _events_differ(3, expected, s.log[3]["events"])
    ctx.expected[3] = expected
    return None


# --------------------------------------------------------------------------- 8 replay
def check_replay(ctx: Ctx) -> Skip | None:
    """§14.8: "every action is legal when taken and produces exactly the logged
    events (Appendix A), except the fields the later checks judge … (the valid
    declare's groups judged here, by Appendix B.3, not by equality) … A log that does
    not end in a void must reach the end of the hand; a void log must not run past
    it." """
    s = ctx.s
    if 3 not in ctx.expected or ctx.start is None or ctx.key is None:
        return Skip("nothing was dealt")
    state = ctx.start
    ctx.after[3] = state
    reshuffle = reshuffler(ctx.key)
    decks = s.decks
    for n in s.actions:
        rec = s.log[n]
        if state.phase is Phase.ENDED:
            fail("an action after the hand ended", n, None, rec["action"])
        try:
            action = action_from_json(rec["action"])
            before = state
            state, events = apply(state, action, reshuffle)
        except RuleError as e:
            fail(f"illegal action: {e}", n, None, rec["action"])
        expected = [e.to_json() for e in events]
        _events_differ(n, expected, rec["events"])
        ctx.expected[n] = expected
        ctx.after[n] = state
        for exp, got in zip(expected, rec["events"], strict=True):
            if exp["kind"] == "declare" and exp["data"].get("valid") is True:
                kept = list(before.seat(action.seat).cards)
                kept.remove(exp["private"]["finish"])
                problem = _declare_groups_problem(got["data"].get("groups"), kept, decks, state.wild_rank)
                if problem:
                    fail(f"the valid declare's groups: {problem} (Appendix B.3)", n, None, got["data"].get("groups"))
    if s.void is not None:
        if state.phase is Phase.ENDED:
            fail("the hand had ended before the void record; a void log must not run past the end", len(s.log) - 1)
    elif state.phase is not Phase.ENDED or state.result is None:
        fail("the log stops before the hand ends", len(s.log) - 1)
    ctx.state = state
    return None


def _declare_groups_problem(groups: Any, kept: list[int], decks: int, wild: int | None) -> str | None:
    """Appendix B.3: "A valid declare's groups are correct when they are valid
    groups, together exactly the kept 13 cards, with at least two sequences, at
    least one pure." """
    gs = _groups(groups)
    if gs is None:
        return "not a list of lists of card ids"
    if sorted(c for g in gs for c in g) != sorted(kept):
        return "they are not exactly the 13 cards kept"
    kinds, problem = judge_groups(gs, decks, wild)
    if problem:
        return problem
    if not _two_sequences_one_pure(kinds):
        return "they do not hold two sequences, one of them pure"
    return None


# --------------------------------------------------------------------------- 9 time
def check_time(ctx: Ctx) -> None:
    """§14.9: "t never decreases along the log; if a seat's commit is null, record
    1's t ≥ record 0's t + commit_ms; if a committed seat is withheld, record 2's t ≥
    record 1's t + reveal_ms; every timeout at record i has t_i ≥ the t of the record
    that began that turn (the one holding its turn event) + 1000 · turn_seconds." """
    s = ctx.s
    log, header = s.log, s.header
    for n in range(1, len(log)):
        if log[n]["t"] < log[n - 1]["t"]:
            fail("record times go backwards", n, f">= {log[n - 1]['t']}", log[n]["t"])
    if s.commitments is not None and any(c["commit"] is None for c in s.commitments["commits"]):
        due = log[0]["t"] + header["commit_ms"]
        if log[1]["t"] < due:
            fail("the commit window was closed early while a seat had not committed", 1, f">= {due}", log[1]["t"])
    if s.reveals is not None and any(r["status"] == WITHHELD for r in s.reveals):
        due = log[1]["t"] + header["reveal_ms"]
        if log[2]["t"] < due:
            fail("the reveal window was closed early while a seat had not revealed", 2, f">= {due}", log[2]["t"])
    turn_began: int | None = None
    turn_ms = 1000 * header["rules"]["turn_seconds"]
    for n, rec in enumerate(log):
        if rec["type"] == "action" and rec["action"]["kind"] == "timeout":
            if turn_began is None:
                fail("a timeout before any turn began", n)
            due = log[turn_began]["t"] + turn_ms
            if rec["t"] < due:
                fail(
                    f"the clock moved for seat {rec['action']['seat']} before its turn ran out "
                    f"(turn began at record {turn_began})",
                    n,
                    f">= {due}",
                    rec["t"],
                )
        if rec["type"] in ("deal", "action") and any(e["kind"] == "turn" for e in rec["events"]):
            turn_began = n


# --------------------------------------------------------------------------- 10 points
def check_points(ctx: Ctx) -> Skip | None:
    """§14.10: "every counted entry of the end event is a best arrangement (Appendix
    B.3); every seat still in at the end is counted, at the minimum of D13; the
    result's winner, reason and non-penalty points agree." """
    s, t = ctx.s, ctx.t
    if t["result"] is None or ctx.state is None or ctx.state.result is None:
        return Skip("the hand is void: nobody is counted")
    state = ctx.state
    last = max(ctx.expected)
    end_exp = ctx.expected[last][-1]
    end_got = s.log[last]["events"][-1]
    counted_exp = end_exp["data"]["counted"]
    counted_got = end_got["data"].get("counted")
    if type(counted_got) is not dict or set(counted_got) != set(counted_exp):
        found = sorted(counted_got) if type(counted_got) is dict else counted_got
        fail("every seat still in at the end is counted, and no other", last, sorted(counted_exp), found)
    for seat_key, exp in counted_exp.items():
        cards = list(state.seat(int(seat_key)).cards)
        problem = _counted_problem(counted_got[seat_key], cards, exp["points"], s.decks, state.wild_rank)
        if problem:
            fail(f"seat {seat_key}'s count: {problem} (Appendix B.3)", last, exp, counted_got[seat_key])
    final = state.result
    assert final is not None
    result = t["result"]
    if result["winner"] != final.winner or result["reason"] != final.reason:
        fail("the result's winner", None, [final.winner, final.reason], [result["winner"], result["reason"]])
    for seat in state.seats:
        if seat.status not in PENALISED and result["points"][str(seat.seat)] != final.settlement.points[seat.seat]:
            fail(
                f"seat {seat.seat}'s points in the result",
                None,
                final.settlement.points[seat.seat],
                result["points"][str(seat.seat)],
            )
    return None


PENALISED: Final = (Status.DROPPED, Status.LEFT, Status.WRONG_DECLARE, Status.FORFEIT)


def _counted_problem(entry: Any, cards: list[int], count: int, decks: int, wild: int | None) -> str | None:
    """Appendix B.3: "the groups … are valid groups, groups and loose together are
    exactly the seat's cards, the groups are either ≥ 2 sequences with ≥ 1 pure, or
    one pure sequence, or none, points is the sum of the loose cards' values, and
    points is the count of B.2." """
    if type(entry) is not dict or set(entry) != {"points", "groups", "loose"}:
        return 'an entry is exactly {"points", "groups", "loose"}'
    groups = _groups(entry["groups"])
    loose = _cards(entry["loose"])
    if groups is None or loose is None or type(entry["points"]) is not int:
        return "groups are lists of card ids, loose a list of card ids, points an integer"
    if sorted([c for g in groups for c in g] + loose) != sorted(cards):
        return "groups and loose together are not exactly the seat's cards"
    kinds, problem = judge_groups(groups, decks, wild)
    if problem:
        return problem
    if kinds and not (_two_sequences_one_pure(kinds) or kinds == [GroupKind.PURE]):
        return "the groups are neither two sequences with one pure, nor one pure sequence, nor none"
    loose_value = sum(card_value(card_of_id(c, decks), wild) for c in loose)
    if entry["points"] != loose_value:
        return f"points {entry['points']} are not the loose cards' value {loose_value}"
    if entry["points"] != count:
        return f"points {entry['points']} are not the hand's count {count} (D13)"
    return None


# --------------------------------------------------------------------------- 11 penalties
def check_penalties(ctx: Ctx) -> Skip | None:
    """§14.11: "drops (20/40), departures (40), wrong declares (80) and withheld
    reveals (20), in the events and in the result." """
    s, t = ctx.s, ctx.t
    if not ctx.expected:
        return Skip("nothing was dealt: nobody was charged")
    for n, expected in sorted(ctx.expected.items()):
        for exp, got in zip(expected, s.log[n]["events"], strict=True):
            if later_fields(exp).get("points") == "penalties":
                want, found = exp["data"]["points"], got["data"].get("points")
                if not same(want, found):
                    fail(f"the {exp['kind']} event's points", n, want, found)
    if t["result"] is not None and ctx.state is not None and ctx.state.result is not None:
        points = ctx.state.result.settlement.points
        for seat in ctx.state.seats:
            found = t["result"]["points"][str(seat.seat)]
            if seat.status in PENALISED and found != points[seat.seat]:
                fail(f"seat {seat.seat}'s penalty in the result ({seat.status.value})", None, points[seat.seat], found)
    return None


# --------------------------------------------------------------------------- 12 settlement
def check_settlement(ctx: Ctx) -> Skip | None:
    """§14.12: "the arithmetic of D19, in the result and in the end event." """
    s, t = ctx.s, ctx.t
    if t["result"] is None or ctx.state is None or ctx.state.result is None:
        return Skip("the hand is void: nobody pays")
    final = ctx.state.result
    recomputed = final.settlement.to_json()
    if not same(t["result"]["settlement"], recomputed):
        fail("the result's settlement arithmetic (D19)", None, recomputed, t["result"]["settlement"])
    last = max(ctx.expected)
    got = s.log[last]["events"][-1]["data"].get("settlement")
    if not same(got, recomputed):
        fail("the end event's settlement (D19)", last, recomputed, got)
    ctx.summary.update(
        {
            "winner": final.winner,
            "reason": final.reason,
            "points": {str(k): v for k, v in sorted(final.settlement.points.items())},
            "deltas": recomputed["deltas"],
            "commission": final.settlement.commission,
            "pot": final.settlement.pot,
        }
    )
    return None


# --------------------------------------------------------------------------- 13 chain
def check_chain(ctx: Ctx) -> None:
    """§14.13: "hand 1's prev_head is 64 zeros (§11) and, in v2, its dealer is the
    lowest seat of its header (RULES.md D3); every "h"; and the head"; §11:
    "h = SHA-256(h_prev ‖ canonical(record without "h"))", record 0's h_prev being the
    header's prev_head."""
    s = ctx.s
    h = str(s.header["prev_head"])
    if ctx.t["hand_no"] == 1 and h != GENESIS:
        fail("hand 1 of a table chains from 64 zeros: no hand came before it (§11)", 0, GENESIS, h)
    if ctx.t["hand_no"] == 1 and ctx.t["protocol"] != PROTOCOL_V1:
        lowest = min(int(e["seat"]) for e in s.header["seats"])
        if s.header["dealer"] != lowest:
            fail(
                "hand 1 of a table is dealt by its lowest seat: nothing before it moves the button (RULES.md D3)",
                0,
                lowest,
                s.header["dealer"],
            )
    texts = ctx.record_texts()
    for n, rec in enumerate(s.log):
        h = link_of(h, without_member(texts[n], rec, "h").encode("utf-8"))  # chain_link(h, rec)
        if rec["h"] != h:
            fail("the hash chain breaks", n, h, rec["h"])
    if ctx.t["head"] != h:
        fail("the head is not the last link", len(s.log) - 1, h, ctx.t["head"])


# --------------------------------------------------------------------------- the tables
Check = Callable[[Ctx], "Skip | None"]

CHECKS_V2: Final[tuple[tuple[str, Check], ...]] = (
    ("format", check_format),
    ("signature", check_signature),
    ("player_signatures", check_player_signatures),
    ("server_commit", check_server_commit),
    ("player_seeds", check_player_seeds),
    ("deck", check_deck),
    ("deal", check_deal),
    ("replay", check_replay),
    ("time", check_time),
    ("points", check_points),
    ("penalties", check_penalties),
    ("settlement", check_settlement),
    ("chain", check_chain),
    ("evidence", check_evidence),
)
#: rummy-pf/v1 (Appendix C): "no player_signatures or time checks; evidence given for a
#: v1 transcript always fails".
CHECKS_V1: Final[tuple[tuple[str, Check], ...]] = tuple(
    (name, check_evidence_v1 if name == "evidence" else fn)
    for name, fn in CHECKS_V2
    if name not in ("player_signatures", "time")
)
CHECK_NAMES: Final = tuple(name for name, _ in CHECKS_V2)


def table_for(t: Any) -> tuple[tuple[str, Check], ...]:
    """Dispatch on ``protocol``: v1 transcripts run the v1 table; anything else runs
    v2's, whose ``format`` rejects what is not a v2 transcript."""
    if isinstance(t, dict) and t.get("protocol") == PROTOCOL_V1:
        return CHECKS_V1
    return CHECKS_V2


# --------------------------------------------------------------------------- warnings
def warnings_of(ctx: Ctx) -> list[dict[str, str]]:
    """§14 "Warnings": no_player_seed, withheld, void, seed_not_revealed, key_claim, v1_server_only."""
    if ctx.shape is None:
        return []
    s = ctx.s
    out = []
    if not s.v2:
        out.append(
            {
                "code": "v1_server_only",
                "message": f"a {PROTOCOL_V1} transcript, accepted because you asked (--allow-v1): it carries no player "
                "signatures, so the server alone vouches for every commitment, seed and move in it",
            }
        )
    if s.reveals is not None:
        dealt = [r for r in s.reveals if r["status"] != WITHHELD]
        if dealt and all(r["status"] == NO_COMMIT for r in dealt):
            out.append(
                {
                    "code": "no_player_seed",
                    "message": "no dealt seat's seed counted (every dealt seat sent no commitment): "
                    "the server alone chose the deck",
                }
            )
        withheld = [r["seat"] for r in s.reveals if r["status"] == WITHHELD]
        if withheld:
            seats = ", ".join(map(str, withheld))
            out.append(
                {
                    "code": "withheld",
                    "message": f"seat{'s' if len(withheld) > 1 else ''} {seats} withheld "
                    f"{'their reveals' if len(withheld) > 1 else 'its reveal'}: dealt out, charged a first drop (D29)",
                }
            )
    if s.void is not None:
        out.append({"code": "void", "message": f"the hand was voided: {s.void}"})
        if ctx.t["server_seed"] == "":
            out.append(
                {
                    "code": "seed_not_revealed",
                    "message": "the server seed of this void hand was not revealed: nothing about its cards can be "
                    "checked",
                }
            )
    for n, seat, claimed, listed in ctx.key_claims:
        out.append(
            {
                "code": "key_claim",
                "message": f"evidence item {n} (player) names key {claimed} for seat {seat}; the header lists "
                + (f"{listed}" if listed is not None else "no such seat")
                + ": the player's own word, which proves nothing against the server (a header item the "
                "server signed would, §15)",
            }
        )
    return out
