"""The exact schema of a transcript and of an evidence file (docs/fairness.md §13,
§15, Appendix C), checked first by ``format``.

The schema is data: small validators (:mod:`verifier.validators`: ``integer``,
``hexstr``, ``obj``, ``list_of``, …) composed into one description per record type and
protocol.
Every validator raises :class:`SchemaError` with the path of the offending value;
nothing later reads a field the schema has not typed.  The few rules that relate
fields to each other (a seat listed in the header, the record order, the deck and
its faces) are written out after the validators, in :func:`check_transcript`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from verifier.cards import deck_size, decks_for_seats, face_texts
from verifier.chain import NO_COMMIT, REVEALED, WITHHELD
from verifier.ed25519 import key_problem
from verifier.fairness import PROTOCOL_V1, PROTOCOL_V2, rules_id
from verifier.strictjson import MAX_SAFE
from verifier.validators import (
    STRING,
    Path,
    SchemaError,
    Validator,
    any_object,
    bad,
    const,
    describe,
    either,
    hexstr,
    integer,
    list_of,
    member,
    nullable,
    obj,
    one_of,
    pattern,
    predicate,
    render_path,
    short_value,
)

__all__ = ["SchemaError", "Shape", "check_evidence_item", "check_transcript", "describe", "render_path"]

HAND_NO_MAX: Final = (1 << 31) - 1
POINT_VALUE_MAX: Final = 7_692_307_692_307
WINDOW_MS_MAX: Final = 3_600_000
#: the shortest seed window a header may give (RULES.md D21): a window the house shortens
#: for one hand closes it on an honest seat's seed (the audit of 2026-12-07)
WINDOW_MS_MIN: Final = 2_000
ACTION_KINDS: Final = ("draw_closed", "draw_open", "discard", "declare", "drop", "leave", "timeout")

HEX32: Final = hexstr(32)
HEX64: Final = hexstr(64)
ANY_HEX: Final = pattern(r"(?:[0-9a-f]{2})*", "lowercase hex digits (whole bytes)")
IDENT: Final = pattern(r"[A-Za-z0-9_.:-]{1,64}", "an id: 1 to 64 of A-Z a-z 0-9 _ . : -")
TEXT: Final = pattern(r"(?s).{1,500}", "a text of 1 to 500 characters")
TIME: Final = integer(0, MAX_SAFE)
ANY_INT: Final = integer()


# --------------------------------------------------------------------------- the schema (§13, Appendix C)
RULES: Final = obj(
    {
        "seats": integer(4, 8),
        "point_value": integer(1, POINT_VALUE_MAX),
        "commission_bps": integer(0, 10_000),
        "turn_seconds": integer(1, 3600),
        "max_missed_turns": integer(1, 100),
        "min_players": integer(2, 8),
    }
)


def _rules(x: Any, path: Path) -> None:
    RULES(x, path)
    if x["seats"] not in (4, 6, 8):
        raise SchemaError((*path, "seats"), f"a table has 4, 6 or 8 seats, not {x['seats']}", [4, 6, 8], x["seats"])
    if x["min_players"] > x["seats"]:
        raise SchemaError(
            (*path, "min_players"), "min_players is more than the table's seats", f"2 to {x['seats']}", x["min_players"]
        )


def _header(v2: bool) -> Validator:
    seat: dict[str, Validator] = {"seat": integer(0, 7), "player_id": IDENT}
    fields: dict[str, Validator] = {
        "protocol": const(PROTOCOL_V2 if v2 else PROTOCOL_V1),
        "table_id": IDENT,
        "hand_no": integer(1, HAND_NO_MAX),
        "rules": _rules,
        "rules_id": HEX32,
        "seats": list_of(obj({**seat, "player_key": HEX32} if v2 else seat), 2, 8),
        "dealer": integer(0, 7),
        "commit_s": HEX32,
        "prev_head": HEX32,
        "public_key": HEX32,
    }
    if v2:
        fields["commit_ms"] = integer(WINDOW_MS_MIN, WINDOW_MS_MAX)
        fields["reveal_ms"] = integer(WINDOW_MS_MIN, WINDOW_MS_MAX)
    return obj(fields)


EVENT: Final = obj({"kind": STRING, "seat": nullable(ANY_INT), "data": any_object, "private": any_object})
EVENTS: Final = list_of(EVENT)
HINT: Final = list_of(list_of(ANY_INT))
PSIG: Final = nullable(obj({"prev": HEX32, "sig": HEX64}))


def _record(v2: bool, kind: str, body: Mapping[str, Validator]) -> Validator:
    """A record of ``kind``: its body fields plus ``i``, ``h`` and (v2, or a v1
    action's optional) ``t``."""
    fields: dict[str, Validator] = {"type": const(kind), **body, "i": ANY_INT, "h": HEX32}
    if v2:
        return obj({**fields, "t": TIME})
    return obj(fields, {"t": TIME} if kind == "action" else None)


def _records(v2: bool) -> dict[str, Validator]:
    return {
        "header": _record(v2, "header", {"header": any_object, "sig": HEX64}),
        "commitments": _record(v2, "commitments", {"commitments": any_object, "sig": HEX64}),
        "reveals": _record(v2, "reveals", {"reveals": list_of(any_object)}),
        "deal": _record(v2, "deal", {"events": EVENTS}),
        "action": _record(v2, "action", {"action": any_object, "events": EVENTS, **({"psig": PSIG} if v2 else {})}),
        "void": _record(v2, "void", {"reason": TEXT}),
    }


RECORDS: Final = {True: _records(True), False: _records(False)}
HEADERS: Final = {True: _header(True), False: _header(False)}
ORDER: Final = ("header", "commitments", "reveals", "deal")


def _top(v2: bool) -> Validator:
    return obj(
        {
            "protocol": const(PROTOCOL_V2 if v2 else PROTOCOL_V1),
            "table_id": IDENT,
            "hand_no": integer(1, HAND_NO_MAX),
            "log": list_of(None, 1),
            "head": HEX32,
            "server_seed": either(HEX32, const(""), what='64 lowercase hex digits or ""') if v2 else HEX32,
            "deck": list_of(ANY_INT),
            "deck_faces": list_of(STRING),
            "result": nullable(any_object),
            "signature": HEX64,
        }
    )


TOPS: Final = {True: _top(True), False: _top(False)}


@dataclass
class Shape:
    """What ``format`` established about a transcript, for the checks after it."""

    v2: bool
    header: dict[str, Any]
    seats: list[int]  # the header's seats, ascending
    player_ids: dict[int, str]
    decks: int
    log: list[dict[str, Any]]
    commitments: dict[str, Any] | None = None  # record 1's body
    reveals: list[dict[str, Any]] | None = None  # record 2's entries
    deal: int | None = None  # the deal record's index (3), if any
    void: str | None = None  # the void record's reason, if the log ends in one
    actions: list[int] = field(default_factory=list)  # indices of action records


def check_transcript(t: Mapping[str, Any], v2: bool) -> Shape:
    """Raise :class:`SchemaError` unless ``t`` has exactly the schema of §13 (or of
    Appendix C for v1).  ``t`` is already known to be JSON data (§2)."""
    TOPS[v2](t, ())
    log: list[Any] = t["log"]
    records = RECORDS[v2]
    for n, rec in enumerate(log):
        path: Path = ("log", n)
        if type(rec) is not dict:
            raise bad(path, "a record (an object)", rec)
        kind = rec.get("type")
        if type(kind) is not str or kind not in records:
            raise bad((*path, "type"), "a record type", kind, f"unknown record type {short_value(kind)}")
        expected = ORDER[n] if n < len(ORDER) else "action"
        allowed = (expected,) if n == 0 else (expected, "void")
        if not v2 and n != 3:  # Appendix C: "a void record can only be record 3" (none mid-hand)
            allowed = (expected,)
        if kind not in allowed or (kind == "action" and (len(log) < 4 or log[3].get("type") != "deal")):
            if kind == "void" and not v2:
                where, rule = "only as record 3 in rummy-pf/v1, when fewer than two seats are dealt in", "Appendix C"
            else:
                where = "only as the last record" if kind == "void" else f"not as record {n}"
                rule = "§11 order"
            raise SchemaError((*path, "type"), f"a {kind} record comes {where} ({rule})", " or ".join(allowed), kind)
        if kind == "void" and n != len(log) - 1:
            raise SchemaError((*path, "type"), "a void record ends the log", "the last record", n)
        records[kind](rec, path)
        if rec["i"] != n:
            raise SchemaError((*path, "i"), f"record {n} is numbered {short_value(rec['i'])}", n, rec["i"])
    if log[-1]["type"] != "void" and len(log) < 4:
        raise SchemaError(
            ("log",), "a log that does not end in a void reaches the deal", "at least 4 records", len(log)
        )
    if not v2 and len(log) < 4:
        raise SchemaError(("log",), "a rummy-pf/v1 log reaches record 3 (the deal or a void)", 4, len(log))

    # -- the header ---------------------------------------------------------------------
    header = log[0]["header"]
    hp: Path = ("log", 0, "header")
    HEADERS[v2](header, hp)
    for name in ("table_id", "hand_no"):
        if header[name] != t[name]:
            raise SchemaError((*hp, name), f"the header names another hand ({name})", t[name], header[name])
    rules = header["rules"]
    expected_id = rules_id(rules)
    if header["rules_id"] != expected_id:
        raise SchemaError(
            (*hp, "rules_id"), "rules_id is not the hash of the rules (§4)", expected_id, header["rules_id"]
        )
    seat_list = header["seats"]
    seats = [s["seat"] for s in seat_list]
    if len(seats) > rules["seats"]:
        raise SchemaError((*hp, "seats"), "more seats than the table has", rules["seats"], len(seats))
    if len(seats) < rules["min_players"]:  # D2: a hand is dealt only with at least min_players
        raise SchemaError(
            (*hp, "seats"),
            "fewer seats than the table's min_players (D2)",
            f"at least {rules['min_players']}",
            len(seats),
        )
    for n, s in enumerate(seats):
        if s >= rules["seats"]:
            raise SchemaError((*hp, "seats", n, "seat"), "no such seat at this table", f"0 to {rules['seats'] - 1}", s)
        if n and s <= seats[n - 1]:
            raise SchemaError(
                (*hp, "seats", n, "seat"), "seats are listed in strictly ascending order", f"> {seats[n - 1]}", s
            )
    ids = [s["player_id"] for s in seat_list]
    if len(set(ids)) != len(ids):
        dup = next(p for p in ids if ids.count(p) > 1)
        raise SchemaError((*hp, "seats"), f"the player {dup!r} is listed twice", "distinct player ids", dup)
    _strict_key(header["public_key"], (*hp, "public_key"))
    if v2:
        keys = [s["player_key"] for s in seat_list]
        for n, k in enumerate(keys):
            _strict_key(k, (*hp, "seats", n, "player_key"))
            if k in keys[:n]:
                raise SchemaError(
                    (*hp, "seats", n, "player_key"),
                    f"seats {seat_list[keys.index(k)]['seat']} and {seat_list[n]['seat']} list the same player key: "
                    "one key sits in at most one seat of a hand (§13)",
                    "distinct player keys",
                    k,
                )
    member(seats, "a seat of the header")(header["dealer"], (*hp, "dealer"))
    shape = Shape(
        v2=v2,
        header=header,
        seats=seats,
        player_ids=dict(zip(seats, ids, strict=True)),
        decks=decks_for_seats(rules["seats"]),
        log=log,
    )
    seat_v = member(seats, "a seat of the header")

    # -- commitments and reveals ---------------------------------------------------------------
    if len(log) > 1 and log[1]["type"] == "commitments":
        cp: Path = ("log", 1, "commitments")
        entry = {"seat": ANY_INT, "commit": nullable(HEX32)}
        obj(
            {
                "table_id": const(t["table_id"]),
                "hand_no": const(t["hand_no"]),
                "commits": list_of(obj({**entry, "psig": nullable(HEX64)} if v2 else entry)),
            }
        )(log[1]["commitments"], cp)
        commits = log[1]["commitments"]["commits"]
        _one_per_seat(commits, seats, (*cp, "commits"))
        if v2:
            for n, c in enumerate(commits):
                if (c["commit"] is None) != (c["psig"] is None):
                    raise SchemaError(
                        (*cp, "commits", n, "psig"),
                        "psig is null exactly when commit is null",
                        c["commit"] is None,
                        c["psig"],
                    )
        shape.commitments = log[1]["commitments"]
    if len(log) > 2 and log[2]["type"] == "reveals":
        rp: Path = ("log", 2, "reveals")
        reveals = log[2]["reveals"]
        entry = {"seat": ANY_INT, "seed": STRING, "status": one_of(REVEALED, NO_COMMIT, WITHHELD)}
        for n, r in enumerate(reveals):
            obj({**entry, "psig": nullable(HEX64)} if v2 else entry)(r, (*rp, n))
            if r["status"] == REVEALED:
                (HEX32 if v2 else ANY_HEX)(r["seed"], (*rp, n, "seed"))
                if v2:
                    HEX64(r["psig"], (*rp, n, "psig"))
            else:
                const("")(r["seed"], (*rp, n, "seed"))
                if v2:
                    const(None)(r["psig"], (*rp, n, "psig"))
        _one_per_seat(reveals, seats, rp)
        shape.reveals = reveals

    # -- deal, actions, void -----------------------------------------------------------------------
    # An event's seat is an integer or null here (EVENT), not a seat of the header: §13
    # leaves an event's contents to deal and replay, which fail an event the rules do not
    # make at its record (an event of an unlisted seat is one).
    for n, rec in enumerate(log):
        kind = rec["type"]
        if kind == "deal":
            shape.deal = n
        elif kind == "action":
            _action(rec["action"], seat_v, ("log", n, "action"))
            shape.actions.append(n)
        elif kind == "void":
            shape.void = rec["reason"]

    # -- the transcript's own fields ---------------------------------------------------------------
    void = shape.void is not None
    if t["server_seed"] == "" and not void:
        raise SchemaError(("server_seed",), 'the server seed is "" only in a void transcript', "64 hex digits", "")
    if t["server_seed"] == "" and shape.reveals is not None:
        raise SchemaError(
            ("server_seed",),
            "the reveals are recorded, so the server has known the deck: a transcript with record 2 publishes its "
            'server seed, void or not (§12); "" here means nothing about this hand\'s cards can be checked, and the '
            "house is at fault",
            "64 hex digits",
            "",
        )
    if t["result"] is None and not void:
        raise SchemaError(("result",), "the result is null only when the hand is void", "an object", None)
    if t["result"] is not None and void:
        raise SchemaError(("result",), "a void hand has no result", None, "an object")
    if t["result"] is not None:
        points = obj({str(s): integer(0, 130) for s in seats})
        deltas = obj({str(s): integer(-MAX_SAFE, MAX_SAFE) for s in seats})
        obj(
            {
                "winner": seat_v,
                "reason": one_of("declare", "last_standing"),
                "points": points,
                "settlement": obj(
                    {
                        "winner": seat_v,
                        # §13: "In settlement, format only asks point_value and
                        # commission_bps to be non-negative integers; their values are
                        # judged by settlement" (the header's rules hold them to §4's bounds)
                        "point_value": integer(0, MAX_SAFE),
                        "commission_bps": integer(0, MAX_SAFE),
                        "points": points,
                        "pot": integer(0, MAX_SAFE),
                        "commission": integer(0, MAX_SAFE),
                        "deltas": deltas,
                    }
                ),
            }
        )(t["result"], ("result",))
    deck, faces = t["deck"], t["deck_faces"]
    pack = deck_size(shape.decks)
    if deck and sorted(deck) != list(range(pack)):
        raise SchemaError(
            ("deck",),
            f"the deck is [] or a permutation of the {pack}-card pack (§13)",
            f"{pack} distinct ids",
            len(deck),
        )
    if len(faces) != len(deck):
        raise SchemaError(("deck_faces",), "one face per card of the deck", len(deck), len(faces))
    table = face_texts(shape.decks)
    if faces != [table[c] for c in deck]:
        n, c = next((n, c) for n, (c, f) in enumerate(zip(deck, faces, strict=True)) if f != table[c])
        raise SchemaError(("deck_faces", n), f"the face of card {c} is {table[c]}", table[c], faces[n])
    return shape


def _strict_key(hex_key: str, path: Path) -> None:
    """§9: every public key a header lists is a strict Ed25519 key."""
    problem = key_problem(bytes.fromhex(hex_key))
    if problem is not None:
        raise SchemaError(
            path, f"the key {hex_key} is not a strict Ed25519 key (§9): {problem}", "a strict key", hex_key
        )


def _one_per_seat(entries: Sequence[Mapping[str, Any]], seats: Sequence[int], path: Path) -> None:
    found = [e["seat"] for e in entries]
    if found != list(seats):
        raise SchemaError(path, "one entry per header seat, in the header's order", list(seats), found)


def _action_rule(kind: str) -> Validator:
    """An action of ``kind`` whose seat is any integer."""
    fields: dict[str, Validator] = {"kind": STRING, "seat": ANY_INT}
    if kind in ("discard", "declare"):
        fields["card"] = ANY_INT
    return obj(fields, {"hint": HINT} if kind == "declare" else None)


ACTIONS: Final = {kind: predicate(_action_rule(kind)) for kind in ACTION_KINDS}


def _action(a: Any, seat_v: Validator, path: Path) -> None:
    """An action (§13) by a seat ``seat_v`` accepts."""
    right = ACTIONS.get(a["kind"]) if type(a) is dict and type(a.get("kind")) is str else None
    if right is not None and right(a) and predicate(seat_v)(a["seat"]):
        return
    if type(a) is not dict:
        raise bad(path, "an action (an object)", a)
    one_of(*ACTION_KINDS)(a.get("kind"), (*path, "kind"))
    kind = a["kind"]
    fields: dict[str, Validator] = {"kind": STRING, "seat": seat_v}
    optional: dict[str, Validator] = {}
    if kind in ("discard", "declare"):
        fields["card"] = ANY_INT
    if kind == "declare":
        optional["hint"] = HINT
    obj(fields, optional)(a, path)


# --------------------------------------------------------------------------- evidence (§15)
HAND: Final = {"table_id": IDENT, "hand_no": integer(1, HAND_NO_MAX)}
SEAT: Final = integer(0, 7)
RECEIPT_BODY: Final = obj({**HAND, "seat": SEAT, "kind": one_of("commit", "reveal"), "value": HEX32, "prev": HEX32})
HEAD_BODY: Final = obj({**HAND, "i": TIME, "h": HEX32})
PLAYER_BODY: Final = obj({**HAND, "seat": SEAT, "player_key": HEX32})
ACK_BODY: Final = obj(
    {
        **HAND,
        "seat": SEAT,
        "move": any_object,
        "prev": HEX32,
        "psig": HEX64,
        "i": TIME,
        "h": HEX32,
        "arrived": TIME,
        "outcome": one_of("accepted", "refused"),
        "code": nullable(IDENT),
    }
)


def _header_body(x: Any, path: Path) -> None:
    """A header the client accepted: judged whole against the transcript's header
    (§15 check 3); here only what says which hand it is for."""
    any_object(x, path)
    for k, f in HAND.items():
        if k not in x:
            raise SchemaError(path, f"the field {k!r} is missing", sorted(HAND), sorted(x))
        f(x[k], (*path, k))


def _ack_body(x: Any, path: Path) -> None:
    ACK_BODY(x, path)
    if (x["code"] is None) != (x["outcome"] == "accepted"):
        raise SchemaError((*path, "code"), "code is null exactly when the move was accepted", None, x["code"])
    _move(x["move"], x["seat"], (*path, "move"))


def _move(m: Any, seat: int, path: Path) -> None:
    """A move as in §9: a commit, a reveal, or an action (§13), of the ack's seat."""
    if type(m) is not dict:
        raise bad(path, "a move (an object)", m)
    kind = m.get("kind")
    if kind == "commit":
        obj({"kind": STRING, "seat": ANY_INT, "commit": HEX32})(m, path)
    elif kind == "reveal":
        obj({"kind": STRING, "seat": ANY_INT, "seed": HEX32})(m, path)
    else:
        _action(m, ANY_INT, path)
    if m["seat"] != seat:
        raise SchemaError((*path, "seat"), "the move is the acknowledged seat's", seat, m["seat"])


EVIDENCE_BODIES: Final[dict[str, Validator]] = {
    "ack": _ack_body,
    "head": HEAD_BODY,
    "header": _header_body,
    "player": PLAYER_BODY,
    "receipt": RECEIPT_BODY,
}
EVIDENCE_ITEM: Final = obj({"purpose": one_of(*EVIDENCE_BODIES), "body": any_object, "sig": HEX64})


def check_evidence_item(item: Any, path: Path) -> None:
    """An item of an evidence file (§15): ``{"purpose", "body", "sig"}``, its body of
    exactly the form its purpose names."""
    EVIDENCE_ITEM(item, path)
    EVIDENCE_BODIES[item["purpose"]](item["body"], (*path, "body"))
