"""Tampered variants of the vector transcripts, for the browser verifier's tests
(tests/test_web_verifier.py): each is re-sealed with the test keys (tests/webverify_tooling.py)
so that it fails at the check it is meant to fail (or passes), not merely at a signature.
The cases of the 2026-12 amendments and of §15's evidence are in tests/webverify_amendments.py.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.webverify_tooling import (
    CHECKS_V1,
    CHECKS_V2,
    OTHER_KEY,
    SERVER_PUB,
    V1,
    V2,
    VECTORS,
    actions,
    dump,
    events,
    load,
    modernize,
    player_key,
    pub_hex,
    reseal,
    sign,
)


@dataclass
class Case:
    name: str
    text: str
    expect: str | None  # the failing check, or None for a verdict of ok
    key: str | None = None
    evidence: str | None = None
    allow_v1: bool = False
    message: str | None = None  # a text the failure's message must hold
    notes: list[str] = field(default_factory=list)


def expected_checks(t: dict[str, Any], evidence: bool) -> tuple[list[str], list[str]]:
    """Which checks pass and which are skipped for a good transcript, by docs/fairness.md
    §14 as this verifier reads it (see the report for the readings)."""
    v2 = t["protocol"] == V2
    names = CHECKS_V2 if v2 else CHECKS_V1
    log = t["log"]

    def has(i: int, kind: str) -> bool:
        return len(log) > i and log[i]["type"] == kind

    seed = t["server_seed"] != ""
    skipped: set[str] = set()
    if v2 and not has(1, "commitments"):
        skipped.add("player_signatures")
    if not seed:
        skipped.add("server_commit")
    if not has(2, "reveals"):
        skipped.add("player_seeds")
    if not seed or not has(2, "reveals"):
        skipped.add("deck")
    nothing_replayed = not seed or not has(2, "reveals") or not has(3, "deal")
    if nothing_replayed:
        skipped |= {"replay", "penalties"}
        # `deal` judges a void at record 3 when too few seats are dealt in (D29; v1: fewer than two)
        dealt = [e for e in log[2]["reveals"] if e["status"] != "withheld"] if has(2, "reveals") else []
        if not seed or not has(2, "reveals") or len(dealt) >= (1 if v2 else 2):
            skipped.add("deal")
    if log[-1]["type"] == "void":
        skipped |= {"points", "settlement"}
    if not evidence:
        skipped.add("evidence")
    return [n for n in names if n not in skipped], [n for n in names if n in skipped]


# ------------------------------------------------------------------ tampered variants


def end_event(t: dict[str, Any]) -> dict[str, Any]:
    return events(t, "end")[-1][1]


def card_value(t: dict[str, Any], card: int) -> int:
    decks = 3 if t["log"][0]["header"]["rules"]["seats"] == 8 else 2
    indicator = events(t, "deal")[0][1]["data"]["wild_indicator"]
    wild_rank = None if indicator >= decks * 52 else indicator % 13
    if card >= decks * 52 or card % 13 == wild_rank:
        return 0
    rank = card % 13
    return 10 if rank == 0 or rank >= 9 else rank + 1


def flip(hexstr: str) -> str:
    return ("1" if hexstr[0] != "1" else "2") + hexstr[1:]


def nested(depth: int) -> Any:
    x: Any = []
    for _ in range(depth - 1):
        x = [x]
    return x


V2E = "v2-transcript-6seat-everything.json"
V1E = "transcript-6seat-everything.json"
V2L = "v2-transcript-8seat-seeds-and-leaves.json"
V2H = "v2-transcript-headsup-withheld.json"
V2T = "v2-transcript-4seat-two-players.json"
V2VM = "v2-transcript-void-mid-hand.json"
V2VS = "v2-transcript-void-seed-lost.json"
V1V = "transcript-void.json"
EVID = "v2-evidence-4seat-two-players-seat1.json"


class Builder:
    """Collects the cases; a case whose base vector is missing is left out."""

    def __init__(self) -> None:
        self.cases: list[Case] = []
        self.present = {p.name for p in VECTORS.glob("*.json")}

    def add(
        self, name: str, base: str, fn: Callable[[dict[str, Any]], Any] | None, expect: str | None, **kw: Any
    ) -> None:
        """A variant of vector `base`: fn tampers with it, then it is re-sealed (kw: reseal options,
        key=, evidence=, allow_v1=, message=, after= a second tampering after re-sealing, which
        may return the evidence as a list of items). A v2 vector signed before the amendments
        is brought under them first (tests.webverify_tooling.modernize)."""
        if base not in self.present:
            return
        t = load(base)
        changed = modernize(t)
        if fn is not None:
            fn(t)
        opts = {k: kw.pop(k) for k in ("players", "header", "chain", "transcript", "server", "seats") if k in kw}
        after = kw.pop("after", None)
        if fn is not None or opts or changed:
            reseal(t, **opts)
        if after is not None:
            got = after(t)
            if isinstance(got, list):
                kw["evidence"] = json.dumps(got)
        kw.setdefault("allow_v1", t["protocol"] == V1)
        self.cases.append(Case(name, dump(t), expect, **kw))

    def text_case(self, name: str, base: str, edit: Callable[[str], str], expect: str | None) -> None:
        if base not in self.present:
            return
        t = load(base)
        if modernize(t):
            reseal(t)
        self.cases.append(Case(name, edit(json.dumps(t)), expect))


def transcript_cases(b: Builder) -> None:
    """Variants of the vectors for every check of §14 (the amendments' own cases aside)."""
    cases = b.cases
    present = b.present
    add = b.add
    text_case = b.text_case

    # §2: unreadable input
    text_case("read: a duplicate key", V2E, lambda s: '{"hand_no": 46, ' + s[1:], "read")
    text_case("read: a fraction", V2E, lambda s: s.replace('"hand_no": 46', '"hand_no": 46.0', 1), "read")
    text_case("read: an exponent", V2E, lambda s: s.replace('"hand_no": 46', '"hand_no": 4.6e1', 1), "read")
    text_case("read: -0", V2E, lambda s: s.replace('"commission_bps": 1000', '"commission_bps": -0', 1), "read")
    text_case(
        "read: an integer beyond 2^53-1",
        V2E,
        lambda s: s.replace('"point_value": 3', '"point_value": 9007199254740992', 1),
        "read",
    )
    text_case("read: the top level is a list", V2E, lambda s: "[" + s + "]", "read")
    text_case("read: not JSON", V2E, lambda s: s[:-1], "read")
    text_case("read: a byte order mark", V2E, lambda s: "\ufeff" + s, "read")
    text_case(
        "read: a raw control character in a string",
        V2VM,
        lambda s: s.replace('"reason": "', '"reason": "\t', 1),
        "read",
    )
    text_case(
        "read: an unpaired surrogate escape",
        V2VM,
        lambda s: s.replace('"reason": "', '"reason": "\\ud800', 1),
        "read",
    )

    def deep(depth: int) -> Callable[[dict[str, Any]], None]:
        # top object 1, log 2, record 3, events 4, event 5, data 6: the lists add the rest
        def fn(t: dict[str, Any]) -> None:
            t["log"][3]["events"][0]["data"]["x"] = nested(depth - 6)

        return fn

    if V2E in present:
        for depth, expect in ((65, "read"), (64, "deal")):
            t = load(V2E)
            deep(depth)(t)
            reseal(t)
            cases.append(Case(f"read: nesting {depth} deep", json.dumps(t), expect))

    # §13: format
    add("format: an extra top-level field", V2E, lambda t: t.update(extra=1), "format")
    add("format: an action record without t", V2E, lambda t: actions(t)[0].pop("t"), "format")
    add("format: commit_ms 0", V2E, lambda t: t["log"][0]["header"].update(commit_ms=0), "format")
    add("format: a wrong rules_id", V2E, lambda t: t["log"][0]["header"].update(rules_id="00" * 32), "format")
    add("format: a wrong face in deck_faces", V2E, lambda t: t["deck_faces"].__setitem__(0, "ZZ"), "format")
    add("format: a duplicate card in the deck", V2E, lambda t: t["deck"].__setitem__(1, t["deck"][0]), "format")
    add("format: a card id as a string", V2E, lambda t: actions(t, "discard")[0]["action"].update(card="5"), "format")
    add("format: a hint on a discard", V2E, lambda t: actions(t, "discard")[0]["action"].update(hint=[[1]]), "format")
    add("format: 131 points", V2E, lambda t: t["result"]["points"].update({"0": 131}), "format")
    add(
        "format: a revealed seed without psig",
        V2E,
        None,
        "format",
        after=lambda t: (t["log"][2]["reveals"][0].update(psig=None), reseal(t, players=False)),
    )
    add("format: record numbers out of order", V2E, lambda t: t["log"][5].update(i=6), "format")
    add("format: a seat number as text", V2E, lambda t: actions(t)[0]["action"].update(seat="1"), "format")

    def space_in_table_id(t: dict[str, Any]) -> None:
        t["table_id"] = t["log"][0]["header"]["table_id"] = t["log"][1]["commitments"]["table_id"] = "table rich"

    add("format: a space in table_id", V2E, space_in_table_id, "format")
    add("format (v1): a header record with t", V1E, lambda t: t["log"][0].update(t=1), "format")
    add("format (v1): an action with psig", V1E, lambda t: actions(t)[0].update(psig=None), "format")

    def void_with_result(t: dict[str, Any]) -> None:
        t["result"] = load(V2E)["result"]

    add("format: a void hand with a result", V2VM, void_with_result, "format")
    add("format: a log that stops mid-hand without a void", V2VM, lambda t: t["log"].pop(), "format")

    def void_after_end(t: dict[str, Any]) -> None:
        t["log"].append(
            {"i": len(t["log"]), "t": t["log"][-1]["t"] + 1, "h": "00" * 32, "type": "void", "reason": "late"}
        )

    add("format: a void after a hand that ended, result kept", V2H, void_after_end, "format")

    # §9: signature
    add(
        "signature: the transcript signature",
        V2E,
        None,
        "signature",
        after=lambda t: t.update(signature=flip(t["signature"])),
    )
    add("signature: another pinned key", V2E, None, "signature", key=pub_hex(OTHER_KEY))
    add("signature: the right pinned key", V2E, None, None, key=SERVER_PUB)
    add(
        "signature: a header changed after signing",
        V2E,
        lambda t: t["log"][0]["header"].update(commit_ms=10001),
        "signature",
        header=False,
    )

    def bad_commitments_sig(t: dict[str, Any]) -> None:
        t["log"][1]["sig"] = flip(t["log"][1]["sig"])
        reseal(t, players=False, header=False)

    add("signature: the commitments signature", V2E, None, "signature", after=bad_commitments_sig)
    add(
        "signature (v1): the header signature",
        V1E,
        lambda t: t["log"][0].update(sig=flip(t["log"][0]["sig"])),
        "signature",
        header=False,
    )
    add(
        "signature: everything signed by another key",
        V2E,
        None,
        "signature",
        after=lambda t: t.update(
            signature=sign(OTHER_KEY, V2, "transcript", {k: v for k, v in t.items() if k != "signature"})
        ),
    )

    # §9: player signatures
    add(
        "player_signatures: a draw without psig",
        V2E,
        lambda t: actions(t, "draw_closed")[0].update(psig=None),
        "player_signatures",
    )

    def timeout_psig(t: dict[str, Any]) -> None:
        r = actions(t, "timeout")[0]
        r["psig"] = {"prev": t["log"][r["i"] - 1]["h"], "sig": "00" * 64}

    add("player_signatures: a timeout with psig", V2E, timeout_psig, "player_signatures")

    def prev_two_back(t: dict[str, Any]) -> None:
        r = actions(t, "discard")[3]
        r["psig"]["prev"] = t["log"][r["i"] - 2]["h"]

    add("player_signatures: a discard signed over an older record", V2E, prev_two_back, "player_signatures")

    def leave_prev(t: dict[str, Any]) -> None:
        r = actions(t, "leave")[-1]
        r["psig"]["prev"] = t["log"][2]["h"]

    # §9 (2026-12): a leave is signed over the record it follows, like every action
    add(
        "player_signatures: a leave signed over an earlier record",
        V2L,
        leave_prev,
        "player_signatures",
        message="prev is not the h of the record before it",
    )
    add(
        "player_signatures: a commit's psig",
        V2E,
        None,
        "player_signatures",
        after=lambda t: (
            t["log"][1]["commitments"]["commits"][2].update(
                psig=flip(t["log"][1]["commitments"]["commits"][2]["psig"])
            ),
            reseal(t, players=False),
        ),
    )

    def discard_other_card(t: dict[str, Any]) -> None:
        r = actions(t, "discard")[0]
        r["action"]["card"] = r["events"][0]["data"]["card"] = t["log"][3]["events"][2]["private"]["cards"][0]

    add(
        "player_signatures: a discard changed after signing",
        V2E,
        discard_other_card,
        "player_signatures",
        players=False,
    )

    def reveal_by_other(t: dict[str, Any]) -> None:
        reseal(t)
        e = t["log"][2]["reveals"][0]
        body = {
            "table_id": t["table_id"],
            "hand_no": t["hand_no"],
            "prev": t["log"][1]["h"],
            "move": {"kind": "reveal", "seat": e["seat"], "seed": e["seed"]},
        }
        e["psig"] = sign(player_key(99), V2, "move", body)
        reseal(t, players=False)

    add("player_signatures: a reveal signed by another key", V2E, None, "player_signatures", after=reveal_by_other)

    # §5: commitments
    add(
        "server_commit: another server seed",
        V2E,
        lambda t: t.update(server_seed=hashlib.sha256(b"x").hexdigest()),
        "server_commit",
    )
    add(
        "server_commit (v1 void)",
        V1V,
        lambda t: t.update(server_seed=hashlib.sha256(b"x").hexdigest()),
        "server_commit",
    )
    add(
        "player_seeds: another seed",
        V2E,
        lambda t: t["log"][2]["reveals"][1].update(seed=hashlib.sha256(b"y").hexdigest()),
        "player_seeds",
    )
    add(
        "player_seeds: revealed without a commitment",
        V2E,
        lambda t: t["log"][1]["commitments"]["commits"][1].update(commit=None, psig=None),
        "player_seeds",
    )

    def no_commit_with_commit(t: dict[str, Any]) -> None:
        for c in t["log"][1]["commitments"]["commits"]:
            if c["commit"] is None:
                c["commit"] = "ab" * 32
                c["psig"] = "00" * 64

    add("player_seeds: no_commit with a commitment", V2L, no_commit_with_commit, "player_seeds")
    add(
        "player_seeds (v1): another seed",
        V1E,
        lambda t: t["log"][2]["reveals"][0].update(seed="00" * 32),
        "player_seeds",
    )
    add(
        "player_seeds (v1): a 16-byte seed",
        V1E,
        lambda t: t["log"][2]["reveals"][0].update(seed="00" * 16),
        "player_seeds",
    )
    add(
        "player_seeds (v1): an empty revealed seed",
        V1E,
        lambda t: t["log"][2]["reveals"][0].update(seed=""),
        "player_seeds",
    )
    add(
        "format (v1): a revealed seed of odd length",
        V1E,
        lambda t: t["log"][2]["reveals"][0].update(seed="abc"),
        "format",
    )
    add("format: a 16-byte seed in v2", V2E, lambda t: t["log"][2]["reveals"][0].update(seed="00" * 16), "format")

    # §6-8: the deck
    def swap_deck(t: dict[str, Any]) -> None:
        d, f = t["deck"], t["deck_faces"]
        d[0], d[1] = d[1], d[0]
        f[0], f[1] = f[1], f[0]

    add("deck: two cards swapped", V2E, swap_deck, "deck")
    add("deck (v1): two cards swapped", V1E, swap_deck, "deck")
    add("deck: no deck published", V2E, lambda t: t.update(deck=[], deck_faces=[]), "deck")
    add(
        "deck: a deck published for a seed never revealed",
        V2VS,
        lambda t: t.update(
            deck=list(range(106)), deck_faces=load(V2E)["deck_faces"] and [face(c, 2) for c in range(106)]
        ),
        "deck",
    )

    # A.2: the deal
    def swap_hands(t: dict[str, Any]) -> None:
        ev = t["log"][3]["events"]
        a, b = ev[1]["private"]["cards"], ev[2]["private"]["cards"]
        a[0], b[0] = b[0], a[0]

    add("deal: a card moved between hands", V2E, swap_hands, "deal")
    add("deal (v1): a card moved between hands", V1E, swap_hands, "deal")
    add(
        "deal: another wild indicator", V2E, lambda t: t["log"][3]["events"][0]["data"].update(wild_indicator=0), "deal"
    )
    add("deal: another first player", V2E, lambda t: t["log"][3]["events"][0]["data"].update(first=3), "deal")
    add(
        "penalties: a forfeit charged 40",
        V2L,
        lambda t: events(t, "forfeit")[0][1]["data"].update(points=40),
        "penalties",
    )

    # Appendix A: the replay
    def draw_other(t: dict[str, Any]) -> None:
        for _, e in events(t, "draw"):
            if e["data"]["source"] == "closed":
                e["private"]["card"] += 1
                return

    add("replay: another closed card drawn", V2E, draw_other, "replay")
    add("replay (v1): another closed card drawn", V1E, draw_other, "replay")
    add(
        "replay: a discard marked by_clock",
        V2E,
        lambda t: events(t, "discard")[0][1]["data"].update(by_clock=True),
        "replay",
    )
    add("replay: the log ends before the hand", V2E, lambda t: t["log"].pop(), "replay")

    def regroup(t: dict[str, Any]) -> None:
        e = next(e for _, e in events(t, "declare") if e["data"]["valid"])
        e["data"]["groups"] = [list(reversed(g)) for g in reversed(e["data"]["groups"])]

    add("replay: the declare shown in another order (B.3)", V2E, regroup, None)
    add("replay (v1): the declare shown in another order (B.3)", V1E, regroup, None)

    def one_group(t: dict[str, Any]) -> None:
        e = next(e for _, e in events(t, "declare") if e["data"]["valid"])
        e["data"]["groups"] = [[c for g in e["data"]["groups"] for c in g]]

    add("replay: the declare shown as one group", V2E, one_group, "replay")

    def hands_reversed(t: dict[str, Any]) -> None:
        hands = end_event(t)["data"]["hands"]
        k = sorted(hands)[0]
        hands[k] = list(reversed(hands[k]))

    add("replay: the end's hands in another order", V2E, hands_reversed, "replay")

    def after_end(t: dict[str, Any]) -> None:
        last = copy.deepcopy(actions(t, "draw_closed")[-1])
        last["i"] = len(t["log"])
        last["t"] = t["log"][-1]["t"] + 1
        last["events"] = []
        last["psig"]["prev"] = t["log"][-1]["h"]
        t["log"].append(last)

    add("replay: an action after the end", V2E, after_end, "replay")
    add("replay: the end's reason", V2E, lambda t: end_event(t)["data"].update(reason="last_standing"), "replay")

    def discard_not_held(t: dict[str, Any]) -> None:
        r = actions(t, "discard")[0]
        card = t["log"][3]["events"][0]["data"]["wild_indicator"]
        r["action"]["card"] = r["events"][0]["data"]["card"] = card

    add("replay: a discard of a card not held", V2E, discard_not_held, "replay")
    add("replay: a turn number", V2E, lambda t: events(t, "turn")[3][1]["data"].update(turn_no=99), "replay")
    add("replay: the clock's missed count", V2E, lambda t: events(t, "clock")[0][1]["data"].update(missed=2), "replay")
    add(
        "replay: the reshuffled pile",
        V2E,
        lambda t: events(t, "reshuffle")[0][1]["private"]["closed"].reverse(),
        "replay",
    )

    def open_to_closed(t: dict[str, Any]) -> None:
        actions(t, "draw_open")[0]["action"]["kind"] = "draw_closed"

    add("replay: a void hand's draw changed", V2VM, open_to_closed, "replay")

    # time
    def early_timeout(t: dict[str, Any]) -> None:
        log = t["log"]
        r = actions(t, "timeout")[0]
        start = max(i for i in range(r["i"]) if any(e["kind"] == "turn" for e in log[i].get("events", [])))
        r["t"] = log[start]["t"] + 1000 * log[0]["header"]["rules"]["turn_seconds"] - 1
        assert r["t"] >= log[r["i"] - 1]["t"]

    add("time: a timeout before the turn's time", V2E, early_timeout, "time")
    add("time: t decreases", V2E, lambda t: t["log"][5].update(t=t["log"][4]["t"] - 1), "time")
    add(
        "time: the commit window closed early",
        V2L,
        lambda t: t["log"][1].update(t=t["log"][0]["t"] + t["log"][0]["header"]["commit_ms"] - 1),
        "time",
    )
    add(
        "time: the reveal window closed early",
        V2H,
        lambda t: t["log"][2].update(t=t["log"][1]["t"] + t["log"][0]["header"]["reveal_ms"] - 1),
        "time",
    )

    # B: points
    def counted_plus_one(t: dict[str, Any]) -> None:
        c = end_event(t)["data"]["counted"]
        c[sorted(c)[0]]["points"] += 1

    add("points: a counted seat's points", V2E, counted_plus_one, "points")
    add("points (v1): a counted seat's points", V1E, counted_plus_one, "points")

    def worse_arrangement(t: dict[str, Any]) -> None:
        c = end_event(t)["data"]["counted"]
        seat = next(s for s in sorted(c) if c[s]["groups"])
        cards_ = [x for g in c[seat]["groups"] for x in g] + c[seat]["loose"]
        c[seat] = {"points": sum(card_value(t, x) for x in cards_), "groups": [], "loose": cards_}

    add("points: a count that is not the best", V2E, worse_arrangement, "points")

    def other_arrangement_order(t: dict[str, Any]) -> None:
        c = end_event(t)["data"]["counted"]
        for v in c.values():
            v["groups"] = [list(reversed(g)) for g in reversed(v["groups"])]
            v["loose"].reverse()

    add("points: counts shown in another order (B.3)", V2E, other_arrangement_order, None)
    add(
        "points: a counted seat left out",
        V2E,
        lambda t: end_event(t)["data"]["counted"].pop(sorted(end_event(t)["data"]["counted"])[0]),
        "points",
    )

    def result_points(t: dict[str, Any]) -> None:
        seat = sorted(end_event(t)["data"]["counted"])[0]
        t["result"]["points"][seat] += 3

    add("points: a counted seat's points in the result", V2E, result_points, "points")
    add("points: the result's winner", V2E, lambda t: t["result"].update(winner=4), "points")

    # penalties
    add(
        "penalties: a first drop charged 40",
        V2E,
        lambda t: events(t, "drop")[0][1]["data"].update(points=40),
        "penalties",
    )
    add(
        "penalties (v1): a first drop charged 40",
        V1E,
        lambda t: events(t, "drop")[0][1]["data"].update(points=40),
        "penalties",
    )
    add(
        "penalties: a wrong declare charged 40",
        V2E,
        lambda t: next(e for _, e in events(t, "declare") if not e["data"]["valid"])["data"].update(points=40),
        "penalties",
    )
    add(
        "penalties: a departure charged 20",
        V2L,
        lambda t: events(t, "leave")[0][1]["data"].update(points=20),
        "penalties",
    )

    def wrong_declarer_in_result(t: dict[str, Any]) -> None:
        seat = next(e for _, e in events(t, "declare") if not e["data"]["valid"])["seat"]
        t["result"]["points"][str(seat)] = 60

    add("penalties: a wrong declare in the result", V2E, wrong_declarer_in_result, "penalties")
    add(
        "penalties: a withheld seat not charged in the result",
        V2H,
        lambda t: t["result"]["points"].update({"1": 0}),
        "penalties",
    )

    # settlement
    def delta_plus_one(t: dict[str, Any]) -> None:
        st = t["result"]["settlement"]
        st["deltas"][str(st["winner"])] += 1

    add("settlement: the winner's delta", V2E, delta_plus_one, "settlement")
    add("settlement (v1): the winner's delta", V1E, delta_plus_one, "settlement")
    add(
        "settlement: the end event's commission",
        V2E,
        lambda t: end_event(t)["data"]["settlement"].update(commission=55),
        "settlement",
    )
    add("settlement: the pot", V2E, lambda t: t["result"]["settlement"].update(pot=547), "settlement")
    add(
        "settlement: points in the settlement",
        V2E,
        lambda t: t["result"]["settlement"]["points"].update({"0": 21}),
        "settlement",
    )
    add("settlement: heads-up", V2H, lambda t: t["result"]["settlement"]["deltas"].update({"0": 99}), "settlement")

    # chain
    add(
        "chain: the head",
        V2E,
        None,
        "chain",
        after=lambda t: (t.update(head=flip(t["head"])), reseal(t, players=False, header=False, chain=False)),
    )

    def last_h(t: dict[str, Any]) -> None:
        t["log"][-1]["h"] = t["head"] = flip(t["head"])
        reseal(t, players=False, header=False, chain=False)

    add("chain: the last record's h", V2E, None, "chain", after=last_h)
    add(
        "chain (v1): an action's t changed",
        V1E,
        lambda t: actions(t)[3].update(t=actions(t)[3]["t"] + 1),
        "chain",
        chain=False,
    )
    add("chain (v1): prev_head", V1E, lambda t: t["log"][0]["header"].update(prev_head="11" * 32), "chain", chain=False)
    add("chain: prev_head re-chained", V2E, lambda t: t["log"][0]["header"].update(prev_head="11" * 32), None)

    # more corners of Appendix A and B.3
    def declare_hint(good: bool) -> Callable[[dict[str, Any]], None]:
        def fn(t: dict[str, Any]) -> None:
            r = next(r for r in actions(t, "declare") if r["events"][0]["data"]["valid"])
            groups = [list(g) for g in r["events"][0]["data"]["groups"]]
            if not good:
                groups[0][0] = r["action"]["card"]
            r["action"]["hint"] = groups

        return fn

    add("replay: a declare with its hint", V2E, declare_hint(True), None)
    add("replay: a declare whose hint is not the kept cards", V2E, declare_hint(False), "replay")

    def drop_after_draw(t: dict[str, Any]) -> None:
        r = actions(t, "discard")[2]
        r["action"] = {"kind": "drop", "seat": r["action"]["seat"]}

    add("replay: a drop after drawing", V2E, drop_after_draw, "replay")
    add(
        "replay: an event with an extra field",
        V2E,
        lambda t: events(t, "discard")[0][1]["private"].update(x=1),
        "replay",
    )
    add(
        "settlement: the end event without settlement",
        V2E,
        lambda t: end_event(t)["data"].pop("settlement"),
        "settlement",
    )
    add("points: the end event without counted", V2E, lambda t: end_event(t)["data"].pop("counted"), "points")
    add(
        "penalties: a drop event without points",
        V2E,
        lambda t: events(t, "drop")[0][1]["data"].pop("points"),
        "penalties",
    )
    add(
        "replay: a valid declare without groups",
        V2E,
        lambda t: next(e for _, e in events(t, "declare") if e["data"]["valid"])["data"].pop("groups"),
        "replay",
    )
    add(
        "replay: a declare group with a card id out of the pack",
        V2E,
        lambda t: next(e for _, e in events(t, "declare") if e["data"]["valid"])["data"]["groups"][0].append(999),
        "replay",
    )
    add(
        "points: a count with an extra field",
        V2E,
        lambda t: next(iter(end_event(t)["data"]["counted"].values())).update(x=1),
        "points",
    )
    add("settlement: the settlement's winner", V2E, lambda t: t["result"]["settlement"].update(winner=4), "settlement")

    def v1_void_with_dealt_seats(t: dict[str, Any]) -> None:
        t["log"][3:] = [{"i": 3, "h": "00" * 32, "type": "void", "reason": "voided"}]
        t["result"] = None

    add("deal (v1): a void although six seats are dealt in", V1E, v1_void_with_dealt_seats, "deal")

    def v2_void_at_deal(t: dict[str, Any]) -> None:
        t["log"][3:] = [{"i": 3, "t": t["log"][2]["t"] + 5, "h": "00" * 32, "type": "void", "reason": "voided (D33)"}]
        t["result"] = None

    add("void: a v2 hand voided before its deal", V2E, v2_void_at_deal, None)

    def deal_with_nobody(t: dict[str, Any]) -> None:
        seats = [s["seat"] for s in t["log"][0]["header"]["seats"]]
        t["log"][3] = {"i": 3, "t": t["log"][2]["t"] + 5, "h": "00" * 32, "type": "deal", "events": []}
        points = {str(s): 20 for s in seats}
        pay = sum(points.values()) - 20
        deltas = {str(s): -20 for s in seats}
        deltas[str(seats[0])] = pay
        t["result"] = {
            "winner": seats[0],
            "reason": "last_standing",
            "points": points,
            "settlement": {
                "winner": seats[0],
                "point_value": 1,
                "commission_bps": 0,
                "points": points,
                "pot": pay,
                "commission": 0,
                "deltas": deltas,
            },
        }

    add("deal: a deal although no seat is dealt in", "v2-transcript-void-all-withheld.json", deal_with_nobody, "deal")

    # the clock in the discard phase (D22), and a departure out of turn (D25), built from a played hand
    def clock_in_discard_phase(phase: str) -> Callable[[dict[str, Any]], None]:
        def fn(t: dict[str, Any]) -> None:
            log = t["log"]
            timed = {r["action"]["seat"] for r in actions(t, "timeout")}
            k = next(
                k
                for k, r in enumerate(log)
                if r["type"] == "action"
                and r["action"]["kind"] == "discard"
                and r["action"]["seat"] not in timed
                and log[k - 1]["action"]["kind"] == "draw_closed"
                and log[k - 1]["events"][0]["private"]["card"] == r["action"]["card"]
            )
            r = log[k]
            seat, card = r["action"]["seat"], r["action"]["card"]
            start = max(i for i in range(k) if any(e["kind"] == "turn" for e in log[i].get("events", [])))
            delta = max(0, log[start]["t"] + 1000 * log[0]["header"]["rules"]["turn_seconds"] - r["t"])
            for later in log[k:]:
                later["t"] += delta
            r["action"] = {"kind": "timeout", "seat": seat}
            r["psig"] = None
            r["events"] = [
                {"kind": "clock", "seat": seat, "data": {"missed": 1, "phase": phase}, "private": {}},
                {"kind": "discard", "seat": seat, "data": {"card": card, "by_clock": True}, "private": {}},
                r["events"][1],
            ]

        return fn

    add("replay: the clock discards the card drawn (D22)", V2E, clock_in_discard_phase("discard"), None)
    add("replay: the clock's phase", V2E, clock_in_discard_phase("draw"), "replay")

    def settle(points: dict[str, int], winner: int, rules: dict[str, int]) -> dict[str, Any]:
        pays = {s: p * rules["point_value"] for s, p in points.items() if s != str(winner)}
        pot = sum(pays.values())
        commission = pot * rules["commission_bps"] // 10000
        deltas = {s: -v for s, v in pays.items()} | {str(winner): pot - commission}
        return {
            "winner": winner,
            "point_value": rules["point_value"],
            "commission_bps": rules["commission_bps"],
            "points": dict(points),
            "pot": pot,
            "commission": commission,
            "deltas": deltas,
        }

    def leave_out_of_turn(t: dict[str, Any]) -> None:
        log = t["log"]
        last = log[-1]
        end = last["events"][-1]["data"]
        seat = int(sorted(end["counted"])[0])
        leave = {
            "i": last["i"],
            "t": log[-2]["t"] + 1,
            "h": "",
            "type": "action",
            "action": {"kind": "leave", "seat": seat},
            "psig": {"prev": log[-2]["h"], "sig": ""},  # signed over the record it follows (§9)
            "events": [
                {"kind": "leave", "seat": seat, "data": {"points": 40}, "private": {"cards": end["hands"][str(seat)]}}
            ],
        }
        last["i"] += 1
        last["psig"]["prev"] = ""
        log.insert(len(log) - 1, leave)
        del end["counted"][str(seat)], end["hands"][str(seat)]
        t["result"]["points"][str(seat)] = 40
        st = settle(t["result"]["points"], t["result"]["winner"], log[0]["header"]["rules"])
        t["result"]["settlement"] = st
        end["settlement"] = copy.deepcopy(st)

    add("replay: a seat leaves while another is on turn (D25)", V2E, leave_out_of_turn, None)

    # void hands
    def void_after_a_drop(t: dict[str, Any]) -> None:
        log = t["log"]
        k = next(r["i"] for r in actions(t, "drop"))
        log[k + 1 :] = [{"i": k + 1, "t": log[k]["t"] + 1, "h": "", "type": "void", "reason": "voided (D33)"}]
        t["result"] = None

    add("void: a hand voided after a drop", V2E, void_after_a_drop, None)
    add(
        "penalties: a void hand's drop charged 40",
        V2E,
        lambda t: (void_after_a_drop(t), events(t, "drop")[0][1]["data"].update(points=40)),
        "penalties",
    )

    # §12 (2026-12): once the reveals are recorded, the seed is published, void or not
    add(
        "format: a void after the reveals with an empty seed",
        V2VM,
        lambda t: t.update(server_seed="", deck=[], deck_faces=[]),
        "format",
        message="server_seed",
    )
    add(
        "void: an empty seed in a hand that was not void",
        V2E,
        lambda t: t.update(server_seed="", deck=[], deck_faces=[]),
        "format",
    )


def face(card: int, decks: int) -> str:
    if card >= decks * 52:
        return "JK"
    return "A23456789TJQK"[card % 13] + "SHDC"[(card % 52) // 13]
