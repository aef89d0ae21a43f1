"""Mutations of the outcome: the result and its settlement, the actions, the
arrangements declared and counted, the penalties.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from bench.transcript_fuzz.common import NotHere, _short
from bench.transcript_fuzz.paths import all_events, end_event, header, records


def _settle(points: dict[str, int], winner: int, pv: int, bps: int) -> dict[str, Any]:
    pot = sum(p * pv for s, p in points.items() if s != str(winner))
    commission = pot * bps // 10000
    deltas = {s: (pot - commission if s == str(winner) else -p * pv) for s, p in points.items()}
    return {
        "winner": winner,
        "point_value": pv,
        "commission_bps": bps,
        "points": dict(points),
        "pot": pot,
        "commission": commission,
        "deltas": deltas,
    }


def m_result(t: dict[str, Any], rng: random.Random) -> str:
    """The result changed — the points charged, the winner, the amounts — alone or with
    the end event, the settlement recomputed or not (a house may sign any of it)."""
    res = t.get("result")
    end = end_event(t)
    if not isinstance(res, dict) or end is None:
        raise NotHere
    rules = header(t)["rules"]
    op = rng.choice(["charge", "charge", "winner", "reason", "amount", "keys", "counted", "hands"])
    what = op
    if op == "charge":
        losers = [s for s in res["points"] if s != str(res["winner"])]
        if not losers:
            raise NotHere
        s = rng.choice(losers)
        new = rng.choice([res["points"][s] + 1, res["points"][s] - 1, 0, 130, 131, 20, 40, 80])
        res["points"][s] = new
        if rng.random() < 0.6 and s in end["data"].get("counted", {}):
            end["data"]["counted"][s]["points"] = new
        if rng.random() < 0.8:
            st = _settle(res["points"], res["winner"], rules["point_value"], rules["commission_bps"])
            res["settlement"] = st
            if rng.random() < 0.8:
                end["data"]["settlement"] = copy.deepcopy(st)
        what = f"seat {s} charged {new}"
    elif op == "winner":
        seats = [s for s in res["points"] if s != str(res["winner"])]
        if not seats:
            raise NotHere
        w = int(rng.choice(seats))
        res["winner"] = w
        if rng.random() < 0.5:
            end["data"]["winner"] = w
            end["seat"] = w
        if rng.random() < 0.7:
            pts = dict(res["points"])
            pts[str(w)] = 0
            res["points"] = pts
            res["settlement"] = _settle(pts, w, rules["point_value"], rules["commission_bps"])
            end["data"]["settlement"] = copy.deepcopy(res["settlement"])
        what = f"winner -> {w}"
    elif op == "reason":
        res["reason"] = "last_standing" if res["reason"] == "declare" else "declare"
        if rng.random() < 0.5:
            end["data"]["reason"] = res["reason"]
        what = f"reason -> {res['reason']}"
    elif op == "amount":
        st = res["settlement"]
        f = rng.choice(["pot", "commission", "deltas", "point_value", "commission_bps", "winner"])
        if f == "deltas":
            k = rng.choice(sorted(st["deltas"]))
            st["deltas"][k] += rng.choice([-1, 1])
        else:
            st[f] = st[f] + rng.choice([-1, 1]) if isinstance(st[f], int) else st[f]
        if rng.random() < 0.5:
            end["data"]["settlement"] = copy.deepcopy(st)
        what = f"settlement {f} by one"
    elif op == "keys":
        form = rng.choice(["0{}", "+{}", " {}", "{}.0", "{} ", "{}_", "٣", "{}\n", "0x{}"])
        target = rng.choice(["points", "deltas", "st_points", "counted", "hands", "end_points"])
        if target == "points":
            d = res["points"]
        elif target == "deltas":
            d = res["settlement"]["deltas"]
        elif target == "st_points":
            d = res["settlement"]["points"]
        elif target == "counted":
            d = end["data"].get("counted") or {}
        elif target == "hands":
            d = end["data"].get("hands") or {}
        else:
            d = end["data"].get("settlement", {}).get("points") or {}
        if not d:
            raise NotHere
        k = rng.choice(sorted(d))
        nk = form.format(k) if "{}" in form else form
        d[nk] = d.pop(k)
        if rng.random() < 0.5 and target in ("points", "deltas", "st_points"):  # the same in the end event
            src = {"points": "points", "deltas": "deltas", "st_points": "points"}[target]
            ed = end["data"].get("settlement", {}).get(src)
            if isinstance(ed, dict) and k in ed:
                ed[nk] = ed.pop(k)
            if target == "st_points" and isinstance(res.get("points"), dict) and k in res["points"]:
                res["points"][nk] = res["points"].pop(k)
        what = f"{target} key {k!r} -> {nk!r}"
    elif op == "counted":
        c = end["data"].get("counted") or {}
        if not c:
            raise NotHere
        k = rng.choice(sorted(c))
        entry = c[k]
        sub = rng.choice(["loose_to_group", "groups_split", "points", "shuffle"])
        if sub == "loose_to_group" and len(entry["loose"]) >= 3:
            entry["groups"].append(entry["loose"][:3])
            entry["loose"] = entry["loose"][3:]
        elif sub == "groups_split" and entry["groups"]:
            g = entry["groups"].pop()
            entry["loose"] += g
        elif sub == "points":
            entry["points"] += rng.choice([-1, 1])
        else:
            rng.shuffle(entry["loose"])
        what = f"counted {k}: {sub}"
    else:
        hands = end["data"].get("hands") or {}
        if not hands:
            raise NotHere
        k = rng.choice(sorted(hands))
        hands[k] = rng.choice([list(reversed(hands[k])), sorted(hands[k]), hands[k][:-1], []])
        what = f"end hands {k}"
    return "result: " + what


def m_actions(t: dict[str, Any], rng: random.Random) -> str:
    acts = records(t, "action")
    if not acts:
        raise NotHere
    i, r = rng.choice(acts)
    a = r["action"]
    seats = [s["seat"] for s in header(t)["seats"]]
    op = rng.choice(["seat", "kind", "card", "hint", "psig_null", "timeout_psig", "prev_older"])
    if op == "seat":
        a["seat"] = rng.choice([s for s in seats if s != a.get("seat")] or [9])
        return f"record {i}: action seat -> {a['seat']}"
    if op == "kind":
        old = a.get("kind")
        a["kind"] = rng.choice(["draw_closed", "draw_open", "drop", "leave", "timeout", "discard", "declare"])
        if a["kind"] not in ("discard", "declare"):
            a.pop("card", None)
        elif "card" not in a:
            a["card"] = 0
        if a["kind"] == "timeout":
            r["psig"] = None
        return f"record {i}: {old} -> {a['kind']}"
    if op == "card" and "card" in a:
        a["card"] = rng.choice([a["card"] + 1, 0, 105, 106, 158, 159, -1])
        return f"record {i}: card -> {a['card']}"
    if op == "hint" and a.get("kind") == "declare":
        ev = next((e for e in r["events"] if e.get("kind") == "declare"), None)
        groups = ev["data"].get("groups") if ev else None
        a["hint"] = rng.choice([groups or [[0, 1, 2]], [], [[a["card"]]], [[1, 2, 3], [4]]])
        return f"record {i}: declare hint {_short(a['hint'])}"
    if op == "psig_null":
        r["psig"] = None
        return f"record {i}: psig null"
    if op == "timeout_psig" and a.get("kind") == "timeout":
        r["psig"] = {"prev": t["log"][i - 1]["h"], "sig": "00" * 64}
        return f"record {i}: a timeout with a psig"
    if op == "prev_older" and isinstance(r.get("psig"), dict) and i > 1:
        r["psig"]["prev"] = t["log"][rng.randrange(0, i - 1)]["h"]
        return f"record {i}: signed over an older record"
    raise NotHere


def m_regroup(t: dict[str, Any], rng: random.Random) -> str:
    """The same arrangement written in another order (the groups, the cards of a
    group, the loose cards): B.3 compares arrangements by validity, never by equality,
    so both verifiers must still pass it; or a group of wild cards (worth 0) made out
    of loose ones, which B.3 refuses alone (one group must then be a pure sequence)."""
    places = []
    for i, _, e in all_events(t):
        d = e.get("data") or {}
        if e.get("kind") == "declare" and isinstance(d.get("groups"), list):
            places.append((f"record {i} declare groups", d, None))
        if e.get("kind") == "end" and isinstance(d.get("counted"), dict):
            for s, c in d["counted"].items():
                places.append((f"record {i} counted {s}", c, s))
    if not places:
        raise NotHere
    what, d, _ = rng.choice(places)
    op = rng.choice(["order", "order", "within", "loose", "wilds"])
    if op == "order" and len(d["groups"]) > 1:
        rng.shuffle(d["groups"])
    elif op == "within" and d["groups"]:
        g = rng.choice(d["groups"])
        rng.shuffle(g)
    elif op == "loose" and len(d.get("loose") or []) > 1:
        rng.shuffle(d["loose"])
    elif op == "wilds" and "loose" in d:
        h = header(t)
        decks = 3 if h["rules"]["seats"] == 8 else 2
        jokers = [c for c in d["loose"] if isinstance(c, int) and c >= decks * 52]
        deal = next((e for _, _, e in all_events(t) if e.get("kind") == "deal"), None)
        ind = deal["data"]["wild_indicator"] if deal else None
        wild_rank = None if ind is None or ind >= decks * 52 else ind % 13
        wilds = jokers + [c for c in d["loose"] if isinstance(c, int) and c < decks * 52 and c % 13 == wild_rank]
        if len(wilds) < 3:
            raise NotHere
        g = wilds[:3]
        d["groups"].append(g)
        d["loose"] = [c for c in d["loose"] if c not in g]
    else:
        raise NotHere
    return f"{what}: {op}"


def m_penalty(t: dict[str, Any], rng: random.Random) -> str:
    """A penalty charged otherwise everywhere the house writes it: the event, the
    result's points, both settlements (the arithmetic redone)."""
    pen = [(i, e) for i, _, e in all_events(t) if e.get("kind") in ("drop", "leave", "forfeit")]
    pen += [(i, e) for i, _, e in all_events(t) if e.get("kind") == "declare" and e["data"].get("valid") is False]
    if not pen:
        raise NotHere
    i, e = rng.choice(pen)
    old = e["data"]["points"]
    new = rng.choice([p for p in (0, 20, 40, 80, 130) if p != old])
    e["data"]["points"] = new
    res, end = t.get("result"), end_event(t)
    seat = str(e["seat"])
    if isinstance(res, dict) and end is not None and rng.random() < 0.8:
        res["points"][seat] = new
        rules = header(t)["rules"]
        res["settlement"] = _settle(res["points"], res["winner"], rules["point_value"], rules["commission_bps"])
        end["data"]["settlement"] = copy.deepcopy(res["settlement"])
    return f"record {i}: {e['kind']} of seat {seat} charged {new}, not {old}, everywhere"
