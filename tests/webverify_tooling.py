"""Test tooling for the browser verifier's tests (tests/test_web_verifier.py).

Everything here is written from docs/fairness.md, independently of the Python
verifier (``verifier/``), which the tests only ever run as a black box: canonical
JSON (§1), signing (§9) with the vectors' test key and test player keys made here,
re-sealing a tampered transcript (chain, head, signatures), the evidence items of
§15, a v2 hand re-published as v1 (the downgrade of §14), and the Ed25519 encodings
that strict verification refuses.
"""

from __future__ import annotations

import copy
import hashlib
import json
import pathlib
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

ROOT = pathlib.Path(__file__).resolve().parent.parent
VECTORS = ROOT / "verifier" / "vectors"

V1 = "rummy-pf/v1"
V2 = "rummy-pf/v2"
CHECKS_V2 = [
    "format",
    "signature",
    "player_signatures",
    "server_commit",
    "player_seeds",
    "deck",
    "deal",
    "replay",
    "time",
    "points",
    "penalties",
    "settlement",
    "chain",
    "evidence",
]
CHECKS_V1 = [c for c in CHECKS_V2 if c not in ("player_signatures", "time")]
ALL_CHECKS = {*CHECKS_V2, "read"}
ZERO_HEAD = "00" * 32

# ------------------------------------------------------------------ canonical JSON and signing


#: a JSON string as json.dumps(s, ensure_ascii=False) writes it (its own string encoder, without
#: dumps's per-call set-up: the cases re-sign some 16,000 bodies)
_string = json.encoder.encode_basestring


def canonical(x: Any) -> bytes:
    """canonical(x) of docs/fairness.md §1, written out here."""

    def enc(v: Any) -> str:
        if v is None:
            return "null"
        if v is True:
            return "true"
        if v is False:
            return "false"
        if isinstance(v, int):
            return str(v)
        if isinstance(v, str):
            return _string(v)
        if isinstance(v, list):
            return "[" + ",".join(enc(e) for e in v) + "]"
        if isinstance(v, dict):
            return "{" + ",".join(_string(k) + ":" + enc(v[k]) for k in sorted(v)) + "}"
        raise TypeError(f"not canonical JSON: {v!r}")

    return enc(x).encode("utf-8")


def lp(b: bytes | str) -> bytes:
    data = b.encode("utf-8") if isinstance(b, str) else b
    return len(data).to_bytes(4, "big") + data


def pub_hex(key: Ed25519PrivateKey) -> str:
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


@dataclass(frozen=True)
class Signer:
    """A key that signs for the tooling: a real Ed25519 key, or a fixed signature under a
    given public key (for keys nobody holds, such as the small-order points of §9)."""

    pub: str
    key: Ed25519PrivateKey | None = None
    constant: str | None = None

    @staticmethod
    def of(key: Ed25519PrivateKey) -> Signer:
        return Signer(pub_hex(key), key=key)

    def sign(self, protocol: str, purpose: str, obj: Any) -> str:
        if self.key is None:
            assert self.constant is not None
            return self.constant
        version = protocol.rsplit("/", 1)[1]
        return self.key.sign(lp(f"rummy-pf/{version}/{purpose}") + canonical(obj)).hex()


SERVER_KEY = Ed25519PrivateKey.from_private_bytes(
    hashlib.sha256(b"rummy-pf/v1 test vector signing key -- never use for real hands").digest()
)
SERVER = Signer.of(SERVER_KEY)
SERVER_PUB = SERVER.pub
OTHER_KEY = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"web verifier test: some other key").digest())


def player_key(seat: int) -> Ed25519PrivateKey:
    """Test player keys made here, to re-sign the moves of tampered v2 transcripts."""
    return Ed25519PrivateKey.from_private_bytes(hashlib.sha256(f"web verifier test player {seat}".encode()).digest())


def sign(key: Ed25519PrivateKey, protocol: str, purpose: str, obj: Any) -> str:
    return Signer.of(key).sign(protocol, purpose, obj)


def move_body(t: dict[str, Any], prev: str, move: dict[str, Any]) -> dict[str, Any]:
    return {"table_id": t["table_id"], "hand_no": t["hand_no"], "prev": prev, "move": move}


