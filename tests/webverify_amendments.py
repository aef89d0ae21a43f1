"""The cases of the 2026-12 amendments to rummy-pf/v2 (docs/fairness.md, issue 16) and of
§15's evidence, for the browser verifier's tests (tests/test_web_verifier.py). Each case
names the check it must fail (or None: it must pass) and, where the reason matters, a text
the failure's message must hold (so that, say, a signature refused for S ≥ L is refused
by the strict rules of §9 and not merely by the curve equation).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from tests.webverify_cases import V1E, V2E, V2H, V2L, V2T, V2VM, V2VS, Builder, Case, flip
from tests.webverify_tooling import (
    CONSTANT_SIGNATURE,
    OTHER_KEY,
    SERVER,
    SMALL_ORDER_KEYS,
    V2,
    Signer,
    actions,
    dump,
    encode_y,
    item,
    load,
    load_evidence,
    modernize,
    non_canonical_key,
    off_curve_key,
    player_commit,
    player_item,
    player_key,
    r_not_canonical,
    refused_ack,
    reseal,
    s_plus_l,
    seat_evidence,
    to_v1,
    turn_began,
)

V1T = "transcript-4seat-two-players.json"  # the v1 vector of table-two, hand 1: the same hand as V2T
EVID = "v2-evidence-4seat-two-players-seat1.json"

Items = list[dict[str, Any]]
Tx = dict[str, Any]


def first_seat(base: str) -> int:
    return int(load(base)["log"][0]["header"]["seats"][0]["seat"])


def second_seat(base: str) -> int:
    return int(load(base)["log"][0]["header"]["seats"][1]["seat"])


def sealed(base: str) -> Tx:
    t = load(base)
    modernize(t)
    reseal(t)
    return t


def resign(it: dict[str, Any]) -> None:
    it["sig"] = SERVER.sign(V2, it["purpose"], it["body"])


def amendment_cases(b: Builder) -> None:
    """§9, §11, §12 (in webverify_cases), §13 and §14 of the 2026-12 amendments."""
    add = b.add
    if V2T not in b.present:
        return
    s0, s1 = first_seat(V2T), second_seat(V2T)

    # §14: v1 refused unless asked; v2 evidence refutes a v1 copy of the hand
    v2_evidence = json.dumps(seat_evidence(sealed(V2T), s1))
    add("format: a v2 hand re-signed as v1, no box ticked", V2T, to_v1, "format", allow_v1=False, message="refused")
    add("v1: a v2 hand re-signed as v1, the box ticked", V2T, to_v1, None, allow_v1=True)
    add(
        "evidence: a v2 hand re-signed as v1, with the v2 hand's evidence",
        V2T,
        to_v1,
        "evidence",
        allow_v1=True,
        evidence=v2_evidence,
        message="downgrade",
    )
    add(
        "evidence: a v1 hand with evidence of another hand only",
        V1E,
        None,
        "evidence",
        allow_v1=True,
        evidence=v2_evidence,
        message="no item of this evidence is for",
    )
    if V1T in b.present and EVID in b.present:
        b.cases.append(
            Case(
                "evidence: the v1 vector of table-two hand 1 with the v2 evidence of that hand",
                dump(load(V1T)),
                "evidence",
                evidence=json.dumps(load_evidence(EVID)),
                allow_v1=True,
                message="downgrade",
            )
        )
        b.cases.append(Case("format: the v1 vector, no box ticked", dump(load(V1T)), "format", message="refused"))

    # §9: strict keys — the eight small-order points, with the one signature that verifies everything
    for n, k in enumerate(SMALL_ORDER_KEYS):
        const = Signer(k, constant=CONSTANT_SIGNATURE)
        add(
            f"format: small-order key {n} as a player key",
            V2T,
            None,
            "format",
            seats={s0: const},
            message="small order",
        )
        add(f"format: small-order key {n} as the server key", V2T, None, "format", server=const, message="small order")
    add(
        "format: a small-order server key, pinned too",
        V2T,
        None,
        "format",
        server=Signer(SMALL_ORDER_KEYS[0], constant=CONSTANT_SIGNATURE),
        key=SMALL_ORDER_KEYS[0],
        message="small order",
    )
    nc = Signer(non_canonical_key(), constant=CONSTANT_SIGNATURE)
    add("format: a non-canonical player key (y ≥ p)", V2T, None, "format", seats={s0: nc}, message="canonical")
    add("format: a non-canonical server key (y ≥ p)", V2T, None, "format", server=nc, message="canonical")
    off = Signer(off_curve_key(), constant=CONSTANT_SIGNATURE)
    add("format: a player key that is no point of the curve", V2T, None, "format", seats={s1: off}, message="curve")
    x0 = Signer(encode_y(1, 1), constant=CONSTANT_SIGNATURE)
    add("format: a server key with x = 0 and the sign bit set", V2T, None, "format", server=x0, message="sign bit")

    # §9: strict signatures — S < L, R canonical
    def move_sig(edit: Callable[[str], str]) -> Callable[[Tx], None]:
        def after(t: Tx) -> None:
            r = actions(t, "draw_closed")[0]
            r["psig"]["sig"] = edit(r["psig"]["sig"])
            reseal(t, players=False)

        return after

    def commit_sig(t: Tx) -> None:
        c = t["log"][1]["commitments"]["commits"][0]
        c["psig"] = s_plus_l(c["psig"])
        reseal(t, players=False)

    def header_sig(t: Tx) -> None:
        t["log"][0]["sig"] = s_plus_l(t["log"][0]["sig"])
        reseal(t, players=False, header=False)

    add(
        "player_signatures: a move signature with S + L",
        V2E,
        None,
        "player_signatures",
        after=move_sig(s_plus_l),
        message="S ≥ L",
    )
    add(
        "player_signatures: a commit signature with S + L",
        V2E,
        None,
        "player_signatures",
        after=commit_sig,
        message="S ≥ L",
    )
    add(
        "player_signatures: a move signature whose R is not canonical",
        V2E,
        None,
        "player_signatures",
        after=move_sig(r_not_canonical),
        message="R is not a canonical",
    )
    add(
        "signature: the transcript signature with S + L",
        V2E,
        None,
        "signature",
        after=lambda t: t.update(signature=s_plus_l(t["signature"])),
        message="S ≥ L",
    )
    add("signature: the header signature with S + L", V2E, None, "signature", after=header_sig, message="S ≥ L")

    # §11: hand 1 chains from 64 zeros, checked for a single file too
    def prev_head(t: Tx) -> None:
        t["log"][0]["header"]["prev_head"] = "11" * 32

    add("chain: hand 1 with a non-zero prev_head, re-chained", V2T, prev_head, "chain", message="64 zeros")
    if V1T in b.present:
        add("chain (v1): hand 1 with a non-zero prev_head, re-chained", V1T, prev_head, "chain", message="64 zeros")

    # §13: one key, one seat
    add(
        "format: one key in two seats",
        V2T,
        None,
        "format",
        seats={s1: Signer.of(player_key(s0))},
        message="distinct player keys",
    )


def evidence_cases(b: Builder) -> None:
    """§15: the items of a player's evidence, and D35."""
    add = b.add

    def ev(
        name: str,
        base: str,
        make: Callable[[Tx], Items],
        expect: str | None,
        fn: Any = None,
        message: str | None = None,
    ) -> None:
        add(name, base, fn, expect, after=make, message=message, players=True)

    def whole(seat_of: Callable[[Tx], int], edit: Callable[[Tx, Items], Any] | None = None) -> Callable[[Tx], Items]:
        def make(t: Tx) -> Items:
            items = seat_evidence(t, seat_of(t))
            if edit is not None:
                edit(t, items)
            return items

        return make

    def seat_at(k: int) -> Callable[[Tx], int]:
        return lambda t: int(t["log"][0]["header"]["seats"][k]["seat"])

    # what an honest client keeps passes, on hands with everything in them
    ev("evidence: a seat's whole evidence (header, key, acks, heads)", V2T, whole(seat_at(1)), None)
    ev(
        "evidence: a seat's whole evidence, six seats",
        V2E,
        whole(lambda t: actions(t, "timeout")[0]["action"]["seat"]),
        None,
    )
    for k in range(len(load(V2L)["log"][0]["header"]["seats"]) if V2L in b.present else 0):
        ev(f"evidence: seat #{k}'s whole evidence, seeds and leaves", V2L, whole(seat_at(k)), None)
    ev("evidence: a seat's whole evidence, withheld heads-up", V2H, whole(seat_at(1)), None)

    def head_past_void(t: Tx, items: Items) -> None:
        items.append(item("head", {"table_id": t["table_id"], "hand_no": t["hand_no"], "i": 40, "h": "ab" * 32}))

    # §15 rule 8 (2026-12-07): the server signed a record its transcript cut off
    ev(
        "evidence: a head past the void fails",
        V2VM,
        whole(seat_at(0), head_past_void),
        "evidence",
        message="cut off records",
    )
    ev("evidence: a hand voided at record 1, its items before the void", V2VS, whole(seat_at(0)), None)

    def commit_ack_only(t: Tx) -> Items:
        seat = seat_at(0)(t)
        move = {"kind": "commit", "seat": seat, "commit": "cd" * 32}
        return [refused_ack(t, seat, move, 0, t["log"][0]["t"])]

    # rule 1 asks for an item "for this hand" (its table and hand): an item after the void is one;
    # rule 8: evidence that applies to nothing is reported skipped, never passed
    ev("evidence: only an item after the void (0 applied, 1 after the void)", V2VS, commit_ack_only, None)

    def malformed_other_hand(t: Tx, items: Items) -> None:
        items.append(item("head", {"table_id": "table-other", "hand_no": 1, "i": 0, "h": "ab" * 32, "x": 1}))

    ev(
        "evidence: a malformed item of another hand",
        V2T,
        whole(seat_at(1), malformed_other_hand),
        "evidence",
        message="not a signed object",
    )

    # issue 21 item 3: evidence with no item of this hand proves nothing
    def other_table(t: Tx, items: Items) -> None:
        for it in items:
            if it["purpose"] == "header":
                it["body"]["table_id"] = "table-other"
                it["body"]["hand_no"] = 2
            else:
                it["body"]["table_id"] = "table-other"
            resign(it)

    ev("evidence: only items of another hand", V2T, whole(seat_at(1), other_table), "evidence", message="no item")
    ev("evidence: an empty file", V2T, lambda t: [], "evidence", message="no item")
    if V2E in b.present and V2T in b.present:
        b.cases.append(
            Case(
                "evidence: another hand's evidence file (0 of N items applied)",
                dump(sealed(V2E)),
                "evidence",
                evidence=json.dumps(seat_evidence(sealed(V2T), second_seat(V2T))),
                message="no item",
            )
        )

    # the header and the player's key (§15 rules 3 and 4)
    def other_key(t: Tx, items: Items) -> None:
        k = next(n for n, it in enumerate(items) if it["purpose"] == "player")
        items[k] = player_item(t, items[k]["body"]["seat"], key=OTHER_KEY)

    def other_header(t: Tx, items: Items) -> None:
        it = next(it for it in items if it["purpose"] == "header")
        it["body"]["commit_ms"] += 1
        resign(it)

    def header_by_other(t: Tx, items: Items) -> None:
        it = next(it for it in items if it["purpose"] == "header")
        it["sig"] = Signer.of(OTHER_KEY).sign(V2, "header", it["body"])

    def player_sig(t: Tx, items: Items) -> None:
        it = next(it for it in items if it["purpose"] == "player")
        it["sig"] = Signer.of(OTHER_KEY).sign(V2, "player", it["body"])

    # §15 rule 4 (2026-12-07): the player's own word, a warning (key_claim), never a failure
    ev("evidence: a player item whose key the header does not list", V2T, whole(seat_at(1), other_key), None)
    ev(
        "evidence: a header item that is not the transcript's header",
        V2T,
        whole(seat_at(1), other_header),
        "evidence",
        message="another header",
    )
    ev("evidence: a header item signed by another key", V2T, whole(seat_at(0), header_by_other), "evidence")
    ev("evidence: a player item not signed by the key it names", V2T, whole(seat_at(0), player_sig), "evidence")

    # accepted acks (§15 rule 7)
    def ack_of(items: Items, kind: str) -> dict[str, Any]:
        return next(it for it in items if it["purpose"] == "ack" and it["body"]["move"]["kind"] == kind)

    def moved_ack(t: Tx, items: Items) -> None:
        it = ack_of(items, "discard")
        it["body"]["i"] += 1
        it["body"]["h"] = t["log"][it["body"]["i"]]["h"]
        it["body"]["arrived"] = t["log"][it["body"]["i"]]["t"]
        resign(it)

    def early_ack(t: Tx, items: Items) -> None:
        it = ack_of(items, "discard")
        it["body"]["arrived"] = t["log"][it["body"]["i"]]["t"] - 1
        resign(it)

    def commit_ack(t: Tx, items: Items) -> None:
        it = ack_of(items, "commit")
        it["body"]["move"]["commit"] = "cd" * 32
        resign(it)

    def reveal_ack(t: Tx, items: Items) -> None:
        it = ack_of(items, "reveal")
        it["body"]["move"]["seed"] = "ef" * 32
        resign(it)

    def ack_psig(t: Tx, items: Items) -> None:
        it = ack_of(items, "discard")
        it["body"]["psig"] = flip(it["body"]["psig"])
        resign(it)

    timed = (lambda t: actions(t, "timeout")[0]["action"]["seat"]) if V2E in b.present else seat_at(0)
    ev(
        "evidence: an accepted ack for a move the log holds elsewhere",
        V2E,
        whole(timed, moved_ack),
        "evidence",
        message="another record",
    )
    ev("evidence: an ack that arrived before its record was made", V2E, whole(timed, early_ack), "evidence")
    ev("evidence: an accepted commit that record 1 does not list", V2E, whole(timed, commit_ack), "evidence")
    ev("evidence: an accepted reveal that record 2 does not list", V2E, whole(timed, reveal_ack), "evidence")
    ev("evidence: an accepted ack with another psig than the record's", V2E, whole(timed, ack_psig), "evidence")

    receipt_cases(b)
    d35_cases(b, ev)


