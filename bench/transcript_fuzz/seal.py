"""The keys the fuzzer signs with, and re-sealing a changed hand as a house holding
its key would (re-signed, re-chained, the moves signed under keys the house lists).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from bench.transcript_fuzz.common import V1, V2, ZERO
from verifier.vectors import TEST_SIGNER, player_signer


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
