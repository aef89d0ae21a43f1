"""Mutations of the transcript's own fields and of its header: any field, any key,
the protocol, the table and hand, the seed and deck, the rules, the seats, the seed
windows, the previous head.
"""

from __future__ import annotations

import copy
import hashlib
import random
from typing import Any

from bench.transcript_fuzz.common import MAX_SAFE, V1, V2, ZERO, NotHere, _short
from bench.transcript_fuzz.paths import get, header, put, records, walk
from bench.transcript_fuzz.seal import fuzz_player
from bench.transcript_fuzz.variants import str_variants, variants
from verifier.fairness import rules_id


def m_any_field(t: dict[str, Any], rng: random.Random) -> str:
    """Any value anywhere, replaced by a variant (weighted away from long card lists)."""
    paths = [p for p, _ in walk(t) if p and not (len(p) >= 1 and p[-1] in ("signature",))]
    p = rng.choice(paths)
    v = get(t, p)
    new = rng.choice(variants(v))
    put(t, p, new)
    return f"field {'/'.join(map(str, p))}: {_short(v)} -> {_short(new)}"


def m_structural(t: dict[str, Any], rng: random.Random) -> str:
    """A key deleted or added, anywhere."""
    dicts = [(p, v) for p, v in walk(t) if isinstance(v, dict)]
    p, d = rng.choice(dicts)
    if d and rng.random() < 0.6:
        k = rng.choice(sorted(d))
        del d[k]
        return f"delete {'/'.join(map(str, (*p, k)))}"
    k = rng.choice(["extra", "x", "h2", "sig2", "note", "Type", "i ", "hint", "card", "psig", "t", "reason"])
    if k in d:
        raise NotHere
    d[k] = rng.choice([0, 1, None, "", "x", [], {}])
    return f"add {'/'.join(map(str, (*p, k)))}"


def m_transcript_field(t: dict[str, Any], rng: random.Random) -> str:
    f = rng.choice(["protocol", "table_id", "hand_no", "server_seed", "deck", "deck_faces", "result", "head"])
    v = t.get(f)
    if f == "protocol":
        new: Any = rng.choice([V1, V2, "rummy-pf/v3", "RUMMY-PF/V2", "rummy-pf/v2 ", None, 2])
        if rng.random() < 0.6 and isinstance(new, str):
            header(t)["protocol"] = new
    elif f in ("table_id", "hand_no"):
        new = rng.choice(variants(v))
        if rng.random() < 0.7:
            header(t)[f] = new
            for _, r in records(t, "commitments"):
                r["commitments"][f] = new
    elif f == "server_seed":
        new = rng.choice(["", str(v).upper(), "00" * 32, str(v)[:-2], "ab" * 33, 7])
        if rng.random() < 0.5 and isinstance(new, str) and len(new) == 64:
            header(t)["commit_s"] = hashlib.sha256(bytes.fromhex(new)).hexdigest()
    elif f == "deck":
        new = rng.choice([[], list(reversed(v or [])), (v or [])[:-1], [*(v or []), 0], sorted(v or [])])
        if rng.random() < 0.5:
            t["deck_faces"] = [] if not new else t.get("deck_faces")
    elif f == "deck_faces":
        faces = list(v or [])
        if not faces:
            raise NotHere
        k = rng.randrange(len(faces))
        faces[k] = rng.choice(
            [faces[k].lower(), "10" + faces[k][-1:], "Jk", "jk", "JK", "XX", faces[(k + 1) % len(faces)], "AS", ""]
        )
        new = faces
    elif f == "result":
        new = rng.choice([None, {}, copy.deepcopy(v)])
    else:
        new = rng.choice([ZERO, str(v).upper(), t["log"][0].get("h")])
    t[f] = new
    return f"transcript {f} -> {_short(new)}"


RULE_BOUNDS: dict[str, list[Any]] = {
    "seats": [4, 6, 8, 2, 3, 5, 7, 10, 0],
    "point_value": [1, 0, 7_692_307_692_307, 7_692_307_692_308, MAX_SAFE, -1, 10],
    "commission_bps": [0, 10_000, 10_001, 9_999, 1, -1, 5_000],
    "turn_seconds": [1, 0, 3600, 3601, 30],
    "max_missed_turns": [1, 0, 100, 101, 2],
    "min_players": [2, 1, 0, 3, 4, 6, 8, 9],
}