def reseal(
    t: dict[str, Any],
    *,
    players: bool = True,
    header: bool = True,
    chain: bool = True,
    transcript: bool = True,
    server: Signer = SERVER,
    seats: dict[int, Signer] | None = None,
) -> None:
    """Re-sign a tampered transcript: player moves (v2; this file's player keys, or
    `seats` for some seats), the header and commitments (by `server`, whose key the
    header then names), the hash chain and head, the transcript signature. A move
    signed over an older record stays signed over that record (re-chained)."""
    proto = t["protocol"]
    v2 = proto == V2
    log = t["log"]
    old_h = [r["h"] for r in log]
    hd = log[0]["header"]
    signer_of = {s["seat"]: (seats or {}).get(s["seat"], Signer.of(player_key(s["seat"]))) for s in hd["seats"]}
    if v2 and players:
        for s in hd["seats"]:
            s["player_key"] = signer_of[s["seat"]].pub
    if header:
        hd["public_key"] = server.pub
        log[0]["sig"] = server.sign(proto, "header", hd)
    prev = bytes.fromhex(hd["prev_head"])
    new_h: list[str] = []

    def move(seat: int, prev_h: str, m: dict[str, Any]) -> str:
        signer = signer_of.get(seat) or Signer.of(player_key(seat))  # a tampered seat: any key
        return signer.sign(proto, "move", move_body(t, prev_h, m))

    for i, r in enumerate(log):
        if v2 and players:
            if r["type"] == "commitments":
                for c in r["commitments"]["commits"]:
                    if c["commit"] is not None:
                        c["psig"] = move(
                            c["seat"], new_h[0], {"kind": "commit", "seat": c["seat"], "commit": c["commit"]}
                        )
            elif r["type"] == "reveals":
                for e in r["reveals"]:
                    if e["status"] == "revealed":
                        e["psig"] = move(e["seat"], new_h[1], {"kind": "reveal", "seat": e["seat"], "seed": e["seed"]})
            elif r["type"] == "action" and r.get("psig") is not None:
                j = old_h.index(r["psig"]["prev"]) if r["psig"]["prev"] in old_h[:i] else i - 1
                prev_h = new_h[j]
                r["psig"] = {"prev": prev_h, "sig": move(r["action"]["seat"], prev_h, r["action"])}
        if r["type"] == "commitments" and header:
            r["sig"] = server.sign(proto, "commitments", r["commitments"])
        if chain:
            digest = hashlib.sha256(prev + canonical({k: v for k, v in r.items() if k != "h"})).digest()
            r["h"] = digest.hex()
            prev = digest
        new_h.append(r["h"])
    if chain:
        t["head"] = log[-1]["h"]
    if transcript:
        t["signature"] = server.sign(proto, "transcript", {k: v for k, v in t.items() if k != "signature"})


# ------------------------------------------------------------------ vectors


def vector_names(prefix: str = "") -> list[str]:
    return sorted(p.name for p in VECTORS.glob("*.json") if "transcript" in p.name and p.name.startswith(prefix))


def read_vector(name: str) -> Any:
    return json.loads((VECTORS / name).read_text(encoding="utf-8"))


def load(name: str) -> dict[str, Any]:
    """The vector's transcript, a fresh object each call (read and parsed again)."""
    data = read_vector(name)
    return data["transcript"] if "transcript" in data and "_about" in data else data  # type: ignore[no-any-return]


def load_evidence(name: str) -> list[Any]:
    """The vector's evidence items, a fresh object each call."""
    data = read_vector(name)
    return data["evidence"] if isinstance(data, dict) else data  # type: ignore[no-any-return]


def dump(t: Any) -> str:
    return json.dumps(t, indent=1, ensure_ascii=False)


def actions(t: dict[str, Any], kind: str | None = None) -> list[dict[str, Any]]:
    return [r for r in t["log"] if r["type"] == "action" and (kind is None or r["action"]["kind"] == kind)]


def events(t: dict[str, Any], kind: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(r, e) for r in t["log"] if "events" in r for e in r["events"] if e["kind"] == kind]


