"""A differential fuzzer of the two transcript verifiers: ``rummy-verify`` (Python,
``verifier/``) and the browser verifier (JavaScript, ``service/web/rummypf/*.js``, run in
node by ``bench/transcript_fuzz_js.mjs``).

It takes the vectors' transcripts (``verifier/vectors/*.json``, ``adversarial/*.json``,
their folders' hands) and a few honest hands it plays itself (random legal moves, rules
at the bounds of §13), and mutates them as a house that holds its own key could: any
field of the transcript, the header, the rules, the seats, the times, the seeds, the
records and their order, the events, the result and the settlement; types (a number
for a string, ``true`` for 1, big integers, floats), extra and missing fields.  It then
re-signs what the house can sign — the header, the commitments, the chain, the head,
the transcript — and, since a house can list keys of its own for the seats (only a
player's evidence shows it, §15 rule 3), usually every player move too, under keys it
holds.  A few mutants are then changed as raw JSON text (escapes, white space,
duplicate keys, ``-0``, ``1.0``, a byte order mark, deep nesting…), or verified with a
pinned key.  Both verifiers read the same bytes; their verdicts are compared: ok or
not, the failing check, the record and the evidence item it names, and the warnings of
a passing verdict.

Hands played here carry a seat's evidence (or every seat's), with refusals of the
house's and of the rules' (§15 rule 7); with ``--focus evidence`` every mutant is
verified with it, so a transcript the house re-publishes is held against what a
player kept.  ``--sweep`` replaces the random mutants by a systematic sweep: every type
and edge variant of the first value at each field pattern of a few vectors (§13's
types, where a random mutant reaches each field rarely).

    python -m bench.transcript_fuzz [--seed N] [--mutants N] [--focus evidence|v1] [--sweep]
                                    [--jobs N] [--json FILE] [--dump DIR] [-v]

Deterministic for a seed.  A difference is one of three kinds (``compare``): a record
the spec does not name (``unspecified``: which problem ``format`` names first, the
record of a pinned key or of the head — counted, not a disagreement); a known open
disagreement (``KNOWN_OPEN``, each a strict xfail of the pytest test); or a new
disagreement, printed by class with the smallest mutant of each (exit 1).  ``REPROS``
holds one minimal repro of each class found, with the verdict docs/fairness.md gives.
The same mutants are the pytest test's (``tests/test_web_verifier_transcript_fuzz.py``),
where the JavaScript runs in headless Chromium.
"""

from __future__ import annotations

import argparse
import base64
import copy
import dataclasses
import functools
import hashlib
import json
import os
import pathlib
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from verifier.fairness import player_commit, rules_id
from verifier.hand import Declare, Discard, DrawClosed, Drop, HandState, Leave, TableRules, TimeOut, legal_actions
from verifier.strictjson import InputError, parse, unwrap_transcript
from verifier.transcript import verify_transcript
from verifier.vectors import TEST_SIGNER, VectorHand, greedy, player_signer

ROOT = pathlib.Path(__file__).resolve().parent.parent
VECTORS = ROOT / "verifier" / "vectors"
NODE_RUNNER = ROOT / "bench" / "transcript_fuzz_js.mjs"
V1 = "rummy-pf/v1"
V2 = "rummy-pf/v2"
ZERO = "00" * 32
MAX_SAFE = 2**53 - 1
SEED = 20261208


def clone(x: Any) -> Any:
    """A deep copy (JSON data: orjson's round trip is some ten times copy.deepcopy's speed)."""
    try:
        return orjson.loads(orjson.dumps(x))
    except (orjson.JSONEncodeError, TypeError):
        return copy.deepcopy(x)


# --------------------------------------------------------------------------- keys and signing
@dataclasses.dataclass(frozen=True)
class Key:
    private: Ed25519PrivateKey
    pub: str

    @staticmethod
    def of_seed(seed: bytes) -> Key:
        k = Ed25519PrivateKey.from_private_bytes(seed)
        return Key(k, k.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex())


SERVER = Key(TEST_SIGNER._key, TEST_SIGNER.public_bytes.hex())  # the vectors' server key
OTHER_SERVER = Key.of_seed(hashlib.sha256(b"transcript fuzz: another server key").digest())


@functools.cache
def fuzz_player(seat: int) -> Key:
    """The house's own keys for the seats it lists (a key substitution, §15 rule 3)."""
    return Key.of_seed(hashlib.sha256(f"transcript fuzz: house key for seat {seat}".encode()).digest())


def _canon(x: Any) -> bytes:
    """canonical(x) (§1), but for any value (a mutant may hold a float or a big
    integer: it is unreadable anyway, and its signature does not matter)."""
    return json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")


def _lp(b: bytes) -> bytes:
    return len(b).to_bytes(4, "big") + b


def sign(key: Key, protocol: Any, purpose: str, obj: Any) -> str:
    proto = protocol if protocol in (V1, V2) else V2
    return key.private.sign(_lp(f"{proto}/{purpose}".encode()) + _canon(obj)).hex()


@functools.cache
def _known_keys() -> dict[str, Key]:
    return {
        SERVER.pub: SERVER,
        OTHER_SERVER.pub: OTHER_SERVER,
        **{fuzz_player(s).pub: fuzz_player(s) for s in range(8)},
    }


def keys_of_table(table_id: Any) -> dict[str, Key]:
    """Player keys the fuzzer can sign with: the vectors' (``player_signer(name, seat)``
    for the table ``table-<name>``) and its own."""
    out = dict(_known_keys())
    if isinstance(table_id, str) and table_id.startswith("table-"):
        name = table_id[len("table-") :]
        for s in range(8):
            k = player_signer(name, s)
            out[k.public_bytes.hex()] = Key(k._key, k.public_bytes.hex())
    return out


# --------------------------------------------------------------------------- re-sealing
def _link(prev: str, rec: Any) -> str:
    body = {k: v for k, v in rec.items() if k != "h"} if isinstance(rec, dict) else rec
    try:
        p = bytes.fromhex(prev)
    except (ValueError, TypeError):
        p = b""
    return hashlib.sha256(p + _canon(body)).hexdigest()