def receipts_and_heads(t: Tx, seat: int) -> Items:
    """Evidence as clients kept it before the amendments (§15: receipts, still read, and heads)."""
    log = t["log"]
    c = next(c for c in log[1]["commitments"]["commits"] if c["seat"] == seat)
    e = next(e for e in log[2]["reveals"] if e["seat"] == seat)
    base = {"table_id": t["table_id"], "hand_no": t["hand_no"], "seat": seat}
    items = [
        item("receipt", {**base, "kind": "commit", "value": c["commit"], "prev": log[0]["h"]}),
        item("receipt", {**base, "kind": "reveal", "value": e["seed"], "prev": log[1]["h"]}),
    ]
    for r in log:
        items.append(item("head", {"table_id": t["table_id"], "hand_no": t["hand_no"], "i": r["i"], "h": r["h"]}))
    return items


def receipt_cases(b: Builder) -> None:
    """Receipts and heads (sent before the amendments, still read), made here for V2T re-sealed."""
    if V2T not in b.present:
        return
    t = sealed(V2T)
    good = receipts_and_heads(t, second_seat(V2T))

    def ev_case(name: str, edit: Callable[[Items], Any] | None, expect: str | None, base: str = V2T) -> None:
        items = copy.deepcopy(good)
        if edit is not None:
            edit(items)
        b.cases.append(Case(name, dump(t if base == V2T else sealed(base)), expect, evidence=json.dumps(items)))

    def head_of_other_record(items: Items) -> None:
        it = next(x for x in items if x["purpose"] == "head" and x["body"]["i"] == 4)
        it["body"]["h"] = t["log"][5]["h"]
        resign(it)

    def receipt_value(items: Items) -> None:
        it = next(x for x in items if x["purpose"] == "receipt" and x["body"]["kind"] == "commit")
        it["body"]["value"] = "cd" * 32
        resign(it)

    def receipt_prev(items: Items) -> None:
        it = next(x for x in items if x["purpose"] == "receipt" and x["body"]["kind"] == "reveal")
        it["body"]["prev"] = "ef" * 32
        resign(it)

    def other_hand(items: Items) -> None:
        for it in items:
            it["body"]["table_id"] = "table-other"
            resign(it)

    def head_beyond(items: Items) -> None:
        it = copy.deepcopy(items[-1])
        it["body"]["i"] = 50
        resign(it)
        items.append(it)

    def refused_without_code(items: Items) -> None:
        it = copy.deepcopy(items[-1])
        it["purpose"] = "ack"
        it["body"] = {**it["body"], "seat": 1, "move": {"kind": "drop", "seat": 1}, "prev": it["body"]["h"]}
        it["body"].update(psig="00" * 64, arrived=0, outcome="refused", code=None)
        resign(it)
        items.append(it)

    ev_case("evidence: the player's receipts and heads", None, None)
    ev_case("evidence: a receipt's signature", lambda items: items[1].update(sig=flip(items[1]["sig"])), "evidence")
    ev_case("evidence: a head's signature", lambda items: items[3].update(sig=flip(items[3]["sig"])), "evidence")
    ev_case("evidence: a head that is not the record's h", head_of_other_record, "evidence")
    ev_case("evidence: a commit receipt for another commitment", receipt_value, "evidence")
    ev_case("evidence: a reveal receipt over another prev", receipt_prev, "evidence")
    ev_case("evidence: a head for a record the log lacks", head_beyond, "evidence")
    ev_case("evidence: receipts and heads of another hand only", other_hand, "evidence")
    ev_case("evidence: the receipts of another hand's transcript", None, "evidence", base=V2E)
    ev_case(
        "evidence: an item that is not a signed object", lambda items: items.append({"purpose": "head"}), "evidence"
    )
    ev_case("evidence: a refused ack without its code", refused_without_code, "evidence")
    ev_case("evidence: the receipt file emptied", lambda items: items.clear(), "evidence")
    b.cases.append(
        Case("evidence: a file that is not a list", dump(load(V2T)), "evidence", evidence='{"purpose": "head"}')
    )
    b.cases.append(Case("read: evidence that is not JSON", dump(load(V2T)), "read", evidence="[{]"))