def turn_began(t: dict[str, Any], i: int) -> int:
    """The latest record before i holding a `turn` event (§14 check `time`)."""
    log = t["log"]
    return max(j for j in range(i) if any(e["kind"] == "turn" for e in log[j].get("events", [])))


def modernize(t: dict[str, Any]) -> bool:
    """A v2 vector signed before the 2026-12 amendments, brought under them (§9: a leave
    is signed over the record it follows). True when something changed (re-seal it then)."""
    changed = False
    if t["protocol"] != V2:
        return False
    log = t["log"]
    for r in actions(t, "leave"):
        if r["psig"] is not None and r["psig"]["prev"] != log[r["i"] - 1]["h"]:
            r["psig"]["prev"] = log[r["i"] - 1]["h"]
            changed = True
    return changed


def amended_verdict(t: dict[str, Any]) -> str | None:
    """The check a transcript signed before the 2026-12 amendments fails under them
    (docs/fairness.md, the amendments: "can fail the new rules only where they break
    them"), or None when it breaks none of them."""
    log = t["log"]
    hd = log[0]["header"]
    if t["protocol"] == V2:
        keys = [s["player_key"] for s in hd["seats"]]
        if len(set(keys)) != len(keys):
            return "format"
    if t["server_seed"] == "" and len(log) > 2 and log[2]["type"] == "reveals":
        return "format"
    if t["protocol"] == V2:
        for r in actions(t):
            if r["psig"] is not None and r["psig"]["prev"] != log[r["i"] - 1]["h"]:
                return "player_signatures"
    if t["hand_no"] == 1 and hd["prev_head"] != ZERO_HEAD:
        return "chain"
    return None


# ------------------------------------------------------------------ evidence (§15)


def item(purpose: str, body: dict[str, Any], signer: Signer = SERVER) -> dict[str, Any]:
    return {"purpose": purpose, "body": body, "sig": signer.sign(V2, purpose, body)}


def ack_body(
    t: dict[str, Any],
    seat: int,
    move: dict[str, Any],
    prev: str,
    psig: str,
    i: int,
    arrived: int,
    outcome: str = "accepted",
    code: str | None = None,
) -> dict[str, Any]:
    return {
        "table_id": t["table_id"],
        "hand_no": t["hand_no"],
        "seat": seat,
        "move": move,
        "prev": prev,
        "psig": psig,
        "i": i,
        "h": t["log"][i]["h"],
        "arrived": arrived,
        "outcome": outcome,
        "code": code,
    }


def player_item(t: dict[str, Any], seat: int, key: Ed25519PrivateKey | None = None) -> dict[str, Any]:
    k = key or player_key(seat)
    body = {"table_id": t["table_id"], "hand_no": t["hand_no"], "seat": seat, "player_key": pub_hex(k)}
    return item("player", body, Signer.of(k))


def refused_ack(
    t: dict[str, Any],
    seat: int,
    move: dict[str, Any],
    i: int,
    arrived: int,
    *,
    prev: str | None = None,
    key: Ed25519PrivateKey | None = None,
) -> dict[str, Any]:
    """A signed refusal (code `unavailable`) of `move`, judged when record i was the last;
    the player signed it over `prev` (record i's h unless given) with `key` (its own unless given)."""
    p = t["log"][i]["h"] if prev is None else prev
    psig = sign(key or player_key(seat), V2, "move", move_body(t, p, move))
    return item("ack", ack_body(t, seat, move, p, psig, i, arrived, "refused", "unavailable"))