def reseal(
    t: dict[str, Any], *, players: str = "keep", header: bool = True, chain: bool = True, sig: bool = True
) -> None:
    """What a house holding its key does after changing a hand: re-sign the header and
    the commitments, re-chain the log, re-sign the transcript.  ``players``: "keep"
    re-signs each move under the key the header lists when the fuzzer holds it,
    "house" first lists the house's own keys for every seat (then signs every move),
    "none" leaves the moves as they are.  A move signed over an older record stays
    signed over that record.  Robust to any shape: what is not where it should be is
    left as it is."""
    proto = t.get("protocol")
    log = t.get("log")
    if not isinstance(log, list):
        if sig:
            t["signature"] = sign(SERVER, proto, "transcript", {k: v for k, v in t.items() if k != "signature"})
        return
    rec0: dict[str, Any] = log[0] if log and isinstance(log[0], dict) else {}
    hd: dict[str, Any] = rec0["header"] if isinstance(rec0.get("header"), dict) else {}
    seats: list[Any] = hd["seats"] if isinstance(hd.get("seats"), list) else []
    v2 = proto == V2
    if v2 and players == "house":
        for s in seats:
            if isinstance(s, dict) and isinstance(s.get("seat"), int) and 0 <= s["seat"] < 8:
                s["player_key"] = fuzz_player(s["seat"]).pub
    known = keys_of_table(t.get("table_id"))
    key_of: dict[Any, Key] = {}
    for s in seats:
        if isinstance(s, dict) and isinstance(s.get("player_key"), str) and s["player_key"] in known:
            try:
                key_of.setdefault(s.get("seat"), known[s["player_key"]])
            except TypeError:
                pass
    server = known.get(hd["public_key"], SERVER) if isinstance(hd.get("public_key"), str) else SERVER

    def move_sig(seat: Any, prev: Any, move: Any) -> str | None:
        try:
            k = key_of.get(seat)
        except TypeError:
            return None
        if k is None:
            return None
        return sign(
            k, V2, "move", {"table_id": t.get("table_id"), "hand_no": t.get("hand_no"), "prev": prev, "move": move}
        )

    old_h = [r.get("h") if isinstance(r, dict) else None for r in log]
    new_h: list[Any] = []
    prev = hd.get("prev_head", ZERO)
    for i, r in enumerate(log):
        if not isinstance(r, dict):
            new_h.append(None)
            continue
        typ = r.get("type")
        if v2 and players != "none":
            try:
                if typ == "commitments" and new_h:
                    for c in r["commitments"]["commits"]:
                        if isinstance(c, dict) and c.get("commit") is not None and c.get("psig") is not None:
                            m = {"kind": "commit", "seat": c.get("seat"), "commit": c.get("commit")}
                            c["psig"] = move_sig(c.get("seat"), new_h[0], m) or c["psig"]
                elif typ == "reveals" and len(new_h) > 1:
                    for e in r["reveals"]:
                        if isinstance(e, dict) and e.get("psig") is not None:
                            m = {"kind": "reveal", "seat": e.get("seat"), "seed": e.get("seed")}
                            e["psig"] = move_sig(e.get("seat"), new_h[1], m) or e["psig"]
                elif typ == "action" and isinstance(r.get("psig"), dict) and isinstance(r.get("action"), dict):
                    p = r["psig"].get("prev")
                    j = old_h.index(p) if p in old_h[:i] else i - 1
                    prev_h = new_h[j] if 0 <= j < len(new_h) else p
                    s = move_sig(r["action"].get("seat"), prev_h, r["action"])
                    if s is not None:
                        r["psig"]["prev"], r["psig"]["sig"] = prev_h, s
            except (KeyError, TypeError, AttributeError, ValueError):
                pass
        if header and typ == "header" and isinstance(r.get("header"), dict):
            r["sig"] = sign(server, proto, "header", r["header"])
        if header and typ == "commitments" and "commitments" in r:
            r["sig"] = sign(server, proto, "commitments", r["commitments"])
        if chain:
            r["h"] = _link(prev if isinstance(prev, str) else ZERO, r)
        prev = r.get("h")
        new_h.append(prev)
    if chain and log and isinstance(log[-1], dict):
        t["head"] = log[-1].get("h")
    if sig:
        t["signature"] = sign(server, proto, "transcript", {k: v for k, v in t.items() if k != "signature"})


# --------------------------------------------------------------------------- the hands mutated
@dataclasses.dataclass
class Base:
    name: str
    t: dict[str, Any]
    allow_v1: bool = False
    evidence: list[Any] | None = None  # a seat's evidence for this hand, when known


