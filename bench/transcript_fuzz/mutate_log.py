"""Mutations of the log: the times, the seed phases, voids, the records and their
order, the events.
"""

from __future__ import annotations

import copy
import hashlib
import random
from typing import Any

from bench.transcript_fuzz.common import MAX_SAFE, V2, NotHere, _short
from bench.transcript_fuzz.paths import all_events, get, header, put, records, walk
from bench.transcript_fuzz.variants import ASTRAL, variants
from verifier.fairness import player_commit


def turn_starts(t: dict[str, Any]) -> dict[int, int]:
    """record index -> the index of the record that began its turn."""
    out, began = {}, None
    for i, r in enumerate(t["log"]):
        if began is not None:
            out[i] = began
        if isinstance(r, dict) and any(isinstance(e, dict) and e.get("kind") == "turn" for e in r.get("events") or []):
            began = i
    return out


def m_times(t: dict[str, Any], rng: random.Random) -> str:
    log = t["log"]
    h = header(t)
    op = rng.choice(["one", "shift", "timeout_edge", "window_edge", "equal", "decrease", "huge"])
    if op == "timeout_edge":
        starts = turn_starts(t)
        outs = [
            i for i, r in enumerate(log) if r.get("type") == "action" and r.get("action", {}).get("kind") == "timeout"
        ]
        if not outs:
            raise NotHere
        i = rng.choice(outs)
        b = starts.get(i, 3)
        bound = log[b]["t"] + 1000 * h["rules"]["turn_seconds"]
        log[i]["t"] = bound + rng.choice([-1, 0, 1, -1000])
        for j in range(i + 1, len(log)):  # keep the rest in order
            log[j]["t"] = max(log[j]["t"], log[j - 1]["t"])
        return f"timeout at {i}: t = turn start {b} + turn {log[i]['t'] - bound:+d}"
    if op == "window_edge" and len(log) > 2 and "commit_ms" in h:
        k = rng.choice([1, 2])
        w = h["commit_ms"] if k == 1 else h["reveal_ms"]
        log[k]["t"] = log[k - 1]["t"] + w + rng.choice([-1, 0, 1])
        for j in range(k + 1, len(log)):
            log[j]["t"] = max(log[j]["t"], log[j - 1]["t"])
        return f"record {k}: t = record {k - 1} + window {log[k]['t'] - log[k - 1]['t'] - w:+d}"
    i = rng.randrange(len(log))
    if "t" not in log[i]:
        raise NotHere
    if op == "shift":
        d = rng.choice([-(10**13), -1, 1, 10**6, 2**40])
        for r in log:
            if isinstance(r.get("t"), int):
                r["t"] += d
        return f"every t {d:+d}"
    if op == "equal" and i > 0:
        log[i]["t"] = log[i - 1]["t"]
        return f"record {i}: t = record {i - 1}'s"
    if op == "decrease" and i > 0:
        log[i]["t"] = log[i - 1]["t"] - rng.choice([1, 1000])
        return f"record {i}: t before record {i - 1}'s"
    if op == "huge":
        log[i]["t"] = rng.choice([MAX_SAFE, MAX_SAFE + 1, 0, -1])
        return f"record {i}: t -> {log[i]['t']}"
    log[i]["t"] = log[i]["t"] + rng.choice([-5000, -700, -1, 1, 700, 5000, 100_000])
    return f"record {i}: t nudged"


def m_seeds(t: dict[str, Any], rng: random.Random) -> str:
    """The seed phases rewritten: a commit dropped, a status changed, a seed changed
    (and its commitment recomputed: under the house's keys it can sign both)."""
    r1 = records(t, "commitments")
    r2 = records(t, "reveals")
    if not r1:
        raise NotHere
    commits = r1[0][1]["commitments"]["commits"]
    op = rng.choice(["commit_null", "to_withheld", "to_no_commit", "new_seed", "swap", "seat", "revealed_no_commit"])
    k = rng.randrange(len(commits))
    seat = commits[k].get("seat")
    reveals = r2[0][1]["reveals"] if r2 else None
    if op == "commit_null":
        commits[k]["commit"] = None
        commits[k]["psig"] = None
        if reveals and rng.random() < 0.7:
            reveals[k].update({"seed": "", "status": "no_commit", "psig": None})
        return f"seat {seat}: commit null"
    if op == "swap" and len(commits) > 1:
        commits[0], commits[1] = commits[1], commits[0]
        if reveals and rng.random() < 0.5:
            reveals[0], reveals[1] = reveals[1], reveals[0]
        return "commitments: entries 0 and 1 swapped"
    if op == "seat":
        commits[k]["seat"] = rng.choice([x for x in range(-1, 9) if x != seat])
        return f"commitments: seat {seat} -> {commits[k]['seat']}"
    if reveals is None:
        raise NotHere
    if op == "to_withheld":
        reveals[k].update({"seed": "", "status": "withheld", "psig": None})
        return f"seat {seat}: withheld"
    if op == "to_no_commit":
        reveals[k].update({"seed": "", "status": "no_commit", "psig": None})
        return f"seat {seat}: no_commit"
    if op == "revealed_no_commit":
        reveals[k].update({"status": "revealed", "seed": "ab" * 32, "psig": "00" * 64})
        return f"seat {seat}: revealed, a new seed"
    seed = hashlib.sha256(f"new seed {rng.random()}".encode()).hexdigest()
    reveals[k].update({"seed": seed, "status": "revealed", "psig": reveals[k].get("psig") or "00" * 64})
    if isinstance(seat, int) and seat >= 0:
        commits[k]["commit"] = player_commit(seat, bytes.fromhex(seed)).hex()
        commits[k]["psig"] = commits[k].get("psig") or "00" * 64
    return f"seat {seat}: another seed, its commitment recomputed"