def another_playing_seat(t: Tx, i: int, seat: int) -> int:
    """A seat other than `seat` still playing after record i (none of its removals logged yet)."""
    gone = {
        e["seat"]
        for r in t["log"][: i + 1]
        for e in r.get("events", [])
        if e["kind"] in ("drop", "leave", "forfeit") or (e["kind"] == "declare" and not e["data"]["valid"])
    }
    return int(next(s["seat"] for s in t["log"][0]["header"]["seats"] if s["seat"] not in gone | {seat}))


def d35_cases(b: Builder, ev: Callable[..., None]) -> None:
    """D35: a refusal the rules do not justify gives the seat its whole window again."""

    def header_item(t: Tx) -> dict[str, Any]:
        return {"purpose": "header", "body": copy.deepcopy(t["log"][0]["header"]), "sig": t["log"][0]["sig"]}

    def turn(t: Tx) -> tuple[int, int, int, int]:
        """(the first timeout's record, the record that began its turn, its seat, 1000·turn_seconds)"""
        j = actions(t, "timeout")[0]["i"]
        return j, turn_began(t, j), t["log"][j]["action"]["seat"], 1000 * t["log"][0]["header"]["rules"]["turn_seconds"]

    def refusal(
        move: Callable[[Tx, int], dict[str, Any]],
        early: bool,
        *,
        prev_back: int = 0,
        key: Any = None,
        other: bool = False,
    ) -> Callable[[Tx], Items]:
        def make(t: Tx) -> Items:
            j, start, seat, window = turn(t)
            if other:
                seat = another_playing_seat(t, start, seat)
            arrived = t["log"][j]["t"] - window + 1 if early else t["log"][start]["t"]
            prev = t["log"][start - prev_back]["h"]
            return [header_item(t), refused_ack(t, seat, move(t, seat), start, arrived, prev=prev, key=key)]

        return make

    def draw(t: Tx, seat: int) -> dict[str, Any]:
        return {"kind": "draw_closed", "seat": seat}

    def discard(t: Tx, seat: int) -> dict[str, Any]:
        cards = next(e for e in t["log"][3]["events"] if e["kind"] == "hand" and e["seat"] == seat)["private"]["cards"]
        return {"kind": "discard", "seat": seat, "card": cards[0]}

    def leave(t: Tx, seat: int) -> dict[str, Any]:
        return {"kind": "leave", "seat": seat}

    def timeout(t: Tx, seat: int) -> dict[str, Any]:
        return {"kind": "timeout", "seat": seat}

    def other_seats_leave(t: Tx, seat: int) -> dict[str, Any]:
        # legal for that other seat, signed by the seat on turn, in the ack of the seat on turn
        return {"kind": "leave", "seat": another_playing_seat(t, turn(t)[1], seat)}

    ev(
        "evidence: a refused legal draw, then the seat's clock sooner than a whole turn (D35)",
        V2E,
        refusal(draw, True),
        "evidence",
        message="D35",
    )
    ev(
        "evidence: a refused legal draw, then the seat's clock a whole turn later (D35)",
        V2E,
        refusal(draw, False),
        None,
    )
    ev(
        "evidence: a justified refusal (a discard in the draw phase), then an early clock",
        V2E,
        refusal(discard, True),
        None,
    )
    # §15 rule 7 (2026-12-07): no table judges a move its player did not sign: the ack misquotes it
    ev(
        "evidence: a refusal quoting a signature that is not the seat's",
        V2E,
        refusal(draw, True, key=OTHER_KEY),
        "evidence",
        message="misquotes",
    )
    ev(
        "evidence: a justified refusal (signed over an older record), then an early clock",
        V2E,
        refusal(draw, True, prev_back=1),
        None,
    )
    # §15 rule 7: a timeout is the server's own move (§9), never a player's, so refusing one a
    # player signed is justified whatever the code says: the clock may move at its usual time
    ev(
        "evidence: a refused timeout signed by the seat on turn, then an early clock",
        V2E,
        refusal(timeout, True),
        None,
    )
    # the move (another seat's leave, legal) signed by the seat on turn: nothing justifies the refusal
    ev(
        "evidence: a refused move of another seat in the ack of the seat on turn, then an early clock",
        V2E,
        refusal(other_seats_leave, True),
        "evidence",
    )

    def odd_field(t: Tx, seat: int) -> dict[str, Any]:
        return {"kind": "draw_closed", "seat": seat, "x": 1}

    def no_such_kind(t: Tx, seat: int) -> dict[str, Any]:
        return {"kind": "fly", "seat": seat}

    # a malformed move gets no ack (§15): an ack holding one is not of §15's forms
    ev("evidence: a refused move with a field no action has", V2E, refusal(odd_field, True), "evidence", message="form")
    ev("evidence: a refused move of no kind of §11", V2E, refusal(no_such_kind, True), "evidence", message="form")
    # §15 rule 7 (2026-12-07, later): a refused leave is not overtaken — not even by the
    # clock's move for the seat on turn, which the house would then have put before it
    ev(
        "evidence: another seat's refused leave, then the clock of the seat on turn first",
        V2E,
        refusal(leave, True, other=True),
        "evidence",
    )

    # the seed windows: a refused commit (D21), a refused reveal (D29)
    def no_commit_seat(t: Tx) -> int:
        return int(next(c["seat"] for c in t["log"][1]["commitments"]["commits"] if c["commit"] is None))

    def commit_refused(early: bool, seed: str = "aa" * 32) -> Callable[[Tx], Items]:
        def make(t: Tx) -> Items:
            s = no_commit_seat(t)
            move = {"kind": "commit", "seat": s, "commit": player_commit(s, seed)}
            arrived = t["log"][0]["t"] + (1 if early else 0)
            return [header_item(t), refused_ack(t, s, move, 0, arrived)]

        return make

    ev("evidence: a refused commit, then the commit window closed sooner (D35)", V2L, commit_refused(True), "evidence")
    ev("evidence: a refused commit, the whole commit window kept (D35)", V2L, commit_refused(False), None)

    seed = "5e" * 32

    def withheld_seat(t: Tx) -> int:
        return int(next(e["seat"] for e in t["log"][2]["reveals"] if e["status"] == "withheld"))

    def commit_to_seed(t: Tx) -> None:
        # the withheld seat's commitment to a seed the test knows (it is dealt nothing: the deck stays)
        s = withheld_seat(t)
        c = next(c for c in t["log"][1]["commitments"]["commits"] if c["seat"] == s)
        c["commit"] = player_commit(s, seed)

    def reveal_refused(early: bool, revealed: str = seed) -> Callable[[Tx], Items]:
        def make(t: Tx) -> Items:
            s = withheld_seat(t)
            move = {"kind": "reveal", "seat": s, "seed": revealed}
            arrived = t["log"][1]["t"] + (1 if early else 0)
            return [header_item(t), refused_ack(t, s, move, 1, arrived)]

        return make

    ev(
        "evidence: a refused reveal, then recorded withheld sooner (D35)",
        V2H,
        reveal_refused(True),
        "evidence",
        commit_to_seed,
    )
    ev(
        "evidence: a refused reveal, the whole reveal window kept (D35)",
        V2H,
        reveal_refused(False),
        None,
        commit_to_seed,
    )
    ev(
        "evidence: a justified refusal of a reveal (not its seed)",
        V2H,
        reveal_refused(True, "00" * 32),
        None,
        commit_to_seed,
    )


def build_amendment_cases(b: Builder) -> None:
    amendment_cases(b)
    evidence_cases(b)