def _vector(path: pathlib.Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def vector_bases() -> list[Base]:
    out: list[Base] = []
    for p in sorted(VECTORS.glob("*transcript*.json")):
        t = _vector(p)["transcript"]
        out.append(Base(p.name, t, allow_v1=t.get("protocol") == V1))
    ev = _vector(VECTORS / "v2-evidence-4seat-two-players-seat1.json")
    for b in out:
        if b.name == "v2-transcript-4seat-two-players.json":
            out.append(Base(b.name + " +evidence", copy.deepcopy(b.t), evidence=ev["evidence"]))
            break
    for p in sorted((VECTORS / "adversarial").glob("*.json")):
        doc = _vector(p)
        e = doc["_about"]["expect"]
        name = "adversarial/" + p.name
        if "transcript" in doc:
            evidence = doc.get("evidence") if e.get("with_evidence") else None
            out.append(Base(name, doc["transcript"], allow_v1=bool(e.get("allow_v1")), evidence=evidence))
        for f, t in sorted(doc.get("folder", {}).items()):
            out.append(Base(f"{name}::{f}", t, allow_v1=bool(e.get("allow_v1"))))
    return out


def random_policy(rng: random.Random, *, wild: float) -> Callable[[HandState, int], Any]:
    """The greedy strategy, and with probability ``wild`` any legal move (a drop, a
    leave, the clock, a wrong declare, a draw from the open pile)."""

    stall = [rng.choice([0, 0, 0, 120, 220])]  # moves that keep the hand going, for reshuffles

    def policy(state: HandState, seat: int) -> Any:
        if stall[0] > 0:
            stall[0] -= 1
            acts = legal_actions(state, seat)
            if state.seat(seat).drawn_this_turn is not None:
                card = state.seat(seat).drawn_this_turn
                return next(a for a in acts if a.kind == "discard" and getattr(a, "card", None) == card)
            kinds = [a.kind for a in acts]
            want = "draw_open" if "draw_open" in kinds and rng.random() < 0.3 else "draw_closed"
            return acts[kinds.index(want)] if want in kinds else rng.choice(acts)
        if rng.random() < wild:
            acts = legal_actions(state, seat)
            declares = [a for a in acts if isinstance(a, Declare)]
            others = [a for a in acts if not isinstance(a, Declare | Drop | Leave | TimeOut)]
            roll = rng.random()
            if roll < 0.04 and declares:
                return rng.choice(declares)
            if roll < 0.08:
                return rng.choice([a for a in acts if isinstance(a, Drop | Leave | TimeOut)] or acts)
            if roll < 0.15:
                return TimeOut(seat)
            return rng.choice(others or acts)
        return greedy(state, seat)

    return policy


#: rules a house may choose (§13's bounds), each with seats, dealer, no_commit, withhold
_PLAYED = [
    (TableRules(4, 7_692_307_692_307, 9_999, 1, 1, 2), [0, 1, 2, 3], 3, (), ()),
    (TableRules(8, 1, 10_000, 3600, 100, 8), list(range(8)), 7, (2,), ()),
    (TableRules(6, 3, 0, 30, 2, 3), [0, 2, 5], 5, (), (2,)),
    (TableRules(4, 5, 1_234, 10, 3, 2), [1, 2], 2, (), (1,)),
    (TableRules(6, 7_692_307_692_307, 10_000, 7, 1, 2), [0, 1, 2, 3, 4, 5], 0, (0, 1), ()),
    (TableRules(8, 1_000, 333, 60, 3, 2), [0, 3, 4, 7], 4, (), ()),
    (TableRules(4, 2, 5_000, 5, 2, 2), [0, 1, 2, 3], 1, (0, 1, 2, 3), ()),
    (TableRules(6, 17, 250, 15, 3, 2), [1, 4], 4, (), ()),
    (TableRules(4, 7_692_307_692_307, 1, 30, 3, 4), [0, 1, 2, 3], 0, (), ()),
    (TableRules(8, 99, 777, 20, 4, 3), [0, 1, 2, 5, 6, 7], 6, (1,), (5,)),
    (TableRules(6, 1, 0, 30, 3, 2), [2, 3], 2, (), (2, 3)),
    (TableRules(4, 3, 1_000, 30, 3, 2), [0, 2, 3], 3, (0,), (2,)),
    (TableRules(6, 3, 100, 30, 3, 2), [0, 2, 4], 2, (), (2,)),  # the dealer withheld: 4 plays first
]


class _Played(VectorHand):
    """A hand that also has seats leave when it is not their turn (D25), and moves the
    table refuses: for a reason the rules justify (an illegal move), or for one of the
    house's own (``busy``: the seat keeps its whole turn from the refusal, D35, which
    the clock then respects)."""

    rng: random.Random

    def play(self, policy: Callable[[HandState, int], Any], max_actions: int = 600) -> None:
        n = 0
        owed = 0  # the clock may not charge the seat on turn before this (a refusal of the house's)
        while not self.rec.ended and n < max_actions:
            state = self.rec.state
            assert state is not None
            others = [s for s in state.playing() if s != state.turn]
            if others and self.rng.random() < 0.004:
                self.act(Leave(self.rng.choice(others)))
                n += 1
                continue
            action = policy(state, state.turn)
            roll = self.rng.random()
            if roll < 0.03 and not isinstance(action, TimeOut):
                self.refuse(action, "busy", at=self.now + self.rng.choice([1, 300, 2_000]))
                owed = self.now + 1000 * self.rec.rules.turn_seconds
            elif roll < 0.05:  # a move the rules refuse (justified): a draw in the discard phase, or vice versa
                in_discard = state.phase.value == "discard"
                illegal = DrawClosed(state.turn) if in_discard else Discard(state.turn, 0)
                self.refuse(illegal, "wrong_phase", at=self.now + 5)
            if isinstance(action, TimeOut):
                at = max(self.now, self.turn_began + 1000 * self.rec.rules.turn_seconds, owed) + 1
                self.act(action, at=at)
            else:
                self.act(action)
            newest = self.rec.records.newest()
            if newest is not None and any(e.get("kind") == "turn" for e in newest["events"]):
                owed = 0
            n += 1


def played_bases(seed: int, copies: int = 3) -> list[Base]:
    """Honest hands played here (a house may choose any rules within §13's bounds): the
    recorder writes them, and both verifiers must pass them; each with a seat's
    evidence, or every seat's pooled."""
    out = []
    for n, (rules, seats, dealer, no_commit, withhold) in enumerate(_PLAYED * copies):
        rng = random.Random(seed * 1000 + n)
        name = f"fuzz{n}"
        hand = _Played(name, rng.randrange(3), rules, seats, dealer)
        hand.rng = rng
        hand.seed_phases(no_commit=no_commit, withhold=withhold)
        hand.play(random_policy(rng, wild=rng.choice([0.05, 0.2, 0.5, 0.8])), max_actions=900)
        t = hand.rec.transcript()
        if rng.random() < 0.3 and len(t["log"]) < 60:
            ev = [it for s in sorted(hand.evidence) for it in hand.evidence[s]]
        else:
            ev = hand.evidence[rng.choice(sorted(hand.evidence))]
        out.append(Base(f"played/{name} {rules.seats}-seat", clone(t), evidence=clone(ev)))
    return out


@functools.cache
def bases(seed: int = SEED) -> tuple[Base, ...]:
    return tuple(vector_bases() + played_bases(seed))


# --------------------------------------------------------------------------- paths in a value
def walk(x: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield path, x
    if isinstance(x, dict):
        for k, v in x.items():
            yield from walk(v, (*path, k))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from walk(v, (*path, i))


def get(x: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        x = x[p]
    return x


def put(x: Any, path: tuple[Any, ...], v: Any) -> None:
    get(x, path[:-1])[path[-1]] = v


def header(t: dict[str, Any]) -> dict[str, Any]:
    h = t["log"][0]["header"]
    assert isinstance(h, dict)
    return h


def records(t: dict[str, Any], typ: str) -> list[tuple[int, dict[str, Any]]]:
    return [(i, r) for i, r in enumerate(t["log"]) if isinstance(r, dict) and r.get("type") == typ]


def all_events(t: dict[str, Any]) -> list[tuple[int, int, dict[str, Any]]]:
    out = []
    for i, r in enumerate(t["log"]):
        if isinstance(r, dict) and isinstance(r.get("events"), list):
            for j, e in enumerate(r["events"]):
                if isinstance(e, dict):
                    out.append((i, j, e))
    return out


def end_event(t: dict[str, Any]) -> dict[str, Any] | None:
    for _, _, e in all_events(t):
        if e.get("kind") == "end":
            return e
    return None


# --------------------------------------------------------------------------- value variants
ASTRAL = "\U0001f0a1"  # 🂡, two UTF-16 units, one code point


def int_variants(n: int) -> list[Any]:
    return [
        n + 1,
        n - 1,
        -n if n else -1,
        0,
        str(n),
        n == 1,
        bool(n),
        None,
        MAX_SAFE,
        -MAX_SAFE,
        MAX_SAFE + 1,
        2**31 - 1,
        2**31,
        2**32,
        2**32 + n,
        2**64 + n,
        float(n),
        [n],
        {"n": n},
    ]


def str_variants(s: str) -> list[Any]:
    out: list[Any] = [
        s.upper(),
        s + "0",
        s[:-1],
        "",
        s + "\n",
        " " + s,
        s + "é",
        s + ASTRAL,
        s.replace("a", "A", 1),
        None,
        1,
        0,
        [s],
        s + "\u0000",
        s * 2,
        "x" * 64,
        "x" * 65,
        "é" * 500,
        ASTRAL * 500,
        ASTRAL * 501,
        "a" * 501,
        "\u212a",  # KELVIN SIGN: upper-case folds to ASCII in some libraries
        "\ufb01" * 3,
    ]
    if s.isdigit():
        out += [
            int(s),
            "0" + s,
            "+" + s,
            s + " ",
            "\uff10" if s == "0" else s.translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")),
            s + "_0",
            "-" + s,
            s + ".0",
        ]
    return out


def variants(v: Any) -> list[Any]:
    if isinstance(v, bool):
        return [not v, int(v), str(v).lower(), None, 0, 1]
    if isinstance(v, int):
        return int_variants(v)
    if isinstance(v, str):
        return str_variants(v)
    if v is None:
        return [0, "", {}, [], False, "null"]
    if isinstance(v, list):
        out: list[Any] = [[], {}, None, list(reversed(v))]
        if v:
            out += [v[:-1], [*v, copy.deepcopy(v[-1])], [*v, copy.deepcopy(v[0])], v[1:], [v[0]], [v]]
        return out
    if isinstance(v, dict):
        out = [{}, [], None]
        for k in v:
            out.append({kk: vv for kk, vv in v.items() if kk != k})
        out += [{**v, "extra": 1}, {**v, "": None}, {**v, "__proto__": {}}]
        return out
    return [None]


# --------------------------------------------------------------------------- mutations
Mutation = Callable[[dict[str, Any], random.Random], str]


class NotHere(Exception):
    """This mutation does not apply to this hand."""


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


_EVIDENCE: list[Any] = []  # the evidence of the hand being mutated (for the mutations that read it)


def _acks(outcome: str) -> list[dict[str, Any]]:
    return [
        it["body"]
        for it in _EVIDENCE
        if isinstance(it, dict)
        and it.get("purpose") == "ack"
        and isinstance(it.get("body"), dict)
        and it["body"].get("outcome") == outcome
        and it["body"].get("move", {}).get("kind") not in ("commit", "reveal")
    ]


def m_owed(t: dict[str, Any], rng: random.Random) -> str:
    """After a refusal the seat holds an ack of (D35): the hand voided, or the seat's
    clock moved, about when its whole turn from the refusal ends (§15 rule 7)."""
    acks = [b for b in _acks("refused") if isinstance(b.get("i"), int) and 3 <= b["i"] < len(t["log"]) - 1]
    if not acks:
        raise NotHere
    b = rng.choice(acks)
    log = t["log"]
    due = b["arrived"] + 1000 * header(t)["rules"]["turn_seconds"]
    k = b["i"] + rng.choice([1, 1, 2, 3])
    if k >= len(log):
        raise NotHere
    del log[k:]
    when = max(log[-1]["t"], due + rng.choice([-1, 0, 1, -1000]))
    log.append({"i": k, "t": when, "type": "void", "reason": "operator", "h": ""})
    t["result"] = None
    return f"void at {k} after seat {b['seat']}'s refusal at {b['i']}, t = due {when - due:+d}"


def m_backdate(t: dict[str, Any], rng: random.Random) -> str:
    """An accepted move's record dated before the move arrived (§15 rule 7), the
    records around it kept in order."""
    acks = [b for b in _acks("accepted") if isinstance(b.get("i"), int) and 4 <= b["i"] < len(t["log"])]
    if not acks:
        raise NotHere
    b = rng.choice(acks)
    log = t["log"]
    i = b["i"]
    log[i]["t"] = max(log[i - 1]["t"], b["arrived"] + rng.choice([-1, -1, 0, -500]))
    late = log[i]["t"] - b["arrived"]
    return f"record {i} (seat {b['seat']}'s accepted {b['move']['kind']}) dated {late:+d} from its arrival"


MUTATIONS: list[tuple[Mutation, int]] = [
    (m_penalty, 3),
    (m_owed, 3),
    (m_backdate, 3),
    (m_regroup, 3),
    (m_any_field, 4),
    (m_structural, 1),
    (m_transcript_field, 4),
    (m_rules, 4),
    (m_seats, 4),
    (m_windows, 2),
    (m_prev_head, 1),
    (m_times, 8),
    (m_seeds, 4),
    (m_void, 8),
    (m_records, 4),
    (m_events, 8),
    (m_result, 7),
    (m_actions, 5),
]


# --------------------------------------------------------------------------- after sealing, and as text
def post_seal(t: dict[str, Any], rng: random.Random) -> str:
    op = rng.choice(["sig_bit", "upper", "h", "head", "psig_bit"])
    log = t["log"]
    if op == "sig_bit":
        s = bytearray(bytes.fromhex(t["signature"]))
        s[rng.randrange(64)] ^= 1 << rng.randrange(8)
        t["signature"] = s.hex()
        return "the transcript signature's bit flipped"
    if op == "upper":
        p, v = rng.choice(
            [
                (p, v)
                for p, v in walk(t)
                if isinstance(v, str) and len(v) >= 64 and all(c in "0123456789abcdef" for c in v)
            ]
        )
        put(t, p, v.upper())
        return f"{'/'.join(map(str, p))} upper-cased after sealing"
    if op == "h":
        k = rng.randrange(len(log))
        log[k]["h"] = "ab" * 32
        return f"record {k}'s h replaced after sealing"
    if op == "head":
        t["head"] = log[0]["h"]
        return "head -> record 0's h"
    recs = [r for r in log if isinstance(r.get("psig"), dict)]
    if not recs:
        raise NotHere
    r = rng.choice(recs)
    s = bytearray(bytes.fromhex(r["psig"]["sig"]))
    s[rng.randrange(64)] ^= 1
    r["psig"]["sig"] = s.hex()
    return f"record {r['i']}: psig bit flipped"


def serialize(t: Any, rng: random.Random) -> bytes:
    style = rng.random()
    if style < 0.6:
        text = json.dumps(t, separators=(",", ":"), ensure_ascii=False)
    elif style < 0.8:
        indent: int | str = rng.choice((1, 2, "\t"))
        text = json.dumps(t, indent=indent, ensure_ascii=rng.random() < 0.5)
    else:
        text = json.dumps(t, sort_keys=True, ensure_ascii=True)
    return text.encode("utf-8", "surrogatepass")


def raw_mutation(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """The same value written otherwise (escapes, white space), or input §2 calls
    unreadable."""
    text = data.decode("utf-8", "surrogatepass")
    op = rng.choice(
        [
            "escape",
            "escape",
            "slash",
            "ws",
            "dupkey",
            "minus0",
            "float",
            "exp",
            "big",
            "bom",
            "nest",
            "lone",
            "ctrl",
            "trail",
            "lead0",
            "crlf",
            "nbsp",
            "nul",
        ]
    )
    if op == "escape":  # "a" as "\u0061" inside some string: the same value
        quoted: list[int] = []
        inside, k = False, 0
        while k < len(text) and len(quoted) < 5000:
            c = text[k]
            if c == "\\" and inside:
                k += 2
                continue
            if c == '"':
                inside = not inside
            elif inside and c in "abcdef0123456789":
                quoted.append(k)
            k += 1
        if not quoted:
            return op, data
        k = rng.choice(quoted)
        text = text[:k] + f"\\u{ord(text[k]):04{'x' if rng.random() < 0.5 else 'X'}}" + text[k + 1 :]
    elif op == "slash":
        text = text.replace('"rummy-pf/v2"', '"rummy-pf\\/v2"', 1)
    elif op == "ws":
        text = " \n\t" + text.replace(",", ", ", 3).replace(":", " :", 2) + "\r\n "
    elif op == "dupkey":
        key = rng.choice(['"t":', '"seat":', '"h":', '"protocol":', '"result":', '"card":'])
        k = text.find(key, rng.randrange(max(1, len(text) // 2)))
        if k < 0:
            k = text.find(key)
        if k < 0:
            return op, data
        end = text.find(",", k)
        text = text[:k] + text[k:end] + "," + text[k:]
    elif op in ("minus0", "float", "exp", "big", "lead0"):
        k = text.find('"t":')
        if k < 0:
            k = text.find('"hand_no":')
        if k < 0:
            return op, data
        colon = text.find(":", k) + 1
        end = colon
        while end < len(text) and (text[end].isdigit() or text[end] in "- "):
            end += 1
        num = text[colon:end].strip()
        rep = {"minus0": "-0", "float": num + ".0", "exp": num + "e0", "big": "9007199254740993", "lead0": "0" + num}[
            op
        ]
        text = text[:colon] + rep + text[end:]
    elif op == "bom":
        text = "\ufeff" + text
    elif op == "nest":
        depth = rng.choice([60, 63, 64, 65, 70])
        text = text[:-1] + ',"extra":' + "[" * depth + "]" * depth + "}"
    elif op == "lone":
        text = text.replace('"operator"', '"\\ud800"', 1) if '"operator"' in text else text[:-1] + ',"x":"\\udc00"}'
    elif op == "ctrl":
        k = text.find('"player_id":')
        if k < 0:
            return op, data
        q = text.find('"', k + 12) + 1
        text = text[:q] + "\u0001" + text[q:]
    elif op == "trail":
        text = text + rng.choice(["x", "{}", " null", "\u0000"])
    elif op == "crlf":
        text = text.replace(",", ",\r\n", 5)
    elif op == "nbsp":
        text = text.replace(",", ",\u00a0", 1)
    else:
        text = text.replace(":", ":\u0000", 1)
    return op, text.encode("utf-8", "surrogatepass")


# --------------------------------------------------------------------------- one mutant
@dataclasses.dataclass
class Mutant:
    n: int
    base: str
    what: list[str]
    data: bytes
    allow_v1: bool
    key: str | None = None
    evidence: bytes | None = None

    def case(self) -> dict[str, Any]:
        return {
            "b64": base64.b64encode(self.data).decode(),
            "allow_v1": self.allow_v1,
            "key": self.key,
            "evidence_b64": None if self.evidence is None else base64.b64encode(self.evidence).decode(),
        }


def make_mutant(n: int, seed: int = SEED, focus: str = "") -> Mutant:
    """Mutant ``n`` of the seed (the same every run).  ``focus``: "evidence" takes only
    hands with a seat's evidence, and always gives it."""
    rng = random.Random(f"{seed}/{focus}/{n}" if focus else f"{seed}/{n}")
    bs = bases(seed)
    if focus == "evidence":
        bs = tuple(b for b in bs if b.evidence is not None)
    elif focus == "v1":
        bs = tuple(b for b in bs if b.allow_v1)
    # the played hands and the honest vectors more often than each adversarial file
    weights = [4 if b.name.startswith(("played/", "v2-")) or b.evidence else 1 for b in bs]
    base = rng.choices(bs, weights)[0]
    t = clone(base.t)
    what: list[str] = []
    evidence = None
    keep_keys = False
    _EVIDENCE[:] = base.evidence or []
    if base.evidence is not None and (focus == "evidence" or rng.random() < 0.6):
        evidence = json.dumps(base.evidence).encode()
        keep_keys = True
    for _ in range(rng.choice([0, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 3])):
        for _attempt in range(20):
            trial = clone(t)
            m = rng.choices([f for f, _ in MUTATIONS], [w for _, w in MUTATIONS])[0]
            try:
                what.append(m(trial, rng))
            except (NotHere, KeyError, IndexError, TypeError, AttributeError, ValueError):
                continue
            t = trial
            break
    roll = rng.random()
    players = "keep" if keep_keys or roll < 0.35 else ("house" if roll < 0.92 else "none")
    chain = rng.random() > 0.03
    sig = rng.random() > 0.03
    reseal(t, players=players, chain=chain, sig=sig)
    what.append(f"resealed (players: {players}{'' if chain else ', not re-chained'}{'' if sig else ', not re-signed'})")
    if rng.random() < 0.08:
        try:
            what.append(post_seal(t, rng))
        except (NotHere, KeyError, IndexError, TypeError, AttributeError, ValueError):
            pass
    data = serialize(t, rng)
    if rng.random() < 0.12:
        op, data = raw_mutation(data, rng)
        what.append(f"raw text: {op}")
    key = None
    if rng.random() < 0.1:
        key = rng.choice([SERVER.pub, OTHER_SERVER.pub, SERVER.pub.upper()])
        what.append(f"pinned key {key[:8]}…")
    return Mutant(n, base.name, what, data, base.allow_v1, key, evidence)


def pattern(t: dict[str, Any], path: tuple[Any, ...]) -> str:
    """A path with its list positions generalised: a record by its type (and, for an
    action, its kind), an event by its kind, any other position as ``*``."""
    out: list[str] = []
    x: Any = t
    for p in path:
        if isinstance(x, list):
            if out and out[-1] == "log" and isinstance(x[p], dict):
                r = x[p]
                kind = r.get("action", {}).get("kind") if isinstance(r.get("action"), dict) else None
                out.append(f"<{r.get('type')}{'/' + str(kind) if kind else ''}>")
            elif out and out[-1] == "events" and isinstance(x[p], dict):
                out.append(f"<{x[p].get('kind')}>")
            else:
                out.append("*")
        else:
            out.append(str(p))
        x = x[p]
    return "/".join(out)


SWEEP_BASES = (
    "v2-transcript-6seat-everything.json",
    "v2-transcript-8seat-seeds-and-leaves.json",
    "v2-transcript-void-mid-hand.json",
    "v2-transcript-void-seed-lost.json",
    "v2-transcript-headsup-withheld.json",
    "transcript-6seat-everything.json",
    "transcript-void.json",
)


def sweep_variants(v: Any) -> list[Any]:
    """The type and edge variants of the sweep: fewer than ``variants``, one of each kind."""
    if isinstance(v, bool):
        return [int(v), not v, None]
    if isinstance(v, int):
        return [str(v), v == 1, None, v + 1, -1, 2**31, [v]]
    if isinstance(v, str):
        return [v.upper() if v != v.upper() else v + "x", "", 1, None, v + "\n", v + ASTRAL]
    if v is None:
        return [0, "", {}, False]
    if isinstance(v, list):
        return [[], {}, None] + ([v[:-1], [*v, clone(v[-1])], [v[0], v[0], *v[2:]] if len(v) > 1 else []] if v else [])
    if isinstance(v, dict):
        return [[], None]
    return [None]


def sweep_mutants(seed: int = SEED, every: int = 1) -> list[Mutant]:
    """Every variant (``sweep_variants``) of the first value at each path pattern of a
    few vectors, every key of each object pattern deleted and an extra one added: a
    systematic sweep of §13's types, where a random fuzzer reaches each field rarely.
    ``every``: only each ``every``-th of them (the same ones every run)."""
    out: list[Mutant] = []
    by_name = {b.name: b for b in bases(seed)}
    seen: set[str] = set()
    n = -1
    for name in SWEEP_BASES:
        base = by_name[name]
        for path, v in list(walk(base.t)):
            if not path or path[-1] == "signature":
                continue
            pat = f"{base.t['protocol']}:{pattern(base.t, path)}"
            if pat in seen:
                continue
            seen.add(pat)
            todo: list[tuple[str, Any]] = [("variant", x) for x in sweep_variants(v)]
            if isinstance(v, dict):
                todo += [("delete", k) for k in v] + [("extra", None)]
            for what, x in todo:
                n += 1
                if n % every:
                    continue
                t = clone(base.t)
                if what == "variant":
                    put(t, path, clone(x))
                    desc = f"sweep {pat}: {_short(v)} -> {_short(x)}"
                elif what == "delete":
                    del get(t, path)[x]
                    desc = f"sweep {pat}: delete {x}"
                else:
                    get(t, path)["extra"] = 0
                    desc = f"sweep {pat}: an extra field"
                reseal(t, players="house")
                data = json.dumps(t, ensure_ascii=False).encode("utf-8", "surrogatepass")
                out.append(Mutant(n, name, [desc], data, base.allow_v1))
    return out


def _short(v: Any, n: int = 40) -> str:
    s = json.dumps(v, ensure_ascii=True) if not isinstance(v, float) else repr(v)
    return s if len(s) <= n else s[: n - 1] + "…"


# --------------------------------------------------------------------------- the two verdicts
Verdict = dict[str, Any]


def python_verdict(data: bytes, allow_v1: bool, key: str | None, evidence: bytes | None) -> Verdict:
    """rummy-verify's verdict on these bytes, as its command reads them (§2, then §14)."""
    try:
        t = unwrap_transcript(parse(data))
        ev = None
        if evidence is not None:
            ev = parse(evidence, top=lambda v: True)
            if isinstance(ev, dict) and "_about" in ev and "evidence" in ev:
                ev = ev["evidence"]
    except InputError as e:
        return {"ok": False, "check": "read", "record": None, "item": None, "message": str(e)[:300], "warnings": []}
    pinned = None
    if key is not None:
        pinned = bytes.fromhex(key)
    rep = verify_transcript(t, pinned, ev, allow_v1=allow_v1, parsed=True)
    f = rep.failure
    item = None
    if f is not None and f.check == "evidence" and f.message.startswith("evidence item "):
        item = int(f.message.split()[2])
    return {
        "ok": rep.ok,
        "check": f.check if f else None,
        "record": f.record if f else None,
        "item": item,
        "message": f.message[:300] if f else None,
        "warnings": [w["code"] for w in rep.warnings],
    }


def _py_case(c: tuple[bytes, bool, str | None, bytes | None]) -> Verdict:
    return python_verdict(*c)


def python_verdicts(ms: list[Mutant], jobs: int) -> list[Verdict]:
    args = [(m.data, m.allow_v1, m.key, m.evidence) for m in ms]
    if jobs <= 1:
        return [_py_case(a) for a in args]
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(_py_case, args, chunksize=16))


def node_verdicts(ms: list[Mutant], node: str = "node", chunk: int = 400) -> list[Verdict]:
    """The browser verifier's verdicts, in node (``bench/transcript_fuzz_js.mjs``), ``chunk``
    mutants a process."""
    verdicts: list[Verdict] = []
    for k in range(0, len(ms), chunk):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump([m.case() for m in ms[k : k + chunk]], f)
            path = f.name
        try:
            out = subprocess.run([node, str(NODE_RUNNER), path], capture_output=True, text=True, check=True)
        finally:
            os.unlink(path)
        verdicts += [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    return verdicts


def exact(py: Verdict, js: Verdict) -> bool:
    """The same verdict: ok or not, the failing check, the record and the evidence item it
    names; for a pass, the same warnings."""
    if (py["ok"], py["check"], py["record"], py.get("item")) != (js["ok"], js["check"], js["record"], js.get("item")):
        return False
    return not py["ok"] or sorted(set(py["warnings"])) == sorted(set(js["warnings"]))


def unspecified(py: Verdict, js: Verdict) -> str | None:
    """Why two verdicts that fail the same check may name different records: where
    docs/fairness.md names none (so neither is wrong), else None."""
    if py["ok"] or js["ok"] or py["check"] != js["check"] or py.get("item") != js.get("item"):
        return None
    pm, jm = py["message"] or "", js["message"] or ""
    if py["check"] == "format":
        return "format: another problem named first (§13 orders none of its rules)"
    if py["check"] == "signature" and {py["record"], js["record"]} == {None, 0} and "pinned" in pm and "pinned" in jm:
        return "signature: the pinned key is not the header's (the pinned key is in no record)"
    if py["check"] == "chain" and js["record"] is None and "head" in pm and "head" in jm:
        return "chain: the head is not the last record's h (the head is in no record)"
    return None


def _v1_action_without_t(m: Mutant, py: Verdict, js: Verdict) -> bool:
    return (
        js["check"] == "format"
        and py["check"] != "format"
        and 'expected the field "t"' in (js["message"] or "")
        and b'"rummy-pf/v1"' in m.data
    )


#: Open disagreements, each a strict xfail of tests/test_web_verifier_transcript_fuzz.py
#: (the page is wrong, and may only be changed from the spec): name -> the mutants of it.
KNOWN_OPEN: dict[str, Callable[[Mutant, Verdict, Verdict], bool]] = {
    'page: a rummy-pf/v1 action record without "t" fails format (Appendix C: only action records may carry it)': (
        _v1_action_without_t
    ),
}


def compare(m: Mutant, py: Verdict, js: Verdict) -> tuple[str, str] | None:
    """None when the verdicts agree; else ("unspecified" | "known" | "disagree", the class)."""
    if exact(py, js):
        return None
    why = unspecified(py, js)
    if why is not None:
        return "unspecified", why
    for name, test in KNOWN_OPEN.items():
        if test(m, py, js):
            return "known", name
    return "disagree", klass(py, js)


def klass(py: Verdict, js: Verdict) -> str:
    """A disagreement's class: the two verdicts, without the record when they name the same check."""

    def v(x: Verdict) -> str:
        return "ok" if x["ok"] else str(x["check"])

    if py["ok"] and js["ok"]:
        return f"warnings: python {sorted(set(py['warnings']))} / js {sorted(set(js['warnings']))}"
    if v(py) == v(js) and py["record"] == js["record"]:
        return f"{v(py)}: another evidence item (python {py.get('item')}, js {js.get('item')})"
    if v(py) == v(js):
        return f"{v(py)}: another record (python {py['record']}, js {js['record']})"
    return f"python {v(py)} / js {v(js)}"


# --------------------------------------------------------------------------- one repro per class
def _vector_t(name: str) -> dict[str, Any]:
    t = _vector(VECTORS / name)["transcript"]
    assert isinstance(t, dict)
    return t


def _repro(name: str, t: Any, *, allow_v1: bool = False, key: str | None = None, players: str = "house") -> Mutant:
    if isinstance(t, dict) and "log" in t:
        reseal(t, players=players)
    return Mutant(0, name, [name], json.dumps(t).encode(), allow_v1, key)


def repro_event_of_an_unlisted_seat() -> Mutant:
    """Record 4's draw event names seat 0, which the header does not list (seats 1, 3)."""
    t = _vector_t("v2-transcript-4seat-two-players.json")
    t["log"][4]["events"][0]["seat"] = 0
    return _repro("event of an unlisted seat", t)


def repro_settlement_beyond_the_rules() -> Mutant:
    """The result's settlement names commission_bps 10 001 (the header's rules say 500)."""
    t = _vector_t("v2-transcript-4seat-two-players.json")
    t["result"]["settlement"]["commission_bps"] = 10_001
    return _repro("settlement commission_bps beyond the rules' bound", t)


def repro_no_protocol() -> Mutant:
    """A transcript without its "protocol" field."""
    t = _vector_t("v2-transcript-4seat-two-players.json")
    del t["protocol"]
    return _repro("a transcript without protocol", t)


def repro_v1_action_without_t() -> Mutant:
    """A rummy-pf/v1 transcript (accepted with allow_v1) whose record 4, an action, has no "t"."""
    t = _vector_t("transcript-4seat-two-players.json")
    del t["log"][4]["t"]
    return _repro("v1 action record without t", t, allow_v1=True)


def repro_pinned_key() -> Mutant:
    """A transcript verified with another key pinned than its header's."""
    return _repro("another key pinned", _vector_t("v2-transcript-4seat-two-players.json"), key=OTHER_SERVER.pub)


def repro_head() -> Mutant:
    """The head is record 0's h, the transcript signed over it."""
    t = _vector_t("v2-transcript-4seat-two-players.json")
    reseal(t, players="house")
    t["head"] = t["log"][0]["h"]
    reseal(t, players="house", chain=False)
    return Mutant(0, "head", ["head"], json.dumps(t).encode(), False)


def repro_two_format_problems() -> Mutant:
    """Two problems of §13: an extra field in an event of record 5, and a dealer the
    header does not list (record 0)."""
    t = _vector_t("v2-transcript-4seat-two-players.json")
    t["log"][5]["events"][0]["extra"] = 0
    t["log"][0]["header"]["dealer"] = 2
    return _repro("two format problems", t)


ANY = "any"  # a record the spec does not name: either is right


def repro_v1_void_mid_hand() -> Mutant:
    """A rummy-pf/v1 hand (accepted with allow_v1) cut after its first action, record
    4, and voided: record 5 is a void, after the deal."""
    t = _vector_t("transcript-4seat-two-players.json")
    del t["log"][5:]
    t["log"].append({"i": 5, "type": "void", "reason": "operator", "h": ""})
    t["result"] = None
    return _repro("v1 void mid-hand", t, allow_v1=True)


#: name -> (the repro, the verdict docs/fairness.md gives: ok, the failing check, its record or ANY)
REPROS: dict[str, tuple[Callable[[], Mutant], tuple[bool, str | None, int | str | None]]] = {
    "event-of-an-unlisted-seat": (repro_event_of_an_unlisted_seat, (False, "replay", 4)),
    "settlement-beyond-the-rules": (repro_settlement_beyond_the_rules, (False, "settlement", None)),
    "no-protocol": (repro_no_protocol, (False, "format", None)),
    "v1-action-without-t": (repro_v1_action_without_t, (True, None, None)),
    "v1-void-mid-hand": (repro_v1_void_mid_hand, (False, "format", 5)),
    "pinned-key": (repro_pinned_key, (False, "signature", ANY)),
    "head": (repro_head, (False, "chain", ANY)),
    "two-format-problems": (repro_two_format_problems, (False, "format", ANY)),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--mutants", type=int, default=3000)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json", help="write every disagreement here")
    ap.add_argument("--dump", help="write the smallest mutant of each class into this folder")
    ap.add_argument("--focus", choices=["", "evidence", "v1"], default="")
    ap.add_argument("--sweep", action="store_true", help="the systematic sweep of every field pattern instead")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    if args.sweep:
        ms = sweep_mutants(args.seed)
    else:
        ms = [make_mutant(n, args.seed, args.focus) for n in range(args.start, args.start + args.mutants)]
    t1 = time.monotonic()
    js = node_verdicts(ms)
    t2 = time.monotonic()
    py = python_verdicts(ms, args.jobs)
    t3 = time.monotonic()
    took = f"made in {t1 - t0:.1f} s; JavaScript {t2 - t1:.1f} s, Python {t3 - t2:.1f} s"
    print(f"{len(ms)} mutants of {len(bases(args.seed))} hands ({took})")
    classes: dict[tuple[str, str], list[int]] = defaultdict(list)
    verdicts: Counter[str] = Counter()
    for k, (m, p, j) in enumerate(zip(ms, py, js, strict=True)):
        verdicts["ok" if p["ok"] else str(p["check"])] += 1
        c = compare(m, p, j)
        if c is not None:
            classes[c].append(k)
    n = {
        kind: sum(len(v) for (kd, _), v in classes.items() if kd == kind)
        for kind in ("unspecified", "known", "disagree")
    }
    print(
        f"exactly the same verdict {len(ms) - sum(n.values())}; the same but for a record the spec does not name "
        f"{n['unspecified']}; known open disagreements {n['known']}; new disagreements {n['disagree']}"
    )
    print("python's verdicts: " + ", ".join(f"{check} {count}" for check, count in verdicts.most_common()))
    out = []
    for (kind, name), ks in sorted(classes.items(), key=lambda kv: (kv[0][0] != "disagree", -len(kv[1]))):
        smallest = min(ks, key=lambda k: (len(ms[k].what), len(ms[k].data)))
        m = ms[smallest]
        print(f"\n[{len(ks)}] {kind}: {name}")
        print(f"  smallest: mutant {m.n} of {m.base}: {'; '.join(m.what)}")
        print(f"    python: {py[smallest]['check']} at {py[smallest]['record']}: {py[smallest]['message']}")
        print(f"    js:     {js[smallest]['check']} at {js[smallest]['record']}: {js[smallest]['message']}")
        if args.verbose:
            for k in ks[:20]:
                print(f"    mutant {ms[k].n} of {ms[k].base}: {'; '.join(ms[k].what)}")
        out.append({"kind": kind, "class": name, "count": len(ks), "mutants": [ms[k].n for k in ks], "smallest": m.n})
        if args.dump:
            d = pathlib.Path(args.dump)
            d.mkdir(parents=True, exist_ok=True)
            (d / f"mutant-{m.n}.json").write_bytes(m.data)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(out, indent=1))
    return 1 if n["disagree"] else 0


if __name__ == "__main__":
    sys.exit(main())