VOID_REASONS = [
    "operator",
    "operator",
    "operator",
    "operator",
    "",
    "x" * 500,
    "x" * 501,
    ASTRAL * 500,
    ASTRAL * 300 + "x" * 201,
    "é" * 500,
    "a\u0000b",
    7,
]


def m_void(t: dict[str, Any], rng: random.Random) -> str:
    """The log cut after record k and a void appended (the house's re-deal), with or
    without the seed; or a void put where it may not stand."""
    log = t["log"]
    op = rng.choice(["cut", "cut", "cut", "middle", "after_end"])
    if op == "middle" and len(log) > 3:
        k = rng.randrange(1, len(log) - 1)
        log.insert(k, {"i": k, "type": "void", "reason": "operator", "h": ""})
        if t.get("protocol") == V2:
            log[k]["t"] = log[k - 1]["t"]
        for j, r in enumerate(log):
            r["i"] = j
        return f"void inserted at {k}, the log goes on"
    if op == "after_end":
        log.append({"i": len(log), "type": "void", "reason": "operator", "h": ""})
        if t.get("protocol") == V2:
            log[-1]["t"] = log[-2].get("t", 0) + 5
        if rng.random() < 0.7:
            t["result"] = None
        return "void appended after the last record"
    k = rng.randrange(0, len(log))
    del log[k + 1 :]
    if log[-1].get("type") == "void":
        log.pop()
        k -= 1
    reason = rng.choice(VOID_REASONS)
    rec: dict[str, Any] = {"i": len(log), "type": "void", "reason": reason, "h": ""}
    if t.get("protocol") == V2 or rng.random() < 0.2:  # a v1 void has no "t" (Appendix C)
        rec["t"] = log[-1].get("t", 0) + rng.choice([0, 1, 5, 100_000])
    log.append(rec)
    if rng.random() < 0.9:
        t["result"] = None
    seedless = rng.random() < 0.4
    if seedless:
        t["server_seed"] = ""
    if rng.random() < 0.8 and (seedless or k < 2):
        t["deck"], t["deck_faces"] = [], []
    return f"void after record {k} (reason {_short(reason)}){', no seed' if seedless else ''}"


def m_records(t: dict[str, Any], rng: random.Random) -> str:
    log = t["log"]
    op = rng.choice(["swap", "drop", "dup", "reindex", "type", "truncate"])
    fix = rng.random() < 0.7
    if op == "swap" and len(log) > 2:
        k = rng.randrange(len(log) - 1)
        log[k], log[k + 1] = log[k + 1], log[k]
        what = f"records {k} and {k + 1} swapped"
    elif op == "drop" and len(log) > 1:
        k = rng.randrange(1, len(log))
        del log[k]
        what = f"record {k} dropped"
    elif op == "dup":
        k = rng.randrange(len(log))
        log.insert(k + 1, copy.deepcopy(log[k]))
        what = f"record {k} doubled"
    elif op == "type":
        k = rng.randrange(len(log))
        old = log[k].get("type")
        log[k]["type"] = rng.choice(["header", "commitments", "reveals", "deal", "action", "void", "Action", ""])
        what = f"record {k}: type {old} -> {log[k]['type']}"
    elif op == "truncate" and len(log) > 1:
        k = rng.randrange(1, len(log))
        del log[k:]
        what = f"log cut to {k} records, no void"
    else:
        k = rng.randrange(len(log))
        log[k]["i"] = rng.choice([k + 1, k - 1, str(k), None])
        return f"record {k}: i -> {_short(log[k]['i'])}"
    if fix:
        for j, r in enumerate(log):
            if isinstance(r, dict):
                r["i"] = j
    return what + (" (i renumbered)" if fix else "")


def m_events(t: dict[str, Any], rng: random.Random) -> str:
    evs = all_events(t)
    if not evs:
        raise NotHere
    i, j, e = rng.choice(evs)
    r = t["log"][i]
    op = rng.choice(["data", "data", "private", "seat", "kind", "swap", "drop", "dup", "extra"])
    if op in ("data", "private"):
        d = e.get(op)
        if not isinstance(d, dict) or not d:
            raise NotHere
        paths = [p for p, _ in walk(d) if p]
        p = rng.choice(paths)
        old = get(d, p)
        new = rng.choice(variants(old))
        put(d, p, new)
        return f"record {i} event {j} ({e.get('kind')}) {op}/{'/'.join(map(str, p))}: {_short(old)} -> {_short(new)}"
    if op == "seat":
        old = e.get("seat")
        e["seat"] = rng.choice([None, 0, 1, 2, 3, 7, str(old), True])
        return f"record {i} event {j} ({e.get('kind')}) seat {old} -> {_short(e['seat'])}"
    if op == "kind":
        old = e.get("kind")
        e["kind"] = rng.choice(
            [
                "deal",
                "hand",
                "turn",
                "draw",
                "discard",
                "drop",
                "leave",
                "clock",
                "declare",
                "end",
                "reshuffle",
                "forfeit",
                "x",
            ]
        )
        return f"record {i} event {j} kind {old} -> {e['kind']}"
    evl = r["events"]
    if op == "swap" and len(evl) > 1:
        a = rng.randrange(len(evl) - 1)
        evl[a], evl[a + 1] = evl[a + 1], evl[a]
        return f"record {i} events {a} and {a + 1} swapped"
    if op == "drop":
        del evl[j]
        return f"record {i} event {j} ({e.get('kind')}) dropped"
    if op == "dup":
        evl.insert(j, copy.deepcopy(e))
        return f"record {i} event {j} ({e.get('kind')}) doubled"
    e[rng.choice(["extra", "t", "data2"])] = 0
    return f"record {i} event {j} an extra field"