def m_rules(t: dict[str, Any], rng: random.Random) -> str:
    """A rule changed, its rules_id usually recomputed (the house signs both)."""
    h = header(t)
    f = rng.choice(sorted(RULE_BOUNDS))
    h["rules"][f] = rng.choice(RULE_BOUNDS[f])
    fixed = rng.random() < 0.85
    if fixed:
        try:
            h["rules_id"] = rules_id(h["rules"])
        except (TypeError, ValueError):
            pass
    return f"rules {f} -> {h['rules'][f]}{' (rules_id recomputed)' if fixed else ''}"


def m_seats(t: dict[str, Any], rng: random.Random) -> str:
    h = header(t)
    seats = h["seats"]
    op = rng.choice(["drop", "swap", "dup_id", "dup_key", "renumber", "dealer", "dealer_unlisted", "id", "add"])
    if op == "drop" and len(seats) > 1:
        k = rng.randrange(len(seats))
        gone = seats.pop(k)
        if rng.random() < 0.6:  # drop the seat from the seed lists too
            for _, r in records(t, "commitments"):
                r["commitments"]["commits"] = [c for c in r["commitments"]["commits"] if c.get("seat") != gone["seat"]]
            for _, r in records(t, "reveals"):
                r["reveals"] = [c for c in r["reveals"] if c.get("seat") != gone["seat"]]
        return f"seats: drop seat {gone['seat']}"
    if op == "swap" and len(seats) > 1:
        k = rng.randrange(len(seats) - 1)
        seats[k], seats[k + 1] = seats[k + 1], seats[k]
        return f"seats: swap {k} and {k + 1}"
    if op == "dup_id" and len(seats) > 1:
        seats[1]["player_id"] = seats[0]["player_id"]
        return "seats: two seats, one player_id"
    if op == "dup_key" and len(seats) > 1:
        seats[1]["player_key"] = seats[0]["player_key"]
        return "seats: two seats, one key"
    if op == "renumber":
        k = rng.randrange(len(seats))
        old = seats[k]["seat"]
        new = rng.choice([x for x in range(-1, 9) if x != old])
        seats[k]["seat"] = new
        if rng.random() < 0.7:
            for _, r in records(t, "commitments"):
                for c in r["commitments"]["commits"]:
                    if c.get("seat") == old:
                        c["seat"] = new
            for _, r in records(t, "reveals"):
                for c in r["reveals"]:
                    if c.get("seat") == old:
                        c["seat"] = new
        return f"seats: seat {old} renumbered {new}"
    if op == "dealer":
        h["dealer"] = rng.choice(seats)["seat"]
        return f"dealer -> {h['dealer']}"
    if op == "dealer_unlisted":
        listed = {s["seat"] for s in seats}
        h["dealer"] = rng.choice([x for x in range(8) if x not in listed] or [9])
        return f"dealer -> unlisted {h['dealer']}"
    if op == "id":
        k = rng.randrange(len(seats))
        seats[k]["player_id"] = rng.choice(str_variants(seats[k]["player_id"]))
        return f"seats: player_id of {k} -> {_short(seats[k]['player_id'])}"
    if op == "add":
        listed = {s["seat"] for s in seats}
        free = [x for x in range(8) if x not in listed]
        if not free:
            raise NotHere
        s = rng.choice(free)
        seats.append({"seat": s, "player_id": f"p{s}", "player_key": fuzz_player(s).pub})
        seats.sort(key=lambda x: x["seat"] if isinstance(x["seat"], int) else 99)
        return f"seats: add seat {s} (no seed entries)"
    raise NotHere


def m_windows(t: dict[str, Any], rng: random.Random) -> str:
    h = header(t)
    if "commit_ms" not in h:
        raise NotHere
    f = rng.choice(["commit_ms", "reveal_ms"])
    h[f] = rng.choice([1, 1_999, 2_000, 3_600_000, 3_600_001, 0, 10_000, 10_001, h[f] + 1])
    return f"{f} -> {h[f]}"


def m_prev_head(t: dict[str, Any], rng: random.Random) -> str:
    h = header(t)
    new = rng.choice([ZERO, "11" * 32, ZERO.upper(), "0" * 63 + "1"])
    h["prev_head"] = new
    if rng.random() < 0.5:
        n = rng.choice([1, 2, 7])
        t["hand_no"] = h["hand_no"] = n
        for _, r in records(t, "commitments"):
            r["commitments"]["hand_no"] = n
        return f"prev_head -> {new[:8]}…, hand_no -> {n}"
    return f"prev_head -> {new[:8]}…"