def seat_evidence(t: dict[str, Any], seat: int) -> list[dict[str, Any]]:
    """What a seat's client keeps in a hand (§15): the header it accepted, its player key,
    an ack for its commit, its reveal and each of its actions, a head for every record."""
    log = t["log"]
    out = [
        {"purpose": "header", "body": copy.deepcopy(log[0]["header"]), "sig": log[0]["sig"]},
        player_item(t, seat),
    ]
    if len(log) > 1 and log[1]["type"] == "commitments":
        c = next(c for c in log[1]["commitments"]["commits"] if c["seat"] == seat)
        if c["commit"] is not None:
            m = {"kind": "commit", "seat": seat, "commit": c["commit"]}
            out.append(item("ack", ack_body(t, seat, m, log[0]["h"], c["psig"], 0, log[0]["t"] + 1)))
    if len(log) > 2 and log[2]["type"] == "reveals":
        e = next(e for e in log[2]["reveals"] if e["seat"] == seat)
        if e["status"] == "revealed":
            m = {"kind": "reveal", "seat": seat, "seed": e["seed"]}
            out.append(item("ack", ack_body(t, seat, m, log[1]["h"], e["psig"], 1, log[1]["t"] + 1)))
    for r in actions(t):
        if r["action"]["seat"] == seat and r["psig"] is not None:
            body = ack_body(t, seat, copy.deepcopy(r["action"]), r["psig"]["prev"], r["psig"]["sig"], r["i"], r["t"])
            out.append(item("ack", body))
    for r in log:
        out.append(item("head", {"table_id": t["table_id"], "hand_no": t["hand_no"], "i": r["i"], "h": r["h"]}))
    return out


def player_commit(seat: int, seed: str) -> str:
    return hashlib.sha256(lp("rummy-pf/v1/pcommit") + seat.to_bytes(4, "big") + bytes.fromhex(seed)).hexdigest()


# ------------------------------------------------------------------ the downgrade (§14)


def to_v1(t: dict[str, Any]) -> None:
    """Re-publish a v2 hand as rummy-pf/v1 (Appendix C): no player keys, seed windows,
    player signatures or record times but the actions'; signed with the v1 purposes."""
    t["protocol"] = V1
    log = t["log"]
    hd = log[0]["header"]
    hd["protocol"] = V1
    for s in hd["seats"]:
        s.pop("player_key")
    hd.pop("commit_ms")
    hd.pop("reveal_ms")
    for r in log:
        if r["type"] != "action":
            r.pop("t")
        if r["type"] == "commitments":
            for c in r["commitments"]["commits"]:
                c.pop("psig")
        elif r["type"] == "reveals":
            for e in r["reveals"]:
                e.pop("psig")
        elif r["type"] == "action":
            r.pop("psig")
    reseal(t)


# ------------------------------------------------------------------ Ed25519 encodings (§9)

P = 2**255 - 19
L = 2**252 + 27742317777372353535851937790883648493
_D = -121665 * pow(121666, P - 2, P) % P

SMALL_ORDER_KEYS = [
    "0100000000000000000000000000000000000000000000000000000000000000",
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000000000000000000000000000080",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
]
# under the identity key, R = the identity's encoding and S = 0 verify every message
CONSTANT_SIGNATURE = "01" + "00" * 63


def x_of(y: int) -> int | None:
    """An x with (x, y) on the curve (either sign), or None."""
    u = (y * y - 1) % P
    v = (_D * y * y + 1) % P
    xx = u * pow(v, P - 2, P) % P
    x = pow(xx, (P + 3) // 8, P)
    if (x * x - xx) % P:
        x = x * pow(2, (P - 1) // 4, P) % P
    return x if (x * x - xx) % P == 0 else None


def encode_y(y: int, sign_bit: int = 0) -> str:
    return (y | (sign_bit << 255)).to_bytes(32, "little").hex()


def non_canonical_key() -> str:
    """y + p for a small y on the curve: a lax decoder that reduces y would read a good point."""
    y = next(y for y in range(2, 19) if x_of(y))
    return encode_y(y + P)


def off_curve_key() -> str:
    return encode_y(next(y for y in range(2, 1000) if x_of(y) is None))


def s_plus_l(sig: str) -> str:
    """The same R with S + L: the equation still holds, the encoding is not canonical."""
    s = int.from_bytes(bytes.fromhex(sig[64:]), "little") + L
    return sig[:64] + s.to_bytes(32, "little").hex()


def r_not_canonical(sig: str) -> str:
    """R replaced by an encoding with y ≥ p."""
    return encode_y(P + 1) + sig[64:]


def fingerprint(key_hex: str) -> str:
    """The server key fingerprint of §9: 64 lowercase hex digits in groups of four."""
    h = hashlib.sha256(bytes.fromhex(key_hex)).hexdigest()
    return " ".join(h[k : k + 4] for k in range(0, 64, 4))
